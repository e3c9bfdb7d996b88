"""Storage benchmark: append, random offset lookups and recovery of seglog's partition ``Log``.

Three parts, each timed beside a physical floor in the same run (contenders interleaved
round-robin by :func:`bench.common.measure_interleaved`; median [min..max] of wall and CPU):

**Append.** Producer-style chunks (16 KiB v2 batches of 100 B values from the segment generator
of :mod:`bench.common`, base offset 0 in every batch, timestamps shifted forward on each pass
over the cached source segment) are appended with ``Log.append``, one call per produce chunk
of 1 batch and of 4 batches; the log then ``flush()``es once (fsync). The floor is a **raw
sequential write of the same chunks** with ``os.write`` to a fresh file and one ``fsync`` at
the end. Every contender writes ``--size-mb`` MB (default 256) into a fresh directory of one
temporary directory (same file system); ``Log.close()`` (index trim at shutdown), the
deletion of the directory and an ``os.sync()`` (so the discard of the deleted blocks does not
land on the next sample) run between samples, outside the clock. The log appends with the
default ``segment.bytes`` (1 GiB, no roll) and with 64 MiB (rolls included). Ratio = raw time
/ seglog time (goal: >= 0.80, by wall and by CPU). Every log written is checked once: batch
count, offsets reassigned contiguously from 0, CRCs valid, total bytes.

**Random offset lookups.** Two logs built by appending 4-batch chunks (``segment.bytes``
1 GiB): ~``--small-mb`` MiB (default 64) and ~``--big-gb`` GiB (default 4, so 4 segments).
They are cached in ``$TMPDIR/seglog-bench/storage-*`` with a manifest (file names and sizes,
log end offset, a digest of the engine files that decide what an append writes) and reused
when they still match it, so only the first run after an engine change pays the build.
Both are opened read-only (clean shutdown, no recovery) and read once to warm the page cache;
then ``--lookups`` (default 20 000) ``Log.read(offset, max_bytes=1024)`` calls at offsets
drawn uniformly over each log with the same RNG seed are timed (``2 * --repeat`` rounds).
``max_bytes`` is below a batch, so each answer is exactly the batch holding the offset
(``min_one_message``). The floor is one ``os.pread`` of exactly that batch at its known
position. Before timing, every answer is checked against an independent table of batch
positions built from the files' headers (the batch's base offset, size, offset range and
CRC). Ratio: big / small time per lookup (goal: <= 1.5).

**Recovery after an unclean shutdown.** A log of ``--recovery-segments`` segments (default
16) of ``--recovery-segment-mb`` MiB (64) is built in the temporary directory and closed;
then ``Log.open`` is timed with ``had_clean_shutdown=False`` and (a) ``recovery_point=0``
(every segment recovered), (b) ``recovery_point`` = the last segment's base offset (only that
segment), and, for reference, (c) a clean open. Reported: ``load_report.bytes_read_for_recovery``,
the bytes this process really read during the open (``rchar`` of ``/proc/self/io``), the
ratio of bytes read to the bytes from the segment holding the recovery point on (must be
1.0), and the scan speed against two floors timed on the same files: reading them (1 MiB
``os.readv`` into a page-aligned buffer), and reading each whole file plus one ``crc32c`` per
batch with a Python header walk (the least a recovery must do). The log was closed cleanly, so
nothing is cut; an unclean open must still validate every batch from the recovery point on.

Run: ``.venv/bin/python -m bench.bench_storage [--size-mb 256] [--big-gb 4] [--repeat 5]
[--quick]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import mmap
import os
import random
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

if __package__ in (None, ""):  # run as a script: python bench/bench_storage.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.common import (
    GENERATOR_VERSION,
    MB,
    Row,
    Spread,
    add_ratios,
    format_ratio,
    load_segment,
    machine_info,
    markdown_table,
    measure_interleaved,
    rows_from_samples,
    source_state,
    write_results,
)
from seglog.clock import SystemClock
from seglog.config import LogConfig
from seglog.engine.log import Log
from seglog.format import CompressionType
from seglog.format.topic_names import TopicPartition

MIB = 1 << 20
GIB = 1 << 30
VALUE_BYTES = 100
TOPIC_PARTITION = TopicPartition("bench", 0)
# Bump when the layout of the cached lookup logs changes: old ones are then rebuilt.
STORAGE_LAYOUT_VERSION = 2
# The engine files that decide what an append writes (batch bytes, index entries, rolls): a
# cached lookup log built by another version of them is rebuilt, since the index density it
# was built with is part of what a lookup costs.
ENGINE_LAYOUT_FILES = (
    "src/seglog/engine/log/partition_log.py",
    "src/seglog/core/append_validation.py",
    "src/seglog/core/roll.py",
    "src/seglog/storage/segment.py",
    "src/seglog/storage/index_file.py",
)
BUILD_CHUNK_BATCHES = 4  # produce chunk used to build the lookup and recovery logs
LOOKUP_MAX_BYTES = 1024  # below a batch: the answer is the one batch holding the offset
LOOKUP_SEED = 20261121
APPEND_GOAL = 0.80  # raw time / seglog time
LOOKUP_GOAL = 1.5  # big-log time / small-log time per lookup

_OFFSET_SIZE = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_BASE_TIMESTAMP_AT = 27
_MAX_TIMESTAMP_AT = 35
_LAST_OFFSET_DELTA_AT = 23
_RECORDS_COUNT_AT = 57
_CRC_AT = 17
_CRC_FROM = 21
_LOG_OVERHEAD = 12


# --------------------------------------------------------------------------------------------
# producer batches
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceBatches:
    """A cached segment split into producer-style batches (base offset 0 in each)."""

    name: str
    batches: list[bytes]
    records: list[int]
    span_ms: int  # first base timestamp to last max timestamp, + 1


def producer_batches(data: bytes, name: str) -> SourceBatches:
    """The batches of a broker segment as a producer sends them: base offset 0 in each."""
    batches: list[bytes] = []
    records: list[int] = []
    first_ts = last_ts = None
    position = 0
    while position < len(data):
        _, size = _OFFSET_SIZE.unpack_from(data, position)
        end = position + _LOG_OVERHEAD + size
        batch = bytearray(data[position:end])
        _INT64.pack_into(batch, 0, 0)  # baseOffset is outside the CRC; the log assigns it
        batches.append(bytes(batch))
        records.append(_INT32.unpack_from(batch, _RECORDS_COUNT_AT)[0])
        if first_ts is None:
            first_ts = _INT64.unpack_from(batch, _BASE_TIMESTAMP_AT)[0]
        last_ts = _INT64.unpack_from(batch, _MAX_TIMESTAMP_AT)[0]
        position = end
    assert first_ts is not None and last_ts is not None
    return SourceBatches(name, batches, records, last_ts - first_ts + 1)


def shift_timestamps(batch: bytes, delta_ms: int) -> bytes:
    """The batch with its base and max timestamps moved by ``delta_ms`` (CRC recomputed)."""
    out = bytearray(batch)
    for at in (_BASE_TIMESTAMP_AT, _MAX_TIMESTAMP_AT):
        _INT64.pack_into(out, at, _INT64.unpack_from(out, at)[0] + delta_ms)
    _UINT32.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[_CRC_FROM:]))
    return bytes(out)


def batch_stream(source: SourceBatches) -> Iterator[tuple[bytes, int]]:
    """(batch, records) forever: the source over and over, each pass later in time.

    Record timestamps keep increasing from pass to pass, as a producer's would, so the time
    indexes and the time-based roll see a realistic clock.
    """
    cycle = 0
    while True:
        delta = cycle * source.span_ms
        for batch, count in zip(source.batches, source.records, strict=True):
            yield (batch if cycle == 0 else shift_timestamps(batch, delta)), count
        cycle += 1


def take_batches(source: SourceBatches, total_bytes: int) -> tuple[list[bytes], int]:
    """Batches from :func:`batch_stream` up to ``total_bytes`` (at least one); and records."""
    batches: list[bytes] = []
    size = records = 0
    for batch, count in batch_stream(source):
        if batches and size + len(batch) > total_bytes:
            break
        batches.append(batch)
        size += len(batch)
        records += count
    return batches, records


def chunk_stream(source: SourceBatches, per_chunk: int) -> Iterator[tuple[bytes, int]]:
    """Produce chunks of ``per_chunk`` batches joined, with their record counts."""
    parts: list[bytes] = []
    records = 0
    for batch, count in batch_stream(source):
        parts.append(batch)
        records += count
        if len(parts) == per_chunk:
            yield b"".join(parts), records
            parts, records = [], 0


def log_config(segment_bytes: int) -> LogConfig:
    """Kafka's defaults with this ``segment.bytes``."""
    return dataclasses.replace(LogConfig(), segment_bytes=segment_bytes)


