"""seglog's bounded run-history files in a log directory root (figures only, never data).

Two files per root of ``log.dirs``, beside ``seglog-cleaner-history.json`` (Kafka ignores plain
files in a log directory):

* ``seglog-retention-history.json``: each applied retention pass that deleted segments of a
  partition (time, segments, bytes, rules, new log start offset);
* ``seglog-compaction-history.json``: each run of the Pulsar-style compactor (time, bytes
  before and after, keys, duration, horizon).

Format (version 1), canonical JSON on one line, newline-terminated::

    {"version": 1,
     "partitions": {"<topic>-<partition>": [<entry>, ...], ...}}

Invariants:

* every entry is a JSON object with an integer ``time_ms`` (the clock time of the event);
  entries of a partition are in the order they were recorded, oldest first;
* at most :attr:`HistoryFile.max_entries` entries per partition (the oldest go first), and only
  partitions that live in this root when the file is written (a deleted or moved partition's
  entries are dropped at the next write), so the file is bounded by partitions x entries;
* the file is replaced atomically (:func:`~seglog.storage.atomic.write_file_atomically`):
  readers see the old or the new content, never a mix;
* a file larger than :data:`HISTORY_MAX_BYTES` or that does not parse or check is **damaged**:
  reading it returns an empty history and records the problem in :attr:`HistoryFile.problems`
  (it holds figures only, so it never stops a log from opening); the next write starts over.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.errors import CorruptCheckpointError, SeglogError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically

RETENTION_HISTORY_FILE = "seglog-retention-history.json"
COMPACTION_HISTORY_FILE = "seglog-compaction-history.json"
HISTORY_VERSION = 1
HISTORY_ENTRIES_MAX = 50  # per partition, newest last
HISTORY_MAX_BYTES = 16 * 1024 * 1024


@dataclass(slots=True)
class History:
    """Content of a history file: per partition name, its entries, oldest first."""

    partitions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, name: str, entry: dict[str, Any], max_entries: int) -> None:
        """Append ``entry`` for partition ``name``, keeping its newest ``max_entries``."""
        if not isinstance(entry.get("time_ms"), int):
            raise ValueError("a history entry needs an integer time_ms")
        entries = self.partitions.setdefault(name, [])
        entries.append(entry)
        del entries[:-max_entries]

    def encode(self) -> bytes:
        """Canonical JSON bytes (sorted keys, newline-terminated)."""
        body = {"version": HISTORY_VERSION, "partitions": self.partitions}
        return (json.dumps(body, sort_keys=True, allow_nan=False) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: str) -> History:
        """Parse and check; anything unexpected is a ``CorruptCheckpointError``."""
        try:
            body = json.loads(data)
            if not isinstance(body, dict) or body.get("version") != HISTORY_VERSION:
                raise ValueError("unsupported version")
            partitions = body["partitions"]
            if not isinstance(partitions, dict):
                raise ValueError("partitions must be an object")
            for name, entries in partitions.items():
                if not isinstance(entries, list) or not all(
                    isinstance(e, dict)
                    and isinstance(e.get("time_ms"), int)
                    and not isinstance(e.get("time_ms"), bool)
                    for e in entries
                ):
                    raise ValueError(f"partition {name!r}: entries need an integer time_ms")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCheckpointError(f"unreadable history: {exc}", path=path) from exc
        return cls({str(k): list(v) for k, v in partitions.items()})


class HistoryFile:
    """One history file of one root; appends are serialized by an instance lock (one
    instance per file and process: the root's ``.lock`` keeps other processes out)."""

    def __init__(
        self,
        path: Path,
        *,
        writable: bool = True,
        max_entries: int = HISTORY_ENTRIES_MAX,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.path = path
        self.writable = writable
        self.max_entries = max_entries
        self.problems: list[str] = []
        self._lock = threading.Lock()

    def read(self) -> History:
        """The history (empty when absent; damaged: empty, and the problem recorded)."""
        try:
            size = self.path.stat().st_size
            if size > HISTORY_MAX_BYTES:
                raise CorruptCheckpointError(
                    f"history is {size} bytes, above the limit of {HISTORY_MAX_BYTES}",
                    path=str(self.path),
                )
            return History.decode(fileops.read_bytes(self.path), path=str(self.path))
        except FileNotFoundError:
            return History()
        except OSError as exc:
            self._problem(f"{self.path}: {exc.strerror or exc}")
        except SeglogError as exc:
            self._problem(str(exc))
        return History()

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)
            del self.problems[:-10]  # bounded: the latest few are what matters

    def append(
        self,
        entries: Iterable[tuple[str, dict[str, Any]]],
        *,
        is_live: Callable[[str], bool] = lambda name: True,
    ) -> None:
        """Add ``(partition name, entry)`` pairs and replace the file atomically; partitions
        for which ``is_live`` is false are dropped. A read-only file does nothing."""
        if not self.writable:
            return
        with self._lock:
            history = self.read()  # a damaged file starts over here
            for name, entry in entries:
                history.add(name, entry, self.max_entries)
            history.partitions = {
                name: kept for name, kept in history.partitions.items() if is_live(name)
            }
            write_file_atomically(self.path, history.encode())

    def forget(self, name: str) -> None:
        """Drop partition ``name``'s entries (its topic was deleted); rewrites the file only
        when it held some. A read-only file does nothing."""
        if not self.writable:
            return
        with self._lock:
            history = self.read()
            if history.partitions.pop(name, None) is not None:
                write_file_atomically(self.path, history.encode())
