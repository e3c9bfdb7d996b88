"""Producer id allocation (InitProducerId): the ``producer-id-block`` file's format and
damage, blocks of 1000, ids never repeated across restarts, above every producer id already
in the logs (a copied broker's directory) and every root's mark, under threads."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.engine.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from seglog.errors import CorruptCheckpointError, InvalidConfigError, ProducerIdsExhaustedError
from seglog.storage.producer_id_block import (
    PRODUCER_ID_BLOCK_FILE,
    PRODUCER_ID_MAX,
    claim_block,
    read_next_block_start,
)
from seglog.testing.transactions import append_idempotent

T0 = 1_700_000_000_000


def test_blocks_of_1000_and_the_mark_on_disk(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path)
    assert read_next_block_start(tmp_path) == 0  # no file yet
    ids = [manager.next_producer_id() for _ in range(2500)]
    assert ids == list(range(2500))
    assert (tmp_path / PRODUCER_ID_BLOCK_FILE).read_bytes() == b"0\n3000\n"
    assert manager.block is not None and (manager.block.first, manager.block.last) == (2000, 2999)
    assert PRODUCER_ID_BLOCK_SIZE == 1000


def test_a_restart_never_repeats_an_id(tmp_path: Path) -> None:
    seen: set[int] = set()
    for _ in range(4):  # each "process" uses part of a block and stops
        manager = ProducerIdManager(tmp_path)
        ids = [manager.next_producer_id() for _ in range(300)]
        assert not seen.intersection(ids)
        seen.update(ids)
    assert min(seen) == 0 and read_next_block_start(tmp_path) == 4000


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1\n5\n", "line 1: unknown version '1'"),
        (b"0\n-5\n", "line 2: the next producer id block start '-5' is not an int64"),
        (b"0\nabc\n", "line 2"),
        (b"0\n99999999999999999999\n", "line 2"),
        (b"0\n5", "expected 2 lines ending with a newline"),
        (b"", "expected 2 lines"),
        (b"0\n\xff\n", "not ASCII"),
    ],
)
def test_a_damaged_file_is_an_error_naming_it_never_zero(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / PRODUCER_ID_BLOCK_FILE
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError, match=message) as info:
        ProducerIdManager(tmp_path).next_producer_id()
    assert info.value.path == str(path)
    assert path.read_bytes() == content  # left for a human to look at


def test_the_floor_and_the_end_of_int64(tmp_path: Path) -> None:
    assert claim_block(tmp_path, floor=70, size=10).first == 70
    assert claim_block(tmp_path, floor=5, size=10).first == 80  # the mark wins over a low floor
    (tmp_path / PRODUCER_ID_BLOCK_FILE).write_bytes(b"0\n%d\n" % (PRODUCER_ID_MAX - 5))
    with pytest.raises(ProducerIdsExhaustedError, match="no block of 10 producer ids"):
        claim_block(tmp_path, floor=0, size=10)
    block = claim_block(tmp_path, floor=0, size=6)
    assert block.last == PRODUCER_ID_MAX


def test_threads_get_distinct_ids(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path, block_size=50)
    got: list[list[int]] = [[] for _ in range(4)]

    def take(out: list[int]) -> None:
        out.extend(manager.next_producer_id() for _ in range(400))

    threads = [threading.Thread(target=take, args=(out,)) for out in got]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for out in got for i in out]
    assert sorted(every) == list(range(1600))


def test_log_manager_starts_above_the_producer_ids_in_its_logs(tmp_path: Path) -> None:
    """A copied broker's directory: its producers' ids came from another counter. The first
    id seglog hands out is above all of them, and above every root's mark."""
    clock = ManualClock(T0)
    roots = [tmp_path / "a", tmp_path / "b"]
    with open_log_dirs(roots, clock=clock) as manager:
        manager.create_topic("t", 2)
        append_idempotent(manager.get_log("t", 0), 123_456, 0, 0, [(b"k", b"v")])
        append_idempotent(manager.get_log("t", 1), 9_000, 2, 0, [(b"k", b"v")])
    (roots[1] / PRODUCER_ID_BLOCK_FILE).write_bytes(b"0\n100\n")  # a mark in another root
    with open_log_dirs(roots, clock=clock) as manager:
        first = manager.producer_ids.next_producer_id()
        assert first == 123_457
        assert manager.producer_ids is manager.producer_ids
    assert read_next_block_start(roots[0]) == 123_457 + 1000
    (roots[1] / PRODUCER_ID_BLOCK_FILE).write_bytes(b"0\n500000\n")  # log.dirs reordered
    with open_log_dirs(roots, clock=clock) as manager:
        assert manager.producer_ids.next_producer_id() == 500_000
    with (
        open_log_dirs(roots, clock=clock, read_only=True) as manager,
        pytest.raises(InvalidConfigError, match="read-only"),
    ):
        manager.producer_ids.next_producer_id()
