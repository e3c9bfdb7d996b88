"""Compacted data directories for the cleaning-job tests (in process and on Spark)."""

from __future__ import annotations

import random
from pathlib import Path

from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.testing.transactions import append_idempotent, append_transactional

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


def fill_transactional(
    manager: LogManager, clock: ManualClock, *, keys: int, records: int, seed: int
) -> None:
    """A compacted topic ``txns`` (2 partitions) where about a third of the records are
    transactional (several producers, commits and aborts, transactions spanning segments),
    some are an idempotent producer's and the rest plain (some LZ4), with tombstones. The
    transactions a previous fill left open are committed first; one is left open at the end
    of partition 0 (the cleaner must stop at it)."""
    rng = random.Random(seed)
    name = "txns"
    if name not in manager.topic_names():
        manager.create_topic(
            name,
            2,
            configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.bytes": "20000",
                "delete.retention.ms": str(DAY_MS),
            },
        )
    for partition in range(2):
        log = manager.get_log(name, partition)
        for txn in log.ongoing_transactions():
            log.append_marker(txn.producer_id, txn.producer_epoch, commit=True, coordinator_epoch=0)
        base_pid = 1000 * (seed + 1) + 100 * partition
        sequences = {base_pid + i: 0 for i in range(5)}
        open_txns: set[int] = set()
        idempotent = base_pid + 50
        sequences[idempotent] = 0
        written = 0

        def batch_records() -> list[tuple[bytes, bytes | None]]:
            count = rng.randint(1, 12)
            return [
                (
                    b"k%06d" % rng.randrange(keys),
                    None if rng.random() < 0.05 else b"v" * rng.randint(1, 40),
                )
                for _ in range(count)
            ]

        while written < records:
            roll = rng.random()
            records_ = batch_records()
            if roll < 0.3:
                pid = base_pid + rng.randrange(5)
                append_transactional(log, pid, 0, sequences[pid], records_)
                sequences[pid] += len(records_)
                open_txns.add(pid)
            elif roll < 0.4:
                append_idempotent(log, idempotent, 0, sequences[idempotent], records_)
                sequences[idempotent] += len(records_)
            else:
                codec = rng.choice([CompressionType.NONE, CompressionType.LZ4])
                builder = BatchBuilder(compression=codec)
                for key, value in records_:
                    builder.append(clock.now_ms(), key, value)
                log.append(builder.build())
            written += len(records_)
            if open_txns and rng.random() < 0.15:
                pid = rng.choice(sorted(open_txns))
                open_txns.discard(pid)
                log.append_marker(pid, 0, commit=rng.random() < 0.7, coordinator_epoch=0)
            clock.advance(1)
        left_open = sorted(open_txns)[:1] if partition == 0 else []
        for pid in sorted(open_txns):
            if pid not in left_open:
                log.append_marker(pid, 0, commit=rng.random() < 0.7, coordinator_epoch=0)
        log.roll()
