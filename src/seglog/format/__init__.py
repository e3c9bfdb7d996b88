"""Pure bytes <-> values for Kafka's storage formats; nothing here opens a file.

Record batches v2 (read and write), legacy message sets v0/v1 (read only), CRC-32C,
compression codecs with Kafka's framing, control records, a buffer reader that tells a clean
end from a torn tail and from corruption, and a size-limited batch builder.
"""

from seglog.format.batch import (
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    encode_batch,
)
from seglog.format.builder import BatchBuilder, build_batches
from seglog.format.compression import CompressionType
from seglog.format.control import ControlRecordType
from seglog.format.legacy import LegacyBatch
from seglog.format.reader import Batch, BatchReader, EndKind, ReadEnd, read_batches
from seglog.format.records import Header, Record, TimestampType

__all__ = [
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "RECORD_BATCH_OVERHEAD",
    "Batch",
    "BatchBuilder",
    "BatchReader",
    "CompressionType",
    "ControlRecordType",
    "EndKind",
    "Header",
    "LegacyBatch",
    "ReadEnd",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batches",
    "encode_batch",
    "read_batches",
]
