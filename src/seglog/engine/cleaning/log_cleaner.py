"""The log cleaner: threads that clean the filthiest compacted logs.

``log.cleaner.threads`` threads (``kafka-log-cleaner-thread-<i>``), each with its own
:class:`~seglog.engine.cleaning.cleaner.Cleaner` and offset map of
``log.cleaner.dedupe.buffer.size / threads`` bytes (at most 2 GiB - 1), loop: choose the
filthiest log (the cleaner manager marks
it in progress), clean it, write its checkpoint; then run retention on every compacted log
nobody holds (``compact,delete`` logs get their time/size rules there, *after* cleaning, seed
001 step 5; compact-only logs lose segments below the log start offset, KAFKA-7400); sleep
``log.cleaner.backoff.ms`` when there was nothing to clean. One shared :class:`Throttler`
holds every thread's reads and writes to ``log.cleaner.io.max.bytes.per.second``.

Errors: an exception while cleaning a partition marks it uncleanable (KIP-346) and the thread
goes on: until restart for an error of the data, for ``log.cleaner.backoff.ms`` for an I/O
failure (a full disk: cleaning resumes by itself once space returns; see
:mod:`seglog.engine.cleaning.cleaner_manager`); an abort (pause, deletion) just ends the round;
anything escaping the loop kills the thread, counted by ``DeadThreadCount``.

:meth:`LogCleaner.clean_once` runs one synchronous pass (``seglog clean --once``) and
:meth:`LogCleaner.plan` says what would be cleaned without changing anything
(``seglog clean --dry-run``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seglog.clock import Clock
from seglog.config import BrokerConfig
from seglog.core.cleaning import group_segments_by_size
from seglog.core.offset_map import OffsetMap
from seglog.core.retention import RetentionPlan
from seglog.engine.cleaning.cleaner import Cleaner, CleanerStats, CleaningAbortedError, Throttler
from seglog.engine.cleaning.cleaner_manager import CleanerManager, CleaningCandidate
from seglog.engine.log import Log
from seglog.engine.progress import ProgressCallback
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition

LOG = logging.getLogger("seglog.cleaner")
PER_THREAD_MAP_BYTES_MAX = (1 << 31) - 1
BYTES_PER_KEY = 24


@dataclass(frozen=True, slots=True)
class CleanResult:
    """One partition's outcome in a pass."""

    topic_partition: TopicPartition
    stats: CleanerStats | None  # None when the round did not finish
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "topic": self.topic_partition.topic,
            "partition": self.topic_partition.partition,
            "stats": self.stats.to_json() if self.stats else None,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """What a round would do on one partition (``seglog clean --dry-run``)."""

    candidate: CleaningCandidate
    groups: list[list[int]]  # base offsets of each group
    estimated_keys: int  # upper bound: records in the dirty range
    map_capacity_keys: int

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        c = self.candidate
        t = c.to_clean
        return {
            "topic": c.topic_partition.topic,
            "partition": c.topic_partition.partition,
            "cleanable": c.is_cleanable,
            "dirty_ratio": round(t.cleanable_ratio, 6),
            "min_cleanable_dirty_ratio": t.min_cleanable_dirty_ratio,
            "first_dirty_offset": t.first_dirty_offset,
            "first_uncleanable_offset": t.first_uncleanable_offset,
            "clean_bytes": t.clean_bytes,
            "dirty_bytes": t.cleanable_bytes,
            "max_compaction_delay_ms": t.max_compaction_delay_ms,
            "groups": self.groups,
            "estimated_keys_max": self.estimated_keys,
            "map_capacity_keys": self.map_capacity_keys,
            "estimated_map_use": round(
                min(self.estimated_keys / max(self.map_capacity_keys, 1), 1.0), 6
            ),
        }


