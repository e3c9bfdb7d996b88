"""DescribeCluster (key 60, v0-1) and DescribeLogDirs (key 35, v1-4).

**DescribeCluster**: the cluster id of ``meta.properties``, this node as the controller and the
only broker (the advertised endpoint, no rack). ``endpoint_type`` (v1) must be 1 (brokers): a
request for controller endpoints gets UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers.
``cluster_authorized_operations`` is filled when asked (0 without DESCRIBE on the cluster), as
Kafka's ``AuthHelper.computeDescribeClusterResponse``; otherwise INT32_MIN.

**DescribeLogDirs**: one result per root of ``log.dirs`` (its absolute path), listing its
partitions' sizes in bytes (the sum of their segment files), offset lag 0 (no replica is ever
behind a leader on one node) and ``is_future_key`` false (no replica moves between
directories); ``topics = null`` asks for every partition, otherwise only those named (names not
here are left out, as Kafka does). From v4 each root also reports the total and usable bytes
of its file system (``statvfs``; -1 when it cannot be read). It needs DESCRIBE on the cluster:
else no results and CLUSTER_AUTHORIZATION_FAILED (the top-level error of v3+), as Kafka.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.registry import ApiHandler
from seglog.broker.state import INT32_MIN, BrokerState, RequestContext
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseDescribeClusterBroker,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponseDescribeLogDirsPartition,
    DescribeLogDirsResponseDescribeLogDirsResult,
    DescribeLogDirsResponseDescribeLogDirsTopic,
)

DESCRIBE_CLUSTER, DESCRIBE_LOG_DIRS = 60, 35
BROKERS_ENDPOINT = 1


async def describe_cluster(
    state: BrokerState, context: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    if context.api_version >= 1 and request.endpoint_type != BROKERS_ENDPOINT:
        return DescribeClusterResponse(
            error_code=int(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE),
            error_message=f"Endpoint type {request.endpoint_type} is not served: this broker "
            "answers for broker endpoints (1) only.",
            endpoint_type=request.endpoint_type,
            cluster_id=state.cluster_id,
        )
    endpoint = state.endpoint_for(context)
    operations = INT32_MIN
    if request.include_cluster_authorized_operations:
        operations = (
            state.authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)
            if state.authorize(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
            else 0
        )
    return DescribeClusterResponse(
        error_code=0,
        error_message=None,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        brokers=[
            DescribeClusterResponseDescribeClusterBroker(
                broker_id=state.node_id, host=endpoint.host, port=endpoint.port, rack=None
            )
        ],
        cluster_authorized_operations=operations,
    )


def _space(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``path``; -1s when unreadable."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return -1, -1
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


async def describe_log_dirs(
    state: BrokerState, context: RequestContext, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    if not state.authorize(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return DescribeLogDirsResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    wanted: dict[str, set[int]] | None = None
    if request.topics is not None:
        wanted = defaultdict(set)
        for topic in request.topics:
            wanted[topic.topic].update(topic.partitions)
    roots = [Path(d).resolve() for d in state.manager.broker.log_dirs]
    by_root: list[dict[str, list[DescribeLogDirsResponseDescribeLogDirsPartition]]] = [
        defaultdict(list) for _ in roots
    ]
    for tp, log in sorted(state.manager.logs().items()):
        if wanted is not None and tp.partition not in wanted.get(tp.topic, ()):
            continue
        root = Path(log.directory).resolve().parent
        if root not in roots:
            continue
        by_root[roots.index(root)][tp.topic].append(
            DescribeLogDirsResponseDescribeLogDirsPartition(
                partition_index=tp.partition,
                partition_size=log.size_bytes(),
                offset_lag=0,
                is_future_key=False,
            )
        )
    results = []
    for root, by_topic in zip(roots, by_root, strict=True):
        total, usable = _space(str(root))
        results.append(
            DescribeLogDirsResponseDescribeLogDirsResult(
                error_code=0,
                log_dir=str(root),
                topics=[
                    DescribeLogDirsResponseDescribeLogDirsTopic(name=name, partitions=parts)
                    for name, parts in sorted(by_topic.items())
                ],
                total_bytes=total,
                usable_bytes=usable,
            )
        )
    return DescribeLogDirsResponse(error_code=0, results=results)


HANDLERS = [
    ApiHandler(DESCRIBE_CLUSTER, 0, 1, describe_cluster),
    ApiHandler(DESCRIBE_LOG_DIRS, 1, 4, describe_log_dirs),
]
