"""Distributed compaction benchmark: the Spark job at ``local[2]`` beside the in-process cleaner.

What the issue asks: "distributed compaction of 8 partitions x 128 MiB at ``local[2]`` next to
the in-process cleaner with one thread, goal >= 1.5x faster".

**Workload.** One compacted partition of ``--size-mb`` MiB (default 128) is generated with
``bench_cleaner``'s generator (100 B values, keys ``b"key%09d"`` each updated 10 times in
random order, 1 % tombstones in the last round, 16 KiB producer batches, ``segment.bytes``
``--segment-mb``, default 32 MiB, so a round has several groups); its segment files are
copied into each of ``--partitions`` (8) partitions of one compacted topic, which is opened
once (recovery) and closed cleanly. Each partition is therefore 128 MiB of dirty log with the
same keys: the job has 8 equal tasks, the in-process cleaner 8 equal rounds.

**Contenders**, alternating (round ``r`` starts with contender ``r mod 2``), one untimed
warm-up round each, then ``--repeat`` (3) timed rounds, medians [min..max] of wall seconds.
Before each sample a fresh copy of the source directory is made and ``os.sync()``-ed, outside
the clock; the clock covers everything a user waits for:

1. *in-process cleaner, 1 thread*: ``open_log_dirs`` + ``LogManager.clean_once()`` (one cleaner,
   the partitions one after another, ``log.cleaner.threads=1``, the default) + ``close()``.
2. *Spark job, local[2]*: ``seglog.spark.compaction_job.compact(spark, broker)``: the driver's
   open, plan, the partitions packed into one RDD task per executor core (two), commit,
   close. The session (``local[2]``, created once before the rounds, default JIT) and its
   Python workers are warm after the warm-up round, as in a long-lived Spark application.

Both clean with the same ``now`` (a fixed instant), so the warm-up outputs are compared file
by file: every ``.log``, ``.index``, ``.timeindex`` and checkpoint must be byte-identical
(the benchmark fails otherwise). MB/s = bytes of log read by the round (``bytes_read``) / s.

Run: ``.venv/bin/python -m bench.bench_spark_compaction [--size-mb 128] [--partitions 8]
[--segment-mb 32] [--repeat 3] [--workdir DIR] [--quick]`` (``--quick``: 4 x 4 MiB, 1 round).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_spark_compaction.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_cleaner import PARTITION_DIR, TOPIC, generate_log, keys_for
from bench.common import MB, Spread, format_ratio, machine_info, write_results
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import open_log_dirs

MIB = 1 << 20
VALUE_BYTES = 100
IN_PROCESS = "in-process cleaner, 1 thread"
SPARK = "Spark job, local[2]"
GOAL_SPEEDUP = 1.5
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def build_source(workdir: Path, size_mb: float, segment_mb: float, partitions: int) -> Path:
    """The source data directory: ``partitions`` copies of one generated dirty partition."""
    generated = workdir / "generated"
    segment_bytes = int(segment_mb * MIB)
    generate_log(generated, VALUE_BYTES, keys_for(int(size_mb * MIB), VALUE_BYTES), segment_bytes)
    source = workdir / "source"
    with open_log_dirs([source]) as manager:
        manager.create_topic(
            TOPIC,
            partitions,
            {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)},
        )
        partition_dirs = [manager.get_log(TOPIC, p).directory for p in range(partitions)]
    for directory in partition_dirs:
        for stale in directory.iterdir():
            if stale.suffix in SEGMENT_SUFFIXES:
                stale.unlink()
        for path in (generated / PARTITION_DIR).iterdir():
            if path.suffix in SEGMENT_SUFFIXES:
                shutil.copy2(path, directory / path.name)
    shutil.rmtree(generated)
    with open_log_dirs([source]):  # recover the copied segments once, then close cleanly
        pass
    os.sync()
    return source


def tree(root: Path) -> dict[str, bytes]:
    """Every segment, index and checkpoint file of a data directory (relative name -> bytes)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (p.suffix in SEGMENT_SUFFIXES or p.name.endswith("checkpoint"))
    }


def run_in_process(root: Path, now_ms: int) -> int:
    """Clean with the in-process cleaner; the bytes of log the rounds read."""
    with open_log_dirs([root], clock=ManualClock(now_ms)) as manager:
        results = manager.clean_once()
    return sum(r.stats.bytes_read for r in results if r.stats is not None)