def per_thread_map_bytes(broker: BrokerConfig) -> int:
    """Each thread's share of ``log.cleaner.dedupe.buffer.size`` (capped at 2 GiB - 1)."""
    threads = max(broker.log_cleaner_threads, 1)
    return min(broker.log_cleaner_dedupe_buffer_size // threads, PER_THREAD_MAP_BYTES_MAX)


class LogCleaner:
    """Cleaner threads plus the synchronous pass and plan (module docstring)."""

    def __init__(
        self,
        broker: BrokerConfig,
        manager: CleanerManager,
        *,
        clock: Clock,
        run_retention: Callable[[TopicPartition, Log], RetentionPlan | None] | None = None,
    ) -> None:
        self.broker = broker
        self.manager = manager
        self.clock = clock
        self._run_retention = run_retention
        self.throttler = Throttler(broker.log_cleaner_io_max_bytes_per_second)
        self._map_bytes = per_thread_map_bytes(broker)
        self._cleaners: list[Cleaner] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.dead_thread_count = 0
        self.last_stats: dict[int, CleanerStats] = {}  # per thread, its last round
        self.history: list[tuple[TopicPartition, CleanerStats]] = []
        self._history_max = 1000
        self._lock = threading.Lock()

    # --- cleaners ---------------------------------------------------------------------------
    def _cleaner(self, index: int) -> Cleaner:
        with self._lock:
            while len(self._cleaners) <= index:
                offset_map = OffsetMap(
                    self._map_bytes, self.broker.log_cleaner_io_buffer_load_factor
                )
                self._cleaners.append(
                    Cleaner(
                        offset_map,
                        clock=self.clock,
                        throttler=self.throttler,
                        producer_id_expiration_ms=self.broker.producer_id_expiration_ms,
                    )
                )
            return self._cleaners[index]

    @property
    def map_capacity_keys(self) -> int:
        """Distinct keys one round can hold: slots x load factor."""
        slots = self._map_bytes // BYTES_PER_KEY
        return int(slots * self.broker.log_cleaner_io_buffer_load_factor)

    # --- one round ----------------------------------------------------------------------------
    def _clean(self, index: int, candidate: CleaningCandidate, now_ms: int) -> CleanResult:
        tp, log = candidate.topic_partition, candidate.log
        manager = self.manager
        stop = self._stop

        def check_done() -> None:
            if stop.is_set():
                raise CleaningAbortedError(f"cleaning {tp} stopped: the cleaner is shutting down")
            if manager.is_aborted(tp):
                raise CleaningAbortedError(f"cleaning {tp} aborted")

        end_offset: int | None = None
        try:
            log.finish_pending_swap()  # a swap an earlier round left half-done (a full disk)
            end_offset, stats = self._cleaner(index).clean(
                log, candidate.to_clean, now_ms=now_ms, check_done=check_done
            )
        except CleaningAbortedError as exc:
            return CleanResult(tp, None, str(exc))
        except Exception as exc:  # KIP-346: one bad partition must not stop the cleaner
            reason = f"{type(exc).__name__}: {exc}"
            manager.mark_failed(tp, reason, candidate.to_clean.cleanable_bytes, exc)
            LOG.error("cleaning %s failed; it is marked uncleanable: %s", tp, reason)
            return CleanResult(tp, None, reason)
        finally:
            manager.done_cleaning(tp, log, end_offset)
        LOG.info("%s", stats.summary(str(tp), thread=index))
        try:
            manager.record_round(
                tp, log, {"round_ms": now_ms, "end_offset": stats.end_offset, **stats.to_json()}
            )
        except (SeglogError, OSError) as exc:  # figures only: never fail a finished round
            LOG.warning("could not record the cleaning round of %s: %s", tp, exc)
        with self._lock:
            self.last_stats[index] = stats
            self.history.append((tp, stats))
            del self.history[: -self._history_max]
        return CleanResult(tp, stats)

    def retention_pass(self) -> None:
        """Retention on compacted logs nobody holds (the cleaner's ``deletableLogs``)."""
        if self._run_retention is None:
            return
        for tp, log in sorted(self.manager.live_logs().items()):
            if not log.config.is_compacted:
                continue
            with self.manager.deleting(tp) as claimed:
                if not claimed:
                    continue
                try:
                    self._run_retention(tp, log)
                except Exception as exc:
                    self.manager.mark_failed(tp, f"retention failed: {exc}", 0, exc)

    def clean_once(
        self, *, topic: str | None = None, progress: ProgressCallback | None = None
    ) -> list[CleanResult]:
        """One pass: clean every cleanable log once (filthiest first), then retention.

        Partitions marked uncleanable after an I/O failure are retried first (the pass was
        asked for: e.g. after space returned); those marked for an error of their data stay
        skipped. ``progress`` is called after each partition's round with (partitions done,
        partitions cleanable at the start of the pass, or more if others became cleanable
        meanwhile).
        """
        self.manager.maintain_uncleanable(retry_io_failures=True)
        results: list[CleanResult] = []
        done: set[TopicPartition] = set()
        total = 0
        if progress is not None:
            now = self.clock.now_ms()
            total = sum(1 for c in self.manager.candidates(now, topic=topic) if c.is_cleanable)
            progress(0, total)
        while not self._stop.is_set():
            now = self.clock.now_ms()
            candidate = self.manager.grab_filthiest(now, topic=topic, skip=frozenset(done))
            if candidate is None:
                break
            done.add(candidate.topic_partition)
            results.append(self._clean(0, candidate, now))
            if progress is not None:
                total = max(total, len(results))
                progress(len(results), total)
        if self._stop.is_set():
            return results
        self.retention_pass()
        self.manager.maintain_uncleanable()
        return results

    def plan(self, *, topic: str | None = None) -> list[CleanPlan]:
        """What a pass would clean, per compacted partition; nothing is changed."""
        now = self.clock.now_ms()
        plans = []
        for candidate in self.manager.candidates(now, topic=topic):
            log, t = candidate.log, candidate.to_clean
            facts = [
                f for f in log.cleaner_segment_facts() if f.base_offset < t.first_uncleanable_offset
            ]
            groups = group_segments_by_size(
                facts,
                max_size_bytes=log.config.segment_bytes,
                max_index_bytes=log.config.segment_index_bytes,
                first_uncleanable_offset=t.first_uncleanable_offset,
            )
            plans.append(
                CleanPlan(
                    candidate,
                    [[f.base_offset for f in g] for g in groups] if candidate.is_cleanable else [],
                    max(t.first_uncleanable_offset - t.first_dirty_offset, 0),
                    self.map_capacity_keys,
                )
            )
        return plans

    # --- threads ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the cleaner threads (none when ``log.cleaner.enable`` is false)."""
        if not self.broker.log_cleaner_enable or self._threads:
            return
        self._stop.clear()
        for i in range(self.broker.log_cleaner_threads):
            thread = threading.Thread(
                target=self._run, args=(i,), name=f"kafka-log-cleaner-thread-{i}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _run(self, index: int) -> None:
        backoff_s = self.broker.log_cleaner_backoff_ms / 1000.0
        try:
            while not self._stop.is_set():
                now = self.clock.now_ms()
                candidate = self.manager.grab_filthiest(now)
                if candidate is not None:
                    self._clean(index, candidate, now)
                self.retention_pass()
                self.manager.maintain_uncleanable()
                if candidate is None:
                    self._stop.wait(backoff_s)
        except BaseException:
            LOG.exception("log cleaner thread %d died", index)
            with self._lock:
                self.dead_thread_count += 1

    def stop(self) -> None:
        """Stop the threads (a running round stops at its next check) and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    @property
    def is_running(self) -> bool:
        """True while cleaner threads run."""
        return bool(self._threads)

    # --- metrics (Kafka's names) ---------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """The cleaner's gauges with Kafka's names."""
        with self._lock:
            stats = list(self.last_stats.values())
        read = sum(s.bytes_read for s in stats)
        written = sum(s.bytes_written for s in stats)
        manager = self.manager
        uncleanable = manager.uncleanable_bytes_by_dir()
        return {
            "max-buffer-utilization-percent": float(
                int(100 * max((s.buffer_utilization for s in stats), default=0.0))
            ),
            "cleaner-recopy-percent": float(int(100 * written / max(read, 1))),
            "max-clean-time-secs": float(int(max((s.elapsed_secs for s in stats), default=0.0))),
            "max-compaction-delay-secs": float(
                int(manager.pre_clean_stats.max_compaction_delay_ms / 1000)
            ),
            "DeadThreadCount": float(self.dead_thread_count),
            "max-dirty-percent": float(manager.max_dirty_percent),
            "time-since-last-run-ms": float(self.clock.now_ms() - manager.time_of_last_run_ms),
            "uncleanable-partitions-count": float(sum(c for c, _ in uncleanable.values())),
            "uncleanable-bytes": float(sum(b for _, b in uncleanable.values())),
        }
