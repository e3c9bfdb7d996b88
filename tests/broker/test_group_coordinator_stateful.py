"""Random interleavings of every group operation against the coordinator's invariants.

Invariants after every step: the leader is a member (so at most one), generations only grow,
Stable means every member holds the assignment its generation's leader gave, at most one member
per generation is asked to run the assignor, no ticket is answered twice. At the end, after the
outstanding persists are acknowledged and the clock moves far enough, every ticket is answered.
"""

from __future__ import annotations

from group_harness import RANGE, ROUNDROBIN, Harness
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from seglog.broker.groups.group import GroupState
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.model import JoinResult, LeavingMember
from seglog.protocol.error_codes import ErrorCode

PROTOCOL_SETS = [(RANGE,), (ROUNDROBIN,), (RANGE, ROUNDROBIN), (ROUNDROBIN, RANGE)]
GROUP = "g"


class GroupMachine(RuleBasedStateMachine):
    """Clients that join, sync, heartbeat, leave, commit and vanish, with a clock moving on."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(
            config=GroupConfig(initial_rebalance_delay_ms=500, min_session_timeout_ms=1000),
            auto_persist=False,
        )
        self.issued: set[int] = set()
        self.known_ids: list[str] = ["bogus"]
        self.seen_generation = 0
        self.assignors: dict[int, set[str]] = {}
        self.checked: set[int] = set()

    # -- helpers -----------------------------------------------------------------------------------

    def _absorb(self) -> None:
        for ticket, result in self.h.answers.items():
            if ticket in self.checked:
                continue
            self.checked.add(ticket)
            if isinstance(result, JoinResult) and result.member_id:
                if result.member_id not in self.known_ids:
                    self.known_ids.append(result.member_id)
                runs_assignor = result.members and not result.skip_assignment
                if (
                    result.error == ErrorCode.NONE
                    and result.leader == result.member_id
                    and runs_assignor
                ):
                    ids = {m.member_id for m in result.members}
                    assert result.member_id in ids
                    self.assignors.setdefault(result.generation_id, set()).add(result.member_id)

    # -- rules -------------------------------------------------------------------------------------

    @rule(
        client=st.sampled_from(["a", "b", "c"]),
        protocols=st.sampled_from(PROTOCOL_SETS),
        version=st.sampled_from([3, 5, 9]),
        instance=st.sampled_from([None, None, "s1", "s2"]),
        session=st.sampled_from([1000, 4000]),
        rebalance=st.sampled_from([0, 700, 3000]),
    )
    def join_new(
        self,
        client: str,
        protocols: tuple[tuple[str, bytes], ...],
        version: int,
        instance: str | None,
        session: int,
        rebalance: int,
    ) -> None:
        ticket = self.h.join(
            client=client,
            protocols=protocols,
            version=version,
            instance=instance,
            session_ms=session,
            rebalance_ms=rebalance,
        )
        self.issued.add(ticket)

    @rule(
        data=st.data(),
        protocols=st.sampled_from(PROTOCOL_SETS),
        rebalance=st.sampled_from([0, 700, 3000]),
    )
    def rejoin(
        self, data: st.DataObject, protocols: tuple[tuple[str, bytes], ...], rebalance: int
    ) -> None:
        member_id = data.draw(st.sampled_from(self.known_ids))
        group = self.h.coord.group(GROUP)
        member = group.members.get(member_id) if group else None
        instance = member.group_instance_id if member else None
        ticket = self.h.join(
            member_id,
            protocols=protocols,
            instance=instance,
            session_ms=4000,
            rebalance_ms=rebalance,
        )
        self.issued.add(ticket)

    @rule(data=st.data(), stale=st.booleans())
    def sync(self, data: st.DataObject, stale: bool) -> None:
        member_id = data.draw(st.sampled_from(self.known_ids))
        group = self.h.coord.group(GROUP)
        generation = (group.generation_id if group else 0) - (1 if stale else 0)
        member = group.members.get(member_id) if group else None
        assignments = {}
        if group is not None:
            assignments = {m: f"{m}@{generation}".encode() for m in group.members}
        ticket = self.h.sync(
            member_id,
            generation,
            assignments,
            instance=member.group_instance_id if member else None,
        )
        self.issued.add(ticket)

    @rule()
    def everyone_rejoins(self) -> None:
        group = self.h.coord.group(GROUP)
        if group is None:
            return
        for member in list(group.members.values()):
            if member.join_ticket is None and member.member_id in group.members:
                ticket = self.h.join(
                    member.member_id,
                    protocols=member.protocols,
                    instance=member.group_instance_id,
                    session_ms=member.session_timeout_ms,
                    rebalance_ms=member.rebalance_timeout_ms,
                )
                self.issued.add(ticket)

    @rule(protocols=st.sampled_from(PROTOCOL_SETS))
    def pending_members_return(self, protocols: tuple[tuple[str, bytes], ...]) -> None:
        group = self.h.coord.group(GROUP)
        for member_id in list(group.pending_members) if group else []:
            self.issued.add(self.h.join(member_id, protocols=protocols, session_ms=4000))

    @rule(follower_first=st.booleans(), ack=st.booleans())
    def everyone_syncs(self, follower_first: bool, ack: bool) -> None:
        group = self.h.coord.group(GROUP)
        if group is None or group.state != GroupState.COMPLETING_REBALANCE:
            return
        generation = group.generation_id
        assignments = {m: f"{m}@{generation}".encode() for m in group.members}
        order = sorted(group.members, key=lambda m: (m == group.leader_id) == follower_first)
        for member_id in order:
            member = group.members.get(member_id)
            if member is not None and member.sync_ticket is None:
                given = assignments if member_id == group.leader_id else {}
                ticket = self.h.sync(
                    member_id, generation, given, instance=member.group_instance_id
                )
                self.issued.add(ticket)

    @rule()
    def converge(self) -> None:
        """Everyone (pending members too) rejoins, the join phase ends, everyone syncs."""
        self.pending_members_return(PROTOCOL_SETS[2])
        self.everyone_rejoins()
        for _ in range(20):
            group = self.h.coord.group(GROUP)
            deadline = self.h.coord.next_deadline_ms()
            if group is None or group.state != GroupState.PREPARING_REBALANCE or deadline is None:
                break
            self.h.at(max(self.h.now, deadline))
        self.everyone_syncs(follower_first=True, ack=True)

    @rule()
    def ack_all(self) -> None:
        for persist_id in sorted(self.h.coord.unacknowledged_persists()):
            self.h.take(self.h.coord.persisted(persist_id, ErrorCode.NONE, self.h.now))

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        member_id = data.draw(st.sampled_from(self.known_ids))
        group = self.h.coord.group(GROUP)
        self.h.heartbeat(member_id, group.generation_id if group else 0)

    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        member_id = data.draw(st.sampled_from(self.known_ids))
        outcome = self.h.coord.leave(GROUP, [LeavingMember(member_id)], self.h.now)
        self.h.take(outcome.step)

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        member_id = data.draw(st.sampled_from([*self.known_ids, ""]))
        group = self.h.coord.group(GROUP)
        generation = group.generation_id if group and member_id else -1
        error = self.h.coord.validate_offset_commit(GROUP, generation, member_id, None, self.h.now)
        if member_id == "" and group is not None and group.members:
            assert error == ErrorCode.UNKNOWN_MEMBER_ID

    @rule(ms=st.sampled_from([1, 100, 300, 600, 1000, 3500, 20_000]))
    def tick(self, ms: int) -> None:
        self.h.at(self.h.now + ms)

    @rule(data=st.data(), fail=st.booleans())
    def ack_persist(self, data: st.DataObject, fail: bool) -> None:
        waiting = sorted(self.h.coord.unacknowledged_persists())
        if not waiting:
            return
        persist_id = data.draw(st.sampled_from(waiting))
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER if fail else ErrorCode.NONE
        self.h.take(self.h.coord.persisted(persist_id, error, self.h.now))

    @rule()
    def delete(self) -> None:
        group = self.h.coord.group(GROUP)
        outcome = self.h.coord.delete_groups([GROUP], self.h.now)
        self.h.take(outcome.step)
        if outcome.results[0][1] == ErrorCode.NONE:
            assert group is not None and not group.members
            self.seen_generation = 0
            self.assignors.clear()

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def group_is_consistent(self) -> None:
        self._absorb()
        group = self.h.coord.group(GROUP)
        if group is None:
            return
        event(f"state {group.state.value}, {len(group.members)} members")
        assert group.generation_id >= self.seen_generation
        self.seen_generation = group.generation_id
        if group.members:
            assert group.leader_id in group.members
        else:
            assert group.state not in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE)
        if group.state == GroupState.EMPTY:
            assert not group.members
        if group.state == GroupState.STABLE:
            assert group.protocol_name is not None
            suffix = f"@{group.generation_id}".encode()
            for member in group.members.values():
                assert member.assignment.endswith(suffix), (member, group.generation_id)
        for instance, member_id in group.static_members.items():
            assert group.members[member_id].group_instance_id == instance
        for generation, leaders in self.assignors.items():
            assert len(leaders) <= 1, (generation, leaders)
        assert self.h.coord.open_tickets() <= self.issued

    def teardown(self) -> None:
        for _ in range(30):
            for persist_id in sorted(self.h.coord.unacknowledged_persists()):
                self.h.take(self.h.coord.persisted(persist_id, ErrorCode.NONE, self.h.now))
            self.h.at(self.h.now + 100_000)
        assert not self.h.coord.open_tickets()
        assert self.issued <= set(self.h.answers)


GroupMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_group_coordinator_stateful = GroupMachine.TestCase
