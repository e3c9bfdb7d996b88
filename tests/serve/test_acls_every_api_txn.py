"""Every served API's authorization on transactional ids (and the topics and groups a
transaction touches), as one table.

One ``seglog serve`` (PLAINTEXT, principal ``User:ANONYMOUS``, the authorizer on, no ACL on the
cluster) serves the module, as in ``test_acls_every_api.py`` (see :mod:`acl_matrix`). Kafka's
``KafkaApis`` asks WRITE on the transactional id before anything else of a transactional request
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then the group (READ) and the topics; DESCRIBE on the id
for FindCoordinator and DescribeTransactions, and ListTransactions and DescribeTransactions
filter what the principal may not DESCRIBE. A request whose producer could not be set up (its
InitProducerId refused) carries producer id 4242: Kafka refuses it before looking at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acl_matrix import (
    HIDDEN,
    LISTED,
    Need,
    Row,
    cases,
    first_partition_code,
    init_producer,
    listed,
    records_written,
    run_case,
    serve_rows,
)
from serve_harness import ServeProcess

from seglog.protocol import messages as m
from serve_wire import build_batch, produce_request

TOPIC, GROUP, TXN = 29, 30, 53


def _batch(producer: tuple[int, int]) -> bytes:
    """A transactional batch of the producer (first sequence 0)."""
    return build_batch(
        [b"k"],
        [b"v"],
        1_700_000_000_000,
        producer_id=producer[0],
        epoch=producer[1],
        base_sequence=0,
        transactional=True,
    )


def _txn_offset_commit(names: Any, producer: tuple[int, int]) -> Any:
    partition = m.TxnOffsetCommitRequestTxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=0
    )
    return m.TxnOffsetCommitRequest(
        transactional_id=names.txn,
        group_id=names.group,
        producer_id=producer[0],
        producer_epoch=producer[1],
        topics=[m.TxnOffsetCommitRequestTxnOffsetCommitRequestTopic(names.topic, [partition])],
    )


def _prepare_txn_offsets(wire: Any, names: Any) -> tuple[int, int]:
    producer = init_producer(wire, names.txn)
    wire.call(25, 3, m.AddOffsetsToTxnRequest(names.txn, producer[0], producer[1], names.group))
    return producer


def _prepare_txn_with_topic(wire: Any, names: Any) -> tuple[int, int]:
    """A producer of ``names.txn`` with partition 0 of ``names.topic`` in its transaction (as
    far as its ACLs let it get)."""
    producer = init_producer(wire, names.txn)
    topic = m.AddPartitionsToTxnRequestAddPartitionsToTxnTopic(name=names.topic, partitions=[0])
    wire.call(
        24,
        3,
        m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=names.txn,
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=[topic],
        ),
    )
    return producer


def _described_topics(response: Any, names: Any) -> str:
    return listed({t.topic for t in response.transaction_states[0].topics}, names.topic)


ROWS = [
    Row(
        "produce-txn",
        0,
        9,
        (Need("txn", "Write", TXN), Need("topic", "Write", TOPIC)),
        lambda n, p: produce_request(n.topic, 0, _batch(p), transactional_id=n.txn),
        lambda r, _: r.responses[0].partition_responses[0].error_code,
        allowed=0,
        prepare=_prepare_txn_with_topic,
        check_ok=records_written,
    ),
    Row(
        "find-coordinator-txn",
        10,
        4,
        (Need("txn", "Describe", TXN),),
        lambda n, _: m.FindCoordinatorRequest(key_type=1, coordinator_keys=[n.txn]),
        lambda r, _: r.coordinators[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "init-producer-id",
        22,
        4,
        (Need("txn", "Write", TXN),),
        lambda n, _: m.InitProducerIdRequest(transactional_id=n.txn, transaction_timeout_ms=60_000),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "add-partitions-to-txn",
        24,
        3,
        (Need("txn", "Write", TXN), Need("topic", "Write", TOPIC)),
        lambda n, p: m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=n.txn,
            v3_and_below_producer_id=p[0],
            v3_and_below_producer_epoch=p[1],
            v3_and_below_topics=[m.AddPartitionsToTxnRequestAddPartitionsToTxnTopic(n.topic, [0])],
        ),
        lambda r, _: (
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        ),
        allowed=0,
        prepare=lambda w, n: init_producer(w, n.txn),
    ),
    Row(
        "add-offsets-to-txn",
        25,
        3,
        (Need("txn", "Write", TXN), Need("group", "Read", GROUP)),
        lambda n, p: m.AddOffsetsToTxnRequest(n.txn, p[0], p[1], n.group),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
        prepare=lambda w, n: init_producer(w, n.txn),
    ),
    Row(
        "end-txn",
        26,
        3,
        (Need("txn", "Write", TXN),),
        lambda n, p: m.EndTxnRequest(n.txn, p[0], p[1], committed=True),
        lambda r, _: r.error_code,
        allowed=0,
        setup=(("topic", "Write"),),
        prepare=_prepare_txn_with_topic,
    ),
    Row(
        "txn-offset-commit",
        28,
        3,
        (Need("txn", "Write", TXN), Need("group", "Read", GROUP), Need("topic", "Read", TOPIC)),
        _txn_offset_commit,
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
        prepare=_prepare_txn_offsets,
    ),
    Row(
        "describe-transactions",
        65,
        0,
        (Need("txn", "Describe", TXN),),
        lambda n, _: m.DescribeTransactionsRequest(transactional_ids=[n.txn]),
        lambda r, _: r.transaction_states[0].error_code,
        topics=(),
    ),
    Row(
        "describe-transactions-topics",
        65,
        0,
        (Need("topic", "Describe", HIDDEN, deny=True),),
        lambda n, _: m.DescribeTransactionsRequest(transactional_ids=[n.txn]),
        _described_topics,
        allowed=LISTED,
        setup=(("txn", "Write"), ("topic", "Write")),
        prepare=_prepare_txn_with_topic,
    ),
    Row(
        "list-transactions",
        66,
        1,
        (Need("txn", "Describe", HIDDEN, deny=True),),
        lambda n, _: m.ListTransactionsRequest(),
        lambda r, n: listed({t.transactional_id for t in r.transaction_states}, n.txn),
        allowed=LISTED,
        setup=(("txn", "Write"),),
        topics=(),
        prepare=lambda w, n: init_producer(w, n.txn),
    ),
    # A DENY beats an ALLOW: the same binding granted and denied is refused.
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    yield from serve_rows(tmp_path_factory.mktemp("acl-matrix-txn") / "data", ROWS)


@pytest.mark.parametrize(
    ("row", "variant"), cases(ROWS), ids=[f"{r.id}-{v}" for r, v in cases(ROWS)]
)
def test_transactional_authorization(server: ServeProcess, row: Row, variant: str) -> None:
    run_case(server, row, variant)
