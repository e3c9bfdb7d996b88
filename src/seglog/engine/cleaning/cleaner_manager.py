"""Which partition the log cleaner works on, and who else may touch it: Kafka's
``LogCleanerManager``.

Per partition a **cleaning state**, changed only under one lock (a condition variable):

=============  ==============================  ==========  =====================================
from           event                           to          side effect
=============  ==============================  ==========  =====================================
none           chosen to clean / to delete     in progress
none           abort_and_pause                 paused(1)   returns at once
in progress    abort_and_pause                 aborted     the caller waits until paused(1)
in progress    done_cleaning(end offset)       none        ``cleaner-offset-checkpoint`` := end
in progress    done_deleting                   none
aborted        done_cleaning / done_deleting   paused(1)   no checkpoint; waiters wake up
paused(n)      abort_and_pause                 paused(n+1)
paused(1)      resume                          none
paused(n>1)    resume                          paused(n-1)
=============  ==============================  ==========  =====================================

Any other transition is a bug and raises :class:`IllegalCleaningStateError`.
``abort_cleaning`` = abort_and_pause then resume: it waits for a running round to stop and
leaves the state as it was. A round notices an abort at its ``check_done`` points.

Who pauses: topic deletion (abort_cleaning, then the checkpoint entry is removed), a config
change from ``compact`` to no compaction (abort_cleaning), retention (it claims each log
while deleting, so the cleaner and retention never work on one log at once, KAFKA-7322).

**Uncleanable partitions** (KIP-346): an error while choosing or cleaning a partition marks
it uncleanable with the reason and its dirty bytes; the cleaner skips it and goes on with the
others. How long depends on the error:

* an error of the data or of our code (a corrupt batch, a broken invariant): until the
  partition disappears or the process restarts, as in Kafka (retrying would fail the same
  way, and each try would rewrite ``.cleaned`` files for nothing);
* an I/O failure (an ``OSError`` in the error or its causes: ENOSPC, EIO, a failed rename;
  ``StorageWriteError`` is one): the mark carries a retry time, ``log.cleaner.backoff.ms``
  after the failure. :meth:`CleanerManager.maintain_uncleanable` (each cleaner loop, each
  pass) lifts marks whose retry time has come, so cleaning resumes by itself once space
  returns, at most one failed try per backoff; a pass asked for explicitly
  (:meth:`~seglog.engine.cleaning.log_cleaner.LogCleaner.clean_once`) retries them at once. A failed
  round leaves the log as it was (the swap protocol and its recovery), so a retry is sound.

Choosing: every compacted log without a state and not uncleanable is a candidate;
an invalid checkpoint is rewritten at once (KAFKA-6266); the eligible log with the highest
dirty ratio is taken (or a must-clean, past ``max.compaction.lag.ms``).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seglog.clock import Clock
from seglog.core.cleaning import (
    CleanableOffsets,
    LogToClean,
    cleanable_offsets,
    is_cleanable,
    log_to_clean,
    max_compaction_delay_ms,
)
from seglog.engine.log import Log
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import CLEANER_OFFSET_CHECKPOINT, LogDirectory

ABORT_POLL_S = 0.1


class IllegalCleaningStateError(SeglogError):
    """A cleaning-state transition that the state machine does not allow (our bug)."""


class CleaningState(enum.Enum):
    """A partition's cleaning state (none is the absence of an entry)."""

    IN_PROGRESS = "in progress"
    ABORTED = "aborted"
    PAUSED = "paused"


@dataclass(frozen=True, slots=True)
class _State:
    kind: CleaningState
    paused: int = 0  # n of paused(n)

    def __str__(self) -> str:
        return f"paused({self.paused})" if self.kind is CleaningState.PAUSED else self.kind.value


@dataclass(frozen=True, slots=True)
class CleaningCandidate:
    """A compacted log with its dirty range (a dry run or status row, or the chosen log)."""

    topic_partition: TopicPartition
    log: Log
    offsets: CleanableOffsets
    to_clean: LogToClean

    @property
    def is_cleanable(self) -> bool:
        """Eligible for a round now."""
        return is_cleanable(self.to_clean)


