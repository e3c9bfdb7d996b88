"""``export_topic``: the Parquet table equals a plain-Python fold over ``Log.iter_records``
(latest record per key by offset in a partition, then by (timestamp, partition) across
partitions; tombstones delete; keyless records are no rows), read back with pyarrow."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from seglog.engine.log_manager import open_log_dirs
from seglog.errors import SparkOptionError, UnknownTopicError
from seglog.format.records import Header
from seglog.spark.export import export_topic

T0 = 1_700_000_000_000


def build(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        # no time retention: the compacted copy would drop keys older than retention.ms (T0 is
        # long past), while the log keeps them until retention runs
        manager.create_topic("t", 3, {"segment.bytes": "1024", "retention.ms": "-1"})
        for p in range(3):
            log = manager.get_log("t", p)
            for round_ in range(3):
                log.append_records(
                    [
                        (
                            None if i % 8 == 0 else b"k%d-%d" % (p, i % 6),
                            None if (i + round_) % 7 == 3 else b"v%d-%d-%d" % (p, round_, i),
                            (Header("r", b"%d" % round_),) if i % 3 == 0 else (),
                            T0 + 1000 * round_ - i,  # timestamps go backwards within a round
                        )
                        for i in range(20)
                    ]
                )
        # one key in two partitions: the later timestamp wins; a tie goes to the higher one
        manager.get_log("t", 0).append_records([(b"shared", b"old", (), T0 + 50)])
        manager.get_log("t", 2).append_records([(b"shared", b"new", (), T0 + 60)])
        manager.get_log("t", 0).append_records([(b"tie", b"p0", (), T0 + 70)])
        manager.get_log("t", 1).append_records([(b"tie", b"p1", (), T0 + 70)])
        manager.compact("t")  # a published compacted copy: the table reads it
        manager.get_log("t", 1).append_records([(b"k1-1", b"after-copy", (), T0 + 5)])
    return data


def fold(data: Path) -> dict[bytes, tuple[Any, ...]]:
    winners: dict[bytes, tuple[Any, ...]] = {}
    with open_log_dirs([data], read_only=True) as manager:
        for p in manager.partitions_of("t"):
            latest: dict[bytes, Any] = {}
            for record in manager.get_log("t", p).iter_records(0):
                if record.key is not None:
                    latest[record.key] = record
            for key, r in latest.items():
                candidate = (r.timestamp, p, r.offset, r.value, r.headers)
                if key not in winners or candidate[:2] > winners[key][:2]:
                    winners[key] = candidate
    return {k: v for k, v in winners.items() if v[3] is not None}


def all_records(data: Path) -> list[tuple[Any, ...]]:
    with open_log_dirs([data], read_only=True) as manager:
        return sorted(
            (p, r.offset, r.key, r.value, r.timestamp)
            for p in manager.partitions_of("t")
            for r in manager.get_log("t", p).iter_records(0)
        )


def ms(value: dt.datetime) -> int:
    return int(value.timestamp() * 1000)


def test_table_is_latest_value_per_key(spark: Any, tmp_path: Path) -> None:
    data = build(tmp_path)
    to = tmp_path / "out" / "table"
    rows = export_topic(spark, [data], "t", to)
    table = pq.read_table(to).to_pylist()
    assert rows == len(table)
    expected = fold(data)
    got = {
        r["key"]: (
            ms(r["timestamp"]),
            r["partition"],
            r["offset"],
            r["value"],
            tuple(Header(h["key"], h["value"]) for h in r["headers"] or ()),
        )
        for r in table
    }
    assert len(got) == len(table)  # one row per key
    assert got == expected
    assert {r["topic"] for r in table} == {"t"}
    assert got[b"shared"][3] == b"new" and got[b"tie"][3] == b"p1"
    assert got[b"k1-1"][3] == b"after-copy"
    assert any(h for *_, h in got.values())  # headers are carried


def test_changelog_has_every_record_and_rewrites_atomically(spark: Any, tmp_path: Path) -> None:
    data = build(tmp_path)
    to = tmp_path / "changelog"
    export_topic(spark, [data], "t", to, mode="table")
    first = sorted(str(p.name) for p in to.iterdir())
    rows = export_topic(spark, [data], "t", to, mode="changelog")  # replaces the table
    table = pq.read_table(to).to_pylist()
    got = sorted(
        (r["partition"], r["offset"], r["key"], r["value"], ms(r["timestamp"])) for r in table
    )
    assert got == all_records(data) and rows == len(got)
    assert sorted(str(p.name) for p in to.iterdir()) != first
    assert sorted(p.name for p in to.parent.iterdir() if "seglog-" in p.name) == []


def test_refusals(spark: Any, tmp_path: Path) -> None:
    data = build(tmp_path)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(SparkOptionError, match="not a Parquet table"):
        export_topic(spark, [data], "t", precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(SparkOptionError, match="'table' or 'changelog'"):
        export_topic(spark, [data], "t", tmp_path / "x", mode="latest")
    with pytest.raises(UnknownTopicError, match="'nope'"):
        export_topic(spark, [data], "nope", tmp_path / "x")
