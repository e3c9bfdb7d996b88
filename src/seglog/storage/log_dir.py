"""A log directory root (one entry of ``log.dirs``): its lock, metadata and checkpoint files.

Files of a root, each written atomically (``.tmp``, fsync, rename, directory
fsync) in Kafka's exact text format:

* ``.lock``: empty; held with an exclusive POSIX record lock (``fcntl.lockf``, what Java's
  ``FileChannel.tryLock`` takes) for as long as the directory is open read-write, so a second
  process (seglog or a Kafka broker) fails at once with :class:`LogDirectoryLockedError`.
  The error names the holder (:func:`lock_holder`: process id and command line, read from
  Linux's ``/proc/locks``, which lists a Kafka broker's lock as it lists ours). No sidecar
  file records the holder: the ``.lock`` stays the empty file Kafka expects, and a sidecar
  would go stale after a crash while the kernel's lock table cannot. A read-only open takes
  no lock and writes nothing, so it works while a broker or ``seglog maintain`` holds it;
* ``meta.properties``: node id, cluster id, directory id (Java properties);
* ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``: offset checkpoints;
* ``.kafka_cleanshutdown``: present only between a clean shutdown and the next start. A
  read-write open keeps the content it found (a KRaft broker's ``{"version":0,
  "brokerEpoch":N}``, or a pre-3.7 broker's empty file) and writes those same bytes back at a
  clean close: the broker epoch is the broker's, which seglog does not know; writing -1 would
  tell a KRaft controller the broker's last shutdown was not clean. A root found without a
  (readable) marker gets ``{"version":0,"brokerEpoch":-1}`` (epoch unknown);
* ``seglog-topics.json``: seglog's own topic metadata (partition count, topic id, config
  overrides), in every root, with a ``generation`` so the newest copy wins after a crash
  between two roots' writes. Kafka ignores plain files in a log directory, so it is harmless.

An unreadable recovery-point checkpoint reads as "no recovery points" (everything is recovered)
and an unreadable log-start checkpoint as "no log start offsets", as Kafka does; both are
reported, never fatal.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.errors import (
    CorruptCheckpointError,
    LockHeldElsewhereError,
    LogDirectoryLockedError,
    SeglogError,
    UnreadableFileError,
)
from seglog.format.checkpoint import (
    MetaProperties,
    encode_clean_shutdown,
    encode_meta_properties,
    encode_offset_checkpoint,
    parse_clean_shutdown,
    parse_meta_properties,
    parse_offset_checkpoint,
)
from seglog.format.topic_names import TopicPartition
from seglog.storage import fileops
from seglog.storage.atomic import TMP_SUFFIX, fsync_directory, write_file_atomically

LOCK_FILE = ".lock"
META_PROPERTIES = "meta.properties"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
TOPICS_FILE = "seglog-topics.json"
TOPICS_FILE_VERSION = 1
TOPICS_FILE_MAX_BYTES = 64 * 1024 * 1024
MARKER_MAX_BYTES = 4096  # {"version":0,"brokerEpoch":<int64>} is at most 50 bytes

# Roots this process holds read-write (real paths), guarded by _HELD_LOCK: see LogDirectory.lock.
_HELD_ROOTS: set[str] = set()
_HELD_LOCK = threading.Lock()

OFFSET_CHECKPOINTS = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)


@dataclass(slots=True)
class TopicMetadata:
    """seglog's record of a topic: partition count, Kafka topic id, config overrides.

    ``discovered``: seglog did not create the topic (a broker did) and only keeps config
    overrides set with ``topics alter`` for it; its partitions are those found on disk (none
    is ever created for it) and ``topic_id`` may be empty (written as ``"discovered": true``,
    absent for topics seglog created).
    """

    name: str
    partitions: int
    topic_id: str
    configs: dict[str, str] = field(default_factory=dict)
    deleting: bool = False
    discovered: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored for this topic."""
        return {
            "partitions": self.partitions,
            "topic_id": self.topic_id,
            "configs": dict(sorted(self.configs.items())),
            "deleting": self.deleting,
            **({"discovered": True} if self.discovered else {}),
        }


