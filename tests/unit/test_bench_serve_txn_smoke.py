"""Smoke test of ``bench/bench_serve_txn.py``: a ``--quick`` run finishes and its checks hold.

Not a benchmark: it keeps the transactional-produce benchmark from rotting. The run starts a
real ``seglog serve`` subprocess and checks its own answers (every record stored, one marker
per transaction, every transaction committed: the ``read_committed`` end equals the log end)
and raises otherwise. Scratch data goes to ``tmp_path`` and results to ``tmp_path/results``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_serve_txn, common  # noqa: E402 (after the sys.path fix above)

pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")


def test_quick_run_commits_every_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    assert bench_serve_txn.main(["--quick", "--workdir", str(tmp_path)]) == 0
    assert "transactional / idempotent:" in capsys.readouterr().out
    [path] = (tmp_path / "results").glob("serve_txn-*.json")
    result = json.loads(path.read_text(encoding="utf-8"))["result"]
    assert result["records"] == 5000 and result["txn_records"] == 1000
    assert {name: len(s) for name, s in result["wall_s"].items()} == {
        bench_serve_txn.IDEMPOTENT: 2,
        bench_serve_txn.TRANSACTIONAL: 2,
    }
    assert result["ratio"] > 0
