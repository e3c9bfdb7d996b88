"""A real broker's producer ``.snapshot`` files agree with the state seglog rebuilds from
the broker's own log, and a read-only open of those partitions finds the same state."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_location import corpus_root
from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.core.producer_state import ProducerStateManager
from seglog.engine.log import Log
from seglog.format.topic_names import TopicPartition, parse_partition_dir_name
from seglog.storage.producer_snapshots import list_snapshot_offsets, read_snapshot
from seglog.storage.producer_state_replay import rebuild_producer_state

NEVER_EXPIRES = 1 << 62


def _partitions_with_snapshots() -> list[object]:
    root = corpus_root()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="Kafka corpus not found"))]
    found = sorted(
        p.parent
        for p in (root / "broker").rglob("*.snapshot")
        if (p.parent / "00000000000000000000.log").exists()
    )
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dict.fromkeys(found)]


def _open(directory: Path) -> Log:
    name = parse_partition_dir_name(directory.name)
    assert name is not None
    return Log.open(
        directory,
        TopicPartition(name.topic, name.partition),
        LogConfig(),
        clock=ManualClock(0),
        writable=False,
        producer_id_expiration_ms=NEVER_EXPIRES,
    )


@pytest.mark.parametrize("directory", _partitions_with_snapshots())
def test_broker_snapshots_match_the_state_rebuilt_from_the_log(directory: Path) -> None:
    log = _open(directory)
    try:
        checked = 0
        for offset in list_snapshot_offsets(directory):
            if offset > log.log_end_offset or log.log_start_offset > 0:
                continue
            state = ProducerStateManager("corpus", expiration_ms=NEVER_EXPIRES)
            rebuild_producer_state(
                state,
                directory,
                log.segments,
                log_start_offset=0,
                up_to=offset,
                now_ms=0,
                trust_snapshots_below=-1,  # from the log only
                remove_damaged=False,
                problems=[],
            )
            rebuilt = {e.producer_id: e for e in state.snapshot_entries()}
            for entry in read_snapshot(directory / f"{offset:020d}.snapshot"):
                # A broker drops producers that expired; every one it kept must agree.
                assert rebuilt.get(entry.producer_id) == entry, (offset, entry)
            checked += 1
        # the log's read-only producer state (newest snapshot at the recovery point, else
        # rebuilt from the log) agrees with a rebuild of the whole log
        whole = ProducerStateManager("corpus", expiration_ms=NEVER_EXPIRES)
        rebuild_producer_state(
            whole,
            directory,
            log.segments,
            log_start_offset=log.log_start_offset,
            up_to=log.log_end_offset,
            now_ms=0,
            trust_snapshots_below=-1,
            remove_damaged=False,
            problems=[],
        )
        assert log.producer_state.snapshot_entries() == whole.snapshot_entries()
        assert log.last_stable_offset <= log.log_end_offset
        assert checked or log.log_start_offset > 0
    finally:
        log.close()
