"""Admin requests on a copy of a real Kafka broker's data directory (KRaft, Confluent 7.x).

The broker's topic configs come from its KRaft metadata image; what seglog changes over the
wire goes to seglog's own metadata, and a topic the broker wrote keeps its partition count.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

from serve_process import serve
from wire_client import WireClient

from seglog.engine.log_manager import open_log_dirs
from seglog.format.topic_names import PartitionDirKind, parse_partition_dir_name
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsTopic,
    CreatePartitionsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestDescribeConfigsResource,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)

SOURCE = "broker/itumelengmogase-cp-kraft"
TOPIC = 2


def _writable_copy(corpus_dir: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(corpus_dir / SOURCE, data)
    for path in [data, *data.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return data


def _configs(wire: WireClient, name: str) -> dict[str, tuple[str | None, int]]:
    request = DescribeConfigsRequest(
        resources=[DescribeConfigsRequestDescribeConfigsResource(TOPIC, name, None)]
    )
    [result] = wire.call(request, 4, DescribeConfigsResponse).results
    assert result.error_code == 0, result.error_message
    return {c.name: (c.value, c.config_source) for c in result.configs}


def test_broker_topics_configs_alter_and_delete(corpus_dir: Path, tmp_path: Path) -> None:
    data = _writable_copy(corpus_dir, tmp_path)
    with serve(data) as running, WireClient(running.bootstrap) as wire:
        assert _configs(wire, "_schemas")["cleanup.policy"] == ("compact", 1)  # from KRaft
        offsets = _configs(wire, "__consumer_offsets")
        assert offsets["segment.bytes"] == ("104857600", 1)
        grow = CreatePartitionsRequest(
            topics=[CreatePartitionsRequestCreatePartitionsTopic("_schemas", 3, None)]
        )
        [refused] = wire.call(grow, 3, CreatePartitionsResponse).results
        assert refused.error_code == ErrorCode.INVALID_PARTITIONS
        assert refused.error_message and "Kafka broker" in refused.error_message
        alter = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    TOPIC,
                    "_schemas",
                    [IncrementalAlterConfigsRequestAlterableConfig("retention.ms", 0, "3600000")],
                )
            ]
        )
        [altered] = wire.call(alter, 1, IncrementalAlterConfigsResponse).responses
        assert altered.error_code == 0, altered.error_message
        assert _configs(wire, "_schemas")["retention.ms"] == ("3600000", 1)
        deleted = wire.call(
            DeleteTopicsRequest(topic_names=["docker-connect-configs", "__consumer_offsets"]),
            5,
            DeleteTopicsResponse,
        )
        assert [(r.name, r.error_code) for r in deleted.responses] == [
            ("docker-connect-configs", 0),
            ("__consumer_offsets", ErrorCode.INVALID_REQUEST),
        ]
    kinds = {
        parsed.kind
        for path in data.iterdir()
        if (parsed := parse_partition_dir_name(path.name)) is not None
        and parsed.topic == "docker-connect-configs"
    }
    assert PartitionDirKind.LIVE not in kinds
    with open_log_dirs([data], read_only=True) as manager:
        assert "docker-connect-configs" not in manager.topic_names()
        described = manager.describe_topic("_schemas")
        assert described.overrides == {"retention.ms": "3600000"}
        assert described.config["cleanup.policy"] == "compact"
        assert [p.partition for p in described.partitions] == [0]
