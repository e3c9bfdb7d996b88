"""Startup of the ``seglog`` command: wall time of short commands beside the interpreter's floor.

Contenders, each a fresh ``python`` process, interleaved round-robin (bench/common.py):

* ``floor``: ``python -c pass``, the interpreter's own start (site, the venv's .pth files);
* ``--version``: ``python -m seglog.cli --version`` (parser only: no command module loaded);
* ``topics list``: on a data dir of one topic;
* ``consume``: ``consume t`` of a 10-record, 1-partition topic (prints the records).

Reported: median [min..max] wall seconds per command and the median minus the floor (what
seglog itself costs). CPU time is not reported: the work is in child processes, which
``process_time`` does not see. The goals (issue 18): ``--version`` <= 0.15 s and a small
``consume`` <= 0.35 s wall.

Run: ``.venv/bin/python -m bench.bench_cli_startup [--repeat N] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.common import Spread, machine_info, measure_interleaved, write_results

SRC = Path(__file__).resolve().parents[1] / "src"
RECORDS = 10


def _runner(argv: Sequence[str], stdin: bytes = b"") -> Callable[[], object]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}

    def run() -> object:
        done = subprocess.run(
            [sys.executable, *argv], input=stdin, capture_output=True, env=env, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
        return done.stdout

    return run


def _check(name: str, out: object) -> None:
    assert isinstance(out, bytes)
    if name == "consume" and len(out.splitlines()) != RECORDS:
        raise AssertionError(f"consume printed {len(out.splitlines())} lines, not {RECORDS}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print a Markdown table; write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--quick", action="store_true", help="3 rounds (smoke run)")
    args, _others = parser.parse_known_args(argv)
    repeat = 3 if args.quick else args.repeat
    with tempfile.TemporaryDirectory(prefix="seglog-bench-cli-") as tmp:
        data = str(Path(tmp) / "data")
        cli = ["-m", "seglog.cli", "--data-dir", data]
        _runner([*cli, "topics", "create", "t", "--partitions", "1"])()
        lines = b"".join(b"record-%d\n" % i for i in range(RECORDS))
        _runner([*cli, "produce", "t"], stdin=lines)()
        contenders = {
            "floor": _runner(["-c", "pass"]),
            "--version": _runner(["-m", "seglog.cli", "--version"]),
            "topics list": _runner([*cli, "topics", "list"]),
            "consume": _runner([*cli, "consume", "t"]),
        }
        samples = measure_interleaved(
            contenders, repeat=repeat, warmup=1, min_sample_s=0.0, max_calls=1, check=_check
        )
    floor = Spread.of(samples["floor"].wall_s).median
    print("| command | wall s, median [min..max] | minus floor |")
    print("|---|---|---|")
    results = {}
    for name, entry in samples.items():
        spread = Spread.of(entry.wall_s)
        results[name] = {"wall_s": entry.wall_s, "median_s": spread.median}
        print(
            f"| `{name}` | {spread.median:.3f} [{spread.min:.3f}..{spread.max:.3f}] | "
            f"{spread.median - floor:+.3f} |"
        )
    path = write_results(
        "cli_startup", {"machine": machine_info(), "repeat": repeat, "results": results}
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
