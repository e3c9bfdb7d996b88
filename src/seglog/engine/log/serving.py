"""What a Kafka server needs of a partition log: Fetch as file ranges, append notification,
ListOffsets with an isolation level (:class:`LogServing`, a part of
:class:`~seglog.engine.log.Log`).

* :meth:`LogServing.fetch_file_ranges`: a Fetch answer as open file ranges of whole batches
  (:mod:`seglog.engine.log.fetch_ranges` documents the rules), so a server sends segment
  bytes with ``sendfile`` and never decodes a batch on the fetch path;
* **append listeners** (:meth:`LogServing.add_append_listener`): a long-polling Fetch learns
  that the partition grew. Each listener is called with the :class:`LogAppendInfo` after every
  append that wrote something (data batches and transaction markers; a duplicate retry
  writes nothing and calls nobody), from the appending thread, after the log's lock was
  released and after ``log_end_offset`` moved, so a listener that fetches sees the new
  batches. A listener must be quick and must not raise (an exception is logged and
  swallowed: the append already succeeded); a server hands the wake-up to its event loop
  (``loop.call_soon_threadsafe``). :attr:`LogServing.append_generation` counts those appends
  (it only grows; a waiter compares it before and after). With no listener an append pays
  one attribute test.
* :meth:`LogServing.list_offsets`: ListOffsets with Kafka's isolation rule: ``latest`` is the
  high watermark (``read_uncommitted``) or the last stable offset (``read_committed``), and a
  max-timestamp or by-timestamp answer at or above that offset is no answer (``None``), as in
  Kafka's ``Partition.fetchOffsetForTimestamp``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from seglog.core.isolation import IsolationLevel
from seglog.engine.log import reads
from seglog.engine.log.append_info import LogAppendInfo
from seglog.engine.log.fetch_ranges import FetchRanges, SegmentView, plan_fetch
from seglog.engine.log.reads import DEFAULT_FETCH_MAX_BYTES, OffsetAndTimestamp
from seglog.engine.log.transactions import LogTransactions

LOG = logging.getLogger("seglog.log")

AppendListener = Callable[[LogAppendInfo], None]


class LogServing(LogTransactions):
    """Fetch ranges, append listeners and ListOffsets of a partition log."""

    _append_listeners: tuple[AppendListener, ...] = ()  # replaced whole: iteration needs no lock
    append_generation: int = 0  # appends that wrote something since the log was opened

    # --- Fetch ---------------------------------------------------------------------------------
    def fetch_file_ranges(
        self,
        fetch_offset: int,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        *,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        min_one_batch: bool = True,
    ) -> FetchRanges:
        """A Fetch of this partition from ``fetch_offset`` as file ranges of whole batches,
        at most ``max_bytes`` after a first batch that comes whole (KIP-74; with
        ``min_one_batch`` false a first batch above ``max_bytes`` gives an empty answer),
        never at or above the high watermark (``read_committed``: the last stable offset,
        with the aborted transactions of the range). ``fetch_offset`` equal to the high
        watermark gives an empty answer; below the log start or above the high watermark
        raises ``OffsetOutOfRangeError``. The caller closes the result (``with``)."""
        committed = isolation_level is IsolationLevel.READ_COMMITTED

        def snapshot() -> tuple[SegmentView, int, int, int]:
            view = self._list.view
            start, high_watermark = self.log_start_offset, self.log_end_offset
            return view, start, high_watermark, self.last_stable_offset

        return plan_fetch(
            snapshot,
            self.topic_partition,
            fetch_offset,
            max_bytes,
            read_committed=committed,
            min_one_batch=min_one_batch,
            aborted=self.aborted_transactions,
        )

    # --- append listeners ----------------------------------------------------------------------
    def add_append_listener(self, listener: AppendListener) -> None:
        """Call ``listener(info)`` after each append that wrote something (module docstring)."""
        with self._lock:
            self._append_listeners = (*self._append_listeners, listener)

    def remove_append_listener(self, listener: AppendListener) -> None:
        """Stop calling ``listener`` (one registration of it; absent: nothing happens)."""
        with self._lock:
            listeners = list(self._append_listeners)
            if listener in listeners:
                listeners.remove(listener)
            self._append_listeners = tuple(listeners)

    def _appended(self, info: LogAppendInfo) -> LogAppendInfo:
        """Count an append and tell the listeners (called without the lock); returns ``info``."""
        if info.duplicate:
            return info
        with self._lock:  # appends return in any order: count under the lock
            self.append_generation += 1
        for listener in self._append_listeners:
            try:
                listener(info)
            except Exception:
                LOG.exception("append listener of %s failed", self.topic_partition)
        return info

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
    ) -> LogAppendInfo:
        """:meth:`LogTransactions.append_marker`, then the append listeners are called."""
        return self._appended(
            super().append_marker(
                producer_id, producer_epoch, commit=commit, coordinator_epoch=coordinator_epoch
            )
        )

    # --- ListOffsets ---------------------------------------------------------------------------
    def list_offsets(
        self,
        timestamp: int,
        *,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> OffsetAndTimestamp | None:
        """Kafka's ListOffsets for one partition: ``-1`` latest (the high watermark, or the
        last stable offset for ``read_committed``; timestamp -1), ``-2`` earliest and ``-4``
        earliest local (the log start offset; timestamp -1), ``-3`` the offset and timestamp
        of the first record with the largest timestamp (KIP-734), or the first offset whose
        record timestamp is ``>= timestamp`` (through the time index). None when nothing
        answers below the latest offset (Kafka then answers offset -1, timestamp -1)."""
        segments, start = self._list.segments, self.log_start_offset
        high_watermark = self.log_end_offset
        latest = (
            self.last_stable_offset
            if isolation_level is IsolationLevel.READ_COMMITTED
            else high_watermark
        )
        latest = min(latest, high_watermark)
        if timestamp == reads.LATEST_TIMESTAMP:
            return OffsetAndTimestamp(latest, -1)
        found = reads.fetch_offset_by_timestamp(segments, start, high_watermark, timestamp)
        if found is None or timestamp in (reads.EARLIEST_TIMESTAMP, reads.EARLIEST_LOCAL_TIMESTAMP):
            return found
        return found if found.offset < latest else None
