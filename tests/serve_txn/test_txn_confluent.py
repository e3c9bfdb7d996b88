"""confluent-kafka's transactional producer against a real ``seglog serve`` process.

Each test drives librdkafka's own transaction state machine (``init_transactions``,
``begin_transaction``, ``commit_transaction`` / ``abort_transaction``) over the wire, then
reads the partitions back with a ``read_committed`` consumer (librdkafka's default isolation
level) and a ``read_uncommitted`` one: the first must see exactly the committed records, each
once, in order; the second every record written, aborted ones included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from serve_harness import ServeProcess
from serve_python_clients import confluent_read

from seglog.protocol import messages
from serve_wire import WireClient

TIMEOUT_S = 30.0


def _producer(bootstrap: str, transactional_id: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
        | extra
    )


def _send(producer: Any, partition: int, values: list[bytes]) -> None:
    for value in values:
        producer.produce("out", value=value, key=b"k", partition=partition)
    producer.poll(0)


def _committed(bootstrap: str, partition: int) -> list[bytes | None]:
    return [r[3] for r in confluent_read(bootstrap, "out", partition)]


def _everything(bootstrap: str, partition: int) -> list[bytes | None]:
    config = {"isolation.level": "read_uncommitted"}
    return [r[3] for r in confluent_read(bootstrap, "out", partition, config=config)]


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _describe(bootstrap: str, transactional_id: str) -> Any:
    with WireClient(bootstrap) as wire:
        wire.call(10, 3, messages.FindCoordinatorRequest(key=transactional_id, key_type=1))
        answer = wire.call(
            65, 0, messages.DescribeTransactionsRequest(transactional_ids=[transactional_id])
        )
    [state] = answer.transaction_states
    return state


def test_commit_and_abort_read_committed_sees_exactly_the_committed(
    txn_server: ServeProcess,
) -> None:
    bootstrap = txn_server.bootstrap
    producer = _producer(bootstrap, "txn-commit-abort")
    producer.init_transactions(TIMEOUT_S)
    expected: dict[int, list[bytes]] = {0: [], 1: []}
    written: dict[int, list[bytes]] = {0: [], 1: []}
    for round_, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for partition in (0, 1):
            values = _values(f"r{round_}p{partition}", 7 + round_)
            _send(producer, partition, values)
            written[partition] += values
            if commit:
                expected[partition] += values
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.flush(TIMEOUT_S)  # the aborted records are in the log
            producer.abort_transaction(TIMEOUT_S)
    for partition in (0, 1):
        assert _committed(bootstrap, partition) == expected[partition]
        assert _everything(bootstrap, partition) == written[partition]
    described = _describe(bootstrap, "txn-commit-abort")
    assert (described.error_code, described.transaction_state) == (0, "CompleteCommit")
    assert described.topics == []
    with WireClient(bootstrap) as wire:
        listed = wire.call(66, 0, messages.ListTransactionsRequest(state_filters=[]))
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
        ("txn-commit-abort", "CompleteCommit")
    ]


def test_a_new_producer_fences_the_zombie_and_aborts_its_transaction(
    txn_server: ServeProcess,
) -> None:
    from confluent_kafka import KafkaException

    bootstrap = txn_server.bootstrap
    zombie = _producer(bootstrap, "txn-zombie")
    zombie.init_transactions(TIMEOUT_S)
    zombie.begin_transaction()
    _send(zombie, 0, _values("zombie", 5))
    zombie.flush(TIMEOUT_S)

    successor = _producer(bootstrap, "txn-zombie")
    successor.init_transactions(TIMEOUT_S)  # fences the zombie, aborts its open transaction
    successor.begin_transaction()
    _send(successor, 0, _values("successor", 4))
    successor.commit_transaction(TIMEOUT_S)

    with pytest.raises(KafkaException) as fenced:
        zombie.produce("out", value=b"late zombie", partition=0)
        zombie.commit_transaction(TIMEOUT_S)
    error = fenced.value.args[0]
    assert error.fatal() or "fenced" in error.str().lower(), error

    assert _committed(bootstrap, 0) == _values("successor", 4)
    assert _everything(bootstrap, 0) == _values("zombie", 5) + _values("successor", 4)


def test_an_abandoned_transaction_is_aborted_after_its_timeout(txn_server: ServeProcess) -> None:
    bootstrap = txn_server.bootstrap
    abandoned = _producer(bootstrap, "txn-abandoned", **{"transaction.timeout.ms": 1000})
    abandoned.init_transactions(TIMEOUT_S)
    abandoned.begin_transaction()
    _send(abandoned, 1, _values("abandoned", 3))
    abandoned.flush(TIMEOUT_S)
    # the server aborts it on its own: the last stable offset moves past it
    deadline = time.monotonic() + TIMEOUT_S
    while _describe(bootstrap, "txn-abandoned").transaction_state != "CompleteAbort":
        assert time.monotonic() < deadline, "the timed-out transaction was never aborted"
        time.sleep(0.1)
    later = _producer(bootstrap, "txn-later")
    later.init_transactions(TIMEOUT_S)
    later.begin_transaction()
    _send(later, 1, _values("later", 2))
    later.commit_transaction(TIMEOUT_S)
    assert _committed(bootstrap, 1) == _values("later", 2)
    described = _describe(bootstrap, "txn-abandoned")
    assert described.producer_epoch == 1  # fenced by the abort


def test_sigkill_mid_transaction_then_restart(txn_server: ServeProcess) -> None:
    """The server is SIGKILLed with two transactions open: after the restart a new producer of
    one id fences and aborts it at once; the other is aborted by the server once its timeout
    passes; the transaction committed before the kill stays committed."""
    bootstrap = txn_server.bootstrap
    first = _producer(bootstrap, "txn-crash", **{"transaction.timeout.ms": 60_000})
    first.init_transactions(TIMEOUT_S)
    first.begin_transaction()
    _send(first, 0, _values("committed", 6))
    first.commit_transaction(TIMEOUT_S)
    first.begin_transaction()
    _send(first, 0, _values("in-flight", 4))
    first.flush(TIMEOUT_S)
    orphan = _producer(bootstrap, "txn-orphan", **{"transaction.timeout.ms": 1500})
    orphan.init_transactions(TIMEOUT_S)
    orphan.begin_transaction()
    _send(orphan, 1, _values("orphan", 3))
    orphan.flush(TIMEOUT_S)

    txn_server.kill()
    txn_server.start()
    bootstrap = txn_server.bootstrap

    successor = _producer(bootstrap, "txn-crash")
    successor.init_transactions(TIMEOUT_S)
    successor.begin_transaction()
    _send(successor, 0, _values("after", 2))
    successor.commit_transaction(TIMEOUT_S)
    assert _committed(bootstrap, 0) == _values("committed", 6) + _values("after", 2)
    assert _everything(bootstrap, 0) == (
        _values("committed", 6) + _values("in-flight", 4) + _values("after", 2)
    )

    deadline = time.monotonic() + TIMEOUT_S
    while _describe(bootstrap, "txn-orphan").transaction_state != "CompleteAbort":
        assert time.monotonic() < deadline, "the orphaned transaction was never aborted"
        time.sleep(0.1)
    assert _committed(bootstrap, 1) == []
    assert _everything(bootstrap, 1) == _values("orphan", 3)


def test_seglog_transactions_online_lists_and_describes_an_open_transaction(
    txn_server: ServeProcess,
) -> None:
    """``seglog transactions --bootstrap-server`` asks this coordinator (ListTransactions,
    DescribeTransactions) while a transaction is open, and again once it committed."""
    bootstrap = txn_server.bootstrap
    producer = _producer(bootstrap, "txn-online")
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    _send(producer, 1, _values("online", 2))
    producer.flush(TIMEOUT_S)

    def seglog_transactions(*args: str) -> list[list[str]]:
        src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
        command = [sys.executable, "-m", "seglog.cli", "transactions", "--bootstrap-server"]
        done = subprocess.run(
            [*command, bootstrap, *args],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()[1:] if line.strip()]

    [listed] = seglog_transactions("--list")
    assert (listed[0], listed[3]) == ("txn-online", "Ongoing")
    [described] = seglog_transactions("--describe", "--transactional-id", "txn-online")
    assert (described[1], described[4], described[-1]) == ("txn-online", "Ongoing", "out-1")
    producer.commit_transaction(TIMEOUT_S)
    [described] = seglog_transactions("--describe", "--transactional-id", "txn-online")
    assert described[4] == "CompleteCommit"