@dataclass(frozen=True, slots=True)
class Uncleanable:
    """Why a partition is skipped (KIP-346); ``retry_after_ms`` is when an I/O failure's
    mark is lifted (None: until the partition disappears or the process restarts)."""

    reason: str
    uncleanable_bytes: int
    retry_after_ms: int | None = None

    @property
    def is_transient(self) -> bool:
        """True for an I/O failure's mark (retried after a backoff)."""
        return self.retry_after_ms is not None


def is_io_failure(exc: BaseException) -> bool:
    """True when ``exc`` or one of its causes is an ``OSError`` (disk full, I/O error, ...):
    a failure of the environment, not of the data, so worth retrying later."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@dataclass
class PreCleanStats:
    """What the last choice saw: delayed (must-clean) logs and the largest delay (KIP-354)."""

    max_compaction_delay_ms: int = 0
    delayed_partitions: int = 0
    cleanable_partitions: int = 0


class CleanerManager:
    """The state machine and checkpoints above; thread-safe."""

    def __init__(
        self,
        roots: Mapping[Path, LogDirectory],
        logs: Callable[[], Mapping[TopicPartition, Log]],
        *,
        clock: Clock,
        writable: bool = True,
        backoff_ms: int = 15_000,
    ) -> None:
        if backoff_ms < 0:
            raise ValueError(f"backoff_ms must be >= 0, not {backoff_ms}")
        self._roots = dict(roots)
        self._logs = logs
        self.clock = clock
        self.writable = writable
        self.backoff_ms = backoff_ms  # log.cleaner.backoff.ms: I/O failures retried after it
        self._cond = threading.Condition(threading.RLock())
        self._states: dict[TopicPartition, _State] = {}
        self._uncleanable: dict[TopicPartition, Uncleanable] = {}
        self.time_of_last_run_ms = clock.now_ms()
        self.max_dirty_percent = 0
        self.pre_clean_stats = PreCleanStats()

    def live_logs(self) -> Mapping[TopicPartition, Log]:
        """The logs the manager sees now."""
        return self._logs()

    # --- checkpoints ------------------------------------------------------------------------
    def _root_of(self, log: Log) -> LogDirectory:
        return self._roots[log.directory.parent]

    def checkpoints(self) -> dict[TopicPartition, int]:
        """Every root's ``cleaner-offset-checkpoint`` merged."""
        merged: dict[TopicPartition, int] = {}
        for root in self._roots.values():
            merged.update(root.read_offsets(CLEANER_OFFSET_CHECKPOINT))
        return merged

    def update_checkpoint(self, tp: TopicPartition, log: Log | None, offset: int | None) -> None:
        """Upsert (or, with ``offset`` None, remove) ``tp``'s entry; entries of partitions that
        no longer exist are dropped (Kafka's ``updateCheckpoints``)."""
        if not self.writable:
            return
        live = self._logs()
        roots = [self._root_of(log)] if log is not None else list(self._roots.values())
        with self._cond:
            for root in roots:
                current = root.read_offsets(CLEANER_OFFSET_CHECKPOINT)
                kept = {
                    t: o
                    for t, o in current.items()
                    if t in live and live[t].directory.parent == root.path and t != tp
                }
                if offset is not None:
                    kept[tp] = offset
                if kept != current:
                    root.write_offsets(CLEANER_OFFSET_CHECKPOINT, kept)

    # --- states -------------------------------------------------------------------------------
    def state_of(self, tp: TopicPartition) -> str:
        """The state as text: ``none``, ``in progress``, ``aborted``, ``paused(n)``."""
        with self._cond:
            state = self._states.get(tp)
            return "none" if state is None else str(state)

    def uncleanable(self) -> dict[TopicPartition, Uncleanable]:
        """Partitions marked uncleanable, with the reason."""
        with self._cond:
            return dict(self._uncleanable)

    def mark_uncleanable(
        self,
        tp: TopicPartition,
        reason: str,
        uncleanable_bytes: int,
        *,
        retry_after_ms: int | None = None,
    ) -> None:
        """Skip ``tp`` (KIP-346) until restart, or with ``retry_after_ms`` (an I/O failure)
        until then (see the module docstring)."""
        with self._cond:
            self._uncleanable[tp] = Uncleanable(reason, uncleanable_bytes, retry_after_ms)
            mark = {"reason": reason, "uncleanable_bytes": uncleanable_bytes}
            self._record_mark(tp, {**mark, "time_ms": self.clock.now_ms()})

    def _record_mark(self, tp: TopicPartition, mark: dict[str, Any]) -> None:
        """Persist ``tp``'s uncleanable mark in the cleaner history (removed by its next
        round). A failed write is ignored: a figure, and a full disk may be the mark's reason."""
        log = self._logs().get(tp)
        if self.writable and log is not None:
            root = self._root_of(log)
            history = root.read_cleaner_history()
            history.uncleanable[str(tp)] = mark
            with suppress(OSError, SeglogError):
                root.write_cleaner_history(history)

    def uncleanable_status(self) -> dict[TopicPartition, Uncleanable]:
        """This process's marks, and those the last pass of another process recorded (for
        ``cleaner status``; a new pass retries the recorded ones, as a restarted broker)."""
        live = self._logs()
        out: dict[TopicPartition, Uncleanable] = {}
        for root in self._roots.values():
            for name, mark in root.read_cleaner_history().uncleanable.items():
                tp = next((t for t in live if str(t) == name), None)
                if tp is not None:
                    out[tp] = Uncleanable(mark["reason"], mark["uncleanable_bytes"])
        out.update(self.uncleanable())
        return out

    def mark_failed(
        self, tp: TopicPartition, reason: str, uncleanable_bytes: int, exc: BaseException
    ) -> None:
        """Mark ``tp`` uncleanable after ``exc``: retried after ``backoff_ms`` when it is an
        I/O failure (:func:`is_io_failure`), else until restart."""
        retry = self.clock.now_ms() + self.backoff_ms if is_io_failure(exc) else None
        self.mark_uncleanable(tp, reason, uncleanable_bytes, retry_after_ms=retry)

    def maintain_uncleanable(self, *, retry_io_failures: bool = False) -> None:
        """Forget uncleanable marks of partitions that no longer exist, and I/O failures'
        marks whose retry time has come (all of them with ``retry_io_failures``)."""
        live = self._logs()
        now_ms = self.clock.now_ms()
        with self._cond:
            for tp, mark in list(self._uncleanable.items()):
                lifted = mark.retry_after_ms is not None and (
                    retry_io_failures or mark.retry_after_ms <= now_ms
                )
                if tp not in live or lifted:
                    del self._uncleanable[tp]

    def candidates(self, now_ms: int, *, topic: str | None = None) -> list[CleaningCandidate]:
        """Every compacted log with its dirty range (no state changes; for status and dry runs)."""
        checkpoints = self.checkpoints()
        out = []
        for tp, log in sorted(self._logs().items()):
            if not log.config.is_compacted or (topic is not None and tp.topic != topic):
                continue
            out.append(cleaning_candidate(tp, log, checkpoints.get(tp), now_ms))
        return out

    def grab_filthiest(
        self,
        now_ms: int,
        *,
        topic: str | None = None,
        skip: frozenset[TopicPartition] = frozenset(),
    ) -> CleaningCandidate | None:
        """Choose the log to clean and mark it in progress, or None."""
        with self._cond:
            self.time_of_last_run_ms = now_ms
            checkpoints = self.checkpoints()
            candidates: list[CleaningCandidate] = []
            pre = PreCleanStats()
            for tp, log in sorted(self._logs().items()):
                if not log.config.is_compacted or (topic is not None and tp.topic != topic):
                    continue
                if tp in self._states or tp in self._uncleanable or tp in skip:
                    continue
                try:
                    candidate = cleaning_candidate(tp, log, checkpoints.get(tp), now_ms)
                    if candidate.offsets.force_update_checkpoint:
                        self.update_checkpoint(tp, log, candidate.offsets.first_dirty_offset)
                except (SeglogError, OSError) as exc:
                    self.mark_failed(tp, f"choosing it to clean failed: {exc}", 0, exc)
                    continue
                delay = candidate.to_clean.max_compaction_delay_ms
                pre.max_compaction_delay_ms = max(pre.max_compaction_delay_ms, delay)
                if delay > 0:
                    pre.delayed_partitions += 1
                if candidate.to_clean.total_bytes > 0:
                    candidates.append(candidate)
            ratios = [c.to_clean.cleanable_ratio for c in candidates]
            self.max_dirty_percent = int(100 * max(ratios)) if ratios else 0
            eligible = [c for c in candidates if c.is_cleanable]
            pre.cleanable_partitions = len(eligible)
            if not eligible:
                return None
            self.pre_clean_stats = pre  # Kafka keeps the stats of the last choice that cleaned
            best = eligible[0]
            for candidate in eligible[1:]:
                if candidate.to_clean.cleanable_ratio > best.to_clean.cleanable_ratio:
                    best = candidate
            self._states[best.topic_partition] = _State(CleaningState.IN_PROGRESS)
            return best

    def claim_for_deletion(self, tp: TopicPartition) -> bool:
        """Mark ``tp`` in progress for retention when nothing else holds it (Kafka's
        ``deletableLogs``); False when it is being cleaned, paused or uncleanable."""
        with self._cond:
            if tp in self._states or tp in self._uncleanable:
                return False
            self._states[tp] = _State(CleaningState.IN_PROGRESS)
            return True

    @contextmanager
    def deleting(self, tp: TopicPartition) -> Iterator[bool]:
        """``with manager.deleting(tp) as claimed:`` run retention only when ``claimed``."""
        claimed = self.claim_for_deletion(tp)
        try:
            yield claimed
        finally:
            if claimed:
                self.done_deleting(tp)

    def _finish(self, tp: TopicPartition) -> bool:
        """In progress -> none (True), aborted -> paused(1) (False); anything else is a bug."""
        state = self._states.get(tp)
        if state is None or state.kind is CleaningState.PAUSED:
            raise IllegalCleaningStateError(
                f"{tp}: cleaning finished while its state is {state or 'none'}"
            )
        if state.kind is CleaningState.IN_PROGRESS:
            del self._states[tp]
            return True
        self._states[tp] = _State(CleaningState.PAUSED, 1)
        self._cond.notify_all()
        return False

    def done_cleaning(self, tp: TopicPartition, log: Log, end_offset: int | None) -> None:
        """A round ended: write the checkpoint (``end_offset`` None: it failed, no write)."""
        with self._cond:
            finished = self._finish(tp)
            if finished and end_offset is not None:
                self.update_checkpoint(tp, log, end_offset)

    def done_deleting(self, tp: TopicPartition) -> None:
        """Retention on ``tp`` ended."""
        with self._cond:
            self._finish(tp)

    def is_aborted(self, tp: TopicPartition) -> bool:
        """True when the round on ``tp`` was asked to stop."""
        with self._cond:
            state = self._states.get(tp)
            return state is not None and state.kind is CleaningState.ABORTED

    def abort_and_pause(self, tp: TopicPartition) -> None:
        """Stop any round on ``tp`` (waiting for it) and keep the cleaner off it until resumed."""
        with self._cond:
            state = self._states.get(tp)
            if state is None:
                self._states[tp] = _State(CleaningState.PAUSED, 1)
            elif state.kind is CleaningState.IN_PROGRESS:
                self._states[tp] = _State(CleaningState.ABORTED)
            elif state.kind is CleaningState.PAUSED:
                self._states[tp] = _State(CleaningState.PAUSED, state.paused + 1)
            else:
                raise IllegalCleaningStateError(f"{tp}: abort requested while already aborted")
            while self._states[tp].kind is not CleaningState.PAUSED:
                self._cond.wait(ABORT_POLL_S)

    def resume(self, tp: TopicPartition) -> None:
        """Undo one :meth:`abort_and_pause`."""
        with self._cond:
            state = self._states.get(tp)
            if state is None or state.kind is not CleaningState.PAUSED:
                raise IllegalCleaningStateError(
                    f"{tp}: resume while its state is {state or 'none'}"
                )
            if state.paused == 1:
                del self._states[tp]
            else:
                self._states[tp] = _State(CleaningState.PAUSED, state.paused - 1)

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """Wait for any round on ``tp`` to stop; leave the state as it was."""
        with self._cond:
            self.abort_and_pause(tp)
            self.resume(tp)

    @contextmanager
    def paused(self, tp: TopicPartition) -> Iterator[None]:
        """``with manager.paused(tp):`` the cleaner stays off ``tp`` inside the block."""
        self.abort_and_pause(tp)
        try:
            yield
        finally:
            self.resume(tp)

    def forget(self, tp: TopicPartition) -> None:
        """``tp`` was deleted: drop its uncleanable mark, checkpoint entry and history."""
        with self._cond:
            self._uncleanable.pop(tp, None)
            if self.writable:
                for root in self._roots.values():
                    history = root.read_cleaner_history()
                    found = history.partitions.pop(str(tp), None) is not None
                    if history.uncleanable.pop(str(tp), None) is not None or found:
                        root.write_cleaner_history(history)
        self.update_checkpoint(tp, None, None)

    def record_round(self, tp: TopicPartition, log: Log, entry: dict[str, Any]) -> None:
        """Persist a finished round's figures (``round_ms``, ``end_offset``, stats)."""
        if not self.writable:
            return
        with self._cond:
            root = self._root_of(log)
            history = root.read_cleaner_history()
            history.add(str(tp), entry)
            history.uncleanable.pop(str(tp), None)  # cleaned: no longer uncleanable
            root.write_cleaner_history(history)

    def rounds(self, tp: TopicPartition) -> list[dict[str, Any]]:
        """The persisted rounds of ``tp``, oldest first."""
        out: list[dict[str, Any]] = []
        for root in self._roots.values():
            out.extend(root.read_cleaner_history().partitions.get(str(tp), []))
        return out

    def uncleanable_bytes_by_dir(self) -> dict[str, tuple[int, int]]:
        """Per log directory: (uncleanable partitions, their bytes) (KIP-346 gauges)."""
        out = {str(path): (0, 0) for path in self._roots}
        live = self._logs()
        with self._cond:
            for tp, mark in self._uncleanable.items():
                log = live.get(tp)
                if log is None:
                    continue
                key = str(log.directory.parent)
                count, size = out.get(key, (0, 0))
                out[key] = (count + 1, size + mark.uncleanable_bytes)
        return out


