"""Transaction-aware cleaning benchmark: a round over a log where 30 % of the records are
transactional (10 % aborted) beside the non-transactional clean of the same records.

What the issue asks: "cleaning a 1 GiB log where 30% of the records are transactional and 10%
aborted vs the non-transactional clean of the same data (goal: >= 0.8x)".

**Workload.** One record stream, written twice through seglog's ``LogManager`` into a
compacted topic (``segment.bytes`` 256 MiB; ``--segment-mb``): ``keys`` keys (``b"key%09d"``)
each updated ``UPDATES`` (10) times, in rounds of a random permutation of all keys; values are
``--value-bytes`` (100) printable bytes; CreateTime advancing 1 ms every 64 records. The stream
is cut into 16 KiB producer batches (``BatchBuilder``), and batch ``i`` has a role by
``i mod 10``: 0-6 *plain*, 7-8 a *committed* transaction's, 9 an *aborted* transaction's.

* The **plain log** holds every batch as a plain (non-transactional) batch.
* The **transactional log** holds the plain batches as they are, and the others as
  transactional batches of 8 producers (ids 1-4 commit, 5-8 abort; sequences from 0 by
  producer, epoch 0): each producer's transaction takes 4 of its batches, then the
  coordinator's COMMIT or ABORT marker is written (``Log.append_marker``; the ABORT writes the
  ``.txnindex`` entry). Every transaction is ended before the roll, so the whole log is
  cleanable (the last stable offset is the log end).

``keys`` makes the plain log ~99 % of ``--size-mb`` MiB (default 1024: 1 GiB). Both logs are
rolled (an empty active segment) and closed cleanly.

**Contenders**, interleaved round-robin, one untimed warm-up round, then ``--repeat`` (3)
timed rounds, median [min..max] of wall seconds: ``LogManager.clean_once()`` on a fresh copy
of each log (copied and ``os.sync()``ed outside the clock), end to end (pre-pass, map build,
every group cleaned, fsynced and swapped in). MB/s = the log's own bytes / s (the
transactional log is a little larger: its markers). Goal: transactional MB/s >= 0.8 x plain.

**Checks** (every sample; a wrong answer fails the run): the plain clean keeps exactly each
key's last record; the transactional clean keeps, as a ``read_committed`` reader sees it,
exactly each key's last *committed* record (aborted records never win), with no aborted record
left anywhere.

Run: ``.venv/bin/python -m bench.bench_txn_cleaner [--size-mb 1024] [--segment-mb 256]
[--value-bytes 100] [--repeat 3] [--workdir DIR] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: python bench/bench_txn_cleaner.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_cleaner import Contender, key_of, measure_rounds, warm
from bench.bench_storage import remove_tree, size_label
from bench.common import (
    BASE_TIMESTAMP_MS,
    MB,
    PRODUCER_BATCH_BYTES,
    Spread,
    format_ratio,
    machine_info,
    source_state,
    write_results,
)
from seglog.core.isolation import IsolationLevel
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format import BatchBuilder
from seglog.testing.transactions import producer_batch

MIB = 1 << 20
TOPIC = "bench-txn"
PARTITION_DIR = f"{TOPIC}-0"
UPDATES = 10
FILL = 0.99
TIMESTAMP_EVERY = 64
SEED = 20261127
BATCHES_PER_TXN = 4
COMMIT_PRODUCERS = (1, 2, 3, 4)
ABORT_PRODUCERS = (5, 6, 7, 8)
GOAL = 0.8
PLAIN = "clean: plain log"
TXN = "clean: 30% transactional, 10% aborted"
MEASURED_SOURCES = ("src/seglog/engine/cleaning", "src/seglog/core", "src/seglog/kernels")

Role = int  # 0 plain, 1 committed, 2 aborted


def role_of(batch_index: int) -> Role:
    """Batch ``i``'s role by ``i mod 10`` (module docstring)."""
    slot = batch_index % 10
    return 0 if slot < 7 else (1 if slot < 9 else 2)


@dataclass
class Source:
    """One generated log directory and its expected cleaned contents."""

    root: Path
    log_bytes: int
    records: int
    batches: int
    expected: dict[bytes, bytes]  # key -> the value a reader must see after the clean


