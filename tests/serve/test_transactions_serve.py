"""A log holding transactions (commits, aborts, one still open), served to every client.

The data directory is filled before the server starts (seglog's engine writes transactional
batches and markers, as a broker's transaction coordinator would have); the cleaner is off so
the bytes stay as written while they are read. Then:

* ``read_committed`` (librdkafka's default; kafka-python's and aiokafka's
  ``isolation_level``): every client filters the aborted transactions with the list each Fetch
  returns, stops at the last stable offset (the open transaction's first offset), and all of
  them, and ``seglog consume --isolation-level read_committed``, read the same records;
* ``read_uncommitted``: every client reads what kafka-python decodes from the files (control
  records aside), aborted records included;
* ListOffsets: the latest offset is the last stable offset for ``read_committed`` and the log
  end for ``read_uncommitted``; a timestamp found only at or above the last stable offset is
  "no offset" for ``read_committed`` (Kafka answers only offsets below it).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from serve_clients import disk_records, seglog_consume
from serve_harness import ServeFactory, ServeProcess
from serve_python_clients import aiokafka_read, confluent_read, kafka_python_read
from serve_records import Rec

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.format.builder import BatchBuilder
from support.cleaning_data import fill_transactional

LATER_MS = 3_600_000


def _fill(data_dir: Path) -> tuple[int, int]:
    """``txns`` with transactions; returns (partition 0's last stable offset, a timestamp
    whose first record lies above it)."""
    now = int(time.time() * 1000)
    clock = ManualClock(now)
    with open_log_dirs([data_dir], clock=clock) as manager:
        fill_transactional(manager, clock, keys=40, records=400, seed=5)
        log = manager.get_log("txns", 0)
        [open_txn] = log.ongoing_transactions()
        builder = BatchBuilder()
        builder.append(now + LATER_MS, b"late", b"after the open transaction")
        log.append(builder.build())
        return open_txn.first_offset, now + LATER_MS


@pytest.fixture
def txn_server(serve_factory: ServeFactory) -> tuple[ServeProcess, int, int]:
    server = serve_factory({"log.cleaner.enable": "false"}, start=False)
    lso, late = _fill(server.data_dir)
    return server.start(), lso, late


@pytest.mark.parametrize("partition", [0, 1])
def test_read_committed_and_read_uncommitted_agree_across_clients(
    txn_server: tuple[ServeProcess, int, int], partition: int
) -> None:
    server, lso, _ = txn_server
    bootstrap = server.bootstrap
    committed = {
        "confluent-kafka": confluent_read(bootstrap, "txns", partition),
        "kafka-python": kafka_python_read(
            bootstrap, "txns", partition, config={"isolation_level": "read_committed"}
        ),
        "aiokafka": aiokafka_read(
            bootstrap, "txns", partition, config={"isolation_level": "read_committed"}
        ),
        "seglog consume": seglog_consume(
            server.data_dir, "txns", partition, isolation="read_committed"
        ),
    }
    uncommitted = {
        "confluent-kafka": confluent_read(
            bootstrap, "txns", partition, config={"isolation.level": "read_uncommitted"}
        ),
        "kafka-python": kafka_python_read(bootstrap, "txns", partition),
        "aiokafka": aiokafka_read(bootstrap, "txns", partition),
        "seglog consume": seglog_consume(server.data_dir, "txns", partition),
    }
    everything = disk_records(server.data_dir, "txns", partition)
    _all_equal(uncommitted, everything)
    reference = committed["seglog consume"]
    _all_equal(committed, reference)

    offsets = {r[0] for r in reference}
    assert offsets < {r[0] for r in everything}  # aborted records left out
    if partition == 0:
        assert max(offsets) < lso <= max(r[0] for r in everything)


def _all_equal(readings: dict[str, list[Rec]], expected: list[Rec]) -> None:
    assert expected
    for name, got in readings.items():
        assert got == expected, name


def test_list_offsets_stop_at_the_last_stable_offset_for_read_committed(
    txn_server: tuple[ServeProcess, int, int],
) -> None:
    from kafka import KafkaConsumer, TopicPartition

    server, lso, late = txn_server
    tp = TopicPartition("txns", 0)
    found: dict[str, tuple[int, int | None]] = {}
    for level in ("read_committed", "read_uncommitted"):
        consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, isolation_level=level)
        try:
            end = consumer.end_offsets([tp])[tp]
            at = consumer.offsets_for_times({tp: late})[tp]
            found[level] = (end, None if at is None else at.offset)
        finally:
            consumer.close()
    log_end = max(r[0] for r in disk_records(server.data_dir, "txns", 0)) + 1
    assert found["read_committed"] == (lso, None)
    assert found["read_uncommitted"] == (log_end, log_end - 1)
