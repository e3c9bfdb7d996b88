"""Fuzzing seglog's JSON inputs and configs.

* ``seglog produce --format json`` lines (:func:`seglog.cli.produce_input.parse_json_line`): only
  ``InputLineError`` naming the line;
* ``delete-records --offset-json-file`` (:func:`read_offset_json_file`): only
  ``OffsetJsonFileError``;
* ``seglog-topics.json`` / ``seglog-cleaner-history.json`` (``TopicsFile.decode``,
  ``CleanerHistory.decode``) and the compacted copy's ``published.json`` / ``status.json``
  (``Publication.decode``, ``CompactionStatus.decode``): only ``CorruptCheckpointError``, and
  what decodes re-encodes to the same value;
* configs (``LogConfig.from_overrides``, ``BrokerConfig.from_properties``, also fed from
  ``server.properties`` text): only ``InvalidConfigError``, and an accepted config survives
  ``to_properties`` and back.

Inputs: arbitrary bytes, JSON documents shaped like the valid ones with every field's type and
value varied, mutated valid files, and config values at and past every type's limits.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import FUZZ, FUZZ_FEW, apply_mutations, mutations, time_limit
from hypothesis import example, given
from hypothesis import strategies as st

from seglog.cli.delete_records import read_offset_json_file
from seglog.cli.produce_input import JSON_FIELDS, InputLineError, parse_json_line
from seglog.config import (
    BROKER_KEYS,
    IGNORED_TOPIC_KEYS,
    TOPIC_CONFIG_KEYS,
    BrokerConfig,
    LogConfig,
)
from seglog.engine.log_manager import MAX_PARTITIONS_PER_TOPIC
from seglog.errors import CorruptCheckpointError, InvalidConfigError, SeglogError
from seglog.format.checkpoint import parse_clean_shutdown
from seglog.format.properties import parse_properties
from seglog.format.records import Header
from seglog.storage.compacted_copy import CompactionStatus, Publication
from seglog.storage.log_dir import CleanerHistory, TopicMetadata, TopicsFile

LIMIT_S = 10.0
INT64_MAX = (1 << 63) - 1

# --- JSON values ---------------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(1 << 70), 1 << 70)
    | st.sampled_from([0, -1, 1, INT64_MAX, INT64_MAX + 1, (1 << 31) - 1, 1 << 31, 10**30])
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["\ud800", "a\x00b", "..", "copy-x", "copy-/x", "AAAAAAAAAAAAAAAAAAAAAQ"])
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()) | st.sampled_from(
    ["", "=", "A", "AA=", "@@@@", "aGVsbG8", "aGVsbG8=\n", "é"]
)


def dumps(value: Any) -> bytes:
    """JSON text of ``value``; lone surrogates become \\ud800 escapes (valid JSON text)."""
    return json.dumps(value).encode("ascii")


def field_values(name: str) -> st.SearchStrategy[Any]:
    """Values for a field: mostly its own type, sometimes anything."""
    typed: dict[str, st.SearchStrategy[Any]] = {
        "key": st.none() | st.text(max_size=8),
        "value": st.none() | st.text(max_size=8),
        "key_base64": st.none() | B64,
        "value_base64": st.none() | B64,
        "headers": st.dictionaries(st.text(max_size=4), st.none() | st.text(max_size=4)),
        "headers_base64": st.lists(st.lists(st.none() | B64, min_size=2, max_size=2)),
        "timestamp": st.integers(-2, INT64_MAX + 2),
        "partition": st.integers(-2, 5),
    }
    return typed.get(name, JSON_VALUES) | JSON_VALUES


@st.composite
def shaped_objects(draw: st.DrawFn, fields: list[str]) -> dict[str, Any]:
    """An object with a subset of ``fields`` (and maybe an unknown one), values varied."""
    chosen = draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields)))
    obj = {name: draw(field_values(name)) for name in chosen}
    if draw(st.integers(0, 5)) == 0:
        obj[draw(st.text(max_size=6))] = draw(JSON_VALUES)
    return obj


def nested(depth: int) -> bytes:
    """A JSON array nested ``depth`` deep."""
    return b"[" * depth + b"]" * depth


@st.composite
def json_inputs(draw: st.DrawFn, valid: list[bytes], shaped: st.SearchStrategy[Any]) -> bytes:
    """Arbitrary bytes, a shaped document, a mutated valid document, or moderate nesting."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.binary(max_size=120))
    if kind == 1:
        return dumps(draw(shaped))
    if kind == 2:
        return nested(draw(st.integers(1, 60)))
    data = dumps(draw(shaped)) if kind == 3 else draw(st.sampled_from(valid))
    return apply_mutations(data, draw(mutations(max(len(data), 1))))


