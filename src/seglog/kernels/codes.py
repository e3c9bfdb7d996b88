"""Status codes and field layouts shared by the numba kernels and their Python twins.

Both implementations of every kernel return the same small integers defined here, so a
differential test can compare them exactly and the format layer can turn a code into a
message without knowing which implementation ran. Plain ``int`` constants (not an enum) so
that numba folds them into compiled code as literals.

Batch-framing walk (``walk_batches``) result: ``(count, end_code, end_position, detail_a,
detail_b, last_offset)``. ``FRAME_*`` are row numbers of the ``frames`` output matrix (shape
``(FRAME_FIELDS, capacity)``, int64): one column per entry, in buffer order.

Records walk (``scan_records``) result: ``(code, section, error_position)``; ``section`` is
the index of the failing section and ``error_position`` the byte (in the scanned buffer) where
the broken field starts; both are -1 on success.
"""

from __future__ import annotations

# --- rows of the frames matrix ---------------------------------------------------------------
FRAME_POSITION = 0  # byte position of the entry in the buffer
FRAME_BASE_OFFSET = 1  # int64 at byte 0 (v2 baseOffset; a legacy entry's own offset)
FRAME_BATCH_LENGTH = 2  # int32 at byte 8 (v2 batchLength; legacy messageSize)
FRAME_PARTITION_LEADER_EPOCH = 3
FRAME_MAGIC = 4
FRAME_CRC = 5  # stored uint32, not verified by the kernel
FRAME_ATTRIBUTES = 6
FRAME_LAST_OFFSET_DELTA = 7
FRAME_BASE_TIMESTAMP = 8
FRAME_MAX_TIMESTAMP = 9
FRAME_PRODUCER_ID = 10
FRAME_PRODUCER_EPOCH = 11
FRAME_BASE_SEQUENCE = 12
FRAME_RECORDS_COUNT = 13
FRAME_FIELDS = 14
# Legacy (magic 0/1) entries fill only POSITION, BASE_OFFSET, BATCH_LENGTH and MAGIC; every
# other row is 0 for them (the format layer parses legacy messages itself).

# --- framing constants (Kafka's) ---------------------------------------------------------------
LOG_OVERHEAD = 12  # int64 offset + int32 size
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_BATCH_OVERHEAD = 61
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
RECORD_OVERHEAD_V0 = 14  # smallest legal entry size of any magic
MAGIC_V2 = 2
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# --- end codes of the batch walk ---------------------------------------------------------------
END_CLEAN = 0  # the last entry ended exactly at ``stop``
END_TORN = 1  # the buffer ends inside an entry; detail_a = bytes the whole entry needs
END_FULL = 2  # the output matrix is full; resume at end_position with last_offset
# Corrupt endings (the entry at end_position is not a valid entry):
END_ZERO_TAIL = 10  # size 0 and only zero bytes to the end; detail_a = bytes left
END_SIZE_TOO_SMALL = 11  # size below 14; detail_a = size
END_SIZE_TOO_LARGE = 12  # size above max_batch_bytes; detail_a = size
END_BAD_MAGIC = 13  # magic above 2; detail_a = magic
END_BATCH_TOO_SMALL = 14  # v2 batchLength below 49; detail_a = size
END_NEGATIVE_COUNT = 15  # v2 lastOffsetDelta or recordsCount < 0; detail_a/b = them
END_OFFSET_ORDER = 16  # offset not above the previous last offset; detail_a/b = them
END_OFFSET_OVERFLOW = 17  # v2 baseOffset + lastOffsetDelta above int64; detail_a/b = them

# Endings the format layer must re-check after its own per-entry checks (CRC, legacy parse),
# because Kafka's reader runs those first and they would name the same entry.
END_AFTER_ENTRY_CHECKS = (END_NEGATIVE_COUNT, END_OFFSET_OVERFLOW, END_OFFSET_ORDER)

END_NAMES = {
    END_CLEAN: "clean",
    END_TORN: "torn tail",
    END_FULL: "output full",
    END_ZERO_TAIL: "zero-filled tail",
    END_SIZE_TOO_SMALL: "entry size below 14",
    END_SIZE_TOO_LARGE: "entry size above the limit",
    END_BAD_MAGIC: "unknown magic",
    END_BATCH_TOO_SMALL: "batch length below 49",
    END_NEGATIVE_COUNT: "negative lastOffsetDelta or recordsCount",
    END_OFFSET_ORDER: "offsets go backwards",
    END_OFFSET_OVERFLOW: "baseOffset + lastOffsetDelta overflows int64",
}

# --- records walk ------------------------------------------------------------------------------
MIN_RECORD_BODY_BYTES = 6  # attributes + five one-byte varints
MIN_RECORD_BYTES = MIN_RECORD_BODY_BYTES + 1  # plus a one-byte length
MAX_VARINT_BYTES = 5  # Kafka varint (int32)
MAX_VARLONG_BYTES = 10  # Kafka varlong (int64)

REC_OK = 0
REC_VARINT_TRUNCATED = 1  # a varint runs past the record (or the section)
REC_VARINT_TOO_LONG = 2  # more than 5 (varint) or 10 (varlong) bytes
REC_VARINT_OUT_OF_RANGE = 3  # the last allowed byte carries bits outside int32/int64
REC_COUNT_IMPOSSIBLE = 4  # recordsCount < 0 or more records than 7-byte records fit
REC_LENGTH_INVALID = 5  # record length below 6 or past the end of the section
REC_KEY_LENGTH_INVALID = 6  # below -1 or past the end of the record
REC_VALUE_LENGTH_INVALID = 7
REC_HEADER_COUNT_INVALID = 8  # below 0 or above the bytes left in the record
REC_HEADER_KEY_LENGTH_INVALID = 9  # below 0 (never null) or past the end of the record
REC_HEADER_VALUE_LENGTH_INVALID = 10
REC_LENGTH_MISMATCH = 11  # the fields do not end exactly at the declared length
REC_BYTES_LEFT = 12  # bytes left in the section after recordsCount records
REC_BAD_SECTION = 13  # section bounds outside the buffer (caller bug)
REC_OUTPUT_TOO_SMALL = 14  # output arrays cannot hold the section's records (caller bug)

REC_NAMES = {
    REC_OK: "ok",
    REC_VARINT_TRUNCATED: "truncated varint",
    REC_VARINT_TOO_LONG: "over-long varint",
    REC_VARINT_OUT_OF_RANGE: "varint out of range",
    REC_COUNT_IMPOSSIBLE: "record count cannot fit in the records section",
    REC_LENGTH_INVALID: "invalid record length",
    REC_KEY_LENGTH_INVALID: "invalid key length",
    REC_VALUE_LENGTH_INVALID: "invalid value length",
    REC_HEADER_COUNT_INVALID: "invalid header count",
    REC_HEADER_KEY_LENGTH_INVALID: "invalid header key length",
    REC_HEADER_VALUE_LENGTH_INVALID: "invalid header value length",
    REC_LENGTH_MISMATCH: "record fields do not fill its declared length",
    REC_BYTES_LEFT: "bytes left in the records section after the last record",
    REC_BAD_SECTION: "records section outside the buffer",
    REC_OUTPUT_TOO_SMALL: "output arrays too small for the records",
}
