"""Records of a Fetch response that stay in the segment files until they reach the socket.

:class:`FileRangesRecords` is the ``records`` value of one partition in a Fetch response: the
codec writes its length and leaves it as a separate part of the frame (Kafka's
``RecordsSend``), and the network edge sends each range with ``sendfile``. It owns the open
files of its ranges and closes them once sent (or when the response is dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from seglog.protocol.schema import ExternalRecords


class FileRange(Protocol):
    """A range of an open file: ``fileno()``, ``position``, ``size``."""

    @property
    def position(self) -> int: ...

    @property
    def size(self) -> int: ...

    def fileno(self) -> int: ...


class FileRangesRecords(ExternalRecords):
    """Record bytes as ranges of open files (see the module docstring)."""

    __slots__ = ("_close", "ranges")

    def __init__(self, ranges: Sequence[FileRange], close: Callable[[], None]) -> None:
        super().__init__(sum(r.size for r in ranges))
        self.ranges = ranges
        self._close = close

    def close(self) -> None:
        """Close the files (idempotent)."""
        self._close()