def size_label(nbytes: int) -> str:
    """``1 GiB``, ``64 MiB``, ``512 KiB``."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (1024, "KiB")):
        if nbytes >= unit:
            value = nbytes / unit
            return f"{value:.0f} {name}" if value == int(value) else f"{value:.2f} {name}"
    return f"{nbytes} B"


# --------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchTable:
    """Every batch of a partition directory, from its ``.log`` headers (an independent oracle)."""

    log_files: list[Path]
    base_offsets: np.ndarray  # int64, increasing
    last_offsets: np.ndarray
    positions: np.ndarray
    sizes: np.ndarray  # whole batch, log overhead included
    file_index: np.ndarray

    @property
    def total_bytes(self) -> int:
        """Bytes of every batch."""
        return int(self.sizes.sum())


def log_files(directory: Path) -> list[Path]:
    """The ``.log`` files of a partition directory, oldest first."""
    return sorted(directory.glob("*.log"))


def scan_batch_table(directory: Path) -> BatchTable:
    """Walk every batch header of every ``.log`` (no engine code involved)."""
    files = log_files(directory)
    bases: list[int] = []
    lasts: list[int] = []
    positions: list[int] = []
    sizes: list[int] = []
    which: list[int] = []
    for index, path in enumerate(files):
        file_size = path.stat().st_size
        if file_size == 0:
            continue
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m,
        ):
            position = 0
            while position < file_size:
                base, size = _OFFSET_SIZE.unpack_from(m, position)
                delta = _INT32.unpack_from(m, position + _LAST_OFFSET_DELTA_AT)[0]
                bases.append(base)
                lasts.append(base + delta)
                positions.append(position)
                sizes.append(_LOG_OVERHEAD + size)
                which.append(index)
                position += _LOG_OVERHEAD + size
            if position != file_size:
                raise AssertionError(f"{path}: batches end at {position}, file has {file_size}")
    table = BatchTable(
        files,
        np.array(bases, dtype=np.int64),
        np.array(lasts, dtype=np.int64),
        np.array(positions, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        np.array(which, dtype=np.int64),
    )
    if bases and (bases[0] != 0 or np.any(table.base_offsets[1:] != table.last_offsets[:-1] + 1)):
        raise AssertionError(f"{directory}: offsets are not contiguous from 0")
    return table


def check_log_bytes(directory: Path, expected_batches: int, expected_bytes: int) -> None:
    """Fail unless the log holds that many batches and bytes, offsets 0.. and valid CRCs."""
    table = scan_batch_table(directory)
    if len(table.base_offsets) != expected_batches or table.total_bytes != expected_bytes:
        raise AssertionError(
            f"{directory}: {len(table.base_offsets)} batches / {table.total_bytes} bytes, "
            f"expected {expected_batches} / {expected_bytes}"
        )
    for path in table.log_files:
        data = path.read_bytes()
        check_crcs(data)


def check_crcs(data: bytes | bytearray | memoryview, end: int | None = None) -> int:
    """CRC-32C of every batch of ``data[:end]`` against the stored one; the batch count."""
    view = memoryview(data)
    stop = len(view) if end is None else end
    position = batches = 0
    unpack_size = _OFFSET_SIZE.unpack_from
    unpack_crc = _UINT32.unpack_from
    crc = crc32c.crc32c
    while position < stop:
        _, size = unpack_size(view, position)
        batch_end = position + _LOG_OVERHEAD + size
        if crc(view[position + _CRC_FROM : batch_end]) != unpack_crc(view, position + _CRC_AT)[0]:
            raise AssertionError(f"CRC mismatch in the batch at position {position}")
        position = batch_end
        batches += 1
    return batches


def aligned_buffer(nbytes: int) -> mmap.mmap:
    """A page-aligned buffer (anonymous mmap), touched once.

    On this machine the kernel copies page-cache data 5x slower into a buffer that starts
    8 or 16 bytes past a page boundary, which is where glibc puts every ``bytearray`` of
    128 KiB or more (limits.md's 16-21 GB/s needs an aligned one); so the floors read into
    this instead.
    """
    buffer = mmap.mmap(-1, max(nbytes, mmap.PAGESIZE))
    buffer.write(b"\0" * len(buffer))
    return buffer


def read_files(paths: Sequence[Path], buffer: mmap.mmap) -> int:
    """Read every file through ``buffer`` (``os.readv``); the bytes read."""
    total = 0
    views = [memoryview(buffer)]
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            while n := os.readv(fd, views):
                total += n
        finally:
            os.close(fd)
    return total


def read_and_crc_files(paths: Sequence[Path], buffer: mmap.mmap) -> int:
    """Read each whole file into ``buffer``, then CRC-32C every batch; the batch count."""
    batches = 0
    view = memoryview(buffer)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = 0
            while n := os.preadv(fd, [view[size:]], size):
                size += n
        finally:
            os.close(fd)
        batches += check_crcs(view, size)
    return batches


def rchar() -> int:
    """Bytes this process has read through read-like system calls (``/proc/self/io``)."""
    with open("/proc/self/io", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise OSError("no rchar in /proc/self/io")


def remove_tree(path: Path) -> None:
    """Delete a directory and let the file system settle (discard, journal) before going on."""
    shutil.rmtree(path, ignore_errors=True)
    os.sync()


# --------------------------------------------------------------------------------------------
# part 1: append
# --------------------------------------------------------------------------------------------


@dataclass
class Written:
    """What one append sample left behind (cleaned up outside the clock)."""

    directory: Path
    log: Log | None
    size: int


def append_seglog(chunks: Sequence[bytes], config: LogConfig, directory: Path) -> Written:
    """Open a fresh log, append every chunk, flush once (fsync)."""
    log = Log.open(directory, TOPIC_PARTITION, config, clock=SystemClock())
    append = log.append
    for chunk in chunks:
        append(chunk)
    log.flush()
    return Written(directory, log, log.size_bytes())


def write_raw(chunks: Sequence[bytes], directory: Path) -> Written:
    """``os.write`` every chunk to a fresh file, fsync once."""
    directory.mkdir(parents=True)
    fd = os.open(directory / "raw.bin", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        write = os.write
        size = 0
        for chunk in chunks:
            written = write(fd, chunk)
            while written < len(chunk):  # a regular file takes it all; never assume it
                written += write(fd, memoryview(chunk)[written:])
            size += written
        os.fsync(fd)
    finally:
        os.close(fd)
    return Written(directory, None, size)


def seglog_append_name(segment_bytes: int) -> str:
    """Contender name of a seglog append configuration."""
    return f"seglog Log.append, segment.bytes {size_label(segment_bytes)}"


RAW_WRITE = "raw os.write + fsync"


def chunk_label(per_chunk: int) -> str:
    """``1 batch/call``, ``4 batches/call``."""
    return f"{per_chunk} batch{'es' if per_chunk > 1 else ''}/call"


def bench_append(
    source: SourceBatches,
    total_bytes: int,
    chunk_sizes: Sequence[int],
    segment_sizes: Sequence[int],
    workdir: Path,
    repeat: int,
) -> tuple[list[Row], dict[str, Any]]:
    """Time seglog appends against raw writes of the same chunks; rows and a summary."""
    batches, records = take_batches(source, total_bytes)
    nbytes = sum(map(len, batches))
    print(
        f"append: {len(batches)} batches, {records} records, {nbytes / MB:.1f} MB per sample",
        flush=True,
    )
    contenders: dict[str, Callable[[], object]] = {}
    config_of: dict[str, tuple[int, int | None]] = {}
    counter = iter(range(1 << 30))

    def fresh() -> Path:
        return workdir / f"append-{next(counter)}" / f"{TOPIC_PARTITION}"

    for per_chunk in chunk_sizes:
        chunks = [b"".join(batches[i : i + per_chunk]) for i in range(0, len(batches), per_chunk)]
        for segment_bytes in segment_sizes:
            name = f"{chunk_label(per_chunk)} | {seglog_append_name(segment_bytes)}"
            config = log_config(segment_bytes)
            contenders[name] = lambda c=chunks, g=config: append_seglog(c, g, fresh())
            config_of[name] = (per_chunk, segment_bytes)
        name = f"{chunk_label(per_chunk)} | {RAW_WRITE}"
        contenders[name] = lambda c=chunks: write_raw(c, fresh())
        config_of[name] = (per_chunk, None)

    checked: set[str] = set()
    segment_counts: dict[str, int] = {}

    def check(name: str, result: object) -> None:
        assert isinstance(result, Written)
        try:
            if result.size != nbytes:
                raise AssertionError(f"{name} wrote {result.size} bytes, expected {nbytes}")
            if result.log is not None:
                if result.log.log_end_offset != records:
                    raise AssertionError(f"{name}: log end offset {result.log.log_end_offset}")
                segment_counts[name] = len(result.log.segments)
                result.log.close()  # trims the active segment's indexes: a shutdown cost
                if name not in checked:
                    check_log_bytes(result.directory, len(batches), nbytes)
                    checked.add(name)
        finally:
            if result.log is not None:
                result.log.close()
            remove_tree(result.directory.parent)

    samples = measure_interleaved(
        contenders, repeat=repeat, warmup=1, min_sample_s=0.0, check=check
    )
    rows: list[Row] = []
    for per_chunk in chunk_sizes:
        label = chunk_label(per_chunk)
        subset = {
            name.split(" | ", 1)[1]: s
            for name, s in samples.items()
            if config_of[name][0] == per_chunk
        }
        notes = {
            name.split(" | ", 1)[1]: f"{segment_counts[name]} segment(s)"
            for name in samples
            if name in segment_counts and config_of[name][0] == per_chunk
        }
        chunk_rows = rows_from_samples(
            "append", label, subset, records=records, nbytes=nbytes, notes=notes
        )
        for segment_bytes in segment_sizes:
            add_ratios(chunk_rows, seglog_append_name(segment_bytes), [RAW_WRITE])
        rows += chunk_rows
    summary = {
        "bytes": nbytes,
        "records": records,
        "batches": len(batches),
        "goal": f"raw time / seglog time >= {APPEND_GOAL}",
        "results": [
            {
                "chunk": row.config,
                "contender": row.contender,
                "ratio_wall": row.ratios[RAW_WRITE]["wall"],
                "ratio_cpu": row.ratios[RAW_WRITE]["cpu"],
                "is_met_wall": row.ratios[RAW_WRITE]["wall"] >= APPEND_GOAL,
                "is_met_cpu": row.ratios[RAW_WRITE]["cpu"] >= APPEND_GOAL,
            }
            for row in rows
            if RAW_WRITE in row.ratios
        ],
    }
    return rows, summary


def append_table(rows: Sequence[Row]) -> str:
    """Markdown: MB/s of each seglog configuration beside raw, and the ratios."""
    lines = [
        "| chunk | contender | MB/s wall | MB/s cpu | raw ÷ seglog time, wall | cpu "
        f"| goal >= {APPEND_GOAL:.2f} |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = row.ratios.get(RAW_WRITE)
        name = row.contender + (f" ({row.note})" if row.note else "")
        wall = _spread(row.mb_per_s("wall"), "{:.0f}")
        cpu = _spread(row.mb_per_s("cpu"), "{:.0f}")
        if ratio is None:
            lines.append(f"| {row.config} | {name} | {wall} | {cpu} | | | |")
            continue
        met = (
            "met"
            if ratio["wall"] >= APPEND_GOAL and ratio["cpu"] >= APPEND_GOAL
            else ("wall only" if ratio["wall"] >= APPEND_GOAL else "**not met**")
        )
        lines.append(
            f"| {row.config} | {name} | {wall} | {cpu} | **{format_ratio(ratio['wall'])}** "
            f"| {format_ratio(ratio['cpu'])} | {met} |"
        )
    return "\n".join(lines)


def _spread(spread: Spread, fmt: str) -> str:
    return f"{fmt.format(spread.median)} [{fmt.format(spread.min)}..{fmt.format(spread.max)}]"


# --------------------------------------------------------------------------------------------
# part 2: random offset lookups
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedLog:
    """A lookup log in the cache and what its manifest says."""

    directory: Path
    total_bytes: int
    log_end_offset: int
    segments: int
    was_built: bool
    build_s: float


def _manifest_files(directory: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in sorted(directory.iterdir())}


def engine_layout_digest() -> str:
    """SHA-256 (short) over the engine files that decide the bytes and indexes appended."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for name in ENGINE_LAYOUT_FILES:
        path = root / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"(missing)")
    return digest.hexdigest()[:16]


