"""Open one partition's log read-only, without opening (or locking) its whole data directory.

What a Spark executor needs to read one topic-partition: :func:`open_partition_log` finds
``<topic>-<partition>`` in the roots of ``log.dirs`` and opens it exactly as a read-only
:class:`~seglog.engine.log_manager.LogManager` would, from the same facts:

* the topic's config: its overrides in the newest ``seglog-topics.json`` over all roots (a
  broker-written directory has none: the broker defaults of ``BrokerConfig.log_defaults``);
* the log start offset and recovery point: that root's ``log-start-offset-checkpoint`` and
  ``recovery-point-offset-checkpoint`` (missing or unreadable -> 0, as Kafka does);
* ``had_clean_shutdown``: the root holds ``.kafka_cleanshutdown``.

Invariants: nothing is written, renamed or deleted and no lock is taken (the log is opened
with ``writable=False``); the caller closes the returned log. A topic marked ``deleting``
in the metadata, or a partition no root holds, raises
:class:`~seglog.errors.UnknownTopicError`.
"""

from __future__ import annotations

from pathlib import Path

from seglog.clock import Clock, SystemClock
from seglog.config import BrokerConfig, LogConfig
from seglog.engine.compaction.compactor import copy_store, open_published
from seglog.engine.log import Log
from seglog.errors import CorruptCheckpointError, UnknownTopicError
from seglog.format.topic_names import TopicPartition, partition_dir_name
from seglog.storage.compacted_copy import CompactedCopyStore
from seglog.storage.log_dir import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogDirectory,
    TopicsFile,
)
from seglog.storage.segment import LogSegment


def _newest_topics(roots: list[LogDirectory]) -> TopicsFile:
    """The newest readable topic metadata over all roots (empty when none)."""
    newest: TopicsFile | None = None
    damaged: CorruptCheckpointError | None = None
    for root in roots:
        try:
            topics = root.read_topics()
        except CorruptCheckpointError as exc:
            damaged = damaged or exc
            continue
        if topics is not None and (newest is None or topics.generation > newest.generation):
            newest = topics
    if newest is None and damaged is not None:
        raise damaged  # broker defaults could misread a compacted topic: refuse, as LogManager
    return newest or TopicsFile()


def open_partition_log(
    broker: BrokerConfig, topic: str, partition: int, *, clock: Clock | None = None
) -> Log:
    """The log of ``topic``-``partition``, opened read-only (see the module docstring)."""
    tp = TopicPartition(topic, partition)
    roots = [LogDirectory(Path(d), writable=False) for d in broker.log_dirs]
    name = partition_dir_name(tp)
    holder = next((root for root in roots if (root.path / name).is_dir()), None)
    topics = _newest_topics(roots)
    meta = topics.topics.get(topic)
    if holder is None or (meta is not None and meta.deleting):
        raise UnknownTopicError(
            f"topic-partition {tp} is not in the log directories {', '.join(broker.log_dirs)}"
        )
    config = LogConfig.from_overrides(meta.configs if meta else {}, broker.log_defaults)
    return Log.open(
        holder.path / name,
        tp,
        config,
        clock=clock or SystemClock(),
        recovery_point=holder.read_offsets(RECOVERY_POINT_CHECKPOINT).get(tp, 0),
        log_start_offset=holder.read_offsets(LOG_START_OFFSET_CHECKPOINT).get(tp, 0),
        had_clean_shutdown=(holder.path / CLEAN_SHUTDOWN_FILE).exists(),
        writable=False,
    )


class PartitionView:
    """Raw batch bytes of one open partition, plainly or as a read-compacted reader sees it.

    ``horizon`` is the compaction horizon of the published compacted copy (-1 when
    ``read_compacted`` is false or nothing is published): offsets ``<= horizon`` are read
    from the copy (:meth:`read_copy`), the others from the log (:meth:`read_log`), as
    :func:`seglog.engine.compaction.compactor.iter_compacted_records` does. The copy's segments stay
    open (readable even if a newer copy replaces it meanwhile) until :meth:`close`.
    """

    def __init__(
        self, log: Log, *, read_compacted: bool, store: CompactedCopyStore | None = None
    ) -> None:
        self.log = log
        self.horizon = -1
        self._copy: list[LogSegment] = []
        if read_compacted:
            opened = open_published(copy_store(log) if store is None else store, log)
            if opened is not None:
                publication, self._copy = opened
                self.horizon = publication.horizon

    @property
    def first_offset(self) -> int:
        """The first offset this view can return: the copy's first segment base, or the
        log start offset (whichever is lower)."""
        start = self.log.log_start_offset
        return min(start, self._copy[0].base_offset) if self._copy else start

    def read_copy(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the copy from the one holding ``offset`` (b"" past its end)."""
        for segment in self._copy:
            fetched = segment.read(offset, max_bytes, min_one_message=True)
            if fetched is not None and fetched.data:
                return fetched.data
        return b""

    def read_log(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches (maybe a partial last one) of the log from the batch holding
        ``offset``; ``OffsetOutOfRangeError`` below the log start offset."""
        return self.log.read(offset, max_bytes).data

    def close(self) -> None:
        """Close the copy's segments (the log is the caller's)."""
        for segment in self._copy:
            segment.close()
        self._copy = []