# --- produce --json lines ------------------------------------------------------------------------

VALID_LINES = [
    b'{"key": "k", "value": "v", "timestamp": 1700000000000, "headers": {"h": "x"}, '
    b'"partition": 0}',
    b'{"value_base64": "AAE=", "key_base64": null, "headers_base64": [["aA==", null]]}',
    b'{"value": null}',
]


@FUZZ
@given(json_inputs(VALID_LINES, shaped_objects(sorted(JSON_FIELDS))))
def test_produce_json_lines_raise_only_input_line_error(line: bytes) -> None:
    with time_limit(LIMIT_S):
        try:
            record = parse_json_line(7, line, frozenset({0, 1, 2}))
        except InputLineError as exc:
            assert exc.line == 7
            return
    assert record.value is None or isinstance(record.value, bytes)
    assert record.key is None or isinstance(record.key, bytes)
    assert all(isinstance(h, Header) and isinstance(h.key, str) for h in record.headers)
    for header in record.headers:
        header.key_bytes()  # encodable as written
    assert record.timestamp_ms is None or 0 <= record.timestamp_ms <= INT64_MAX
    assert record.partition is None or record.partition in {0, 1, 2}


@FUZZ_FEW
@given(st.integers(500, 50_000))
def test_produce_json_lines_refuse_deep_nesting(depth: int) -> None:
    with pytest.raises(InputLineError):
        parse_json_line(1, nested(depth), frozenset({0}))


# --- delete-records offsets file -----------------------------------------------------------------

VALID_OFFSETS = [
    b'{"partitions": [{"topic": "prices", "partition": 0, "offset": 5}], "version": 1}',
    b'{"partitions": [{"topic": "a", "partition": 1, "offset": -1}, '
    b'{"topic": "b", "partition": 0, "offset": 9223372036854775807}]}',
]


@st.composite
def offsets_documents(draw: st.DrawFn) -> Any:
    entry = shaped_objects(["topic", "partition", "offset"])
    doc = draw(shaped_objects(["partitions", "version"]))
    if "partitions" in doc and draw(st.booleans()):
        doc["partitions"] = draw(st.lists(entry, max_size=3))
    return doc


@FUZZ
@given(json_inputs(VALID_OFFSETS, offsets_documents()) | st.integers(500, 20_000).map(nested))
def test_offset_json_file_raises_only_offset_json_file_error(data: bytes) -> None:
    directory = Path(tempfile.mkdtemp(prefix="seglog-fuzz-"))
    try:
        path = directory / "offsets.json"
        path.write_bytes(data)
        with time_limit(LIMIT_S):
            try:
                offsets = read_offset_json_file(str(path))
            except SeglogError as exc:
                assert str(path) in str(exc)
                return
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert offsets
    for tp, offset in offsets.items():
        assert 0 <= tp.partition <= (1 << 31) - 1
        assert -1 <= offset <= INT64_MAX


# --- seglog's own JSON files ---------------------------------------------------------------------