def _cached_log_problem(directory: Path, manifest: dict[str, Any]) -> str | None:
    """Why the cached log cannot be reused, or None when it can."""
    if manifest.get("layout") != STORAGE_LAYOUT_VERSION:
        return "benchmark layout version changed"
    if manifest.get("engine_digest") != engine_layout_digest():
        return "engine source changed (" + ", ".join(ENGINE_LAYOUT_FILES) + ")"
    if not directory.is_dir() or _manifest_files(directory) != manifest.get("files"):
        return "files differ from the manifest"
    log = Log.open(
        directory,
        TOPIC_PARTITION,
        log_config(manifest["segment_bytes"]),
        clock=SystemClock(),
        had_clean_shutdown=True,
        writable=False,
    )
    try:
        if (log.log_end_offset, log.size_bytes()) != (
            manifest["log_end_offset"],
            manifest["bytes"],
        ):
            return "log end offset or size differs from the manifest"
    finally:
        log.close()
    return None


def ensure_lookup_log(
    source: SourceBatches, target_bytes: int, segment_bytes: int, label: str
) -> CachedLog:
    """The cached log of about ``target_bytes`` (built, with progress, when missing or stale)."""
    root = common.CACHE_DIR / (
        f"storage-l{STORAGE_LAYOUT_VERSION}-g{GENERATOR_VERSION}-{source.name}"
        f"-t{target_bytes}-s{segment_bytes}-c{BUILD_CHUNK_BATCHES}"
    )
    directory = root / str(TOPIC_PARTITION)
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        problem = _cached_log_problem(directory, manifest)
        if problem is None:
            print(f"lookup log {label}: reusing {root}", flush=True)
            return CachedLog(
                directory,
                manifest["bytes"],
                manifest["log_end_offset"],
                manifest["segments"],
                was_built=False,
                build_s=0.0,
            )
        print(f"lookup log {label}: rebuilding {root}: {problem}", flush=True)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"lookup log {label}: building {target_bytes / MB:.0f} MB in {root}", flush=True)
    started = time.perf_counter()
    log = Log.open(directory, TOPIC_PARTITION, log_config(segment_bytes), clock=SystemClock())
    size = 0
    next_report = 256 * MIB
    max_segments = -(-target_bytes // segment_bytes)
    for chunk, _records in chunk_stream(source, BUILD_CHUNK_BATCHES):
        would_roll = log.active_segment.size + len(chunk) > segment_bytes
        if size + len(chunk) > target_bytes or (would_roll and len(log.segments) == max_segments):
            break
        log.append(chunk)
        size += len(chunk)
        if size >= next_report:
            elapsed = time.perf_counter() - started
            print(
                f"  {size / GIB:.2f} / {target_bytes / GIB:.2f} GiB "
                f"({size / MB / elapsed:.0f} MB/s)",
                file=sys.stderr,
                flush=True,
            )
            next_report += 256 * MIB
    leo = log.log_end_offset
    segments = len(log.segments)
    log.close()
    # Let the writeback of the build finish now, not during the lookups timed next.
    os.sync()
    build_s = time.perf_counter() - started
    manifest = {
        "layout": STORAGE_LAYOUT_VERSION,
        "engine_digest": engine_layout_digest(),
        "generator_version": GENERATOR_VERSION,
        "source": source.name,
        "segment_bytes": segment_bytes,
        "target_bytes": target_bytes,
        "bytes": size,
        "log_end_offset": leo,
        "segments": segments,
        "files": _manifest_files(directory),
    }
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, manifest_path)  # written last: a half-built log has no manifest
    print(f"lookup log {label}: built in {build_s:.1f} s", flush=True)
    return CachedLog(directory, size, leo, segments, was_built=True, build_s=build_s)


