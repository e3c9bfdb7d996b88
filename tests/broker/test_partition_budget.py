"""CreateTopics and CreatePartitions refuse partitions the server could not keep open.

Each partition holds descriptors (its active segment's files); a request for more partitions
than the open-files limit allows (after the share kept for connections) gets POLICY_VIOLATION
naming the limit, and creates nothing, instead of failing later with "Too many open files"
in every request. Run in process with this process's soft limit lowered for the test.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.broker.app import open_groups
from seglog.broker.handlers.admin_topics import (
    DESCRIPTORS_PER_PARTITION,
    RESERVED_DESCRIPTORS,
    create_partitions,
    create_topics,
)
from seglog.broker.server_config import ServerConfig
from seglog.broker.state import BrokerState, RequestContext
from seglog.engine.log_manager import open_log_dirs
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
)

BUDGET = 100  # partitions the lowered limit allows


@pytest.fixture
def low_limit() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE,
        (RESERVED_DESCRIPTORS + BUDGET * DESCRIPTORS_PER_PARTITION, hard),
    )
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_partitions_beyond_the_open_files_limit_are_refused(
    tmp_path: Path, low_limit: None
) -> None:
    with open_log_dirs([tmp_path]) as manager:
        config = ServerConfig()
        state = BrokerState(manager, config, cluster_id="t", groups=open_groups(manager, config))
        create = RequestContext(19, 7, 1, "test", "127.0.0.1")
        too_many = CreateTopicsRequest(
            topics=[CreateTopicsRequestCreatableTopic("big", BUDGET + 1, 1)], timeout_ms=1000
        )
        (refused,) = asyncio.run(create_topics(state, create, too_many)).topics
        assert refused.error_code == ErrorCode.POLICY_VIOLATION
        assert "open files" in (refused.error_message or "")
        assert manager.topic_names() == []
        fits = CreateTopicsRequest(
            topics=[CreateTopicsRequestCreatableTopic("t", BUDGET - 10, 1)], timeout_ms=1000
        )
        (created,) = asyncio.run(create_topics(state, create, fits)).topics
        assert created.error_code == 0
        grow = RequestContext(37, 3, 2, "test", "127.0.0.1")
        beyond = CreatePartitionsRequest(
            topics=[CreatePartitionsRequestCreatePartitionsTopic("t", BUDGET + 5, None)],
            timeout_ms=1000,
        )
        (result,) = asyncio.run(create_partitions(state, grow, beyond)).results
        assert result.error_code == ErrorCode.POLICY_VIOLATION
        assert len(manager.partitions_of("t")) == BUDGET - 10
