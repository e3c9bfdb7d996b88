"""Render a results file of ``bench/results/`` as the Markdown tables used in BENCHMARKS.md.

Nothing is measured here: it reads the JSON a benchmark wrote (raw samples included) and
prints its tables again, with the command, date, machine and goal, so figures can be copied
into BENCHMARKS.md exactly as measured.

Run: ``.venv/bin/python -m bench.report [bench/results/format-<time>.json]`` (default: the
newest file).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/report.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS_DIR, Row, markdown_table


def render(path: Path) -> str:
    """The Markdown report of one results file."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    machine = payload.get("machine", {})
    rows = [Row.from_json(row) for row in payload.get("rows", [])]
    lines = [
        f"Command: `{payload.get('command')}`",
        f"Date: {machine.get('date_utc')} UTC; {machine.get('cpu_count')} vCPU "
        f"{machine.get('cpu_model', '')}; load {machine.get('loadavg')} -> "
        f"{machine.get('loadavg_end')}; Python {machine.get('python')}, numpy "
        f"{machine.get('numpy')}, numba {machine.get('numba')}, aiokafka "
        f"{machine.get('aiokafka')}, kafka-python {machine.get('kafka')}; "
        f"git {machine.get('source', {}).get('git_head')} (+ working tree, hashes in the JSON)",
        "",
    ]
    for benchmark in dict.fromkeys(row.benchmark for row in rows):
        lines += [
            f"### {benchmark}",
            "",
            markdown_table([r for r in rows if r.benchmark == benchmark]),
            "",
        ]
    if payload.get("columnar_startup"):
        lines += [f"Columnar startup: `{json.dumps(payload['columnar_startup'])}`", ""]
    if payload.get("goal"):
        lines += [f"Goal: `{json.dumps(payload['goal'])}`", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report of the given results file, or of the newest one."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        path = Path(args[0])
    else:
        files = sorted(RESULTS_DIR.glob("*.json"), key=lambda p: p.stat().st_mtime)
        if not files:
            print(f"no results in {RESULTS_DIR}", file=sys.stderr)
            return 1
        path = files[-1]
    print(render(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
