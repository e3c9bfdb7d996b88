"""``seglog transactions --bootstrap-server HOST:PORT``: the same tables from a running server.

A :class:`~seglog.cli.kafka_connection.KafkaConnection` to the first reachable ``HOST:PORT`` of
the list (secured as ``--command-config FILE`` says; ApiVersions first; each request then goes
at the highest version both sides know; an API the server does not serve is named in the
error), then:

* ``--list``: ListTransactions (66); the coordinator column is the node id Metadata (3) gives;
* ``--describe``: DescribeTransactions (65);
* ``--describe-producers``: DescribeProducers (61);
* ``--find-hanging``: Metadata for the partitions (every topic's, internal ones included, without
  ``--topic``), DescribeProducers, then (only when a candidate is found, as Kafka's tool)
  ListTransactions filtered on the candidates' producer ids and DescribeTransactions;
* ``--abort``: DescribeProducers (with ``--start-offset``) then WriteTxnMarkers (27): an ABORT
  marker for that producer on that partition.

A refused request prints Kafka's error name and message and exits 1; a server that cannot be
reached or that closes the connection is a :class:`~seglog.errors.SeglogError` (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from seglog.cli.client_security import security_of
from seglog.cli.common import EXIT_FAILURE, EXIT_OK, print_table
from seglog.cli.kafka_connection import KafkaConnection, error_name
from seglog.cli.transactions_view import (
    DESCRIBE_HEADER,
    HANGING_HEADER,
    LIST_HEADER,
    MS_PER_MINUTE,
    PRODUCERS_HEADER,
    ProducerView,
    TxnDescription,
    TxnListing,
    abort_spec_text,
    describe_row,
    find_open_transaction,
    hanging,
    hanging_rows,
    list_rows,
    open_candidates,
    producer_rows,
)
from seglog.errors import BrokerConnectionError
from seglog.format.topic_names import TopicPartition
from seglog.protocol import messages
from seglog.protocol.error_codes import ErrorCode

CLIENT_ID = "seglog-transactions"


class _Refused(Exception):
    """A request the server answered with an error: the line printed on stderr."""


def _error_text(code: int, message: str | None = None) -> str:
    return error_name(code) + (f": {message}" if message else "")


def run_online(args: argparse.Namespace, *, clock: Callable[[], int]) -> int:
    """``seglog transactions`` against ``args.bootstrap_server``; ``clock``: now, in ms."""
    with KafkaConnection(args.bootstrap_server, CLIENT_ID, security_of(args)) as conn:
        try:
            if args.list:
                _list(conn)
            elif args.describe:
                _describe(conn, args.transactional_id, clock())
            elif args.describe_producers:
                tp = TopicPartition(args.topic, args.partition)
                print_table(producer_rows(describe_producers(conn, [tp])[tp]), PRODUCERS_HEADER,
                            sys.stdout)  # fmt: skip
            elif args.find_hanging:
                _find_hanging(conn, args, clock)
            else:
                _abort(conn, args)
        except _Refused as refused:
            print(str(refused), file=sys.stderr)
            return EXIT_FAILURE
    return EXIT_OK


def node_id(conn: KafkaConnection) -> int:
    """The node id of the server (the coordinator column)."""
    answer = conn.request(messages.MetadataRequest(topics=[]), messages.MetadataResponse)
    return answer.brokers[0].node_id if answer.brokers else -1


def list_transactions(
    conn: KafkaConnection, producer_ids: list[int] | None = None
) -> list[TxnListing]:
    """ListTransactions (of these producer ids only, when given)."""
    request = messages.ListTransactionsRequest(producer_id_filters=producer_ids or [])
    answer = conn.request(request, messages.ListTransactionsResponse)
    if answer.error_code:
        raise _Refused(f"Failed to list transactions: {_error_text(answer.error_code)}")
    return [
        TxnListing(s.transactional_id, s.producer_id, s.transaction_state)
        for s in answer.transaction_states
    ]


def describe_transactions(conn: KafkaConnection, ids: list[str]) -> dict[str, TxnDescription]:
    """DescribeTransactions; ids the server does not know are left out."""
    request = messages.DescribeTransactionsRequest(transactional_ids=ids)
    answer = conn.request(request, messages.DescribeTransactionsResponse)
    out = {}
    for s in answer.transaction_states:
        if s.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            continue
        if s.error_code:
            raise _Refused(
                f"Failed to describe transaction state of transactional-id "
                f"`{s.transactional_id}`: {_error_text(s.error_code)}"
            )
        partitions = tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions)
        out[s.transactional_id] = TxnDescription(
            s.transactional_id,
            s.producer_id,
            s.producer_epoch,
            s.transaction_state,
            s.transaction_timeout_ms,
            s.transaction_start_time_ms,
            partitions,
        )
    return out


def describe_producers(
    conn: KafkaConnection, partitions: list[TopicPartition]
) -> dict[TopicPartition, list[ProducerView]]:
    """DescribeProducers of ``partitions`` (any partition error is refused)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = messages.DescribeProducersRequest(
        topics=[
            messages.DescribeProducersRequestTopicRequest(name=t, partition_indexes=ps)
            for t, ps in by_topic.items()
        ]
    )
    answer = conn.request(request, messages.DescribeProducersResponse)
    out: dict[TopicPartition, list[ProducerView]] = {}
    for topic in answer.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if p.error_code:
                raise _Refused(
                    f"Failed to describe producers for partition {tp} on leader: "
                    f"{_error_text(p.error_code, p.error_message)}"
                )
            out[tp] = [
                ProducerView(
                    s.producer_id,
                    s.producer_epoch,
                    s.coordinator_epoch,
                    s.last_sequence,
                    s.last_timestamp,
                    s.current_txn_start_offset,
                )
                for s in p.active_producers
            ]
    missing = [tp for tp in partitions if tp not in out]
    if missing:
        raise BrokerConnectionError(f"{conn.address} did not answer for {missing[0]}")
    return out


