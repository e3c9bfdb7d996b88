"""The partition log (Kafka's ``UnifiedLog``/``LocalLog``): one partition's segments, appends,
reads and swaps.

* :mod:`~seglog.engine.log.partition_log`: :class:`Log`: appends and offsets, rolls,
  flushes, truncation, retention; it composes the two below and keeps the public API;
* :mod:`~seglog.engine.log.segment_list`: the published segment list, the cleaner's segment
  swap (``.cleaned``/``.swap``) and the two-step delete of segment files;
* :mod:`~seglog.engine.log.reads`: reads and lookups (Fetch, ListOffsets) on a snapshot;
* :mod:`~seglog.engine.log.fetch_ranges` and :mod:`~seglog.engine.log.serving`: what a Kafka
  server needs: Fetch as open file ranges (never decoded), append listeners, ListOffsets;
* :mod:`~seglog.engine.log.record_scan`: the read loop behind :meth:`Log.iter_records`, which
  never stops silently at damage.

The names below are re-exported so ``from seglog.engine.log import Log`` keeps working.
"""

from seglog.engine.log.append_info import LogAppendInfo
from seglog.engine.log.fetch_ranges import FetchRanges, FileRange
from seglog.engine.log.partition_log import (
    APPEND_CHUNK_BYTES_MAX,
    PIPELINED_APPEND_MIN_BYTES,
    Log,
)
from seglog.engine.log.reads import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchResult,
    OffsetAndTimestamp,
)

__all__ = [
    "APPEND_CHUNK_BYTES_MAX",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "PIPELINED_APPEND_MIN_BYTES",
    "FetchRanges",
    "FetchResult",
    "FileRange",
    "Log",
    "LogAppendInfo",
    "OffsetAndTimestamp",
]