def lookup_reads(log: Log, offsets: Sequence[int], max_bytes: int) -> int:
    """``Log.read`` at each offset; the bytes returned in total."""
    read = log.read
    total = 0
    for offset in offsets:
        total += len(read(offset, max_bytes).data)
    return total


def lookup_preads(targets: Sequence[tuple[int, int, int]]) -> int:
    """The floor: one ``os.pread(fd, size, position)`` of the right batch per lookup."""
    pread = os.pread
    total = 0
    for fd, size, position in targets:
        total += len(pread(fd, size, position))
    return total


def check_lookup_answers(
    log: Log, table: BatchTable, offsets: Sequence[int], max_bytes: int
) -> int:
    """Every answer is exactly the batch holding its offset (oracle: the header table)."""
    expected = np.searchsorted(table.base_offsets, np.asarray(offsets), side="right") - 1
    total = 0
    for offset, slot in zip(offsets, expected.tolist(), strict=True):
        data = log.read(offset, max_bytes).data
        base, size = _OFFSET_SIZE.unpack_from(data, 0)
        last = base + _INT32.unpack_from(data, _LAST_OFFSET_DELTA_AT)[0]
        if (
            base != table.base_offsets[slot]
            or len(data) != table.sizes[slot]
            or len(data) != _LOG_OVERHEAD + size
            or not base <= offset <= last
        ):
            raise AssertionError(
                f"read({offset}) returned the batch {base}..{last} ({len(data)} bytes); expected "
                f"base {int(table.base_offsets[slot])} ({int(table.sizes[slot])} bytes)"
            )
        if crc32c.crc32c(memoryview(data)[_CRC_FROM:]) != _UINT32.unpack_from(data, _CRC_AT)[0]:
            raise AssertionError(f"read({offset}): CRC mismatch")
        total += len(data)
    return total


