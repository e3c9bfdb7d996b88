"""``seglog produce --format json`` as a user runs it, beside the floors of the same work.

Contenders, timed by wall clock, round-robin (a different one first each round), each on a
fresh data dir with the topic created outside the clock:

* ``seglog produce --format json`` (subprocess): N JSON lines ``{"value": "<100 B>"}`` from
  a file on stdin, to a one-partition topic; the whole process: start-up, parsing, batching,
  appends, the final fsync and clean close;
* ``seglog produce, empty input`` (subprocess): the same command with no input, its fixed
  cost (interpreter, imports, opening and closing the directory); ``net`` rate below is
  N / (produce - empty);
* ``Log.append floor`` (in process): the same records, already encoded as 1 MiB batches
  (outside the clock), appended with ``Log.append`` in 8 MiB chunks, then flushed and closed;
* ``raw write floor`` (in process): the bytes of the ``.log`` that produce wrote, written with
  one ``os.write`` and fsynced.

Run: ``.venv/bin/python -m bench.bench_cli_produce [--records N] [--repeat R] [--quick]``.
Prints a Markdown table (median [min..max] of R rounds) and writes ``bench/results/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/bench_cli_produce.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from bench.common import machine_info, write_results
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.builder import build_batches
from seglog.format.records import Record

VALUE_BYTES = 100
SRC = Path(__file__).resolve().parent.parent / "src"


def seglog_command(data_dir: Path, *args: str) -> list[str]:
    """``python -m seglog.cli --data-dir D ARGS``."""
    return [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args]


def environment() -> dict[str, str]:
    """The environment of the subprocesses: seglog's sources first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    return env


def fresh_topic(work: Path, name: str) -> Path:
    """A new data dir with a one-partition topic ``t`` (made outside the clock)."""
    data_dir = work / name
    shutil.rmtree(data_dir, ignore_errors=True)
    subprocess.run(
        seglog_command(data_dir, "topics", "create", "t", "--partitions", "1"),
        env=environment(),
        check=True,
        capture_output=True,
    )
    return data_dir


def main(argv: Sequence[str] | None = None) -> int:
    """Time the contenders, print the table, write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    count = 20_000 if args.quick else args.records
    repeat = 1 if args.quick else max(3, args.repeat)
    value = "v" * VALUE_BYTES
    lines = b"".join(orjson.dumps({"value": value}) + b"\n" for _ in range(count))
    records = [Record(i, 1_700_000_000_000, None, value.encode()) for i in range(count)]
    batches = build_batches(records, max_batch_bytes=1024 * 1024)
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-produce-"))
    try:
        input_file = work / "in.json"
        input_file.write_bytes(lines)
        empty_file = work / "empty.json"
        empty_file.write_bytes(b"")
        log_bytes: list[bytes] = []

        def produce(stdin_path: Path, name: str) -> Callable[[], float]:
            def run() -> float:
                data_dir = fresh_topic(work, name)
                with stdin_path.open("rb") as stdin:
                    start = time.perf_counter()
                    subprocess.run(
                        seglog_command(data_dir, "produce", "t", "--format", "json"),
                        stdin=stdin,
                        env=environment(),
                        check=True,
                        capture_output=True,
                    )
                    elapsed = time.perf_counter() - start
                if name == "produce":
                    [log] = (data_dir / "t-0").glob("*.log")
                    log_bytes[:] = [log.read_bytes()]
                return elapsed

            return run

        def append_floor() -> float:
            data_dir = fresh_topic(work, "floor")
            manager = LogManager.open(BrokerConfig.from_properties({"log.dirs": str(data_dir)}))
            log = manager.get_log("t", 0)
            chunk: list[bytes] = []
            start = time.perf_counter()
            size = 0
            for batch in batches:
                chunk.append(batch)
                size += len(batch)
                if size >= 8 * 1024 * 1024:
                    log.append(b"".join(chunk))
                    chunk, size = [], 0
            if chunk:
                log.append(b"".join(chunk))
            manager.close()
            return time.perf_counter() - start

        def raw_floor() -> float:
            path = work / "raw.log"
            data = log_bytes[0]
            start = time.perf_counter()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            return time.perf_counter() - start

        contenders: dict[str, Callable[[], float]] = {
            "seglog produce --format json": produce(input_file, "produce"),
            "seglog produce, empty input": produce(empty_file, "empty"),
            "Log.append floor (1 MiB batches)": append_floor,
            "raw write floor (os.write + fsync)": raw_floor,
        }
        contenders["seglog produce --format json"]()  # warm-up (and the raw floor's bytes)
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        names = list(contenders)
        for round_index in range(repeat):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(contenders[name]())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    produce_s = medians["seglog produce --format json"]
    empty_s = medians["seglog produce, empty input"]
    print(f"| {count:,} JSON lines of {VALUE_BYTES} B values, {repeat} rounds | wall s, "
          "median [min..max] | records/s (median) |")  # fmt: skip
    print("|---|---|---|")
    for name, values in samples.items():
        spread = f"{medians[name]:.3f} [{min(values):.3f}..{max(values):.3f}]"
        empty = name == "seglog produce, empty input"
        shown = "-" if empty else f"{count / medians[name]:,.0f}"
        print(f"| {name} | {spread} | {shown} |")
    net = count / max(produce_s - empty_s, 1e-9)
    print(f"\nproduce, net of its fixed cost: **{net:,.0f} records/s**")
    print(
        "produce / Log.append floor (wall): "
        f"**{medians['Log.append floor (1 MiB batches)'] / produce_s:.2f}x**"
    )
    path = write_results(
        "cli_produce",
        {
            "records": count,
            "value_bytes": VALUE_BYTES,
            "samples_wall_s": samples,
            "net_records_per_s": net,
            "machine": machine_info(),
        },
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
