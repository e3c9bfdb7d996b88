"""Batches cross between seglog and its peers, both ways, for every codec (hypothesis).

* seglog -> peers: every batch ``seglog.testing.strategies.batch_specs()`` draws (every codec,
  keys and values null or not, headers with null values, producer ids, transactional and
  control batches, LogAppendTime, the delete-horizon flag, offset gaps, timestamps going
  backwards) decodes in kafka-python and in aiokafka to what seglog decodes, header and
  records, and both peers find its CRC valid.
* peers -> seglog: v2 batches built by kafka-python's and aiokafka's
  ``DefaultRecordBatchBuilder`` (every codec both support: gzip, snappy, lz4, zstd) decode in
  seglog to the records given to the builder and to what the peer itself decodes; seglog's
  encoder, given the same records and header fields, rebuilds uncompressed ones byte for byte
  (compressed ones: the records section). Legacy message sets built by kafka-python's and
  aiokafka's ``LegacyRecordBatchBuilder`` (magic 0 and 1; none, gzip, snappy, lz4) decode in
  seglog's legacy reader as in both peers. Magic 0 lz4 (with Kafka's broken v0 header
  checksum, built by kafka-python through ``xxhash``) comes from kafka-python only: aiokafka
  refuses to build it (KAFKA-3160).

The producer builders write what a producer sends: base offset 0, CreateTime, and a
wrapper offset of 0 for compressed legacy sets. The legacy tests then do what the broker does
on append (assign the wrapper's offset, optionally stamp LogAppendTime and recompute the
CRC), and also keep some unassigned wrappers to pin down Kafka's rule for them.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AiokafkaLegacyBuilder
from compat_support import (
    aiokafka_view,
    assert_same_reading,
    seglog_view,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords as KafkaPythonMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KafkaPythonLegacyBuilder

from seglog.errors import CorruptRecordError
from seglog.format.batch import RECORD_BATCH_OVERHEAD, RecordBatch, encode_batch, encode_record
from seglog.format.compression import CompressionType
from seglog.format.control import ControlRecordType, encode_control_key, encode_end_txn_marker
from seglog.format.legacy import LegacyBatch
from seglog.format.reader import read_batches
from seglog.format.records import Header, Record, TimestampType
from seglog.testing.strategies import BatchSpec, batch_specs
from support.kafka_oracle import BufferView, kafka_python_view

pytestmark = pytest.mark.compat

CODECS = list(CompressionType)
PEER_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def peer_views(data: bytes) -> dict[str, BufferView]:
    return {"kafka-python": kafka_python_view(data), "aiokafka": aiokafka_view(data)}


# --- seglog -> peers ---------------------------------------------------------------------------


def assert_peers_read_seglog_batch(data: bytes, spec: BatchSpec | None = None) -> None:
    ours, end = seglog_view(data)
    assert end.is_clean, end
    assert len(ours.batches) == 1
    if spec is not None:
        (batch,) = read_batches(data)[0]
        assert batch.records() == list(spec.records)
    for peer, theirs in peer_views(data).items():
        assert [b.crc_ok for b in theirs.batches] == [True], peer
        assert_same_reading(data, ours, end, theirs, peer)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name_in_kafka)
@PEER_SETTINGS
@given(data=st.data())
def test_seglog_batches_decode_identically_in_peers(codec: CompressionType, data: Any) -> None:
    spec = data.draw(batch_specs(codec=codec))
    assert_peers_read_seglog_batch(spec.encode(), spec)


TS = 1_700_000_000_000
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "null-keys-and-values": {"null": True},
    "headers": {"headers": True},
    "idempotent": {"producer_id": 7, "producer_epoch": 1, "base_sequence": 100},
    "transactional": {
        "producer_id": 7,
        "producer_epoch": 1,
        "base_sequence": 100,
        "is_transactional": True,
    },
    "log-append-time": {"timestamp_type": 1, "max_timestamp": TS + 999},
    "delete-horizon": {"delete_horizon_ms": TS + 86_400_000},
    "control-commit": {"control": True},
}


def variant_batch(codec: CompressionType, variant: dict[str, Any]) -> bytes:
    """One batch per codec and flag combination, so each is covered whatever hypothesis draws."""
    options = {k: v for k, v in variant.items() if k not in {"null", "headers", "control"}}
    if options.get("timestamp_type") == 1:
        options["timestamp_type"] = TimestampType.LOG_APPEND_TIME
    if variant.get("control"):
        record = Record(
            42, TS, encode_control_key(ControlRecordType.COMMIT), encode_end_txn_marker(5)
        )
        return encode_batch(
            [record],
            compression=codec,
            is_control=True,
            is_transactional=True,
            producer_id=7,
            producer_epoch=1,
            partition_leader_epoch=3,
        )
    headers = (Header("trace", b"abc"), Header("empty", None)) if variant.get("headers") else ()
    records = [
        Record(
            1000 + 2 * i,
            TS + (-1) ** i * i,
            None if variant.get("null") and i % 2 else f"key-{i}".encode(),
            None if variant.get("null") and i % 3 == 0 else b"value " * (i + 1),
            headers,
        )
        for i in range(5)
    ]
    return encode_batch(records, compression=codec, partition_leader_epoch=3, **options)


@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name_in_kafka)
def test_each_codec_and_flag_combination_decodes_in_peers(
    codec: CompressionType, variant: str
) -> None:
    assert_peers_read_seglog_batch(variant_batch(codec, VARIANTS[variant]))


# --- peers -> seglog (v2) ----------------------------------------------------------------------

header_pairs = st.lists(
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=12)), max_size=2
)
# Repetitive values so that the peers' builders do compress (they fall back to an
# uncompressed batch when compressing does not save bytes).
compressible = st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=8), st.integers(8, 40))


@dataclass
class PeerInput:
    """What a producer hands a peer's batch builder."""

    records: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False


