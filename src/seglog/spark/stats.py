"""Per-partition statistics of a data directory, computed by Spark tasks.

``partition_stats(spark, log_dirs, topic=None)`` returns a DataFrame with one row per
partition (columns in :data:`STATS_SCHEMA`, in this order):

* ``topic``, ``partition``;
* ``records``: data records in ``[log_start_offset, log_end_offset)`` (control batches are
  not records);
* ``keyed_records``: those with a non-null key;
* ``distinct_keys``: distinct keys among them;
* ``duplicates``: ``keyed_records - distinct_keys`` (what a full compaction would remove,
  tombstones aside);
* ``tombstones``: keyed records with a null value (Kafka's meaning: a keyless null value
  deletes nothing and is not counted);
* ``dirty_ratio`` and ``first_dirty_offset``: exactly what the log cleaner computes from the
  ``cleaner-offset-checkpoint`` now (:func:`seglog.core.cleaning.cleanable_offsets` and
  :func:`~seglog.core.cleaning.log_to_clean`: cleanable bytes / (clean + cleanable bytes));
  null for a topic without ``cleanup.policy=compact`` (the cleaner never looks at it);
* ``size_bytes`` (``.log`` bytes of every segment), ``segments``, ``log_start_offset``,
  ``log_end_offset``.

How: the driver lists partitions without opening any log (:mod:`seglog.spark.logdirs`);
``sc.parallelize(items, len(items)).map(...)`` runs one task per partition, which opens only
that partition, read-only (no lock, nothing written, so it is safe beside a running writer or
broker: it sees the log as of its open), reads each segment in windows of
:data:`READ_WINDOW_BYTES`, decodes them with :func:`~seglog.format.columnar.scan_columns`
(CRCs checked; no Python object per record) and hashes keys with the cleaner's SipHash-2-4-128
kernel (:meth:`seglog.core.offset_map.OffsetMap.hash_columns`). Distinct keys are counted on
the 128-bit hashes (a collision among ``n`` keys has probability about ``n**2 / 2**129``).
Memory per task: one window plus 16 bytes per distinct key.

The rows are collected once and turned into a DataFrame, so the figures are one snapshot
(re-running actions on the DataFrame does not re-read the logs).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from seglog.config import LogConfig
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner_manager import cleaning_candidate
from seglog.engine.log import Log
from seglog.format.columnar import scan_columns
from seglog.format.reader import EndKind
from seglog.spark.failures import unwrapping_seglog_errors
from seglog.spark.logdirs import PartitionLocation, discover, open_partition_read_only
from seglog.spark.options import local_log_dirs
from seglog.storage.object_store import is_remote
from seglog.storage.remote_copy_store import S3Settings
from seglog.storage.segment import LogSegment

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

READ_WINDOW_BYTES = 16 * 1024 * 1024
HASH_PAIR = np.dtype([("h0", "<u8"), ("h1", "<u8")])

STATS_SCHEMA = (
    "topic string, partition int, records bigint, keyed_records bigint, "
    "distinct_keys bigint, duplicates bigint, tombstones bigint, dirty_ratio double, "
    "first_dirty_offset bigint, size_bytes bigint, segments int, log_start_offset bigint, "
    "log_end_offset bigint"
)


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """One row of :func:`partition_stats` (fields in :data:`STATS_SCHEMA` order)."""

    topic: str
    partition: int
    records: int
    keyed_records: int
    distinct_keys: int
    duplicates: int
    tombstones: int
    dirty_ratio: float | None
    first_dirty_offset: int | None
    size_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int


class _DistinctHashes:
    """A growing set of 128-bit hashes as one sorted structured array (amortized merges)."""

    def __init__(self) -> None:
        self.merged = np.zeros(0, dtype=HASH_PAIR)
        self.pending: list[npt.NDArray[Any]] = []
        self.pending_rows = 0

    def add(self, h0: npt.NDArray[np.uint64], h1: npt.NDArray[np.uint64]) -> None:
        pairs = np.empty(len(h0), dtype=HASH_PAIR)
        pairs["h0"], pairs["h1"] = h0, h1
        unique = np.unique(pairs)
        self.pending.append(unique)
        self.pending_rows += len(unique)
        if self.pending_rows > max(len(self.merged), 1 << 16):
            self._merge()

    def _merge(self) -> None:
        if self.pending:
            self.merged = np.unique(np.concatenate([self.merged, *self.pending]))
            self.pending.clear()
            self.pending_rows = 0

    def __len__(self) -> int:
        self._merge()
        return len(self.merged)


def _scan_segment(
    segment: LogSegment,
    start: int,
    end: int,
    hasher: OffsetMap,
    keys: _DistinctHashes,
    counts: dict[str, int],
) -> None:
    """Count the records of one segment with offsets in ``[start, end)``."""
    position, size = 0, segment.size
    window = READ_WINDOW_BYTES
    while position < size:
        buf = segment.read_at(position, min(window, size - position))
        columns = scan_columns(buf, verify_crc=True)
        ending = columns.end
        if ending.kind is EndKind.CORRUPT:
            raise ending.to_error(str(segment.log_path)).at(base_position=position)
        if ending.kind is EndKind.TORN_TAIL:
            if position + len(buf) >= size:
                raise ending.to_error(str(segment.log_path)).at(base_position=position)
            if ending.position == 0:  # one batch larger than the window: widen it
                window = len(buf) + (ending.bytes_needed or READ_WINDOW_BYTES)
                continue
        offsets = columns.offset
        data_rows = ~columns.batches.is_control[columns.batch_index]
        rows = np.flatnonzero(data_rows & (offsets >= start) & (offsets < end))
        if len(rows):
            key_length = columns.key_length[rows]
            keyed = rows[key_length >= 0]
            counts["records"] += len(rows)
            counts["keyed"] += len(keyed)
            counts["tombstones"] += int(np.count_nonzero(columns.value_length[keyed] < 0))
            if len(keyed):
                h0, h1 = hasher.hash_columns(
                    columns.data, columns.key_position[keyed], columns.key_length[keyed]
                )
                keys.add(h0, h1)
        position += ending.position
        window = READ_WINDOW_BYTES


def _dirty(log: Log, checkpoint: int | None, now_ms: int) -> tuple[float | None, int | None]:
    """The cleaner's dirty ratio and first dirty offset (None for a non-compacted log)."""
    config = log.config
    if not config.is_compacted:
        return None, None
    to_clean = cleaning_candidate(log.topic_partition, log, checkpoint, now_ms).to_clean
    return to_clean.cleanable_ratio, to_clean.first_dirty_offset


