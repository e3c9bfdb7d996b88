"""Read-compacted benchmark: a full read of a topic through its compacted copy beside a full
read of the original log, in the same run.

What the issue asks: "a read-compacted full read of a topic with 10 updates per key is >= 5x
faster than reading the original log, in the same run."

**Workload.** One topic, one partition, written once per run through seglog's ``LogManager``
(``cleanup.policy=delete`` with ``retention.ms=-1`` and ``retention.bytes=-1``: nothing ever
leaves the log, and no retention rule applies to the copy; the compacted copy does not depend
on the policy, and the background scheduler is not started, so the log is never cleaned in
place). Keys ``b"key%08d"``; every key updated ``UPDATES`` (10) times, in rounds, each round a
new random permutation of all keys; values are printable random bytes of exactly 100 B
(``--value-bytes``), taken from a 1 MiB pool at a position fixed by the record's offset (so
the expected value of every offset is known); CreateTime timestamps advancing 1 ms every 64
records; no tombstones. Records go into uncompressed 16 KiB batches built by seglog's
``BatchBuilder`` as a producer with default settings builds them, appended to the log 4
batches per call (the log assigns offsets, so record ``i`` gets offset ``i``). The key count
is chosen so the log is ~99 % of ``--size-mb`` MiB (default 256); ``segment.bytes`` is
``--segment-mb`` (default 64 MiB, so the log has several segments). Then
``LogManager.compact(topic)`` runs **once**, timed (wall and cpu) and reported on its own
(after an untimed compaction of a tiny warm-up topic in the same manager, so the numba
kernels are loaded from their cache and the compactor's offset map is allocated outside the
clock), and the manager is closed. ``--quick``: an 8 MiB log in 2 MiB segments, 1 timed
round.

Before timing, the compacted copy is checked record by record through
``iter_compacted_records``: exactly one record per key, at the offsets of the last round, in
order, each with its key and the value written at that offset; nothing after the horizon.

**Contenders**, on the log reopened read-only, interleaved round-robin (round ``r`` starts with
contender ``r mod n``) with :func:`bench.common.measure_interleaved`: one untimed warm-up
round, then ``--repeat`` (3) timed rounds; a contender faster than 0.25 s per call is called
several times back to back per sample. Median [min..max] of wall (``perf_counter``) and cpu
(``process_time``). Every contender reads every record from offset 0 to the log end offset:

1. *original: Log.iter_records*: ``log.iter_records(0)``; every record's ``offset``, ``key``
   and ``value`` read.
2. *read-compacted: iter_compacted_records*: ``iter_compacted_records(log, 0)`` (opens the
   published copy's segments, reads them, then the log after the horizon: nothing here);
   the same reads.
3. *original: scan_columns*: each of the original's non-empty ``.log`` files read into
   ``bytes`` and decoded by ``seglog.format.columnar.scan_columns`` (every CRC checked);
   the record count, the last offset and the sums of the key and value length columns
   taken (numpy, no Python object per record).
4. *compacted copy: scan_columns*: the same over the copy's ``.log`` files.
5. and 6. *scan_columns, in memory*: 3 and 4 on the files' bytes read once before timing
   (decode only: no file read, no fresh input buffer per call).

records/s counts the records each contender returns (the copy returns one in ten); MB/s
counts the **original log's** bytes for every contender (the topic's data read, whichever
way), so MB/s ratios are time ratios. The goal ratio is time(original) / time(read-compacted)
over the medians, wall and cpu. Every sample's result (count, last offset) is checked.

Run: ``.venv/bin/python -m bench.bench_compacted [--size-mb 256] [--segment-mb 64]
[--value-bytes 100] [--repeat 3] [--workdir DIR] [--quick]``. Scratch files go to a fresh
``seglog-bench-compacted-*`` directory under ``--workdir`` (default: the system temporary
directory) and are removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: python bench/bench_compacted.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    BASE_TIMESTAMP_MS,
    MB,
    PRODUCER_BATCH_BYTES,
    Row,
    format_ratio,
    machine_info,
    markdown_table,
    measure_interleaved,
    rows_from_samples,
    source_state,
    write_results,
)
from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format import BatchBuilder
from seglog.format.columnar import scan_columns

MIB = 1 << 20
TOPIC = "bench-read-compacted"
WARMUP_TOPIC = "bench-read-compacted-warmup"
UPDATES = 10  # updates per key
FILL = 0.99  # of --size-mb
APPEND_BATCHES = 4  # batches per Log.append call while generating
TIMESTAMP_EVERY = 64  # records per millisecond of CreateTime
SEED = 20261121
VALUE_POOL_BYTES = 1 << 20
TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}

ORIGINAL = "original: Log.iter_records"
COMPACTED = "read-compacted: iter_compacted_records"
ORIGINAL_COLUMNS = "original: scan_columns"
COMPACTED_COLUMNS = "compacted copy: scan_columns"
ORIGINAL_IN_MEMORY = "original: scan_columns, in memory"
COMPACTED_IN_MEMORY = "compacted copy: scan_columns, in memory"

GOAL_SPEEDUP = 5.0  # time(original) / time(read-compacted)
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
    """The generated topic, its compacted copy and the compaction run that made it."""

    root: Path  # the log directory
    value_bytes: int
    segment_bytes: int
    keys: int
    records: int
    batches: int
    log_files: list[Path]  # the original's non-empty .log files, oldest first
    log_bytes: int
    copy_files: list[Path]  # the compacted copy's .log files, oldest first
    copy_bytes: int
    build_s: float
    compaction: dict[str, Any]  # CompactionRun figures plus the timed wall/cpu seconds
    check: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """What the workload is, JSON-ready."""
        return {
            "value_bytes": self.value_bytes,
            "segment_bytes": self.segment_bytes,
            "keys": self.keys,
            "updates_per_key": UPDATES,
            "records": self.records,
            "batches": self.batches,
            "segments": len(self.log_files),
            "log_bytes": self.log_bytes,
            "copy_segments": len(self.copy_files),
            "copy_bytes": self.copy_bytes,
            "build_s": round(self.build_s, 3),
            "topic_config": TOPIC_CONFIG,
        }


def key_of(index: int) -> bytes:
    """The key of key number ``index``."""
    return b"key%08d" % index


def value_at(pool: bytes, offset: int, value_bytes: int) -> bytes:
    """The value written at ``offset``."""
    at = (offset * 7919) % (len(pool) - value_bytes)
    return pool[at : at + value_bytes]


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


def produce(
    log: Log, keys: int, value_bytes: int, pool: bytes, rng: np.random.Generator
) -> tuple[int, np.ndarray]:
    """Append ``UPDATES`` shuffled rounds of every key; the batch count and the last round."""
    key_bytes = [key_of(i) for i in range(keys)]
    pending: list[bytes] = []
    batches = 0
    index = 0
    builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
    last_round = np.empty(0, dtype=np.int64)
    for _ in range(UPDATES):
        order = rng.permutation(keys)
        last_round = order
        for k in order.tolist():
            timestamp = BASE_TIMESTAMP_MS + index // TIMESTAMP_EVERY
            value = value_at(pool, index, value_bytes)
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
    return batches, last_round


def compact_warmup_topic(manager: LogManager, value_bytes: int, pool: bytes) -> None:
    """Compact a tiny topic (untimed): numba kernels loaded, the compactor's map allocated."""
    manager.create_topic(WARMUP_TOPIC, 1, TOPIC_CONFIG)
    produce(manager.get_log(WARMUP_TOPIC, 0), 200, value_bytes, pool, np.random.default_rng(SEED))
    manager.compact(WARMUP_TOPIC)


