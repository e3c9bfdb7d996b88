"""One transaction's metadata: Kafka's legal transitions and their checks."""

from __future__ import annotations

import pytest

from seglog.broker.server_config import ServerConfig
from seglog.broker.txns.metadata import (
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
    expirable,
    state_named,
    valid_previous_states,
)
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.errors import InvalidConfigError
from seglog.format.topic_names import TopicPartition

S = TransactionState
TP = TopicPartition("t", 0)


def _fresh(epoch: int = -1, state: TransactionState = S.EMPTY) -> TransactionMetadata:
    return TransactionMetadata(
        "id", producer_id=5, producer_epoch=epoch, timeout_ms=30_000, state=state, last_update_ms=0
    )


def test_state_codes_and_names_are_kafkas() -> None:
    assert [(s.value, s.kafka_name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert state_named("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE
    assert state_named("Bogus") is None
    assert valid_previous_states(S.PREPARE_ABORT) == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert {s for s in S if expirable(s)} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


def test_config_defaults_bounds_and_properties() -> None:
    config = TransactionConfig()
    assert (config.max_timeout_ms, config.transactional_id_expiration_ms) == (900_000, 604_800_000)
    assert (config.abort_timed_out_interval_ms, config.remove_expired_interval_ms) == (
        10_000,
        3_600_000,
    )
    assert config.valid_timeout(900_000) and not config.valid_timeout(900_001)
    assert not config.valid_timeout(0)
    read = TransactionConfig.from_properties({"transaction.max.timeout.ms": "5000"})
    assert read.max_timeout_ms == 5000
    served = ServerConfig.from_properties({"transactional.id.expiration.ms": "60000"})
    assert served.transactions.transactional_id_expiration_ms == 60_000
    with pytest.raises(InvalidConfigError, match=r"transactional\.id\.expiration\.ms"):
        TransactionConfig.from_properties({"transactional.id.expiration.ms": "0"})
    with pytest.raises(InvalidConfigError, match="must be an integer"):
        TransactionConfig.from_properties({"transaction.max.timeout.ms": "soon"})


def test_new_producer_gets_epoch_zero_and_a_retry_keeps_it() -> None:
    md = _fresh()
    transit = md.prepare_increment_epoch(30_000, None, 10)
    assert transit is not None and (transit.producer_epoch, transit.last_producer_epoch) == (0, -1)
    md.complete(transit)
    assert (md.producer_epoch, md.state, md.last_update_ms) == (0, S.EMPTY, 10)
    # the producer names its epoch: bump, remembering the last one
    transit = md.prepare_increment_epoch(30_000, 0, 11)
    assert transit is not None and (transit.producer_epoch, transit.last_producer_epoch) == (1, 0)
    md.complete(transit)
    # a retry of that bump (the response was lost) gets the same epoch again
    retry = md.prepare_increment_epoch(30_000, 0, 12)
    assert retry is not None and (retry.producer_epoch, retry.last_producer_epoch) == (1, 0)
    md.abandon()
    # any other epoch is fenced
    assert md.prepare_increment_epoch(30_000, 7, 13) is None


def test_a_pending_transition_blocks_another() -> None:
    md = _fresh(0)
    md.prepare_add_partitions(frozenset({TP}), 5)
    with pytest.raises(IllegalTransitionError, match="pending"):
        md.prepare_add_partitions(frozenset({TP}), 6)


def test_illegal_transitions_are_refused() -> None:
    with pytest.raises(IllegalTransitionError, match="Empty -> PrepareCommit"):
        _fresh(0).prepare_end(True, 1)
    with pytest.raises(IllegalTransitionError, match="not a legal transition"):
        _fresh(0, S.ONGOING).prepare_dead()
    with pytest.raises(IllegalTransitionError):
        _fresh(0, S.PREPARE_COMMIT).prepare_add_partitions(frozenset({TP}), 1)


def test_full_cycle_add_prepare_complete() -> None:
    md = _fresh(0)
    ongoing = md.prepare_add_partitions(frozenset({TP}), 100)
    assert ongoing.start_ms == 100
    md.complete(ongoing)
    # adding more keeps the start time and unions the partitions
    more = md.prepare_add_partitions(frozenset({TopicPartition("t", 1)}), 150)
    assert more.start_ms == 100 and len(more.partitions) == 2
    md.complete(more)
    prepare = md.prepare_end(True, 200)
    md.complete(prepare)
    assert md.state is S.PREPARE_COMMIT and len(md.partitions) == 2
    done = md.prepare_complete(250)
    assert done.state is S.COMPLETE_COMMIT and not done.partitions
    md.complete(done)
    assert (md.state, md.partitions, md.start_ms, md.last_update_ms) == (
        S.COMPLETE_COMMIT,
        set(),
        100,
        250,
    )
    # the next transaction starts its own clock
    assert md.prepare_add_partitions(frozenset({TP}), 400).start_ms == 400


def test_fence_bumps_once_even_when_the_fence_write_failed() -> None:
    md = _fresh(3, S.ONGOING)
    md.partitions.add(TP)
    assert md.prepare_fence_epoch().producer_epoch == 4
    md.fence_in_place(4)
    md.failed_epoch_fence = True  # the PrepareAbort append failed
    md.abandon()
    assert md.prepare_fence_epoch().producer_epoch == 4


def test_epoch_exhaustion_rotates_the_producer_id() -> None:
    md = _fresh(32766)
    assert md.epoch_exhausted
    with pytest.raises(IllegalTransitionError, match="exhausted"):
        md.prepare_increment_epoch(30_000, None, 1)
    rotated = md.prepare_rotate_producer_id(77, 30_000, 1, record_last_epoch=True)
    assert (rotated.producer_id, rotated.producer_epoch, rotated.last_producer_epoch) == (
        77,
        0,
        32766,
    )
    md.complete(rotated)
    assert (md.producer_id, md.previous_producer_id, md.producer_epoch) == (77, 5, 0)


def test_complete_checks_the_transit_against_the_pending_state() -> None:
    md = _fresh(0)
    transit = md.prepare_add_partitions(frozenset({TP}), 5)
    md.abandon()
    with pytest.raises(IllegalTransitionError, match="cannot complete"):
        md.complete(transit)
