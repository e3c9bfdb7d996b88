"""Smoke test of ``bench/bench_hash.py``: a ``--quick`` run prints both rates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_hash  # noqa: E402


def test_bench_hash_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_hash.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "md5" in out and "SipHash-128" in out and "x**" in out
