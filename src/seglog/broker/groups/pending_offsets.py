"""Offsets committed inside open transactions (TxnOffsetCommit), as a pure structure.

A transactional producer's ``TxnOffsetCommit`` is appended to the group's
``__consumer_offsets`` partition as a transactional batch of its producer id and epoch. Those
offsets are *pending*: OffsetFetch does not return them until the transaction coordinator
writes the COMMIT marker to that partition; an ABORT marker drops them. This module keeps
them, with the rules of Kafka's group coordinator (``OffsetMetadataManager``):

* pending offsets are kept per (``__consumer_offsets`` partition, producer id), then per group
  and partition; a later TxnOffsetCommit of the same producer for the same partition replaces
  the earlier one;
* each pending offset remembers the log offset of its record (``position``); at the COMMIT
  marker it replaces the committed offset only when no committed offset exists or the
  committed one's record lies earlier in the log (a plain OffsetCommit appended after the
  transactional one wins, in memory and on reload alike, whatever the cleaner removed);
* an offset tombstone (OffsetDelete, DeleteGroups, offset expiry, a deleted topic) for a
  group's partition removes that partition's pending offsets of every producer too, so a
  deletion followed by the transaction's COMMIT does not bring the offset back;
* while a group has pending offsets of a partition, that partition's offset neither expires
  nor answers a ``require_stable`` OffsetFetch (UNSTABLE_OFFSET_COMMIT), and the group is not
  removed by expiry.

No I/O, no clock: the ``__consumer_offsets`` store calls it after each append (or while
replaying a partition at start-up) and after each marker.
"""

from __future__ import annotations

from collections.abc import Iterable

from seglog.format.group_records import OffsetCommitValue
from seglog.format.topic_names import TopicPartition

#: (log offset of the record, the value) of one pending or committed offset
Positioned = tuple[int, OffsetCommitValue]


class PendingTxnOffsets:
    """Pending transactional offsets (see the module docstring)."""

    def __init__(self) -> None:
        # (offsets partition, producer id) -> group -> partition -> (position, value)
        self._by_txn: dict[tuple[int, int], dict[str, dict[TopicPartition, Positioned]]] = {}
        # group -> the (offsets partition, producer id) keys holding its pending offsets
        self._open: dict[str, set[tuple[int, int]]] = {}

    def add(
        self,
        offsets_partition: int,
        producer_id: int,
        group: str,
        offsets: Iterable[tuple[TopicPartition, int, OffsetCommitValue]],
    ) -> None:
        """Record ``(partition, position, value)`` offsets of a transactional append."""
        key = (offsets_partition, producer_id)
        by_group = self._by_txn.setdefault(key, {}).setdefault(group, {})
        for tp, position, value in offsets:
            by_group[tp] = (position, value)
        self._open.setdefault(group, set()).add(key)

    def discard(self, group: str, tp: TopicPartition) -> None:
        """A tombstone for ``group``'s ``tp``: its pending offsets of every producer go."""
        for key in list(self._open.get(group, ())):
            by_group = self._by_txn[key].get(group)
            if by_group is not None:
                by_group.pop(tp, None)

    def complete(
        self, offsets_partition: int, producer_id: int
    ) -> dict[str, dict[TopicPartition, Positioned]]:
        """The marker of ``producer_id`` was written to ``offsets_partition``: its pending
        offsets, by group, leave this structure (empty when it had none)."""
        key = (offsets_partition, producer_id)
        done = self._by_txn.pop(key, {})
        for group in done:
            keys = self._open.get(group)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._open[group]
        return done

    def has(self, group: str, tp: TopicPartition) -> bool:
        """Whether ``group`` has a pending offset for ``tp`` (of any producer)."""
        return any(tp in self._by_txn[key].get(group, {}) for key in self._open.get(group, ()))

    def has_group(self, group: str) -> bool:
        """Whether ``group`` takes part in an open transaction (even one whose offsets were
        all deleted since: Kafka keeps the group until the marker)."""
        return group in self._open

    def groups(self) -> set[str]:
        """Every group in an open transaction."""
        return set(self._open)

    def partitions_of(self, group: str) -> set[TopicPartition]:
        """Every partition ``group`` has pending offsets for."""
        out: set[TopicPartition] = set()
        for key in self._open.get(group, ()):
            out.update(self._by_txn[key].get(group, {}))
        return out

    def producers_of(self, group: str) -> list[tuple[int, int]]:
        """The (offsets partition, producer id) of every open transaction of ``group``."""
        return sorted(self._open.get(group, ()))

    def pending(self, group: str) -> dict[int, dict[TopicPartition, OffsetCommitValue]]:
        """``group``'s pending offsets by producer id (what inspection tools show)."""
        out: dict[int, dict[TopicPartition, OffsetCommitValue]] = {}
        for partition_and_pid in sorted(self._open.get(group, ())):
            offsets = self._by_txn[partition_and_pid].get(group, {})
            out.setdefault(partition_and_pid[1], {}).update(
                {tp: value for tp, (_, value) in offsets.items()}
            )
        return out
