"""Shared helpers of the compatibility suite: the corpus list and peer-neutral views.

A *view* of a buffer is what one decoder makes of it, reduced to plain values so that
seglog, kafka-python and aiokafka can be compared with ``==``:

* :class:`BatchView`: the batch's byte position and size, whether its checksum holds, the
  header fields the decoder exposes (a dict; each peer exposes a different subset), and its
  records;
* each record a dict: ``offset``, ``timestamp`` (the timestamp Kafka *reports*: the batch's
  maxTimestamp in a LogAppendTime v2 batch, the wrapper's timestamp in a LogAppendTime v1
  wrapper), ``timestamp_type``, ``key``, ``value``, ``headers`` (tuple of (str, bytes|None))
  and, for control batches, ``control`` = (version, type).

Conventions that differ between the libraries are mapped here, once, with the reason
(kafka-python's in ``tests/support/kafka_oracle.py``, where its view and the view types
live so that checks without seglog can use them):

* seglog keeps ``base_offset`` of a legacy wrapper for the first inner offset and calls the
  wrapper's own offset ``last_offset``, as Java does; kafka-python's ``base_offset`` of a
  legacy batch is the wrapper's offset and is mapped to ``last_offset``.
* kafka-python and aiokafka report v0 timestamps and timestamp types as ``None``; Kafka's
  Java reader and seglog report -1. ``None`` is mapped to -1.

kafka-python's snappy codec needs python-snappy and its magic-0 lz4 needs xxhash; both are
in the ``test`` extra, so the peers run their own codecs unchanged.
"""

from __future__ import annotations

import struct
from typing import Any

import aiokafka.record.memory_records as aiokafka_memory_records
import aiokafka.record.util as aiokafka_util

from seglog.format.batch import LOG_OVERHEAD, RecordBatch
from seglog.format.control import decode_control_key
from seglog.format.reader import Batch, EndKind, ReadEnd, read_batches
from support.kafka_oracle import (
    BatchView,
    BufferView,
    headers_tuple,
    none_to_minus_one,
    v2_common_header,
)

# Segments, fetch record sets, and KRaft snapshots (``<offset>-<epoch>.checkpoint``,
# ``bootstrap.checkpoint``), which are record batches too. Text checkpoint files are named
# ``*-checkpoint`` and do not match.
CORPUS_SUFFIXES = (".log", ".records", ".checkpoint")


# --- views (BatchView, BufferView, kafka_python_view: support/kafka_oracle.py) -------------


def seglog_header(batch: Batch) -> dict[str, Any]:
    """Every header field seglog exposes, under the peer-neutral names used below."""
    if isinstance(batch, RecordBatch):
        return {
            "magic": batch.magic,
            "base_offset": batch.base_offset,
            "last_offset": batch.last_offset,
            "last_offset_delta": batch.last_offset_delta,
            "next_offset": batch.next_offset,
            "partition_leader_epoch": batch.partition_leader_epoch,
            "crc": batch.crc,
            "attributes": batch.attributes,
            "codec": int(batch.compression),
            "timestamp_type": int(batch.timestamp_type),
            "is_transactional": batch.is_transactional,
            "is_control": batch.is_control,
            "base_timestamp": batch.base_timestamp,
            "max_timestamp": batch.max_timestamp,
            "producer_id": batch.producer_id,
            "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence,
            "last_sequence": batch.last_sequence,
            "records_count": batch.records_count,
            "size": batch.size_in_bytes,
        }
    return {
        "magic": batch.magic,
        "last_offset": batch.last_offset,
        "next_offset": batch.next_offset,
        "crc": batch.crc,
        "attributes": batch.attributes,
        "codec": int(batch.compression),
        "timestamp_type": int(batch.timestamp_type),
        "wrapper_timestamp": batch.timestamp,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "producer_id": batch.producer_id,
        "size": batch.size_in_bytes,
    }


def seglog_records(batch: Batch) -> list[dict[str, Any]]:
    """The batch's records as Kafka reports them."""
    timestamp_type = int(batch.timestamp_type)
    out = []
    for record in batch.records():
        view: dict[str, Any] = {
            "offset": record.offset,
            "timestamp": batch.reported_timestamp(record),
            "timestamp_type": timestamp_type,
            "key": record.key,
            "value": record.value,
            "headers": tuple((h.key, h.value) for h in record.headers),
        }
        if batch.is_control:
            control = decode_control_key(record.key)
            view["control"] = (control.version, control.type_id)
        out.append(view)
    return out


def seglog_view(data: bytes) -> tuple[BufferView, ReadEnd]:
    """seglog's reading: valid batches only, then how the buffer ended."""
    batches, end = read_batches(data)
    views = [
        BatchView(b.position, b.size_in_bytes, b.is_valid(), seglog_header(b), seglog_records(b))
        for b in batches
    ]
    return BufferView(views, end.position), end


