"""The cleaner on what transactions wrote through ``seglog serve``: output topic and
``__transaction_state``.

A transactional producer writes keyed balance updates to a compacted topic (small segments, so
most of the log is cleanable), one transaction in four aborted. Then ``seglog clean --once``
runs on the stopped server's directory, and the server starts again:

* every ``read_committed`` reader sees, for each key, the same latest value as before cleaning,
  and only records it saw before (the cleaner removed superseded and aborted records, never a
  committed latest one);
* ``__transaction_state`` (small segments too) lost its superseded records for the producer's
  transactional id, and the restarted coordinator still knows the id: a new producer with it
  initialises, commits, and its records are read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from serve_clients import seglog_cli
from serve_eos import committed_values, create_topics, uncommitted_values
from serve_harness import ServeFactory
from serve_records import TIMEOUT_S

from seglog.engine.log_manager import open_log_dirs
from seglog.format.txn_records import transaction_partition

TXN_ID = "balances-writer"
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "4096",
    "delete.retention.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}
SETTINGS = {"log.cleaner.enable": "false", "transaction.state.log.segment.bytes": "2048"}


def _write_transactions(bootstrap: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, "linger.ms": 2}
    )
    producer.init_transactions(TIMEOUT_S)
    for n in range(count):
        producer.begin_transaction()
        for i in range(10):
            key = f"k{(n * 3 + i) % 8}"
            producer.produce("balances", key=key.encode(), value=f"{key}={n}.{i}".encode())
        if n % 4 == 3:
            producer.flush(TIMEOUT_S)  # in the log: abort_transaction purges unsent records
            producer.abort_transaction(TIMEOUT_S)
        else:
            producer.commit_transaction(TIMEOUT_S)


def _latest(values: Iterable[bytes | None]) -> dict[bytes, bytes]:
    latest: dict[bytes, bytes] = {}
    for value in values:
        assert value is not None
        key, _, _ = value.partition(b"=")
        latest[key] = value
    return latest


def _txn_state_records(data_dir: Path) -> int:
    partition = transaction_partition(TXN_ID)
    with open_log_dirs([data_dir], read_only=True) as manager:
        log = manager.get_log("__transaction_state", partition)
        return sum(1 for _ in log.iter_records(log.log_start_offset))


def test_cleaning_keeps_the_committed_view(serve_factory: ServeFactory) -> None:
    server = serve_factory(SETTINGS)
    create_topics(server.bootstrap, {"balances": 1}, TOPIC_CONFIGS)
    _write_transactions(server.bootstrap, 40)
    before = committed_values(server.bootstrap, server.data_dir, "balances", [0])
    aborted_before = sum(
        int(v.split(b"=")[1].split(b".")[0]) % 4 == 3
        for v in uncommitted_values(server.bootstrap, "balances", [0])
        if v is not None
    )
    server.stop()
    txn_records_before = _txn_state_records(server.data_dir)

    cleaned = seglog_cli(server.data_dir, "clean", "--once")
    assert cleaned.returncode == 0, (cleaned.stdout + cleaned.stderr).decode()
    assert _txn_state_records(server.data_dir) < txn_records_before

    server.start()
    after = committed_values(server.bootstrap, server.data_dir, "balances", [0])
    for name in before:
        old, new = before[name][0], after[name][0]
        assert _latest(new) == _latest(old), name
        assert set(new) <= set(old), name
        assert len(new) < len(old), f"{name}: nothing was cleaned"
    aborted_after = sum(
        int(v.split(b"=")[1].split(b".")[0]) % 4 == 3
        for v in uncommitted_values(server.bootstrap, "balances", [0])
        if v is not None
    )
    assert aborted_after < aborted_before

    # The coordinator reloaded the cleaned __transaction_state: the id goes on.
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": TXN_ID})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("balances", key=b"k0", value=b"k0=final")
    producer.commit_transaction(TIMEOUT_S)
    final = committed_values(server.bootstrap, server.data_dir, "balances", [0])
    for name, by_partition in final.items():
        assert _latest(by_partition[0])[b"k0"] == b"k0=final", name
