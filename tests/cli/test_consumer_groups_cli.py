"""``seglog consumer-groups`` on real directories, with real commits through the offsets store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.broker.groups.offsets_store import OffsetAndMetadata, OffsetsStore
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.consumer_protocol import encode_assignment, encode_subscription
from seglog.format.group_records import GroupMetadataValue, MemberMetadata
from seglog.format.topic_names import TopicPartition

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
T0_ISO = "2023-11-14T22:13:20.000+00:00"
T0_PLUS_5 = "2023-11-14T22:13:20.005Z"
P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _manager(data_dir: Path) -> LogManager:
    props = {"log.dirs": str(data_dir), "offsets.topic.num.partitions": "3"}
    return LogManager.open(BrokerConfig.from_properties(props))


def _committed(data_dir: Path, group: str) -> dict[TopicPartition, int]:
    with _manager(data_dir) as manager:
        return {tp: v.offset for tp, v in OffsetsStore.open(manager).committed(group).items()}


@pytest.fixture
def groups(cli: Cli, data_dir: Path) -> Path:
    """Topic t (2 partitions, 10 records each at T0..T0+9) and groups: ``idle`` (Empty, offsets
    3 and 8), ``busy`` (one member owning t-0, offset 4), ``simple`` (offsets only)."""
    cli.ok("topics", "create", "t", "--partitions", "2")
    with _manager(data_dir) as manager:
        for p in (0, 1):
            records = [(None, b"v%d" % i, (), T0 + i) for i in range(10)]
            manager.get_log("t", p).append_records(records)
        store = OffsetsStore.open(manager)
        store.commit("idle", {P0: OffsetAndMetadata(3), P1: OffsetAndMetadata(8)}, now_ms=T0)
        store.store_group("idle", GroupMetadataValue("consumer", 4, None, None, T0), now_ms=T0)
        member = MemberMetadata(
            "m-1", "client-1", "/127.0.0.1", 300000, 45000,
            encode_subscription(["t"]), encode_assignment({"t": [0]}),
        )  # fmt: skip
        busy = GroupMetadataValue("consumer", 2, "range", "m-1", T0, (member,))
        store.store_group("busy", busy, now_ms=T0)
        store.commit("busy", {P0: OffsetAndMetadata(4)}, now_ms=T0)
        store.commit("simple", {P1: OffsetAndMetadata(10)}, now_ms=T0)
    return data_dir


def test_list(cli: Cli, groups: Path) -> None:
    assert cli.ok("consumer-groups", "--list").lines == ["busy", "idle", "simple"]


def test_describe_shows_offsets_lag_and_owners(cli: Cli, groups: Path) -> None:
    result = cli.ok("consumer-groups", "--describe", "--group", "idle", "--group", "busy")
    rows = [line.split() for line in result.lines]
    assert rows[0] == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    assert rows[1] == ["idle", "t", "0", "3", "10", "7", "-", "-", "-"]
    assert rows[2] == ["idle", "t", "1", "8", "10", "2", "-", "-", "-"]
    assert rows[4] == ["busy", "t", "0", "4", "10", "6", "m-1", "/127.0.0.1", "client-1"]
    assert "Consumer group 'idle' has no active members." in result.err
    assert "'busy'" not in result.err


def test_describe_state_and_members(cli: Cli, groups: Path) -> None:
    state = cli.ok("consumer-groups", "--describe", "--group", "busy", "--state")
    assert state.lines[1].split() == ["busy", "range", "Stable", "1", "2"]
    idle = cli.ok("consumer-groups", "--describe", "--group", "idle", "--state")
    assert idle.lines[1].split() == ["idle", "-", "Empty", "0", "4"]
    members = cli.ok("consumer-groups", "--describe", "--group", "busy", "--members")
    assert members.lines[1].split() == ["busy", "m-1", "/127.0.0.1", "client-1", "1"]


def test_describe_unknown_group_fails(cli: Cli, groups: Path) -> None:
    result = cli.run("consumer-groups", "--describe", "--group", "nope")
    assert result.status == 1
    assert "Consumer group 'nope' does not exist." in result.err


def test_reset_is_a_dry_run_by_default(cli: Cli, groups: Path) -> None:
    result = cli.ok("consumer-groups", "--reset-offsets", "--group", "idle", "--all-topics",
                    "--to-earliest")  # fmt: skip
    assert result.err.startswith("WARN: No action will be performed as the --execute option")
    assert [line.split() for line in result.lines] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        ["idle", "t", "0", "0"],
        ["idle", "t", "1", "0"],
    ]
    dry = cli.ok("consumer-groups", "--reset-offsets", "--group", "idle", "--all-topics",
                 "--to-latest", "--dry-run")  # fmt: skip
    assert dry.err == ""
    assert _committed(groups, "idle") == {P0: 3, P1: 8}


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        (["--to-earliest"], {P0: 0, P1: 0}),
        (["--to-latest"], {P0: 10, P1: 10}),
        (["--to-offset", "5"], {P0: 5, P1: 5}),
        (["--shift-by", "-2"], {P0: 1, P1: 6}),
        (["--shift-by", "5"], {P0: 8, P1: 10}),  # t-1: 13 is past the end, set to 10
        (["--to-datetime", T0_PLUS_5], {P0: 5, P1: 5}),
        (["--to-datetime", "2030-01-01T00:00:00"], {P0: 10, P1: 10}),
    ],
)
def test_reset_execute(
    cli: Cli, groups: Path, how: list[str], expected: dict[TopicPartition, int]
) -> None:
    cli.ok("consumer-groups", "--reset-offsets", "--group", "idle", "--topic", "t", *how,
           "--execute")  # fmt: skip
    assert _committed(groups, "idle") == expected


def test_reset_clamps_with_kafkas_warning_and_takes_partitions(cli: Cli, groups: Path) -> None:
    result = cli.ok("consumer-groups", "--reset-offsets", "--group", "simple", "--topic", "t:1",
                    "--to-offset", "99", "--execute")  # fmt: skip
    assert (
        "New offset (99) is higher than latest offset for topic partition t-1. Value will "
        "be set to 10" in result.err
    )
    assert result.lines[1].split() == ["simple", "t", "1", "10"]
    cli.ok("consumer-groups", "--reset-offsets", "--group", "simple", "--topic", "t:0",
           "--to-datetime", T0_ISO, "--execute")  # fmt: skip
    assert _committed(groups, "simple") == {P0: 0, P1: 10}


def test_reset_and_delete_refuse_a_group_with_members(cli: Cli, groups: Path) -> None:
    reset = cli.run("consumer-groups", "--reset-offsets", "--group", "busy", "--all-topics",
                    "--to-earliest", "--execute")  # fmt: skip
    assert reset.status == 1
    assert "group 'busy' is inactive, but the current state is Stable" in reset.err
    delete = cli.run("consumer-groups", "--delete", "--group", "busy")
    assert delete.status == 1
    assert "Group 'busy' could not be deleted due to: GroupNotEmpty" in delete.err
    assert _committed(groups, "busy") == {P0: 4}


def test_delete(cli: Cli, groups: Path) -> None:
    result = cli.run("consumer-groups", "--delete", "--group", "idle", "--group", "nope")
    assert result.status == 1
    assert result.lines == ["Deletion of requested consumer groups ('idle') was successful."]
    assert "Group 'nope' could not be deleted due to: GroupIdNotFound" in result.err
    assert cli.ok("consumer-groups", "--list").lines == ["busy", "simple"]
    assert _committed(groups, "idle") == {}


def test_usage_errors(cli: Cli, groups: Path) -> None:
    assert cli.run("consumer-groups", "--describe").status == 2
    assert (
        cli.run("consumer-groups", "--reset-offsets", "--group", "idle", "--to-earliest").status
        == 2
    )
    assert (
        cli.run("consumer-groups", "--reset-offsets", "--group", "idle", "--all-topics").status == 2
    )
    bad = cli.run("consumer-groups", "--reset-offsets", "--group", "idle", "--all-topics",
                  "--to-datetime", "yesterday")  # fmt: skip
    assert bad.status == 1 and "ISO 8601" in bad.err


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
def holder(groups: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the data dir's lock (as a running server does)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(groups)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline() == "locked\n"
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=120)


def test_a_held_lock_stops_writes_and_names_the_holder_but_reads_work(
    cli: Cli, holder: subprocess.Popen[str]
) -> None:
    delete = cli.run("--lock-wait-ms", "0", "consumer-groups", "--delete", "--group", "idle")
    assert delete.status == 1
    assert f"is locked by process {holder.pid} (" in delete.err
    reset = cli.run("--lock-wait-ms", "0", "consumer-groups", "--reset-offsets", "--group",
                    "idle", "--all-topics", "--to-earliest", "--execute")  # fmt: skip
    assert reset.status == 1 and f"process {holder.pid}" in reset.err
    assert cli.ok("consumer-groups", "--list").lines == ["busy", "idle", "simple"]
    assert cli.ok("consumer-groups", "--describe", "--group", "idle").lines[1].split()[3] == "3"
    dry = cli.ok("consumer-groups", "--reset-offsets", "--group", "idle", "--all-topics",
                 "--to-earliest", "--dry-run")  # fmt: skip
    assert dry.lines[1].split() == ["idle", "t", "0", "0"]


def test_deleting_a_topic_tombstones_its_committed_offsets(cli: Cli, groups: Path) -> None:
    cli.ok("topics", "create", "u", "--partitions", "1")
    with _manager(groups) as manager:
        OffsetsStore.open(manager).commit("idle", {TopicPartition("u", 0): OffsetAndMetadata(0)},
                                          now_ms=T0)  # fmt: skip
    cli.ok("topics", "delete", "t")
    # "simple" had offsets on t only; the groups with metadata stay
    assert cli.ok("consumer-groups", "--list").lines == ["busy", "idle"]
    assert _committed(groups, "idle") == {TopicPartition("u", 0): 0}
    assert _committed(groups, "busy") == {}
