"""The tables of ``seglog transactions``, as ``kafka-transactions.sh`` prints them.

Pure: the offline mode (the data directories) and the online mode (a server's answers) both
reduce what they read to these values, so the two print the same table for the same state.
Headers and cells are Kafka's (``TransactionsCommand``): a missing start time or start offset is
``None``; a coordinator epoch the producer never had is ``-1``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from seglog.format.topic_names import TopicPartition

MS_PER_MINUTE = 60_000

LIST_HEADER = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADER = [
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
]
PRODUCERS_HEADER = [
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
]
HANGING_HEADER = [
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
]


@dataclass(frozen=True, slots=True)
class TxnListing:
    """One transactional id as ListTransactions gives it."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """One transactional id as DescribeTransactions gives it (start -1: none)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ProducerView:
    """One producer of a partition as DescribeProducers gives it (-1: none)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_sequence: int
    last_timestamp: int
    txn_start_offset: int


def list_rows(coordinator: int, listings: Iterable[TxnListing]) -> list[list[object]]:
    """``--list``: one row per transactional id, sorted by id."""
    return [
        [t.transactional_id, coordinator, t.producer_id, t.state]
        for t in sorted(listings, key=lambda t: t.transactional_id)
    ]


def describe_row(coordinator: int, d: TxnDescription, *, now_ms: int) -> list[object]:
    """``--describe``: the id's row; the duration counts from the transaction's start."""
    started = d.start_time_ms >= 0
    return [
        coordinator,
        d.transactional_id,
        d.producer_id,
        d.producer_epoch,
        d.state,
        d.timeout_ms,
        d.start_time_ms if started else "None",
        now_ms - d.start_time_ms if started else "None",
        ",".join(str(tp) for tp in d.partitions),
    ]


def producer_rows(producers: Iterable[ProducerView]) -> list[list[object]]:
    """``--describe-producers``: one row per producer, by producer id."""
    return [
        [
            p.producer_id,
            p.producer_epoch,
            p.coordinator_epoch,
            p.last_sequence,
            p.last_timestamp,
            p.txn_start_offset if p.txn_start_offset >= 0 else "None",
        ]
        for p in sorted(producers, key=lambda p: p.producer_id)
    ]


def open_candidates(
    producers: Mapping[TopicPartition, Iterable[ProducerView]],
    *,
    max_timeout_ms: int,
    now_ms: int,
) -> list[tuple[TopicPartition, ProducerView]]:
    """Open transactions whose producer wrote nothing for longer than ``max_timeout_ms``
    (Kafka's first filter: no coordinator would let such a transaction live)."""
    return [
        (tp, p)
        for tp, views in sorted(producers.items())
        for p in views
        if p.txn_start_offset >= 0 and now_ms - p.last_timestamp > max_timeout_ms
    ]


def hanging(
    candidates: Iterable[tuple[TopicPartition, ProducerView]],
    descriptions: Mapping[int, TxnDescription],
) -> list[tuple[TopicPartition, ProducerView]]:
    """Kafka's second filter: a candidate hangs when no transactional id has its producer id
    (``descriptions``, by producer id) or when its id's transaction does not name the
    partition (so its coordinator will never write the partition's marker)."""
    out = []
    for tp, p in candidates:
        described = descriptions.get(p.producer_id)
        if described is None or tp not in described.partitions:
            out.append((tp, p))
    return out


def hanging_rows(
    found: Iterable[tuple[TopicPartition, ProducerView]], *, now_ms: int
) -> list[list[object]]:
    """``--find-hanging``: one row per hanging transaction; the duration, in whole minutes,
    counts from the producer's last write (as Kafka's tool does)."""
    return [
        [
            tp.topic,
            tp.partition,
            p.producer_id,
            p.producer_epoch,
            p.coordinator_epoch,
            p.txn_start_offset,
            p.last_timestamp,
            (now_ms - p.last_timestamp) // MS_PER_MINUTE,
        ]
        for tp, p in found
    ]


def abort_spec_text(tp: TopicPartition, pid: int, epoch: int, coordinator_epoch: int) -> str:
    """Kafka's ``AbortTransactionSpec`` text, named in a failed abort's message."""
    return (
        f"AbortTransactionSpec(topicPartition={tp}, producerId={pid}, producerEpoch={epoch}, "
        f"coordinatorEpoch={coordinator_epoch})"
    )


def find_open_transaction(
    views: list[ProducerView], start_offset: int
) -> tuple[int, int, int] | None:
    """(producer id, epoch, coordinator epoch) of the transaction opened at ``start_offset``
    (a coordinator epoch the producer never had counts as 0, as Kafka's tool does)."""
    for view in views:
        if view.txn_start_offset == start_offset:
            return view.producer_id, view.producer_epoch, max(view.coordinator_epoch, 0)
    return None