def check_copy(log: Log, keys: int, last_round: np.ndarray, pool: bytes, value_bytes: int) -> int:
    """Fail unless a read-compacted read returns exactly the last round (module docstring)."""
    first = (UPDATES - 1) * keys
    expected = first
    order = last_round.tolist()
    for record in iter_compacted_records(log, 0):
        if record.offset != expected:
            raise AssertionError(f"read-compacted: offset {record.offset}, expected {expected}")
        if record.key != key_of(order[expected - first]):
            raise AssertionError(f"read-compacted: wrong key at offset {expected}")
        if record.value != value_at(pool, expected, value_bytes):
            raise AssertionError(f"read-compacted: wrong value at offset {expected}")
        expected += 1
    if expected != first + keys:
        raise AssertionError(f"read-compacted: {expected - first} records, expected {keys}")
    return keys


def generate(root: Path, value_bytes: int, keys: int, segment_bytes: int) -> Workload:
    """Write the topic, compact it once (timed), check the copy (module docstring)."""
    started = time.perf_counter()
    rng = np.random.default_rng(SEED + value_bytes)
    pool = rng.integers(ord("a"), ord("z") + 1, VALUE_POOL_BYTES, dtype=np.uint8).tobytes()
    manager = open_log_dirs([root])
    try:
        manager.create_topic(TOPIC, 1, {**TOPIC_CONFIG, "segment.bytes": str(segment_bytes)})
        log = manager.get_log(TOPIC, 0)
        batches, last_round = produce(log, keys, value_bytes, pool, rng)
        log.flush()
        build_s = time.perf_counter() - started
        compact_warmup_topic(manager, value_bytes, pool)
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        runs = manager.compact(TOPIC)
        wall_s = time.perf_counter() - wall0
        cpu_s = time.process_time() - cpu0
        [run] = runs.values()
        if run.is_partial or run.is_noop or run.records_kept != keys:
            raise AssertionError(f"unexpected compaction run: {run.to_json()}")
        check = {"records": check_copy(log, keys, last_round, pool, value_bytes)}
        copy_dir = log.directory / "compaction" / run.copy
    finally:
        manager.close()
    os.sync()
    partition_dir = root / f"{TOPIC}-0"
    files = [p for p in sorted(partition_dir.glob("*.log")) if p.stat().st_size]
    copy_files = [p for p in sorted(copy_dir.glob("*.log")) if p.stat().st_size]
    compaction = {**run.to_json(), "wall_s": wall_s, "cpu_s": cpu_s}
    return Workload(
        root=root,
        value_bytes=value_bytes,
        segment_bytes=segment_bytes,
        keys=keys,
        records=keys * UPDATES,
        batches=batches,
        log_files=files,
        log_bytes=sum(p.stat().st_size for p in files),
        copy_files=copy_files,
        copy_bytes=sum(p.stat().st_size for p in copy_files),
        build_s=build_s,
        compaction=compaction,
        check=check,
    )