VALID_TOPICS = [
    TopicsFile(
        3,
        {
            "prices": TopicMetadata(
                "prices", 2, "AAAAAAAAAAAAAAAAAAAAAQ", {"cleanup.policy": "compact"}
            ),
            "t": TopicMetadata("t", 1, "qqqqqqqqqqqqqqqqqqqqqg", deleting=True),
        },
    ).encode()
]
VALID_HISTORY = [
    b'{"version": 1, "partitions": {"t-0": [{"round_ms": 5, "end_offset": 9, "x": 1}]}}\n'
]
VALID_PUBLICATIONS = [Publication("copy-00000000000000000009-0123abcd", 9, 1000).encode()]
VALID_STATUS = [
    CompactionStatus("SUCCESS", "done", {"records": 3}).encode(),
    CompactionStatus("ERROR", "x").encode(),
]


@st.composite
def topics_documents(draw: st.DrawFn) -> Any:
    doc = draw(shaped_objects(["version", "generation", "topics"]))
    if draw(st.booleans()):
        doc["version"] = 1
    if "topics" in doc and draw(st.booleans()):
        entry = shaped_objects(["partitions", "topic_id", "configs", "deleting"])
        doc["topics"] = draw(st.dictionaries(st.text(max_size=6), entry, max_size=3))
    return doc


@st.composite
def history_documents(draw: st.DrawFn) -> Any:
    doc = draw(shaped_objects(["version", "partitions"]))
    if draw(st.booleans()):
        doc["version"] = 1
    if "partitions" in doc and draw(st.booleans()):
        rounds = st.lists(shaped_objects(["round_ms", "end_offset", "records"]), max_size=2)
        doc["partitions"] = draw(st.dictionaries(st.text(max_size=6), rounds, max_size=2))
    return doc


@st.composite
def publication_documents(draw: st.DrawFn) -> Any:
    doc = draw(shaped_objects(["version", "copy", "horizon", "published_ms"]))
    if draw(st.booleans()):
        doc["version"] = 1
    return doc


@st.composite
def status_documents(draw: st.DrawFn) -> Any:
    doc = draw(shaped_objects(["version", "state", "message", "figures"]))
    if draw(st.booleans()):
        doc["version"] = 1
        doc["state"] = draw(st.sampled_from([*CompactionStatus.STATES, "DONE", ""]))
    return doc


DECODERS: list[tuple[str, Callable[..., Any], list[bytes], st.SearchStrategy[Any]]] = [
    ("topics", TopicsFile.decode, VALID_TOPICS, topics_documents()),
    ("cleaner-history", CleanerHistory.decode, VALID_HISTORY, history_documents()),
    ("published", Publication.decode, VALID_PUBLICATIONS, publication_documents()),
    ("status", CompactionStatus.decode, VALID_STATUS, status_documents()),
]


@pytest.mark.parametrize(
    ("decode", "valid", "shaped"),
    [pytest.param(d, v, s, id=name) for name, d, v, s in DECODERS],
)
@FUZZ
@given(data=st.data())
def test_seglog_json_files_raise_only_corrupt_checkpoint(
    decode: Callable[..., Any], valid: list[bytes], shaped: st.SearchStrategy[Any], data: Any
) -> None:
    raw = data.draw(json_inputs(valid, shaped))
    with time_limit(LIMIT_S):
        try:
            value = decode(raw, path="f.json")
        except CorruptCheckpointError as exc:
            assert exc.path == "f.json"
            return
        # What decodes re-encodes to an equal value.
        assert decode(value.encode(), path="f.json") == value


@pytest.mark.parametrize(
    "decode",
    [
        pytest.param(TopicsFile.decode, id="topics"),
        pytest.param(CleanerHistory.decode, id="cleaner-history"),
        pytest.param(Publication.decode, id="published"),
        pytest.param(CompactionStatus.decode, id="status"),
        pytest.param(parse_clean_shutdown, id="kafka_cleanshutdown"),
    ],
)
@FUZZ_FEW
@example(depth=100_000)
@given(st.integers(5_000, 100_000))
def test_deeply_nested_json_files_raise_corrupt_checkpoint(
    decode: Callable[..., Any], depth: int
) -> None:
    with pytest.raises(CorruptCheckpointError):
        decode(b"[" * depth, path="f.json")


