"""DescribeProducers (61) and WriteTxnMarkers (27) against a real ``seglog serve`` process, raw
and through ``seglog transactions --bootstrap-server``; a ``read_committed`` consumer
(confluent-kafka) sees what the markers decided."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from serve_harness import ServeFactory, ServeProcess

from seglog.cli.main import main
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.protocol import messages
from seglog.protocol.error_codes import ErrorCode
from seglog.testing.transactions import append_idempotent, append_transactional
from serve_wire import WireClient

T0 = 1_700_000_000_000


def _prepare(data_dir: Path) -> None:
    """Topic t, one partition: producer 1 commits (0, marker 1); producer 2 (epoch 3) opens a
    transaction at 2 and producer 3 one at 3 (both at T0, long ago); producer 6 appends
    idempotently at 4 (now)."""
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    with LogManager.open(broker) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        append_transactional(log, 1, 0, 0, [(b"k", b"committed")], timestamp_ms=T0)
        log.append_marker(1, 0, commit=True, coordinator_epoch=0)
        append_transactional(log, 2, 3, 0, [(b"k", b"open-2")], timestamp_ms=T0)
        append_transactional(log, 3, 0, 0, [(b"k", b"open-3")], timestamp_ms=T0)
        append_idempotent(log, 6, 0, 0, [(b"k", b"plain")], timestamp_ms=int(time.time() * 1000))


@pytest.fixture
def server(serve_factory: ServeFactory) -> ServeProcess:
    prepared = serve_factory(start=False)
    _prepare(prepared.data_dir)
    return prepared.start()


def _seglog(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    capsys.readouterr()
    status = main(["transactions", *args])
    captured = capsys.readouterr()
    return status, [line.split() for line in captured.out.splitlines()], captured.err  # type: ignore[return-value]


def _describe(wire: WireClient, partitions: list[int]) -> messages.DescribeProducersResponse:
    request = messages.DescribeProducersRequest(
        topics=[
            messages.DescribeProducersRequestTopicRequest(name="t", partition_indexes=partitions)
        ]
    )
    answer: messages.DescribeProducersResponse = wire.call(61, 0, request)
    return answer


def _marker(
    wire: WireClient,
    pid: int,
    epoch: int,
    *,
    commit: bool,
    coordinator_epoch: int,
    partition: int = 0,
) -> int:
    marker = messages.WriteTxnMarkersRequestWritableTxnMarker(
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=commit,
        topics=[
            messages.WriteTxnMarkersRequestWritableTxnMarkerTopic(
                name="t", partition_indexes=[partition]
            )
        ],
        coordinator_epoch=coordinator_epoch,
    )
    answer = wire.call(27, 1, messages.WriteTxnMarkersRequest(markers=[marker]))
    [result] = answer.markers
    assert result.producer_id == pid
    [[partition_result]] = [t.partitions for t in result.topics]
    return partition_result.error_code


def _advertises(wire: WireClient, api_key: int) -> bool:
    answer = wire.call(18, 0, messages.ApiVersionsRequest())
    return any(k.api_key == api_key for k in answer.api_keys)


def test_describe_producers_raw_and_through_the_cli(
    server: ServeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    with WireClient(server.bootstrap) as wire:
        answer = _describe(wire, [0, 5])
    [topic] = answer.topics
    known, unknown = topic.partitions
    assert unknown.partition_index == 5
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert known.error_code == 0
    states = {p.producer_id: p for p in known.active_producers}
    assert sorted(states) == [1, 2, 3, 6]
    assert (states[1].coordinator_epoch, states[1].current_txn_start_offset) == (0, -1)
    assert (states[2].producer_epoch, states[2].current_txn_start_offset) == (3, 2)
    assert (states[2].last_timestamp, states[2].last_sequence) == (T0, 0)
    assert (states[3].coordinator_epoch, states[3].current_txn_start_offset) == (-1, 3)
    assert states[6].current_txn_start_offset == -1

    b = server.bootstrap
    status, rows, err = _seglog(capsys, "--bootstrap-server", b, "--describe-producers",
                                "--topic", "t", "--partition", "0")  # fmt: skip
    assert status == 0, err
    assert rows[0][0] == "ProducerId" and [r[0] for r in rows[1:]] == ["1", "2", "3", "6"]
    assert rows[2] == ["2", "3", "-1", "0", str(T0), "2"]
    # offline, beside the running server (reads take no lock): the same table
    capsys.readouterr()
    offline = main(["--data-dir", str(server.data_dir), "transactions", "--describe-producers",
                    "--topic", "t", "--partition", "0"])  # fmt: skip
    assert offline == 0
    assert [line.split() for line in capsys.readouterr().out.splitlines()] == rows
    status, rows, err = _seglog(capsys, "--bootstrap-server", b, "--describe-producers",
                                "--topic", "t", "--partition", "5")  # fmt: skip
    assert status == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err and "t-5" in err


def test_abort_through_the_cli_and_read_committed(
    server: ServeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    b = server.bootstrap
    abort = ["--bootstrap-server", b, "--abort", "--topic", "t", "--partition", "0"]
    status, _, err = _seglog(capsys, *abort, "--start-offset", "4")
    assert status == 1 and "Could not find any open transactions starting at offset 4" in err
    status, out, err = _seglog(capsys, *abort, "--start-offset", "3")
    assert (status, out, err) == (0, [], "")
    stale = ["--producer-id", "2", "--producer-epoch", "1", "--coordinator-epoch", "0"]
    status, _, err = _seglog(capsys, *abort, *stale)
    assert status == 1 and "INVALID_PRODUCER_EPOCH" in err
    assert "AbortTransactionSpec(topicPartition=t-0, producerId=2, producerEpoch=1" in err
    status, _, err = _seglog(capsys, *abort, "--producer-id", "2", "--producer-epoch", "3",
                             "--coordinator-epoch", "-1")  # fmt: skip
    assert status == 0, err
    with WireClient(server.bootstrap) as wire:
        [[partition]] = [t.partitions for t in _describe(wire, [0]).topics]
    assert all(p.current_txn_start_offset == -1 for p in partition.active_producers)

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": "reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("t", 0, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.append(message.value())
    finally:
        consumer.close()
    assert seen == [b"committed", b"plain"]  # the aborted ones are never delivered


def test_write_txn_markers_error_codes(server: ServeProcess) -> None:
    with WireClient(server.bootstrap) as wire:
        assert _marker(wire, 2, 3, commit=True, coordinator_epoch=5) == 0
        # producer 2's next transaction, then a marker from an older coordinator
        assert _marker(wire, 2, 3, commit=False, coordinator_epoch=4) == (
            ErrorCode.TRANSACTION_COORDINATOR_FENCED
        )
        assert _marker(wire, 3, 0, commit=False, coordinator_epoch=0, partition=9) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        assert _marker(wire, 3, 0, commit=False, coordinator_epoch=0) == 0
        [[partition]] = [t.partitions for t in _describe(wire, [0]).topics]
        states = {p.producer_id: p for p in partition.active_producers}
        assert states[2].coordinator_epoch == 5 and states[2].current_txn_start_offset == -1
        assert states[3].coordinator_epoch == 0 and states[3].current_txn_start_offset == -1
        # v2 (KIP-890's transaction_version) is served too
        marker = messages.WriteTxnMarkersRequestWritableTxnMarker(
            producer_id=7, producer_epoch=0, transaction_result=True, coordinator_epoch=5,
            topics=[messages.WriteTxnMarkersRequestWritableTxnMarkerTopic("t", [0])],
            transaction_version=2,
        )  # fmt: skip
        answer = wire.call(27, 2, messages.WriteTxnMarkersRequest(markers=[marker]))
        assert answer.markers[0].topics[0].partitions[0].error_code == 0


def test_find_hanging_and_list_online(
    server: ServeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    b = server.bootstrap
    status, rows, err = _seglog(capsys, "--bootstrap-server", b, "--find-hanging",
                                "--max-transaction-timeout", "100000000")  # fmt: skip
    assert status == 0, err
    assert rows == [["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                     "StartOffset", "LastTimestamp", "Duration(min)"]]  # fmt: skip
    with WireClient(b) as wire:
        coordinator_served = _advertises(wire, 66)
    status, rows, err = _seglog(capsys, "--bootstrap-server", b, "--find-hanging", "--topic", "t")
    listed = _seglog(capsys, "--bootstrap-server", b, "--list")
    if coordinator_served:
        # No transactional id has producers 2 or 3: both transactions hang.
        assert status == 0, err
        assert [r[:6] for r in rows[1:]] == [["t", "0", "2", "3", "-1", "2"],
                                            ["t", "0", "3", "0", "-1", "3"]]  # fmt: skip
        assert listed[0] == 0 and listed[1][0][0] == "TransactionalId"
    else:
        # A server without a transaction coordinator: the tool says which API is missing.
        assert status == 1 and "does not serve ListTransactions (API key 66)" in err
        assert listed[0] == 1 and "does not serve ListTransactions (API key 66)" in listed[2]


def test_an_unreachable_server_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _seglog(capsys, "--bootstrap-server", "127.0.0.1:1", "--list")
    assert status == 1 and "cannot connect to 127.0.0.1:1" in err
