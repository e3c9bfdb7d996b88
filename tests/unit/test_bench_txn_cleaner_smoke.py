"""Smoke test of ``bench/bench_txn_cleaner.py``: a ``--quick`` run finishes, every sample's
check (the cleaned logs hold each key's last committed record, no aborted record) holds, and
it reports the ratio. Not a benchmark: it keeps the benchmark from rotting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_txn_cleaner, common  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_both_cleans_and_reports_the_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    assert bench_txn_cleaner.main(["--quick", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "transactional / plain:" in out
    assert not list(tmp_path.glob("seglog-bench-txn-cleaner-*"))  # scratch logs removed
    [results] = (tmp_path / "results").glob("txn-cleaner-*.json")
    payload = json.loads(results.read_text(encoding="utf-8"))
    assert set(payload["logs"]) == {bench_txn_cleaner.PLAIN, bench_txn_cleaner.TXN}
    assert payload["ratio"] > 0
    txn = payload["logs"][bench_txn_cleaner.TXN]
    plain = payload["logs"][bench_txn_cleaner.PLAIN]
    assert txn["records"] == plain["records"] and txn["log_bytes"] > plain["log_bytes"]
