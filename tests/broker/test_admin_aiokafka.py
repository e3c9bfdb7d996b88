"""The admin APIs of ``seglog serve`` driven by aiokafka's AIOKafkaAdminClient.

aiokafka sends the oldest versions of the ranges (CreateTopics v3, DeleteTopics v3,
DescribeConfigs v2, CreatePartitions v1) and alters configs only through the legacy
AlterConfigs (v1), whose Kafka semantics (the configs sent replace the topic's whole override
set) are checked here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from serve_process import serve

from seglog.engine.log_manager import open_log_dirs
from seglog.protocol.error_codes import ErrorCode


async def _configs(admin: Any, name: str) -> dict[str, tuple[str, int]]:
    [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    [resource] = response.resources
    assert resource[0] == 0, resource
    return {entry[0]: (entry[1], entry[3]) for entry in resource[4]}


async def _scenario(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        created = await admin.create_topics(
            [NewTopic("ai", 2, 1, topic_configs={"cleanup.policy": "compact"})]
        )
        assert [tuple(e[:2]) for e in created.topic_errors] == [("ai", 0)]
        again = await admin.create_topics([NewTopic("ai", 2, 1), NewTopic("ai2", 1, 2)])
        assert [tuple(e[:2]) for e in again.topic_errors] == [
            ("ai", ErrorCode.TOPIC_ALREADY_EXISTS),
            ("ai2", ErrorCode.INVALID_REPLICATION_FACTOR),
        ]
        configs = await _configs(admin, "ai")
        assert configs["cleanup.policy"] == ("compact", 1)
        assert configs["retention.ms"] == (str(7 * 24 * 3600 * 1000), 5)
        altered = await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "ai", {"retention.ms": "1234"})]
        )
        assert [r[0] for r in altered[0].resources] == [0]
        configs = await _configs(admin, "ai")
        assert configs["retention.ms"] == ("1234", 1)
        assert configs["cleanup.policy"] == ("delete", 5)  # not sent: back to the default
        bad = await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "ai", {"segment.bytes": "0"})]
        )
        [(code, message, *_)] = bad[0].resources
        assert code == ErrorCode.INVALID_CONFIG and "segment.bytes" in message
        grown = await admin.create_partitions({"ai": NewPartitions(3)})
        assert [tuple(e[:2]) for e in grown.topic_errors] == [("ai", 0)]
        cluster = await admin.describe_cluster()
        assert (cluster["controller_id"], [b["node_id"] for b in cluster["brokers"]]) == (1, [1])
        deleted = await admin.delete_topics(["ai", "never"])
        assert [tuple(e) for e in deleted.topic_error_codes] == [
            ("ai", 0),
            ("never", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        await admin.create_topics([NewTopic("stays", 1, 1, topic_configs={"segment.ms": "60000"})])
    finally:
        await admin.close()


def test_aiokafka_admin_round_trip(tmp_path: Path) -> None:
    with serve(tmp_path) as running:
        asyncio.run(_scenario(running.bootstrap))
    with open_log_dirs([tmp_path], read_only=True) as manager:
        assert manager.topic_names() == ["stays"]
        assert manager.describe_topic("stays").overrides == {"segment.ms": "60000"}
