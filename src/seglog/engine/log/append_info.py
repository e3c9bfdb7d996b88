"""What one append did (:class:`LogAppendInfo`), shared by the log's append paths."""

from __future__ import annotations

from typing import NamedTuple

from seglog.core.roll import RollReason


class LogAppendInfo(NamedTuple):
    """What one append did."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    batch_count: int
    record_count: int
    size_bytes: int
    rolled: RollReason | None
    #: the batches repeat ones already written (an idempotent producer's retry): nothing was
    #: written and the offsets are the original ones
    duplicate: bool = False
