"""Smoke test of ``bench/bench_storage.py``: a ``--quick`` run finishes and its checks hold.

Not a benchmark: it only keeps the benchmark from rotting (engine API changes, a broken cache
check). The cache and results directories are redirected to ``tmp_path``, so the test builds
its own tiny source segment and lookup logs and leaves nothing behind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_storage, common  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_answers_and_reuses_cached_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_storage.main(["--quick", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for heading in ("## append", "## random offset lookups", "## recovery after an unclean"):
        assert heading in out
    [results] = (tmp_path / "results").glob("storage-*.json")
    payload = json.loads(results.read_text(encoding="utf-8"))

    contenders = {row["contender"] for row in payload["rows"]}
    assert bench_storage.RAW_WRITE in contenders
    assert bench_storage.FULL_RECOVERY in contenders
    assert all(row["wall_s"] and row["cpu_s"] for row in payload["rows"])
    assert len(payload["append"]["results"]) == 8  # 4 chunk sizes x 2 segment sizes

    lookup = payload["lookup"]
    assert {log["segments"] for log in lookup["logs"].values()} == {1, 4}
    assert all(log["was_built"] for log in lookup["logs"].values())

    recovery = payload["recovery"]
    assert recovery["is_met"]
    full = recovery["modes"][bench_storage.FULL_RECOVERY]
    tail = recovery["modes"][bench_storage.TAIL_RECOVERY]
    assert full["ratio_bytes_read_to_bytes_from_recovery_point"] == 1.0
    assert tail["ratio_bytes_read_to_bytes_from_recovery_point"] == 1.0
    assert tail["segments_recovered"] == 1
    assert full["segments_recovered"] == recovery["segments"] == 4

    # A second run finds the lookup logs in the cache and does not build them again.
    assert bench_storage.main(["--quick", "--skip-append", "--skip-recovery"]) == 0
    assert "reusing" in capsys.readouterr().out
    newest = max((tmp_path / "results").glob("storage-*.json"), key=lambda p: p.stat().st_mtime)
    again = json.loads(newest.read_text(encoding="utf-8"))
    assert not any(log["was_built"] for log in again["lookup"]["logs"].values())
