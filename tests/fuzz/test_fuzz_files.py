"""Fuzzing the readers of a log directory's other files: indexes and checkpoints.

* ``.index`` / ``.timeindex``: the pure parsers of :mod:`seglog.format.index` and the file
  objects of :mod:`seglog.storage.index_file` loading a damaged file (random bytes, mutated
  valid indexes, zero tails, truncations) raise only ``CorruptIndexError``; an index the
  loader's consistency check accepts must be one whose lookups are sound, and a closed
  segment's damaged index must never make reads skip records (what the loader promises).
* checkpoints (offset, leader-epoch, ``partition.metadata``, ``.kafka_cleanshutdown``,
  ``meta.properties``) and Java properties text, generated from their grammar's tokens
  (numbers at and past the int32/int64 limits, Java whitespace, every line end, escapes,
  continuations, invalid UTF-8) raise only ``CorruptCheckpointError``.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import FUZZ, FUZZ_FEW, INT64_MAX, apply_mutations, mutations, time_limit
from hypothesis import example, given
from hypothesis import strategies as st

from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.engine.log import Log
from seglog.errors import CorruptCheckpointError, CorruptIndexError, SeglogError
from seglog.format.batch import encode_batch
from seglog.format.checkpoint import (
    parse_checkpoint,
    parse_clean_shutdown,
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
)
from seglog.format.index import (
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_index,
    encode_time_index,
    parse_offset_index,
    parse_time_index,
    parse_txn_index,
    sanity_check_offset_index,
    sanity_check_time_index,
    validate_offset_index,
    validate_time_index,
)
from seglog.format.properties import parse_property_entries
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from seglog.storage.index_file import OffsetIndexFile, TimeIndexFile

LIMIT_S = 10.0
SEGMENT_INDEX_BYTES = 1024

# --- index bytes ---------------------------------------------------------------------------------

int32s = st.integers(-(1 << 31), (1 << 31) - 1)
int64s = st.integers(-(1 << 63), INT64_MAX)


@st.composite
def offset_index_bytes(draw: st.DrawFn) -> bytes:
    """A valid trimmed or preallocated offset index, damaged; or random bytes."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.binary(max_size=120))
    base = draw(st.integers(0, 1000))
    offsets = sorted(set(draw(st.lists(st.integers(base, base + 10_000), max_size=8))))
    positions = sorted(draw(st.lists(st.integers(0, 1 << 20), min_size=len(offsets))))
    entries = [OffsetIndexEntry(o, p) for o, p in zip(offsets, positions, strict=False)]
    data = encode_offset_index(entries, base) + bytes(8 * draw(st.integers(0, 3)))
    return apply_mutations(data, draw(mutations(max(len(data), 1)))) if data else data


