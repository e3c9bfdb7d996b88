"""``seglog consume --isolation-level read_committed``: Kafka's read_committed consumer.

The partition holds, over three segments, an aborted transaction, a committed one, records
outside any transaction, an idempotent producer's batch and a transaction still open. The
expected records are written out by hand and agree with what aiokafka's consumer keeps of
the same bytes given the partition's ``.txnindex`` entries (its Fetch's aborted list).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.engine.log_manager import open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.testing.transactions import append_idempotent, append_transactional
from support.txn_oracle import read_committed_with_aiokafka


def _plain(key: bytes, value: bytes) -> bytes:
    builder = BatchBuilder(max_batch_bytes=1 << 20)
    builder.append(0, key, value)
    return builder.build()


@pytest.fixture
def txn_topic(cli: Cli) -> Cli:
    """Topic ``t``, three segments; the offset of each append is in its comment. Producer 1
    aborts two transactions, producer 2 commits one, producer 3's is still open (LSO 9)."""
    with open_log_dirs([cli.data_dir]) as manager:
        manager.create_topic("t", 1, configs={"cleanup.policy": "compact"})
        log = manager.get_log("t", 0)
        append_transactional(log, 1, 0, 0, [(b"a", b"a0"), (b"a", b"a1")])  # 0-1
        append_transactional(log, 2, 0, 0, [(b"b", b"b0")])  # 2
        log.append(_plain(b"c", b"c0"))  # 3
        log.roll()
        log.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 4: ABORT p1
        append_idempotent(log, 4, 0, 0, [(b"d", b"d0")])  # 5
        log.append_marker(2, 0, commit=True, coordinator_epoch=0)  # 6: COMMIT p2
        append_transactional(log, 1, 0, 2, [(b"a", b"a2")])  # 7: p1's next txn
        log.roll()
        log.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 8: ABORT p1
        append_transactional(log, 3, 0, 0, [(b"e", b"e0")])  # 9: open
        log.append(_plain(b"f", b"f0"))  # 10
        assert log.last_stable_offset == 9
    return cli


COMMITTED = [(2, "b0"), (3, "c0"), (5, "d0")]
EVERYTHING = [
    (0, "a0"),
    (1, "a1"),
    (2, "b0"),
    (3, "c0"),
    (5, "d0"),
    (7, "a2"),
    (9, "e0"),
    (10, "f0"),
]


def _read(cli: Cli, *args: str) -> list[tuple[int, str]]:
    result = cli.ok("consume", "t", "--format", "json", *args)
    return [(r["offset"], r["value"]) for r in map(json.loads, result.lines)]


def test_read_committed_agrees_with_aiokafka(txn_topic: Cli) -> None:
    got = _read(txn_topic, "--isolation-level", "read_committed")
    assert got == COMMITTED
    with open_log_dirs([txn_topic.data_dir], read_only=True) as manager:
        log = manager.get_log("t", 0)
        aborted = [(a.producer_id, a.first_offset) for a in log.aborted_transactions(0, 11)]
        lso = log.last_stable_offset
        directory = log.directory
    assert aborted == [(1, 0), (1, 7)]
    oracle = read_committed_with_aiokafka(directory, aborted, last_stable_offset=lso)
    assert [(o, v.decode()) for o, _, v in oracle if v is not None] == got


def test_read_uncommitted_reads_every_data_record(txn_topic: Cli) -> None:
    assert _read(txn_topic) == EVERYTHING
    assert _read(txn_topic, "--isolation-level", "read_uncommitted") == EVERYTHING


@pytest.mark.parametrize("path", ["fast", "slow"])
def test_both_consume_paths_give_the_committed_records(
    txn_topic: Cli, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setenv("SEGLOG_CONSUME_PATH", path)
    assert _read(txn_topic, "--isolation-level", "read_committed") == COMMITTED
    text = txn_topic.ok("consume", "t", "--isolation-level", "read_committed")
    assert text.out_bytes == b"b0\nc0\nd0\n"


def test_read_committed_under_read_compacted(txn_topic: Cli) -> None:
    """Without a published copy a read-compacted read is the log's: still read_committed."""
    args = ("--read-compacted", "--isolation-level", "read_committed")
    assert _read(txn_topic, *args) == COMMITTED


def test_offsets_and_limits_apply_within_the_committed_view(txn_topic: Cli) -> None:
    assert _read(
        txn_topic, "--isolation-level", "read_committed", "--partition", "0", "--offset", "3"
    ) == [(3, "c0"), (5, "d0")]
    assert _read(txn_topic, "--isolation-level", "read_committed", "--max-records", "1") == [
        (2, "b0")
    ]
    # an offset past the LSO (the open transaction's data) reads nothing yet
    args = ("--isolation-level", "read_committed", "--partition", "0", "--offset", "10")
    assert _read(txn_topic, *args) == []
    # latest is the last stable offset: nothing to read below it
    assert _read(txn_topic, "--isolation-level", "read_committed", "--offset", "latest") == []


def test_the_open_transaction_becomes_readable_once_committed(
    txn_topic: Cli, tmp_path: Path
) -> None:
    with open_log_dirs([txn_topic.data_dir]) as manager:
        log = manager.get_log("t", 0)
        log.append_marker(3, 0, commit=True, coordinator_epoch=0)  # 11: COMMIT p3
    assert _read(txn_topic, "--isolation-level", "read_committed") == [
        *COMMITTED,
        (9, "e0"),
        (10, "f0"),
    ]


@pytest.mark.parametrize("path", ["fast", "slow"])
def test_fast_path_stops_at_the_lso_when_nothing_was_aborted(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """No aborted transaction in the range: the fast path reads it, up to the LSO, markers
    left out."""
    with open_log_dirs([cli.data_dir]) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        append_transactional(log, 2, 0, 0, [(b"b", b"b0"), (b"b", b"b1")])  # 0-1
        log.append_marker(2, 0, commit=True, coordinator_epoch=0)  # 2
        log.append(_plain(b"c", b"c0"))  # 3
        append_transactional(log, 3, 0, 0, [(b"e", b"e0")])  # 4: open, LSO 4
        log.append(_plain(b"f", b"f0"))  # 5
    monkeypatch.setenv("SEGLOG_CONSUME_PATH", path)
    committed = [(0, "b0"), (1, "b1"), (3, "c0")]
    assert _read(cli, "--isolation-level", "read_committed") == committed
    assert cli.ok("consume", "t", "--isolation-level", "read_committed").out_bytes == (
        b"b0\nb1\nc0\n"
    )


def test_follow_waits_for_the_transaction_to_end(tmp_path: Path) -> None:
    """A following read_committed consumer (a real process) stops below the open
    transaction, and once it is aborted reads on past it without its records."""
    import os
    import subprocess
    import sys

    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        log.append(_plain(b"z", b"z0"))  # 0
        append_transactional(log, 1, 0, 0, [(b"a", b"a0")])  # 1: open
        log.append(_plain(b"b", b"b0"))  # 2
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data), "consume", "t"]
    command += ["--isolation-level", "read_committed", "--follow", "--poll-ms", "50"]
    command += ["--max-messages", "3"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"z0\n"  # up to the LSO (1), then it waits
        with open_log_dirs([data]) as manager:
            log = manager.get_log("t", 0)
            log.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 3: ABORT
            log.append(_plain(b"c", b"c0"))  # 4
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out == b"b0\nc0\n"
    assert err == b"Processed a total of 3 messages\n"