@st.composite
def peer_inputs(draw: st.DrawFn) -> PeerInput:
    count = draw(st.integers(1, 8))
    offset = draw(st.integers(0, 3))
    first_timestamp = draw(st.integers(0, 1 << 41))
    records = []
    for _ in range(count):
        records.append(
            (
                offset,
                first_timestamp + draw(st.integers(-100_000, 100_000)),
                draw(st.none() | st.binary(max_size=16)),
                draw(st.none() | st.binary(max_size=16) | compressible),
                draw(header_pairs),
            )
        )
        offset += draw(st.integers(1, 3))
    # One compressible record so every codec really is used.
    records.append((offset, first_timestamp, b"filler", b"x" * 200, []))
    spec = PeerInput(records)
    if draw(st.booleans()):
        spec.producer_id = draw(st.integers(0, 1 << 40))
        spec.producer_epoch = draw(st.integers(0, 32767))
        spec.base_sequence = draw(st.integers(0, (1 << 31) - 1))
        spec.is_transactional = draw(st.booleans())
    return spec


PEER_BUILDERS = {"kafka-python": KafkaPythonBuilder, "aiokafka": AiokafkaBuilder}


def build_with_peer(peer: str, codec: CompressionType, spec: PeerInput) -> bytes:
    builder = PEER_BUILDERS[peer](
        magic=2,
        compression_type=int(codec),
        is_transactional=spec.is_transactional,
        producer_id=spec.producer_id,
        producer_epoch=spec.producer_epoch,
        base_sequence=spec.base_sequence,
        batch_size=1 << 24,
    )
    for offset, timestamp, key, value, headers in spec.records:
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def assert_seglog_reads_peer_batch(
    peer: str, codec: CompressionType, spec: PeerInput, data: bytes
) -> None:
    batches, end = read_batches(data)
    assert end.is_clean, end
    (batch,) = batches
    assert isinstance(batch, RecordBatch)
    assert batch.compression is codec
    assert batch.base_offset == 0
    assert batch.last_offset_delta == spec.records[-1][0]
    assert batch.base_timestamp == spec.records[0][1]
    assert batch.max_timestamp == max(r[1] for r in spec.records)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        spec.producer_id,
        spec.producer_epoch,
        spec.base_sequence,
    )
    assert batch.is_transactional == spec.is_transactional
    assert not batch.is_control
    expected = [
        Record(offset, timestamp, key, value, tuple(Header(k, v) for k, v in headers))
        for offset, timestamp, key, value, headers in spec.records
    ]
    assert batch.records() == expected
    ours, _ = seglog_view(data)
    assert_same_reading(data, ours, end, peer_views(data)[peer], peer)

    # seglog's encoder, given the same records and header fields, writes the same batch.
    options: dict[str, Any] = {
        "base_offset": 0,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "producer_id": spec.producer_id,
        "producer_epoch": spec.producer_epoch,
        "base_sequence": spec.base_sequence,
        "is_transactional": spec.is_transactional,
    }
    if codec is CompressionType.NONE:
        assert encode_batch(expected, **options) == data
    else:
        section = b"".join(
            encode_record(r.offset, r.timestamp - batch.base_timestamp, r.key, r.value, r.headers)
            for r in expected
        )
        assert section == batch.records_section()
        # Re-compressed by seglog, the batch differs only in its compressed bytes and CRC.
        ours_compressed = encode_batch(expected, compression=codec, **options)
        assert ours_compressed[21:RECORD_BATCH_OVERHEAD] == data[21:RECORD_BATCH_OVERHEAD]
        assert read_batches(ours_compressed)[0][0].records() == expected


