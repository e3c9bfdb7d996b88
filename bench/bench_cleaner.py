"""Log cleaner benchmark: one full cleaning round of a compacted 1 GiB log beside two floors.

What the issue asks: "cleaning a 1 GiB log (1 M keys, 10 updates each, 1% tombstones; 100 B and
1 KiB values), in MB/s of log processed, next to a plain copy of the same bytes (read, write,
fsync) and aiokafka merely decoding the same log, all in one run. Goals: >= 30% of the copy's
throughput; faster than aiokafka's decode alone; peak memory <= dedupe buffer + 128 MiB;
<= 24 bytes per key in the map."

**Workload.** Per value size (100 B and 1 KiB), a compacted topic (``cleanup.policy=compact``,
``segment.bytes`` 256 MiB by default: a 1 GiB log is then four segments, so a round has
several groups and several ``.cleaned`` files to swap in, as a long-lived compacted topic
has; ``--segment-mb`` changes it) is written once per run through seglog's ``LogManager``:
keys ``b"key%09d"``; every key updated ``UPDATES`` (10) times, in rounds, each round a new
random permutation of all keys; in the last round 1 % of the keys (chosen at random) get a
tombstone (value ``None``); values are printable random bytes of exactly the value size;
CreateTime timestamps advancing 1 ms every 64 records. Records go into uncompressed 16 KiB
batches built by seglog's ``BatchBuilder`` as a producer with default settings builds them
(base offset 0 in each), appended to the log 4 batches per call (the log assigns offsets, so
record ``i`` gets offset ``i``); then the log is rolled (an empty active segment: the whole
log is cleanable) and the manager closed cleanly. The key count is chosen so the log is
~99 % of ``--size-mb`` MiB (default 1024: 1 GiB): ``keys = 0.99 * size / (10 * bytes per
record)``, bytes per record measured on one built batch (the exact counts are printed).
``--quick``: a 16 MiB log in 4 MiB segments, 1 round.

**Contenders**, interleaved round-robin (round ``r`` starts with contender ``r mod 3``), one
untimed warm-up round, then ``--repeat`` (3) timed rounds; median [min..max] of wall
(``perf_counter``) and cpu (``process_time``) seconds; MB = 10^6 bytes of log processed:

1. *seglog clean*: ``LogManager.clean_once()`` on a fresh copy of the dirty log directory
   (copied with ``shutil.copytree``, then ``os.sync()``, then opened with ``open_log_dirs``;
   all outside the clock), timed end to end: pre-pass, offset map build, every group cleaned,
   fsynced and swapped in, the retention pass. MB/s = ``CleanerStats.bytes_read`` / s (the
   log's bytes; the round reads them twice, once for the map, once to clean). After the
   sample the manager is closed and the directory removed and ``os.sync()``ed, outside the
   clock. The warm-up round's result is checked record by record with aiokafka: the cleaned
   log must hold exactly the last round's offsets, in order, with their keys, and exactly the
   tombstones written (the first clean keeps tombstones; it stamps their delete horizon).
2. *copy*: each non-empty ``.log`` file read with ``os.readv`` in 1 MiB chunks into a
   page-aligned buffer, written with ``os.write`` to a new file in a fresh directory, each new
   file fsynced, then the directory fsynced (the floor of any rewrite that reads every byte
   and writes every byte durably; the cleaner writes only what it keeps).
3. *aiokafka decode*: each ``.log`` file read into a ``bytes`` (warm page cache, ~0.1 s per
   GB), then aiokafka's Cython ``MemoryRecords`` -> ``DefaultRecordBatch`` walk: every batch's
   CRC checked (``validate_crc()``, as the cleaner checks every batch's CRC), every record's
   ``offset``, ``key`` and ``value`` read.

All three read warm files: the source log is read once after it is written, and the clean's
copy was just written (and synced) when the clean starts.

**Memory.** One more clean, of a fresh copy, in a fresh child process
(``python -m bench.bench_cleaner --child-memory DIR``): the child reads its RSS after its
imports (the baseline), runs ``open_log_dirs`` + ``clean_once()`` + ``close()``, and reports
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at the end (the peak, which includes file pages
mapped into the process), ``VmHWM`` (the same peak, from ``/proc/self/status``), peak -
baseline, and, sampled every 5 ms by a thread, the peaks of ``RssAnon`` and ``RssFile``. Goal:
peak - baseline <= ``log.cleaner.dedupe.buffer.size`` (128 MiB) + 128 MiB. The numba kernels
are loaded from their on-disk cache during the child's clean, so that cost counts against the
clean. The child is started through ``/bin/sh -c '...; exit $?'`` (sh forks, then execs
Python): Linux carries ``ru_maxrss`` across ``exec``, so a child exec'd straight from this
(large) process would report this process's RSS as its own peak; the shell in between holds it
instead.

**Map size.** From the offset map the clean used: ``OffsetMap.memory_bytes / slots`` and the
total ``nbytes`` of the numpy arrays behind its ``hash0``/``hash1``/``stored`` columns (each
distinct owning array once: separate columns or one table) / ``slots`` (goal: <= 24 bytes per
key).

Run: ``.venv/bin/python -m bench.bench_cleaner [--size-mb 1024] [--segment-mb 256]
[--repeat 3] [--values 100,1024] [--workdir DIR] [--quick]``. Scratch files go to a fresh
``seglog-bench-cleaner-*`` directory under ``--workdir`` (default: the system temporary
directory, as ``bench_storage``) and are removed at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: python bench/bench_cleaner.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_storage import aligned_buffer, remove_tree, size_label
from bench.common import (
    BASE_TIMESTAMP_MS,
    MB,
    PRODUCER_BATCH_BYTES,
    Row,
    Samples,
    Spread,
    add_ratios,
    format_ratio,
    machine_info,
    markdown_table,
    rows_from_samples,
    source_state,
    write_results,
)
from seglog.engine.cleaning.cleaner import CleanerStats
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format import BatchBuilder

MIB = 1 << 20
GIB = 1 << 30
TOPIC = "bench-compacted"
PARTITION_DIR = f"{TOPIC}-0"
UPDATES = 10  # updates per key
TOMBSTONE_SHARE = 0.01  # of the keys: their last update is a tombstone
FILL = 0.99  # of --size-mb: so the log fits in whole segments of --segment-mb
APPEND_BATCHES = 4  # batches per Log.append call while generating
TIMESTAMP_EVERY = 64  # records per millisecond of CreateTime
SEED = 20261121
VALUE_POOL_BYTES = 1 << 20
READ_CHUNK = MIB  # the copy floor's read size

SEGLOG = "seglog clean"
COPY = "copy: read 1 MiB, write, fsync"
AIOKAFKA = "aiokafka decode"

GOAL_COPY_SHARE = 0.30  # seglog MB/s / copy MB/s
GOAL_AIOKAFKA = 1.0  # seglog MB/s / aiokafka MB/s, strictly above
GOAL_EXTRA_MEMORY = 128 * MIB  # peak - baseline <= dedupe buffer + this
GOAL_BYTES_PER_KEY = 24
MEASURED_SOURCES = (
    "src/seglog/engine",
    "src/seglog/core",
    "src/seglog/kernels",
    "src/seglog/storage",
    "src/seglog/format",
)


# --------------------------------------------------------------------------------------------
# the workload
# --------------------------------------------------------------------------------------------


@dataclass
class Workload:
    """A generated dirty log and what it holds."""

    value_bytes: int
    root: Path  # the log directory (log.dirs entry) holding meta.properties, topics, partition
    segment_bytes: int
    keys: int
    records: int
    tombstones: int
    batches: int
    log_files: list[Path]  # the non-empty .log files, oldest first
    segment_sizes: list[int]
    log_bytes: int
    build_s: float
    last_round: np.ndarray  # key of each offset of the last round (offset = 9 * keys + i)
    tombstone_keys: np.ndarray  # bool per key

    @property
    def label(self) -> str:
        """``100B`` or ``1KiB``."""
        return value_label(self.value_bytes)

    @property
    def partition_dir(self) -> Path:
        """The partition directory of the source log."""
        return self.root / PARTITION_DIR

    def to_json(self) -> dict[str, Any]:
        """What the workload is, JSON-ready."""
        return {
            "value_bytes": self.value_bytes,
            "segment_bytes": self.segment_bytes,
            "keys": self.keys,
            "updates_per_key": UPDATES,
            "records": self.records,
            "tombstones": self.tombstones,
            "batches": self.batches,
            "segments": len(self.log_files),
            "segment_sizes": self.segment_sizes,
            "log_bytes": self.log_bytes,
            "build_s": round(self.build_s, 3),
            "expected_records_after_clean": self.keys,
        }


def value_label(value_bytes: int) -> str:
    """``100B``, ``1KiB``."""
    return f"{value_bytes}B" if value_bytes < 1024 else f"{value_bytes // 1024}KiB"


def key_of(index: int) -> bytes:
    """The key of key number ``index``."""
    return b"key%09d" % index


def bytes_per_record(value_bytes: int) -> float:
    """Bytes one record takes in the log, batch header share included (one full batch)."""
    builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
    value = b"v" * value_bytes
    count = 0
    while builder.try_append(BASE_TIMESTAMP_MS + count // TIMESTAMP_EVERY, key_of(count), value):
        count += 1
    return len(builder.build()) / count


def keys_for(size_bytes: int, value_bytes: int) -> int:
    """Keys that make a log of about ``FILL * size_bytes`` with ``UPDATES`` updates each."""
    return max(100, int(FILL * size_bytes / (UPDATES * bytes_per_record(value_bytes))))


def generate_log(root: Path, value_bytes: int, keys: int, segment_bytes: int) -> Workload:
    """Write the dirty compacted log into the log directory ``root`` (module docstring)."""
    started = time.perf_counter()
    rng = np.random.default_rng(SEED + value_bytes)
    key_bytes = [key_of(i) for i in range(keys)]
    tombstones = max(1, round(keys * TOMBSTONE_SHARE))
    tombstone_keys = np.zeros(keys, dtype=bool)
    tombstone_keys[rng.choice(keys, tombstones, replace=False)] = True
    is_tombstone = tombstone_keys.tolist()
    pool = rng.integers(ord("a"), ord("z") + 1, VALUE_POOL_BYTES, dtype=np.uint8).tobytes()
    span = VALUE_POOL_BYTES - value_bytes
    manager = open_log_dirs([root])
    try:
        manager.create_topic(
            TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}
        )
        log = manager.get_log(TOPIC, 0)
        pending: list[bytes] = []
        batches = 0
        index = 0
        builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
        last_round = np.empty(0, dtype=np.int64)
        for update in range(UPDATES):
            order = rng.permutation(keys)
            last = update == UPDATES - 1
            if last:
                last_round = order
            for k in order.tolist():
                timestamp = BASE_TIMESTAMP_MS + index // TIMESTAMP_EVERY
                if last and is_tombstone[k]:
                    value = None
                else:
                    at = (index * 7919) % span
                    value = pool[at : at + value_bytes]
                if not builder.try_append(timestamp, key_bytes[k], value):
                    pending.append(builder.build())
                    batches += 1
                    if len(pending) == APPEND_BATCHES:
                        log.append(b"".join(pending))
                        pending.clear()
                    builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
                    builder.append(timestamp, key_bytes[k], value)
                index += 1
        pending.append(builder.build())
        batches += 1
        log.append(b"".join(pending))
        if log.log_end_offset != keys * UPDATES:
            raise AssertionError(f"log end offset {log.log_end_offset}, wrote {keys * UPDATES}")
        log.roll()  # the active segment is never cleaned: leave it empty
    finally:
        manager.close()
    os.sync()
    files = [p for p in sorted((root / PARTITION_DIR).glob("*.log")) if p.stat().st_size]
    return Workload(
        value_bytes=value_bytes,
        root=root,
        segment_bytes=segment_bytes,
        keys=keys,
        records=keys * UPDATES,
        tombstones=tombstones,
        batches=batches,
        log_files=files,
        segment_sizes=[p.stat().st_size for p in files],
        log_bytes=sum(p.stat().st_size for p in files),
        build_s=time.perf_counter() - started,
        last_round=last_round,
        tombstone_keys=tombstone_keys,
    )


def warm(paths: Sequence[Path]) -> int:
    """Read every file once (page cache), in 1 MiB chunks; the bytes read."""
    buffer = aligned_buffer(READ_CHUNK)
    views = [memoryview(buffer)]
    total = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            while n := os.readv(fd, views):
                total += n
        finally:
            os.close(fd)
    views[0].release()
    buffer.close()
    return total


def fresh_copy(workload: Workload, target: Path) -> Path:
    """Copy the source log directory to ``target`` (not timed) and let writeback finish."""
    shutil.copytree(workload.root, target)
    os.sync()
    return target


# --------------------------------------------------------------------------------------------
# contenders
# --------------------------------------------------------------------------------------------


def copy_files(paths: Sequence[Path], out_dir: Path, buffer: Any) -> int:
    """Read each file in 1 MiB chunks, write it to ``out_dir``, fsync it; fsync the dir."""
    view = memoryview(buffer)
    views = [view]
    total = 0
    for path in paths:
        src = os.open(path, os.O_RDONLY)
        dst = os.open(out_dir / path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            while n := os.readv(src, views):
                written = 0
                while written < n:
                    written += os.write(dst, view[written:n])
                total += n
            os.fsync(dst)
        finally:
            os.close(src)
            os.close(dst)
    dir_fd = os.open(out_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return total


def decode_aiokafka(paths: Sequence[Path]) -> int:
    """aiokafka (Cython): CRC of every batch, offset/key/value of every record; the count."""
    from aiokafka.record.memory_records import MemoryRecords

    count = 0
    for path in paths:
        next_batch = MemoryRecords(path.read_bytes()).next_batch
        while (batch := next_batch()) is not None:
            if not batch.validate_crc():
                raise AssertionError(f"aiokafka: CRC mismatch in {path}")
            for record in batch:
                offset = record.offset
                key = record.key
                value = record.value
                count += 1
    del offset, key, value
    return count


def check_cleaned(workload: Workload, partition_dir: Path) -> dict[str, int]:
    """Fail unless the cleaned log holds exactly the last round, checked with aiokafka."""
    from aiokafka.record.memory_records import MemoryRecords

    first = (UPDATES - 1) * workload.keys
    expected_offset = first
    last_round = workload.last_round.tolist()
    tombstone = workload.tombstone_keys.tolist()
    tombstones = empty_batches = 0
    for path in sorted(partition_dir.glob("*.log")):
        next_batch = MemoryRecords(path.read_bytes()).next_batch
        while (batch := next_batch()) is not None:
            if not batch.validate_crc():
                raise AssertionError(f"cleaned log: CRC mismatch in {path}")
            had_record = False
            for record in batch:
                had_record = True
                offset = record.offset
                if offset != expected_offset:
                    raise AssertionError(
                        f"cleaned log: offset {offset}, expected {expected_offset}"
                    )
                k = last_round[offset - first]
                if record.key != key_of(k):
                    raise AssertionError(f"cleaned log: wrong key at offset {offset}")
                if (record.value is None) != tombstone[k]:
                    raise AssertionError(f"cleaned log: tombstone mismatch at offset {offset}")
                tombstones += record.value is None
                expected_offset += 1
            empty_batches += not had_record
    if expected_offset != first + workload.keys or tombstones != workload.tombstones:
        raise AssertionError(
            f"cleaned log: {expected_offset - first} records and {tombstones} tombstones, "
            f"expected {workload.keys} and {workload.tombstones}"
        )
    return {"records": workload.keys, "tombstones": tombstones, "empty_batches": empty_batches}


def offset_map_facts(manager: LogManager) -> dict[str, Any]:
    """Size of the offset map the manager's cleaner used: bytes per slot, by two measures."""
    cleaners = getattr(manager.log_cleaner, "_cleaners", [])
    if not cleaners:
        return {}
    offset_map = cleaners[0].offset_map
    # The memory behind the map's columns (views of one table, or separate arrays): each
    # distinct owning array counted once.
    owners: dict[int, np.ndarray] = {}
    for column in (offset_map.hash0, offset_map.hash1, offset_map.stored):
        owner = column
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        owners[id(owner)] = owner
    nbytes = sum(a.nbytes for a in owners.values())
    return {
        "memory_bytes": offset_map.memory_bytes,
        "slots": offset_map.slots,
        "limit": offset_map.limit,
        "keys": offset_map.size,
        "load_factor": offset_map.load_factor,
        "uses_numba": offset_map.uses_numba,
        "memory_bytes_per_slot": offset_map.memory_bytes / offset_map.slots,
        "arrays": len(owners),
        "arrays_nbytes": nbytes,
        "arrays_nbytes_per_slot": nbytes / offset_map.slots,
    }


