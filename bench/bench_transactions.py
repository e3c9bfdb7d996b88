"""Transactions in storage: what producer state costs an append and a read.

Two comparisons, each on the same bytes, contenders interleaved round-robin (medians of
``--repeat`` samples; cpu and wall):

* **append**: ``--size-mb`` MiB of 16 KiB batches (the Java producer's ``batch.size``), one
  ``Log.append`` per batch (one produce request each) into a fresh log, then flushed and
  closed: batches of an idempotent producer (producer id, epoch, consecutive sequences: each
  append is checked against the producer state, and the state is snapshotted at rolls and at
  close) vs the same records from a non-idempotent producer. Goal: **>= 0.9x**.
* **read**: a full read (``Log.iter_records``, every record decoded) of one log where 30% of
  the records are transactional and a third of those (10% of all) aborted, the rest written
  by idempotent producers: ``read_committed`` (LSO bound, ``.txnindex`` lookups, aborted
  batches skipped) vs ``read_uncommitted``. Rates are records *scanned* per second (the
  log's record count over the time), so skipping the aborted tenth does not count as speed.
  Goal: **>= 0.9x**.

Run: ``.venv/bin/python -m bench.bench_transactions [--size-mb N] [--repeat R] [--quick]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/bench_transactions.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    add_ratios,
    machine_info,
    markdown_table,
    measure_interleaved,
    rows_from_samples,
    write_results,
)
from seglog.clock import SystemClock
from seglog.config import LogConfig
from seglog.core.isolation import IsolationLevel
from seglog.engine.log import Log
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition

BATCH_BYTES = 16 * 1024
VALUE = b"v" * 100
TP = TopicPartition("bench", 0)


def _batches(total_bytes: int, producer_id: int) -> tuple[list[bytes], int]:
    """16 KiB batches of 100-byte values; with ``producer_id >= 0``, an idempotent
    producer's (consecutive sequences). Returns the batches and the record count."""
    out: list[bytes] = []
    sequence = 0
    records = 0
    size = 0
    while size < total_bytes:
        builder = BatchBuilder(
            max_batch_bytes=BATCH_BYTES,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence if producer_id >= 0 else -1,
        )
        while builder.try_append(0, b"key%08d" % records, VALUE):
            records += 1
        batch = builder.build()
        sequence += len(builder)
        out.append(batch)
        size += len(batch)
    return out, records


def _append_run(root: Path, batches: list[bytes]) -> Callable[[], object]:
    def run() -> object:
        directory = Path(tempfile.mkdtemp(dir=root)) / "bench-0"
        log = Log.open(
            directory, TP, LogConfig(segment_bytes=64 * 1024 * 1024), clock=SystemClock()
        )
        for batch in batches:
            log.append(batch)
        log.flush()
        end = log.log_end_offset
        log.close()
        return end  # the directory is removed with the root, outside the clock

    return run


def _mixed_log(directory: Path, total_bytes: int) -> tuple[Log, int]:
    """The read benchmark's log (module docstring); returns it and its record count."""
    log = Log.open(directory, TP, LogConfig(segment_bytes=64 * 1024 * 1024), clock=SystemClock())
    sequences = dict.fromkeys(range(10), 0)
    records = 0
    batch_no = 0
    while log.size_bytes() < total_bytes:
        pid = batch_no % 10  # producers 0-2 transactional (30%), 3-9 idempotent
        transactional = pid < 3
        builder = BatchBuilder(
            max_batch_bytes=BATCH_BYTES,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=sequences[pid],
            is_transactional=transactional,
        )
        while builder.try_append(0, b"key%08d" % records, VALUE):
            records += 1
        sequences[pid] += len(builder)
        log.append(builder.build())
        if transactional:
            # producer 0's transactions abort (10% of the records), 1 and 2 commit
            log.append_marker(pid, 0, commit=pid != 0, coordinator_epoch=0)
        batch_no += 1
    log.flush()
    return log, records


def main(argv: Sequence[str] | None = None) -> int:
    """Run both comparisons; print Markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=float, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    size = int((4 if args.quick else args.size_mb) * 1024 * 1024)
    repeat = 1 if args.quick else args.repeat
    root = Path(tempfile.mkdtemp(prefix="seglog-bench-txn-"))
    rows = []
    try:
        plain, count = _batches(size, -1)
        idempotent, count2 = _batches(size, 1)
        assert count == count2 and sum(map(len, plain)) == sum(map(len, idempotent))
        nbytes = sum(map(len, plain))
        samples = measure_interleaved(
            {
                "idempotent producer": _append_run(root, idempotent),
                "non-idempotent producer": _append_run(root, plain),
            },
            repeat=repeat,
        )
        append_rows = rows_from_samples(
            "transactions", "append 16 KiB batches", samples, records=count, nbytes=nbytes
        )
        add_ratios(append_rows, "idempotent producer", ["non-idempotent producer"])
        rows += append_rows

        log, records = _mixed_log(root / "mixed-0", size)
        start = log.log_start_offset

        def read(level: IsolationLevel) -> Callable[[], object]:
            return lambda: sum(1 for _ in log.iter_records(start, isolation_level=level))

        samples = measure_interleaved(
            {
                "read_committed": read(IsolationLevel.READ_COMMITTED),
                "read_uncommitted": read(IsolationLevel.READ_UNCOMMITTED),
            },
            repeat=repeat,
        )
        read_rows = rows_from_samples(
            "transactions",
            "full read, 30% txn / 10% aborted",
            samples,
            records=records,
            nbytes=log.size_bytes(),
        )
        add_ratios(read_rows, "read_committed", ["read_uncommitted"])
        rows += read_rows
        kept = read(IsolationLevel.READ_COMMITTED)()
        log.close()
        print(markdown_table(rows))
        print(f"\nread_committed returned {kept:,} of {records:,} records (aborted ones left out)")
        for row in rows:
            for peer, ratio in row.ratios.items():
                verdict = "met" if ratio["wall"] >= 0.9 else "NOT met"
                print(
                    f"- {row.contender} vs {peer}: {ratio['wall']:.2f}x wall, "
                    f"{ratio['cpu']:.2f}x cpu (goal >= 0.9x: {verdict})"
                )
        write_results(
            "transactions", {"machine": machine_info(), "rows": [r.to_json() for r in rows]}
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