def _list(conn: KafkaConnection) -> None:
    listings = list_transactions(conn)
    print_table(list_rows(node_id(conn), listings), LIST_HEADER, sys.stdout)


def _describe(conn: KafkaConnection, transactional_id: str, now: int) -> None:
    found = describe_transactions(conn, [transactional_id]).get(transactional_id)
    if found is None:
        raise _Refused(
            f"Failed to describe transaction state of transactional-id `{transactional_id}`: "
            "The transactionalId could not be found."
        )
    row = describe_row(node_id(conn), found, now_ms=now)
    print_table([row], DESCRIBE_HEADER, sys.stdout)


def _partitions(conn: KafkaConnection, topic: str | None) -> list[TopicPartition]:
    topics = None if topic is None else [messages.MetadataRequestMetadataRequestTopic(name=topic)]
    request = messages.MetadataRequest(topics=topics, allow_auto_topic_creation=False)
    answer = conn.request(request, messages.MetadataResponse)
    out = []
    for t in answer.topics:
        if t.error_code:
            raise _Refused(f"Failed to describe topic {t.name}: {_error_text(t.error_code)}")
        out += [TopicPartition(t.name or "", p.partition_index) for p in t.partitions]
    return sorted(out)


def _find_hanging(
    conn: KafkaConnection, args: argparse.Namespace, clock: Callable[[], int]
) -> None:
    if args.topic is not None and args.partition is not None:
        wanted = [TopicPartition(args.topic, args.partition)]
    else:
        wanted = _partitions(conn, args.topic)
    producers = describe_producers(conn, wanted) if wanted else {}
    now = clock()
    candidates = open_candidates(
        producers, max_timeout_ms=args.max_transaction_timeout * MS_PER_MINUTE, now_ms=now
    )
    found = []
    if candidates:
        pids = sorted({p.producer_id for _, p in candidates})
        ids = {t.transactional_id: t.producer_id for t in list_transactions(conn, pids)}
        described = describe_transactions(conn, sorted(ids)) if ids else {}
        by_producer = {d.producer_id: d for d in described.values() if d.producer_id in pids}
        found = hanging(candidates, by_producer)
    print_table(hanging_rows(found, now_ms=now), HANGING_HEADER, sys.stdout)


def _abort(conn: KafkaConnection, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        found = find_open_transaction(describe_producers(conn, [tp])[tp], args.start_offset)
        if found is None:
            raise _Refused(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {tp}"
            )
        pid, epoch, coordinator_epoch = found
    else:
        pid, epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = max(args.coordinator_epoch, 0)
    marker = messages.WriteTxnMarkersRequestWritableTxnMarker(
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=False,
        topics=[
            messages.WriteTxnMarkersRequestWritableTxnMarkerTopic(
                name=tp.topic, partition_indexes=[tp.partition]
            )
        ],
        coordinator_epoch=coordinator_epoch,
    )
    answer = conn.request(
        messages.WriteTxnMarkersRequest(markers=[marker]), messages.WriteTxnMarkersResponse
    )
    codes = [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]
    if codes != [0]:
        spec = abort_spec_text(tp, pid, epoch, coordinator_epoch)
        problem = _error_text(next((c for c in codes if c), ErrorCode.UNKNOWN_SERVER_ERROR))
        raise _Refused(f"Failed to abort transaction {spec}: {problem}")
