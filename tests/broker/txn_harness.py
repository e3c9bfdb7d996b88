"""A caller for the pure transaction coordinator: performs its effects in memory, in order.

Persists are appended to ``self.log`` (what ``__transaction_state`` would hold) and
acknowledged at once unless ``hold`` is set (then they wait in ``self.held`` for
``release``) or ``fail_next`` names an error; markers go to ``self.markers``; tombstones to
``self.tombstones``. Time is ``self.now`` and moves only when a test moves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seglog.broker.txns.coordinator import TransactionCoordinator
from seglog.broker.txns.metadata import TxnTransit
from seglog.broker.txns.model import (
    Completion,
    InitResult,
    PersistTxn,
    RemoveTxnIds,
    Step,
    WriteMarkers,
)
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode

T0 = 1_700_000_000_000
TP0 = TopicPartition("out", 0)
TP1 = TopicPartition("out", 1)


@dataclass
class TxnHarness:
    config: TransactionConfig = field(default_factory=TransactionConfig)
    now: int = T0
    first_producer_id: int = 1000
    hold: bool = False
    fail_next: ErrorCode | None = None
    hold_markers: bool = False

    def __post_init__(self) -> None:
        self.ids = iter(range(self.first_producer_id, self.first_producer_id + 10_000))
        self.coord = TransactionCoordinator(self.config, new_producer_id=lambda: next(self.ids))
        self.log: list[tuple[str, TxnTransit | None]] = []
        self.markers: list[WriteMarkers] = []
        self.held: list[PersistTxn] = []
        self.held_markers: list[WriteMarkers] = []
        self.tombstones: list[str] = []
        self.answers: dict[int, InitResult | ErrorCode] = {}

    def restore(self, entries: dict[str, TxnTransit] | None = None) -> None:
        self.run(self.coord.restore(entries or {}, self.now))

    # -- driving ------------------------------------------------------------------------------

    def run(self, step: Step) -> None:
        work = [step]
        while work:
            current = work.pop(0)
            for completion in current.completions:
                self._answer(completion)
            for effect in current.effects:
                follow = self._perform(effect)
                if follow is not None:
                    work.append(follow)

    def _answer(self, completion: Completion) -> None:
        assert completion.ticket not in self.answers, "a ticket was answered twice"
        self.answers[completion.ticket] = completion.result

    def _perform(self, effect: PersistTxn | WriteMarkers | RemoveTxnIds) -> Step | None:
        if isinstance(effect, PersistTxn):
            if self.hold:
                self.held.append(effect)
                return None
            return self._ack(effect)
        if isinstance(effect, WriteMarkers):
            if self.hold_markers:
                self.held_markers.append(effect)
                return None
            self.markers.append(effect)
            return self.coord.markers_written(effect.markers_id, self.now)
        self.tombstones.extend(effect.transactional_ids)
        for transactional_id in effect.transactional_ids:
            self.log.append((transactional_id, None))
        return self.coord.removed(effect.remove_id, ErrorCode.NONE, self.now)

    def _ack(self, effect: PersistTxn) -> Step:
        error, self.fail_next = self.fail_next or ErrorCode.NONE, None
        if error is ErrorCode.NONE:
            self.log.append((effect.transactional_id, effect.transit))
        return self.coord.persisted(effect.persist_id, error, self.now)

    def release(self) -> None:
        held, self.held = self.held, []
        for effect in held:
            self.run(self._ack(effect))

    def release_markers(self) -> None:
        held, self.held_markers = self.held_markers, []
        for effect in held:
            self.markers.append(effect)
            self.run(self.coord.markers_written(effect.markers_id, self.now))

    # -- requests -----------------------------------------------------------------------------

    def init(
        self, txn_id: str = "t", timeout_ms: int = 60_000, expected: tuple[int, int] | None = None
    ) -> InitResult | None:
        pending = self.coord.init_producer_id(txn_id, timeout_ms, expected, self.now)
        self.run(pending.step)
        result = self.answers.get(pending.ticket)
        assert result is None or isinstance(result, InitResult)
        return result

    def add(
        self, pid: int, epoch: int, *tps: TopicPartition, txn_id: str = "t"
    ) -> ErrorCode | None:
        pending = self.coord.add_partitions(txn_id, pid, epoch, tps or (TP0,), self.now)
        self.run(pending.step)
        return self._code(pending.ticket)

    def end(self, pid: int, epoch: int, *, commit: bool, txn_id: str = "t") -> ErrorCode | None:
        pending = self.coord.end_txn(txn_id, pid, epoch, commit=commit, now_ms=self.now)
        self.run(pending.step)
        return self._code(pending.ticket)

    def _code(self, ticket: int) -> ErrorCode | None:
        result = self.answers.get(ticket)
        assert result is None or isinstance(result, ErrorCode)
        return result

    def state(self, txn_id: str = "t") -> str:
        metadata = self.coord.metadata(txn_id)
        assert metadata is not None
        return metadata.state.kafka_name

    def last_value(self, txn_id: str = "t") -> TxnTransit | None:
        for key, value in reversed(self.log):
            if key == txn_id:
                return value
        return None
