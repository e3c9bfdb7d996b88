"""The classic group coordinator's flows and rules, driven by a manual clock (never sleeps)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from group_harness import RANGE, ROUNDROBIN, Harness

from seglog.broker.groups.coordinator import GroupCoordinator
from seglog.broker.groups.group import GroupState
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.model import JoinMember, LeavingMember
from seglog.errors import InvalidConfigError
from seglog.protocol.error_codes import ErrorCode


def stable_group(h: Harness, n: int, **kwargs: object) -> list[str]:
    """``n`` members through the whole flow (each newcomer makes the others rejoin); returns their
    ids, leader first. The group ends Stable at generation ``n``."""
    ids: list[str] = []
    for i in range(n):
        ids.append(h.new_member(client=f"c{i}", **kwargs))
        for j, member_id in enumerate(ids[:-1]):
            h.join(member_id, client=f"c{j}", **kwargs)  # type: ignore[arg-type]
        assert h.join_result(h.last_ticket).generation_id == i + 1
    for member_id in ids[1:]:
        h.sync(member_id, n)
    h.sync(ids[0], n, {m: m.encode() for m in ids})
    group = h.coord.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.generation_id == n
    return ids


def test_error_codes_62_to_68_have_kafkas_names() -> None:
    assert ErrorCode(68).name == "NON_EMPTY_GROUP"
    assert ErrorCode(67).name == "INVALID_PRINCIPAL_TYPE"
    assert ErrorCode(62).name == "DELEGATION_TOKEN_NOT_FOUND"


def test_config_rejects_bad_values_and_reads_properties() -> None:
    with pytest.raises(InvalidConfigError, match=r"group\.max\.size"):
        GroupConfig(max_size=0)
    with pytest.raises(InvalidConfigError, match=r"group\.initial\.rebalance\.delay\.ms"):
        GroupConfig.from_properties({"group.initial.rebalance.delay.ms": "soon"})
    cfg = GroupConfig.from_properties(
        {"group.initial.rebalance.delay.ms": "0", "group.max.size": "7"}
    )
    assert (cfg.initial_rebalance_delay_ms, cfg.max_size, cfg.min_session_timeout_ms) == (
        0,
        7,
        6000,
    )


def test_one_member_flow_member_id_required_join_sync_persist() -> None:
    h = Harness()
    first = h.join_result(h.join(client="client-a"))
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id == "client-a-uuid1"
    # creating the group persisted its empty metadata
    assert h.persists[0].snapshot.generation == 0 and h.persists[0].snapshot.members == ()
    joined = h.join_result(h.join(first.member_id, client="client-a"))
    assert joined.error == ErrorCode.NONE
    assert (joined.generation_id, joined.leader, joined.protocol_name) == (
        1,
        first.member_id,
        "range",
    )
    assert joined.protocol_type == "consumer"
    assert joined.members == (JoinMember(first.member_id, None, b"range-meta"),)
    h.auto_persist = False
    ticket = h.sync(first.member_id, 1, {first.member_id: b"A"})
    assert ticket not in h.answers  # released only after the GroupMetadata append
    persist = h.persists[-1]
    assert [m.assignment for m in persist.snapshot.members] == [b"A"]
    assert persist.snapshot.protocol == "range" and persist.snapshot.leader == first.member_id
    h.take(h.coord.persisted(persist.persist_id, ErrorCode.NONE, h.now))
    assert h.sync_result(ticket).assignment == b"A"
    assert h.coord.group("g").state == GroupState.STABLE  # type: ignore[union-attr]
    assert h.heartbeat(first.member_id, 1) == ErrorCode.NONE


def test_two_members_within_the_initial_delay_and_follower_waits_for_leader() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=3000))
    a = h.new_member(client="a", rebalance_ms=10_000)
    ta = h.last_ticket
    h.at(1000)
    b = h.new_member(client="b", rebalance_ms=10_000)
    tb = h.last_ticket
    h.at(2999)
    assert ta not in h.answers and tb not in h.answers
    # b joined generation 0 during the delay: the delay is extended once by 3000 ms
    h.at(3000)
    assert ta not in h.answers
    h.at(6000)
    ra, rb = h.join_result(ta), h.join_result(tb)
    assert ra.leader == rb.leader == a
    assert [m.member_id for m in ra.members] == [a, b] and rb.members == ()
    assert ra.generation_id == rb.generation_id == 1
    follower = h.sync(b, 1)
    assert follower not in h.answers
    leader = h.sync(a, 1, {a: b"pa", b: b"pb"})
    assert h.sync_result(follower).assignment == b"pb"
    assert h.sync_result(leader).assignment == b"pa"


def test_three_members_initial_delay_extensions_stop_at_the_rebalance_timeout() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=3000))
    h.new_member(client="a", rebalance_ms=10_000)
    ta = h.last_ticket
    h.at(1000)
    h.new_member(client="b", rebalance_ms=10_000)
    h.at(5000)  # first extension at 3000: next deadline 6000, 4000 ms left
    h.new_member(client="c", rebalance_ms=10_000)
    h.at(8999)  # second extension at 6000: delay min(3000, 4000), 1000 ms left
    assert ta not in h.answers
    h.at(9000)
    result = h.join_result(ta)
    assert len(result.members) == 3 and result.generation_id == 1


def test_three_member_flow_completes_as_soon_as_all_rejoin() -> None:
    h = Harness()
    ids = stable_group(h, 3)
    # a fourth member starts a rebalance; the others learn it from their heartbeat
    d = h.new_member(client="d")
    td = h.last_ticket
    assert h.heartbeat(ids[1], 3) == ErrorCode.REBALANCE_IN_PROGRESS
    tickets = [h.join(m, client=f"c{i}") for i, m in enumerate(ids)]
    assert all(h.join_result(t).generation_id == 4 for t in [*tickets, td])
    assert h.join_result(tickets[0]).leader == ids[0]
    assert {m.member_id for m in h.join_result(tickets[0]).members} == {*ids, d}


def test_leave_triggers_rebalance_and_last_leave_empties_the_group() -> None:
    h = Harness()
    a, b = stable_group(h, 2)
    outcome = h.coord.leave("g", [LeavingMember(b)], h.now)
    h.take(outcome.step)
    assert outcome.single_error() == ErrorCode.NONE
    group = h.coord.group("g")
    assert group is not None and group.state == GroupState.PREPARING_REBALANCE
    rejoin = h.join(a, client="c0")
    result = h.join_result(rejoin)
    assert result.generation_id == 3 and [m.member_id for m in result.members] == [a]
    h.sync(a, 3, {a: b"all"})
    h.take(h.coord.leave("g", [LeavingMember(a)], h.now).step)
    assert group.state == GroupState.EMPTY and group.generation_id == 4
    last = h.persists[-1].snapshot
    assert last.generation == 4 and last.members == () and last.protocol is None


def test_session_expiry_removes_the_member_and_rebalances() -> None:
    h = Harness()
    a, b = stable_group(h, 2, session_ms=6000)
    h.at(5000)
    assert h.heartbeat(a, 2) == ErrorCode.NONE
    h.at(6000)  # b's session (from its last answer at 0) expires
    group = h.coord.group("g")
    assert group is not None and b not in group.members
    assert group.state == GroupState.PREPARING_REBALANCE
    assert h.heartbeat(b, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join_result(h.join(a, client="c0", session_ms=6000)).generation_id == 3


def test_laggard_is_dropped_at_the_rebalance_timeout() -> None:
    h = Harness()
    a, b = stable_group(h, 2, rebalance_ms=20_000, session_ms=30_000)
    h.at(100)
    ta = h.join(
        a, client="c0", protocols=(ROUNDROBIN, RANGE), rebalance_ms=20_000, session_ms=30_000
    )
    assert ta not in h.answers
    assert h.coord.next_deadline_ms() == 20_100
    h.at(20_099)
    assert ta not in h.answers
    h.at(20_100)
    result = h.join_result(ta)
    assert result.generation_id == 3 and [m.member_id for m in result.members] == [a]
    assert result.protocol_name == "roundrobin"
    assert b not in h.coord.group("g").members  # type: ignore[union-attr]


def test_member_id_required_only_from_v4_and_pending_member_holds_the_join() -> None:
    h = Harness()
    old = h.join_result(h.join(version=3, client="legacy"))
    assert old.error == ErrorCode.NONE and old.member_id == "legacy-uuid1"
    # a v5 member told MEMBER_ID_REQUIRED holds up the next join phase until it returns or expires
    pending = h.join_result(h.join(client="new", session_ms=7000))
    assert pending.error == ErrorCode.MEMBER_ID_REQUIRED
    t_old = h.join(old.member_id, client="legacy", version=3, protocols=(ROUNDROBIN, RANGE))
    assert t_old not in h.answers
    h.at(7000)
    assert h.join_result(t_old).generation_id == 2
    assert pending.member_id not in h.coord.group("g").members  # type: ignore[union-attr]


def test_heartbeat_in_each_state() -> None:
    h = Harness()
    assert h.heartbeat("x", 0, group="") == ErrorCode.INVALID_GROUP_ID
    assert h.heartbeat("x", 0, group="nope") == ErrorCode.UNKNOWN_MEMBER_ID
    a = h.new_member()
    assert h.join_result(h.last_ticket).generation_id == 1
    assert h.heartbeat(a, 1) == ErrorCode.NONE  # CompletingRebalance
    assert h.heartbeat(a, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat("stranger", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    h.sync(a, 1, {a: b"x"})
    assert h.heartbeat(a, 1) == ErrorCode.NONE  # Stable
    h.new_member(client="other")  # PreparingRebalance
    assert h.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_sync_errors() -> None:
    h = Harness()
    assert h.sync_result(h.sync("m", 1, group="")).error == ErrorCode.INVALID_GROUP_ID
    assert h.sync_result(h.sync("m", 1, group="nope")).error == ErrorCode.UNKNOWN_MEMBER_ID
    a = h.new_member()
    assert h.sync_result(h.sync("who", 1)).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync(a, 7)).error == ErrorCode.ILLEGAL_GENERATION
    wrong = h.sync(a, 1, protocol_type="connect")
    assert h.sync_result(wrong).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    wrong = h.sync(a, 1, protocol_type="consumer", protocol_name="roundrobin")
    assert h.sync_result(wrong).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync(a, 1, {a: b"x"}, protocol_type="consumer", protocol_name="range")
    assert h.sync_result(ok).error == ErrorCode.NONE
    h.new_member(client="b")
    assert h.sync_result(h.sync(a, 1)).error == ErrorCode.REBALANCE_IN_PROGRESS


def test_leader_that_never_syncs_is_removed_and_followers_told_to_rejoin() -> None:
    h = Harness()
    a = h.new_member(client="a", rebalance_ms=5000)
    h.at(10)
    b = h.new_member(client="b", rebalance_ms=5000)
    tb = h.last_ticket
    h.join(a, client="a", rebalance_ms=5000)
    assert h.join_result(tb).generation_id == 2
    follower = h.sync(b, 2)
    h.at(5010)  # the SyncGroup timeout (rebalance timeout) passes without the leader
    assert h.sync_result(follower).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert a not in h.coord.group("g").members  # type: ignore[union-attr]


def test_failed_persist_answers_the_syncs_and_rebalances() -> None:
    h = Harness()
    a = h.new_member(client="a")
    b = h.new_member(client="b")
    h.join(a, client="a")
    h.auto_persist = False
    follower = h.sync(b, 2)
    leader = h.sync(a, 2, {a: b"1", b: b"2"})
    persist = h.persists[-1]
    h.take(h.coord.persisted(persist.persist_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, h.now))
    assert h.sync_result(follower).error == ErrorCode.NOT_COORDINATOR
    assert h.sync_result(leader).error == ErrorCode.NOT_COORDINATOR
    assert h.coord.group("g").state == GroupState.PREPARING_REBALANCE  # type: ignore[union-attr]
    with pytest.raises(KeyError):
        h.coord.persisted(persist.persist_id, ErrorCode.NONE, h.now)


def test_join_validation_errors() -> None:
    h = Harness()
    assert h.join_result(h.join(group="")).error == ErrorCode.INVALID_GROUP_ID
    assert h.join_result(h.join(session_ms=5999)).error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join_result(h.join(session_ms=1_800_001)).error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join_result(h.join("ghost", group="none")).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join_result(h.join(protocols=())).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    stable_group(h, 1)
    other_type = h.join(protocol_type="connect")
    assert h.join_result(other_type).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    disjoint = h.join(protocols=(("sticky", b""),))
    assert h.join_result(disjoint).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_selected_by_votes_among_common_protocols() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=100))
    h.new_member(client="a", protocols=(RANGE, ROUNDROBIN))
    ta = h.last_ticket
    h.new_member(client="b", protocols=(ROUNDROBIN, RANGE))
    h.new_member(client="c", protocols=(ROUNDROBIN, RANGE, ("sticky", b"")))
    h.at(100_000)
    result = h.join_result(ta)
    assert result.protocol_name == "roundrobin"
    assert all(m.metadata == b"rr-meta" for m in result.members)


def test_group_max_size() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=0, max_size=1))
    stable_group(h, 1)
    first = h.join_result(h.join(client="extra"))
    assert first.error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_offset_commit_checks() -> None:
    h = Harness()
    check = h.coord.validate_offset_commit
    assert check("solo", 3, "", None, 0) == ErrorCode.ILLEGAL_GENERATION
    assert check("solo", -1, "", None, 0) == ErrorCode.NONE  # a simple commit creates the group
    assert h.coord.group("solo").state == GroupState.EMPTY  # type: ignore[union-attr]
    a = h.new_member()
    assert check("g", 1, a, None, 0) == ErrorCode.REBALANCE_IN_PROGRESS  # CompletingRebalance
    h.sync(a, 1, {a: b"x"})
    assert check("g", 1, a, None, 0) == ErrorCode.NONE
    assert check("g", 0, a, None, 0) == ErrorCode.ILLEGAL_GENERATION
    assert check("g", 1, "intruder", None, 0) == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        check("g", -1, "", None, 0) == ErrorCode.UNKNOWN_MEMBER_ID
    )  # simple commit, members present
    h.new_member(client="b")
    assert check("g", 1, a, None, 0) == ErrorCode.NONE  # PreparingRebalance still commits


def test_describe_list_and_delete() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    h.coord.validate_offset_commit("offsets-only", -1, "", None, 0)
    listed = {g.group_id: g for g in h.coord.list_groups()}
    assert listed["g"].state == "Stable" and listed["g"].protocol_type == "consumer"
    assert (
        listed["offsets-only"].state == "Empty" and listed["offsets-only"].group_type == "classic"
    )
    assert [g.group_id for g in h.coord.list_groups(states=["stable"])] == ["g"]
    assert h.coord.list_groups(types=["consumer"]) == []
    described, unknown = h.coord.describe_groups(["g", "missing"])
    assert described.state == "Stable" and described.protocol_data == "range"
    assert [(m.member_id, m.assignment, m.metadata) for m in described.members] == [
        (m, m.encode(), b"range-meta") for m in ids
    ]
    assert (unknown.state, unknown.members, unknown.found) == ("Dead", (), False)
    outcome = h.coord.delete_groups(["g", "offsets-only", "missing"], h.now)
    assert outcome.results == (
        ("g", ErrorCode.NON_EMPTY_GROUP),
        ("offsets-only", ErrorCode.NONE),
        ("missing", ErrorCode.GROUP_ID_NOT_FOUND),
    )
    assert [e.group_id for e in outcome.step.effects] == ["offsets-only"]
    assert h.coord.group("offsets-only") is None


def test_restore_reloads_members_that_then_expire() -> None:
    h = Harness()
    a, b = stable_group(h, 2, session_ms=6000)
    snapshot = h.persists[-1].snapshot
    restarted = Harness()
    restarted.now = 50_000
    restarted.coord.restore("g", snapshot, 50_000)
    group = restarted.coord.group("g")
    assert group is not None and group.state == GroupState.STABLE
    assert group.generation_id == 2 and group.leader_id == a
    assert group.members[b].assignment == b.encode()
    assert restarted.heartbeat(a, 2) == ErrorCode.NONE
    sync = restarted.sync(b, 2)
    assert restarted.sync_result(sync).assignment == b.encode()
    restarted.at(56_000)  # nobody heartbeats after that: both sessions end
    assert group.state == GroupState.EMPTY and group.generation_id == 3
    restarted.coord.restore("h", None, 0)
    assert restarted.coord.group("h").state == GroupState.EMPTY  # type: ignore[union-attr]


def test_static_member_rejoin_replaces_its_id_without_rebalance() -> None:
    h = Harness()
    first = h.join_result(h.join(instance="i-1", client="s"))  # no MEMBER_ID_REQUIRED for static
    assert first.error == ErrorCode.NONE and first.member_id == "i-1-uuid1"
    h.sync(first.member_id, 1, {first.member_id: b"mine"})
    h.auto_persist = False
    again = h.join(instance="i-1", client="s")
    assert again not in h.answers  # waits for the GroupMetadata append
    h.take(h.coord.persisted(h.persists[-1].persist_id, ErrorCode.NONE, h.now))
    result = h.join_result(again)
    assert result.member_id == "i-1-uuid2" and result.generation_id == 1
    assert result.leader == first.member_id  # before v9 the old leader id: no assignor run
    fenced = h.coord.heartbeat("g", 1, first.member_id, "i-1", h.now)
    assert fenced.error == ErrorCode.FENCED_INSTANCE_ID
    assert h.coord.heartbeat("g", 1, result.member_id, "i-1", h.now).error == ErrorCode.NONE
    assert h.sync_result(h.sync(result.member_id, 1, instance="i-1")).assignment == b"mine"
    # an administrative removal by instance id
    outcome = h.coord.leave("g", [LeavingMember("", "i-1"), LeavingMember("", "i-9")], h.now)
    assert [m.error for m in outcome.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]


def test_static_leader_rejoin_v9_skips_assignment() -> None:
    h = Harness()
    first = h.join_result(h.join(instance="i-1", client="s", version=9))
    h.sync(first.member_id, 1, {first.member_id: b"mine"})
    result = h.join_result(h.join(instance="i-1", client="s", version=9))
    assert result.skip_assignment and result.leader == result.member_id == "i-1-uuid2"
    assert [m.group_instance_id for m in result.members] == ["i-1"]


def test_leave_batch_per_member_errors() -> None:
    h = Harness()
    a, _b = stable_group(h, 2)
    outcome = h.coord.leave("g", [LeavingMember(a), LeavingMember("nobody")], h.now)
    assert outcome.error == ErrorCode.NONE
    assert [m.error for m in outcome.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    missing = h.coord.leave("absent", [LeavingMember("x")], h.now)
    assert missing.single_error() == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coord.leave("", [LeavingMember("x")], h.now).error == ErrorCode.INVALID_GROUP_ID


def test_timers_are_only_deadlines() -> None:
    coord = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=3000))
    assert coord.next_deadline_ms() is None
    assert coord.advance(10**12).completions == []


def test_static_replacement_undone_when_its_persist_fails() -> None:
    h = Harness()
    first = h.join_result(h.join(instance="i-1", client="s"))
    h.sync(first.member_id, 1, {first.member_id: b"mine"})
    h.auto_persist = False
    again = h.join(instance="i-1", client="s")
    h.take(h.coord.persisted(h.persists[-1].persist_id, ErrorCode.REQUEST_TIMED_OUT, h.now))
    result = h.join_result(again)
    assert result.error == ErrorCode.COORDINATOR_NOT_AVAILABLE and result.member_id == ""
    group = h.coord.group("g")
    assert group is not None and list(group.members) == [first.member_id]
    assert group.static_members == {"i-1": first.member_id}
    assert h.coord.heartbeat("g", 1, first.member_id, "i-1", h.now).error == ErrorCode.NONE


def test_a_second_join_from_a_waiting_member_answers_the_first() -> None:
    h = Harness()
    a, _b = stable_group(h, 2)
    first = h.join(a, client="c0", protocols=(ROUNDROBIN, RANGE))
    second = h.join(a, client="c0", protocols=(ROUNDROBIN, RANGE))
    assert h.join_result(first).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert second not in h.answers
    described = h.coord.describe_groups(["g"])[0]
    assert described.state == "PreparingRebalance" and described.protocol_data == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in described.members)


def test_restore_v0_metadata_and_an_oversized_group() -> None:
    h = Harness()
    stable_group(h, 2)
    snapshot = h.persists[-1].snapshot
    old = replace(
        snapshot, members=tuple(replace(m, rebalance_timeout_ms=-1) for m in snapshot.members)
    )
    small = Harness(config=GroupConfig(initial_rebalance_delay_ms=0, max_size=1))
    step = small.coord.restore("g", old, 0)
    group = small.coord.group("g")
    assert group is not None and group.state == GroupState.PREPARING_REBALANCE
    assert step.completions == [] and all(
        m.rebalance_timeout_ms == 10_000 for m in group.members.values()
    )


def test_timers_of_several_groups_fire_in_deadline_order() -> None:
    h = Harness()
    slow = h.new_member(group="slow", session_ms=9000)
    h.sync(slow, 1, {slow: b"s"}, group="slow")
    fast = h.new_member(group="fast", session_ms=7000)
    h.sync(fast, 1, {fast: b"f"}, group="fast")
    assert h.coord.next_deadline_ms() == 7000
    h.at(3000)
    assert h.heartbeat(fast, 1, group="fast") == ErrorCode.NONE  # moves fast's session to 10000
    assert h.coord.next_deadline_ms() == 9000
    h.at(9500)
    slow_group, fast_group = h.coord.group("slow"), h.coord.group("fast")
    assert slow_group is not None and slow_group.state == GroupState.EMPTY
    assert fast_group is not None and fast_group.state == GroupState.STABLE
    assert h.coord.next_deadline_ms() == 10_000
    h.take(h.coord.delete_groups(["slow"], h.now).step)
    h.at(10_000)
    assert fast_group.state == GroupState.EMPTY and h.coord.next_deadline_ms() is None


def test_a_deleted_groups_late_persist_ack_does_not_reach_its_successor() -> None:
    """Found by the stateful test: a group's assignment persist still unacknowledged when the
    group is emptied and deleted must not complete the SyncGroup of a new group of the same
    id, whose generations restart at 1 (the ack is for another incarnation)."""
    h = Harness(auto_persist=False)
    old = h.join_result(h.join(client="a"))
    old_joined = h.join_result(h.join(old.member_id, client="a"))
    h.sync(old.member_id, old_joined.generation_id, {old.member_id: b"old@1"})
    old_persist = h.persists[-1].persist_id
    h.take(h.coord.leave("g", [LeavingMember(old.member_id)], h.now).step)
    assert h.coord.delete_groups(["g"], h.now).results == (("g", ErrorCode.NONE),)

    new = h.join_result(h.join(client="a"))
    joined = h.join_result(h.join(new.member_id, client="a"))
    assert joined.generation_id == old_joined.generation_id  # the same generation number
    ticket = h.sync(new.member_id, joined.generation_id, {new.member_id: b"new@1"})
    new_persist = h.persists[-1].persist_id
    h.take(h.coord.persisted(old_persist, ErrorCode.NONE, h.now))  # the old ack comes late
    assert ticket not in h.answers
    h.take(h.coord.persisted(new_persist, ErrorCode.NONE, h.now))
    assert h.sync_result(ticket).assignment == b"new@1"
    group = h.coord.group("g")
    assert group is not None and group.state == GroupState.STABLE
    assert group.members[new.member_id].assignment == b"new@1"