def record_batches(keys: int, value_bytes: int) -> Iterator[list[tuple[int, bytes, bytes]]]:
    """The stream cut into 16 KiB batches of (timestamp, key, value), lazily."""
    rng = np.random.default_rng(SEED)
    pool = rng.integers(ord("a"), ord("z") + 1, 1 << 20, dtype=np.uint8).tobytes()
    span = len(pool) - value_bytes
    key_bytes = [key_of(i) for i in range(keys)]
    builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
    current: list[tuple[int, bytes, bytes]] = []
    index = 0
    for _ in range(UPDATES):
        for k in rng.permutation(keys).tolist():
            at = (index * 7919) % span
            timestamp = BASE_TIMESTAMP_MS + index // TIMESTAMP_EVERY
            record = (timestamp, key_bytes[k], pool[at : at + value_bytes])
            if not builder.try_append(*record):
                yield current
                current = []
                builder = BatchBuilder(base_offset=0, max_batch_bytes=PRODUCER_BATCH_BYTES)
                builder.append(*record)
            current.append(record)
            index += 1
    yield current


def plain_batch(records: Sequence[tuple[int, bytes, bytes]]) -> bytes:
    builder = BatchBuilder(base_offset=0, max_batch_bytes=1 << 30)
    for timestamp, key, value in records:
        builder.append(timestamp, key, value)
    return builder.build()


class _Writer:
    """Appends the stream's batches to one of the two logs (module docstring)."""

    def __init__(self, manager: LogManager, *, transactional: bool) -> None:
        self.log = manager.get_log(TOPIC, 0)
        self.transactional = transactional
        self.sequences = dict.fromkeys(COMMIT_PRODUCERS + ABORT_PRODUCERS, 0)
        self.in_txn = dict.fromkeys(self.sequences, 0)
        self.turn = {1: 0, 2: 0}
        self.expected: dict[bytes, bytes] = {}

    def write(self, i: int, records: list[tuple[int, bytes, bytes]], plain: bytes) -> None:
        role = role_of(i) if self.transactional else 0
        if role != 2:
            for _, key, value in records:
                self.expected[key] = value
        if role == 0:
            self.log.append(plain)
            return
        producers = COMMIT_PRODUCERS if role == 1 else ABORT_PRODUCERS
        pid = producers[self.turn[role] % len(producers)]
        self.turn[role] += 1
        self.log.append(
            producer_batch(
                [(k, v) for _, k, v in records],
                producer_id=pid,
                producer_epoch=0,
                base_sequence=self.sequences[pid],
                transactional=True,
                timestamp_ms=records[0][0],
            )
        )
        self.sequences[pid] += len(records)
        self.in_txn[pid] += 1
        if self.in_txn[pid] == BATCHES_PER_TXN:
            self.log.append_marker(pid, 0, commit=role == 1, coordinator_epoch=0)
            self.in_txn[pid] = 0

    def finish(self) -> None:
        for pid, open_batches in self.in_txn.items():
            if open_batches:
                commit = pid in COMMIT_PRODUCERS
                self.log.append_marker(pid, 0, commit=commit, coordinator_epoch=0)
        self.log.roll()


def generate(workdir: Path, keys: int, value_bytes: int, segment_bytes: int) -> dict[str, Source]:
    """Write the plain and the transactional log (module docstring) in one pass."""
    roots = {PLAIN: workdir / "plain", TXN: workdir / "txn"}
    managers = {name: open_log_dirs([root]) for name, root in roots.items()}
    records = batches = 0
    try:
        for manager in managers.values():
            manager.create_topic(
                TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}
            )
        writers = {
            name: _Writer(manager, transactional=name == TXN) for name, manager in managers.items()
        }
        for i, batch in enumerate(record_batches(keys, value_bytes)):
            plain = plain_batch(batch)
            for writer in writers.values():
                writer.write(i, batch, plain)
            records += len(batch)
            batches += 1
        for writer in writers.values():
            writer.finish()
    finally:
        for manager in managers.values():
            manager.close()
    out = {}
    for name, root in roots.items():
        files = [p for p in (root / PARTITION_DIR).glob("*.log") if p.stat().st_size]
        size = sum(p.stat().st_size for p in files)
        out[name] = Source(root, size, records, batches, writers[name].expected)
    return out


def check(manager: LogManager, source: Source) -> None:
    """The cleaned log holds, as read_committed sees it, each key's last committed value."""
    log = manager.get_log(TOPIC, 0)
    seen: dict[bytes, bytes] = {}
    for r in log.iter_records(0, isolation_level=IsolationLevel.READ_COMMITTED):
        assert r.key is not None and r.value is not None and r.key not in seen, r.offset
        seen[r.key] = r.value
    if seen != source.expected:
        raise AssertionError("the cleaned log is not the compaction of the committed records")
    uncommitted = sum(1 for _ in log.iter_records(0))
    if uncommitted != len(seen):
        raise AssertionError(f"{uncommitted - len(seen)} aborted records left in the log")


