"""The consumer-group coordinator on the event loop: tickets become futures, effects become writes.

:class:`GroupService` drives the pure :class:`GroupCoordinator` (``seglog.broker.groups``) from
asyncio and persists what it asks for in ``__consumer_offsets`` through the
:class:`OffsetsStore`:

* a JoinGroup or SyncGroup gets a ticket; the handler awaits a future resolved when a
  :class:`Completion` for that ticket comes out of any later step (another member's request,
  a timer, a persisted acknowledgement);
* every :class:`PersistGroup` effect is appended as a GroupMetadata record and then
  acknowledged (``persisted``) with the append's outcome, so SyncGroup answers leave only after
  the append, as Kafka sends them; a :class:`DeleteGroupRecords` effect writes the tombstones;
* one timer task sleeps until the coordinator's next deadline (rebalance timeouts, session
  expiry, the initial rebalance delay) and calls ``advance``; any request may bring the
  deadline forward, so the task is woken after each step;
* offset expiry runs every ``offsets.retention.check.interval.ms``.

At start-up every group's last GroupMetadata record is restored (members included; their
sessions expire unless they heartbeat, as Kafka reloads them). A client that disconnects while
waiting leaves its ticket in the coordinator: the answer, when it comes, is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from seglog.broker.groups.coordinator import GroupCoordinator
from seglog.broker.groups.model import (
    Completion,
    DeleteGroupRecords,
    GroupSnapshot,
    JoinRequest,
    JoinResult,
    MemberSnapshot,
    PersistGroup,
    Step,
    SyncRequest,
    SyncResult,
)
from seglog.broker.groups.offsets_store import OffsetsStore
from seglog.errors import SeglogError
from seglog.format.group_records import GroupMetadataValue, MemberMetadata
from seglog.protocol.error_codes import ErrorCode

LOG = logging.getLogger("seglog.serve.groups")


def value_of(snapshot: GroupSnapshot) -> GroupMetadataValue:
    """A coordinator snapshot as the GroupMetadata record value."""
    return GroupMetadataValue(
        protocol_type=snapshot.protocol_type,
        generation=snapshot.generation,
        protocol=snapshot.protocol,
        leader=snapshot.leader,
        current_state_timestamp=snapshot.current_state_timestamp_ms,
        members=tuple(
            MemberMetadata(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.subscription,
                assignment=m.assignment,
                group_instance_id=m.group_instance_id,
            )
            for m in snapshot.members
        ),
    )


def snapshot_of(value: GroupMetadataValue) -> GroupSnapshot:
    """A stored GroupMetadata value as the coordinator's snapshot."""
    return GroupSnapshot(
        protocol_type=value.protocol_type,
        generation=value.generation,
        protocol=value.protocol,
        leader=value.leader,
        current_state_timestamp_ms=value.current_state_timestamp,
        members=tuple(
            MemberSnapshot(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout,
                session_timeout_ms=m.session_timeout,
                subscription=m.subscription,
                assignment=m.assignment,
            )
            for m in value.members
        ),
    )


