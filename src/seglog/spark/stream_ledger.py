"""The streaming sink's ledger: the last micro-batch committed per streaming query.

File ``seglog-spark-streams.json`` in one root of the data directory (Kafka ignores plain
files in a log directory, as it ignores ``seglog-cleaner-history.json``): the root whose real
path sorts first, so the same data directory finds the same file whatever order its
``log.dirs`` are given in. Format (version 1), canonical JSON, newline-terminated::

    {"version": 1,
     "queries": {"<query id>": {"batch_id": 7, "checkpoint": "/ck", "job_id": "...",
                                "time_ms": 1700000000000}, ...}}

``<query id>`` is Spark's streaming query id (kept in the checkpoint's ``metadata`` file, so
it is the same across restarts of one checkpoint, and new for a new checkpoint), or
``checkpoint:<path>`` when Spark did not give the tasks one.

Invariants:

* only written by a commit holding the data directory's ``.lock``, as the last step of applying
  a commit journal that carries a :class:`StreamMark` (:mod:`seglog.spark.staging`), i.e.
  after every record of that micro-batch is durable in the logs and before the journal is
  marked committed; a crash in between re-applies the journal, which appends nothing and
  writes the same ledger entry again;
* a query's ``batch_id`` never decreases (a re-applied older journal keeps the larger one);
* replaced atomically (:func:`~seglog.storage.atomic.write_file_atomically`);
* unlike seglog's history files this one decides what is appended, so a damaged file is an
  error (:class:`~seglog.errors.CorruptCheckpointError`), never silently reset: resetting it
  would append replayed micro-batches a second time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seglog.errors import CorruptCheckpointError
from seglog.storage.atomic import write_file_atomically

LEDGER_FILE = "seglog-spark-streams.json"
LEDGER_VERSION = 1
LEDGER_BYTES_MAX = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StreamMark:
    """Which micro-batch of which query a commit journal carries."""

    query_id: str
    batch_id: int
    checkpoint: str | None

    def to_json(self) -> dict[str, Any]:
        """The journal's form."""
        return {"query_id": self.query_id, "batch_id": self.batch_id, "checkpoint": self.checkpoint}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StreamMark:
        """Parse the journal's form."""
        checkpoint = obj.get("checkpoint")
        return cls(
            str(obj["query_id"]),
            int(obj["batch_id"]),
            None if checkpoint is None else str(checkpoint),
        )


def ledger_path(log_dirs: Sequence[str | Path]) -> Path:
    """The ledger file of a data directory (in the root whose real path sorts first)."""
    return Path(min(os.path.realpath(d) for d in log_dirs)) / LEDGER_FILE


def read_ledger(log_dirs: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """Every query's entry; an absent file is empty; a damaged one raises."""
    path = ledger_path(log_dirs)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return {}
    if size > LEDGER_BYTES_MAX:
        raise CorruptCheckpointError(f"streaming ledger is {size} bytes", path=str(path))
    try:
        body = json.loads(path.read_bytes())
        if body.get("version") != LEDGER_VERSION:
            raise ValueError(f"unsupported version {body.get('version')!r}")
        queries = body["queries"]
        if not isinstance(queries, dict):
            raise TypeError("'queries' is not an object")
        for query, entry in queries.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("batch_id"), int):
                raise TypeError(f"query {query!r} has no integer batch_id")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptCheckpointError(
            f"unreadable streaming ledger ({exc}); it records which micro-batches were "
            "appended, so seglog will not guess: restore it or remove it knowing that replayed "
            "micro-batches would then be appended again",
            path=str(path),
        ) from exc
    return dict(queries)


def last_committed(log_dirs: Sequence[str | Path], query_id: str) -> int | None:
    """The last micro-batch id committed for ``query_id`` (None: none yet)."""
    entry = read_ledger(log_dirs).get(query_id)
    return None if entry is None else int(entry["batch_id"])


def record_commit(
    log_dirs: Sequence[str | Path], mark: StreamMark, *, job_id: str, now_ms: int
) -> None:
    """Record ``mark`` as committed (keeps a larger batch id already there)."""
    queries = read_ledger(log_dirs)
    previous = queries.get(mark.query_id)
    if previous is not None and int(previous["batch_id"]) >= mark.batch_id:
        return
    queries[mark.query_id] = {
        "batch_id": mark.batch_id,
        "checkpoint": mark.checkpoint,
        "job_id": job_id,
        "time_ms": now_ms,
    }
    body = {"version": LEDGER_VERSION, "queries": queries}
    write_file_atomically(ledger_path(log_dirs), (json.dumps(body, sort_keys=True) + "\n").encode())


__all__ = [
    "LEDGER_FILE",
    "StreamMark",
    "last_committed",
    "ledger_path",
    "read_ledger",
    "record_commit",
]
