"""Benchmark: ``read_committed`` reads against ``read_uncommitted`` reads of the same log.

Goal (issue 20): a ``read_committed`` full read at **>= 0.9x** the throughput of a
``read_uncommitted`` one, measured here for the two readers this module's author owns:

* *Spark source executor* (:func:`seglog.spark.arrow_reader.read_range`): the Arrow batches
  of one partition's whole range, ``read_committed=True`` (the aborted rows dropped by batch
  runs) vs ``False``; in process, no Spark session (the JVM transport is the same for both).
* *consume CLI*: ``seglog consume T --format json`` into ``/dev/null``, a child process each,
  ``--isolation-level read_committed`` vs the default. A range holding aborted transactions
  takes the record-by-record path under read_committed (the columnar fast path does not
  filter), so this pair shows what that costs.

**Workload.** One partition of ``--records`` records (default 1,000,000; ``--quick``:
50,000), 100-byte values and 16-byte keys from ``bench.common.generate_records``, appended in
batches of 100 records: 70 % of the records in plain batches, 30 % in transactions of 3
producers taking turns (two batches of 50 then the marker), a third of the transactions
aborted (10 % of the records). The ratio is the throughput of a full read of the log (log bytes
per second of wall time, i.e. the uncommitted read's time over the committed read's), medians
of interleaved rounds; rows per second are shown too (read_committed returns 90 % of the
rows, so its rows/s ratio is about 0.9x the bytes/s one).

Run: ``.venv/bin/python -m bench.bench_read_committed [--records N] [--repeat 5] [--quick]``.
Results go to ``bench/results/read_committed-*.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_read_committed.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Spread,
    format_ratio,
    generate_records,
    machine_info,
    measure_interleaved,
    source_state,
    write_results,
)

TOPIC = "txn"
BATCH = 100
VALUE_BYTES = 100
PRODUCERS = (10, 11, 12)
GOAL = 0.9
MEASURED_SOURCES = ("src/seglog/spark/arrow_reader.py", "src/seglog/core/aborted_batches.py")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50,000 records, 3 rounds")
    args, _ = parser.parse_known_args(argv)  # run_all passes the other benchmarks' options
    if args.quick:
        args.records, args.repeat = 50_000, 3
    return args


def build_log(data: Path, records: int) -> dict[str, Any]:
    """The workload (module docstring); returns its figures."""
    from seglog.engine.log_manager import open_log_dirs
    from seglog.testing.transactions import append_transactional

    started = time.perf_counter()
    rows = generate_records(records, VALUE_BYTES)
    sequences = dict.fromkeys(PRODUCERS, 0)
    aborted = committed_rows = 0
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, 1)
        log = manager.get_log(TOPIC, 0)
        position = 0
        turn = 0
        while position < len(rows):
            turn += 1
            if turn % 10 < 7:  # 70 %: a plain batch
                chunk = rows[position : position + BATCH]
                log.append_records([(k, v, (), ts) for ts, k, v in chunk])
                position += len(chunk)
                committed_rows += len(chunk)
                continue
            producer = PRODUCERS[turn % len(PRODUCERS)]
            chunk = rows[position : position + BATCH]
            for half in (chunk[: BATCH // 2], chunk[BATCH // 2 :]):
                if half:
                    append_transactional(
                        log, producer, 0, sequences[producer], [(k, v) for _, k, v in half]
                    )
                    sequences[producer] += len(half)
            position += len(chunk)
            commit = turn % 3 != 0
            log.append_marker(producer, 0, commit=commit, coordinator_epoch=0)
            if commit:
                committed_rows += len(chunk)
            else:
                aborted += len(chunk)
        end = log.log_end_offset
        size = log.size_bytes()
    return {
        "records": records,
        "aborted_records": aborted,
        "committed_records": committed_rows,
        "log_end_offset": end,
        "log_bytes": size,
        "build_s": time.perf_counter() - started,
    }


def arrow_rows(data: Path, end: int, read_committed: bool) -> int:
    from seglog.spark.arrow_reader import RangeRequest, read_range

    request = RangeRequest(
        log_dirs=(str(data),),
        config_path=None,
        topic=TOPIC,
        partition=0,
        start=0,
        end=end,
        read_committed=read_committed,
    )
    return sum(batch.num_rows for batch in read_range(request))


def cli_rows(data: Path, read_committed: bool) -> int:
    level = "read_committed" if read_committed else "read_uncommitted"
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data), "consume", TOPIC]
    command += ["--format", "json", "--isolation-level", level]
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, check=True, text=True)
    return int(done.stderr.split("Processed a total of ")[1].split()[0])


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    info = machine_info()
    info["source"] = source_state(MEASURED_SOURCES)
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-read-committed-"))
    try:
        data = workdir / "data"
        workload = build_log(data, args.records)
        end = workload["log_end_offset"]
        expected = {False: args.records, True: workload["committed_records"]}
        contenders = {
            "arrow read_uncommitted": lambda: arrow_rows(data, end, False),
            "arrow read_committed": lambda: arrow_rows(data, end, True),
            "cli read_uncommitted": lambda: cli_rows(data, False),
            "cli read_committed": lambda: cli_rows(data, True),
        }

        def check(name: str, result: object) -> None:
            want = expected[name.endswith(" read_committed")]
            if result != want:
                raise AssertionError(f"{name}: {result} rows, expected {want}")

        samples = measure_interleaved(
            contenders, repeat=args.repeat, warmup=1, min_sample_s=0.0, max_calls=1, check=check
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows: dict[str, Any] = {}
    for name, sample in samples.items():
        count = expected[name.endswith(" read_committed")]
        rows[name] = {
            "wall_s": sample.wall_s,
            "rows_per_s": vars(Spread.of(sample.wall_s).rate(count)),
            "log_bytes_per_s": vars(Spread.of(sample.wall_s).rate(workload["log_bytes"])),
        }
    ratios = {}
    for reader in ("arrow", "cli"):
        mine = Spread(**rows[f"{reader} read_committed"]["log_bytes_per_s"])
        peer = Spread(**rows[f"{reader} read_uncommitted"]["log_bytes_per_s"])
        ratios[reader] = {
            "median": mine.median / peer.median,
            "min": mine.min / peer.max,
            "max": mine.max / peer.min,
        }
    return {
        "machine": info,
        "command": " ".join(["bench.bench_read_committed", *(argv or [])]),
        "workload": workload,
        "rows": rows,
        "ratio": ratios,
        "goal": {"ratio": GOAL, "is_met": {k: v["median"] >= GOAL for k, v in ratios.items()}},
    }


def report(payload: dict[str, Any]) -> str:
    w = payload["workload"]
    lines = [
        "## workload\n",
        f"{w['records']:,} records ({w['aborted_records']:,} aborted), "
        f"{w['log_bytes'] / 1e6:.1f} MB of log, one partition (built in {w['build_s']:.1f} s)\n",
        "## throughput (wall; median [min..max])\n",
        "| contender | s per full read | log MB/s | rows returned/s |",
        "|---|---|---|---|",
    ]
    for name, row in payload["rows"].items():
        wall = Spread.of(row["wall_s"])
        rate = Spread(**row["rows_per_s"])
        mbs = Spread(**row["log_bytes_per_s"])
        lines.append(
            f"| {name} | {wall.median:.2f} [{wall.min:.2f}..{wall.max:.2f}] | "
            f"{mbs.median / 1e6:.0f} [{mbs.min / 1e6:.0f}..{mbs.max / 1e6:.0f}] | "
            f"{rate.median / 1e6:.2f}M [{rate.min / 1e6:.2f}M..{rate.max / 1e6:.2f}M] |"
        )
    lines += [
        "\n## goals (log bytes/s, read_committed / read_uncommitted)\n",
        "| reader | ratio, median [worst..best pairing] | met |",
        "|---|---|---|",
    ]
    for reader, r in payload["ratio"].items():
        met = "yes" if payload["goal"]["is_met"][reader] else "NO"
        lines.append(
            f"| {reader} >= {GOAL:.0%} | **{format_ratio(r['median'])}** "
            f"[{format_ratio(r['min'])}..{format_ratio(r['max'])}] | {met} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    payload = run(args)
    print(
        f"# seglog read_committed benchmark: {payload['machine']['date_utc']} UTC, "
        f"load {os.getloadavg()}\n"
    )
    print(report(payload))
    path = write_results("read_committed", payload)
    print(f"\nraw samples: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