def make_spark_runner(spark: Any) -> Callable[[Path, int], int]:
    """Clean with the Spark job on ``spark``; the bytes of log the rounds read."""
    from seglog.spark.compaction_job import compact

    def run(root: Path, now_ms: int) -> int:
        results = compact(
            spark, BrokerConfig.from_properties({"log.dirs": str(root)}), now_ms=now_ms
        )
        errors = [r.error for r in results if r.error is not None]
        if errors:
            raise AssertionError(f"the Spark job failed: {errors}")
        return sum(r.stats.bytes_read for r in results if r.stats is not None)

    return run


def measure(
    source: Path,
    workdir: Path,
    contenders: dict[str, Callable[[Path, int], int]],
    repeat: int,
    now_ms: int,
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Alternating rounds on fresh copies; returns wall seconds and bytes read per contender."""
    names = list(contenders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    read: dict[str, int] = {}
    outputs: dict[str, dict[str, bytes]] = {}
    for round_index in range(1 + repeat):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            copy = workdir / f"copy-{round_index}-{names.index(name)}"
            shutil.copytree(source, copy, copy_function=shutil.copy2)
            os.sync()
            started = time.perf_counter()
            read[name] = contenders[name](copy, now_ms)
            elapsed = time.perf_counter() - started
            if round_index == 0:
                outputs[name] = tree(copy)
            else:
                seconds[name].append(elapsed)
            shutil.rmtree(copy)
            os.sync()
        if round_index == 0 and len({repr(sorted(o.items())) for o in outputs.values()}) != 1:
            differing = [
                k for k in outputs[names[0]] if outputs[names[0]][k] != outputs[names[1]].get(k)
            ]
            raise AssertionError(f"outputs differ: {differing[:5]}")
    return seconds, read


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unknown ones (meant for another benchmark of ``run_all``) are ignored."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=128.0, help="MiB per partition")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--segment-mb", type=float, default=32.0, help="segment.bytes, MiB")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 x 4 MiB, 1 round")
    parser.add_argument("--workdir", type=Path, default=None, help="where scratch logs go")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"bench_spark_compaction: ignoring options {unknown}", file=sys.stderr)
    if args.quick:
        args.size_mb, args.partitions, args.segment_mb, args.repeat = 4.0, 4, 1.0, 1
    return args


def main(argv: Sequence[str] | None = None, *, spark: Any = None) -> int:
    """Run the benchmark, print Markdown tables and write JSON to bench/results/."""
    args = parse_args(argv)
    info = machine_info()
    print(
        f"# seglog distributed compaction benchmark: {info['date_utc']} UTC, "
        f"{info['cpu_count']} CPUs, load {info['loadavg']}"
    )
    print(
        f"{args.partitions} partitions x {args.size_mb:g} MiB, segment.bytes "
        f"{args.segment_mb:g} MiB, {args.repeat} timed rounds after 1 warm-up, medians [min..max]",
        flush=True,
    )
    own_session = spark is None
    if own_session:
        from seglog.spark.session import embedded_session

        spark = embedded_session("local[2]", app_name="seglog-bench-compaction")
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-spark-compaction-", dir=args.workdir))
    try:
        source = build_source(workdir, args.size_mb, args.segment_mb, args.partitions)
        log_bytes = sum(p.stat().st_size for p in source.rglob("*.log"))
        contenders = {IN_PROCESS: run_in_process, SPARK: make_spark_runner(spark)}
        seconds, read = measure(source, workdir, contenders, args.repeat, int(time.time() * 1000))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if own_session:
            spark.stop()
    spreads = {name: Spread.of(values) for name, values in seconds.items()}
    speedup = spreads[IN_PROCESS].median / spreads[SPARK].median
    print(f"\nlog: {log_bytes / MB:.1f} MB in {args.partitions} partitions; outputs identical\n")
    print("| contender | seconds | MB/s of log read | vs in-process |")
    print("|---|---|---|---|")
    for name, spread in spreads.items():
        rate = spread.rate(read[name] / MB)
        ratio = spreads[IN_PROCESS].median / spread.median
        print(
            f"| {name} | {spread.median:.2f} [{spread.min:.2f}..{spread.max:.2f}] | "
            f"{rate.median:.0f} [{rate.min:.0f}..{rate.max:.0f}] | {format_ratio(ratio)} |"
        )
    verdict = "met" if speedup >= GOAL_SPEEDUP else "NOT met"
    print(
        f"\ngoal: Spark job >= {GOAL_SPEEDUP}x faster than the in-process cleaner: "
        f"{speedup:.2f}x, {verdict}"
    )
    path = write_results(
        "spark_compaction",
        {
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "machine": info,
            "log_bytes": log_bytes,
            "seconds": seconds,
            "bytes_read": read,
            "speedup": speedup,
        },
    )
    print(f"\nraw samples: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
