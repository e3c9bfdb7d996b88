"""Read one offset range of one partition as Arrow record batches in the Kafka source schema.

Runs on Spark executors (and in tests directly); no pyspark here. :func:`read_range` opens
only the one partition it reads, read-only
(:func:`seglog.engine.compaction.partition_reader.open_partition_log`), reads it ``read_bytes`` at a
time (``Log.read``: whole batches from the one holding the position), decodes each chunk
with :func:`seglog.format.columnar.scan_columns` and yields ``pa.RecordBatch``es of at most
``batch_rows`` rows with exactly :func:`seglog.spark.schema.arrow_read_schema`.

Columns, built from numpy columns, **with no Python object per record**:

* ``key``/``value`` (``binary``): the chunk's data buffer is wrapped once (zero copy) as an
  Arrow binary array whose offsets are the records' span boundaries in buffer order
  ``[s0, e0, s1, e1, ...]`` (element ``2i`` is span ``i``, element ``2i+1`` the bytes
  between spans), and Arrow's ``take`` of the even elements copies the spans into a
  contiguous array in C++. Nulls come from a masked index. Spans are sorted by position
  first when a chunk mixes compressed and uncompressed batches (the arena then holds the
  decompressed sections after the input). Invariant used: spans of one column never overlap.
* ``topic``: one string repeated (offsets ``i * len``, data ``name * n``); ``partition``: a
  constant int32; ``offset``: the int64 column.
* ``timestamp``: Kafka's *reported* timestamp (a LogAppendTime batch reports its
  maxTimestamp for every record: ``RecordColumns.reported_timestamp``), ms -> µs, UTC.
* ``timestampType``: 1 for LogAppendTime batches, 0 for CreateTime, -1 for v0 messages
  (Kafka's ``NoTimestampType``).
* ``headers`` (``includeHeaders``): null for a record without headers (Spark's contract);
  otherwise the header spans are found by walking each such record's header section in
  Python (one loop step per header; records without headers cost nothing) and the list and
  struct children are built columnar from those spans as for keys and values.

Range semantics: records with ``start <= offset < end`` that exist (gaps of compacted
topics are simply absent; control batches are skipped). ``failOnDataLoss``: when the log
start offset is now above the position (retention ran after planning) a
:class:`~seglog.errors.DataLossError` names the partition and the lost offsets, or the lost
part is skipped; an end above the log end offset (the log was truncated) likewise. A
partition that no longer exists is data loss too. With ``read_compacted`` offsets up to the
published copy's horizon come from the copy, the rest from the log (the data-loss check
applies to the log part only).

``read_committed`` (``kafka.isolation.level``): the range ends at most at the last stable
offset, and the rows of aborted transactions are left out: the partition's aborted
transactions overlapping the range (its ``.txnindex`` entries) are read once, and each
chunk's transactional data batches inside one of them are dropped
(:meth:`seglog.core.aborted_batches.AbortedIntervals.without_aborted_rows`: one numpy take
per record column, no Python object per record). The compacted copy never holds aborted
data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from seglog.config import BrokerConfig
from seglog.core.aborted_batches import AbortedIntervals
from seglog.engine.compaction.partition_reader import PartitionView, open_partition_log
from seglog.engine.compaction.remote_copy import copy_store_for
from seglog.errors import CorruptRecordError, DataLossError, UnknownTopicError
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.reader import EndKind
from seglog.format.varint import decode_varint
from seglog.spark.schema import HEADER_ARROW_TYPE, arrow_read_schema
from seglog.storage.remote_copy_store import CopyTarget, S3Settings

READ_BYTES_DEFAULT = 8 * 1024 * 1024
BATCH_ROWS_DEFAULT = 10_000
_INT32_LIMIT = (1 << 31) - 1
_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_HEADER_STRUCT = HEADER_ARROW_TYPE.value_type


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """What one task reads (picklable): where the logs are and which offsets."""

    log_dirs: tuple[str, ...]
    config_path: str | None
    topic: str
    partition: int
    start: int
    end: int
    include_headers: bool = False
    read_compacted: bool = False
    read_committed: bool = False  # kafka.isolation.level=read_committed
    fail_on_data_loss: bool = True
    copy_target: CopyTarget | None = None  # the compacted copy is in object storage
    s3: S3Settings | None = None  # the log directories are in object storage


def read_range(
    request: RangeRequest,
    *,
    broker: BrokerConfig | None = None,
    read_bytes: int = READ_BYTES_DEFAULT,
    batch_rows: int = BATCH_ROWS_DEFAULT,
) -> Iterator[pa.RecordBatch]:
    """The records of ``request`` as record batches (see the module docstring)."""
    if request.start >= request.end:
        return
    if broker is None:
        from seglog.spark.options import broker_config_of

        broker = broker_config_of(
            request.log_dirs,
            request.config_path,
            s3=request.s3,
            wanted=lambda t, p: t == request.topic and p == request.partition,
        )
    name = f"{request.topic}-{request.partition}"
    try:
        log = open_partition_log(broker, request.topic, request.partition)
    except UnknownTopicError as exc:
        if request.fail_on_data_loss:
            raise DataLossError(
                f"{name}: offsets {request.start} to {request.end - 1} are gone: {exc}; set "
                "failOnDataLoss=false to skip them"
            ) from exc
        return
    builder = _BatchBuilder(request, batch_rows)
    order = _OrderCheck(name, str(log.directory))
    view = PartitionView(
        log,
        read_compacted=request.read_compacted,
        store=copy_store_for(log, request.copy_target) if request.read_compacted else None,
    )
    try:
        end = request.end
        if end > log.log_end_offset:
            if request.fail_on_data_loss:
                raise DataLossError(
                    f"{name}: offsets {log.log_end_offset} to {end - 1} are gone: the log "
                    f"now ends at {log.log_end_offset} (it was truncated); set "
                    "failOnDataLoss=false to skip them"
                )
            end = log.log_end_offset
        aborted = AbortedIntervals(())
        if request.read_committed:
            end = min(end, log.last_stable_offset)
            aborted = AbortedIntervals(log.aborted_transactions(request.start, end))
        position = request.start
        horizon = view.horizon
        while position < end:
            if position <= horizon:
                data = view.read_copy(position, read_bytes)
                stop = min(end, horizon + 1)
                if not data:
                    position = horizon + 1
                    continue
            else:
                log_start = log.log_start_offset
                if position < log_start:
                    if request.fail_on_data_loss:
                        raise DataLossError(
                            f"{name}: offsets {position} to {min(end, log_start) - 1} are gone: "
                            f"the log now starts at {log_start} (retention or delete-records "
                            "removed them); set failOnDataLoss=false to skip them"
                        )
                    position = log_start
                    continue
                data = view.read_log(position, read_bytes)
                stop = end
                if not data:
                    break
            columns = scan_columns(data)
            if columns.end.kind is EndKind.CORRUPT:
                raise CorruptRecordError(
                    f"{columns.end.reason} (byte {columns.end.position} of the bytes read from "
                    f"offset {position} of {name})",
                    path=str(log.directory),
                )
            if len(columns.batches) == 0:
                raise CorruptRecordError(
                    f"no whole batch at offset {position} of {name} (read {len(data)} bytes)",
                    path=str(log.directory),
                )
            order.check(columns, position, in_copy=position <= horizon)
            if aborted and position > horizon:
                columns = aborted.without_aborted_rows(columns)
            yield from builder.batches(columns, position, stop)
            position = max(position, int(columns.batches.last_offset[-1]) + 1)
    finally:
        view.close()
        log.close()


class _OrderCheck:
    """Header fields outside the CRC, checked across the chunks of one read (as
    :mod:`seglog.engine.log.record_scan` does): each batch's offset field (a v2 batch's base
    offset) above the previous batch's last offset, and partitionLeaderEpoch never below -1
    nor below an earlier batch's. A damaged base offset would otherwise make rows vanish
    (the next chunk would start past them) instead of failing the read."""

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path
        self.previous_last: int | None = None
        self.epoch = -1
        self.was_copy = False

    def check(self, columns: RecordColumns, position: int, *, in_copy: bool) -> None:
        """Raise ``CorruptRecordError`` when a chunk's batches break the order."""
        if in_copy != self.was_copy:  # the copy and the log are separate sequences
            self.previous_last, self.epoch, self.was_copy = None, -1, in_copy
        batches = columns.batches
        is_v2 = batches.magic == 2
        first = np.where(is_v2, batches.base_offset, batches.last_offset).astype(np.int64)
        last = batches.last_offset.astype(np.int64)
        previous = np.concatenate(
            (
                [np.iinfo(np.int64).min if self.previous_last is None else self.previous_last],
                last[:-1],
            )
        )
        disorder = np.flatnonzero(first <= previous)
        epochs = np.where(is_v2, batches.partition_leader_epoch.astype(np.int64), -1)
        running = np.maximum.accumulate(np.concatenate(([self.epoch], epochs)))
        bad_epoch = np.flatnonzero(
            is_v2 & ((epochs < -1) | ((epochs >= 0) & (epochs < running[:-1])))
        )
        if len(disorder):
            i = int(disorder[0])
            raise CorruptRecordError(
                f"batch of offsets {int(first[i])}-{int(last[i])} does not follow the previous "
                f"batch's last offset {int(previous[i])} (reading offset {position} of "
                f"{self.name})",
                path=self.path,
            )
        if len(bad_epoch):
            i = int(bad_epoch[0])
            raise CorruptRecordError(
                f"partitionLeaderEpoch {int(epochs[i])} of the batch of offsets {int(first[i])}-"
                f"{int(last[i])} is below -1 or below an earlier batch's {int(running[i])} "
                f"(reading offset {position} of {self.name})",
                path=self.path,
            )
        self.previous_last = int(last[-1])
        self.epoch = int(running[-1])


