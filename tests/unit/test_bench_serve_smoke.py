"""Smoke tests of the ``seglog serve`` benchmarks: a ``--quick`` run of each finishes and its
checks hold.

Not benchmarks: they keep ``bench/bench_serve_produce.py``, ``bench_serve_fetch.py`` and
``bench_serve_latency.py`` from rotting (server start-up line, wire clients, codec, handlers).
Each run starts a real ``seglog serve`` subprocess on loopback and talks to it with
confluent-kafka and the benchmarks' own socket clients; the runs check their own answers (every
record acknowledged and stored, every byte fetched, every message's latency measured) and
raise otherwise. Scratch data goes to ``tmp_path`` and results to ``tmp_path / "results"``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import (  # noqa: E402 (after the sys.path fix above)
    bench_serve_fetch,
    bench_serve_latency,
    bench_serve_produce,
    common,
)

pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")


def _results(tmp_path: Path, name: str) -> dict[str, Any]:
    [path] = (tmp_path / "results").glob(f"{name}-*.json")
    payload: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return payload


def test_quick_produce_run_stores_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_serve_produce.main(["--quick", "--workdir", str(tmp_path)]) == 0
    assert "## goal: wire >= 0.6x in-process" in capsys.readouterr().out
    assert not list(tmp_path.glob("seglog-bench-serve-produce-*"))  # scratch removed
    results = _results(tmp_path, "serve_produce")["results"]
    assert [r["config"] for r in results] == ["100B/none", "100B/lz4", "1KiB/none", "1KiB/lz4"]
    for result in results:
        assert set(result["wall_s"]) == {
            bench_serve_produce.WIRE,
            bench_serve_produce.FLOOR,
            bench_serve_produce.RAW,
            bench_serve_produce.IN_PROCESS,
        }
        assert all(len(seconds) == 1 for seconds in result["wall_s"].values())
        assert result["batches"] >= 1 and result["ratio"] > 0 and result["raw_ratio"] > 0


def test_quick_fetch_run_reads_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_serve_fetch.main(["--quick", "--workdir", str(tmp_path)]) == 0
    assert "goal: Fetch >= 0.5x sendfile" in capsys.readouterr().out
    result = _results(tmp_path, "serve_fetch")
    assert result["log_bytes"] >= 16 * 1024 * 1024
    assert set(result["wall_s"]) == {
        bench_serve_fetch.fetch_name(1),
        bench_serve_fetch.fetch_name(8),
        bench_serve_fetch.SENDFILE,
        bench_serve_fetch.CONSUME,
    }
    # confluent-kafka saw every record's value (1 KiB each)
    assert result["value_bytes"] == 1024 * result["records"]
    assert len(result["ratios"]) == 3


def test_quick_latency_run_measures_every_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")

    assert bench_serve_latency.main(["--quick", "--workdir", str(tmp_path)]) == 0
    assert "/ one TCP hop: p50" in capsys.readouterr().out
    result = _results(tmp_path, "serve_latency")
    assert result["count"] == 5000
    for summaries in result["rounds"].values():
        [summary] = summaries
        assert 0 < summary["p50"] <= summary["p99"] <= summary["max"]
        assert summary["rate"] > 0
