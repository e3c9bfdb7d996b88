"""The Spark source over broker-written, log-cleaned data directories of the corpus
(``../shared/corpus``, never copied here; skipped with the reason when absent).

Those partitions have the offset gaps a real Kafka cleaner leaves (and non-zero base
offsets, several segments). Every record Spark returns must equal what
``Log.iter_records`` of a read-only manager returns, including with ranges split across
the gaps, and the corpus must not be touched.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root, snapshot
from seglog.engine.log_manager import open_log_dirs

#: corpus data directories whose partitions were compacted by a real broker's cleaner
COMPACTED_DIRS = (
    "no-licence/smartassets-connect-compacted",
    "no-licence/mashakosher-multiseg",
)


def _params() -> list[Any]:
    root = corpus_root()
    if root is None:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    out = []
    for name in COMPACTED_DIRS:
        marks = []
        if not (root / name).is_dir():
            marks.append(pytest.mark.skip(reason=f"{name} is not in this corpus ({root})"))
        out.append(pytest.param(root / name, id=name, marks=marks))
    return out


def _expected(data: Path) -> tuple[dict[str, list[int]], list[tuple[Any, ...]]]:
    partitions: dict[str, list[int]] = {}
    rows = []
    with open_log_dirs([data], read_only=True) as manager:
        for tp, log in sorted(manager.logs().items()):
            partitions.setdefault(tp.topic, []).append(tp.partition)
            for r in log.iter_records(log.log_start_offset):
                headers = [(h.key, h.value) for h in r.headers] or None
                rows.append(
                    (r.key, r.value, tp.topic, tp.partition, r.offset, r.timestamp, headers)
                )
    return partitions, sorted(rows, key=lambda r: (r[2], r[3], r[4]))


def _spark_rows(df: Any) -> list[tuple[Any, ...]]:
    rows = []
    for row in df.collect():
        ms = round(row.timestamp.astimezone(dt.UTC).timestamp() * 1000)  # naive: local time
        headers = None if row.headers is None else [(h.key, h.value) for h in row.headers]
        rows.append((row.key, row.value, row.topic, row.partition, row.offset, ms, headers))
    return sorted(rows, key=lambda r: (r[2], r[3], r[4]))


@pytest.mark.parametrize("data", _params())
def test_cleaned_broker_logs_read_with_their_gaps(spark: Any, data: Path) -> None:
    before = snapshot(data)
    partitions, expected = _expected(data)
    by_tp: dict[tuple[str, int], list[int]] = {}
    for r in expected:
        by_tp.setdefault((r[2], r[3]), []).append(r[4])
    gapped = [tp for tp, offs in by_tp.items() if offs[-1] - offs[0] + 1 > len(offs)]
    assert gapped, "the corpus directory was chosen for its cleaner gaps"
    for extra in ({}, {"maxRecordsPerPartition": "7"}):
        read = (
            spark.read.format("seglog")
            .option("path", str(data))
            .option("assign", json.dumps(partitions))  # assign: internal topics too
            .option("includeHeaders", "true")
        )
        for key, value in extra.items():
            read = read.option(key, value)
        assert _spark_rows(read.load()) == expected, extra
    assert snapshot(data) == before  # read-only: nothing written, renamed or locked