@dataclass(slots=True)
class TopicsFile:
    """Content of ``seglog-topics.json``: every topic, and a generation counter."""

    generation: int = 0
    topics: dict[str, TopicMetadata] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Canonical JSON bytes (sorted keys, newline-terminated)."""
        body = {
            "version": TOPICS_FILE_VERSION,
            "generation": self.generation,
            "topics": {name: self.topics[name].to_json() for name in sorted(self.topics)},
        }
        return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: str) -> TopicsFile:
        """Parse and check the JSON; anything unexpected is a ``CorruptCheckpointError``."""
        try:
            body = json.loads(data)
            if body.get("version") != TOPICS_FILE_VERSION:
                raise ValueError(f"unsupported version {body.get('version')!r}")
            topics = {}
            for name, entry in body["topics"].items():
                configs = entry.get("configs", {})
                if not isinstance(configs, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in configs.items()
                ):
                    raise ValueError(f"topic {name!r}: configs must map strings to strings")
                partitions = entry["partitions"]
                if (
                    not isinstance(partitions, int)
                    or isinstance(partitions, bool)
                    or not 1 <= partitions <= TOPIC_PARTITIONS_MAX
                ):
                    raise ValueError(f"topic {name!r}: bad partition count {partitions!r}")
                deleting = entry.get("deleting", False)
                if not isinstance(deleting, bool):
                    raise ValueError(f"topic {name!r}: deleting must be true or false")
                discovered = entry.get("discovered", False)
                if not isinstance(discovered, bool):
                    raise ValueError(f"topic {name!r}: discovered must be true or false")
                topics[str(name)] = TopicMetadata(
                    str(name),
                    partitions,
                    str(entry["topic_id"]),
                    dict(configs),
                    deleting,
                    discovered,
                )
            generation = body["generation"]
            if not isinstance(generation, int):
                raise ValueError("generation must be an integer")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCheckpointError(f"unreadable topic metadata: {exc}", path=path) from exc
        return cls(generation, topics)


TOPIC_PARTITIONS_MAX = 100_000  # as LogManager.create_topic allows
CLEANER_HISTORY_FILE = "seglog-cleaner-history.json"
CLEANER_HISTORY_VERSION = 1
CLEANER_HISTORY_ROUNDS_MAX = 20  # per partition, newest last
CLEANER_HISTORY_MAX_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class CleanerHistory:
    """Content of ``seglog-cleaner-history.json``: per partition (``topic-partition``), the
    last :data:`CLEANER_HISTORY_ROUNDS_MAX` cleaning rounds, oldest first. Each round is a
    JSON object with at least ``round_ms`` (the round's clock time, the one its delete
    horizons and expiries used) and ``end_offset``; the rest are the round's figures.
    seglog's own file (Kafka keeps no such history): ``seglog verify`` reads the last round's
    time, reports and ``seglog cleaner status`` read the figures.

    ``uncleanable`` (key absent when empty): per partition the last pass's failure that marked
    it uncleanable, ``{"reason": text, "uncleanable_bytes": n, "time_ms": t}``, removed by its
    next successful round; so ``cleaner status`` in another process shows what ``clean
    --once`` reported."""

    partitions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    uncleanable: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, entry: dict[str, Any]) -> None:
        """Append a round for partition ``name``, keeping the newest rounds only."""
        rounds = self.partitions.setdefault(name, [])
        rounds.append(entry)
        del rounds[:-CLEANER_HISTORY_ROUNDS_MAX]

    def encode(self) -> bytes:
        """Canonical JSON bytes."""
        body: dict[str, Any] = {"version": CLEANER_HISTORY_VERSION, "partitions": self.partitions}
        if self.uncleanable:
            body["uncleanable"] = self.uncleanable
        return (json.dumps(body, sort_keys=True) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: str) -> CleanerHistory:
        """Parse and check; anything unexpected is a ``CorruptCheckpointError``."""
        try:
            body = json.loads(data)
            if body.get("version") != CLEANER_HISTORY_VERSION:
                raise ValueError(f"unsupported version {body.get('version')!r}")
            partitions = body["partitions"]
            if not isinstance(partitions, dict):
                raise ValueError("partitions must be an object")
            for name, rounds in partitions.items():
                if not isinstance(rounds, list) or not all(
                    isinstance(r, dict)
                    and isinstance(r.get("round_ms"), int)
                    and isinstance(r.get("end_offset"), int)
                    for r in rounds
                ):
                    raise ValueError(f"partition {name!r}: rounds need round_ms and end_offset")
            marks = body.get("uncleanable", {})
            if not isinstance(marks, dict) or not all(
                isinstance(m, dict)
                and isinstance(m.get("reason"), str)
                and isinstance(m.get("uncleanable_bytes"), int)
                and isinstance(m.get("time_ms"), int)
                for m in marks.values()
            ):
                raise ValueError("uncleanable marks need reason, uncleanable_bytes and time_ms")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCheckpointError(f"unreadable cleaner history: {exc}", path=path) from exc
        return cls(
            {str(k): list(v) for k, v in partitions.items()},
            {str(k): dict(v) for k, v in marks.items()},
        )


PROC_LOCKS = "/proc/locks"
HOLDER_COMMAND_MAX_CHARS = 160
KAFKA_MAIN_CLASS = "kafka.Kafka"


def lock_holder(fd: int, *, proc_locks: str = PROC_LOCKS) -> str | None:
    """Who holds a lock on the file open as ``fd``: ``process 1234 (seglog maintain ...)``,
    or None when it cannot be told (not Linux, no ``/proc``, the lock already gone).

    ``/proc/locks`` lines read ``N: POSIX|FLOCK|OFDLCK ADVISORY WRITE PID MAJ:MIN:INODE START
    END`` (device numbers in hex); a waiter's line has ``->`` after ``N:``. The holder is
    the first non-waiting line naming the file's device and inode. PID ``-1`` (an OFD lock)
    or ``0`` (a process of another PID namespace) names no process. The command line comes
    from ``/proc/PID/cmdline``; a Java Kafka broker's (a classpath of hundreds of jars) is
    shortened to ``Kafka broker (java ... kafka.Kafka CONFIG)``.
    """
    try:
        st = os.fstat(fd)
        lines = fileops.read_bytes(proc_locks).decode("ascii", "replace").splitlines()
    except OSError:
        return None
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        kind, pid_text, file_id = fields[1], fields[4], fields[5]
        try:
            major, minor, inode = file_id.split(":")
            found = (int(major, 16), int(minor, 16), int(inode))
            pid = int(pid_text)
        except ValueError:
            continue
        if found != wanted:
            continue
        if pid <= 0:
            return f"a process this one cannot see ({kind} lock, pid {pid})"
        return f"process {pid} ({_command_of(pid)})"
    return None


def _command_of(pid: int) -> str:
    """The command line of process ``pid``, shortened for an error message."""
    try:
        args = fileops.read_bytes(f"/proc/{pid}/cmdline").split(b"\0")
    except OSError:
        return "command unknown"
    words = [a.decode("utf-8", "replace") for a in args if a]
    if KAFKA_MAIN_CLASS in words:
        main = words.index(KAFKA_MAIN_CLASS)
        return "Kafka broker: " + " ".join([words[0], "...", *words[main : main + 2]])
    text = " ".join(" ".join(words).split()) or "command unknown"  # one line
    if len(text) > HOLDER_COMMAND_MAX_CHARS:
        text = text[: HOLDER_COMMAND_MAX_CHARS - 3] + "..."
    return text


class LogDirectory:
    """One root of ``log.dirs``: lock, meta.properties, checkpoints, clean-shutdown marker."""

    def __init__(self, path: Path, *, writable: bool = True) -> None:
        self.path = path
        self.writable = writable
        self._lock_fd: int | None = None
        self._lock_key = ""
        self.problems: list[str] = []
        # The clean-shutdown marker found at open, written back as is at a clean close.
        self._found_marker: bytes | None = None

    # --- lock -------------------------------------------------------------------------------
    def lock(self) -> None:
        """Create the root if needed and take its ``.lock``; fail fast when it is taken."""
        if not self.writable:
            return
        fileops.mkdir(self.path, parents=True, exist_ok=True)
        # A POSIX record lock belongs to the process: a second open in this process would get
        # it too, and closing either would drop it for both. So this process also keeps a
        # set of the roots it holds (Java's FileChannel.tryLock throws
        # OverlappingFileLockException in that case).
        key = os.path.realpath(self.path)
        with _HELD_LOCK:
            if key in _HELD_ROOTS:
                raise LogDirectoryLockedError(
                    f"log directory {self.path} is already open read-write in this process "
                    "(close the other LogManager first)",
                    path=str(self.path / LOCK_FILE),
                )
            fd = fileops.open_fd(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = lock_holder(fd)
                os.close(fd)
                who = holder or "another process (a seglog or Kafka broker)"
                raise LockHeldElsewhereError(
                    f"log directory {self.path} is locked by {who}: {exc.strerror}",
                    path=str(self.path / LOCK_FILE),
                    holder=holder,
                ) from exc
            _HELD_ROOTS.add(key)
        self._lock_fd = fd
        self._lock_key = key

    def unlock(self) -> None:
        """Release the lock (closing the descriptor drops the record lock)."""
        if self._lock_fd is not None:
            with _HELD_LOCK:
                os.close(self._lock_fd)
                self._lock_fd = None
                _HELD_ROOTS.discard(self._lock_key)

    # --- startup housekeeping ------------------------------------------------------------------
    def remove_stray_temp_files(self) -> list[str]:
        """Delete ``*.tmp`` leftovers of interrupted atomic writes in the root."""
        removed: list[str] = []
        if not self.writable:
            return removed
        for path in self.path.iterdir():
            if path.is_file() and path.name.endswith(TMP_SUFFIX):
                fileops.unlink(path)
                removed.append(path.name)
        return removed

    def take_clean_shutdown_marker(self) -> bool:
        """True if the last shutdown was clean; the marker is removed (a crash from here on is
        unclean). Read-only opens leave it in place."""
        marker = self.path / CLEAN_SHUTDOWN_FILE
        if not marker.exists():
            return False
        self._found_marker = self._readable_marker(marker)
        if self.writable:
            fileops.unlink(marker)
            fsync_directory(self.path)
        return True

    def _readable_marker(self, marker: Path) -> bytes | None:
        """The marker's bytes when they are a marker Kafka writes (empty, or the JSON with an
        int64 epoch), else None (then a close writes epoch -1 rather than copy damage)."""
        try:
            if marker.stat().st_size > MARKER_MAX_BYTES:
                return None
            data = fileops.read_bytes(marker)
            parse_clean_shutdown(data, path=str(marker))
        except (OSError, SeglogError):
            return None
        return data

    def write_clean_shutdown_marker(self, broker_epoch: int | None = None) -> None:
        """Mark a clean shutdown (after every log was flushed and checkpoints written).

        ``broker_epoch`` None: the marker found at open, byte for byte (the broker's epoch),
        or ``{"version":0,"brokerEpoch":-1}`` when there was none."""
        if not self.writable:
            return
        if broker_epoch is None and self._found_marker is not None:
            data = self._found_marker
        else:
            data = encode_clean_shutdown(-1 if broker_epoch is None else broker_epoch)
        write_file_atomically(self.path / CLEAN_SHUTDOWN_FILE, data)

    # --- meta.properties ------------------------------------------------------------------------
    def read_meta_properties(self) -> MetaProperties | None:
        """The root's ``meta.properties``, or None when absent."""
        path = self.path / META_PROPERTIES
        if not path.exists():
            return None
        return parse_meta_properties(fileops.read_bytes(path), path=str(path))

    def write_meta_properties(self, meta: MetaProperties, now_ms: int) -> None:
        """Write ``meta.properties`` atomically."""
        if self.writable:
            write_file_atomically(
                self.path / META_PROPERTIES, encode_meta_properties(meta, now_ms=now_ms)
            )

    # --- offset checkpoints -----------------------------------------------------------------------
    def read_offsets(self, name: str) -> dict[TopicPartition, int]:
        """An offset checkpoint; missing -> empty; unreadable -> empty plus a recorded problem."""
        path = self.path / name
        try:
            data = fileops.read_bytes(path)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self.problems.append(f"{path}: {exc.strerror}")
            return {}
        try:
            return dict(parse_offset_checkpoint(data, path=str(path)))
        except SeglogError as exc:
            self.problems.append(f"{path}: {exc}")
            return {}

    def write_offsets(self, name: str, offsets: dict[TopicPartition, int]) -> None:
        """Replace an offset checkpoint atomically."""
        if self.writable:
            write_file_atomically(self.path / name, encode_offset_checkpoint(offsets))

    def ensure_checkpoint_files(self) -> None:
        """Create missing offset checkpoints empty, as Kafka's constructor does (0-byte file)."""
        if not self.writable:
            return
        for name in OFFSET_CHECKPOINTS:
            if not (self.path / name).exists():
                write_file_atomically(self.path / name, encode_offset_checkpoint({}))

    # --- topic metadata ---------------------------------------------------------------------------
    def read_topics(self) -> TopicsFile | None:
        """``seglog-topics.json`` of this root, or None when absent."""
        path = self.path / TOPICS_FILE
        if not path.exists():
            return None
        try:
            size = path.stat().st_size
            if size > TOPICS_FILE_MAX_BYTES:
                raise CorruptCheckpointError(
                    f"topic metadata is {size} bytes, above the limit", path=str(path)
                )
            return TopicsFile.decode(fileops.read_bytes(path), path=str(path))
        except OSError as exc:
            raise UnreadableFileError(exc.strerror or str(exc), path=str(path)) from exc

    def read_cleaner_history(self) -> CleanerHistory:
        """``seglog-cleaner-history.json`` (empty when absent; a damaged file is recorded as a
        problem and read as empty: it only holds figures, nothing data depends on)."""
        path = self.path / CLEANER_HISTORY_FILE
        try:
            if path.stat().st_size > CLEANER_HISTORY_MAX_BYTES:
                raise CorruptCheckpointError("cleaner history is too large", path=str(path))
            return CleanerHistory.decode(fileops.read_bytes(path), path=str(path))
        except FileNotFoundError:
            return CleanerHistory()
        except OSError as exc:
            self.problems.append(f"{path}: {exc.strerror}")
        except SeglogError as exc:
            self.problems.append(f"{path}: {exc}")
        return CleanerHistory()

    def write_cleaner_history(self, history: CleanerHistory) -> None:
        """Replace ``seglog-cleaner-history.json`` atomically."""
        if self.writable:
            write_file_atomically(self.path / CLEANER_HISTORY_FILE, history.encode())

    def write_topics(self, topics: TopicsFile) -> None:
        """Replace ``seglog-topics.json`` atomically."""
        if self.writable:
            write_file_atomically(self.path / TOPICS_FILE, topics.encode())