class _BatchBuilder:
    """Arrow batches from decoded chunks (see the module docstring)."""

    def __init__(self, request: RangeRequest, batch_rows: int) -> None:
        self.schema = arrow_read_schema(request.include_headers)
        self.include_headers = request.include_headers
        self.batch_rows = max(1, batch_rows)
        self.topic = request.topic.encode()
        self.partition = request.partition

    def batches(self, columns: RecordColumns, low: int, high: int) -> Iterator[pa.RecordBatch]:
        """Rows with ``low <= offset < high`` of one chunk, ``batch_rows`` at a time."""
        offsets = columns.offset
        # Offsets strictly increase within a chunk (batches are in offset order).
        first = int(np.searchsorted(offsets, low, side="left"))
        last = int(np.searchsorted(offsets, high, side="left"))
        for begin in range(first, last, self.batch_rows):
            yield self._build(columns, begin, min(last, begin + self.batch_rows))

    def _build(self, columns: RecordColumns, begin: int, stop: int) -> pa.RecordBatch:
        rows = stop - begin
        data = columns.data
        if len(data) > _INT32_LIMIT:
            raise CorruptRecordError(f"a decoded chunk of {len(data)} bytes is above 2 GiB")
        buffer = pa.py_buffer(data)
        batch_index = columns.batch_index[begin:stop]
        batches = columns.batches
        reported = columns.timestamp[begin:stop]
        log_append = batches.is_log_append_time
        if log_append.any():
            reported = np.where(
                log_append[batch_index], batches.max_timestamp[batch_index], reported
            )
        timestamp_type = log_append[batch_index].astype(np.int32)
        if (batches.magic == 0).any():
            timestamp_type[batches.magic[batch_index] == 0] = -1
        arrays = [
            _spans_to_binary(
                buffer, columns.key_position[begin:stop], columns.key_length[begin:stop]
            ),
            _spans_to_binary(
                buffer, columns.value_position[begin:stop], columns.value_length[begin:stop]
            ),
            _repeated_string(self.topic, rows),
            pa.array(np.full(rows, self.partition, dtype=np.int32), type=pa.int32()),
            pa.array(columns.offset[begin:stop], type=pa.int64()),
            pa.array(reported * 1000, type=_TIMESTAMP_TYPE),
            pa.array(timestamp_type, type=pa.int32()),
        ]
        if self.include_headers:
            arrays.append(_headers(columns, begin, stop, buffer))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _spans_to_binary(
    buffer: pa.Buffer,
    position: npt.NDArray[np.int64],
    length: npt.NDArray[np.int32],
    type_: pa.DataType | None = None,
) -> pa.Array:
    """A binary array of the byte spans ``buffer[position:position+length]`` (-1: null)."""
    rows = len(position)
    valid = length >= 0
    all_valid = bool(valid.all())
    starts = position.astype(np.int64, copy=True)
    ends = starts + length
    order: npt.NDArray[np.intp] | None = None
    if rows > 1 and bool((np.diff(starts[valid]) < 0).any()):
        order = np.argsort(np.where(valid, starts, -1), kind="stable")
    if order is not None:
        starts, ends, sorted_valid = starts[order], ends[order], valid[order]
    else:
        sorted_valid = valid
    if not all_valid:
        # A null span takes zero bytes where the previous valid span ended (so the
        # boundaries stay non-decreasing).
        filled = np.maximum.accumulate(np.where(sorted_valid, ends, 0))
        starts = np.where(sorted_valid, starts, filled)
        ends = np.where(sorted_valid, ends, filled)
    bounds = np.empty(2 * rows, dtype=np.int32)
    bounds[0::2] = starts
    bounds[1::2] = ends
    if rows == 0:
        bounds = np.zeros(1, dtype=np.int32)
    spread = pa.Array.from_buffers(
        pa.binary(), max(0, 2 * rows - 1), [None, pa.py_buffer(bounds), buffer]
    )
    if order is None:
        take = np.arange(0, 2 * rows, 2, dtype=np.int32)
    else:
        rank = np.empty(rows, dtype=np.int32)
        rank[order] = np.arange(rows, dtype=np.int32)
        take = 2 * rank
    indices = pa.array(take, mask=None if all_valid else ~valid)
    result = spread.take(indices)
    return result if type_ is None else result.view(type_)


