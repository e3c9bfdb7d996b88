"""The admin APIs of ``seglog serve`` driven by confluent-kafka's AdminClient (librdkafka).

A real server process per test module (``serve_process.serve``); the files it leaves are then
read back with seglog's own API after it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from serve_process import ServeProcess, serve

from seglog.broker.handlers.config_entries import IGNORED_TOPIC_DEFAULTS
from seglog.config import TOPIC_CONFIG_KEYS
from seglog.engine.log_manager import open_log_dirs
from seglog.format.topic_names import PartitionDirKind, parse_partition_dir_name

TIMEOUT_S = 30
EVERY_TOPIC_CONFIG = set(TOPIC_CONFIG_KEYS) | set(IGNORED_TOPIC_DEFAULTS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve(tmp_path_factory.mktemp("admin-confluent")) as running:
        yield running


@pytest.fixture(scope="module")
def admin(server: ServeProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


def _create(admin: AdminClient, *topics: NewTopic, **kwargs: Any) -> dict[str, object]:
    """Each topic's result: None, or the KafkaError it failed with."""
    out: dict[str, object] = {}
    for name, future in admin.create_topics(list(topics), **kwargs).items():
        try:
            out[name] = future.result(TIMEOUT_S)
        except KafkaException as error:
            out[name] = error.args[0]
    return out


def _partitions(admin: AdminClient, name: str) -> list[int] | None:
    """The topic's partition ids, or None when the server does not know it (Metadata asked by
    name: librdkafka's all-topics Metadata request is not used here)."""
    [future] = admin.describe_topics(TopicCollection([name])).values()
    try:
        description = future.result(TIMEOUT_S)
    except KafkaException as error:
        assert error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, error
        return None
    return sorted(partition.id for partition in description.partitions)


def _code(result: object) -> int:
    assert isinstance(result, KafkaError), result
    return int(result.code())


def _topic_configs(admin: AdminClient, name: str) -> dict[str, Any]:
    [future] = admin.describe_configs([ConfigResource("TOPIC", name)]).values()
    configs: dict[str, Any] = future.result(TIMEOUT_S)
    return configs


def test_create_topic_with_configs_is_described_with_every_config(admin: AdminClient) -> None:
    results = _create(
        admin,
        NewTopic("orders", 3, 1, config={"cleanup.policy": "compact", "retention.ms": "60000"}),
    )
    assert results == {"orders": None}
    configs = _topic_configs(admin, "orders")
    assert set(configs) == EVERY_TOPIC_CONFIG  # every config, for read-modify-write
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "60000"
    assert configs["segment.bytes"].value == str(1 << 30)
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].is_read_only is False
    assert configs["min.insync.replicas"].value == "1"
    assert _partitions(admin, "orders") == [0, 1, 2]


def test_create_topic_errors(admin: AdminClient) -> None:
    assert _create(admin, NewTopic("dup", 1, 1)) == {"dup": None}
    results = _create(
        admin,
        NewTopic("dup", 1, 1),
        NewTopic("replicated", 1, 3),
        NewTopic("badconfig", 1, 1, config={"retention.msx": "1"}),
        NewTopic("badvalue", 1, 1, config={"segment.bytes": "ten"}),
        NewTopic("zero", 0, 1),
        NewTopic("bad/name", 1, 1),
        NewTopic("__consumer_offsets", 50, 1),
    )
    assert _code(results["dup"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert _code(results["replicated"]) == KafkaError.INVALID_REPLICATION_FACTOR
    assert _code(results["badconfig"]) == KafkaError.INVALID_CONFIG
    assert "retention.msx" in results["badconfig"].str()  # type: ignore[attr-defined]
    assert _code(results["badvalue"]) == KafkaError.INVALID_CONFIG
    assert "segment.bytes" in results["badvalue"].str()  # type: ignore[attr-defined]
    assert _code(results["zero"]) == KafkaError.INVALID_PARTITIONS
    assert _code(results["bad/name"]) == KafkaError.TOPIC_EXCEPTION
    assert _code(results["__consumer_offsets"]) == KafkaError.TOPIC_EXCEPTION
    for name in ("replicated", "badconfig", "badvalue", "zero"):
        assert _partitions(admin, name) is None


def test_validate_only_creates_nothing(admin: AdminClient) -> None:
    results = _create(admin, NewTopic("dry", 2, 1), validate_only=True)
    assert results == {"dry": None}
    bad = _create(admin, NewTopic("dry2", 1, 1, config={"cleanup.policy": "x"}), validate_only=True)
    assert _code(bad["dry2"]) == KafkaError.INVALID_CONFIG
    assert _partitions(admin, "dry") is None


def test_incremental_alter_set_append_delete(admin: AdminClient) -> None:
    assert _create(admin, NewTopic("alterme", 1, 1, config={"retention.ms": "1000"})) == {
        "alterme": None
    }
    resource = ConfigResource(
        "TOPIC",
        "alterme",
        incremental_configs=[
            ConfigEntry(
                "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND
            ),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(TIMEOUT_S)
    configs = _topic_configs(admin, "alterme")
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].value == str(7 * 24 * 3600 * 1000)
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].value == "1048576"
    subtract = ConfigResource(
        "TOPIC",
        "alterme",
        incremental_configs=[
            ConfigEntry(
                "cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT
            )
        ],
    )
    [future] = admin.incremental_alter_configs([subtract]).values()
    future.result(TIMEOUT_S)
    assert _topic_configs(admin, "alterme")["cleanup.policy"].value == "compact"


def test_incremental_alter_errors(admin: AdminClient) -> None:
    assert _create(admin, NewTopic("strict", 1, 1)) == {"strict": None}

    def alter(resource: ConfigResource) -> KafkaError:
        [future] = admin.incremental_alter_configs([resource]).values()
        with pytest.raises(KafkaException) as raised:
            future.result(TIMEOUT_S)
        error: KafkaError = raised.value.args[0]
        return error

    bad_value = alter(
        ConfigResource(
            "TOPIC",
            "strict",
            incremental_configs=[
                ConfigEntry("segment.bytes", "-5", incremental_operation=AlterConfigOpType.SET)
            ],
        )
    )
    assert bad_value.code() == KafkaError.INVALID_CONFIG
    assert "segment.bytes" in bad_value.str()
    append_scalar = alter(
        ConfigResource(
            "TOPIC",
            "strict",
            incremental_configs=[
                ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)
            ],
        )
    )
    assert append_scalar.code() == KafkaError.INVALID_CONFIG
    broker = alter(
        ConfigResource(
            "BROKER",
            "1",
            incremental_configs=[
                ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)
            ],
        )
    )
    assert broker.code() == KafkaError.INVALID_REQUEST
    unknown = alter(
        ConfigResource(
            "TOPIC",
            "missing-topic",
            incremental_configs=[
                ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.SET)
            ],
        )
    )
    assert unknown.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert _topic_configs(admin, "strict")["segment.bytes"].value == str(1 << 30)


