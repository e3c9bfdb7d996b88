"""Re-encoding the corpus's v2 batches with the same attributes gives back the same bytes.

* Uncompressed v2 batch: ``encode_batch(records, <every header field of the original>)``
  must equal the original batch byte for byte (header, records, CRC).
* Compressed v2 batch: compressors are not byte-reproducible across implementations (the
  Java producer's gzip/snappy/lz4/zstd output differs from Python's even at the same level),
  so the check is split in two: the decompressed records section re-encoded from the
  decoded records must equal the decompressed section byte for byte, and framing the
  original compressed stream with the original header fields (``assemble_batch``) must give
  back the original batch, CRC included.
* Legacy v0/v1 entries are not re-encoded: seglog never writes those formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from compat_support import CORPUS_SUFFIXES

from corpus_location import corpus_params
from seglog.format.batch import (
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    assemble_batch,
    encode_batch,
    encode_record,
)
from seglog.format.compression import CompressionType
from seglog.format.reader import read_batches

pytestmark = pytest.mark.compat

CORPUS = corpus_params(CORPUS_SUFFIXES)


def reencode(batch: RecordBatch) -> bytes:
    """``batch`` encoded again from its records and header fields."""
    return encode_batch(
        batch.records(),
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        timestamp_type=batch.timestamp_type,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        delete_horizon_ms=batch.delete_horizon_ms,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        last_offset_delta=batch.last_offset_delta,
    )


def reencode_records_section(batch: RecordBatch) -> bytes:
    """The (uncompressed) records section encoded again from the decoded records."""
    return b"".join(
        encode_record(
            record.offset - batch.base_offset,
            record.timestamp - batch.base_timestamp,
            record.key,
            record.value,
            record.headers,
            record.attributes,
        )
        for record in batch.records()
    )


def v2_batches(path: Path) -> list[RecordBatch]:
    batches, _ = read_batches(path.read_bytes())
    return [b for b in batches if isinstance(b, RecordBatch)]


def assert_compressed_batch_reencodes(batch: RecordBatch) -> None:
    """Records section re-encodes exactly; the original stream re-frames to the same batch."""
    where = f"batch at position {batch.position}"
    assert reencode_records_section(batch) == batch.records_section(), where
    framed = assemble_batch(
        memoryview(batch.raw)[RECORD_BATCH_OVERHEAD:],
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        attributes=batch.attributes,
        last_offset_delta=batch.last_offset_delta,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        records_count=batch.records_count,
    )
    assert framed == bytes(batch.raw), where


@pytest.mark.parametrize("path", CORPUS)
def test_v2_batches_reencode_to_identical_bytes(path: Path) -> None:
    batches = v2_batches(path)
    if not batches:
        pytest.skip("only legacy v0/v1 entries in this file (seglog never writes those)")
    for batch in batches:
        if batch.compression is CompressionType.NONE:
            assert reencode(batch) == bytes(batch.raw), f"batch at position {batch.position}"
        else:
            assert_compressed_batch_reencodes(batch)