@st.composite
def time_index_bytes(draw: st.DrawFn) -> bytes:
    """A valid time index (timestamps anywhere in int64), damaged; or random bytes."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.binary(max_size=120))
    stamps = sorted(set(draw(st.lists(int64s, max_size=6))))
    offsets = sorted(draw(st.lists(st.integers(0, 10_000), min_size=len(stamps))))
    entries = [TimeIndexEntry(t, o) for t, o in zip(stamps, offsets, strict=False)]
    data = encode_time_index(entries, 0) + bytes(12 * draw(st.integers(0, 3)))
    if data and draw(st.booleans()):
        data = apply_mutations(data, draw(mutations(len(data))))
    return data


@FUZZ
@given(st.binary(max_size=200) | offset_index_bytes() | time_index_bytes(), int64s, st.booleans())
def test_index_parsers_raise_only_corrupt_index(data: bytes, base: int, zero_tail: bool) -> None:
    with time_limit(LIMIT_S):
        for parse, validate, sanity, width in (
            (parse_offset_index, validate_offset_index, sanity_check_offset_index, 8),
            (parse_time_index, validate_time_index, sanity_check_time_index, 12),
        ):
            for buf in (data, data[: len(data) // width * width]):
                try:
                    entries = parse(buf, base, path="x", stop_at_zero_tail=zero_tail)
                    validate(entries, base, path="x")  # type: ignore[operator]
                except CorruptIndexError as exc:
                    assert exc.path == "x"
                with contextlib.suppress(CorruptIndexError):
                    sanity(buf, base, path="x")
        with contextlib.suppress(CorruptIndexError):
            parse_txn_index(data, path="x")


def _load(kind: type[Any], data: bytes, base: int) -> Any:
    directory = Path(tempfile.mkdtemp(prefix="seglog-fuzz-"))
    path = directory / (
        "00000000000000000000" + (".index" if kind is OffsetIndexFile else ".timeindex")
    )
    path.write_bytes(data)
    return kind(path, base, segment_index_bytes=SEGMENT_INDEX_BYTES, persist=False), directory


@FUZZ
@given(
    st.sampled_from([OffsetIndexFile, TimeIndexFile]),
    st.binary(max_size=200) | offset_index_bytes() | time_index_bytes(),
    st.integers(0, 1 << 40),
    st.lists(int64s | st.integers(-10, 20_000), max_size=4),
    st.integers(0, 1 << 21),
)
def test_loading_a_damaged_index_file_raises_only_typed(
    kind: type[Any], data: bytes, base: int, probes: list[int], log_size: int
) -> None:
    index, directory = _load(kind, data, base)
    try:
        with time_limit(LIMIT_S):
            _ = (index.entries, index.last_entry(), index.is_full, index.max_entries)
            for probe in probes:
                index.lookup(probe)
            if kind is OffsetIndexFile:
                index.consistency_problem(log_size)
            else:
                index.consistency_problem((1 << 31) - 1)
            with contextlib.suppress(CorruptIndexError):
                index.sanity_check()
            for probe in probes:
                try:
                    if kind is OffsetIndexFile:
                        index.append(probe, log_size)
                    else:
                        index.maybe_append(probe, base + log_size % 1000)
                except CorruptIndexError:
                    pass
                index.truncate_to(probe)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@FUZZ_FEW
@example(
    data=struct.pack(">qi", INT64_MAX, 1) + struct.pack(">qi", -(1 << 63), 2),
    kind=TimeIndexFile,
)
@given(time_index_bytes() | offset_index_bytes(), st.sampled_from([OffsetIndexFile, TimeIndexFile]))
def test_an_index_the_loader_accepts_has_sorted_keys(data: bytes, kind: type[Any]) -> None:
    index, directory = _load(kind, data, 0)
    try:
        problem = index.consistency_problem(1 << 30 if kind is OffsetIndexFile else (1 << 31) - 1)
        if problem is None:
            keys = list(index._keys)
            # Lookups bisect this column: it must be strictly increasing.
            assert all(a < b for a, b in itertools.pairwise(keys)), keys
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- a closed segment's damaged index, through Log.open ------------------------------------------

T0 = 1_700_000_000_000
TP = TopicPartition("events", 0)
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=150)
RECORDS = 30


def _build_log_template() -> Path:
    """A closed log of 30 one-record batches over several segments (built once)."""
    root = Path(tempfile.mkdtemp(prefix="seglog-fuzz-template-"))
    atexit.register(shutil.rmtree, root, True)
    log = Log.open(root / "events-0", TP, CONFIG, clock=ManualClock(T0))
    for i in range(RECORDS):
        log.append(encode_batch([Record(0, T0 + i, b"k%d" % i, b"value-%03d" % i)]))
    log.close()
    return root / "events-0"


_TEMPLATE: list[Path] = []


def template() -> Path:
    if not _TEMPLATE:
        _TEMPLATE.append(_build_log_template())
    return _TEMPLATE[0]


@st.composite
def index_damage(draw: st.DrawFn, suffix: str) -> tuple[int, list[Any]]:
    """(which closed segment, mutations of its ``suffix`` index file)."""
    files = sorted(template().glob("*" + suffix))
    victim = draw(st.integers(0, len(files) - 2))  # a closed segment, not the active one
    size = len(files[victim].read_bytes())
    width = 8 if suffix == ".index" else 12
    ops = draw(mutations(max(size, 1), list(range(0, size, width)), max_ops=2))
    return victim, ops


def check_reads_after_damage(suffix: str, victim: int, ops: list[Any]) -> None:
    """Reopen the template with one closed segment's index damaged (clean shutdown, so no
    recovery: the loader's own check decides whether to trust it), then read every offset
    and look up every record's timestamp: typed errors are fine, wrong records are not."""
    work = Path(tempfile.mkdtemp(prefix="seglog-fuzz-log-"))
    try:
        directory = work / "events-0"
        shutil.copytree(template(), directory)
        path = sorted(directory.glob("*" + suffix))[victim]
        path.write_bytes(apply_mutations(path.read_bytes(), ops))
        try:
            log = Log.open(
                directory,
                TP,
                CONFIG,
                clock=ManualClock(T0),
                had_clean_shutdown=True,
                recovery_point=10**6,
                writable=False,
            )
        except SeglogError:
            return
        try:
            with time_limit(LIMIT_S):
                for offset in range(RECORDS):
                    try:
                        got = log.read_records(offset, 1)
                        found = log.fetch_offset_by_timestamp(T0 + offset)
                    except SeglogError:
                        continue  # refusing to read is fine; reading the wrong record is not
                    assert got and got[0].offset == offset, (offset, [r.offset for r in got])
                    assert got[0].value == b"value-%03d" % offset
                    assert found is not None and found.offset == offset, (offset, found)
        finally:
            log.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


