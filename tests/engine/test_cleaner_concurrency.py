"""Appends, reads, retention and the log cleaner on one compacted partition at once (issue 8).

Appender threads write keyed records; a cleaner thread runs ``LogManager.clean_once`` in a
loop (each round swaps cleaned segments into the list); a janitor runs retention; reader
threads read the whole log again and again. Each reader first takes a snapshot of the
appends acknowledged so far (every key's latest acknowledged offset and value), then reads:

* no partial or corrupt batch (``iter_records`` raises ``CorruptRecordError`` on one) and no
  other error;
* offsets strictly increase;
* every key of the snapshot is found at its acknowledged offset with its value, or at a later
  offset (a newer append): the cleaner never makes a reader miss a key's latest value;
* no record comes from a segment that already left the list when the read began beyond what
  the list held: every record read has an offset below the log end offset after the read.

Rounds: ``SEGLOG_CLEANER_CONCURRENCY_APPENDS`` appends per appender (default 400;
``SEGLOG_RELIABILITY=long``: 4000).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from pathlib import Path

from log_support import T0

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from support.reliability import record_figures, scaled

APPENDS = scaled("SEGLOG_CLEANER_CONCURRENCY_APPENDS", 400, 4000)
APPENDERS = 2
READERS = 2
KEYS = 40


def test_appends_reads_retention_and_cleaning_together(tmp_path: Path) -> None:
    clock = ManualClock(T0)  # never advanced: replaced segments wait for their delayed delete
    broker = BrokerConfig.from_properties(
        {"log.dirs": str(tmp_path / "data"), "log.cleaner.dedupe.buffer.size": str(2 << 20)}
    )
    with LogManager.open(broker, clock=clock) as manager:
        manager.create_topic(
            "kv",
            1,
            {
                "cleanup.policy": "compact",
                "segment.bytes": "3000",
                "min.cleanable.dirty.ratio": "0.01",
                "index.interval.bytes": "300",
            },
        )
        log = manager.get_log("kv", 0)
        acked: dict[bytes, tuple[int, bytes]] = {}
        acked_lock = threading.Lock()
        failures: list[BaseException] = []
        appenders_done = threading.Event()
        counts = {"reads": 0, "records_read": 0, "rounds": 0, "keys_checked": 0}

        def appender(index: int) -> None:
            rng = random.Random(index)
            # At least APPENDS appends, and on until 3 cleaner rounds ran beside them (a
            # loaded machine cleans less often), within a bound.
            deadline = time.monotonic() + 120
            try:
                for i in itertools.count():
                    if i >= APPENDS and (counts["rounds"] >= 3 or time.monotonic() > deadline):
                        break
                    batch = []
                    for j in range(rng.randrange(1, 4)):
                        key = b"key-%02d" % rng.randrange(KEYS)
                        batch.append((key, b"a%d-%d-%d" % (index, i, j) + b"." * rng.randrange(30)))
                    # Appends of one key are ordered by the log's lock, so the ack map is
                    # updated under the same order: the later offset wins.
                    with acked_lock:
                        info = log.append_records(batch)
                        for n, (key, value) in enumerate(batch):
                            acked[key] = (info.first_offset + n, value)
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)

        def cleaner() -> None:
            try:
                while not appenders_done.is_set():
                    for result in manager.clean_once(topic="kv"):
                        assert result.error is None, result.error
                        counts["rounds"] += result.stats is not None
            except BaseException as exc:
                failures.append(exc)

        def janitor() -> None:
            try:
                while not appenders_done.is_set():
                    manager.run_retention()
            except BaseException as exc:
                failures.append(exc)

        def reader() -> None:
            try:
                while not appenders_done.is_set() or counts["reads"] < 4:
                    with acked_lock:
                        snapshot = dict(acked)
                    latest: dict[bytes | None, tuple[int, bytes | None]] = {}
                    offsets = []
                    for record in log.iter_records(log.log_start_offset):
                        offsets.append(record.offset)
                        latest[record.key] = (record.offset, record.value)
                    end = log.log_end_offset
                    assert all(b > a for a, b in itertools.pairwise(offsets)), "offsets"
                    assert not offsets or offsets[-1] < end
                    for key, (offset, value) in snapshot.items():
                        found = latest.get(key)
                        assert found is not None and found[0] >= offset, (key, offset, found)
                        if found[0] == offset:
                            assert found[1] == value, (key, offset, found, value)
                    counts["reads"] += 1
                    counts["records_read"] += len(offsets)
                    counts["keys_checked"] += len(snapshot)
            except BaseException as exc:
                failures.append(exc)

        appending = [threading.Thread(target=appender, args=(i,)) for i in range(APPENDERS)]
        others = [threading.Thread(target=cleaner), threading.Thread(target=janitor)]
        others += [threading.Thread(target=reader) for _ in range(READERS)]
        for thread in appending + others:
            thread.start()
        for thread in appending:
            thread.join(timeout=300)
        appenders_done.set()
        for thread in others:
            thread.join(timeout=300)
        assert not failures, repr(failures[0])
        assert counts["rounds"] >= 3 and counts["reads"] >= 4, counts
        # After one more round the log holds exactly the acknowledged latest values.
        manager.clean_once(topic="kv")
        final = {r.key: (r.offset, r.value) for r in log.iter_records(log.log_start_offset)}
        assert final == acked
        record_figures("cleaner-concurrency", appends=APPENDS * APPENDERS, **counts)