class GroupService:
    """See the module docstring. Create it, ``start()`` it on the loop, ``stop()`` at shutdown."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        store: OffsetsStore,
        *,
        now_ms: Callable[[], int],
        expiry_interval_ms: int,
    ) -> None:
        self.coordinator = coordinator
        self.store = store
        self.now_ms = now_ms
        self.expiry_interval_ms = expiry_interval_ms
        self._waiting: dict[int, asyncio.Future[JoinResult | SyncResult]] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def restore(self) -> int:
        """Rebuild every group the (loaded) store holds; returns how many."""
        now = self.now_ms()
        groups = self.store.groups()
        for group_id in groups:
            value = self.store.group_metadata(group_id)
            snapshot = None if value is None else snapshot_of(value)
            self.apply(self.coordinator.restore(group_id, snapshot, now))
        return len(groups)

    def ensure_offsets_topic(self) -> bool:
        """Create ``__consumer_offsets`` if missing (FindCoordinator's first use); False when
        it cannot be made here."""
        try:
            self.store.ensure_topic()
        except SeglogError as failure:
            LOG.error("cannot create __consumer_offsets: %s", failure)
            return False
        return True

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._timers(), name="seglog-group-timers"),
            asyncio.create_task(self._expiry(), name="seglog-offset-expiry"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for future in self._waiting.values():
            if not future.done():
                future.set_result(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))

    # -- calls from the handlers ----------------------------------------------------------------

    async def join(self, request: JoinRequest) -> JoinResult:
        pending = self.coordinator.join(request, self.now_ms())
        result = await self._await(pending.ticket, pending.step)
        assert isinstance(result, JoinResult)
        return result

    async def sync(self, request: SyncRequest) -> SyncResult:
        pending = self.coordinator.sync(request, self.now_ms())
        result = await self._await(pending.ticket, pending.step)
        assert isinstance(result, SyncResult)
        return result

    def apply(self, step: Step) -> None:
        """Perform a step's effects and deliver its completions (public: the handlers' steps)."""
        work = [step]
        while work:
            current = work.pop()
            for completion in current.completions:
                self._deliver(completion)
            for effect in current.effects:
                follow = self._perform(effect)
                if follow is not None:
                    work.append(follow)
        self._wake.set()

    # -- internals ------------------------------------------------------------------------------

    async def _await(self, ticket: int, step: Step) -> JoinResult | SyncResult:
        future: asyncio.Future[JoinResult | SyncResult] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        try:
            self.apply(step)
            return await future
        finally:
            self._waiting.pop(ticket, None)

    def _deliver(self, completion: Completion) -> None:
        future = self._waiting.get(completion.ticket)
        if future is None:  # its client went away while waiting: the answer has no reader
            return
        if not future.done():
            future.set_result(completion.result)

    def _perform(self, effect: PersistGroup | DeleteGroupRecords) -> Step | None:
        now = self.now_ms()
        if isinstance(effect, PersistGroup):
            error = ErrorCode.NONE
            try:
                self.store.store_group(effect.group_id, value_of(effect.snapshot), now_ms=now)
            except SeglogError as failure:
                LOG.error("cannot persist group %s: %s", effect.group_id, failure)
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            return self.coordinator.persisted(effect.persist_id, error, now)
        try:
            self.store.delete_group(effect.group_id, now_ms=now)
        except SeglogError as failure:
            LOG.error("cannot write the tombstones of group %s: %s", effect.group_id, failure)
        return None

    async def _timers(self) -> None:
        while True:
            deadline = self.coordinator.next_deadline_ms()
            now = self.now_ms()
            wait_s = 1.0 if deadline is None else max(0.0, (deadline - now) / 1000)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(wait_s, 1.0))
            due = self.coordinator.next_deadline_ms()
            if due is not None and due <= self.now_ms():
                self.apply(self.coordinator.advance(self.now_ms()))

    async def _expiry(self) -> None:
        while True:
            await asyncio.sleep(self.expiry_interval_ms / 1000)
            self.expire_offsets()

    def expire_offsets(self) -> None:
        """Tombstone expired offsets; forget Empty groups left with none (Kafka's cleanup task)."""
        now = self.now_ms()
        states = {}
        for group_id in self.coordinator.group_ids():
            group = self.coordinator.group(group_id)
            if group is not None:
                states[group_id] = group.state.value
        try:
            result = self.store.expire_offsets(now_ms=now, states=states)
        except SeglogError as failure:
            LOG.error("offset expiry failed: %s", failure)
            return
        for group_id in result.groups:
            self.coordinator.drop_empty_group(group_id, now)
        if result.offsets:
            LOG.info(
                "expired %d offset(s) of %d group(s)",
                sum(len(tps) for tps in result.offsets.values()),
                len(result.offsets),
            )

    def complete_transaction(
        self, offsets_partition: int, producer_id: int, *, commit: bool
    ) -> int:
        """The transaction coordinator wrote ``producer_id``'s COMMIT (``commit``) or ABORT
        marker to ``__consumer_offsets`` partition ``offsets_partition``: the offsets its
        TxnOffsetCommits left pending there become committed, or are dropped. Call it only
        after the marker's append returned (a reload then gives the same offsets). Returns how
        many offsets became committed."""
        applied = self.store.complete_transaction(offsets_partition, producer_id, commit=commit)
        if applied:
            LOG.debug(
                "transaction of producer %d committed %d offset(s) in %s-%d",
                producer_id,
                applied,
                "__consumer_offsets",
                offsets_partition,
            )
        return applied

    def topic_deleted(self, topic: str) -> None:
        """Tombstones for every offset committed on a deleted topic (DeleteTopics' hook)."""
        try:
            self.store.topic_deleted(topic, now_ms=self.now_ms())
        except SeglogError as failure:
            LOG.error("cannot write the offset tombstones of deleted topic %s: %s", topic, failure)
