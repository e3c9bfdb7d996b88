"""Every record-batch file of the corpus decodes in seglog as the peers decode it.

Files: every ``.log`` segment, every ``.records`` fetch record set and every KRaft snapshot
``.checkpoint`` under ``../shared/corpus`` (see PROVENANCE.md there).

Oracle: kafka-python 3.x (``kafka.record.MemoryRecords``, with the C ``crc32c`` package for
its checksums; :func:`test_kafka_python_uses_the_c_crc32c` proves it). Second oracle: aiokafka's
Cython codec, whose CRC-32C, varint and lz4/snappy code paths do not share code with seglog
or kafka-python.

Compared per batch: byte position and size, CRC validity, every header field the peer
exposes (v2: base/last offset, last offset delta, partition leader epoch, magic, CRC,
attributes, codec, timestamp type, transactional and control flags, base and max timestamp,
producer id/epoch, base and last sequence, record count; legacy: wrapper offset, magic, CRC,
attributes, codec, timestamp type, wrapper timestamp). Compared per record: offset, the
timestamp Kafka reports (maxTimestamp for LogAppendTime), timestamp type, key, value,
headers, and the control type of control records.

How a file ends must agree too. The peers stop silently before a partial trailing batch;
seglog must then report ``TORN_TAIL`` at that batch's position. The peers do not check CRCs
while iterating (``validate_crc()`` is separate); where a batch's CRC fails, seglog must stop
with ``CORRUPT`` at that batch's position and never return it (or anything after it) as data.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import crc32c
import kafka.record.util
import pytest
from compat_support import (
    CORPUS_SUFFIXES,
    aiokafka_crc32c,
    aiokafka_view,
    assert_same_reading,
    seglog_view,
)

from corpus_location import corpus_params, corpus_root
from seglog.errors import CorruptRecordError
from seglog.format.batch import RecordBatch
from seglog.format.reader import EndKind, iter_batches_strict, read_batches
from support.kafka_oracle import kafka_python_view

pytestmark = pytest.mark.compat

CORPUS = corpus_params(CORPUS_SUFFIXES)


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_file_decodes_as_kafka_python_decodes_it(path: Path) -> None:
    data = path.read_bytes()
    ours, end = seglog_view(data)
    assert_same_reading(data, ours, end, kafka_python_view(data), "kafka-python")


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_file_decodes_as_aiokafka_decodes_it(path: Path) -> None:
    data = path.read_bytes()
    ours, end = seglog_view(data)
    assert_same_reading(data, ours, end, aiokafka_view(data), "aiokafka")


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_v2_crcs_match_an_independent_crc32c(path: Path) -> None:
    # seglog and kafka-python both use the crc32c package; aiokafka's Cython CRC-32C is a
    # separate implementation, so a bug shared by the first two cannot hide here.
    data = path.read_bytes()
    batches, _ = read_batches(data, verify_crc=False)
    for batch in batches:
        if isinstance(batch, RecordBatch):
            assert aiokafka_crc32c(memoryview(batch.raw)[21:]) == batch.crc, batch.position


@pytest.mark.parametrize("path", CORPUS)
def test_damaged_crc_in_corpus_file_is_reported_at_that_batch(path: Path) -> None:
    """Flip one CRC-covered byte in the first, middle and last batch of every file."""
    data = path.read_bytes()
    batches, _ = read_batches(data)
    if not batches:
        pytest.skip("no whole batch in this file to damage")
    for index in sorted({0, len(batches) // 2, len(batches) - 1}):
        target = batches[index]
        # v2: the CRC covers [21, end); legacy: [16, end). Flip the last byte of the batch.
        position = target.position + target.size_in_bytes - 1
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        damaged_bytes = bytes(damaged)
        kept, end = read_batches(damaged_bytes)
        assert [b.position for b in kept] == [b.position for b in batches[:index]]
        assert end.kind is EndKind.CORRUPT
        assert end.position == target.position
        assert "CRC" in end.reason
        theirs = kafka_python_view(damaged_bytes)
        assert not theirs.batches[index].crc_ok, "kafka-python must see the damage too"
        with pytest.raises(CorruptRecordError) as raised:
            list(iter_batches_strict(damaged_bytes, path=str(path)))
        assert raised.value.position == target.position


# --- the deliberately damaged files, pinned down explicitly ----------------------------------

KAFKA_RUST_INVALID_CRC = (
    "fetch/kafka-rust/fetch2.mytopic.nocompression.invalid_crc.kafka.0900.p0.records"
)
KAFKA_RUST_VALID_TWIN = "fetch/kafka-rust/fetch2.mytopic.nocompression.kafka.0900.p0.records"
KAFKAJS_PARTIAL = "fetch/kafkajs/v2_response_partial_messages_many_partitions.p0.records"
KAFKAJS_PARTIAL_TAIL = "fetch/kafkajs/v2_response_index_out_of_range.p1.records"


def _corpus_file(relative: str) -> bytes:
    root = corpus_root()
    if root is None or not (root / relative).is_file():
        pytest.skip(f"corpus file {relative} not found")
    return (root / relative).read_bytes()


def test_hand_damaged_crc_file_is_corrupt_at_position_0() -> None:
    data = _corpus_file(KAFKA_RUST_INVALID_CRC)
    batches, end = read_batches(data)
    assert batches == []
    assert end.kind is EndKind.CORRUPT
    assert end.position == 0
    assert "CRC" in end.reason
    # kafka-python iterates it happily; only validate_crc() notices.
    theirs = kafka_python_view(data, stop_at_bad_crc=False)
    assert [b.crc_ok for b in theirs.batches] == [False]
    assert len(theirs.batches[0].records) == 1
    # Upstream overwrote the CRC field (bytes 12-15 of the entry) of the valid capture with
    # "XXXX"; nothing else differs. Without the CRC check seglog decodes the message to what
    # kafka-python returns.
    twin = _corpus_file(KAFKA_RUST_VALID_TWIN)
    assert len(twin) == len(data)
    assert [i for i, (a, b) in enumerate(zip(twin, data, strict=True)) if a != b] == [
        12,
        13,
        14,
        15,
    ]
    unchecked, unchecked_end = read_batches(data, verify_crc=False)
    assert unchecked_end.is_clean
    assert [r.value for r in unchecked[0].records()] == [
        r["value"] for r in theirs.batches[0].records
    ]


def test_fetch_larger_than_the_response_is_a_torn_tail_at_0() -> None:
    data = _corpus_file(KAFKAJS_PARTIAL)
    batches, end = read_batches(data)
    assert batches == []
    assert end.kind is EndKind.TORN_TAIL
    assert end.position == 0
    (length,) = struct.unpack_from(">i", data, 8)
    assert end.bytes_needed == 12 + length - len(data)
    assert kafka_python_view(data).batches == []


def test_nine_byte_partial_tail_is_a_torn_tail() -> None:
    data = _corpus_file(KAFKAJS_PARTIAL_TAIL)
    batches, end = read_batches(data)
    assert end.kind is EndKind.TORN_TAIL
    assert end.position == len(data) - 9
    assert end.bytes_needed == 3  # not even the 12-byte offset + size prefix is there
    assert len(kafka_python_view(data).batches) == len(batches) == 3


# --- the oracle itself -------------------------------------------------------------------------


def test_kafka_python_uses_the_c_crc32c() -> None:
    # kafka.record.util binds the implementation as calc_crc32c's default argument at import:
    # the C crc32c package when importable, else a pure-Python fallback.
    implementation = kafka.record.util.calc_crc32c.__defaults__[0]
    assert implementation is crc32c.crc32c, implementation
    assert type(implementation).__name__ == "builtin_function_or_method"
    assert implementation(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_every_record_batch_file_listed_in_provenance_is_present() -> None:
    root = corpus_root()
    if root is None:
        pytest.skip("Kafka corpus not found (../shared/corpus or $SEGLOG_CORPUS)")
    manifest = (root / "PROVENANCE.md").read_text(encoding="utf-8")
    listed = set(
        re.findall(r"^\| `([^`]+\.(?:log|records|checkpoint))` \|", manifest, re.MULTILINE)
    )
    present = {
        str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(CORPUS_SUFFIXES)
    }
    assert listed, "PROVENANCE.md lists no record-batch file"
    assert listed <= present, sorted(listed - present)
    assert len(CORPUS) == len(present)


def corpus_totals() -> dict[str, Any]:
    """Files, batches and records compared over the whole corpus (for the report)."""
    totals = {"files": 0, "batches": 0, "records": 0}
    root = corpus_root()
    for param in CORPUS:
        path = param.values[0]
        if path is None or root is None:
            continue
        data = path.read_bytes()
        ours, end = seglog_view(data)
        batches, records = assert_same_reading(
            data, ours, end, kafka_python_view(data), "kafka-python"
        )
        totals["files"] += 1
        totals["batches"] += batches
        totals["records"] += records
    return totals


if __name__ == "__main__":  # pragma: no cover - prints the counts quoted in the report
    print(corpus_totals())