# --- configs -------------------------------------------------------------------------------------

CONFIG_VALUES = st.sampled_from(
    [
        "0",
        "1",
        "-1",
        "14",
        "13",
        " 100 ",
        "\t5\n",
        "\x00 7",
        "\u00a07",
        "+3",
        "007",
        "2147483647",
        "2147483648",
        "-2147483649",
        "9223372036854775807",
        "9223372036854775808",
        "1" * 5000,
        "0.5",
        ".5",
        "5.",
        "1e309",
        "-1e309",
        "1e-400",
        "1.5f",
        "2d",
        "NaN",
        "Infinity",
        "-Infinity",
        "true",
        "TRUE",
        "False",
        "yes",
        "",
        " ",
        "delete",
        "compact",
        "delete,compact",
        " compact , delete ",
        "compact,",
        ",",
        "zstd",
        "producer",
        "uncompressed",
        "CreateTime",
        "createtime",
        "LogAppendTime",
        "offset",
        "timestamp",
        "header:",
        "header:h",
        "/tmp/a,/tmp/b",
        "/tmp/a,/tmp/a",
    ]
) | st.text(max_size=10)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(sorted(TOPIC_CONFIG_KEYS))
        | st.sampled_from(sorted(IGNORED_TOPIC_KEYS))
        | st.sampled_from(["log.retention.hours", "message.timestamp.difference.max.ms"])
        | st.text(max_size=12),
        CONFIG_VALUES,
        max_size=5,
    )
)
def test_topic_overrides_raise_only_invalid_config(overrides: dict[str, str]) -> None:
    with time_limit(LIMIT_S):
        try:
            config = LogConfig.from_overrides(overrides)
        except InvalidConfigError:
            return
        assert LogConfig.from_overrides(config.to_properties()) == config


@st.composite
def server_properties(draw: st.DrawFn) -> dict[str, str]:
    """A ``server.properties`` mapping, directly or through Java properties text."""
    keys = st.sampled_from(sorted(BROKER_KEYS)) | st.text(max_size=10)
    props = draw(st.dictionaries(keys, CONFIG_VALUES, max_size=6))
    if draw(st.booleans()):
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        try:
            props = parse_properties(text)
        except CorruptCheckpointError:  # the text layer's own typed error (fuzzed elsewhere)
            props = {}
    return props


@FUZZ
@given(server_properties())
def test_broker_properties_raise_only_invalid_config(props: dict[str, str]) -> None:
    with time_limit(LIMIT_S):
        try:
            config = BrokerConfig.from_properties(props)
        except InvalidConfigError:
            return
        assert BrokerConfig.from_properties(config.to_properties()) == config


def _topics_file(entry: dict[str, Any]) -> bytes:
    return dumps({"version": 1, "generation": 1, "topics": {"prices": entry}})


@FUZZ_FEW
@example(partitions=10**12)
@given(st.integers(MAX_PARTITIONS_PER_TOPIC + 1, 1 << 70))
def test_topics_file_bounds_the_partition_count(partitions: int) -> None:
    data = _topics_file({"partitions": partitions, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ"})
    with pytest.raises(CorruptCheckpointError):
        TopicsFile.decode(data, path="seglog-topics.json")


@FUZZ_FEW
@example(deleting="false")
@given(st.sampled_from(["false", "no", "0", "", 0, 1, 0.0, [], [False], {}]))
def test_topics_file_deleting_flag_must_be_a_boolean(deleting: Any) -> None:
    data = _topics_file(
        {"partitions": 1, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "deleting": deleting}
    )
    with pytest.raises(CorruptCheckpointError):
        TopicsFile.decode(data, path="seglog-topics.json")
