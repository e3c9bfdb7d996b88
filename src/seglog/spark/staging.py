"""The Spark sink's staging area and its crash-safe, exactly-once commit.

Layout (one *staging root* per data directory; by default the sibling directory
``<first log dir>.seglog-staging``, never inside a log directory: Kafka refuses to load a
log directory holding a sub-directory whose name is not ``topic-partition``)::

    <staging root>/<job id>/                 one per Spark write (uuid4 hex)
        job.json                             {"version", "job_id", "log_dirs", "created_ms"}
        task-<spark partition:05d>-<attempt>/
            <topic>-<partition>.batches      Kafka v2 record batches, concatenated
        commit.json                          the commit journal (written at commit step 3)
                                             (+ "stream": a streaming sink's micro-batch)
        done/<topic>-<partition>             per partition, after its records are durable
        committed                            every partition is done

A ``.batches`` file holds whole v2 batches exactly as a producer sends them (offsets from 0,
CRC valid, each at most the topic's ``max.message.bytes``); tasks fsync it before they report
it. Only the files named by the successful task attempts' commit messages are committed;
files of failed or speculative attempts die with the job directory.

Commit (:func:`commit_job`, on the driver, with the data directory open read-write, i.e.
holding every root's ``.lock``), each step with what recovery does if the process dies there:

1. Finish every earlier interrupted commit of this data directory (:func:`recover_jobs`).
2. Check, changing nothing: each staged file exists with the size its task reported, each
   partition exists, and every batch passes the same validation ``Log.append`` runs, under
   the topic's *current* config. Any failure raises here, before a single record is appended
   (then Spark calls ``abort``, which removes the job directory). *Crash*: no journal, so
   nothing happened; the job directory is an orphan (removed after
   :data:`ORPHAN_JOB_AGE_MS`).
3. Write ``commit.json`` atomically: per partition, in task order, its staged files and the
   partition's log end offset *before* the commit (``log_end_offset_before``). *Crash before
   the rename*: as 2. *After*: the commit is decided; recovery completes it.
4. Per partition, in journal order: append the batches not yet in the log, ``flush`` (fsync:
   the records are durable and visible to readers at once), then write ``done/<tp>``.
   *Crash anywhere in 4*: for a partition with a done marker nothing is redone; for any
   other, recovery reads the log from ``log_end_offset_before`` and counts how many of the
   staged batches are already there, in order, compared by record count and the CRC-32C of
   the batch's records section (the part an append never rewrites: it assigns offsets and
   may stamp LogAppendTime, both in the header), then appends only the rest. So a batch is
   never appended twice and never lost, whether the crash came before, during (a torn append
   is truncated by log recovery at open) or after an append.
5. A streaming sink's journal carries its query id and micro-batch id: record them in the
   data directory's ledger (:mod:`seglog.spark.stream_ledger`). *Crash before*: recovery
   re-applies the journal (step 4 appends nothing) and records them. Then write
   ``committed`` and remove the job directory, and the staging root with it when it is left
   empty. *Crash between*: recovery sees ``committed`` and only removes the directory.

A commit that fails in step 4 with an exception (an I/O error: disk full) keeps its journal;
``abort`` leaves such a job directory alone and the next commit on the data directory (or
:func:`recover_commits`) completes it, so the records of a failed job may still appear,
each once. Rolling back (truncating the logs) was rejected: readers may already have read the
records, and Kafka has no way to retract records either.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.core.append_validation import validate_append
from seglog.engine.log import APPEND_CHUNK_BYTES_MAX, Log
from seglog.engine.log_manager import LogManager
from seglog.errors import (
    OffsetOutOfRangeError,
    SeglogError,
    UnknownTopicError,
)
from seglog.format.batch import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from seglog.format.crc import crc32c_fast
from seglog.format.topic_names import TopicPartition
from seglog.spark.stream_ledger import StreamMark, record_commit
from seglog.storage.atomic import fsync_directory, write_file_atomically

STAGING_SUFFIX = ".seglog-staging"
JOB_FILE = "job.json"
JOURNAL_FILE = "commit.json"
DONE_DIR = "done"
COMMITTED_FILE = "committed"
BATCHES_SUFFIX = ".batches"
FORMAT_VERSION = 1
CREATE_ATTEMPTS = 5
# remove_job: a racing task's files can outlive one rmtree; a few short retries outlast it.
REMOVE_ATTEMPTS = 50
REMOVE_RETRY_S = 0.01
ORPHAN_JOB_AGE_MS = 7 * 24 * 3600 * 1000  # a job dir with no journal, untouched this long
JOURNAL_BYTES_MAX = 64 * 1024 * 1024
BATCH_BYTES_MAX = 256 * 1024 * 1024  # a staged batch larger than this is corrupt
_RECORDS_COUNT_AT = 57  # recordsCount in the v2 header
_BATCH_LENGTH_AT = 8
FETCH_BYTES = 1024 * 1024


class StagedCommitError(SeglogError):
    """A staged Spark write cannot be committed or recovered (names the job and the reason)."""


def default_staging_root(log_dirs: Sequence[str | Path]) -> Path:
    """``<first log dir>.seglog-staging``, beside (never inside) the data directory."""
    first = Path(log_dirs[0]).absolute()
    return first.with_name(first.name + STAGING_SUFFIX)


@dataclass(frozen=True, slots=True)
class StagedFile:
    """One task's staged batches for one partition (a commit message carries these)."""

    topic: str
    partition: int
    path: str  # relative to the job directory
    size_bytes: int
    batches: int
    records: int

    def to_json(self) -> dict[str, Any]:
        """The journal's form."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "path": self.path,
            "size_bytes": self.size_bytes,
            "batches": self.batches,
            "records": self.records,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StagedFile:
        """Parse the journal's form."""
        return cls(
            str(obj["topic"]),
            int(obj["partition"]),
            str(obj["path"]),
            int(obj["size_bytes"]),
            int(obj["batches"]),
            int(obj["records"]),
        )


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One partition of a commit: its files in task order and its LEO before the commit."""

    topic: str
    partition: int
    files: tuple[StagedFile, ...]
    log_end_offset_before: int

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition."""
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class Journal:
    """Content of ``commit.json``."""

    job_id: str
    log_dirs: tuple[str, ...]
    created_ms: int
    entries: tuple[JournalEntry, ...]
    stream: StreamMark | None = None  # a streaming sink's micro-batch

    def encode(self) -> bytes:
        """Canonical JSON."""
        body: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "job_id": self.job_id,
            "log_dirs": list(self.log_dirs),
            "created_ms": self.created_ms,
            "entries": [
                {
                    "topic": e.topic,
                    "partition": e.partition,
                    "log_end_offset_before": e.log_end_offset_before,
                    "files": [f.to_json() for f in e.files],
                }
                for e in self.entries
            ],
        }
        if self.stream is not None:
            body["stream"] = self.stream.to_json()
        return (json.dumps(body, indent=1, sort_keys=True) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, *, path: Path) -> Journal:
        """Parse ``commit.json``; anything unexpected is a :class:`StagedCommitError`."""
        try:
            body = json.loads(data)
            if body.get("version") != FORMAT_VERSION:
                raise ValueError(f"unsupported version {body.get('version')!r}")
            entries = tuple(
                JournalEntry(
                    str(e["topic"]),
                    int(e["partition"]),
                    tuple(StagedFile.from_json(f) for f in e["files"]),
                    int(e["log_end_offset_before"]),
                )
                for e in body["entries"]
            )
            stream = body.get("stream")
            return cls(
                str(body["job_id"]),
                tuple(str(d) for d in body["log_dirs"]),
                int(body["created_ms"]),
                entries,
                None if stream is None else StreamMark.from_json(stream),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StagedCommitError(f"{path}: unreadable commit journal: {exc}") from exc


def same_log_dirs(a: Sequence[str | Path], b: Sequence[str | Path]) -> bool:
    """Whether two ``log.dirs`` lists name the same directories (order-insensitive)."""
    return sorted(os.path.realpath(p) for p in a) == sorted(os.path.realpath(p) for p in b)


# --- jobs -------------------------------------------------------------------------------------
def create_job(staging_root: Path, job_id: str, log_dirs: Sequence[str], now_ms: int) -> Path:
    """Create ``<staging root>/<job id>/job.json``; returns the job directory."""
    job_dir = staging_root / job_id
    for attempt in range(CREATE_ATTEMPTS):
        try:
            job_dir.mkdir(parents=True, exist_ok=False)
            break
        except FileNotFoundError:  # another commit removed the empty root just now
            if attempt == CREATE_ATTEMPTS - 1:
                raise
    body = {
        "version": FORMAT_VERSION,
        "job_id": job_id,
        "log_dirs": [str(Path(d).absolute()) for d in log_dirs],
        "created_ms": now_ms,
    }
    write_file_atomically(job_dir / JOB_FILE, (json.dumps(body) + "\n").encode())
    fsync_directory(staging_root)
    return job_dir


def has_journal(job_dir: Path) -> bool:
    """Whether the job's commit reached step 3 (then only recovery may remove it)."""
    return (job_dir / JOURNAL_FILE).exists() and not (job_dir / COMMITTED_FILE).exists()


def remove_job(job_dir: Path) -> None:
    """Remove a job directory wholesale (missing is fine), and the staging root if that
    leaves it empty (a concurrent :func:`create_job` retries when it loses that race).

    ``abort`` can run while a task of the failed job is still writing (Spark does not wait
    for the tasks it cancels): a file the task creates between ``rmtree``'s listing and its
    ``rmdir`` keeps the directory alive. So removal repeats until the job directory is gone;
    once it is, the task can create nothing more (its directories are made without
    ``parents``, its files opened inside them), so nothing is left behind.
    """
    for _ in range(REMOVE_ATTEMPTS):
        shutil.rmtree(job_dir, ignore_errors=True)
        if not job_dir.exists():
            break
        time.sleep(REMOVE_RETRY_S)
    with contextlib.suppress(OSError):  # not empty (another job) or already gone
        job_dir.parent.rmdir()


# --- staged batch files -----------------------------------------------------------------------
def _read_exact(handle: Any, size: int, path: Path, position: int) -> bytes:
    data: bytes = handle.read(size)
    if len(data) != size:
        raise StagedCommitError(
            f"{path} at position {position}: torn batch ({len(data)} of {size} bytes)"
        )
    return data


def iter_staged_batches(path: Path) -> Iterator[bytes]:
    """Each whole batch of a ``.batches`` file, in order (framing is checked, not CRCs)."""
    position = 0
    with open(path, "rb") as handle:
        while True:
            head = handle.read(LOG_OVERHEAD)
            if not head:
                return
            if len(head) < LOG_OVERHEAD:
                raise StagedCommitError(f"{path} at position {position}: torn batch header")
            length = int.from_bytes(head[_BATCH_LENGTH_AT:LOG_OVERHEAD], "big", signed=True)
            if not RECORD_BATCH_OVERHEAD - LOG_OVERHEAD <= length <= BATCH_BYTES_MAX:
                raise StagedCommitError(f"{path} at position {position}: batch length {length}")
            body = _read_exact(handle, length, path, position)
            yield head + body
            position += LOG_OVERHEAD + length


def batch_digest(batch: bytes | memoryview) -> tuple[int, int]:
    """``(recordsCount, CRC-32C of the records section)``: what an append never rewrites."""
    count = int.from_bytes(batch[_RECORDS_COUNT_AT:RECORD_BATCH_OVERHEAD], "big", signed=True)
    return count, crc32c_fast(batch[RECORD_BATCH_OVERHEAD:])


def _chunks(batches: Iterator[bytes], chunk_bytes_max: int) -> Iterator[bytes]:
    """Group batches into appends of at most ``chunk_bytes_max`` (one batch at least)."""
    pending: list[bytes] = []
    size = 0
    for batch in batches:
        if pending and size + len(batch) > chunk_bytes_max:
            yield b"".join(pending)
            pending, size = [], 0
        pending.append(batch)
        size += len(batch)
    if pending:
        yield b"".join(pending)


def _entry_batches(job_dir: Path, entry: JournalEntry) -> Iterator[bytes]:
    for staged in entry.files:
        yield from iter_staged_batches(job_dir / staged.path)


def _chunk_limit(log: Log) -> int:
    return max(1, min(log.config.segment_bytes, APPEND_CHUNK_BYTES_MAX))


# --- commit -----------------------------------------------------------------------------------
@dataclass(slots=True)
class CommitReport:
    """What a commit (or a recovery) did, per partition: records appended, first/last offset."""

    job_id: str
    appended: dict[TopicPartition, tuple[int, int, int]] = field(default_factory=dict)
    skipped_batches: dict[TopicPartition, int] = field(default_factory=dict)  # already there
    missing_partitions: list[TopicPartition] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Records appended in total."""
        return sum(count for count, _, _ in self.appended.values())


#: Called after each partition's step 4 (tests inject crashes here).
PartitionHook = Callable[[TopicPartition], None]


def commit_job(
    manager: LogManager,
    job_dir: Path,
    staged: Sequence[StagedFile],
    *,
    now_ms: int,
    after_partition: PartitionHook | None = None,
    stream: StreamMark | None = None,
) -> CommitReport:
    """Steps 2-5 of the module docstring for one job (step 1 is :func:`recover_jobs`);
    ``stream`` names a streaming sink's micro-batch, recorded in the ledger in step 5."""
    by_tp: dict[TopicPartition, list[StagedFile]] = {}
    for item in staged:
        by_tp.setdefault(TopicPartition(item.topic, item.partition), []).append(item)
    entries = []
    for tp, files in by_tp.items():
        log = manager.get_log(tp.topic, tp.partition)  # UnknownTopicError names it
        for item in files:
            path = job_dir / item.path
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise StagedCommitError(
                    f"staged file {path} is missing (the staging directory was removed while "
                    "the write ran?)"
                ) from None
            if size != item.size_bytes:
                raise StagedCommitError(
                    f"staged file {path} is {size} bytes, its task wrote {item.size_bytes}"
                )
        chunk_limit = _chunk_limit(log)
        entry = JournalEntry(tp.topic, tp.partition, tuple(files), log.log_end_offset)
        for chunk in _chunks(_entry_batches(job_dir, entry), chunk_limit):
            validate_append(
                chunk, config=log.config, log_end_offset=0, now_ms=now_ms, where=f"append to {tp}"
            )
        entries.append(entry)
    job = json.loads((job_dir / JOB_FILE).read_bytes())
    journal = Journal(
        job_id=str(job["job_id"]),
        log_dirs=tuple(str(d) for d in job["log_dirs"]),
        created_ms=now_ms,
        entries=tuple(entries),
        stream=stream,
    )
    write_file_atomically(job_dir / JOURNAL_FILE, journal.encode())
    return apply_journal(manager, job_dir, journal, after_partition=after_partition)


def _appended_prefix(log: Log, entry: JournalEntry, digests: list[tuple[int, int]]) -> int:
    """How many of the entry's batches are already in the log, in order, from its old LEO."""
    start = entry.log_end_offset_before
    if log.log_end_offset <= start or not digests:
        return 0
    position = start
    matched = 0
    try:
        while matched < len(digests) and position < log.log_end_offset:
            data = memoryview(log.read(position, FETCH_BYTES).data)
            at = 0
            progressed = False
            while matched < len(digests) and at + LOG_OVERHEAD <= len(data):
                base = int.from_bytes(data[at : at + 8], "big", signed=True)
                length = int.from_bytes(data[at + 8 : at + LOG_OVERHEAD], "big", signed=True)
                end = at + LOG_OVERHEAD + length
                if end > len(data):
                    break  # the fetch ended inside a batch: fetch again from it
                if base != position or batch_digest(data[at:end]) != digests[matched]:
                    return matched  # not ours: ours were not appended from here
                position = base + digests[matched][0]
                matched += 1
                at = end
                progressed = True
            if not progressed:
                return matched
    except OffsetOutOfRangeError as exc:
        raise StagedCommitError(
            f"{log.topic_partition}: cannot tell whether the interrupted commit's records are "
            f"in the log: offsets from {start} are gone ({exc})"
        ) from exc
    return matched


def apply_journal(
    manager: LogManager,
    job_dir: Path,
    journal: Journal,
    *,
    after_partition: PartitionHook | None = None,
) -> CommitReport:
    """Steps 4-5: append what is not in the logs yet, mark partitions done, finish the job."""
    report = CommitReport(journal.job_id)
    done_dir = job_dir / DONE_DIR
    done_dir.mkdir(exist_ok=True)
    for entry in journal.entries:
        tp = entry.topic_partition
        marker = done_dir / str(tp)
        if marker.exists():
            continue
        try:
            log = manager.get_log(tp.topic, tp.partition)
        except UnknownTopicError:
            report.missing_partitions.append(tp)  # deleted since: nowhere to put the records
            write_file_atomically(marker, b"missing\n")
            continue
        digests = [batch_digest(b) for b in _entry_batches(job_dir, entry)]
        skip = _appended_prefix(log, entry, digests)
        report.skipped_batches[tp] = skip
        remaining = (b for i, b in enumerate(_entry_batches(job_dir, entry)) if i >= skip)
        first = log.log_end_offset
        count = 0
        for chunk in _chunks(remaining, _chunk_limit(log)):
            info = log.append(chunk)
            count += info.record_count
        log.flush()
        if count:
            report.appended[tp] = (count, first, log.log_end_offset - 1)
        write_file_atomically(marker, f"{log.log_end_offset}\n".encode())
        if after_partition is not None:
            after_partition(tp)
    if journal.stream is not None:
        record_commit(
            manager.broker.log_dirs,
            journal.stream,
            job_id=journal.job_id,
            now_ms=int(time.time() * 1000),
        )
    write_file_atomically(job_dir / COMMITTED_FILE, b"committed\n")
    remove_job(job_dir)
    return report


# --- recovery ---------------------------------------------------------------------------------
def recover_jobs(
    manager: LogManager,
    staging_root: Path,
    *,
    now_ms: int | None = None,
    exclude: str | None = None,
) -> list[CommitReport]:
    """Step 1: finish every interrupted commit of this data directory found in
    ``staging_root`` (oldest first), remove finished jobs and old orphans (no journal)."""
    if not staging_root.is_dir():
        return []
    now = int(time.time() * 1000) if now_ms is None else now_ms
    pending: list[tuple[Journal, Path]] = []
    for job_dir in sorted(p for p in staging_root.iterdir() if p.is_dir()):
        if job_dir.name == exclude:
            continue
        if (job_dir / COMMITTED_FILE).exists():
            remove_job(job_dir)
            continue
        journal_path = job_dir / JOURNAL_FILE
        if not journal_path.exists():
            if _is_orphan(job_dir, manager, now):
                remove_job(job_dir)
            continue
        if journal_path.stat().st_size > JOURNAL_BYTES_MAX:
            raise StagedCommitError(f"{journal_path}: commit journal is too large")
        journal = Journal.decode(journal_path.read_bytes(), path=journal_path)
        if same_log_dirs(journal.log_dirs, [str(r) for r in manager.broker.log_dirs]):
            pending.append((journal, job_dir))
    pending.sort(key=lambda item: (item[0].created_ms, item[0].job_id))
    return [apply_journal(manager, job_dir, journal) for journal, job_dir in pending]


def _is_orphan(job_dir: Path, manager: LogManager, now_ms: int) -> bool:
    """A job with no journal, untouched for ORPHAN_JOB_AGE_MS, that is this data directory's
    or has no ``job.json`` at all.

    A job without ``job.json`` is the rest of a removal cut short (:func:`remove_job` deletes
    it among the first files, and a task still writing can keep the directory alive past the
    retries): no commit can ever use it (a commit needs its journal, and no journal means no
    commit began), whichever data directory it belonged to, so it goes once it is old.
    """
    try:
        newest = max([job_dir.stat().st_mtime] + [p.stat().st_mtime for p in job_dir.iterdir()])
    except OSError:
        return False
    if now_ms - newest * 1000 <= ORPHAN_JOB_AGE_MS:
        return False
    try:
        job = json.loads((job_dir / JOB_FILE).read_bytes())
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    try:
        return bool(same_log_dirs(job["log_dirs"], [str(r) for r in manager.broker.log_dirs]))
    except (KeyError, TypeError):
        return False