def cleaning_candidate(
    tp: TopicPartition, log: Log, checkpoint: int | None, now_ms: int
) -> CleaningCandidate:
    """What the cleaner would do with ``log`` now: its cleanable range and dirty ratio, as
    Kafka's ``LogCleanerManager`` computes them (``seglog spark stats`` reports them too); the
    range ends at or before the last stable offset."""
    facts = log.cleaner_segment_facts()
    config = log.config
    offsets = cleanable_offsets(
        facts,
        checkpoint=checkpoint,
        log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset,
        # Kafka's lastStableOffset: never clean past the high watermark nor into an open
        # transaction (its data may still be aborted).
        high_watermark=min(log.high_watermark, log.last_stable_offset),
        min_compaction_lag_ms=config.min_compaction_lag_ms,
        now_ms=now_ms,
    )
    delay = max_compaction_delay_ms(
        facts,
        first_dirty_offset=offsets.first_dirty_offset,
        max_compaction_lag_ms=config.max_compaction_lag_ms,
        now_ms=now_ms,
    )
    to_clean = log_to_clean(
        facts,
        offsets,
        max_compaction_delay=delay,
        min_cleanable_dirty_ratio=config.min_cleanable_dirty_ratio,
    )
    return CleaningCandidate(tp, log, offsets, to_clean)
