"""Appends, reads and retention on one partition from several threads at once.

A reader must never see a partial or corrupt batch, never an offset out of order, and may only
fail with ``OffsetOutOfRangeError`` when retention moved the log start past it; a segment a
reader already holds stays readable until its delayed deletion.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

from log_support import T0, batch

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.errors import OffsetOutOfRangeError
from seglog.format.reader import EndKind, read_batches

APPENDS = 300


def test_appends_reads_and_retention_together(tmp_path: Path) -> None:
    clock = ManualClock(T0)  # never advanced: deleted files wait for their delay
    broker = BrokerConfig.from_properties({"log.dirs": str(tmp_path / "data")})
    with LogManager.open(broker, clock=clock) as manager:
        sample = batch([b"v" * 50, b"w" * 50])
        manager.create_topic(
            "busy",
            1,
            {"segment.bytes": str(len(sample) * 8), "retention.bytes": str(len(sample) * 40)},
        )
        log = manager.get_log("busy", 0)
        failures: list[BaseException] = []
        done = threading.Event()

        def appender() -> None:
            try:
                for i in range(APPENDS):
                    log.append(batch([b"%06d" % i, b"%06d" % i]))
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)
            finally:
                done.set()

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            checked = 0
            try:
                while not done.is_set() or checked < 50:
                    end = log.log_end_offset
                    if end == 0:
                        continue
                    offset = rng.randrange(max(log.log_start_offset, 0), end)
                    try:
                        fetched = log.read(offset, max_bytes=rng.choice([200, 4096]))
                    except OffsetOutOfRangeError:
                        continue  # retention moved the start past it: allowed
                    batches, ending = read_batches(fetched.data)
                    assert ending.kind is not EndKind.CORRUPT, ending.reason
                    assert batches, f"no whole batch at {offset}"
                    assert batches[0].base_offset <= offset <= batches[0].last_offset
                    for one in batches:
                        values = [r.value for r in one.records()]
                        assert len(values) == 2 and values[0] == values[1]
                    checked += 1
            except BaseException as exc:
                failures.append(exc)

        def janitor() -> None:
            try:
                while not done.is_set():
                    manager.run_retention()
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=appender), threading.Thread(target=janitor)]
        threads += [threading.Thread(target=reader, args=(seed,)) for seed in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures[0]
        manager.run_retention()
        assert log.log_end_offset == 2 * APPENDS
        assert log.size_bytes() <= len(sample) * 48  # retention kept it near retention.bytes
        offsets = [r.offset for r in log.iter_records(log.log_start_offset)]
        assert offsets == list(range(log.log_start_offset, 2 * APPENDS))