def compute_partition_stats(
    location: PartitionLocation, config: LogConfig, now_ms: int | None = None
) -> PartitionStats:
    """One partition's row (what each Spark task runs; plain Python, callable directly)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    log = open_partition_read_only(location, config)
    try:
        start, end = log.log_start_offset, log.log_end_offset
        hasher = OffsetMap(2 * 24, 1.0)  # only its hash kernel is used
        keys = _DistinctHashes()
        counts = {"records": 0, "keyed": 0, "tombstones": 0}
        for segment in log.segments:
            _scan_segment(segment, start, end, hasher, keys, counts)
        distinct = len(keys)
        ratio, first_dirty = _dirty(log, location.cleaner_checkpoint, now)
        return PartitionStats(
            topic=location.topic,
            partition=location.partition,
            records=counts["records"],
            keyed_records=counts["keyed"],
            distinct_keys=distinct,
            duplicates=counts["keyed"] - distinct,
            tombstones=counts["tombstones"],
            dirty_ratio=ratio,
            first_dirty_offset=first_dirty,
            size_bytes=log.size_bytes(),
            segments=len(log.segments),
            log_start_offset=start,
            log_end_offset=end,
        )
    finally:
        log.close()


def _stats_task(
    item: tuple[PartitionLocation, LogConfig, tuple[str, S3Settings] | None],
) -> PartitionStats:
    location, config, remote = item
    if remote is not None:  # this executor's own mirror of the partition
        uri, s3 = remote
        name = Path(location.directory).name
        (root,) = local_log_dirs(
            (uri,), s3, lambda t, p: (t, p) == (location.topic, location.partition)
        )
        location = replace(location, directory=str(Path(root) / name), root=root)
    return compute_partition_stats(location, config)


@unwrapping_seglog_errors
def partition_stats(
    spark: SparkSession,
    log_dirs: Sequence[str | Path],
    topic: str | None = None,
    *,
    s3: S3Settings | None = None,
) -> DataFrame:
    """Per-partition statistics of ``log_dirs`` (every topic, or one), one Spark task per
    partition; see the module docstring for the columns. An unknown ``topic`` raises
    ``UnknownTopicError`` naming it."""
    given = [str(d) if is_remote(str(d)) else str(Path(d).absolute()) for d in log_dirs]
    settings = (s3 or S3Settings()).resolved() if any(is_remote(d) for d in given) else None
    wanted = None if topic is None else (lambda t, _p: t == topic)
    local = local_log_dirs(given, settings, wanted)
    remote_of: dict[str, tuple[str, S3Settings]] = {
        str(Path(root)): (uri, settings)
        for root, uri in zip(local, given, strict=True)
        if settings is not None and is_remote(uri)
    }
    layout = discover(list(local))
    topics = [topic] if topic is not None else layout.topic_names()
    items = [
        (loc, layout.config(name), remote_of.get(str(Path(loc.root))))
        for name in topics
        for loc in layout.partitions_of(name)
    ]
    if not items:
        return spark.createDataFrame([], STATS_SCHEMA)
    rows = spark.sparkContext.parallelize(items, len(items)).map(_stats_task).collect()
    rows.sort(key=lambda r: (r.topic, r.partition))
    return spark.createDataFrame([astuple(r) for r in rows], STATS_SCHEMA)


_COLUMNS = [f.name for f in fields(PartitionStats)]


def _as_dict(row: Any) -> Mapping[str, Any]:
    if isinstance(row, Mapping):
        return row
    if isinstance(row, PartitionStats):
        return {name: getattr(row, name) for name in _COLUMNS}
    as_dict = getattr(row, "asDict", None)
    if as_dict is not None:
        result: Mapping[str, Any] = as_dict()
        return result
    raise TypeError(f"cannot format {type(row).__name__} as a stats row")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_stats(rows: Iterable[Any]) -> str:
    """A fixed-width text table of stats rows (``Row``s, dicts or :class:`PartitionStats`);
    numbers right-aligned, ``-`` for null, the dirty ratio with 4 decimals."""
    table = [[_cell(_as_dict(r).get(name)) for name in _COLUMNS] for r in rows]
    header = [name.upper() for name in _COLUMNS]
    widths = [max([len(h), *(len(line[i]) for line in table)]) for i, h in enumerate(header)]
    text_columns = {0}  # topic: left-aligned

    def render(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in text_columns else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([render(header), *(render(line) for line in table)]) + "\n"
