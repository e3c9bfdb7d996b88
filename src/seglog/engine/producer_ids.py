"""Producer id allocation for InitProducerId (Kafka's ``ProducerIdManager`` on one node).

:class:`ProducerIdManager` hands out producer ids one at a time from blocks of
:data:`PRODUCER_ID_BLOCK_SIZE` (1000, as Kafka allocates them) claimed through
:mod:`seglog.storage.producer_id_block`, whose durable mark makes ids never repeat across
restarts or crashes (a crash loses at most the rest of a block: skipped, never reused).

The first block a process claims starts at or above ``floor()``: one above the largest
producer id in any log's producer state, so on a copied broker's directory (whose ids came
from that cluster's counter, unknown here) a seglog-assigned id never meets a producer the
logs already know. ``floor`` is asked once, at the first claim; ids of later blocks are above
it anyway.

Decisions: no block is prefetched (Kafka's controller-backed manager prefetches at 90%; here a
claim is one small fsynced write every 1000 InitProducerId calls, made under the manager's
lock, so concurrent callers wait for it rather than risk two claims). A read-only data
directory hands out nothing (``UnreadableFileError`` from the write). Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from seglog.storage.producer_id_block import ProducerIdBlock, claim_block

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdManager:
    """Hands out producer ids that never repeat; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        *,
        floor: Callable[[], int] = lambda: 0,
        block_size: int = PRODUCER_ID_BLOCK_SIZE,
    ) -> None:
        self.directory = directory
        self.block_size = block_size
        self._floor: Callable[[], int] | None = floor
        self._lock = threading.Lock()
        self._block: ProducerIdBlock | None = None
        self._next = 0  # the next id of ``_block`` to hand out

    @property
    def block(self) -> ProducerIdBlock | None:
        """The block ids are handed out from (None before the first one)."""
        return self._block

    def next_producer_id(self) -> int:
        """A producer id never handed out before (by any process on this directory)."""
        with self._lock:
            block = self._block
            if block is None or self._next > block.last:
                floor = 0
                if self._floor is not None:
                    floor = self._floor()
                    self._floor = None
                if block is not None:
                    floor = max(floor, block.last + 1)
                block = self._block = claim_block(self.directory, floor=floor, size=self.block_size)
                self._next = block.first
            producer_id = self._next
            self._next += 1
            return producer_id
