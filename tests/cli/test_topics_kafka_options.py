"""``seglog topics`` with kafka-topics.sh's options and Kafka's topic rules.

Covers: the ``--create/--list/--describe/--alter/--delete`` action flags with ``--topic``; the
partition increase (Kafka's rule and text, the new directories, keys spread over the new
count by Kafka's murmur2 partitioner); ``--replication-factor``; ``--if-exists`` and
``--if-not-exists``; ``--bootstrap-server``'s note; ``num.partitions`` of server.properties;
internal names and ``.``/``_`` collisions refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Cli

from seglog.core.partitioner import partition_for_key
from seglog.engine.log_manager import open_log_dirs
from seglog.format.topic_names import COLLISION_WARNING


def partition_dirs(data_dir: Path, topic: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{topic}-"))


def test_dashed_actions_do_what_the_subcommands_do(cli: Cli, data_dir: Path) -> None:
    created = cli.ok(
        "topics",
        "--create",
        "--topic",
        "prices",
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        "--config",
        "cleanup.policy=compact",
    )
    assert created.lines == ["Created topic prices."]
    assert partition_dirs(data_dir, "prices") == ["prices-0", "prices-1"]
    cli.ok("topics", "create", "--topic", "orders")  # --topic on the subcommand too
    # --list: one name per line, as kafka-topics.sh prints it (scripts read it)
    assert cli.ok("topics", "--list").lines == ["orders", "prices"]
    assert cli.ok("topics", "--list", "--topic", "pri.*").lines == ["prices"]
    described = cli.ok("topics", "--describe", "--topic", "prices").out
    assert described.startswith("Topic: prices\tTopicId: ")
    assert "PartitionCount: 2\tConfigs: cleanup.policy=compact" in described
    # --describe without --topic: every topic; --json one object per topic
    names = [json.loads(line)["name"] for line in cli.ok("topics", "--describe", "--json").lines]
    assert names == ["orders", "prices"]
    altered = cli.ok("topics", "--alter", "--topic", "prices", "--config", "retention.ms=1000")
    assert altered.lines == ["Completed updating config for topic prices."]
    assert cli.ok("topics", "--delete", "--topic", "orders").lines == ["Deleted topic orders."]
    assert cli.ok("topics", "--list").lines == ["prices"]


def test_alter_partitions_increases_and_keys_follow_the_new_count(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "events", "--partitions", "2")
    result = cli.ok("topics", "--alter", "--topic", "events", "--partitions", "4")
    assert result.lines == ["Increased the partition count of topic events from 2 to 4."]
    assert partition_dirs(data_dir, "events") == [f"events-{p}" for p in range(4)]
    for p in range(4):  # each new directory is a partition Kafka recognises
        assert (
            (data_dir / f"events-{p}" / "partition.metadata")
            .read_text()
            .startswith("version: 0\ntopic_id: ")
        )
    assert "PartitionCount: 4" in cli.ok("topics", "describe", "events").out

    keys = [f"user-{i}" for i in range(40)]
    lines = "".join(f"{key}:v\n" for key in keys).encode()
    cli.ok("produce", "events", "--key-separator", ":", stdin=lines)
    with open_log_dirs([data_dir], read_only=True) as manager:
        placed = {
            record.key.decode(): p
            for p in range(4)
            for record in manager.get_log("events", p).iter_records(0)
            if record.key is not None
        }
    assert placed == {key: partition_for_key(key.encode(), 4) for key in keys}
    assert set(placed.values()) == {0, 1, 2, 3}  # the new partitions take keys


def test_partition_count_can_only_be_increased(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "3")
    for count in ("3", "2"):
        result = cli.run("topics", "alter", "t", "--partitions", count)
        assert result.status == 1
        assert (
            "The number of partitions for a topic can only be increased. Topic t currently "
            f"has 3 partitions, {count} would not be an increase." in result.err
        ), result.err
    assert partition_dirs(data_dir, "t") == ["t-0", "t-1", "t-2"]
    one = cli.ok("topics", "create", "u")
    assert one.lines == ["Created topic u."]
    result = cli.run("topics", "--alter", "--topic", "u", "--partitions", "1")
    assert "Topic u currently has 1 partition, 1 would not be an increase." in result.err


def test_a_brokers_topic_keeps_its_partition_count(cli: Cli, data_dir: Path) -> None:
    (data_dir / "broker-0").mkdir(parents=True)  # a partition found on disk, not created here
    result = cli.run("topics", "alter", "broker", "--partitions", "2")
    assert result.status == 1
    assert "written by a Kafka broker" in result.err and "cluster's metadata" in result.err
    assert partition_dirs(data_dir, "broker") == ["broker-0"]


def test_a_bad_config_with_partitions_changes_nothing(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    result = cli.run("topics", "alter", "t", "--partitions", "3", "--config", "retention.ms=x")
    assert result.status == 1 and "retention.ms" in result.err
    assert partition_dirs(data_dir, "t") == ["t-0"]


def test_replication_factor_one_only(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "a", "--replication-factor", "1")
    result = cli.run("topics", "--create", "--topic", "b", "--replication-factor", "3")
    assert result.status == 1
    assert "--replication-factor 3: seglog is single-node storage" in result.err
    assert partition_dirs(data_dir, "b") == []


def test_if_exists_and_if_not_exists(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    again = cli.run("topics", "create", "t", "--partitions", "5")
    assert again.status == 1 and "already exists" in again.err
    quiet = cli.ok("topics", "--create", "--topic", "t", "--partitions", "5", "--if-not-exists")
    assert quiet.out == "" and partition_dirs(data_dir, "t") == ["t-0", "t-1"]
    missing = cli.run("topics", "--delete", "--topic", "nope")
    assert missing.status == 1 and "Topic 'nope' does not exist as expected" in missing.err
    for action in ("--delete", "--describe", "--alter"):
        extra = ["--partitions", "9"] if action == "--alter" else []
        assert cli.ok("topics", action, "--topic", "nope", "--if-exists", *extra).out == ""
    assert cli.ok("topics", "delete", "nope", "--if-exists").out == ""
    assert cli.ok("topics", "alter", "nope", "--if-exists", "--partitions", "2").out == ""


def test_bootstrap_server_is_accepted_with_a_note(cli: Cli) -> None:
    result = cli.ok("topics", "--create", "--topic", "t", "--bootstrap-server", "localhost:9092")
    assert result.lines == ["Created topic t."]
    assert "--bootstrap-server localhost:9092 is ignored" in result.err
    listed = cli.ok("topics", "list", "--bootstrap-server", "localhost:9092")
    assert listed.lines[1].split()[0] == "t"


def test_num_partitions_of_server_properties(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"log.dirs={data_dir}\nnum.partitions=3\n")
    result = cli.run("--config", properties, "topics", "create", "t", data_dir=False)
    assert result.status == 0, result.err
    assert partition_dirs(data_dir, "t") == ["t-0", "t-1", "t-2"]
    explicit = cli.run(
        "--config", properties, "topics", "create", "u", "--partitions", "1", data_dir=False
    )
    assert explicit.status == 0 and partition_dirs(data_dir, "u") == ["u-0"]
    properties.write_text(f"log.dirs={data_dir}\nnum.partitions=0\n")
    bad = cli.run("--config", properties, "topics", "create", "v", data_dir=False)
    assert bad.status == 1 and "num.partitions" in bad.err


def test_internal_topic_names_are_refused(cli: Cli, data_dir: Path) -> None:
    for name in ("__consumer_offsets", "__transaction_state", "__share_group_state"):
        result = cli.run("topics", "create", name, "--partitions", "1")
        assert result.status == 1
        assert f"Creation of internal topic {name} is prohibited" in result.err, result.err
    result = cli.run("topics", "--create", "--topic", "__cluster_metadata")
    assert "Creation of internal topic __cluster_metadata is prohibited" in result.err
    assert not data_dir.exists() or not [p for p in data_dir.iterdir() if "__" in p.name]


def test_dot_underscore_collision_is_refused(cli: Cli, data_dir: Path) -> None:
    created = cli.ok("topics", "create", "a_b")
    assert created.lines == ["Created topic a_b."]
    assert COLLISION_WARNING in created.err  # kafka-topics.sh's warning, on stderr
    result = cli.run("topics", "--create", "--topic", "a.b")
    assert result.status == 1
    assert "Topic 'a.b' collides with existing topic: a_b" in result.err, result.err
    assert partition_dirs(data_dir, "a.b") == []
    plain = cli.ok("topics", "create", "ab")
    assert COLLISION_WARNING not in plain.err


def test_kafka_usage_rules(cli: Cli) -> None:
    two = cli.run("topics", "--create", "--delete", "--topic", "t")
    assert two.status == 2 and "exactly one action" in two.err
    misplaced = cli.run("topics", "--list", "--partitions", "3")
    assert misplaced.status == 2
    assert "--partitions goes only with --create or --alter, not --list" in misplaced.err
    rf = cli.run("topics", "--alter", "--topic", "t", "--replication-factor", "1")
    assert rf.status == 2 and "--replication-factor goes only with --create" in rf.err
    no_topic = cli.run("topics", "--delete")
    assert no_topic.status == 2 and "--delete needs --topic" in no_topic.err
    none = cli.run("topics")
    assert none.status == 2 and "an action is required" in none.err
    both = cli.run("topics", "create", "x", "--topic", "y")
    assert both.status == 1 and "two topic names" in both.err