# --------------------------------------------------------------------------------------------
# contenders: each returns (records, last offset)
# --------------------------------------------------------------------------------------------


def read_original(log: Log) -> tuple[int, int]:
    """``log.iter_records(0)``: offset, key and value of every record."""
    count = 0
    offset = -1
    key = value = None
    for record in log.iter_records(0):
        offset = record.offset
        key = record.key
        value = record.value
        count += 1
    del key, value
    return count, offset


def read_compacted(log: Log) -> tuple[int, int]:
    """``iter_compacted_records(log, 0)``: offset, key and value of every record."""
    count = 0
    offset = -1
    key = value = None
    for record in iter_compacted_records(log, 0):
        offset = record.offset
        key = record.key
        value = record.value
        count += 1
    del key, value
    return count, offset


def scan_files(paths: Sequence[Path]) -> tuple[int, int]:
    """Each file read and decoded by ``scan_columns``; the count and the last offset."""
    return scan_buffers(path.read_bytes() for path in paths)


def scan_buffers(buffers: Iterable[bytes]) -> tuple[int, int]:
    """Each buffer decoded by ``scan_columns``; the count and the last offset (the key and
    value length columns are summed, as a reader touching them would)."""
    count = 0
    offset = -1
    lengths = 0
    for buffer in buffers:
        columns = scan_columns(buffer)
        if len(columns):
            count += len(columns)
            offset = int(columns.offset[-1])
            lengths += int(columns.key_length.sum()) + int(columns.value_length.sum())
    return count, offset


# --------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------


def bench(workload: Workload, repeat: int) -> list[Row]:
    """Time the six contenders interleaved on the log reopened read-only."""
    manager = open_log_dirs([workload.root], read_only=True)
    try:
        log = manager.get_log(TOPIC, 0)
        last = workload.records - 1
        expected = {
            ORIGINAL: (workload.records, last),
            COMPACTED: (workload.keys, last),
            ORIGINAL_COLUMNS: (workload.records, last),
            COMPACTED_COLUMNS: (workload.keys, last),
            ORIGINAL_IN_MEMORY: (workload.records, last),
            COMPACTED_IN_MEMORY: (workload.keys, last),
        }
        original_bytes = [path.read_bytes() for path in workload.log_files]
        copy_bytes = [path.read_bytes() for path in workload.copy_files]

        def check(name: str, result: object) -> None:
            if result != expected[name]:
                raise AssertionError(
                    f"{name}: (records, last offset) {result}, not {expected[name]}"
                )

        contenders = {
            ORIGINAL: lambda: read_original(log),
            COMPACTED: lambda: read_compacted(log),
            ORIGINAL_COLUMNS: lambda: scan_files(workload.log_files),
            COMPACTED_COLUMNS: lambda: scan_files(workload.copy_files),
            ORIGINAL_IN_MEMORY: lambda: scan_buffers(original_bytes),
            COMPACTED_IN_MEMORY: lambda: scan_buffers(copy_bytes),
        }
        samples = measure_interleaved(contenders, repeat=repeat, check=check)
    finally:
        manager.close()
    rows: list[Row] = []
    notes = {
        ORIGINAL: f"{len(workload.log_files)} segments, 1 MiB reads",
        COMPACTED: f"{len(workload.copy_files)} copy segment(s)",
        ORIGINAL_COLUMNS: "read files + CRC + columns",
        COMPACTED_COLUMNS: "read files + CRC + columns",
        ORIGINAL_IN_MEMORY: "CRC + columns",
        COMPACTED_IN_MEMORY: "CRC + columns",
    }
    for name, records in (
        (ORIGINAL, workload.records),
        (COMPACTED, workload.keys),
        (ORIGINAL_COLUMNS, workload.records),
        (COMPACTED_COLUMNS, workload.keys),
        (ORIGINAL_IN_MEMORY, workload.records),
        (COMPACTED_IN_MEMORY, workload.keys),
    ):
        rows += rows_from_samples(
            "compacted",
            f"{workload.value_bytes}B",
            {name: samples[name]},
            records=records,
            nbytes=workload.log_bytes,
            notes=notes,
        )
    return rows