def bench_lookups(
    source: SourceBatches,
    small_bytes: int,
    big_bytes: int,
    segment_bytes: int,
    lookups: int,
    repeat: int,
    min_sample_s: float = 0.25,
) -> tuple[list[Row], dict[str, Any]]:
    """Time random ``Log.read`` lookups on a small and a big log, beside ``os.pread``."""
    sizes = {"small": small_bytes, "big": big_bytes}
    cached = {
        key: ensure_lookup_log(source, size, segment_bytes, size_label(size))
        for key, size in sizes.items()
    }
    logs: dict[str, Log] = {}
    tables: dict[str, BatchTable] = {}
    offsets: dict[str, list[int]] = {}
    targets: dict[str, list[tuple[int, int, int]]] = {}
    fds: list[int] = []
    warm: dict[str, dict[str, float]] = {}
    try:
        for key, entry in cached.items():
            started = time.perf_counter()
            warmed = read_files(log_files(entry.directory), aligned_buffer(MIB))
            seconds = time.perf_counter() - started
            warm[key] = {"bytes": warmed, "seconds": seconds, "gb_per_s": warmed / seconds / 1e9}
            logs[key] = Log.open(
                entry.directory,
                TOPIC_PARTITION,
                log_config(segment_bytes),
                clock=SystemClock(),
                had_clean_shutdown=True,
                writable=False,
            )
            tables[key] = table = scan_batch_table(entry.directory)
            rng = random.Random(LOOKUP_SEED)
            offsets[key] = [rng.randrange(entry.log_end_offset) for _ in range(lookups)]
            file_fds = []
            for path in table.log_files:
                fds.append(os.open(path, os.O_RDONLY))
                file_fds.append(fds[-1])
            slots = np.searchsorted(table.base_offsets, np.asarray(offsets[key]), side="right") - 1
            targets[key] = [
                (file_fds[int(table.file_index[s])], int(table.sizes[s]), int(table.positions[s]))
                for s in slots.tolist()
            ]
        expected_bytes = {
            key: check_lookup_answers(logs[key], tables[key], offsets[key], LOOKUP_MAX_BYTES)
            for key in sizes
        }
        for key, target in sizes.items():
            print(
                f"lookups {size_label(target)} log ({cached[key].total_bytes / MB:.1f} MB): "
                f"{cached[key].segments} "
                f"segment(s), {len(tables[key].base_offsets)} batches, offsets 0.."
                f"{cached[key].log_end_offset - 1}; {lookups} answers checked; page cache "
                f"warmed at {warm[key]['gb_per_s']:.1f} GB/s",
                flush=True,
            )
        names = {key: f"seglog Log.read, {size_label(sizes[key])} log" for key in sizes}
        floor_names = {
            key: f"limit: os.pread of the batch, {size_label(sizes[key])} log" for key in sizes
        }
        contenders: dict[str, Callable[[], object]] = {}
        for key in sizes:
            contenders[names[key]] = lambda k=key: lookup_reads(
                logs[k], offsets[k], LOOKUP_MAX_BYTES
            )
            contenders[floor_names[key]] = lambda k=key: lookup_preads(targets[k])
        expected_by_name = {names[k]: expected_bytes[k] for k in sizes} | {
            floor_names[k]: expected_bytes[k] for k in sizes
        }

        def check(name: str, result: object) -> None:
            if result != expected_by_name[name]:
                expected = expected_by_name[name]
                raise AssertionError(f"{name} read {result} bytes, expected {expected}")

        # Samples are short (~0.4 s): twice the rounds, so one burst of co-tenant noise cannot
        # move a median.
        samples = measure_interleaved(
            contenders, repeat=2 * repeat, warmup=1, min_sample_s=min_sample_s, check=check
        )
    finally:
        for fd in fds:
            os.close(fd)
        for log in logs.values():
            log.close()
    rows = []
    for key, target in sizes.items():
        label = f"{size_label(target)} log"
        subset = {names[key]: samples[names[key]], floor_names[key]: samples[floor_names[key]]}
        rows += rows_from_samples(
            "lookup", label, subset, records=lookups, nbytes=expected_bytes[key]
        )
    add_ratios(rows, names["small"], [names["big"]])  # small speed / big speed = big/small time
    for key in sizes:
        add_ratios(rows, names[key], [floor_names[key]])
    by_name = {row.contender: row for row in rows}
    small = by_name[names["small"]]
    ratio = {clock: small.ratios[names["big"]][clock] for clock in ("wall", "cpu")}
    summary: dict[str, Any] = {
        "lookups": lookups,
        "max_bytes": LOOKUP_MAX_BYTES,
        "seed": LOOKUP_SEED,
        "goal": f"big / small time per lookup <= {LOOKUP_GOAL}",
        "ratio_big_over_small_wall": ratio["wall"],
        "ratio_big_over_small_cpu": ratio["cpu"],
        "is_met": ratio["wall"] <= LOOKUP_GOAL and ratio["cpu"] <= LOOKUP_GOAL,
        "page_cache_warm_read": warm,
        "logs": {
            key: {
                "directory": str(cached[key].directory),
                "bytes": cached[key].total_bytes,
                "segments": cached[key].segments,
                "batches": len(tables[key].base_offsets),
                "log_end_offset": cached[key].log_end_offset,
                "was_built": cached[key].was_built,
                "build_s": cached[key].build_s,
                "us_per_lookup_wall": _per_call_us(by_name[names[key]].wall, lookups),
                "us_per_lookup_cpu": _per_call_us(by_name[names[key]].cpu, lookups),
                "floor_us_per_lookup_wall": _per_call_us(by_name[floor_names[key]].wall, lookups),
            }
            for key in sizes
        },
    }
    return rows, summary


