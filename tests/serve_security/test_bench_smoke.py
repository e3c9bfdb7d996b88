"""Smoke test of ``bench/bench_serve_security.py``: a ``--quick`` run finishes.

Not a benchmark: it keeps the benchmark from rotting (three-listener server start, keystore,
SCRAM user, confluent-kafka over PLAINTEXT, SSL and SASL_SSL). The run checks its own answers
(every delivery acknowledged, every value byte fetched back) and raises otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository
    sys.path.insert(0, str(ROOT))

from bench import bench_serve_security  # noqa: E402 (after the sys.path fix above)


def test_quick_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_serve_security.main(["--quick", "--size-mb", "1"]) == 0
    table = capsys.readouterr().out
    for kind in ("produce", "fetch"):
        for listener in ("PLAINTEXT", "SSL", "SASL_SSL"):
            assert f"| {kind}, {listener} |" in table
    assert table.count("| / PLAINTEXT |") == 1
