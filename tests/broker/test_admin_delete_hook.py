"""DeleteTopics' ``on_topic_deleted`` hook, in process over a real data directory.

The group coordinator registers a callback there to write tombstones for a deleted topic's
committed offsets; it must run once per deleted topic, after the topic is gone, and never for
a refused deletion.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from seglog.broker.app import open_groups
from seglog.broker.groups.offsets_store import OffsetAndMetadata, OffsetsStore
from seglog.broker.handlers.admin_topics import delete_topics
from seglog.broker.server_config import ServerConfig
from seglog.broker.state import BrokerState, RequestContext
from seglog.engine.log_manager import open_log_dirs
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import DeleteTopicsRequest


def test_callbacks_run_after_each_deletion(tmp_path: Path) -> None:
    with open_log_dirs([tmp_path]) as manager:
        manager.create_topic("first", 2)
        manager.create_topic("second", 1)
        config = ServerConfig()
        groups = open_groups(manager, config)
        state = BrokerState(manager, config, cluster_id="test", groups=groups)
        seen: list[tuple[str, bool]] = []
        state.on_topic_deleted.append(
            lambda name: seen.append((name, name in manager.topic_names()))
        )
        context = RequestContext(20, 5, 1, "test", "127.0.0.1")
        request = DeleteTopicsRequest(topic_names=["first", "missing", "second"])
        response = asyncio.run(delete_topics(state, context, request))
        assert [(r.name, r.error_code) for r in response.responses] == [
            ("first", 0),
            ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ("second", 0),
        ]
        assert seen == [("first", False), ("second", False)]
        assert manager.topic_names() == []


def test_a_deleted_topics_committed_offsets_become_tombstones(tmp_path: Path) -> None:
    with open_log_dirs([tmp_path]) as manager:
        manager.create_topic("gone", 1)
        manager.create_topic("kept", 1)
        config = ServerConfig()
        groups = open_groups(manager, config)
        state = BrokerState(manager, config, cluster_id="test", groups=groups)
        state.on_topic_deleted.append(groups.topic_deleted)
        groups.ensure_offsets_topic()
        offsets = {
            TopicPartition("gone", 0): OffsetAndMetadata(5),
            TopicPartition("kept", 0): OffsetAndMetadata(7),
        }
        groups.store.commit("g", offsets, now_ms=1_000)
        context = RequestContext(20, 5, 1, "test", "127.0.0.1")
        asyncio.run(delete_topics(state, context, DeleteTopicsRequest(topic_names=["gone"])))
        assert set(groups.store.committed("g")) == {TopicPartition("kept", 0)}
    with open_log_dirs([tmp_path]) as manager:  # the tombstone is on disk: a reload agrees
        store = OffsetsStore.open(manager)
        assert {tp: v.offset for tp, v in store.committed("g").items()} == {
            TopicPartition("kept", 0): 7
        }