def _aiokafka_header(batch: Any, raw: memoryview) -> dict[str, Any]:
    if raw[16] >= 2:
        return v2_common_header(batch)
    # aiokafka's (Cython) legacy batch exposes next_offset and the v2-only flags only.
    return {
        "next_offset": batch.next_offset,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control_batch,
    }


def _aiokafka_records(batch: Any, magic: int) -> list[dict[str, Any]]:
    out = []
    for record in batch:
        view: dict[str, Any] = {
            "offset": record.offset,
            "timestamp": none_to_minus_one(record.timestamp),
            "timestamp_type": none_to_minus_one(record.timestamp_type),
            "key": record.key,
            "value": record.value,
            "headers": headers_tuple(record.headers),
        }
        if magic < 2 and record.timestamp is None:
            # aiokafka's Cython legacy reader turns a v1 timestamp of -1 into None and then
            # reports the timestamp type as None too. Kafka's LegacyRecord.timestampType()
            # depends on magic and attributes only (CreateTime here), as kafka-python and
            # seglog report; the timestamp (-1) is still compared.
            del view["timestamp_type"]
        out.append(view)
    return out


def aiokafka_view(data: bytes) -> BufferView:
    """aiokafka's reading (Cython codec), stopping at the first bad CRC.

    aiokafka's Cython ``MemoryRecords`` picks the batch class from the *first* batch's magic
    and then misreads every later batch of another magic (a v2 batch after v1 ones fails
    with "Negative size passed to PyBytes_FromStringAndSize", a v1 gzip wrapper after v2
    ones with "Unknown frame descriptor"), while Kafka lets magic vary batch by batch in one
    segment (spec section 4.2; the kafka-go files mix v1 and v2). So this frames the buffer
    itself, exactly as ``MemoryRecords`` does (offset + size; stop before a partial entry),
    and hands each entry to a ``MemoryRecords`` of its own.
    """
    views = []
    position = 0
    buf = memoryview(data)
    while len(data) - position >= LOG_OVERHEAD:
        (length,) = struct.unpack_from(">i", buf, position + 8)
        size = LOG_OVERHEAD + length
        if position + size > len(data):
            break
        raw = buf[position : position + size]
        batch = aiokafka_memory_records.MemoryRecords(bytes(raw)).next_batch()
        crc_ok = bool(batch.validate_crc())
        view = BatchView(position, size, crc_ok, _aiokafka_header(batch, raw))
        views.append(view)
        if not crc_ok:
            return BufferView(views, position)
        view.records = _aiokafka_records(batch, raw[16])
        position += size
    return BufferView(views, position)


def aiokafka_crc32c(data: bytes | memoryview) -> int:
    """aiokafka's own (Cython) CRC-32C: an implementation independent of the crc32c package."""
    return int(aiokafka_util.calc_crc32c(bytes(data)))


def restrict(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """``ours`` cut down to the keys the peer exposes (so the two dicts compare with ==)."""
    missing = set(theirs) - set(ours)
    assert not missing, f"peer exposes fields seglog does not map: {sorted(missing)}"
    return {key: ours[key] for key in theirs}


def assert_same_reading(
    data: bytes, ours: BufferView, end: ReadEnd, theirs: BufferView, peer: str
) -> tuple[int, int]:
    """Assert seglog read ``data`` as ``peer`` did; return (batches, records) compared."""
    good = []
    for batch in theirs.batches:
        if not batch.crc_ok:
            break
        good.append(batch)
    assert [b.position for b in ours.batches] == [b.position for b in good], (
        f"{peer} finds CRC-valid batches at other positions than seglog"
    )
    records = 0
    for mine, other in zip(ours.batches, good, strict=True):
        where = f"batch at position {mine.position}"
        assert mine.crc_ok, where
        assert mine.size == other.size, where
        assert restrict(mine.header, other.header) == other.header, where
        assert len(mine.records) == len(other.records), where
        for record, peer_record in zip(mine.records, other.records, strict=True):
            assert restrict(record, peer_record) == peer_record, where
        records += len(mine.records)

    if len(good) < len(theirs.batches):  # the peer found a batch whose CRC does not match
        bad = theirs.batches[len(good)]
        assert end.kind is EndKind.CORRUPT, end
        assert end.position == bad.position, end
        assert "CRC" in end.reason, end
    elif theirs.stop == len(data):
        assert end.kind is EndKind.CLEAN, end
        assert end.position == len(data)
    else:  # the peer stopped before a partial batch
        assert end.kind is EndKind.TORN_TAIL, end
        assert end.position == theirs.stop, end
        remaining = len(data) - theirs.stop
        if remaining >= 12:
            (length,) = struct.unpack_from(">i", data, theirs.stop + 8)
            assert end.bytes_needed == 12 + length - remaining, end
    return len(good), records
