"""The values the transaction coordinator takes and gives: results, effects, steps.

Effects are what the caller must do, then acknowledge:

* :class:`PersistTxn`: append the transit as the id's ``__transaction_state`` value, then call
  ``TransactionCoordinator.persisted(persist_id, error, now_ms)``;
* :class:`WriteMarkers`: write a COMMIT or ABORT marker with the producer id and epoch on every
  listed partition, then call ``markers_written(markers_id, now_ms)`` (retrying a partition that
  failed first, skipping one that no longer exists);
* :class:`RemoveTxnIds`: write tombstones for the expired ids, then call
  ``removed(remove_id, error, now_ms)``.

A request that waits for an effect gets a ticket (:class:`Pending`); its answer is a
:class:`Completion` in the :class:`Step` of this or a later call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seglog.broker.txns.metadata import TxnTransit
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode


@dataclass(frozen=True, slots=True)
class InitResult:
    """InitProducerId's answer."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class PersistTxn:
    persist_id: int
    transactional_id: str
    transit: TxnTransit


@dataclass(frozen=True, slots=True)
class WriteMarkers:
    markers_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class RemoveTxnIds:
    remove_id: int
    transactional_ids: tuple[str, ...]


Effect = PersistTxn | WriteMarkers | RemoveTxnIds


@dataclass(frozen=True, slots=True)
class Completion:
    ticket: int
    result: InitResult | ErrorCode


@dataclass(slots=True)
class Step:
    effects: list[Effect] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Pending:
    ticket: int
    step: Step


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """One DescribeTransactions entry (``state`` is Kafka's name, e.g. ``Ongoing``)."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTxn:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TxnListing:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTxn, ...] = ()
