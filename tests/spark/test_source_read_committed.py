"""The Spark source's ``kafka.isolation.level``: read_committed through real Spark.

A partition over several small segments holds interleaved transactions of three producers
(some aborted, some committed), plain records between them and, at its end, a transaction
still open followed by more plain records. The expected rows are kept while writing
(committed and plain records below the last stable offset), and aiokafka's consumer, given
the partition's bytes and ``.txnindex`` entries, keeps the same ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seglog.engine.log_manager import open_log_dirs
from seglog.errors import SparkOptionError
from seglog.spark.arrow_reader import RangeRequest, read_range
from seglog.spark.options import parse_source_options
from seglog.testing.transactions import append_transactional
from support.txn_oracle import read_committed_with_aiokafka

TOPIC = "txn"
PRODUCERS = (10, 11, 12)
ROUNDS = 8

Row = tuple[int, bytes]


class Written:
    """What the writer appended: every data row, and those a read_committed reader gets."""

    def __init__(self) -> None:
        self.everything: list[Row] = []
        self.committed: list[Row] = []
        self.lso = 0


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Written]:
    data = tmp_path_factory.mktemp("read_committed") / "data"
    out = Written()
    sequences = dict.fromkeys(PRODUCERS, 0)
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, 1, {"segment.bytes": "1024"})
        log = manager.get_log(TOPIC, 0)

        def txn_batch(producer: int, tag: str) -> list[Row]:
            values = [f"{tag}-{i}".encode() for i in range(3)]
            info = append_transactional(
                log, producer, 0, sequences[producer], [(b"k", v) for v in values]
            )
            sequences[producer] += 3
            return [(info.first_offset + i, v) for i, v in enumerate(values)]

        def plain(tag: str) -> Row:
            value = tag.encode()
            info = log.append_records([(b"p", value)])
            return (info.first_offset, value)

        for r in range(ROUNDS):
            pending: dict[int, list[Row]] = {p: [] for p in PRODUCERS}
            for step in range(2):  # two batches per transaction, interleaved
                for p in PRODUCERS:
                    rows = txn_batch(p, f"r{r}-p{p}-s{step}")
                    pending[p] += rows
                    out.everything += rows
                row = plain(f"r{r}-plain{step}")
                out.everything.append(row)
                out.committed.append(row)
            for p in PRODUCERS:
                commit = (r + p) % 3 != 0
                log.append_marker(p, 0, commit=commit, coordinator_epoch=0)
                if commit:
                    out.committed += pending[p]
        out.lso = log.log_end_offset
        out.everything += txn_batch(PRODUCERS[0], "open")  # still open: the LSO stays
        tail = plain("after-open")
        out.everything.append(tail)
        assert log.last_stable_offset == out.lso
        assert len(log.segments) > 3
    out.committed.sort()
    out.everything.sort()
    return data, out


def _rows(df: Any) -> list[Row]:
    return sorted((row.offset, bytes(row.value)) for row in df.select("offset", "value").collect())


def _load(spark: Any, data: Path, **options: str) -> Any:
    read = spark.read.format("seglog").option("path", str(data)).option("subscribe", TOPIC)
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def test_read_committed_rows_agree_with_aiokafka(spark: Any, written: tuple[Path, Written]) -> None:
    data, expected = written
    df = _load(spark, data, **{"kafka.isolation.level": "read_committed", "minPartitions": "4"})
    got = _rows(df)
    assert got == expected.committed
    with open_log_dirs([data], read_only=True) as manager:
        log = manager.get_log(TOPIC, 0)
        aborted = [(a.producer_id, a.first_offset) for a in log.aborted_transactions(0, 10**9)]
        directory = log.directory
    assert len(aborted) == sum(1 for r in range(ROUNDS) for p in PRODUCERS if (r + p) % 3 == 0)
    oracle = read_committed_with_aiokafka(directory, aborted, last_stable_offset=expected.lso)
    assert [(o, v) for o, _, v in oracle] == got


def test_read_uncommitted_is_the_default_and_reads_every_data_row(
    spark: Any, written: tuple[Path, Written]
) -> None:
    data, expected = written
    assert _rows(_load(spark, data)) == expected.everything
    uncommitted = _load(spark, data, **{"kafka.isolation.level": "READ_UNCOMMITTED"})
    assert _rows(uncommitted) == expected.everything


@pytest.mark.parametrize("read_bytes", [200, 1500, 1 << 20])
def test_chunk_boundaries_do_not_change_the_rows(
    written: tuple[Path, Written], read_bytes: int
) -> None:
    """The executor's reader alone, over chunk sizes smaller and larger than a segment, and
    over a range starting inside an aborted transaction."""
    data, expected = written
    options = parse_source_options(
        {"path": str(data), "subscribe": TOPIC, "kafka.isolation.level": "read_committed"},
        is_streaming=False,
    )
    for start in (0, 5):
        request = RangeRequest(
            log_dirs=options.log_dirs,
            config_path=None,
            topic=TOPIC,
            partition=0,
            start=start,
            end=expected.lso,
            read_committed=True,
        )
        rows = [
            (offset, value)
            for batch in read_range(request, read_bytes=read_bytes, batch_rows=7)
            for offset, value in zip(
                batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
            )
        ]
        assert rows == [r for r in expected.committed if r[0] >= start]


def test_latest_is_the_last_stable_offset(written: tuple[Path, Written]) -> None:
    from seglog.spark.planning import open_manager, partition_bounds

    data, expected = written
    for level, latest in (("read_committed", expected.lso), ("read_uncommitted", None)):
        options = parse_source_options(
            {"path": str(data), "subscribe": TOPIC, "kafka.isolation.level": level},
            is_streaming=True,
        )
        with open_manager(options) as manager:
            _, bounds = partition_bounds(manager, [(TOPIC, 0)], options)
            end = manager.get_log(TOPIC, 0).log_end_offset
        assert bounds[(TOPIC, 0)].latest == (latest if latest is not None else end)


def test_isolation_level_values_and_names_are_checked(tmp_path: Path) -> None:
    base = {"path": str(tmp_path), "subscribe": TOPIC}
    parsed = parse_source_options(base, is_streaming=False)
    assert parsed.isolation_level == "read_uncommitted"
    parsed = parse_source_options(
        {**base, "kafka.isolation.level": " Read_Committed "}, is_streaming=False
    )
    assert parsed.isolation_level == "read_committed"
    assert "kafka.isolation.level" not in parsed.ignored
    with pytest.raises(SparkOptionError, match=r"kafka\.isolation\.level") as error:
        parse_source_options({**base, "kafka.isolation.level": "read_commited"}, is_streaming=False)
    assert "read_uncommitted, read_committed" in str(error.value)
    with pytest.raises(SparkOptionError, match=r"did you mean 'kafka\.isolation\.level'"):
        parse_source_options({**base, "kafka.isolaton.level": "read_committed"}, is_streaming=False)
    # other kafka.* client settings are still accepted and ignored
    parsed = parse_source_options({**base, "kafka.fetch.min.bytes": "1"}, is_streaming=False)
    assert parsed.ignored == ("kafka.fetch.min.bytes",)


def test_a_typo_in_the_value_fails_the_spark_read(
    spark: Any, written: tuple[Path, Written]
) -> None:
    data, _ = written
    with pytest.raises(Exception, match="is not an isolation level") as error:
        _load(spark, data, **{"kafka.isolation.level": "committed"}).collect()
    assert "read_committed" in str(error.value)


def test_streaming_read_committed_reads_up_to_the_lso(
    spark: Any, written: tuple[Path, Written], tmp_path: Path
) -> None:
    """A streaming query (availableNow) ends its batch at the LSO and drops aborted rows."""
    data, expected = written
    query = (
        spark.readStream.format("seglog")
        .option("path", str(data))
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .writeStream.format("memory")
        .queryName("seglog_read_committed")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        got = _rows(spark.table("seglog_read_committed"))
        end = query.lastProgress["sources"][0]["endOffset"]
    finally:
        query.stop()
    assert got == expected.committed
    end = json.loads(end) if isinstance(end, str) else end
    assert end == {TOPIC: {"0": expected.lso}}
