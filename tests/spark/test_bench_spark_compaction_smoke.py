"""Smoke test of ``bench/bench_spark_compaction.py``: a ``--quick`` run in the shared session.

Not a benchmark: it keeps the benchmark from rotting. The run itself compares the warm-up
outputs of both contenders file by file (byte-identical) and fails otherwise.
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

from bench import bench_spark_compaction  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_and_reports(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = bench_spark_compaction.main(["--quick", "--workdir", str(tmp_path)], spark=spark)
    out = capsys.readouterr().out
    assert status == 0
    assert "outputs identical" in out
    assert not list(tmp_path.glob("seglog-bench-spark-compaction-*"))  # scratch removed
    results = out.rsplit("raw samples: ", 1)[1].strip()
    payload = json.loads(Path(results).read_text())
    assert set(payload["seconds"]) == {
        bench_spark_compaction.IN_PROCESS,
        bench_spark_compaction.SPARK,
    }
    assert payload["bytes_read"][bench_spark_compaction.SPARK] > 0
    Path(results).unlink()
