"""A produce/roll/retain/clean/compact loop that acknowledges flushed records, for crash tests.

A test starts it in a real interpreter (``python -m seglog.testing.workload``), SIGKILLs it at
a random moment, reopens the data directory and checks that every *acknowledged* record
survived (:mod:`tests.crash.test_sigkill` does). It can also run in process
(:func:`run_workload`) under a crash hook of :mod:`seglog.testing.crash`.

Topics (created on the first run, reused by later runs on the same directory):

* ``events`` (:data:`EVENTS`): ``cleanup.policy=delete``, small segments and
  ``retention.bytes``, so appends roll and retention deletes whole segments;
* ``kv`` (:data:`KV`): ``cleanup.policy=compact``, a few keys (:data:`KV_KEYS`) rewritten
  over and over with some tombstones, cleaned by the log cleaner (Kafka-style, in place) and
  copied by the compactor (Pulsar-style compacted copy beside the log).

Each iteration appends a batch to both topics, and every few iterations flushes (and then
acknowledges), rolls, runs retention, a cleaner pass, a compactor run and the checkpoints.

**Acknowledgement file** (``--acks``): UTF-8 JSON lines, appended with one ``write`` each and
never rewritten. After ``Log.flush()`` returned for a topic, one line per appended batch not yet
acknowledged::

    {"topic": "kv", "partition": 0, "first_offset": 120,
     "records": [["6b33", "72313a3435"], ["6b37", null], ...]}

keys and values in hex, ``null`` for a null key or value (a tombstone); offsets are
``first_offset`` + the record's index. A line is written only after the flush that made its
records durable returned, so a crash never loses an acknowledged record: its offset keeps the
same key and value, unless retention removed it (offset below the log start offset) or, on
the compacted topic, a later record of the same key superseded it. Other lines:
``{"event": "open", "pid": P, "run": R}`` once the directory is open (recovery done) and
``{"event": "done", "iterations": N}`` after a run that was not killed. A crash may tear the
last line; readers (:func:`read_acks`) ignore a line without its newline.

Usage::

    python -m seglog.testing.workload DATA_DIR --acks FILE [--seed S] [--iterations N]
        [--run R]

Exit status: 0 after ``N`` iterations (default: run until killed), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seglog.clock import Clock

EVENTS = "events"
KV = "kv"
KV_KEYS = 24
# Broker settings of every open: a small offset map keeps a cleaner pass cheap.
BROKER_OVERRIDES = {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
EVENTS_CONFIG = {
    "cleanup.policy": "delete",
    "segment.bytes": "3000",
    "retention.bytes": "12000",
    "index.interval.bytes": "256",
}
KV_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "2500",
    "min.cleanable.dirty.ratio": "0.01",
    "index.interval.bytes": "256",
}
ITERATIONS_MAX = 10_000_000


@dataclass(frozen=True, slots=True)
class AckedRecord:
    """One acknowledged record: it was durable when its line was written."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def _unhex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def read_acks(path: Path) -> tuple[list[AckedRecord], list[dict[str, object]]]:
    """The acknowledged records of an ack file and its event lines, in file order. A last
    line without a newline (torn by a kill) is ignored."""
    records: list[AckedRecord] = []
    events: list[dict[str, object]] = []
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return records, events
    for line in text.split("\n")[:-1]:  # the part after the last newline is torn or empty
        body = json.loads(line)
        if "event" in body:
            events.append(body)
            continue
        first = int(body["first_offset"])
        for i, (key, value) in enumerate(body["records"]):
            records.append(
                AckedRecord(
                    str(body["topic"]),
                    int(body["partition"]),
                    first + i,
                    _unhex(key),
                    _unhex(value),
                )
            )
    return records, events


