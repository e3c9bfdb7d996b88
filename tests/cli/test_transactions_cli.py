"""``seglog transactions`` offline, on real directories: transactions written through the state
store and producers' batches and markers written through the log, a real broker's directory,
and a data dir locked by another process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from corpus_location import NO_CORPUS_REASON, corpus_root, snapshot
from seglog.broker.txns.state_store import TransactionStateStore
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import TransactionLogEntry, TxnState
from seglog.testing.transactions import append_idempotent, append_transactional

T0 = 1_700_000_000_000
T0_DONE = T0 + 7
P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)
NODE = BrokerConfig.from_properties({"log.dirs": "/x"}).node_id


def _manager(data_dir: Path) -> LogManager:
    props = {"log.dirs": str(data_dir), "transaction.state.log.num.partitions": "3"}
    return LogManager.open(BrokerConfig.from_properties(props))


@pytest.fixture
def txns(cli: Cli, data_dir: Path) -> Path:
    """Topic t (2 partitions). t-0: producer 1 commits (offsets 0, marker 1); producer 2 opens
    a transaction at 2 (T0, its id ``open-app`` names t-0); producer 3 opens one at 3 (T0, no
    id has it: hanging); producer 6 appends idempotently (4, now); producer 4 opens one at 5,
    now (recent). Ids: ``done`` (CompleteCommit, producer 1), ``open-app`` (Ongoing, producer 2,
    t-0 and t-1), ``idle-app`` (Empty, producer 5)."""
    cli.ok("topics", "create", "t", "--partitions", "2")
    with _manager(data_dir) as manager:
        log = manager.get_log("t", 0)
        append_transactional(log, 1, 0, 0, [(b"a", b"1")], timestamp_ms=T0)
        log.append_marker(1, 0, commit=True, coordinator_epoch=0)
        append_transactional(log, 2, 3, 0, [(b"b", b"2")], timestamp_ms=T0)
        append_transactional(log, 3, 0, 0, [(b"c", b"3")], timestamp_ms=T0)
        now = int(time.time() * 1000)  # producers idle past producer.id.expiration.ms go
        append_idempotent(log, 6, 0, 0, [(b"d", b"4")], timestamp_ms=now)
        append_transactional(log, 4, 0, 0, [(b"e", b"5")], timestamp_ms=now)
        store = TransactionStateStore.open(manager)
        store.write(
            "done",
            TransactionLogEntry(1, 0, 60_000, TxnState.COMPLETE_COMMIT, (), T0_DONE, T0),
            now_ms=T0_DONE,
        )
        store.write(
            "open-app",
            TransactionLogEntry(2, 3, 60_000, TxnState.ONGOING, (P0, P1), T0, T0),
            now_ms=T0,
        )
        store.write(
            "idle-app", TransactionLogEntry(5, 0, 30_000, TxnState.EMPTY, (), T0, -1), now_ms=T0
        )
    return data_dir


def test_list(cli: Cli, txns: Path) -> None:
    rows = [line.split() for line in cli.ok("transactions", "--list").lines]
    assert rows == [
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
        ["done", str(NODE), "1", "CompleteCommit"],
        ["idle-app", str(NODE), "5", "Empty"],
        ["open-app", str(NODE), "2", "Ongoing"],
    ]


def test_describe(cli: Cli, txns: Path) -> None:
    before = int(time.time() * 1000)
    rows = [line.split() for line in cli.ok("transactions", "--describe", "--transactional-id",
                                            "open-app").lines]  # fmt: skip
    after = int(time.time() * 1000)
    assert rows[0] == [
        "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
        "TopicPartitions",
    ]  # fmt: skip
    *fixed, duration, partitions = rows[1]
    assert fixed == [str(NODE), "open-app", "2", "3", "Ongoing", "60000", str(T0)]
    assert before - T0 <= int(duration) <= after - T0
    assert partitions == "t-0,t-1"
    idle = cli.ok("transactions", "--describe", "--transactional-id", "idle-app").lines[1].split()
    assert idle[4:8] == ["Empty", "30000", "None", "None"] and len(idle) == 8  # no partitions


def test_describe_an_unknown_id_fails(cli: Cli, txns: Path) -> None:
    result = cli.run("transactions", "--describe", "--transactional-id", "nope")
    assert result.status == 1 and result.out == ""
    assert "transactional-id `nope`: The transactionalId could not be found." in result.err


def test_describe_producers(cli: Cli, txns: Path) -> None:
    rows = [
        line.split()
        for line in cli.ok("transactions", "--describe-producers", "--topic", "t",
                           "--partition", "0").lines
    ]  # fmt: skip
    assert rows[0] == [
        "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]  # fmt: skip
    # its marker (written at the wall clock's now) ended its transaction
    assert rows[1][:4] + rows[1][5:] == ["1", "0", "0", "0", "None"]
    assert int(rows[1][4]) > T0
    assert rows[2] == ["2", "3", "-1", "0", str(T0), "2"]
    assert rows[3] == ["3", "0", "-1", "0", str(T0), "3"]
    assert rows[4][:4] == ["4", "0", "-1", "0"] and rows[4][5] == "5"
    assert rows[5][:4] + rows[5][5:] == ["6", "0", "-1", "0", "None"]
    empty = cli.ok("transactions", "--describe-producers", "--topic", "t", "--partition", "1")
    assert len(empty.lines) == 1
    missing = cli.run("transactions", "--describe-producers", "--topic", "t", "--partition", "7")
    assert missing.status == 1 and "t-7" in missing.err


def test_find_hanging_and_abort_by_start_offset(cli: Cli, txns: Path) -> None:
    found = [line.split() for line in cli.ok("transactions", "--find-hanging").lines]
    assert found[0] == [
        "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
        "LastTimestamp", "Duration(min)",
    ]  # fmt: skip
    # Producer 2's transaction is open as long but its id names t-0: not hanging; producer 4's
    # is recent: not a candidate.
    assert [row[:7] for row in found[1:]] == [["t", "0", "3", "0", "-1", "3", str(T0)]]
    assert int(found[1][7]) >= (int(time.time() * 1000) - T0) // 60_000 - 1
    assert cli.ok("transactions", "--find-hanging", "--topic", "t", "--partition", "1").lines == [
        " ".join(found[0]).replace(" ", "  ")
    ]
    # A max timeout longer than anything here finds nothing.
    assert len(cli.ok("transactions", "--find-hanging", "--max-transaction-timeout",
                      "100000000").lines) == 1  # fmt: skip

    missing = cli.run("transactions", "--abort", "--topic", "t", "--partition", "0",
                      "--start-offset", "4")  # fmt: skip
    assert missing.status == 1
    assert "Could not find any open transactions starting at offset 4 on partition t-0" in (
        missing.err
    )
    aborted = cli.run("transactions", "--abort", "--topic", "t", "--partition", "0",
                      "--start-offset", "3")  # fmt: skip
    assert (aborted.status, aborted.out, aborted.err) == (0, "", "")
    assert len(cli.ok("transactions", "--find-hanging").lines) == 1
    with _manager(txns) as manager:
        log = manager.get_log("t", 0)
        entry = log.producer_state.entry(3)
        assert entry is not None and entry.current_txn_first_offset is None
        assert [t.producer_id for t in log.aborted_transactions(0, log.log_end_offset)] == [3]
        # the last stable offset moved past the aborted transaction to producer 2's
        assert log.last_stable_offset == 2


def test_abort_by_producer_and_a_stale_epoch(cli: Cli, txns: Path) -> None:
    named = ["--abort", "--topic", "t", "--partition", "0", "--producer-id", "2"]
    stale = cli.run("transactions", *named, "--producer-epoch", "1", "--coordinator-epoch", "0")
    assert stale.status == 1
    assert "Failed to abort transaction AbortTransactionSpec(topicPartition=t-0, " in stale.err
    assert "producerId=2, producerEpoch=1, coordinatorEpoch=0)" in stale.err
    cli.ok("transactions", *named, "--producer-epoch", "3", "--coordinator-epoch", "-1")
    with _manager(txns) as manager:
        entry = manager.get_log("t", 0).producer_state.entry(2)
        assert entry is not None and entry.current_txn_first_offset is None
        assert entry.coordinator_epoch == 0  # -1 is written as 0, as Kafka's tool does


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--describe"], "--describe needs --transactional-id"),
        (["--describe-producers", "--topic", "t"], "need --topic and --partition"),
        (["--abort", "--topic", "t", "--partition", "0"], "identified either with"),
        (
            ["--abort", "--topic", "t", "--partition", "0", "--producer-id", "2"],
            "--producer-id needs --producer-epoch and --coordinator-epoch",
        ),
        (["--find-hanging", "--partition", "0"], "--partition needs --topic"),
        (["--list", "--describe"], "not allowed with"),
    ],
)
def test_usage_errors(cli: Cli, txns: Path, args: list[str], message: str) -> None:
    result = cli.run("transactions", *args)
    assert result.status == 2 and message in result.err


HOLDER = textwrap.dedent(
    """
    import sys
    from seglog.config import BrokerConfig
    from seglog.engine.log_manager import LogManager
    manager = LogManager.open(BrokerConfig.from_properties({"log.dirs": sys.argv[1]}))
    print("locked", flush=True)
    sys.stdin.read()
    manager.close()
    """
)


@pytest.fixture
def holder(txns: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the data dir's lock (as a running server does)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(txns)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline() == "locked\n"
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=120)


def test_a_held_lock_stops_the_abort_and_names_the_holder_but_reads_work(
    cli: Cli, holder: subprocess.Popen[str]
) -> None:
    abort = cli.run("--lock-wait-ms", "0", "transactions", "--abort", "--topic", "t",
                    "--partition", "0", "--start-offset", "3")  # fmt: skip
    assert abort.status == 1
    assert f"is locked by process {holder.pid} (" in abort.err
    assert len(cli.ok("transactions", "--list").lines) == 4
    assert len(cli.ok("transactions", "--find-hanging").lines) == 2


def test_a_brokers_directory_read_only(cli: Cli) -> None:
    root = corpus_root()
    if root is None or not (root / "broker/itumelengmogase-cp-kraft").is_dir():
        pytest.skip(NO_CORPUS_REASON)
    data_dir = root / "broker/itumelengmogase-cp-kraft"
    before = snapshot(data_dir)
    listed = cli.run("--data-dir", data_dir, "transactions", "--list", data_dir=False)
    assert listed.status == 0, listed.err
    assert [line.split() for line in listed.lines][1:] == [
        ["default_", str(NODE), "0", "CompleteCommit"]
    ]
    described = cli.run("--data-dir", data_dir, "transactions", "--describe",
                        "--transactional-id", "default_", data_dir=False)  # fmt: skip
    assert described.lines[1].split()[4:7] == ["CompleteCommit", "60000", "1728561475379"]
    producers = cli.run("--data-dir", data_dir, "transactions", "--describe-producers", "--topic",
                        "_confluent-ksql-default__command_topic", "--partition", "0",
                        data_dir=False)  # fmt: skip
    assert producers.status == 0, producers.err
    assert snapshot(data_dir) == before


def test_a_directory_without_transactions(cli: Cli) -> None:
    cli.ok("topics", "create", "plain")
    assert cli.ok("transactions", "--list").lines == [
        "TransactionalId  Coordinator  ProducerId  TransactionState"
    ]
    assert len(cli.ok("transactions", "--find-hanging").lines) == 1
    assert not (cli.data_dir / "__transaction_state-0").exists()  # reads create nothing
