"""The Pulsar-style compacted copy of a partition, on disk (seglog's own layout).

Inside the partition directory (Kafka's loader and seglog's ignore sub-directories)::

    <topic>-<partition>/compaction/
        published.json                       the publication checkpoint (below)
        status.json                          the last run's status and figures (below)
        copy-<horizon, 20 digits>-<8 hex>/   one compacted copy: Kafka-format segments
            00000000000000000000.log, .index, .timeindex, ...

``published.json`` (version 1): ``{"version": 1, "copy": "<copy dir name>", "horizon": H,
"published_ms": T}``. It names the one published copy and its **compaction horizon** H, the
last offset of the original log the copy covers (the copy holds, per key, the latest record
at an offset <= H, under the compactor's rules). It is written by one atomic, durable
replacement (tmp file, fsync, rename, directory fsync): readers see the old publication or
the new one, never a mix.

``status.json`` (version 1): ``{"version": 1, "state": "NOT_RUN"|"RUNNING"|"SUCCESS"|"ERROR",
"message": str, "figures": {...}}``: figures only, never needed to read data.

Crash safety of a run (what startup, :meth:`CompactedCopyStore.recover`, finds):

1. A new ``copy-*`` directory is created and filled, its segments fsynced, the directory
   fsynced. Crash: an unpublished copy directory; recovery deletes it (the old copy stays).
2. ``published.json`` is replaced. Crash before the rename: as 1. After: the new copy is
   published; the old directory is superseded.
3. The old copy directory is deleted. Crash: recovery deletes every ``copy-*`` directory
   that is not the published one (Pulsar leaves orphan ledgers; seglog does not).

Invariants: at most one published copy; every offset in the copy is <= its horizon; the copy's
segments are ordinary Kafka segments (``seglog dump-log`` and Kafka's tools read them).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seglog.errors import CorruptCheckpointError, UnreadableFileError
from seglog.format.names import LOG_SUFFIX, offset_from_file_name
from seglog.storage import fileops
from seglog.storage.atomic import TMP_SUFFIX, fsync_directory, write_file_atomically
from seglog.storage.segment import LogSegment

COMPACTION_DIR = "compaction"
PUBLISHED_FILE = "published.json"
STATUS_FILE = "status.json"
COPY_PREFIX = "copy-"
FILE_VERSION = 1
FILE_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Publication:
    """The published copy: its directory name, horizon and publication time."""

    copy: str
    horizon: int
    published_ms: int

    def encode(self) -> bytes:
        """The JSON bytes of ``published.json``."""
        body = {
            "version": FILE_VERSION,
            "copy": self.copy,
            "horizon": self.horizon,
            "published_ms": self.published_ms,
        }
        return (json.dumps(body, sort_keys=True) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: str) -> Publication:
        """Parse and check ``published.json``."""
        try:
            body = json.loads(data)
            if body.get("version") != FILE_VERSION:
                raise ValueError(f"unsupported version {body.get('version')!r}")
            copy, horizon, when = body["copy"], body["horizon"], body["published_ms"]
            if not isinstance(copy, str) or not copy.startswith(COPY_PREFIX) or "/" in copy:
                raise ValueError(f"bad copy name {copy!r}")
            if not isinstance(horizon, int) or horizon < -1 or not isinstance(when, int):
                raise ValueError("horizon and published_ms must be integers")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCheckpointError(f"unreadable publication: {exc}", path=path) from exc
        return cls(copy, horizon, when)


@dataclass(frozen=True, slots=True)
class CompactionStatus:
    """The last run: NOT_RUN, RUNNING, SUCCESS or ERROR (with a message) and its figures."""

    state: str = "NOT_RUN"
    message: str = ""
    figures: dict[str, Any] | None = None

    STATES = ("NOT_RUN", "RUNNING", "SUCCESS", "ERROR")

    def encode(self) -> bytes:
        """The JSON bytes of ``status.json``."""
        body = {
            "version": FILE_VERSION,
            "state": self.state,
            "message": self.message,
            "figures": self.figures or {},
        }
        return (json.dumps(body, sort_keys=True) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: str) -> CompactionStatus:
        """Parse and check ``status.json``."""
        try:
            body = json.loads(data)
            if body.get("version") != FILE_VERSION or body.get("state") not in cls.STATES:
                raise ValueError("unsupported version or state")
            figures = body.get("figures", {})
            if not isinstance(figures, dict) or not isinstance(body.get("message", ""), str):
                raise ValueError("figures must be an object and message a string")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCheckpointError(f"unreadable compaction status: {exc}", path=path) from exc
        return cls(body["state"], body.get("message", ""), figures)


def _read_small(path: Path) -> bytes | None:
    try:
        if path.stat().st_size > FILE_MAX_BYTES:
            raise CorruptCheckpointError("file is too large", path=str(path))
        return fileops.read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc), path=str(path)) from exc


class CompactedCopyStore:
    """The ``compaction/`` directory of one partition (module docstring)."""

    def __init__(self, partition_dir: Path, *, writable: bool = True) -> None:
        self.partition_dir = partition_dir
        self.path = partition_dir / COMPACTION_DIR
        self.writable = writable
        self.problems: list[str] = []

    def published(self) -> Publication | None:
        """The publication, or None when no copy was ever published. A damaged
        ``published.json`` reads as no publication (recorded in :attr:`problems`): readers
        then read the original log, which is always complete, and the next run rebuilds the
        copy from it."""
        path = self.path / PUBLISHED_FILE
        try:
            data = _read_small(path)
            return None if data is None else Publication.decode(data, path=str(path))
        except (CorruptCheckpointError, UnreadableFileError) as exc:
            self.problems.append(str(exc))
            return None

    def status(self) -> CompactionStatus:
        """The persisted status (NOT_RUN when none; a damaged file reads as ERROR naming it:
        it holds figures only)."""
        path = self.path / STATUS_FILE
        try:
            data = _read_small(path)
            if data is None:
                return CompactionStatus()
            return CompactionStatus.decode(data, path=str(path))
        except (CorruptCheckpointError, UnreadableFileError) as exc:
            self.problems.append(str(exc))
            return CompactionStatus("ERROR", f"status unreadable: {exc}")

    def unpublish(self) -> None:
        """Withdraw the published copy (the log it was made from was truncated below its
        horizon): ``published.json`` is removed durably first, then the copy; a crash in
        between leaves an unpublished copy, which startup removes."""
        publication = self.published()
        path = self.path / PUBLISHED_FILE
        if not self.writable or not path.exists():
            return
        fileops.unlink(path)
        fsync_directory(self.path)
        if publication is not None:
            self.remove_copy(publication.copy)

    def write_status(self, status: CompactionStatus) -> None:
        """Replace ``status.json`` atomically."""
        if self.writable:
            fileops.mkdir(self.path, exist_ok=True)
            write_file_atomically(self.path / STATUS_FILE, status.encode())

    def new_copy_dir(self, horizon: int) -> Path:
        """Create an empty, not yet published copy directory for ``horizon``."""
        fileops.mkdir(self.path, exist_ok=True)
        name = f"{COPY_PREFIX}{max(horizon, 0):020d}-{uuid.uuid4().hex[:8]}"
        path = self.path / name
        fileops.mkdir(path)
        return path

    def publish(self, publication: Publication) -> None:
        """Step 2: make ``publication`` the published copy (one atomic durable write)."""
        copy_dir = self.path / publication.copy
        fsync_directory(copy_dir)
        fsync_directory(self.path)
        write_file_atomically(self.path / PUBLISHED_FILE, publication.encode())

    def remove_copy(self, name: str) -> None:
        """Delete a copy directory (superseded or unpublished)."""
        path = self.path / name
        if path.is_dir():
            fileops.rmtree(path)

    def recover(self, log_end_offset: int) -> list[str]:
        """Startup: withdraw a publication whose horizon is at or past ``log_end_offset``
        (the log lost its tail since), remove every copy directory but the published one and
        stray temporary files; a status left RUNNING by a stopped process becomes ERROR.
        Returns what was removed. Read-only stores change nothing."""
        if not self.writable or not self.path.is_dir():
            return []
        publication = self.published()
        if publication is not None and publication.horizon >= log_end_offset:
            self.unpublish()
            publication = None
        keep = publication.copy if publication else None
        removed = []
        for entry in sorted(self.path.iterdir()):
            if entry.is_dir() and entry.name.startswith(COPY_PREFIX) and entry.name != keep:
                self.remove_copy(entry.name)
                removed.append(entry.name)
            elif entry.is_file() and entry.name.endswith(TMP_SUFFIX):
                fileops.unlink(entry, missing_ok=True)
                removed.append(entry.name)
        status = self.status()
        if status.state == "RUNNING":
            self.write_status(
                CompactionStatus(
                    "ERROR", "the run was interrupted (the process stopped)", status.figures
                )
            )
        return removed

    def open_segments(
        self, name: str, *, index_interval_bytes: int, segment_index_bytes: int
    ) -> list[LogSegment]:
        """The segments of copy ``name``, oldest first, opened read-only."""
        directory = self.path / name
        bases = sorted(
            offset_from_file_name(p.name)
            for p in directory.iterdir()
            if p.is_file() and p.name.endswith(LOG_SUFFIX)
        )
        return [
            LogSegment(
                directory,
                base,
                index_interval_bytes=index_interval_bytes,
                segment_index_bytes=segment_index_bytes,
                created_ms=0,
                writable=False,
            )
            for base in bases
        ]

    def copy_bytes(self, name: str) -> int:
        """Total ``.log`` bytes of a copy."""
        directory = self.path / name
        return sum(os.stat(p).st_size for p in directory.iterdir() if p.name.endswith(LOG_SUFFIX))