def _repeated_string(text: bytes, rows: int) -> pa.Array:
    """A string array holding ``text`` ``rows`` times (two buffers, no Python loop)."""
    offsets = np.arange(rows + 1, dtype=np.int32) * len(text)
    return pa.Array.from_buffers(
        pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(text * rows)]
    )


def _header_start(columns: RecordColumns, row: int) -> int:
    """Position of record ``row``'s header-count varint in ``columns.data``."""
    value_length = int(columns.value_length[row])
    if value_length >= 0:
        return int(columns.value_position[row]) + value_length
    key_length = int(columns.key_length[row])
    if key_length >= 0:
        return int(columns.key_position[row]) + key_length + 1  # the 1-byte varint -1
    # Null key and null value: walk the batch's records from its records section.
    data = memoryview(columns.data)  # type: ignore[arg-type]  # numpy exports the buffer
    batch = int(columns.batch_index[row])
    position = int(columns.batches.records_position[batch])
    for _ in range(row - int(columns.batches.record_start[batch])):
        size, position = decode_varint(data, position, len(data), 5)
        position += size
    _size, position = decode_varint(data, position, len(data), 5)
    position += 1  # attributes
    _, position = decode_varint(data, position, len(data))  # timestamp delta
    _, position = decode_varint(data, position, len(data), 5)  # offset delta
    return position + 2  # key length -1, value length -1


