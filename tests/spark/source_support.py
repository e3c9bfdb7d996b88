"""Log directories for the source tests, and what ``Log.iter_records`` says they hold.

:func:`build_data_dir` writes, through seglog's LogManager, topics with every shape the
source must handle: null keys and values, headers (also on a record with neither key nor
value), CreateTime and LogAppendTime topics, several partitions, a compacted topic whose
cleaned log has offset gaps and a published Pulsar-style compacted copy. Expected rows come
from ``Log.iter_records`` of a read-only manager, never from the code under test.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.records import Header

T0 = 1_700_000_000_000
EVENTS = "events"
OTHER = "other.topic"
APPEND_TIME = "stamped"
COMPACTED = "compacted"
EVENTS_PARTITIONS = 3
EVENTS_PER_PARTITION = 40


def event_records(partition: int, count: int, first: int = 0) -> list[tuple[Any, ...]]:
    """(key, value, headers, timestamp_ms) of partition ``partition``'s records."""
    out: list[tuple[Any, ...]] = []
    for i in range(first, first + count):
        key = None if i % 7 == 3 else b"k%d-%d" % (partition, i)
        value = None if i % 11 == 5 else b"value-%d-%d-" % (partition, i) + b"x" * (i % 13)
        headers: tuple[Header, ...] = ()
        if i % 5 == 1:
            headers = (Header("h1", b"a%d" % i), Header("empty", None))
        if i == 16:  # neither key nor value, with a header
            key, value, headers = None, None, (Header("only", b"z"),)
        # Timestamps mostly rise, one step back (Kafka timestamps are not monotonic).
        ts = T0 + 1000 * i - (1500 if i % 9 == 4 else 0)
        out.append((key, value, headers, ts))
    return out


def build_data_dir(root: Path) -> Path:
    """Write the test topics under ``root/data`` and return that directory."""
    data = root / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic(EVENTS, EVENTS_PARTITIONS, {"segment.bytes": "2048"})
        for p in range(EVENTS_PARTITIONS):
            log = manager.get_log(EVENTS, p)
            records = event_records(p, EVENTS_PER_PARTITION)
            # several appends -> several batches and segments
            for chunk in range(0, len(records), 9):
                log.append_records(records[chunk : chunk + 9])
        manager.create_topic(OTHER, 1)
        manager.get_log(OTHER, 0).append_records([(b"o", b"ov", (), T0)])
        manager.create_topic(APPEND_TIME, 1, {"message.timestamp.type": "LogAppendTime"})
        manager.get_log(APPEND_TIME, 0).append_records(
            [(b"a", b"1", (), T0), (b"b", b"2", (), T0 + 5)]
        )
        manager.create_topic(
            COMPACTED,
            1,
            {
                "cleanup.policy": "compact",
                "segment.bytes": "1024",
                "min.cleanable.dirty.ratio": "0.01",
            },
        )
        log = manager.get_log(COMPACTED, 0)
        for round_ in range(4):
            keys = range(10) if round_ < 3 else range(1, 10, 2)  # the last round: odd keys
            log.append_records(
                [(b"key%d" % k, b"r%d-%d" % (round_, k), (), T0 + round_) for k in keys]
            )
        log.roll()
        manager.clean_once(topic=COMPACTED)
        log.append_records([(b"key1", b"tail", (), T0 + 9)])
        manager.compact(COMPACTED)
        log.append_records([(b"key2", b"after-horizon", (), T0 + 10)])
    return data


def expected_rows(
    data: Path,
    topic: str,
    partition: int,
    start: int | None = None,
    end: int | None = None,
    *,
    read_compacted: bool = False,
) -> list[tuple[Any, ...]]:
    """(key, value, topic, partition, offset, timestamp, timestampType, headers) per record."""
    with open_log_dirs([data], read_only=True) as manager:
        log = manager.get_log(topic, partition)
        first = log.log_start_offset if start is None else start
        if read_compacted:
            records = list(iter_compacted_records(log, first, end))
        else:
            records = list(log.iter_records(first, end))
    return [
        (
            r.key,
            r.value,
            topic,
            partition,
            r.offset,
            dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC),
            int(r.timestamp_type),
            [(h.key, h.value) for h in r.headers] or None,
        )
        for r in records
    ]


def manager_of(data: Path) -> LogManager:
    """A writable manager of ``data`` (the caller closes it)."""
    return open_log_dirs([data])