def test_create_partitions_increase_only(admin: AdminClient) -> None:
    assert _create(admin, NewTopic("grow", 2, 1)) == {"grow": None}
    [future] = admin.create_partitions([NewPartitions("grow", 5)]).values()
    future.result(TIMEOUT_S)
    assert _partitions(admin, "grow") == list(range(5))
    [future] = admin.create_partitions([NewPartitions("grow", 3)]).values()
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_describe_cluster_and_broker_configs(admin: AdminClient, server: ServeProcess) -> None:
    cluster = admin.describe_cluster().result(TIMEOUT_S)
    assert [node.id for node in cluster.nodes] == [1]
    host, port = server.bootstrap.rsplit(":", 1)
    assert (cluster.nodes[0].host, cluster.nodes[0].port) == (host, int(port))
    assert cluster.cluster_id
    [future] = admin.describe_configs([ConfigResource("BROKER", "1")]).values()
    configs = future.result(TIMEOUT_S)
    assert configs["num.partitions"].value == "1"
    assert configs["num.partitions"].is_read_only is True
    assert configs["log.dirs"].value == str(server.data_dir)
    assert configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["delete.topic.enable"].value == "true"
    [unknown] = admin.describe_configs([ConfigResource("TOPIC", "no-such-topic")]).values()
    with pytest.raises(KafkaException) as raised:
        unknown.result(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_delete_topics(admin: AdminClient) -> None:
    assert _create(admin, NewTopic("doomed", 2, 1)) == {"doomed": None}
    futures = admin.delete_topics(["doomed", "never-was", "__consumer_offsets"])
    futures["doomed"].result(TIMEOUT_S)
    for name, code in (
        ("never-was", KafkaError.UNKNOWN_TOPIC_OR_PART),
        ("__consumer_offsets", KafkaError.INVALID_REQUEST),
    ):
        with pytest.raises(KafkaException) as raised:
            futures[name].result(TIMEOUT_S)
        assert raised.value.args[0].code() == code
    assert _partitions(admin, "doomed") is None


def test_files_on_disk_after_admin_operations(tmp_path: Path) -> None:
    """What the wire did is what seglog finds on disk once the server has stopped."""
    with serve(tmp_path) as running:
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        created = _create(
            admin,
            NewTopic("kept", 2, 1, config={"cleanup.policy": "compact", "segment.bytes": "4096"}),
            NewTopic("gone", 1, 1),
        )
        assert created == {"kept": None, "gone": None}
        [future] = admin.create_partitions([NewPartitions("kept", 4)]).values()
        future.result(TIMEOUT_S)
        admin.delete_topics(["gone"])["gone"].result(TIMEOUT_S)
    kinds: dict[PartitionDirKind, list[tuple[str, int]]] = {}
    for path in tmp_path.iterdir():
        parsed = parse_partition_dir_name(path.name) if path.is_dir() else None
        if parsed is not None:
            kinds.setdefault(parsed.kind, []).append((parsed.topic, parsed.partition))
    assert sorted(kinds[PartitionDirKind.LIVE]) == [("kept", p) for p in range(4)]
    assert kinds.get(PartitionDirKind.DELETE, []) in ([], [("gone", 0)])  # removed, or pending
    with open_log_dirs([tmp_path], read_only=True) as manager:
        assert manager.topic_names() == ["kept"]
        description = manager.describe_topic("kept")
        assert description.overrides == {"cleanup.policy": "compact", "segment.bytes": "4096"}
        assert [p.partition for p in description.partitions] == [0, 1, 2, 3]
        assert description.topic_id
        for partition in range(4):
            metadata = (tmp_path / f"kept-{partition}" / "partition.metadata").read_text()
            assert description.topic_id in metadata