def _per_call_us(spread: Spread, calls: int) -> dict[str, float]:
    """Microseconds per call of a sample spread (seconds per ``calls`` calls)."""
    scale = 1e6 / calls
    return {"median": spread.median * scale, "min": spread.min * scale, "max": spread.max * scale}


def lookup_table(rows: Sequence[Row], lookups: int) -> str:
    """Markdown: µs per lookup (wall, cpu) of each log, seglog beside the pread floor."""
    lines = [
        "| log | contender | µs/lookup wall | µs/lookup cpu | ratio |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        wall = Spread(*(v * 1e6 / lookups for v in (row.wall.median, row.wall.min, row.wall.max)))
        cpu = Spread(*(v * 1e6 / lookups for v in (row.cpu.median, row.cpu.min, row.cpu.max)))
        ratios = []
        for peer, r in row.ratios.items():
            if peer.startswith("limit"):
                ratios.append(
                    f"{format_ratio(1 / r['wall'])} the floor's time "
                    f"(cpu {format_ratio(1 / r['cpu'])})"
                )
            else:
                ratios.append(
                    f"big ÷ small time: **{format_ratio(r['wall'])}** wall, "
                    f"**{format_ratio(r['cpu'])}** cpu (goal <= {LOOKUP_GOAL})"
                )
        lines.append(
            f"| {row.config} | {row.contender} | {_spread(wall, '{:.2f}')} "
            f"| {_spread(cpu, '{:.2f}')} | {'; '.join(ratios)} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# part 3: recovery
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecoveryLog:
    """The log built for the recovery benchmark."""

    directory: Path
    config: LogConfig
    log_end_offset: int
    segment_bases: list[int]
    segment_sizes: list[int]
    segment_records: list[int]


def build_recovery_log(
    source: SourceBatches, directory: Path, segment_bytes: int, segments: int
) -> RecoveryLog:
    """A log of ``segments`` nearly full segments, closed cleanly."""
    config = log_config(segment_bytes)
    log = Log.open(directory, TOPIC_PARTITION, config, clock=SystemClock())
    records_per_segment: list[int] = [0]
    for chunk, records in chunk_stream(source, BUILD_CHUNK_BATCHES):
        active = log.active_segment
        if active.size + len(chunk) > segment_bytes:  # this append would roll
            if len(log.segments) == segments:
                break
            records_per_segment.append(0)
        log.append(chunk)
        records_per_segment[-1] += records
    built = RecoveryLog(
        directory,
        config,
        log.log_end_offset,
        [s.base_offset for s in log.segments],
        [s.size for s in log.segments],
        records_per_segment,
    )
    log.close()
    if len(built.segment_bases) != segments:
        raise AssertionError(f"built {len(built.segment_bases)} segments, wanted {segments}")
    return built


FULL_RECOVERY = "seglog open, unclean, recovery_point=0 (full recovery)"
TAIL_RECOVERY = "seglog open, unclean, recovery_point=last segment's base"
CLEAN_OPEN = "seglog open, clean shutdown (no recovery)"
LIMIT_READ = "limit: read the .log files (1 MiB os.readv)"
LIMIT_READ_CRC = "limit: read + crc32c of each batch (Python header walk)"


def bench_recovery(built: RecoveryLog, repeat: int) -> tuple[list[Row], dict[str, Any]]:
    """Time full, tail and no recovery against reading (and CRC-checking) the same files."""
    total_bytes = sum(built.segment_sizes)
    total_records = built.log_end_offset
    last_base = built.segment_bases[-1]
    modes: dict[str, tuple[int, bool]] = {
        FULL_RECOVERY: (0, False),
        TAIL_RECOVERY: (last_base, False),
        CLEAN_OPEN: (built.log_end_offset, True),
    }
    # What a correct recovery reads: every segment from the one holding the recovery point.
    expected_read = {
        FULL_RECOVERY: (total_bytes, len(built.segment_bases)),
        TAIL_RECOVERY: (built.segment_sizes[-1], 1),
        CLEAN_OPEN: (0, 0),
    }
    paths = log_files(built.directory)
    read_buffer = aligned_buffer(MIB)
    whole_buffer = aligned_buffer(max(built.segment_sizes))

    def opener(recovery_point: int, clean: bool) -> Callable[[], Log]:
        return lambda: Log.open(
            built.directory,
            TOPIC_PARTITION,
            built.config,
            clock=SystemClock(),
            recovery_point=recovery_point,
            had_clean_shutdown=clean,
        )

    contenders: dict[str, Callable[[], object]] = {
        name: opener(point, clean) for name, (point, clean) in modes.items()
    }
    contenders[LIMIT_READ] = lambda: read_files(paths, read_buffer)
    contenders[LIMIT_READ_CRC] = lambda: read_and_crc_files(paths, whole_buffer)
    batch_count = len(scan_batch_table(built.directory).base_offsets)

    # Untimed pass: what each open reads (engine's count and the kernel's rchar).
    measured: dict[str, dict[str, Any]] = {}
    for name in modes:
        before = rchar()
        log = contenders[name]()
        read_bytes = rchar() - before
        assert isinstance(log, Log)
        report = log.load_report
        log.close()
        expected_bytes, expected_segments = expected_read[name]
        measured[name] = {
            "bytes_read_for_recovery": report.bytes_read_for_recovery,
            "rchar_bytes": read_bytes,
            "segments_recovered": len(report.recovered),
            "bytes_from_recovery_point": expected_bytes,
            "ratio_bytes_read_to_bytes_from_recovery_point": (
                report.bytes_read_for_recovery / expected_bytes if expected_bytes else None
            ),
            "rchar_ratio": read_bytes / expected_bytes if expected_bytes else None,
            "truncated_bytes": report.truncated_bytes,
            "is_ok": report.bytes_read_for_recovery == expected_bytes
            and len(report.recovered) == expected_segments
            and report.truncated_bytes == 0,
        }

    def check(name: str, result: object) -> None:
        if isinstance(result, Log):
            try:
                report = result.load_report
                expected_bytes, expected_segments = expected_read[name]
                if (
                    result.log_end_offset != built.log_end_offset
                    or report.bytes_read_for_recovery != expected_bytes
                    or len(report.recovered) != expected_segments
                    or report.truncated_bytes
                ):
                    raise AssertionError(f"{name}: unexpected load: {report.summary()}")
            finally:
                result.close()
        elif name == LIMIT_READ and result != total_bytes:
            raise AssertionError(f"{name} read {result} bytes, expected {total_bytes}")
        elif name == LIMIT_READ_CRC and result != batch_count:
            raise AssertionError(f"{name} checked {result} batches, expected {batch_count}")

    # An open takes 10-500 ms and must be closed after each call: one call per sample, more
    # rounds instead.
    samples = measure_interleaved(
        contenders, repeat=2 * repeat, warmup=1, min_sample_s=0.0, check=check
    )
    label = f"{len(built.segment_bases)} x {size_label(built.config.segment_bytes)}"
    scanned = {
        FULL_RECOVERY: (total_records, total_bytes),
        TAIL_RECOVERY: (built.segment_records[-1], built.segment_sizes[-1]),
        CLEAN_OPEN: (0, 0),
        LIMIT_READ: (total_records, total_bytes),
        LIMIT_READ_CRC: (total_records, total_bytes),
    }
    rows = []
    for name, s in samples.items():
        records, nbytes = scanned[name]
        rows += rows_from_samples("recovery", label, {name: s}, records=records, nbytes=nbytes)
    for name in (FULL_RECOVERY, TAIL_RECOVERY):
        add_ratios(rows, name, [LIMIT_READ, LIMIT_READ_CRC])
    by_name = {row.contender: row for row in rows}
    for name, entry in measured.items():
        row = by_name[name]
        entry["time_s_wall"] = dataclasses.asdict(row.wall)
        entry["time_s_cpu"] = dataclasses.asdict(row.cpu)
        if scanned[name][1]:
            entry["scan_mb_per_s_wall"] = dataclasses.asdict(row.mb_per_s("wall"))
            entry["scan_mb_per_s_cpu"] = dataclasses.asdict(row.mb_per_s("cpu"))
            entry["speed_vs_limits"] = row.ratios
    summary = {
        "segments": len(built.segment_bases),
        "segment_bytes": built.config.segment_bytes,
        "bytes": total_bytes,
        "records": total_records,
        "batches": batch_count,
        "last_segment_bytes": built.segment_sizes[-1],
        "modes": measured,
        "limits_mb_per_s_wall": {
            name: dataclasses.asdict(by_name[name].mb_per_s("wall"))
            for name in (LIMIT_READ, LIMIT_READ_CRC)
        },
        "is_met": all(m["is_ok"] for m in measured.values()),
    }
    return rows, summary


def recovery_table(rows: Sequence[Row], summary: dict[str, Any]) -> str:
    """Markdown: time, bytes read and scan speed of each open beside the read floors."""
    lines = [
        "| contender | time ms wall | time ms cpu | bytes read (engine) | rchar | bytes from "
        "recovery point | read ÷ from RP | MB/s wall | MB/s cpu | speed vs limits (wall) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        wall = Spread(row.wall.median * 1e3, row.wall.min * 1e3, row.wall.max * 1e3)
        cpu = Spread(row.cpu.median * 1e3, row.cpu.min * 1e3, row.cpu.max * 1e3)
        mode = summary["modes"].get(row.contender)
        if mode is not None:
            ratio = mode["ratio_bytes_read_to_bytes_from_recovery_point"]
            read = (
                f"{mode['bytes_read_for_recovery'] / MB:.1f} MB "
                f"| {mode['rchar_bytes'] / MB:.1f} MB "
                f"| {mode['bytes_from_recovery_point'] / MB:.1f} MB "
                f"| {'n/a' if ratio is None else f'**{ratio:.3f}**'}"
            )
        else:
            read = f"{row.bytes / MB:.1f} MB | | | "
        speed = (
            f"{_spread(row.mb_per_s('wall'), '{:.0f}')} | {_spread(row.mb_per_s('cpu'), '{:.0f}')}"
            if row.bytes
            else " | "
        )
        vs = "; ".join(
            f"{format_ratio(r['wall'])} of {peer.split(':')[1].split('(')[0].strip()}"
            for peer, r in row.ratios.items()
        )
        lines.append(
            f"| {row.contender} | {_spread(wall, '{:.1f}')} | {_spread(cpu, '{:.1f}')} "
            f"| {read} | {speed} | {vs} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------


def invocation(argv: Sequence[str] | None) -> str:
    """The command line that ran this process, as one would type it in the repository root."""
    root = Path(__file__).resolve().parent.parent
    python = Path(sys.executable)
    if python.is_relative_to(root):
        python = python.relative_to(root)
    entry = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "bench_storage"
    if entry not in ("run_all", "bench_storage"):
        entry = "bench_storage"
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join([str(python), "-m", f"bench.{entry}", *args])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unknown ones (meant for another benchmark of ``run_all``) are ignored."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=256.0, help="MB appended per sample")
    parser.add_argument("--small-mb", type=float, default=64.0, help="MiB of the small log")
    parser.add_argument("--big-gb", type=float, default=4.0, help="GiB of the big log")
    parser.add_argument("--lookups", type=int, default=20_000, help="random lookups per sample")
    parser.add_argument("--recovery-segments", type=int, default=16)
    parser.add_argument("--recovery-segment-mb", type=float, default=64.0, help="MiB")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per comparison")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: a few MB everywhere, 1 round"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where samples are written")
    parser.add_argument("--skip-append", action="store_true")
    parser.add_argument("--skip-lookup", action="store_true")
    parser.add_argument("--skip-recovery", action="store_true")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"bench_storage: ignoring options {unknown}", file=sys.stderr)
    if args.quick:
        args.size_mb, args.small_mb, args.big_gb = 4.0, 0.5, 8 / 1024
        args.lookups, args.recovery_segments, args.recovery_segment_mb = 500, 4, 0.5
        args.repeat = 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the storage benchmark, print Markdown tables and write JSON to bench/results/."""
    args = parse_args(argv)
    info = machine_info()
    info["source"] = source_state(
        ("src/seglog/engine", "src/seglog/storage", "src/seglog/format", "src/seglog/core")
    )
    command = invocation(argv)
    print(
        f"# seglog storage benchmark: {info['date_utc']} UTC, {info['cpu_count']} CPUs, "
        f"load {info['loadavg']}"
    )
    print(f"{args.repeat} timed rounds, medians [min..max]", flush=True)
    source_mb = 4.0 if args.quick else 100.0  # the segments bench_format caches too
    segment = load_segment(source_mb, VALUE_BYTES, CompressionType.NONE)
    source = producer_batches(segment.data, segment.path.stem)
    print(
        f"source: {segment.path.name}: {len(source.batches)} batches of ~"
        f"{len(segment.data) // len(source.batches)} B, {segment.record_count} records of "
        f"{VALUE_BYTES} B values, uncompressed",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-storage-", dir=args.workdir))
    payload: dict[str, Any] = {"command": command, "args": vars(args), "machine": info}
    rows: list[Row] = []
    goals: dict[str, Any] = {}
    try:
        if not args.skip_append:
            alt_segment = 2 * MIB if args.quick else 64 * MIB
            append_rows, summary = bench_append(
                source,
                int(args.size_mb * MB),
                (1, 4, 16, 64),  # 64 x 16 KiB = max.request.size
                (GIB, alt_segment),
                workdir,
                args.repeat,
            )
            rows += append_rows
            payload["append"] = summary
            goals["append"] = summary["results"]
            print("\n## append\n")
            print(append_table(append_rows))
        if not args.skip_lookup:
            big_segment = 2 * MIB if args.quick else GIB
            lookup_rows, summary = bench_lookups(
                source,
                int(args.small_mb * MIB),
                int(args.big_gb * GIB),
                big_segment,
                args.lookups,
                args.repeat,
                min_sample_s=0.02 if args.quick else 0.25,
            )
            rows += lookup_rows
            payload["lookup"] = summary
            goals["lookup"] = {
                "goal": summary["goal"],
                "ratio_wall": summary["ratio_big_over_small_wall"],
                "ratio_cpu": summary["ratio_big_over_small_cpu"],
                "is_met": summary["is_met"],
            }
            print("\n## random offset lookups\n")
            print(lookup_table(lookup_rows, args.lookups))
        if not args.skip_recovery:
            segment_bytes = int(args.recovery_segment_mb * MIB)
            print(
                f"\nrecovery: building {args.recovery_segments} x {size_label(segment_bytes)}",
                flush=True,
            )
            built = build_recovery_log(
                source,
                workdir / "recovery" / str(TOPIC_PARTITION),
                segment_bytes,
                args.recovery_segments,
            )
            recovery_rows, summary = bench_recovery(built, args.repeat)
            rows += recovery_rows
            payload["recovery"] = summary
            goals["recovery"] = {
                "goal": "bytes read for recovery / bytes from the recovery point's segment == 1.0",
                "ratios": {
                    name: m["ratio_bytes_read_to_bytes_from_recovery_point"]
                    for name, m in summary["modes"].items()
                },
                "is_met": summary["is_met"],
            }
            print("\n## recovery after an unclean shutdown\n")
            print(recovery_table(recovery_rows, summary))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n## all rows\n")
    print(markdown_table(rows))
    print(f"\ngoals: {json.dumps(goals)}")
    info["loadavg_end"] = list(os.getloadavg())
    payload["goal"] = goals
    payload["rows"] = [row.to_json() for row in rows]
    path = write_results("storage", payload)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