def _headers(columns: RecordColumns, begin: int, stop: int, buffer: pa.Buffer) -> pa.Array:
    """The ``headers`` column of rows ``begin:stop``: null without headers."""
    counts = columns.header_count[begin:stop]
    list_offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=list_offsets[1:])
    total = int(list_offsets[-1])
    key_position = np.empty(total, dtype=np.int64)
    key_length = np.empty(total, dtype=np.int32)
    value_position = np.empty(total, dtype=np.int64)
    value_length = np.empty(total, dtype=np.int32)
    data = memoryview(columns.data)  # type: ignore[arg-type]  # numpy exports the buffer
    size = len(data)
    at = 0
    for row in (np.flatnonzero(counts > 0) + begin).tolist():
        count, position = decode_varint(data, _header_start(columns, row), size, 5)
        for _ in range(count):
            length, position = decode_varint(data, position, size, 5)
            key_position[at], key_length[at] = position, length
            position += length
            length, position = decode_varint(data, position, size, 5)
            value_position[at], value_length[at] = (position, length) if length >= 0 else (-1, -1)
            position += max(length, 0)
            at += 1
    assert at == total
    keys = _spans_to_binary(buffer, key_position, key_length, pa.string())
    values = _spans_to_binary(buffer, value_position, value_length)
    children = pa.StructArray.from_arrays([keys, values], fields=list(_HEADER_STRUCT))
    return pa.ListArray.from_arrays(
        pa.array(list_offsets, type=pa.int32()),
        children,
        type=HEADER_ARROW_TYPE,
        mask=pa.array(counts == 0),
    )
