"""Smoke test of ``bench/bench_compacted.py``: a ``--quick`` run finishes and its checks hold.

Not a benchmark: it only keeps the benchmark from rotting (compactor, read-compacted reader or
LogManager API changes). Scratch logs go to ``tmp_path`` and results to
``tmp_path / "results"``, so the test leaves nothing behind. The run itself checks the
compacted copy record by record before timing, and every sample's answer (records returned,
last offset); a failed check raises.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_compacted, common  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_the_copy_and_reports_the_goal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_compacted.main(["--quick", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for heading in ("## workload", "## compaction", "## full read", "## goal"):
        assert heading in out
    assert not list(tmp_path.glob("seglog-bench-compacted-*"))  # scratch logs removed
    [results] = (tmp_path / "results").glob("compacted-*.json")
    payload = json.loads(results.read_text(encoding="utf-8"))

    workload = payload["workload"]
    keys = workload["keys"]
    assert workload["records"] == keys * bench_compacted.UPDATES
    assert payload["check"]["records"] == keys  # the copy: exactly the last round
    compaction = payload["compaction"]
    assert compaction["records_read"] == workload["records"]
    assert compaction["records_kept"] == keys
    assert compaction["horizon"] == workload["records"] - 1
    assert compaction["wall_s"] > 0 and compaction["cpu_s"] > 0
    assert 0 < workload["copy_bytes"] < workload["log_bytes"]

    rows = {row["contender"]: row for row in payload["rows"]}
    assert set(rows) == {
        bench_compacted.ORIGINAL,
        bench_compacted.COMPACTED,
        bench_compacted.ORIGINAL_COLUMNS,
        bench_compacted.COMPACTED_COLUMNS,
        bench_compacted.ORIGINAL_IN_MEMORY,
        bench_compacted.COMPACTED_IN_MEMORY,
    }
    assert all(len(row["wall_s"]) == 1 and row["cpu_s"] for row in rows.values())
    assert rows[bench_compacted.ORIGINAL]["records"] == workload["records"]
    assert rows[bench_compacted.COMPACTED]["records"] == keys
    assert all(row["bytes"] == workload["log_bytes"] for row in rows.values())

    goal, columnar, in_memory = payload["goal"]
    assert goal["compacted"] == bench_compacted.COMPACTED and "is_met" in goal
    assert goal["speedup_wall"] > 1 and goal["speedup_cpu"] > 1
    assert columnar["compacted"] == bench_compacted.COMPACTED_COLUMNS
    assert in_memory["compacted"] == bench_compacted.COMPACTED_IN_MEMORY
    assert "is_met" not in columnar and "is_met" not in in_memory
