"""kafka-python as an oracle: how a third-party decoder reads a buffer or a partition dir.

No seglog code is used here, so the readings can judge what seglog writes.

* :func:`kafka_python_view`: one buffer (a segment, a fetch record set) as kafka-python's
  ``kafka.record.MemoryRecords`` reads it, as a peer-neutral :class:`BufferView` (the
  compatibility suite compares it with seglog's and aiokafka's views, see
  ``tests/compat/compat_support.py``).
* :func:`read_partition_dir_with_kafka_python`: every record of a partition directory,
  segment by segment in base-offset order, as (offset, timestamp, key, value, headers).

kafka-python conventions mapped to Kafka's:

* kafka-python reports v0 timestamps and timestamp types as ``None``; Kafka's Java reader
  reports ``RecordBatch.NO_TIMESTAMP`` (-1) and ``TimestampType.NO_TIMESTAMP_TYPE`` (-1).
  ``None`` is mapped to -1.
* kafka-python's ``LegacyRecordBatch.base_offset`` is the wrapper's own offset, which for a
  compressed wrapper is its *last* inner offset (Kafka's ``lastOffset()``); it is reported
  as ``last_offset`` here.
* The timestamp of a record is the one Kafka *reports*: the batch's maxTimestamp in a
  LogAppendTime v2 batch, the wrapper's timestamp in a LogAppendTime v1 wrapper (kafka-python
  does both itself).

kafka-python's snappy codec needs python-snappy and its magic-0 lz4 needs xxhash (both in
the ``test`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.record import MemoryRecords

Record = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


@dataclass
class BatchView:
    """One decoder's reading of one batch (or legacy entry)."""

    position: int
    size: int
    crc_ok: bool
    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BufferView:
    """One decoder's reading of a whole buffer; ``stop`` = first byte not returned as a batch."""

    batches: list[BatchView]
    stop: int


def none_to_minus_one(value: int | None) -> int:
    return -1 if value is None else value


def headers_tuple(
    pairs: Iterable[tuple[str, bytes | None]],
) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((key, None if value is None else bytes(value)) for key, value in pairs)


# v2 header fields both peers (kafka-python and aiokafka) expose under the same attribute names:
# our field name -> the peer's attribute.
V2_COMMON_ATTRIBUTES = {
    "magic": "magic",
    "base_offset": "base_offset",
    "last_offset_delta": "last_offset_delta",
    "next_offset": "next_offset",
    "crc": "crc",
    "attributes": "attributes",
    "codec": "compression_type",
    "timestamp_type": "timestamp_type",
    "is_transactional": "is_transactional",
    "is_control": "is_control_batch",
    "base_timestamp": "first_timestamp",
    "max_timestamp": "max_timestamp",
    "producer_id": "producer_id",
    "producer_epoch": "producer_epoch",
    "base_sequence": "base_sequence",
}


def v2_common_header(batch: Any) -> dict[str, Any]:
    """The :data:`V2_COMMON_ATTRIBUTES` of a peer's v2 batch object."""
    return {name: getattr(batch, attribute) for name, attribute in V2_COMMON_ATTRIBUTES.items()}


def _kafka_python_header(batch: Any) -> dict[str, Any]:
    if batch.magic >= 2:
        return v2_common_header(batch) | {
            "last_offset": batch.last_offset,
            "partition_leader_epoch": batch.leader_epoch,
            "last_sequence": batch.last_sequence,
            "records_count": batch.records_count,
            "size": batch.size_in_bytes,
        }
    # kafka-python keeps the stored CRC, attributes and wrapper timestamp in slots only.
    return {
        "magic": batch.magic,
        "last_offset": batch.base_offset,  # the wrapper's own offset: see the module doc
        "crc": batch._crc,
        "attributes": batch._attributes,
        "codec": batch.compression_type,
        "timestamp_type": none_to_minus_one(batch.timestamp_type),
        "wrapper_timestamp": none_to_minus_one(batch._timestamp),
        "size": batch.size_in_bytes,
    }


def _kafka_python_records(batch: Any) -> list[dict[str, Any]]:
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
        if batch.magic >= 2 and batch.is_control_batch:
            view["control"] = (record.version, record.type)
        out.append(view)
    return out


def kafka_python_view(data: bytes, *, stop_at_bad_crc: bool = True) -> BufferView:
    """kafka-python's reading (``kafka.record.MemoryRecords``).

    kafka-python does not check CRCs while iterating; ``validate_crc()`` is called on each
    batch (before its records are read, as kafka-python requires). With ``stop_at_bad_crc``
    the first batch whose CRC fails is kept (``crc_ok`` False, records not read) and
    reading stops there.
    """
    records = MemoryRecords(data)
    views = []
    position = 0
    while records.has_next():
        batch = records.next_batch()
        crc_ok = bool(batch.validate_crc())
        view = BatchView(position, batch.size_in_bytes, crc_ok, _kafka_python_header(batch))
        views.append(view)
        position += batch.size_in_bytes
        if not crc_ok and stop_at_bad_crc:
            return BufferView(views, view.position)
        view.records = _kafka_python_records(batch)
    return BufferView(views, position)


def read_partition_dir_with_kafka_python(
    partition_dir: str | Path, *, include_control: bool = False, strict: bool = True
) -> list[Record]:
    """Every record of every ``NNN.log`` segment of ``partition_dir``, in base-offset order.

    Each record is (offset, timestamp, key, value, headers), the timestamp as Kafka reports
    it (see the module doc), headers a list of (key, value) with value None for a null one.
    Records of control batches (transaction markers, KRaft control records) are left out
    unless ``include_control``. A batch whose CRC fails raises ValueError; so does a partial
    trailing batch when ``strict`` (without it, it is ignored, as Kafka's reader does).
    """
    segments = sorted(
        (int(p.stem), p) for p in Path(partition_dir).glob("*.log") if p.stem.isdigit()
    )
    out: list[Record] = []
    for _, path in segments:
        data = path.read_bytes()
        view = kafka_python_view(data)
        if view.batches and not view.batches[-1].crc_ok:
            raise ValueError(f"{path}: CRC mismatch in the batch at {view.batches[-1].position}")
        if strict and view.stop != len(data):
            raise ValueError(f"{path}: {len(data) - view.stop} trailing bytes at {view.stop}")
        for batch in view.batches:
            if batch.header.get("is_control") and not include_control:
                continue
            out += [
                (r["offset"], r["timestamp"], r["key"], r["value"], list(r["headers"]))
                for r in batch.records
            ]
    return out
