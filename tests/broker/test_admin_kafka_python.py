"""The admin APIs of ``seglog serve`` driven by kafka-python's KafkaAdminClient.

kafka-python sends the newest versions seglog serves (CreateTopics v7, DeleteTopics v6,
DescribeConfigs v4, IncrementalAlterConfigs v1, DescribeCluster v1, DescribeLogDirs v4), so
these tests cover the top of each range; confluent-kafka's test covers the older versions
librdkafka sends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from kafka.errors import (
    InvalidConfigurationError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from serve_process import ServeProcess, serve

from seglog.broker.handlers.config_entries import IGNORED_TOPIC_DEFAULTS
from seglog.broker.state import topic_uuid
from seglog.config import TOPIC_CONFIG_KEYS
from seglog.engine.log_manager import open_log_dirs

EVERY_TOPIC_CONFIG = set(TOPIC_CONFIG_KEYS) | set(IGNORED_TOPIC_DEFAULTS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve(tmp_path_factory.mktemp("admin-kafka-python")) as running:
        yield running


@pytest.fixture(scope="module")
def admin(server: ServeProcess) -> Iterator[Any]:
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    yield client
    client.close()


def _topic_configs(admin: Any, name: str, **kwargs: Any) -> dict[str, Any]:
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name)], config_filter="all", **kwargs
    )
    configs: dict[str, Any] = described["topic"][name]
    return configs


def test_create_topics_v7_echoes_configs_and_topic_id(admin: Any, server: ServeProcess) -> None:
    response = admin.create_topics(
        [NewTopic("events", 2, 1, topic_configs={"cleanup.policy": "compact"})]
    )
    [result] = response["topics"]
    assert result["error_code"] == 0
    assert (result["num_partitions"], result["replication_factor"]) == (2, 1)
    assert set(result["configs"]) == EVERY_TOPIC_CONFIG
    assert result["configs"]["cleanup.policy"]["value"] == "compact"
    assert result["configs"]["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert result["configs"]["segment.ms"]["config_source"] == "DEFAULT_CONFIG"
    topic_id = uuid.UUID(str(result["topic_id"]))
    assert topic_id != uuid.UUID(int=0)
    [described] = admin.describe_topics(["events"])
    assert len(described["partitions"]) == 2
    assert admin.list_topics() == ["events"]


def test_default_partitions_and_errors(admin: Any) -> None:
    response = admin.create_topics([NewTopic("defaults", -1, -1)])
    assert response["topics"][0]["num_partitions"] == 1  # num.partitions
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("defaults", 1, 1)])
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topics([NewTopic("copies", 1, 2)])
    with pytest.raises(InvalidConfigurationError, match=r"compression\.type"):
        admin.create_topics([NewTopic("squash", 1, 1, topic_configs={"compression.type": "rar"})])
    assert "copies" not in admin.list_topics()


def test_describe_configs_synonyms_types_documentation(admin: Any) -> None:
    admin.create_topics([NewTopic("documented", 1, 1, topic_configs={"retention.ms": "5000"})])
    configs = _topic_configs(admin, "documented", include_synonyms=True)
    assert set(configs) == EVERY_TOPIC_CONFIG
    retention = configs["retention.ms"]
    assert retention["value"] == "5000"
    assert retention["config_type"] == "LONG"
    assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
        ("retention.ms", "5000", "DYNAMIC_TOPIC_CONFIG"),
        ("log.retention.hours", "168", "DEFAULT_CONFIG"),
    ]
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    assert configs["preallocate"]["config_type"] == "BOOLEAN"


def test_alter_configs_goes_incremental(admin: Any) -> None:
    admin.create_topics([NewTopic("tuned", 1, 1)])
    resource = ConfigResource(
        ConfigResourceType.TOPIC, "tuned", configs={"retention.ms": "7000", "segment.bytes": "2048"}
    )
    assert admin.alter_configs([resource]) == {"topic": {"tuned": "OK"}}
    configs = _topic_configs(admin, "tuned")
    assert (configs["retention.ms"]["value"], configs["segment.bytes"]["value"]) == ("7000", "2048")
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    reset = ConfigResource(ConfigResourceType.TOPIC, "tuned", configs=["retention.ms"])
    assert admin.reset_configs([reset]) == {"topic": {"tuned": "OK"}}
    configs = _topic_configs(admin, "tuned")
    assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["segment.bytes"]["value"] == "2048"
    bad = ConfigResource(ConfigResourceType.TOPIC, "tuned", configs={"segment.bytes": "1"})
    result = admin.alter_configs([bad])["topic"]["tuned"]
    assert "InvalidConfigurationError" in result and "segment.bytes" in result
    dry = ConfigResource(ConfigResourceType.TOPIC, "tuned", configs={"segment.bytes": "4096"})
    assert admin.alter_configs([dry], validate_only=True) == {"topic": {"tuned": "OK"}}
    assert _topic_configs(admin, "tuned")["segment.bytes"]["value"] == "2048"


def test_describe_cluster_log_dirs_and_partitions(admin: Any, server: ServeProcess) -> None:
    cluster = admin.describe_cluster()
    host, port = server.bootstrap.rsplit(":", 1)
    assert cluster["controller_id"] == 1
    assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [
        (1, host, int(port))
    ]
    admin.create_topics([NewTopic("sized", 1, 1)])
    admin.create_partitions({"sized": NewPartitions(3)})
    [broker] = admin.describe_log_dirs()
    [log_dir] = broker["log_dirs"]
    assert log_dir["log_dir"] == str(server.data_dir.resolve())
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    sized = [t for t in log_dir["topics"] if t["name"] == "sized"]
    assert [p["partition_index"] for p in sized[0]["partitions"]] == [0, 1, 2]
    assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in sized[0]["partitions"])


def test_broker_configs_are_static_and_read_only(admin: Any) -> None:
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all"
    )
    configs = described["broker"]["1"]
    assert configs["node.id"]["value"] == "1"
    assert configs["auto.create.topics.enable"]["value"] == "true"
    assert all(entry["read_only"] for entry in configs.values())


def test_delete_by_name_then_the_data_is_gone(admin: Any) -> None:
    admin.create_topics([NewTopic("shortlived", 2, 1)])
    admin.delete_topics(["shortlived"])
    assert "shortlived" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["shortlived"])


def test_deletion_disabled_and_files_on_disk(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("delete.topic.enable=false\nnum.partitions=3\nlog.retention.hours=24\n")
    data = tmp_path / "data"
    data.mkdir()
    with serve(data, config=config) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap)
        try:
            response = admin.create_topics(
                [NewTopic("pinned", -1, -1, topic_configs={"max.message.bytes": "2000"})]
            )
            [result] = response["topics"]
            assert result["num_partitions"] == 3
            assert result["configs"]["retention.ms"]["value"] == str(24 * 3600 * 1000)
            assert result["configs"]["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
            with pytest.raises(TopicDeletionDisabledError):
                admin.delete_topics(["pinned"])
            wire_id = uuid.UUID(str(result["topic_id"]))
        finally:
            admin.close()
    with open_log_dirs([data], read_only=True) as manager:
        description = manager.describe_topic("pinned")
        assert description.overrides == {"max.message.bytes": "2000"}
        assert [p.partition for p in description.partitions] == [0, 1, 2]
        assert topic_uuid(description.topic_id) == wire_id
