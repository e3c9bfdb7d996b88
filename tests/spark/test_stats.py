"""``partition_stats``: Spark tasks' figures equal a plain-Python count over
``Log.iter_records`` and the cleaner manager's own dirty ratio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seglog.engine.log_manager import open_log_dirs
from seglog.errors import UnknownTopicError
from seglog.format.topic_names import TopicPartition
from seglog.spark.logdirs import discover
from seglog.spark.stats import (
    PartitionStats,
    compute_partition_stats,
    format_stats,
    partition_stats,
)

T0 = 1_700_000_000_000


def build(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic(
            "compacted",
            2,
            {
                "cleanup.policy": "compact",
                "segment.bytes": "1024",
                "min.cleanable.dirty.ratio": "0.01",
            },
        )
        for p in range(2):
            log = manager.get_log("compacted", p)
            for round_ in range(4):
                log.append_records(
                    [
                        (
                            b"key-%d" % (i % 9),
                            None if i % 10 == 7 else b"v%d-%d" % (round_, i),
                            (),
                            T0,
                        )
                        for i in range(p, 30 + p)
                    ]
                )
        manager.clean_once(topic="compacted")  # a cleaner checkpoint, then more dirt
        late = manager.get_log("compacted", 0)
        late.append_records([(b"key-1", b"late", (), T0), (b"key-new", None, (), T0)])
        late.roll()  # the late records leave the active segment: they become cleanable
        late.append_records([(b"key-2", b"tail", (), T0)])
        manager.create_topic("events", 3, {"segment.bytes": "2048"})
        for p in range(3):
            manager.get_log("events", p).append_records(
                [
                    (None if i % 4 == 0 else b"e%d" % (i % 5), b"x" * (i % 50), (), T0 + i)
                    for i in range(60 * (p + 1))
                ]
            )
        manager.delete_records({TopicPartition("events", 2): 25})  # log start above 0
        manager.create_topic("empty", 1)
    return data


def expected(data: Path) -> list[PartitionStats]:
    out = []
    with open_log_dirs([data], read_only=True) as manager:
        dirty = {
            c.topic_partition: c.to_clean
            for c in manager.cleaner_manager.candidates(manager.clock.now_ms())
        }
        for tp, log in sorted(manager.logs().items()):
            records = list(log.iter_records(log.log_start_offset))
            keyed = [r for r in records if r.key is not None]
            distinct = len({r.key for r in keyed})
            to_clean = dirty.get(tp)
            out.append(
                PartitionStats(
                    topic=tp.topic,
                    partition=tp.partition,
                    records=len(records),
                    keyed_records=len(keyed),
                    distinct_keys=distinct,
                    duplicates=len(keyed) - distinct,
                    tombstones=sum(r.value is None for r in keyed),
                    dirty_ratio=None if to_clean is None else to_clean.cleanable_ratio,
                    first_dirty_offset=None if to_clean is None else to_clean.first_dirty_offset,
                    size_bytes=log.size_bytes(),
                    segments=len(log.segments),
                    log_start_offset=log.log_start_offset,
                    log_end_offset=log.log_end_offset,
                )
            )
    return out


def test_task_function_equals_plain_python(tmp_path: Path) -> None:
    data = build(tmp_path)
    layout = discover([data])
    got = [
        compute_partition_stats(loc, layout.config(topic))
        for topic in layout.topic_names()
        for loc in layout.partitions_of(topic)
    ]
    want = expected(data)
    assert got == want
    by_tp = {(s.topic, s.partition): s for s in got}
    # the shapes the data was built to have
    assert by_tp["compacted", 0].dirty_ratio is not None
    assert 0 < by_tp["compacted", 0].dirty_ratio < 1
    assert by_tp["compacted", 0].tombstones >= 1
    assert by_tp["events", 2].log_start_offset == 25
    assert by_tp["events", 0].keyed_records < by_tp["events", 0].records
    assert by_tp["events", 0].dirty_ratio is None
    assert by_tp["events", 1].segments > 1
    assert by_tp["empty", 0].records == 0


def test_partition_stats_runs_one_task_per_partition(spark: Any, tmp_path: Path) -> None:
    data = build(tmp_path)
    df = partition_stats(spark, [str(data)])
    assert df.columns == [
        "topic",
        "partition",
        "records",
        "keyed_records",
        "distinct_keys",
        "duplicates",
        "tombstones",
        "dirty_ratio",
        "first_dirty_offset",
        "size_bytes",
        "segments",
        "log_start_offset",
        "log_end_offset",
    ]
    rows = df.collect()
    assert [PartitionStats(**r.asDict()) for r in rows] == expected(data)
    one = partition_stats(spark, [data], topic="events").collect()
    assert [(r.topic, r.partition) for r in one] == [("events", 0), ("events", 1), ("events", 2)]
    with pytest.raises(UnknownTopicError, match="'nope'"):
        partition_stats(spark, [data], topic="nope")
    text = format_stats(rows)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["TOPIC", "PARTITION", "RECORDS", "KEYED_RECORDS"]
    assert len(lines) == 1 + len(rows)
    events0 = next(line for line in lines if line.startswith("events ") and line.split()[1] == "0")
    assert events0.split()[2] == "60"
    assert events0.split()[7] == "-"  # no dirty ratio: not compacted
    assert format_stats([]).splitlines()[0].startswith("TOPIC")
