"""Checkpoint and metadata files (spec §6): formats, errors, and the broker corpus byte for byte."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_location import corpus_params
from seglog.errors import CorruptCheckpointError, InvalidTopicError
from seglog.format.checkpoint import (
    ONE_UUID,
    ZERO_UUID,
    CheckpointLine,
    EpochEntry,
    MetaProperties,
    encode_checkpoint,
    encode_clean_shutdown,
    encode_leader_epoch_checkpoint,
    encode_meta_properties,
    encode_offset_checkpoint,
    encode_partition_metadata,
    kafka_uuid_from_bytes,
    kafka_uuid_to_bytes,
    meta_properties_key_order,
    new_cluster_id,
    new_directory_id,
    new_topic_id,
    parse_checkpoint,
    parse_clean_shutdown,
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
    validate_topic_id,
)
from seglog.format.properties import KeyOrder, parse_properties
from seglog.format.topic_names import TopicPartition

PATH = "/logs/recovery-point-offset-checkpoint"
TOPIC_ID = "4zeO1mdxSb69f7lqENDdVA"


def _corrupt(data: bytes, parse: object, line: int | None, match: str) -> None:
    """``parse(data, path=PATH)`` raises CorruptCheckpointError naming PATH and ``line``."""
    assert callable(parse)
    with pytest.raises(CorruptCheckpointError, match=match) as info:
        parse(data, path=PATH)
    error = info.value
    assert error.path == PATH and PATH in str(error)
    assert error.line == line
    if line is not None:
        assert f"line {line}: " in str(error)


# --- generic checkpoint file --------------------------------------------------------------------


def test_generic_layout() -> None:
    assert encode_checkpoint(0, ["a 0 1", "b 1 2"]) == b"0\n2\na 0 1\nb 1 2\n"
    assert encode_checkpoint(0, []) == b"0\n0\n"
    assert parse_checkpoint(b"0\n2\na 0 1\nb 1 2\n", version=0) == [
        CheckpointLine(3, "a 0 1"),
        CheckpointLine(4, "b 1 2"),
    ]


@pytest.mark.parametrize("data", [b"", b"0\n", b"0", b"0\n0\n", b"0\r\n0\r\n"])
def test_empty_and_version_only_files_read_as_empty(data: bytes) -> None:
    assert parse_checkpoint(data, version=0) == []


def test_line_ends_as_buffered_reader() -> None:
    assert parse_checkpoint(b"0\r\n2\ra 0 1\r\nb 1 2", version=0) == [
        CheckpointLine(3, "a 0 1"),
        CheckpointLine(4, "b 1 2"),
    ]


def test_entry_lines_cannot_span_lines() -> None:
    with pytest.raises(ValueError, match="spans lines"):
        encode_checkpoint(0, ["a\nb"])


@pytest.mark.parametrize(
    ("data", "line", "match"),
    [
        (b"1\n0\n", 1, "unrecognised version 1, expected version 0"),
        (b"x\n0\n", 1, "version 'x' is not an int32"),
        (b" 0\n0\n", 1, "version ' 0' is not an int32"),
        (b"0\nx\n", 2, "entry count 'x' is not an int32"),
        (b"0\n-1\n", 2, "entry count -1 is below the minimum 0"),
        (b"0\n99999999999\n", 2, "outside an int32"),
        (b"0\n2\na 0 1\n", 2, "entry count 2 does not match the 1 entry lines"),
        (b"0\n1\na 0 1\nb 0 1\n", 2, "entry count 1 does not match the 2 entry lines"),
        (b"0\n0\n\n", 2, "entry count 0 does not match the 1 entry lines"),
        (b"0\n1\n\xff 0 1\n", 3, "not UTF-8"),
    ],
)
def test_generic_errors_name_path_and_line(data: bytes, line: int, match: str) -> None:
    _corrupt(data, parse_offset_checkpoint, line, match)


# --- offset checkpoints -------------------------------------------------------------------------


def test_offset_checkpoint_spec_example() -> None:
    data = b"0\n2\norders 0 1534\norders 1 1498\n"
    offsets = parse_offset_checkpoint(data)
    assert offsets == {TopicPartition("orders", 0): 1534, TopicPartition("orders", 1): 1498}
    assert encode_offset_checkpoint(offsets) == data


def test_offset_checkpoint_is_written_sorted_unless_order_is_kept() -> None:
    data = b"0\n3\nb 0 1\na 10 2\na 2 3\n"
    offsets = parse_offset_checkpoint(data)
    assert list(offsets) == [("b", 0), ("a", 10), ("a", 2)]  # the file's order
    assert encode_offset_checkpoint(offsets, keep_order=True) == data
    assert encode_offset_checkpoint(offsets) == b"0\n3\na 2 3\na 10 2\nb 0 1\n"
    assert parse_offset_checkpoint(encode_offset_checkpoint(offsets)) == offsets


def test_offset_checkpoint_fields_split_on_java_whitespace() -> None:
    assert parse_offset_checkpoint(b"0\n1\nt \t 3\x0b\x0c 7  \n") == {TopicPartition("t", 3): 7}


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        (b"t 0", "expected 3 fields"),
        (b"t 0 1 2", "expected 3 fields"),
        (b" t 0 1", "expected 3 fields"),  # Java split keeps the empty first field
        (b"t x 1", "partition 'x' is not an int32"),
        (b"t 0 1.5", "offset '1.5' is not an int64"),
        (b"t 0 9223372036854775808", "outside an int64"),
        (b"t 2147483648 0", "outside an int32"),
        (b"t 0 1_000", "not an int64"),  # Python int() would take it; Java does not
        ("t 0 \u0661".encode(), "not an int64"),  # non-ASCII digits
    ],
)
def test_malformed_offset_entries(entry: bytes, match: str) -> None:
    _corrupt(b"0\n2\nok 0 0\n" + entry + b"\n", parse_offset_checkpoint, 4, match)


def test_duplicate_partition_is_corrupt() -> None:
    _corrupt(b"0\n2\nt 0 1\nt 0 2\n", parse_offset_checkpoint, 4, "listed twice.*line 3")


def test_encode_offset_checkpoint_validates() -> None:
    with pytest.raises(InvalidTopicError):
        encode_offset_checkpoint({TopicPartition("a b", 0): 1})
    with pytest.raises(InvalidTopicError):
        encode_offset_checkpoint({TopicPartition("a", -1): 1})
    with pytest.raises(ValueError, match="int64"):
        encode_offset_checkpoint({TopicPartition("a", 0): 2**63})


_TOPICS = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)
_OFFSETS = st.dictionaries(
    st.builds(TopicPartition, _TOPICS, st.integers(0, 2**31 - 1)),
    st.integers(-(2**63), 2**63 - 1),
    max_size=20,
)


@given(_OFFSETS, st.booleans())
def test_offset_checkpoint_round_trip(offsets: dict[TopicPartition, int], keep: bool) -> None:
    data = encode_offset_checkpoint(offsets, keep_order=keep)
    parsed = parse_offset_checkpoint(data, path=PATH)
    assert parsed == offsets
    if keep:
        assert list(parsed) == list(offsets)
    assert encode_offset_checkpoint(parsed, keep_order=True) == data


# --- leader-epoch-checkpoint --------------------------------------------------------------------


def test_leader_epoch_spec_example() -> None:
    data = b"0\n2\n0 0\n3 1520\n"
    entries = parse_leader_epoch_checkpoint(data)
    assert entries == [EpochEntry(0, 0), EpochEntry(3, 1520)]
    assert entries[1].epoch == 3 and entries[1].start_offset == 1520
    assert encode_leader_epoch_checkpoint(entries) == data
    assert encode_leader_epoch_checkpoint([]) == b"0\n0\n"
    assert parse_leader_epoch_checkpoint(b"") == []


@pytest.mark.parametrize(
    ("entries", "line", "match"),
    [
        (b"0 0\n-1 5\n", 4, "epoch -1 is below the minimum 0"),
        (b"0 0\n1 -5\n", 4, "start offset -5 is below the minimum 0"),
        (b"3 0\n3 5\n", 4, "epoch 3 does not follow epoch 3"),
        (b"3 0\n2 5\n", 4, "epoch 2 does not follow epoch 3"),
        (b"1 10\n2 5\n", 4, "start offset 5 of epoch 2 is below start offset 10"),
        (b"0 0\n1\n", 4, "expected 2 fields"),
        (b"0 0\n1 2 3\n", 4, "expected 2 fields"),
        (b"0 0\nx 2\n", 4, "epoch 'x' is not an int32"),
    ],
)
def test_malformed_leader_epoch_checkpoints(entries: bytes, line: int, match: str) -> None:
    _corrupt(b"0\n2\n" + entries, parse_leader_epoch_checkpoint, line, match)


def test_equal_start_offsets_are_accepted() -> None:
    # An epoch that wrote nothing: Kafka's cache would drop it, the file is still readable.
    assert parse_leader_epoch_checkpoint(b"0\n2\n1 5\n2 5\n") == [
        EpochEntry(1, 5),
        EpochEntry(2, 5),
    ]


def test_encode_leader_epoch_checkpoint_validates() -> None:
    with pytest.raises(ValueError, match="does not follow"):
        encode_leader_epoch_checkpoint([EpochEntry(2, 0), EpochEntry(1, 5)])
    with pytest.raises(ValueError, match="outside"):
        encode_leader_epoch_checkpoint([EpochEntry(-1, 0)])


@given(
    st.lists(
        st.tuples(st.integers(0, 1000), st.integers(0, 10**6)),
        max_size=20,
        unique_by=lambda e: e[0],
    )
)
def test_leader_epoch_round_trip(raw: list[tuple[int, int]]) -> None:
    epochs = sorted(epoch for epoch, _ in raw)
    offsets = sorted(offset for _, offset in raw)
    entries = [EpochEntry(e, o) for e, o in zip(epochs, offsets, strict=True)]
    assert parse_leader_epoch_checkpoint(encode_leader_epoch_checkpoint(entries)) == entries


@given(st.binary(max_size=60))
def test_any_bytes_parse_or_raise_corrupt_checkpoint(data: bytes) -> None:
    for parse in (parse_offset_checkpoint, parse_leader_epoch_checkpoint):
        try:
            parse(data, path=PATH)  # type: ignore[operator]
        except CorruptCheckpointError as exc:
            assert exc.path == PATH and exc.line is not None


# --- Kafka UUIDs and partition.metadata ---------------------------------------------------------


def test_partition_metadata_layout_has_no_final_newline() -> None:
    data = encode_partition_metadata(TOPIC_ID)
    assert data == b"version: 0\ntopic_id: 4zeO1mdxSb69f7lqENDdVA"
    assert parse_partition_metadata(data) == TOPIC_ID
    assert parse_partition_metadata(data + b"\n") == TOPIC_ID


@pytest.mark.parametrize(
    ("data", "line", "match"),
    [
        (b"", 1, "expected 2 lines"),
        (b"version: 0\n", 2, "expected 2 lines"),
        (b"version: 0\ntopic_id: " + TOPIC_ID.encode() + b"\nx", 3, "unexpected text"),
        (b"version:0\ntopic_id: " + TOPIC_ID.encode(), 1, "expected 'version: <value>'"),
        (b"version: -1\ntopic_id: " + TOPIC_ID.encode(), 1, "below the minimum 0"),
        (b"version: x\ntopic_id: " + TOPIC_ID.encode(), 1, "not an int32"),
        (b"version: 0\ntopicid: " + TOPIC_ID.encode(), 2, "expected 'topic_id: <value>'"),
        (b"version: 0\ntopic_id: ", 2, "expected 'topic_id: <value>'"),
        (b"version: 0\ntopic_id: short", 2, "not a Kafka UUID"),
        (b"version: 0\ntopic_id: " + ZERO_UUID.encode(), 2, "all-zero"),
        (b"version: 0\ntopic_id: 4zeO1mdxSb69f7lqENDdVB", 2, "canonical"),
    ],
)
def test_malformed_partition_metadata(data: bytes, line: int, match: str) -> None:
    _corrupt(data, parse_partition_metadata, line, match)


def test_kafka_uuid_bytes_round_trip() -> None:
    raw = bytes(range(16))
    text = kafka_uuid_from_bytes(raw)
    assert len(text) == 22 and kafka_uuid_to_bytes(text) == raw
    assert kafka_uuid_to_bytes(ONE_UUID) == bytes(15) + b"\x01"
    validate_topic_id(ONE_UUID)  # the metadata topic's id is readable, just never generated
    for bad in (ZERO_UUID, "", "a" * 22 + "==", "*" * 22):
        with pytest.raises(InvalidTopicError):
            validate_topic_id(bad)
    with pytest.raises(InvalidTopicError):
        encode_partition_metadata(ZERO_UUID)


@pytest.mark.parametrize("make", [new_topic_id, new_directory_id, new_cluster_id])
def test_new_ids(make: object) -> None:
    assert callable(make)
    ids = {make() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        raw = base64.urlsafe_b64decode(text + "==")
        assert raw[6] >> 4 == 4  # a random (version 4) UUID, as java.util.UUID.randomUUID
        assert text not in (ZERO_UUID, ONE_UUID)
        validate_topic_id(text)


@given(st.binary(min_size=16, max_size=16))
def test_any_16_bytes_make_a_canonical_id(raw: bytes) -> None:
    text = kafka_uuid_from_bytes(raw)
    assert kafka_uuid_to_bytes(text) == raw
    if raw != bytes(16):
        assert parse_partition_metadata(encode_partition_metadata(text)) == text


# --- .kafka_cleanshutdown -----------------------------------------------------------------------


def test_clean_shutdown_layout() -> None:
    assert encode_clean_shutdown() == b'{"version":0,"brokerEpoch":-1}'
    assert encode_clean_shutdown(53326) == b'{"version":0,"brokerEpoch":53326}'
    assert parse_clean_shutdown(encode_clean_shutdown(7)) == 7
    assert parse_clean_shutdown(b"") is None  # the pre-3.7 empty marker
    assert parse_clean_shutdown(b'{ "brokerEpoch" : 5, "version" : 0 }') == 5
    with pytest.raises(ValueError, match="int64"):
        encode_clean_shutdown(2**63)


@pytest.mark.parametrize(
    ("data", "line", "match"),
    [
        (b"{", 1, "not JSON"),
        (b'{"version":0,\n"brokerEpoch":}', 2, "not JSON"),
        (b"[]", 1, "expected"),
        (b'{"version":0}', 1, "expected"),
        (b'{"version":0,"brokerEpoch":1,"x":2}', 1, "expected"),
        (b'{"version":1,"brokerEpoch":1}', 1, "unsupported clean-shutdown version 1"),
        (b'{"version":true,"brokerEpoch":1}', 1, "unsupported clean-shutdown version"),
        (b'{"version":0,"brokerEpoch":1.5}', 1, "brokerEpoch 1.5 is not an int64"),
        (b'{"version":0,"brokerEpoch":NaN}', 1, "not JSON"),
        (b'{"version":0,"brokerEpoch":9223372036854775808}', 1, "not an int64"),
        (b"\xff", 1, "not UTF-8"),
    ],
)
def test_malformed_clean_shutdown(data: bytes, line: int, match: str) -> None:
    _corrupt(data, parse_clean_shutdown, line, match)


@given(st.integers(-(2**63), 2**63 - 1))
def test_clean_shutdown_round_trip(epoch: int) -> None:
    data = encode_clean_shutdown(epoch)
    assert json.loads(data) == {"version": 0, "brokerEpoch": epoch}
    assert parse_clean_shutdown(data) == epoch


# --- meta.properties ----------------------------------------------------------------------------

META_V1 = MetaProperties(
    version=1, node_id=1, cluster_id="MkU3OEVBNTcwNTJENDM2Qk", directory_id="ROP8qUaSlk7r55i85yz4Cg"
)


def test_meta_properties_spec_layout() -> None:
    data = encode_meta_properties(META_V1, now_ms=1_729_814_400_000)
    assert data == (
        b"#\n#Fri Oct 25 00:00:00 UTC 2024\nnode.id=1\ndirectory.id=ROP8qUaSlk7r55i85yz4Cg\n"
        b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
    )
    assert parse_meta_properties(data) == META_V1
    assert META_V1.effective_node_id == 1


def test_meta_properties_orders_and_date_comment() -> None:
    sorted_data = encode_meta_properties(META_V1, date_comment="D", order=KeyOrder.SORTED)
    assert sorted_data.splitlines()[2:] == [
        b"cluster.id=MkU3OEVBNTcwNTJENDM2Qk",
        b"directory.id=ROP8qUaSlk7r55i85yz4Cg",
        b"node.id=1",
        b"version=1",
    ]
    explicit = ["version", "node.id", "cluster.id", "directory.id"]
    data = encode_meta_properties(META_V1, date_comment="D", order=explicit)
    assert meta_properties_key_order(data) == explicit
    with pytest.raises(ValueError, match="permutation"):
        encode_meta_properties(META_V1, date_comment="D", order=["version"])
    with pytest.raises(ValueError, match="exactly one"):
        encode_meta_properties(META_V1)
    with pytest.raises(ValueError, match="exactly one"):
        encode_meta_properties(META_V1, now_ms=0, date_comment="D")


def test_meta_properties_v0() -> None:
    meta = parse_meta_properties(b"#\n#date\nversion=0\nbroker.id=1001\n")
    assert meta == MetaProperties(version=0, broker_id=1001)
    assert meta.effective_node_id == 1001 and meta.node_id is None
    # No version key means version 0; broker.id and cluster.id are optional there.
    assert parse_meta_properties(b"cluster.id=abc\n") == MetaProperties(0, cluster_id="abc")
    # A v0 file's node.id and a v1 file's broker.id are ignored, as Kafka does.
    assert parse_meta_properties(b"version=0\nnode.id=3\n") == MetaProperties(0)
    assert parse_meta_properties(b"version=1\nnode.id=3\ncluster.id=c\nbroker.id=9\n") == (
        MetaProperties(1, node_id=3, cluster_id="c")
    )


@pytest.mark.parametrize(
    ("data", "line", "match"),
    [
        (b"#\n#d\nversion=2\nnode.id=1\ncluster.id=c\n", 3, "unknown meta.properties version 2"),
        (b"#\n#d\nversion=x\n", 3, "version 'x' is not an int32"),
        (b"#\n#d\nversion=1\ncluster.id=c\n", None, "node.id was not found"),
        (b"#\n#d\nversion=1\nnode.id=1\n", None, "cluster.id was not found"),
        (b"#\n#d\nversion=1\nnode.id=one\ncluster.id=c\n", 4, "node.id 'one' is not an int32"),
        (b"#\n#d\nversion=0\nbroker.id=1 \n", 4, "broker.id '1 ' is not an int32"),
        (b"version=0\n\ndirectory.id=xyz\n", 3, "directory.id: id 'xyz' is not a Kafka UUID"),
        (b"version=0\ncluster.id=\\u12\n", 2, "malformed"),
    ],
)
def test_malformed_meta_properties(data: bytes, line: int | None, match: str) -> None:
    _corrupt(data, parse_meta_properties, line, match)


def test_meta_properties_constructor_checks() -> None:
    with pytest.raises(ValueError, match=r"node.id was not found"):
        MetaProperties(version=1, cluster_id="c")
    with pytest.raises(ValueError, match=r"cluster.id was not found"):
        MetaProperties(version=1, node_id=1)
    with pytest.raises(ValueError, match=r"version 0 uses broker.id"):
        MetaProperties(version=0, node_id=1)
    with pytest.raises(ValueError, match=r"version 1 uses node.id"):
        MetaProperties(version=1, node_id=1, cluster_id="c", broker_id=1)
    with pytest.raises(ValueError, match=r"unknown meta.properties version"):
        MetaProperties(version=2)
    with pytest.raises(ValueError, match=r"directory.id"):
        MetaProperties(version=0, directory_id="nope")
    with pytest.raises(ValueError, match="outside int32"):
        MetaProperties(version=0, broker_id=2**31)


_METAS = st.one_of(
    st.builds(
        MetaProperties,
        version=st.just(1),
        node_id=st.integers(0, 2**31 - 1),
        cluster_id=st.text(max_size=30),
        directory_id=st.none()
        | st.builds(kafka_uuid_from_bytes, st.binary(min_size=16, max_size=16)),
    ),
    st.builds(
        MetaProperties,
        version=st.just(0),
        broker_id=st.none() | st.integers(-(2**31), 2**31 - 1),
        cluster_id=st.none() | st.text(max_size=30),
    ),
)


@given(_METAS, st.integers(0, 253402300799999), st.sampled_from(list(KeyOrder)))
def test_meta_properties_round_trip(meta: MetaProperties, now_ms: int, order: KeyOrder) -> None:
    data = encode_meta_properties(meta, now_ms=now_ms, order=order)
    assert data.isascii()
    assert parse_meta_properties(data, path=PATH) == meta


# --- the broker corpus, byte for byte -----------------------------------------------------------

_OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params(_OFFSET_CHECKPOINTS))
def test_corpus_offset_checkpoints_round_trip(path: Path) -> None:
    data = path.read_bytes()
    offsets = parse_offset_checkpoint(data, path=str(path))
    lines = data.decode().splitlines()
    assert len(offsets) == int(lines[1]) == len(lines) - 2
    # Kafka wrote hash-map order: keeping the file's order reproduces the bytes ...
    assert encode_offset_checkpoint(offsets, keep_order=True) == data
    # ... and our sorted form carries the same entries.
    assert parse_offset_checkpoint(encode_offset_checkpoint(offsets)) == offsets


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params(("leader-epoch-checkpoint",)))
def test_corpus_leader_epoch_checkpoints_round_trip(path: Path) -> None:
    data = path.read_bytes()
    entries = parse_leader_epoch_checkpoint(data, path=str(path))
    assert entries, "the corpus holds only non-empty files"
    assert encode_leader_epoch_checkpoint(entries) == data


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params(("partition.metadata",)))
def test_corpus_partition_metadata_round_trip(path: Path) -> None:
    data = path.read_bytes()
    topic_id = parse_partition_metadata(data, path=str(path))
    assert encode_partition_metadata(topic_id) == data


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params((".kafka_cleanshutdown",)))
def test_corpus_clean_shutdown_round_trip(path: Path) -> None:
    data = path.read_bytes()
    epoch = parse_clean_shutdown(data, path=str(path))
    assert (encode_clean_shutdown(epoch) if epoch is not None else b"") == data


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params(("meta.properties",)))
def test_corpus_meta_properties_round_trip(path: Path) -> None:
    data = path.read_bytes()
    meta = parse_meta_properties(data, path=str(path))
    props = parse_properties(data.decode("latin-1"))
    assert meta.version == int(props.get("version", "0"))
    assert meta.cluster_id == props.get("cluster.id")
    assert meta.directory_id == props.get("directory.id")
    node_key = "node.id" if meta.version == 1 else "broker.id"
    assert meta.effective_node_id == (int(props[node_key]) if node_key in props else None)
    # Re-encoded with the file's own date line and key order, the bytes are the broker's.
    date_line = data.split(b"\n")[1].decode()
    key_order = meta_properties_key_order(data)
    assert encode_meta_properties(meta, date_comment=date_line[1:], order=key_order) == data
    # And that key order is the one some JDK's Properties.store produces for Kafka's insertion
    # order (version, cluster.id, node.id/broker.id, directory.id).
    jdk_orders = [
        encode_meta_properties(meta, date_comment=date_line[1:], order=order)
        for order in (KeyOrder.HASHTABLE, KeyOrder.CONCURRENT_HASH_MAP, KeyOrder.SORTED)
    ]
    assert data in jdk_orders