@dataclass
class Contender:
    """A timed call with untimed set-up and tear-down around each sample."""

    run: Callable[[Any], object]
    setup: Callable[[], Any] = lambda: None
    teardown: Callable[[Any, object, bool], None] = lambda state, result, timed: None


def measure_rounds(
    contenders: dict[str, Contender], *, repeat: int, warmup: int = 1
) -> dict[str, Samples]:
    """One call per sample, contenders round-robin (round ``r`` starts with ``r mod n``).

    As :func:`bench.common.measure_interleaved`, but each sample gets a set-up and a
    tear-down outside the clock (a fresh copy of the dirty log for the clean; removing what
    the sample wrote and syncing, for every contender). A ``gc.collect()`` runs before each
    sample, outside the clock.
    """
    names = list(contenders)
    samples = {name: Samples() for name in names}
    for round_index in range(warmup + repeat):
        shift = round_index % len(names)
        timed = round_index >= warmup
        for name in names[shift:] + names[:shift]:
            contender = contenders[name]
            state = contender.setup()
            gc.collect()
            cpu0 = time.process_time()
            wall0 = time.perf_counter()
            result = contender.run(state)
            wall1 = time.perf_counter()
            cpu1 = time.process_time()
            contender.teardown(state, result, timed)
            print(
                f"  round {round_index}{'' if timed else ' (warm-up)'}: {name}: "
                f"{wall1 - wall0:.2f} s wall, {cpu1 - cpu0:.2f} s cpu",
                file=sys.stderr,
                flush=True,
            )
            if timed:
                samples[name].wall_s.append(wall1 - wall0)
                samples[name].cpu_s.append(cpu1 - cpu0)
    return samples