@pytest.mark.parametrize("peer", list(PEER_BUILDERS))
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name_in_kafka)
@PEER_SETTINGS
@given(spec=peer_inputs())
def test_peer_built_batches_decode_identically_in_seglog(
    peer: str, codec: CompressionType, spec: PeerInput
) -> None:
    # aiokafka's Cython builder uses -1 as its "no first timestamp yet" sentinel: a first
    # record with timestamp -1 (NO_TIMESTAMP) is written as timestamp 0, so aiokafka cannot
    # build that input at all (its own decoder then reads 0). Such inputs go to kafka-python only.
    assume(not (peer == "aiokafka" and spec.records[0][1] == -1))
    assert_seglog_reads_peer_batch(peer, codec, spec, build_with_peer(peer, codec, spec))


# --- peers -> seglog (legacy v0/v1) ------------------------------------------------------------

LEGACY_BUILDERS = {"kafka-python": KafkaPythonLegacyBuilder, "aiokafka": AiokafkaLegacyBuilder}
LEGACY_CASES = [
    (peer, magic, codec)
    for peer in LEGACY_BUILDERS
    for magic in (0, 1)
    for codec in (
        CompressionType.NONE,
        CompressionType.GZIP,
        CompressionType.SNAPPY,
        CompressionType.LZ4,
    )
    if not (peer == "aiokafka" and magic == 0 and codec is CompressionType.LZ4)
]


def _restamp_legacy_wrapper(
    data: bytearray, offset: int, log_append_time: int | None, magic: int
) -> None:
    """What the broker does to a compressed legacy wrapper on append."""
    struct.pack_into(">q", data, 0, offset)
    if log_append_time is not None and magic == 1:
        data[17] |= 0x08  # LogAppendTime
        struct.pack_into(">q", data, 18, log_append_time)
    struct.pack_into(">I", data, 12, zlib.crc32(data[16:]) & 0xFFFFFFFF)  # CRC-32 of magic..end


@st.composite
def legacy_inputs(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 6))
    timestamp = draw(st.integers(0, 1 << 41))
    return {
        "records": [
            (
                timestamp + draw(st.integers(-1000, 1000)),
                draw(st.none() | st.binary(max_size=16)),
                draw(st.none() | st.binary(max_size=16) | compressible),
            )
            for _ in range(count)
        ],
        "first_offset": draw(st.integers(0, 1 << 40)),
        # False: leave the producer's wrapper offset (0) unassigned, as Kafka never stores it.
        "assign": draw(st.booleans() | st.just(True)),
        "log_append_time": draw(st.none() | st.integers(0, 1 << 41)),
    }


