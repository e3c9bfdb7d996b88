"""Benchmark: ``seglog consume --format json`` as a process, beside its two floors.

Goals (issue 18): ``consume --format json`` >= 500,000 records/s for 100-byte values, as a
process, start-up included; a small ``consume`` (one record) <= 0.35 s of wall time;
``seglog --version`` <= 0.15 s.

**Workload.** One topic of 1 partition, ``--records`` records (default 500,000; ``--quick``:
20,000): 16-byte keys and 100-byte JSON-like values from ``bench.common.generate_records``,
CreateTime timestamps, appended through seglog's ``LogManager`` in a scratch directory
(``--workdir``), removed at the end.

**Contenders**, timed round-robin by :func:`bench.common.measure_interleaved` (one untimed
warm-up round, then ``--repeat`` rounds; medians [min..max] of wall seconds):

1. *seglog consume --format json (process)*: ``python -m seglog.cli --data-dir D consume T
   --format json`` with stdout to a file, as a user runs it: interpreter start, imports,
   opening the directory, reading, encoding, writing. The timed processes run from cached
   bytecode with buffered stdout, as an installed ``seglog`` does (:func:`user_env`: a
   session's ``PYTHONDONTWRITEBYTECODE``/``PYTHONUNBUFFERED`` are removed for them). Its
   output is checked once against the slow path's (``SEGLOG_CONSUME_PATH=slow``) byte for
   byte.
2. *same, reading only (process - startup)*: contender 1 minus the median wall time of the
   same command on a topic with one record (startup, imports and the open), i.e. what the
   records themselves cost.
3. *decode floor (columnar scan, in-process)*: every segment file read and decoded by
   ``scan_columns`` (numba) into columns: what the fast path must do before encoding.
4. *output floor (one write)*: the same output bytes (held in memory) written to a fresh
   file in one call.
5. *slow path (process)*, unless ``--skip-slow``: contender 1 with
   ``SEGLOG_CONSUME_PATH=slow`` (record by record, ``json.dumps``), the path before the
   columnar one.

Also reported: the wall time of a small consume (the one-record topic) and of ``seglog
--version`` (interpreter start and the command table only), and for every process its CPU
seconds (user + system, from the children's rusage), which other jobs on a shared machine
disturb less than wall time.

Run: ``.venv/bin/python -m bench.bench_cli_consume [--records N] [--repeat 3] [--workdir
DIR] [--skip-slow] [--quick]``. Results go to ``bench/results/cli_consume-*.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_cli_consume.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Spread,
    generate_records,
    machine_info,
    measure_interleaved,
    source_state,
    write_results,
)

TOPIC = "bench-consume"
SMALL = "bench-small"
VALUE_BYTES = 100
GOAL = 500_000
REPO = Path(__file__).resolve().parent.parent
FAST = "seglog consume --format json (process)"
SLOW = "slow path (process)"
DECODE = "decode floor (columnar scan, in-process)"
OUTPUT = "output floor (one write)"
SMALL_RUN = "small consume (1 record, process)"
VERSION = "seglog --version (process)"
SMALL_GOAL_S = 0.35
VERSION_GOAL_S = 0.15


#: Settings of a developer's or CI session that a user's shell does not have: they make every
#: start compile each module from source (no ``.pyc``) and stdout unbuffered.
SESSION_ONLY_ENV = ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")


def user_env() -> dict[str, str]:
    """The environment of the timed processes: this one, with ``src`` on the path and without
    ``SESSION_ONLY_ENV``, so modules run from cached bytecode (as an installed package does:
    pip compiles it at install; here the warm-up round writes the ``.pyc`` files) and stdout
    is buffered, as when a user runs ``seglog``."""
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY_ENV}
    env["PYTHONPATH"] = str(REPO / "src")
    return env


def child_cpu_s() -> float:
    """User + system CPU seconds of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def with_cpu(samples: list[float], run: Callable[[], None]) -> Callable[[], None]:
    """``run``, appending the CPU seconds of the child processes it ran to ``samples``."""

    def timed() -> None:
        before = child_cpu_s()
        run()
        samples.append(child_cpu_s() - before)

    return timed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options (unknown ones, meant for other benchmarks, are ignored)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--skip-slow", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    if args.quick:
        args.records = min(args.records, 20_000)
        args.repeat = 1
    return args


def build_log(data: Path, records: int) -> dict[str, Any]:
    """The workload: ``records`` records in ``TOPIC``, one record in ``SMALL``."""
    from seglog.engine.log_manager import open_log_dirs

    started = time.perf_counter()
    generated = generate_records(records, VALUE_BYTES)
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, 1)
        manager.get_log(TOPIC, 0).append_records(
            (key, value, (), timestamp) for timestamp, key, value in generated
        )
        manager.create_topic(SMALL, 1)
        manager.get_log(SMALL, 0).append_records([(b"k", b"v")])
    size = sum(f.stat().st_size for f in data.rglob("*.log"))
    return {"records": records, "log_bytes": size, "build_s": time.perf_counter() - started}


def consume(data: Path, topic: str, out: Path, path: str = "auto") -> None:
    """``seglog consume TOPIC --format json > out`` in a fresh interpreter."""
    env = {**user_env(), "SEGLOG_CONSUME_PATH": path}
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data)]
    with out.open("wb") as sink:
        subprocess.run(
            [*command, "consume", topic, "--format", "json"],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            env=env,
            check=True,
        )


