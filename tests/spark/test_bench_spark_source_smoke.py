"""Smoke test of ``bench/bench_spark_source.py``: a ``--quick`` run in the shared session.

Not a benchmark: it keeps the benchmark from rotting (source or Data Source API changes).
The run itself checks that both contenders return the same rows (count, sum of offsets,
sum of value lengths) before timing them; a disagreement raises.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench import bench_spark_source  # noqa: E402 (after the sys.path fix above)


def test_quick_run_checks_and_reports(spark: Any, tmp_path: Path) -> None:
    payload = bench_spark_source.run(spark, ["--quick", "--workdir", str(tmp_path)])
    assert not list(tmp_path.glob("seglog-bench-spark-source-*"))  # scratch removed
    assert payload["workload"]["records"] == 20_000
    assert payload["check"]["rows"] == 20_000
    assert payload["check"]["offsets"] == 4 * sum(range(5_000))
    rows = payload["rows"]
    assert set(rows) == {bench_spark_source.SEGLOG, bench_spark_source.PREBUILT}
    assert all(len(r["wall_s"]) == 1 and r["wall_s"][0] > 0 for r in rows.values())
    assert payload["ratio"]["median"] > 0
    text = bench_spark_source.report(payload)
    assert "## goals" in text and "prebuilt" in text
