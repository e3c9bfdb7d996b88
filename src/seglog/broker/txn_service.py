"""The transaction coordinator on the event loop: tickets become futures, effects become writes.

:class:`TxnService` drives the pure :class:`TransactionCoordinator` (``seglog.broker.txns``)
and performs its effects in process:

* :class:`PersistTxn`: one ``TransactionLogValue`` appended to the id's ``__transaction_state``
  partition through :class:`TransactionStateStore` (created on first use), then acknowledged;
  a failed append is answered NOT_COORDINATOR, as Kafka maps a storage failure of the
  transaction log (the client rediscovers the coordinator and retries);
* :class:`WriteMarkers`: a COMMIT or ABORT marker with ``Log.append_marker`` on every partition
  of the transaction, once the serving loop has sent the answer that released them (EndTxn is
  answered once PrepareCommit/PrepareAbort is stored, as Kafka answers it; the markers are
  written in the loop's next step, before anything read after that answer is handled, so the
  client's next request finds the transaction complete; before ``start()`` they are written
  at once) (what WriteTxnMarkers has each leader do), carrying the coordinator epoch
  (the leader epoch of the id's ``__transaction_state`` partition). After each marker
  ``on_marker(tp, producer_id, commit)`` runs (the wiring wakes Fetch long polls and, for a
  ``__consumer_offsets`` partition, applies or drops the transaction's offsets). A partition
  that no longer exists is skipped, as Kafka drops markers for a deleted partition; a marker
  the partition refuses for an older epoch is logged and skipped (the producer was fenced
  there already); any other failure is retried every abort interval until it is written, and
  only then is the transaction completed;
* :class:`RemoveTxnIds`: tombstones for expired ids.

Two timers: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` Ongoing
transactions past their timeout are fenced and aborted (and failed writes retried); every
``transaction.remove.expired.transaction.cleanup.interval.ms`` idle ids are expired.

At start-up (:meth:`restore`) every id's last value is loaded; a transaction found in
PrepareCommit or PrepareAbort (the server died before completing it) gets its markers written
and completes before the first request is served.

**Crash safety of ending a transaction** (several files: the id's ``__transaction_state``
partition, then each partition of the transaction), step by step, with what start-up does if
the process dies right after the step:

1. PrepareCommit/PrepareAbort is appended to ``__transaction_state`` (one batch: all or
   nothing). Died before it: the id is still Ongoing; it is aborted once its timeout passes
   (or fenced by the producer's next InitProducerId). Died after it: restore finds Prepare*
   and does steps 2-3.
2. The marker is appended to each partition, one after the other. Died in between: restore
   writes every marker again; a partition that already has its marker gets a second one,
   which closes nothing (the producer has no open transaction there) and is harmless, as in
   Kafka, whose coordinator resends markers the same way.
3. CompleteCommit/CompleteAbort is appended. Died before it: as step 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from seglog.broker.txns.coordinator import TransactionCoordinator
from seglog.broker.txns.metadata import TxnTransit
from seglog.broker.txns.model import (
    Completion,
    Effect,
    InitResult,
    PersistTxn,
    RemoveTxnIds,
    Step,
    TxnDescription,
    TxnListing,
    WriteMarkers,
)
from seglog.broker.txns.state_store import TransactionStateStore
from seglog.engine.log_manager import LogManager
from seglog.errors import (
    InvalidProducerEpochError,
    SeglogError,
    TransactionCoordinatorFencedError,
    UnknownTopicError,
)
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import TransactionLogEntry
from seglog.protocol.error_codes import ErrorCode

LOG = logging.getLogger("seglog.serve.txns")

MarkerHook = Callable[[TopicPartition, int, bool], None]


def entry_of(transit: TxnTransit) -> TransactionLogEntry:
    """A coordinator transit as the stored ``__transaction_state`` value."""
    return TransactionLogEntry(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms,
        state=transit.state,
        partitions=tuple(sorted(transit.partitions)),
        last_update_timestamp_ms=transit.last_update_ms,
        start_timestamp_ms=transit.start_ms,
        previous_producer_id=transit.previous_producer_id,
        next_producer_id=transit.next_producer_id,
    )


def transit_of(entry: TransactionLogEntry) -> TxnTransit:
    """A stored value as the coordinator's transit (the last epoch is not stored: -1)."""
    return TxnTransit(
        producer_id=entry.producer_id,
        previous_producer_id=entry.previous_producer_id,
        next_producer_id=entry.next_producer_id,
        producer_epoch=entry.producer_epoch,
        last_producer_epoch=-1,
        timeout_ms=entry.transaction_timeout_ms,
        state=entry.state,
        partitions=frozenset(entry.partitions),
        start_ms=entry.start_timestamp_ms,
        last_update_ms=entry.last_update_timestamp_ms,
    )