@FUZZ_FEW
@example(damage=(0, [("int32", 4, 316)]))
@given(index_damage(".index"))
def test_a_damaged_offset_index_never_makes_reads_skip_records(
    damage: tuple[int, list[Any]],
) -> None:
    check_reads_after_damage(".index", *damage)


@FUZZ_FEW
@example(damage=(0, [("truncate", 48)]))
@example(damage=(0, [("int64", 0, -1)]))  # a first entry's timestamp damaged to -1
@given(index_damage(".timeindex"))
def test_a_damaged_time_index_never_makes_lookups_skip_records(
    damage: tuple[int, list[Any]],
) -> None:
    check_reads_after_damage(".timeindex", *damage)


# --- checkpoints and properties text -------------------------------------------------------------

NUMBERS = st.sampled_from(
    [
        "0",
        "1",
        "-1",
        "+1",
        "-0",
        "007",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "1e3",
        "0x10",
        "١٢",  # Arabic-Indic digits: Java's parseInt takes them, seglog does not
        "",
    ]
) | st.integers(-(10**30), 10**30).map(str)
WORDS = st.sampled_from(
    ["t", "topic", "a.b-c_d", "__consumer_offsets", "é", "\x00", "#", "!", "=", ":", "\\"]
) | st.text(max_size=6)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\x0b", "\f", "\u00a0", ": ", ":", "="])
LINE_ENDS = st.sampled_from(["\n", "\r", "\r\n", "\n\n", ""])
TOPIC_ID = st.sampled_from(
    ["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAA", "-AAAAAAAAAAAAAAAAAAAAQ", "abc", ""]
) | st.text(alphabet="AQgw-_09az", min_size=21, max_size=23)


@st.composite
def lines_text(draw: st.DrawFn, fields: st.SearchStrategy[str]) -> str:
    """Lines of fields joined by Java-ish whitespace, any line ends."""
    out = []
    for _ in range(draw(st.integers(0, 5))):
        parts = draw(st.lists(fields, max_size=4))
        sep = draw(SEPARATORS)
        out.append(draw(st.sampled_from(["", " ", "\t"])) + sep.join(parts) + draw(LINE_ENDS))
    return "".join(out)


@st.composite
def checkpoint_bytes(draw: st.DrawFn) -> bytes:
    """A checkpoint-shaped file: version line, count line, entry lines; maybe invalid UTF-8."""
    body = draw(lines_text(NUMBERS | WORDS))
    count = draw(st.sampled_from(["0", "1", "2", "3", "-1", ""]) | NUMBERS)
    text = draw(st.sampled_from(["0", "1", "00", "+0", ""])) + draw(LINE_ENDS) + count + "\n" + body
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    return data