def bench(sources: dict[str, Source], workdir: Path, repeat: int) -> dict[str, Spread]:
    """Time both cleans, interleaved; the wall-second spreads."""
    counter = iter(range(1 << 30))

    def contender(source: Source) -> Contender:
        def setup() -> tuple[Path, LogManager]:
            target = workdir / f"clean-{next(counter)}"
            shutil.copytree(source.root, target)
            os.sync()
            return target, open_log_dirs([target])

        def run(state: tuple[Path, LogManager]) -> object:
            return state[1].clean_once()

        def teardown(state: tuple[Path, LogManager], outcome: object, timed: bool) -> None:
            target, manager = state
            try:
                assert isinstance(outcome, list) and len(outcome) == 1, outcome
                if outcome[0].error or outcome[0].stats is None:
                    raise AssertionError(f"clean_once: {outcome[0]}")
                if outcome[0].stats.is_partial:
                    raise AssertionError("a partial round: raise the dedupe buffer")
                check(manager, source)
            finally:
                manager.close()
                remove_tree(target)

        return Contender(run, setup, teardown)

    for source in sources.values():
        warm(sorted((source.root / PARTITION_DIR).glob("*.log")))
    samples = measure_rounds({name: contender(s) for name, s in sources.items()}, repeat=repeat)
    return {name: Spread.of(s.wall_s) for name, s in samples.items()}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024.0, help="MiB of plain log")
    parser.add_argument("--segment-mb", type=float, default=256.0, help="segment.bytes, MiB")
    parser.add_argument("--value-bytes", type=int, default=100, help="value size")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 MiB log, 1 round")
    parser.add_argument("--workdir", type=Path, default=None, help="where scratch logs go")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"bench_txn_cleaner: ignoring options {unknown}", file=sys.stderr)
    if args.quick:
        args.size_mb, args.segment_mb, args.repeat = 8.0, 2.0, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print Markdown and write JSON to bench/results/."""
    args = parse_args(argv)
    info = machine_info()
    info["source"] = source_state(MEASURED_SOURCES)
    size_bytes = int(args.size_mb * MIB)
    segment_bytes = int(args.segment_mb * MIB)
    per_record = (
        len(plain_batch([(BASE_TIMESTAMP_MS, key_of(0), b"v" * args.value_bytes)] * 100)) / 100
    )
    keys = max(100, int(FILL * size_bytes / (UPDATES * per_record)))
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-txn-cleaner-", dir=args.workdir))
    try:
        started = time.perf_counter()
        sources = generate(workdir, keys, args.value_bytes, segment_bytes)
        built_s = time.perf_counter() - started
        print(
            f"# seglog transaction-aware cleaner benchmark: {info['date_utc']} UTC, "
            f"{info['cpu_count']} CPUs, load {info['loadavg']}\n"
            f"{keys:,} keys x {UPDATES} updates = {sources[PLAIN].records:,} records of "
            f"{args.value_bytes} B in {sources[PLAIN].batches:,} batches; segment.bytes "
            f"{size_label(segment_bytes)}; built in {built_s:.0f} s; {args.repeat} timed "
            "rounds after 1 warm-up, medians [min..max]\n",
            flush=True,
        )
        spreads = bench(sources, workdir, args.repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("| log | MB | clean s | MB/s |")
    print("|---|---:|---:|---:|")
    rates: dict[str, float] = {}
    for name, spread in spreads.items():
        mb = sources[name].log_bytes / MB
        rate = spread.rate(mb)
        rates[name] = rate.median
        print(
            f"| {name} | {mb:.1f} | {spread.median:.2f} [{spread.min:.2f}..{spread.max:.2f}] "
            f"| {rate.median:.1f} [{rate.min:.1f}..{rate.max:.1f}] |"
        )
    ratio = rates[TXN] / rates[PLAIN]
    met = ratio >= GOAL
    verdict = "met" if met else "NOT met"
    print(f"\ntransactional / plain: {format_ratio(ratio)} (goal >= {GOAL}x: {verdict})")
    payload: dict[str, Any] = {
        "machine": info,
        "command": " ".join(
            [sys.executable, "-m", "bench.bench_txn_cleaner", *(argv or sys.argv[1:])]
        ),
        "keys": keys,
        "value_bytes": args.value_bytes,
        "logs": {
            name: {
                "log_bytes": s.log_bytes,
                "records": s.records,
                "wall_s": [spreads[name].median, spreads[name].min, spreads[name].max],
            }
            for name, s in sources.items()
        },
        "ratio": ratio,
        "goal": GOAL,
        "met": met,
    }
    print(f"results: {write_results('txn-cleaner', payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
