"""Recording retention deletions and compactor runs per log directory root (for reports).

A :class:`RunHistory` belongs to one :class:`~seglog.engine.log_manager.LogManager` and holds,
per root, the two :class:`~seglog.storage.history_file.HistoryFile` s (format and invariants
there). Entries are keyed by partition name (``<topic>-<partition>``) and written to the root
holding the partition.

Retention entry (one per partition and applied pass that deleted something)::

    {"time_ms": T, "log_start_offset": new start, "segment_count": n, "bytes": freed,
     "rules": ["retention.ms", ...], "rolled": bool,
     "segments": [{"base_offset": b, "size_bytes": s, "rule": r, "reason": text}, ...]}

``segments`` lists at most :data:`SEGMENTS_PER_ENTRY_MAX` segments (the oldest);
``segment_count`` and ``bytes`` always count all of them.

Compaction entry (one per run of the compacted-copy compactor)::

    {"time_ms": run start, "state": "SUCCESS" | "ERROR", "error": text (ERROR only),
     "horizon": H, "previous_horizon": H0, "bytes_before": bytes the run read (previous
     copy + log tail), "bytes_after": bytes of the published copy, "log_bytes": the log's
     size, "keys": n, "records_read": n, "records_kept": n, "duration_s": s,
     "is_partial": bool, "is_noop": bool, "rebuilt": bool}

Recording never fails the work it records: an I/O error is logged and kept in
:meth:`RunHistory.problems`. A read-only manager records nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from seglog.core.retention import RetentionPlan
from seglog.engine.compaction.compactor import CompactionRun
from seglog.engine.log import Log
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.storage.history_file import (
    COMPACTION_HISTORY_FILE,
    RETENTION_HISTORY_FILE,
    HistoryFile,
)

LOG = logging.getLogger("seglog.history")
SEGMENTS_PER_ENTRY_MAX = 100


def retention_entry(plan: RetentionPlan, time_ms: int) -> dict[str, Any]:
    """The history entry of an applied retention ``plan`` (module docstring)."""
    return {
        "time_ms": time_ms,
        "log_start_offset": plan.new_log_start_offset,
        "segment_count": len(plan.deletions),
        "bytes": plan.size_bytes,
        "rules": sorted({str(d.rule) for d in plan.deletions}),
        "rolled": plan.needs_roll,
        "segments": [
            {
                "base_offset": d.base_offset,
                "size_bytes": d.size_bytes,
                "rule": str(d.rule),
                "reason": d.reason,
            }
            for d in plan.deletions[:SEGMENTS_PER_ENTRY_MAX]
        ],
    }


def compaction_entry(
    run: CompactionRun | None, *, time_ms: int, log_bytes: int, error: str | None = None
) -> dict[str, Any]:
    """The history entry of a compactor run (``run`` None: it failed with ``error``)."""
    if run is None:
        return {"time_ms": time_ms, "state": "ERROR", "error": error or "", "log_bytes": log_bytes}
    return {
        "time_ms": run.started_ms or time_ms,
        "state": "SUCCESS",
        "horizon": run.horizon,
        "previous_horizon": run.previous_horizon,
        "bytes_before": run.bytes_read,
        "bytes_after": run.copy_bytes,
        "log_bytes": log_bytes,
        "keys": run.keys,
        "records_read": run.records_read,
        "records_kept": run.records_kept,
        "duration_s": round(run.duration_s, 6),
        "is_partial": run.is_partial,
        "is_noop": run.is_noop,
        "rebuilt": bool(run.extra.get("rebuilt", False)),
    }


class RunHistory:
    """The retention and compaction histories of every root (module docstring)."""

    def __init__(
        self,
        roots: list[Path],
        logs: Callable[[], Mapping[TopicPartition, Log]],
        *,
        writable: bool,
    ) -> None:
        self._logs = logs
        self.retention = {
            root: HistoryFile(root / RETENTION_HISTORY_FILE, writable=writable) for root in roots
        }
        self.compaction = {
            root: HistoryFile(root / COMPACTION_HISTORY_FILE, writable=writable) for root in roots
        }
        self._errors: list[str] = []

    def _append(self, files: dict[Path, HistoryFile], log: Log, entry: dict[str, Any]) -> None:
        root = log.directory.parent
        history = files.get(root)
        if history is None or not history.writable:
            return
        live = {str(tp) for tp, other in self._logs().items() if other.directory.parent == root}
        live.add(str(log.topic_partition))
        try:
            history.append([(str(log.topic_partition), entry)], is_live=live.__contains__)
        except (OSError, SeglogError, ValueError) as exc:  # figures only: never fail the work
            LOG.warning("could not record history in %s: %s", history.path, exc)
            self._errors.append(f"{history.path}: {exc}")
            del self._errors[:-10]

    def record_retention(self, log: Log, plan: RetentionPlan, time_ms: int) -> None:
        """Record an applied retention plan (nothing when it deleted nothing)."""
        if not plan.is_empty:
            self._append(self.retention, log, retention_entry(plan, time_ms))

    def record_compaction(self, log: Log, run: CompactionRun | None, error: str | None) -> None:
        """Record a compactor run (``run`` None: it failed with ``error``)."""
        entry = compaction_entry(
            run, time_ms=log.clock.now_ms(), log_bytes=log.size_bytes(), error=error
        )
        self._append(self.compaction, log, entry)

    def forget(self, tp: TopicPartition) -> None:
        """``tp`` was deleted: drop its entries in every root (a topic created again under
        the same name starts with no history)."""
        for files in (self.retention, self.compaction):
            for history in files.values():
                try:
                    history.forget(str(tp))
                except (OSError, SeglogError) as exc:
                    LOG.warning("could not update %s: %s", history.path, exc)

    @staticmethod
    def _entries(files: dict[Path, HistoryFile], tp: TopicPartition) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for history in files.values():
            out.extend(history.read().partitions.get(str(tp), []))
        out.sort(key=lambda entry: int(entry["time_ms"]))
        return out

    def retention_events(self, tp: TopicPartition) -> list[dict[str, Any]]:
        """Recorded retention deletions of ``tp``, oldest first."""
        return self._entries(self.retention, tp)

    def compaction_runs(self, tp: TopicPartition) -> list[dict[str, Any]]:
        """Recorded compactor runs of ``tp``, oldest first."""
        return self._entries(self.compaction, tp)

    def problems(self) -> list[str]:
        """Damaged history files read so far and failed writes (latest few)."""
        out = list(self._errors)
        for files in (self.retention, self.compaction):
            for history in files.values():
                out.extend(history.problems)
        return out