def speedups(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """time(original) / time(copy) over the medians, wall and cpu, for both read paths."""
    by_name = {row.contender: row for row in rows}
    out = []
    for original, compacted, is_goal in (
        (ORIGINAL, COMPACTED, True),
        (ORIGINAL_COLUMNS, COMPACTED_COLUMNS, False),
        (ORIGINAL_IN_MEMORY, COMPACTED_IN_MEMORY, False),
    ):
        a, b = by_name[original], by_name[compacted]
        wall = a.wall.median / b.wall.median
        cpu = a.cpu.median / b.cpu.median
        entry: dict[str, Any] = {
            "original": original,
            "compacted": compacted,
            "speedup_wall": wall,
            "speedup_cpu": cpu,
            "speedup_wall_range": [a.wall.min / b.wall.max, a.wall.max / b.wall.min],
            "speedup_cpu_range": [a.cpu.min / b.cpu.max, a.cpu.max / b.cpu.min],
        }
        if is_goal:
            entry["goal"] = f"read-compacted full read >= {GOAL_SPEEDUP:g}x faster than original"
            entry["is_met"] = wall >= GOAL_SPEEDUP and cpu >= GOAL_SPEEDUP
        out.append(entry)
    return out


def _spread(values: Sequence[float], fmt: str) -> str:
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return f"{fmt.format(statistics.median(values))} [{low}..{high}]"


def workload_table(w: Workload) -> str:
    """Markdown: what the topic and its copy hold."""
    return "\n".join(
        [
            "| keys | updates/key | records | batches | original log | segments "
            "| copy: records | copy | copy segments | generated in |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {w.keys:,} | {UPDATES} | {w.records:,} | {w.batches:,} "
            f"| {w.log_bytes / MB:.1f} MB | {len(w.log_files)} x <= {w.segment_bytes // MIB} MiB "
            f"| {w.keys:,} | {w.copy_bytes / MB:.1f} MB | {len(w.copy_files)} "
            f"| {w.build_s:.0f} s |",
        ]
    )


def compaction_table(w: Workload) -> str:
    """Markdown: the one timed compaction run."""
    c = w.compaction
    return "\n".join(
        [
            "| run | s wall | s cpu | MB/s of log read (wall) | records read -> kept "
            "| bytes read -> written | horizon | CompactionRun.duration_s |",
            "|---|---|---|---|---|---|---|---|",
            f"| `manager.compact(topic)`, 1 sample | {c['wall_s']:.2f} | {c['cpu_s']:.2f} "
            f"| {c['bytes_read'] / MB / c['wall_s']:.0f} | {c['records_read']:,} -> "
            f"{c['records_kept']:,} | {c['bytes_read'] / MB:.1f} -> "
            f"{c['bytes_written'] / MB:.1f} MB | {c['horizon']:,} | {c['duration_s']:.2f} |",
        ]
    )


def throughput_table(rows: Sequence[Row]) -> str:
    """Markdown: records/s, MB/s (of the original log) and seconds per full read."""
    lines = [
        "| contender | records returned | s wall | s cpu | records/s wall | records/s cpu "
        "| MB/s wall | MB/s cpu |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.contender} | {row.records:,} | {_spread(row.wall_s, '{:.3f}')} "
            f"| {_spread(row.cpu_s, '{:.3f}')} "
            f"| {_spread([row.records / s / 1e6 for s in row.wall_s], '{:.2f}M')} "
            f"| {_spread([row.records / s / 1e6 for s in row.cpu_s], '{:.2f}M')} "
            f"| {_spread([row.bytes / MB / s for s in row.wall_s], '{:.0f}')} "
            f"| {_spread([row.bytes / MB / s for s in row.cpu_s], '{:.0f}')} |"
        )
    return "\n".join(lines)


def speedup_table(entries: Sequence[dict[str, Any]]) -> str:
    """Markdown: the goal and the columnar ratio."""
    lines = [
        "| comparison | time(original) / time(compacted), wall | cpu | met? |",
        "|---|---|---|---|",
    ]
    for e in entries:
        met = ("yes" if e["is_met"] else "**no**") if "is_met" in e else "(no goal)"
        wall_lo, wall_hi = e["speedup_wall_range"]
        cpu_lo, cpu_hi = e["speedup_cpu_range"]
        lines.append(
            f"| {e['compacted']} vs {e['original']}"
            + (f" (goal: >= {GOAL_SPEEDUP:g}x)" if "is_met" in e else "")
            + f" | **{format_ratio(e['speedup_wall'])}** [{format_ratio(wall_lo)}.."
            f"{format_ratio(wall_hi)}] | **{format_ratio(e['speedup_cpu'])}** "
            f"[{format_ratio(cpu_lo)}..{format_ratio(cpu_hi)}] | {met} |"
        )
    return "\n".join(lines)


def invocation(argv: Sequence[str] | None) -> str:
    """The command line that ran this process, as one would type it in the repository root."""
    root = Path(__file__).resolve().parent.parent
    python = Path(sys.executable)
    if python.is_relative_to(root):
        python = python.relative_to(root)
    entry = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "bench_compacted"
    if entry not in ("run_all", "bench_compacted"):
        entry = "bench_compacted"
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join([str(python), "-m", f"bench.{entry}", *args])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unknown ones (meant for another benchmark of ``run_all``) are ignored."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=256.0, help="MiB of original log")
    parser.add_argument("--segment-mb", type=float, default=64.0, help="segment.bytes, MiB")
    parser.add_argument("--value-bytes", type=int, default=100, help="bytes per value")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 MiB log, 1 round")
    parser.add_argument("--workdir", type=Path, default=None, help="where scratch logs go")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"bench_compacted: ignoring options {unknown}", file=sys.stderr)
    if args.quick:
        args.size_mb, args.segment_mb, args.repeat = 8.0, 2.0, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the read-compacted benchmark, print Markdown tables, write JSON to bench/results/."""
    args = parse_args(argv)
    info = machine_info()
    info["source"] = source_state(MEASURED_SOURCES)
    command = invocation(argv)
    size_bytes = int(args.size_mb * MIB)
    segment_bytes = int(args.segment_mb * MIB)
    keys = keys_for(size_bytes, args.value_bytes)
    print(
        f"# seglog read-compacted benchmark: {info['date_utc']} UTC, {info['cpu_count']} CPUs, "
        f"load {info['loadavg']}"
    )
    print(
        f"{args.repeat} timed rounds after 1 warm-up, medians [min..max]; original log ~"
        f"{args.size_mb:g} MiB in {args.segment_mb:g} MiB segments, {keys:,} keys x {UPDATES} "
        f"updates, {args.value_bytes} B values",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-compacted-", dir=args.workdir))
    try:
        print("generating and compacting ...", file=sys.stderr, flush=True)
        workload = generate(workdir / "logs", args.value_bytes, keys, segment_bytes)
        print(
            f"{workload.records:,} records, {workload.batches:,} batches, "
            f"{workload.log_bytes / MB:.1f} MB in {len(workload.log_files)} segments (built in "
            f"{workload.build_s:.1f} s); copy {workload.copy_bytes / MB:.1f} MB, "
            f"{workload.keys:,} records, checked",
            flush=True,
        )
        rows = bench(workload, args.repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    entries = speedups(rows)
    info["loadavg_end"] = list(os.getloadavg())
    print("\n## workload\n")
    print(workload_table(workload))
    print("\n## compaction (one run, timed alone)\n")
    print(compaction_table(workload))
    print("\n## full read from offset 0 (MB = the original log's bytes for every row)\n")
    print(throughput_table(rows))
    print("\n## goal\n")
    print(speedup_table(entries))
    print("\n## all rows\n")
    print(markdown_table(rows))
    print(f"\nload average: {info['loadavg']} at the start, {info['loadavg_end']} at the end")
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
        "workload": workload.to_json(),
        "compaction": workload.compaction,
        "check": workload.check,
        "goal": entries,
        "rows": [row.to_json() for row in rows],
    }
    path = write_results("compacted", payload)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
