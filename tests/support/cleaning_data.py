"""Compacted data directories for the cleaning-job tests (in process and on Spark)."""

from __future__ import annotations

import random
from pathlib import Path

from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType

DAY_MS = 24 * 3600 * 1000
SKIPPED_FILES = {".lock", "seglog-cleaner-history.json"}  # history holds elapsed times


def fill(manager: LogManager, clock: ManualClock, *, keys: int, records: int, seed: int) -> None:
    """Two compacted topics (2 and 1 partitions) with duplicates, tombstones, codecs."""
    rng = random.Random(seed)
    for name, partitions in (("prices", 2), ("users", 1)):
        if name not in manager.topic_names():
            manager.create_topic(
                name,
                partitions,
                configs={
                    "cleanup.policy": "compact",
                    "min.cleanable.dirty.ratio": "0.01",
                    "segment.bytes": "40000",
                    "delete.retention.ms": str(DAY_MS),
                },
            )
        for partition in range(partitions):
            log = manager.get_log(name, partition)
            written = 0
            while written < records:
                codec = rng.choice(
                    [CompressionType.NONE, CompressionType.NONE, CompressionType.LZ4]
                )
                builder = BatchBuilder(compression=codec)
                for _ in range(rng.randint(1, 20)):
                    key = b"k%06d" % rng.randrange(keys)
                    value = None if rng.random() < 0.05 else b"v" * rng.randint(1, 40)
                    builder.append(clock.now_ms(), key, value)
                    written += 1
                log.append(builder.build())
                clock.advance(1)
            log.roll()


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in SKIPPED_FILES
    }


def log_mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.log")}
