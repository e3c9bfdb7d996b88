"""What DescribeTransactions and ListTransactions show of the coordinator's transactions.

A transactional id being expired (Dead, or pending Dead) is not shown: Kafka treats it as
gone (TRANSACTIONAL_ID_NOT_FOUND). States are shown by Kafka's names (``PrepareCommit``);
a state filter naming no state is returned as unknown, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from seglog.broker.txns.metadata import TransactionMetadata, TransactionState, state_named
from seglog.broker.txns.model import ListedTxn, TxnDescription, TxnListing
from seglog.protocol.error_codes import ErrorCode

S = TransactionState


def describe(txns: Mapping[str, TransactionMetadata], transactional_id: str) -> TxnDescription:
    """One DescribeTransactions entry."""
    if not transactional_id:
        return TxnDescription(transactional_id, ErrorCode.INVALID_REQUEST)
    metadata = txns.get(transactional_id)
    if metadata is None or metadata.state is S.DEAD or metadata.pending is S.DEAD:
        return TxnDescription(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    return TxnDescription(
        transactional_id,
        ErrorCode.NONE,
        state=metadata.state.kafka_name,
        timeout_ms=metadata.timeout_ms,
        start_ms=metadata.start_ms,
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        partitions=tuple(sorted(metadata.partitions)),
    )


def list_transactions(
    txns: Iterable[TransactionMetadata],
    state_filters: Iterable[str],
    producer_id_filters: Iterable[int],
    duration_filter_ms: int,
    now_ms: int,
) -> TxnListing:
    """ListTransactions: every id matching all filters given (an empty filter matches all;
    ``duration_filter_ms`` >= 0 keeps transactions open longer than it)."""
    names = list(state_filters)
    states = {s for s in (state_named(n) for n in names) if s is not None}
    unknown = tuple(n for n in names if state_named(n) is None)
    ids = set(producer_id_filters)
    listed = [
        ListedTxn(metadata.transactional_id, metadata.producer_id, metadata.state.kafka_name)
        for metadata in txns
        if metadata.state is not S.DEAD
        and (not ids or metadata.producer_id in ids)
        and (not names or metadata.state in states)
        and not (duration_filter_ms >= 0 and now_ms - metadata.start_ms <= duration_filter_ms)
    ]
    return TxnListing(ErrorCode.NONE, unknown, tuple(listed))
