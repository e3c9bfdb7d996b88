"""The partition log (Kafka's ``UnifiedLog``/``LocalLog``): one partition's segments, appends,
reads and swaps.

* :mod:`~seglog.engine.log.partition_log`: :class:`Log`: appends and offsets, rolls,
  flushes, truncation, retention, the cleaner's segment swap;
* :mod:`~seglog.engine.log.record_scan`: the read loop behind :meth:`Log.iter_records`, which
  never stops silently at damage.

The names below are re-exported so ``from seglog.engine.log import Log`` keeps working.
"""

from seglog.engine.log.partition_log import (
    APPEND_CHUNK_BYTES_MAX,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    PIPELINED_APPEND_MIN_BYTES,
    FetchResult,
    Log,
    LogAppendInfo,
    OffsetAndTimestamp,
)

__all__ = [
    "APPEND_CHUNK_BYTES_MAX",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "PIPELINED_APPEND_MIN_BYTES",
    "FetchResult",
    "Log",
    "LogAppendInfo",
    "OffsetAndTimestamp",
]