def build_legacy(peer: str, magic: int, codec: CompressionType, case: dict[str, Any]) -> bytes:
    builder = LEGACY_BUILDERS[peer](magic=magic, compression_type=int(codec), batch_size=1 << 24)
    first = case["first_offset"]
    for index, (timestamp, key, value) in enumerate(case["records"]):
        # Uncompressed and v0 inner offsets are absolute; v1 inner offsets are relative.
        offset = index if (magic == 1 and codec is not CompressionType.NONE) else first + index
        assert builder.append(offset, timestamp, key, value) is not None
    data = bytearray(builder.build())
    if codec is not CompressionType.NONE and case["assign"]:
        last = first + len(case["records"]) - 1
        _restamp_legacy_wrapper(data, last, case["log_append_time"], magic)
    return bytes(data)


@pytest.mark.parametrize(
    ("peer", "magic", "codec"),
    LEGACY_CASES,
    ids=[f"{p}-v{m}-{c.name_in_kafka}" for p, m, c in LEGACY_CASES],
)
@settings(max_examples=25, deadline=None)
@given(case=legacy_inputs())
def test_peer_built_legacy_sets_decode_identically_in_seglog(
    peer: str, magic: int, codec: CompressionType, case: dict[str, Any]
) -> None:
    data = build_legacy(peer, magic, codec, case)
    ours, end = seglog_view(data)
    assert end.is_clean, end
    batches, _ = read_batches(data)
    assert all(isinstance(b, LegacyBatch) and b.magic == magic for b in batches)
    assert {int(b.compression) for b in batches} == {int(codec)}
    values = [r.value for b in batches for r in b.records()]
    assert values == [value for _, _, value in case["records"]]
    if magic == 0 and codec is CompressionType.LZ4:
        # aiokafka refuses to decode v0 lz4 at all (KAFKA-3160); kafka-python reads it.
        views = {"kafka-python": kafka_python_view(data)}
    else:
        views = peer_views(data)
    for name, theirs in views.items():
        assert_same_reading(data, ours, end, theirs, name)


# --- legacy wrapper rules, pinned to Kafka's Java reader ----------------------------------------


def test_unassigned_v1_wrapper_keeps_inner_offsets_as_kafka_does() -> None:
    # Kafka's AbstractLegacyRecordBatch.DeepRecordsIterator computes
    # absoluteBaseOffset = wrapperOffset - lastInnerOffset and applies it only when >= 0;
    # kafka-python and aiokafka copy that rule. A producer-side wrapper (offset 0, inner
    # 0..2) therefore reads as offsets 0..2, not -2..0.
    builder = KafkaPythonLegacyBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for index in range(3):
        builder.append(index, TS + index, None, b"v%d" % index)
    data = bytes(builder.build())
    (batch,), end = read_batches(data)
    assert end.is_clean
    assert [r.offset for r in batch.records()] == [0, 1, 2]
    ours, _ = seglog_view(data)
    for peer, theirs in peer_views(data).items():
        assert_same_reading(data, ours, end, theirs, peer)


def test_compressed_legacy_wrapper_without_inner_messages_is_corrupt() -> None:
    # Kafka: InvalidRecordException("Found invalid compressed record set with no inner
    # records"). kafka-python fails too (IndexError on the empty inner list).
    value = gzip.compress(b"", mtime=0)
    message = struct.pack(">bbqii", 1, 1, TS, -1, len(value)) + value  # magic .. value
    crc = zlib.crc32(message) & 0xFFFFFFFF
    data = struct.pack(">qiI", 7, 4 + len(message), crc) + message
    (batch,), end = read_batches(data)
    assert end.is_clean  # the entry's frame and CRC are fine ...
    with pytest.raises(CorruptRecordError) as raised:  # ... its content is not
        batch.records()
    assert raised.value.position == 0
    with pytest.raises(IndexError):
        list(next(iter(KafkaPythonMemoryRecords(data))))