@dataclass
class ConfigResult:
    """Everything measured for one value size."""

    workload: Workload
    rows: list[Row]
    clean_stats: list[dict[str, Any]] = field(default_factory=list)  # timed rounds
    check: dict[str, int] = field(default_factory=dict)
    offset_map: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)


def bench_config(workload: Workload, workdir: Path, repeat: int) -> ConfigResult:
    """Time the three contenders on one workload, then measure a clean's memory."""
    paths = workload.log_files
    counter = iter(range(1 << 30))
    result = ConfigResult(workload, [])
    buffer = aligned_buffer(READ_CHUNK)

    def clean_setup() -> tuple[Path, LogManager]:
        target = fresh_copy(workload, workdir / f"clean-{next(counter)}")
        return target, open_log_dirs([target])

    def clean_run(state: tuple[Path, LogManager]) -> object:
        return state[1].clean_once()

    def clean_teardown(state: tuple[Path, LogManager], outcome: object, timed: bool) -> None:
        target, manager = state
        try:
            assert isinstance(outcome, list)
            if len(outcome) != 1 or outcome[0].stats is None or outcome[0].error:
                raise AssertionError(f"clean_once: {[r.to_json() for r in outcome]}")
            stats: CleanerStats = outcome[0].stats
            if (
                stats.is_partial
                or stats.bytes_read != workload.log_bytes
                or stats.messages_read != workload.records
                or stats.messages_written != workload.keys
            ):
                raise AssertionError(f"unexpected round: {stats.to_json()}")
            if not result.check:
                result.check = check_cleaned(workload, target / PARTITION_DIR)
                result.offset_map = offset_map_facts(manager)
            if timed:
                result.clean_stats.append(stats.to_json())
        finally:
            manager.close()
            remove_tree(target)

    def copy_setup() -> Path:
        target = workdir / f"copy-{next(counter)}"
        target.mkdir()
        return target

    def copy_teardown(target: Path, outcome: object, timed: bool) -> None:
        remove_tree(target)
        if outcome != workload.log_bytes:
            raise AssertionError(f"copy wrote {outcome} bytes, expected {workload.log_bytes}")

    def decode_teardown(_state: object, outcome: object, timed: bool) -> None:
        if outcome != workload.records:
            raise AssertionError(f"aiokafka decoded {outcome} records, not {workload.records}")

    contenders = {
        SEGLOG: Contender(clean_run, clean_setup, clean_teardown),
        COPY: Contender(
            lambda target: copy_files(paths, target, buffer), copy_setup, copy_teardown
        ),
        AIOKAFKA: Contender(lambda _state: decode_aiokafka(paths), teardown=decode_teardown),
    }
    warm(paths)
    samples = measure_rounds(contenders, repeat=repeat)
    notes = {
        SEGLOG: f"MB = CleanerStats.bytes_read; map + clean + fsync + swap, {workload.keys} keys",
        COPY: f"{len(paths)} files, each fsynced",
        AIOKAFKA: "read file + CRC + offset/key/value per record",
    }
    result.rows = rows_from_samples(
        "cleaner",
        workload.label,
        samples,
        records=workload.records,
        nbytes=workload.log_bytes,
        notes=notes,
    )
    add_ratios(result.rows, SEGLOG, [COPY, AIOKAFKA])
    print(f"  memory: one clean in a child process ({workload.label})", file=sys.stderr)
    target = fresh_copy(workload, workdir / f"memory-{next(counter)}")
    try:
        result.memory = measure_memory_in_child(target)
    finally:
        remove_tree(target)
    return result