class _AckWriter:
    """Appends whole lines to the ack file, each with one ``write`` (O_APPEND)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)

    def line(self, body: dict[str, object]) -> None:
        data = (json.dumps(body, separators=(",", ":")) + "\n").encode()
        written = os.write(self._fd, data)
        if written != len(data):  # a regular file on a healthy disk writes it whole
            raise OSError(f"short write to the ack file: {written} of {len(data)}")

    def close(self) -> None:
        os.close(self._fd)


def _kv_record(rng: random.Random, run: int, seq: int) -> tuple[bytes, bytes | None]:
    key = b"k%02d" % rng.randrange(KV_KEYS)
    if rng.random() < 0.08:
        return key, None  # a tombstone
    return key, b"r%d:%d:" % (run, seq) + b"x" * rng.randrange(0, 40)


def run_workload(
    data_dir: Path,
    acks_path: Path,
    *,
    seed: int,
    run: int = 0,
    iterations: int | None = None,
    clock: Clock | None = None,
) -> int:
    """Open ``data_dir`` (creating the topics), run the loop of the module docstring for
    ``iterations`` (None: until killed), close cleanly; returns the iterations done."""
    from seglog.engine.log_manager import open_log_dirs  # the engine only when run

    rng = random.Random(seed)
    acks = _AckWriter(acks_path)
    manager = open_log_dirs([data_dir], overrides=BROKER_OVERRIDES, clock=clock)
    try:
        for name, configs in ((EVENTS, EVENTS_CONFIG), (KV, KV_CONFIG)):
            if name not in manager.topic_names():
                manager.create_topic(name, 1, configs)
        logs = {name: manager.get_log(name, 0) for name in (EVENTS, KV)}
        pending: dict[str, list[tuple[int, list[tuple[bytes | None, bytes | None]]]]] = {
            EVENTS: [],
            KV: [],
        }
        acks.line({"event": "open", "pid": os.getpid(), "run": run})
        done = 0
        limit = ITERATIONS_MAX if iterations is None else iterations
        while done < limit:
            done += 1
            events_batch: list[tuple[bytes | None, bytes | None]] = [
                (b"e%d:%d:%d" % (run, done, i), b"v" * rng.randrange(1, 60) + b"%d" % i)
                for i in range(rng.randrange(1, 6))
            ]
            kv_batch: list[tuple[bytes | None, bytes | None]] = [
                _kv_record(rng, run, done * 10 + i) for i in range(rng.randrange(1, 5))
            ]
            for name, batch in ((EVENTS, events_batch), (KV, kv_batch)):
                info = logs[name].append_records(batch)
                pending[name].append((info.first_offset, batch))
            if rng.random() < 0.4:
                for name in (EVENTS, KV):
                    logs[name].flush()
                    for first, batch in pending[name]:
                        acks.line(
                            {
                                "topic": name,
                                "partition": 0,
                                "first_offset": first,
                                "records": [[_hex(k), _hex(v)] for k, v in batch],
                            }
                        )
                    pending[name].clear()
            roll = rng.random()
            if roll < 0.03:
                logs[rng.choice((EVENTS, KV))].roll()
            elif roll < 0.15:
                manager.run_retention()
            elif roll < 0.25:
                manager.clean_once(topic=KV)
            elif roll < 0.30:
                manager.compact(KV, 0)
            elif roll < 0.33:
                manager.checkpoint_all()
        acks.line({"event": "done", "iterations": done})
        return done
    finally:
        try:
            manager.close()
        finally:
            acks.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m seglog.testing.workload",
        description="Produce, roll, retain, clean and compact in a loop, acknowledging "
        "flushed records in a side file (see the module docstring).",
    )
    parser.add_argument("data_dir", type=Path, help="the log directory (log.dirs) to use")
    parser.add_argument("--acks", type=Path, required=True, help="the acknowledgement file")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the workload")
    parser.add_argument("--run", type=int, default=0, help="run number, part of the values")
    parser.add_argument(
        "--iterations", type=int, default=None, help="stop after N iterations (default: never)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m seglog.testing.workload``; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.iterations is not None and not 0 <= args.iterations <= ITERATIONS_MAX:
        print(f"--iterations must be in 0..{ITERATIONS_MAX}", file=sys.stderr)
        return 2
    run_workload(args.data_dir, args.acks, seed=args.seed, run=args.run, iterations=args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
