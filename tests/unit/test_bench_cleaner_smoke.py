"""Smoke test of ``bench/bench_cleaner.py``: a ``--quick`` run finishes and its checks hold.

Not a benchmark: it only keeps the benchmark from rotting (cleaner or LogManager API changes,
the child process that measures memory). Scratch logs go to ``tmp_path`` and results to
``tmp_path / "results"``, so the test leaves nothing behind. The run itself checks every
sample's answer (bytes copied, records decoded, the clean's figures) and the warm-up clean's
output record by record with aiokafka; a failed check raises.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_cleaner, common  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_the_cleaned_log_and_reports_goals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_cleaner.main(["--quick", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for heading in ("## workload", "## throughput", "## memory", "## goals"):
        assert heading in out
    assert not list(tmp_path.glob("seglog-bench-cleaner-*"))  # scratch logs removed
    [results] = (tmp_path / "results").glob("cleaner-*.json")
    payload = json.loads(results.read_text(encoding="utf-8"))

    contenders = {bench_cleaner.SEGLOG, bench_cleaner.COPY, bench_cleaner.AIOKAFKA}
    assert {row["contender"] for row in payload["rows"]} == contenders
    assert all(row["wall_s"] and row["cpu_s"] for row in payload["rows"])
    assert set(payload["configs"]) == {"100B", "1KiB"}
    for config in payload["configs"].values():
        workload = config["workload"]
        assert workload["records"] == workload["keys"] * bench_cleaner.UPDATES
        # The warm-up clean kept exactly the last round, tombstones included.
        assert config["check"]["records"] == workload["keys"]
        assert config["check"]["tombstones"] == workload["tombstones"] > 0
        [stats] = config["clean_stats"]  # one timed round with --quick
        assert stats["bytes_read"] == workload["log_bytes"]
        assert stats["messages_written"] == workload["keys"]
        assert not stats["is_partial"]
        memory = config["memory"]
        assert memory["peak_maxrss_bytes"] >= memory["baseline_rss_bytes"] > 0
        # The child's ru_maxrss is its own, not inherited from this (larger) process.
        assert memory["baseline_maxrss_bytes"] < 2 * memory["baseline_rss_bytes"]
        assert memory["stats"]["messages_written"] == workload["keys"]
        assert memory["offset_map"]["memory_bytes_per_slot"] == 24
        assert memory["offset_map"]["arrays_nbytes_per_slot"] == 24

    goals = payload["goal"]
    assert len(goals) == 8  # 4 goals x 2 value sizes
    assert all(g["is_met"] for g in goals if "memory_bytes_per_slot" in g)