# --------------------------------------------------------------------------------------------
# memory: one clean in a child process
# --------------------------------------------------------------------------------------------


def _status_kib() -> dict[str, int]:
    """The ``kB`` fields of ``/proc/self/status``."""
    out: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            name, _, rest = line.partition(":")
            parts = rest.split()
            if len(parts) == 2 and parts[1] == "kB":
                out[name] = int(parts[0])
    return out


def child_memory(root: Path) -> dict[str, Any]:
    """In a fresh process: RSS after imports, then one clean; the peaks (bytes)."""
    baseline = _status_kib()
    baseline_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peaks = {"RssAnon": 0, "RssFile": 0, "VmRSS": 0}
    stop = threading.Event()

    def sample() -> None:
        while True:
            status = _status_kib()
            for name, peak in peaks.items():
                peaks[name] = max(peak, status.get(name, 0))
            if stop.wait(0.005):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    manager = open_log_dirs([root])
    opened = _status_kib()
    dedupe_buffer = manager.broker.log_cleaner_dedupe_buffer_size
    try:
        outcome = manager.clean_once()
        elapsed = time.perf_counter() - started
        facts = offset_map_facts(manager)
    finally:
        manager.close()
    stop.set()
    sampler.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    hwm = _status_kib()["VmHWM"]
    stats = outcome[0].stats if outcome else None
    return {
        "dedupe_buffer_bytes": dedupe_buffer,  # log.cleaner.dedupe.buffer.size
        "baseline_rss_bytes": baseline["VmRSS"] * 1024,
        "baseline_rss_anon_bytes": baseline.get("RssAnon", 0) * 1024,
        "baseline_rss_file_bytes": baseline.get("RssFile", 0) * 1024,
        "baseline_maxrss_bytes": baseline_maxrss * 1024,
        "after_open_rss_bytes": opened["VmRSS"] * 1024,
        "peak_maxrss_bytes": maxrss * 1024,
        "peak_vm_hwm_bytes": hwm * 1024,
        "peak_minus_baseline_bytes": (maxrss - baseline["VmRSS"]) * 1024,
        "sampled_peak_rss_anon_bytes": peaks["RssAnon"] * 1024,
        "sampled_peak_rss_file_bytes": peaks["RssFile"] * 1024,
        "sampled_peak_vm_rss_bytes": peaks["VmRSS"] * 1024,
        "clean_s": elapsed,
        "stats": stats.to_json() if stats else None,
        "error": outcome[0].error if outcome else "nothing cleaned",
        "offset_map": facts,
    }