def version() -> None:
    """``seglog --version`` in a fresh interpreter."""
    env = user_env()
    subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--version"],
        stdout=subprocess.DEVNULL,
        env=env,
        check=True,
    )


def decode_floor(data: Path) -> int:
    """Read and decode every segment of ``TOPIC`` into columns; the record count."""
    from seglog.format.columnar import scan_columns

    rows = 0
    for segment in sorted((data / f"{TOPIC}-0").glob("*.log")):
        rows += len(scan_columns(segment.read_bytes()))
    return rows


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Build, check, time; return the results payload."""
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-consume-", dir=args.workdir))
    try:
        data = work / "data"
        built = build_log(data, args.records)
        fast_out, slow_out, small_out, floor_out = (
            work / name for name in ("fast.json", "slow.json", "small.json", "floor.json")
        )
        consume(data, TOPIC, fast_out)
        consume(data, TOPIC, slow_out, "slow")
        expected = slow_out.read_bytes()
        if fast_out.read_bytes() != expected:
            raise SystemExit("consume --format json: the fast path's output differs")

        def write_once() -> None:
            fd = os.open(floor_out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, expected)
            finally:
                os.close(fd)

        cpu: dict[str, list[float]] = {FAST: [], SMALL_RUN: [], VERSION: [], SLOW: []}
        contenders: dict[str, Callable[[], object]] = {
            FAST: with_cpu(cpu[FAST], lambda: consume(data, TOPIC, fast_out)),
            SMALL_RUN: with_cpu(cpu[SMALL_RUN], lambda: consume(data, SMALL, small_out)),
            VERSION: with_cpu(cpu[VERSION], version),
            DECODE: lambda: decode_floor(data),
            OUTPUT: write_once,
        }
        if not args.skip_slow:
            contenders[SLOW] = with_cpu(cpu[SLOW], lambda: consume(data, TOPIC, slow_out, "slow"))
        samples = measure_interleaved(contenders, repeat=args.repeat, min_sample_s=0.0, max_calls=1)
        walls = {name: Spread.of(s.wall_s) for name, s in samples.items()}
        # The first call of each is the untimed warm-up round's.
        cpus = {name: vars(Spread.of(values[1:])) for name, values in cpu.items() if values[1:]}
        startup = walls[SMALL_RUN].median
        reading = [w - startup for w in samples[FAST].wall_s]
        return {
            "benchmark": "cli_consume",
            "workload": {**built, "value_bytes": VALUE_BYTES, "output_bytes": len(expected)},
            "walls": {name: vars(spread) for name, spread in walls.items()},
            "reading_only_s": vars(Spread.of(reading)),
            "process_cpu_s": cpus,
            "goal_records_per_s": GOAL,
            "goal_small_s": SMALL_GOAL_S,
            "goal_version_s": VERSION_GOAL_S,
            "machine": machine_info(),
            "source": source_state(("src/seglog/cli", "src/seglog/format", "src/seglog/kernels")),
            "repeat": args.repeat,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(payload: dict[str, Any]) -> str:
    """Markdown table of the results."""
    records = payload["workload"]["records"]
    walls = payload["walls"]
    rows = [(name, Spread(**spread)) for name, spread in walls.items()]
    rows.insert(1, ("same, reading only (process - startup)", Spread(**payload["reading_only_s"])))
    fast = Spread(**walls[FAST]).median
    lines = [
        f"{records:,} records of {payload['workload']['value_bytes']} B "
        f"({payload['workload']['log_bytes'] / 1e6:.1f} MB of log, "
        f"{payload['workload']['output_bytes'] / 1e6:.1f} MB of JSON)",
        "",
        "| contender | wall s | process CPU s (user+sys) | records/s | vs consume process |",
        "|---|---|---|---|---|",
    ]
    cpus = payload.get("process_cpu_s", {})
    for name, spread in rows:
        rate = spread.rate(records)
        wall = f"{spread.median:.3f} [{spread.min:.3f}..{spread.max:.3f}]"
        cpu = "-"
        if name in cpus:
            used = Spread(**cpus[name])
            cpu = f"{used.median:.3f} [{used.min:.3f}..{used.max:.3f}]"
        if name in (SMALL_RUN, VERSION):
            lines.append(f"| {name} | {wall} | {cpu} | - | - |")
            continue
        lines.append(
            f"| {name} | {wall} | {cpu} "
            f"| {rate.median:,.0f} [{rate.min:,.0f}..{rate.max:,.0f}] "
            f"| {fast / spread.median:.2f}x |"
        )
    rate = records / fast
    small = Spread(**walls[SMALL_RUN]).median
    shown = Spread(**walls[VERSION]).median
    lines += [
        "",
        f"consume --format json: {rate:,.0f} records/s, goal {GOAL:,}: "
        f"{'met' if rate >= GOAL else 'not met'}",
        f"small consume: {small:.3f} s, goal {SMALL_GOAL_S} s: "
        f"{'met' if small <= SMALL_GOAL_S else 'not met'}",
        f"seglog --version: {shown:.3f} s, goal {VERSION_GOAL_S} s: "
        f"{'met' if shown <= VERSION_GOAL_S else 'not met'}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table, save the JSON."""
    payload = run(argv)
    print(report(payload))
    print(f"\nresults: {write_results('cli_consume', payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