class TxnService:
    """See the module docstring. ``restore()``, then ``start()`` on the loop, ``stop()``."""

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        store: TransactionStateStore,
        manager: LogManager,
        *,
        now_ms: Callable[[], int],
    ) -> None:
        self.coordinator = coordinator
        self.store = store
        self.manager = manager
        self.now_ms = now_ms
        self.on_marker: list[MarkerHook] = []
        self._waiting: dict[int, asyncio.Future[InitResult | ErrorCode]] = {}
        # markers_id -> (the effect, partitions still to write)
        self._unwritten: dict[int, tuple[WriteMarkers, list[TopicPartition]]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def restore(self) -> int:
        """Load every id's last value and complete the prepared transactions; returns how
        many ids were loaded."""
        entries = {txn_id: transit_of(entry) for txn_id, entry in self.store.entries().items()}
        self.apply(self.coordinator.restore(entries, self.now_ms()))
        return len(entries)

    def ensure_topic(self) -> bool:
        """Create ``__transaction_state`` if missing (FindCoordinator's first use); False when
        it cannot be made here."""
        try:
            self.store.ensure_topic()
        except SeglogError as failure:
            LOG.error("cannot create __transaction_state: %s", failure)
            return False
        return True

    def start(self) -> None:
        config = self.coordinator.config
        self._tasks = [
            asyncio.create_task(
                self._every(config.abort_timed_out_interval_ms, self.abort_timed_out),
                name="seglog-txn-abort",
            ),
            asyncio.create_task(
                self._every(config.remove_expired_interval_ms, self.expire),
                name="seglog-txn-expiry",
            ),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for future in self._waiting.values():
            if not future.done():
                future.set_result(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    # -- calls from the handlers ----------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitResult:
        pending = self.coordinator.init_producer_id(
            transactional_id, timeout_ms, expected, self.now_ms()
        )
        result = await self._await(pending.ticket, pending.step)
        if isinstance(result, ErrorCode):  # the server stopped while it waited
            return InitResult(result)
        return result

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        pending = self.coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, self.now_ms()
        )
        return self._code(await self._await(pending.ticket, pending.step))

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, *, commit: bool
    ) -> ErrorCode:
        pending = self.coordinator.end_txn(
            transactional_id, producer_id, producer_epoch, commit=commit, now_ms=self.now_ms()
        )
        return self._code(await self._await(pending.ticket, pending.step))

    def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        return self.coordinator.verify(transactional_id, producer_id, producer_epoch, tp)

    def describe(self, transactional_id: str) -> TxnDescription:
        return self.coordinator.describe(transactional_id)

    def list_transactions(
        self, states: Iterable[str], producer_ids: Iterable[int], duration_ms: int
    ) -> TxnListing:
        return self.coordinator.list_transactions(states, producer_ids, duration_ms, self.now_ms())

    # -- timers ---------------------------------------------------------------------------------

    def abort_timed_out(self) -> None:
        """Retry unwritten markers; fence and abort timed-out transactions."""
        for markers_id in list(self._unwritten):
            self._write_markers(markers_id)
        self.apply(self.coordinator.abort_timed_out(self.now_ms()))

    def expire(self) -> None:
        self.apply(self.coordinator.expire(self.now_ms()))

    async def _every(self, interval_ms: int, action: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                action()
            except Exception:  # logged; the timer keeps running, as Kafka's scheduler does
                LOG.exception("transaction coordinator timer failed")

    # -- effects ----------------------------------------------------------------------------------

    def apply(self, step: Step) -> None:
        """Perform a step's effects, in order, and deliver its completions."""
        work = [step]
        while work:
            current = work.pop(0)
            for completion in current.completions:
                self._deliver(completion)
            for effect in current.effects:
                follow = self._perform(effect)
                if follow is not None:
                    work.append(follow)

    def _perform(self, effect: Effect) -> Step | None:
        now = self.now_ms()
        if isinstance(effect, PersistTxn):
            error = ErrorCode.NONE
            try:
                self.store.write(effect.transactional_id, entry_of(effect.transit), now_ms=now)
            except SeglogError as failure:
                LOG.error("cannot persist transaction %s: %s", effect.transactional_id, failure)
                error = ErrorCode.NOT_COORDINATOR
            return self.coordinator.persisted(effect.persist_id, error, now)
        if isinstance(effect, WriteMarkers):
            self._unwritten[effect.markers_id] = (effect, list(effect.partitions))
            if self._tasks:  # serving: answer EndTxn first, write the markers right after
                asyncio.get_running_loop().call_soon(self._write_deferred, effect.markers_id)
                return None
            return self._write_markers(effect.markers_id, apply_follow=False)
        return self._remove(effect, now)

    def _remove(self, effect: RemoveTxnIds, now: int) -> Step:
        error = ErrorCode.NONE
        try:
            self.store.remove(effect.transactional_ids, now_ms=now)
        except SeglogError as failure:
            LOG.error("cannot write tombstones for expired transactional ids: %s", failure)
            error = ErrorCode.NOT_COORDINATOR
        else:
            LOG.info("expired %d transactional id(s)", len(effect.transactional_ids))
        return self.coordinator.removed(effect.remove_id, error, now)

    def _write_deferred(self, markers_id: int) -> None:
        if markers_id in self._unwritten:  # a timer's retry may have written them meanwhile
            self._write_markers(markers_id)

    def _write_markers(self, markers_id: int, *, apply_follow: bool = True) -> Step | None:
        effect, remaining = self._unwritten[markers_id]
        epoch = self.store.coordinator_epoch(effect.transactional_id)
        while remaining:
            tp = remaining[0]
            try:
                log = self.manager.get_log(tp.topic, tp.partition)
                log.append_marker(
                    effect.producer_id,
                    effect.producer_epoch,
                    commit=effect.commit,
                    coordinator_epoch=epoch,
                )
            except UnknownTopicError:
                LOG.info("no marker for %s (no longer here)", tp)
            except (InvalidProducerEpochError, TransactionCoordinatorFencedError) as refusal:
                LOG.warning("marker for %s refused: %s", tp, refusal)
            except SeglogError as failure:
                LOG.error(
                    "cannot write the marker of %s to %s (retrying): %s",
                    effect.transactional_id,
                    tp,
                    failure,
                )
                return None
            else:
                for hook in self.on_marker:
                    hook(tp, effect.producer_id, effect.commit)
            remaining.pop(0)
        del self._unwritten[markers_id]
        follow = self.coordinator.markers_written(markers_id, self.now_ms())
        if apply_follow:
            self.apply(follow)
            return None
        return follow

    # -- tickets ----------------------------------------------------------------------------------

    async def _await(self, ticket: int, step: Step) -> InitResult | ErrorCode:
        future: asyncio.Future[InitResult | ErrorCode] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        try:
            self.apply(step)
            return await future
        finally:
            self._waiting.pop(ticket, None)

    def _deliver(self, completion: Completion) -> None:
        future = self._waiting.get(completion.ticket)
        if future is not None and not future.done():
            future.set_result(completion.result)

    @staticmethod
    def _code(result: InitResult | ErrorCode) -> ErrorCode:
        return result.error if isinstance(result, InitResult) else result
