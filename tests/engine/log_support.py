"""Shared helpers for engine tests: configs, logs on tmp dirs, batches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.engine.log import Log
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition

TP = TopicPartition("events", 0)
T0 = 1_700_000_000_000


def config(**overrides: Any) -> LogConfig:
    """Kafka's defaults with some fields replaced."""
    return replace(LogConfig(), **overrides)


def open_log(directory: Path, clock: ManualClock, **kwargs: Any) -> Log:
    """Open (or create) a writable log for ``TP`` under ``directory``."""
    cfg = kwargs.pop("config", None) or config()
    return Log.open(directory / "events-0", TP, cfg, clock=clock, **kwargs)


def batch(
    values: list[bytes | None],
    *,
    keys: list[bytes | None] | None = None,
    timestamp: int = T0,
    timestamps: list[int] | None = None,
) -> bytes:
    """A producer's batch (base offset 0) of these values."""
    keys = keys or [b"k%d" % i for i in range(len(values))]
    stamps = timestamps or [timestamp] * len(values)
    records = [Record(i, stamps[i], keys[i], v) for i, v in enumerate(values)]
    return encode_batch(records)


def values(log: Log, start: int | None = None) -> list[tuple[int, bytes | None]]:
    """Every (offset, value) of the log from ``start`` (default: the log start offset)."""
    offset = log.log_start_offset if start is None else start
    return [(r.offset, r.value) for r in log.read_records(offset, 10**9)]