@st.composite
def partition_metadata_bytes(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from(["version", "Version", "topic_id"]))
    key = draw(st.sampled_from(["topic_id", "topicId", "version"]))
    text = (
        f"{version}{draw(SEPARATORS)}{draw(NUMBERS)}{draw(LINE_ENDS)}"
        f"{key}{draw(SEPARATORS)}{draw(TOPIC_ID)}{draw(LINE_ENDS)}{draw(WORDS)}"
    )
    return text.encode("utf-8", "surrogatepass")


PROPERTY_KEYS = st.sampled_from(
    ["version", "cluster.id", "node.id", "broker.id", "directory.id", "other", "node\\.id"]
)
ESCAPES = st.sampled_from(
    ["\\u0041", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\u12", "\\uzzzz", "\\", "\\\\", "\\n"]
)


@st.composite
def properties_text(draw: st.DrawFn) -> str:
    """``key=value`` lines with every separator, escapes, comments and continuations."""
    out = []
    for _ in range(draw(st.integers(0, 6))):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            out.append(draw(st.sampled_from(["#", "!", " #"])) + draw(WORDS))
        else:
            value = "".join(draw(st.lists(NUMBERS | WORDS | ESCAPES | TOPIC_ID, max_size=3)))
            out.append(draw(PROPERTY_KEYS) + draw(SEPARATORS) + value)
        out.append(draw(st.sampled_from(["\n", "\r\n", "\r", "\\\n", "\\\r\n  ", "\n\n"])))
    return "".join(out)


@FUZZ
@given(checkpoint_bytes() | st.binary(max_size=80))
def test_checkpoints_raise_only_corrupt_checkpoint(data: bytes) -> None:
    with time_limit(LIMIT_S):
        for parse in (
            parse_offset_checkpoint,
            parse_leader_epoch_checkpoint,
            parse_partition_metadata,
            parse_clean_shutdown,
            parse_meta_properties,
        ):
            try:
                parse(data, path="ckpt")  # type: ignore[operator]
            except CorruptCheckpointError as exc:
                assert exc.path == "ckpt"
        with contextlib.suppress(CorruptCheckpointError):
            parse_checkpoint(data, version=0, path="ckpt")


@FUZZ
@given(partition_metadata_bytes())
def test_partition_metadata_raises_only_corrupt_checkpoint(data: bytes) -> None:
    try:
        topic_id = parse_partition_metadata(data, path="pm")
    except CorruptCheckpointError:
        return
    assert len(topic_id) == 22


@FUZZ
@given(properties_text())
def test_properties_and_meta_properties_raise_only_corrupt_checkpoint(text: str) -> None:
    with time_limit(LIMIT_S):
        with contextlib.suppress(CorruptCheckpointError):
            parse_property_entries(text, path="p")
        for data in (text.encode("latin-1", "replace"), text.encode("utf-8", "surrogatepass")):
            with contextlib.suppress(CorruptCheckpointError):
                parse_meta_properties(data, path="meta")


HUGE_NUMBER = "1" * 4301  # one digit past CPython's int() string limit


@FUZZ_FEW
@example(which=0, digits=4301)
@given(st.integers(0, 4), st.integers(4301, 6000))
def test_huge_numbers_in_checkpoints_raise_corrupt_checkpoint(which: int, digits: int) -> None:
    number = "9" * digits
    data, parse = [
        (f"0\n1\nt 0 {number}\n", parse_offset_checkpoint),
        (f"{number}\n", parse_offset_checkpoint),
        (f"0\n1\n1 {number}\n", parse_leader_epoch_checkpoint),
        (f"version: {number}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", parse_partition_metadata),
        (f"version=1\ncluster.id=c\nnode.id={number}\n", parse_meta_properties),
    ][which]
    with pytest.raises(CorruptCheckpointError):
        parse(data.encode(), path="ckpt")  # type: ignore[operator]
