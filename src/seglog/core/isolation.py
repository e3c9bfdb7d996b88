"""Isolation levels of a reader (Kafka's consumer ``isolation.level``).

* ``read_uncommitted`` (the default): every data record up to the high watermark, those of
  open and aborted transactions included;
* ``read_committed``: data records up to the last stable offset only, leaving out the
  records of aborted transactions. Control records (transaction markers) are never handed
  to a reader at either level.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from seglog.errors import InvalidConfigError
from seglog.format.txn_index import AbortedTxn


class IsolationLevel(StrEnum):
    """Kafka's two isolation levels, spelled as its ``isolation.level`` values."""

    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"

    @classmethod
    def parse(cls, text: str, *, option: str = "isolation.level") -> IsolationLevel:
        """The level named by ``text`` (case-insensitive); ``InvalidConfigError`` naming
        ``option`` and the two allowed values otherwise."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            allowed = ", ".join(level.value for level in cls)
            raise InvalidConfigError(
                f"{option}: {text!r} is not an isolation level (allowed: {allowed})"
            ) from None


class AbortedRanges:
    """The aborted transactions a ``read_committed`` read leaves out (a fetch's
    aborted-transactions list, from the ``.txnindex`` files).

    A transactional data batch of producer ``p`` starting at offset ``o`` belongs to an
    aborted transaction exactly when some entry of ``p`` has ``first_offset <= o <=
    last_offset``: a producer has one transaction open at a time, and its batches between the
    transaction's first offset and its ABORT marker are that transaction's.
    """

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._by_producer: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            self._by_producer.setdefault(txn.producer_id, []).append(
                (txn.first_offset, txn.last_offset)
            )

    def __bool__(self) -> bool:
        return bool(self._by_producer)

    def holds(self, producer_id: int, base_offset: int) -> bool:
        """Whether the transactional batch of ``producer_id`` at ``base_offset`` was aborted."""
        ranges = self._by_producer.get(producer_id)
        if not ranges:
            return False
        return any(first <= base_offset <= last for first, last in ranges)