def measure_memory_in_child(root: Path) -> dict[str, Any]:
    """Run :func:`child_memory` in ``python -m bench.bench_cleaner --child-memory root``."""
    repo = Path(__file__).resolve().parent.parent
    completed = subprocess.run(
        # sh forks before it execs Python, so the child's ru_maxrss starts from the shell's
        # (small) RSS, not from this process's (module docstring).
        [
            "/bin/sh",
            "-c",
            '"$0" "$@"; exit $?',
            sys.executable,
            "-m",
            "bench.bench_cleaner",
            "--child-memory",
            str(root),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"memory child failed:\n{completed.stderr}")
    memory: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    if memory["error"] or memory["stats"] is None:
        raise RuntimeError(f"memory child: clean failed: {memory['error']}")
    if memory["baseline_maxrss_bytes"] > 2 * memory["baseline_rss_bytes"]:
        print(
            "WARNING: the memory child's ru_maxrss was already "
            f"{_mib(memory['baseline_maxrss_bytes'])} after its imports (inherited?)",
            file=sys.stderr,
        )
    memory["budget_bytes"] = memory["dedupe_buffer_bytes"] + GOAL_EXTRA_MEMORY
    return memory


# --------------------------------------------------------------------------------------------
# tables and goals
# --------------------------------------------------------------------------------------------


def _spread(spread: Spread, fmt: str) -> str:
    return f"{fmt.format(spread.median)} [{fmt.format(spread.min)}..{fmt.format(spread.max)}]"


def _mib(nbytes: float) -> str:
    return f"{nbytes / MIB:.0f} MiB"


def workload_table(results: Sequence[ConfigResult]) -> str:
    """Markdown: what each generated log holds."""
    lines = [
        "| config | keys | updates/key | records | tombstones | batches | log | segments "
        "| generated in |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        w = r.workload
        lines.append(
            f"| {w.label} | {w.keys:,} | {UPDATES} | {w.records:,} | {w.tombstones:,} "
            f"| {w.batches:,} | {w.log_bytes / MB:.1f} MB ({w.log_bytes / GIB:.3f} GiB) "
            f"| {len(w.log_files)} x <= {size_label(w.segment_bytes)} | {w.build_s:.0f} s |"
        )
    return "\n".join(lines)


def throughput_table(results: Sequence[ConfigResult]) -> str:
    """Markdown: MB/s of each contender and seglog's ratios."""
    lines = [
        "| config | contender | MB/s wall | MB/s cpu | s wall | seglog ÷ this, wall (cpu) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        seglog = next(row for row in r.rows if row.contender == SEGLOG)
        for row in r.rows:
            ratio = seglog.ratios.get(row.contender)
            vs = (
                f"**{format_ratio(ratio['wall'])}** ({format_ratio(ratio['cpu'])})" if ratio else ""
            )
            lines.append(
                f"| {row.config} | {row.contender} | {_spread(row.mb_per_s('wall'), '{:.0f}')} "
                f"| {_spread(row.mb_per_s('cpu'), '{:.0f}')} | {_spread(row.wall, '{:.2f}')} "
                f"| {vs} |"
            )
    return "\n".join(lines)


def stats_table(results: Sequence[ConfigResult]) -> str:
    """Markdown: the cleaner's own figures (medians over the timed rounds)."""
    lines = [
        "| config | bytes read (map; clean) | written | records read -> written | map keys "
        "| buffer utilization | size before -> after | groups | map build share |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if not r.clean_stats:
            continue
        s = r.clean_stats[0]
        index_share = Spread.of(
            [x["elapsed_index_secs"] / max(x["elapsed_secs"], 1e-9) for x in r.clean_stats]
        )
        lines.append(
            f"| {r.workload.label} | {s['map_bytes_read'] / MB:.1f}; {s['bytes_read'] / MB:.1f} "
            f"MB | {s['bytes_written'] / MB:.1f} MB | {s['messages_read']:,} -> "
            f"{s['messages_written']:,} | {s['map_keys']:,} | {100 * s['buffer_utilization']:.1f}%"
            f" | {s['size_before_bytes'] / MB:.1f} -> {s['size_after_bytes'] / MB:.1f} MB "
            f"| {s['groups']} | {_spread(index_share, '{:.0%}')} |"
        )
    return "\n".join(lines)


def memory_table(results: Sequence[ConfigResult]) -> str:
    """Markdown: the child's RSS figures and the offset map's bytes per slot."""
    lines = [
        "| config | RSS after imports (anon; file) | peak RSS: ru_maxrss (VmHWM) | peak - baseline "
        "| budget | peak RssAnon; RssFile (sampled) | map: memory_bytes / slots "
        "| map arrays nbytes / slots | map bytes / key put |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        m = r.memory
        om = m.get("offset_map") or r.offset_map
        keys = (m.get("stats") or {}).get("map_keys") or om.get("keys") or 0
        lines.append(
            f"| {r.workload.label} | {_mib(m['baseline_rss_bytes'])} "
            f"({_mib(m['baseline_rss_anon_bytes'])}; {_mib(m['baseline_rss_file_bytes'])}) "
            f"| {_mib(m['peak_maxrss_bytes'])} ({_mib(m['peak_vm_hwm_bytes'])}) "
            f"| **{_mib(m['peak_minus_baseline_bytes'])}** "
            f"| {_mib(m['budget_bytes'])} | {_mib(m['sampled_peak_rss_anon_bytes'])}; "
            f"{_mib(m['sampled_peak_rss_file_bytes'])} "
            f"| {om['memory_bytes']:,} / {om['slots']:,} = **{om['memory_bytes_per_slot']:g}** "
            f"| {om['arrays_nbytes_per_slot']:g} "
            f"| {om['memory_bytes'] / max(keys, 1):.0f} ({keys:,} keys) |"
        )
    return "\n".join(lines)


def goals(results: Sequence[ConfigResult]) -> list[dict[str, Any]]:
    """Each goal per config: the measured figure and whether it is met."""
    out: list[dict[str, Any]] = []
    for r in results:
        seglog = next(row for row in r.rows if row.contender == SEGLOG)
        copy = seglog.ratios[COPY]
        peer = seglog.ratios[AIOKAFKA]
        m = r.memory
        om = m.get("offset_map") or r.offset_map
        out += [
            {
                "config": r.workload.label,
                "goal": f"seglog clean MB/s >= {GOAL_COPY_SHARE:.0%} of the copy's (wall)",
                "ratio_wall": copy["wall"],
                "ratio_cpu": copy["cpu"],
                "is_met": copy["wall"] >= GOAL_COPY_SHARE,
            },
            {
                "config": r.workload.label,
                "goal": "seglog clean faster than aiokafka's decode alone (wall and cpu)",
                "ratio_wall": peer["wall"],
                "ratio_cpu": peer["cpu"],
                "is_met": peer["wall"] > GOAL_AIOKAFKA and peer["cpu"] > GOAL_AIOKAFKA,
            },
            {
                "config": r.workload.label,
                "goal": "peak RSS - baseline <= dedupe buffer + 128 MiB",
                "bytes": m["peak_minus_baseline_bytes"],
                "budget_bytes": m["budget_bytes"],
                "is_met": m["peak_minus_baseline_bytes"] <= m["budget_bytes"],
            },
            {
                "config": r.workload.label,
                "goal": f"<= {GOAL_BYTES_PER_KEY} bytes per key in the map",
                "memory_bytes_per_slot": om["memory_bytes_per_slot"],
                "arrays_nbytes_per_slot": om["arrays_nbytes_per_slot"],
                "is_met": max(om["memory_bytes_per_slot"], om["arrays_nbytes_per_slot"])
                <= GOAL_BYTES_PER_KEY,
            },
        ]
    return out


def goals_table(goal_list: Sequence[dict[str, Any]]) -> str:
    """Markdown: one line per goal and config."""
    lines = ["| goal | config | measured | met? |", "|---|---|---|---|"]
    for g in goal_list:
        if "ratio_wall" in g:
            measured = f"{format_ratio(g['ratio_wall'])} wall ({format_ratio(g['ratio_cpu'])} cpu)"
        elif "budget_bytes" in g:
            measured = f"{_mib(g['bytes'])} of {_mib(g['budget_bytes'])}"
        else:
            measured = (
                f"{g['memory_bytes_per_slot']:g} B/slot (arrays {g['arrays_nbytes_per_slot']:g})"
            )
        lines.append(
            f"| {g['goal']} | {g['config']} | {measured} | {'yes' if g['is_met'] else '**no**'} |"
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
    entry = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "bench_cleaner"
    if entry not in ("run_all", "bench_cleaner"):
        entry = "bench_cleaner"
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join([str(python), "-m", f"bench.{entry}", *args])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unknown ones (meant for another benchmark of ``run_all``) are ignored."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024.0, help="MiB of dirty log")
    parser.add_argument("--segment-mb", type=float, default=256.0, help="segment.bytes, MiB")
    parser.add_argument("--values", default="100,1024", help="value sizes, bytes, comma list")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    parser.add_argument("--quick", action="store_true", help="smoke run: 16 MiB log, 1 round")
    parser.add_argument("--workdir", type=Path, default=None, help="where scratch logs go")
    parser.add_argument("--child-memory", type=Path, default=None, help=argparse.SUPPRESS)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"bench_cleaner: ignoring options {unknown}", file=sys.stderr)
    if args.quick:
        args.size_mb, args.segment_mb, args.repeat = 16.0, 4.0, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cleaner benchmark, print Markdown tables and write JSON to bench/results/."""
    args = parse_args(argv)
    if args.child_memory is not None:
        print(json.dumps(child_memory(args.child_memory)), flush=True)
        return 0
    info = machine_info()
    info["source"] = source_state(MEASURED_SOURCES)
    command = invocation(argv)
    values = [int(v) for v in str(args.values).split(",") if v.strip()]
    size_bytes = int(args.size_mb * MIB)
    segment_bytes = int(args.segment_mb * MIB)
    print(
        f"# seglog log cleaner benchmark: {info['date_utc']} UTC, {info['cpu_count']} CPUs, "
        f"load {info['loadavg']}"
    )
    print(
        f"{args.repeat} timed rounds after 1 warm-up, medians [min..max]; log ~"
        f"{size_label(size_bytes)}, segment.bytes {size_label(segment_bytes)}",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-cleaner-", dir=args.workdir))
    results: list[ConfigResult] = []
    try:
        for value_bytes in values:
            keys = keys_for(size_bytes, value_bytes)
            print(
                f"\n{value_label(value_bytes)}: generating {keys:,} keys x {UPDATES} updates",
                file=sys.stderr,
                flush=True,
            )
            source = workdir / f"source-{value_bytes}"
            workload = generate_log(source, value_bytes, keys, segment_bytes)
            print(
                f"{workload.label}: {workload.keys:,} keys x {UPDATES} = {workload.records:,} "
                f"records, {workload.tombstones:,} tombstones, {workload.batches:,} batches, "
                f"{workload.log_bytes / MB:.1f} MB in {len(workload.log_files)} segments "
                f"(built in {workload.build_s:.1f} s)",
                flush=True,
            )
            results.append(bench_config(workload, workdir, args.repeat))
            shutil.rmtree(source, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    goal_list = goals(results)
    print("\n## workload\n")
    print(workload_table(results))
    print("\n## throughput (MB of log processed per second)\n")
    print(throughput_table(results))
    print("\n## the cleaner's own figures\n")
    print(stats_table(results))
    print("\n## memory (one clean in a fresh child process)\n")
    print(memory_table(results))
    print("\n## goals\n")
    print(goals_table(goal_list))
    rows = [row for r in results for row in r.rows]
    print("\n## all rows\n")
    print(markdown_table(rows))
    info["loadavg_end"] = list(os.getloadavg())
    # Others may edit the tree while this runs: say so when the measured sources changed.
    end_files = source_state(MEASURED_SOURCES)["files_sha256"]
    changed = sorted(
        name
        for name in set(end_files) | set(info["source"]["files_sha256"])
        if end_files.get(name) != info["source"]["files_sha256"].get(name)
    )
    info["source_changed_during_run"] = changed
    if changed:
        print(f"\nWARNING: sources changed during the run: {', '.join(changed)}")
    payload: dict[str, Any] = {
        "command": command,
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": info,
        "configs": {
            r.workload.label: {
                "workload": r.workload.to_json(),
                "clean_stats": r.clean_stats,
                "check": r.check,
                "offset_map": r.offset_map,
                "memory": r.memory,
            }
            for r in results
        },
        "goal": goal_list,
        "rows": [row.to_json() for row in rows],
    }
    path = write_results("cleaner", payload)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
