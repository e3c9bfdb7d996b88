"""Records and headers: the values a batch carries, independent of its wire format.

A :class:`Record` is what one log entry holds, with its absolute Kafka ``offset``. Its
``timestamp`` is the timestamp *as written* in the batch (``baseTimestamp + timestampDelta``
in v2, the message timestamp in v1, ``-1`` in v0). In a LogAppendTime batch Kafka reports
the batch's ``maxTimestamp`` for every record instead; use ``batch.reported_timestamp`` for
that view. Keeping the written value makes decode then encode lossless.

Header keys are text in Kafka (UTF-8). Bytes that are not valid UTF-8 are kept with Python's
``surrogateescape`` error handler, so any header key read from disk re-encodes to the very
same bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

NO_TIMESTAMP = -1


class TimestampType(enum.IntEnum):
    """Kafka's timestamp types; the name is what Kafka's tools print."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def name_in_kafka(self) -> str:
        """``CreateTime``, ``LogAppendTime`` or ``NoTimestampType`` as kafka-dump-log prints."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]


@dataclass(frozen=True, slots=True)
class Header:
    """A record header: a text key (never null) and a bytes value (may be null)."""

    key: str
    value: bytes | None

    def key_bytes(self) -> bytes:
        """The key as written on disk (UTF-8, lossless for keys read from disk)."""
        return self.key.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Record:
    """One record: absolute offset, written timestamp, key, value and headers.

    ``key is None`` is a null key; ``value is None`` a null value (a tombstone on a compacted
    topic). ``attributes`` is the per-record attribute byte of v2 (unused by Kafka, always 0
    when Kafka writes it) kept so that re-encoding is exact.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0

    @property
    def is_tombstone(self) -> bool:
        """True for a record with a null value."""
        return self.value is None
