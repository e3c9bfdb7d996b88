"""The machinery of the every-API authorization tables (``test_acls_every_api*.py``).

A :class:`Row` is one API request and the ACLs it needs (:class:`Need`: resource kind, Kafka
operation, and the outcome Kafka answers when that ACL is missing). Each row runs in variants:
``ok`` (every need granted, plus what the row's own setup needs) and ``no<i>`` (every need but
the ``i``-th). Every variant has its own resource names (:class:`Names`, derived from the row id
and the variant), so rows sharing a server never see each other's ACLs.

A missing need is either simply not granted, or (``deny=True``) granted by implication and then
taken away by a DENY binding on the same resource: the way to remove an implied DESCRIBE, and a
proof that a DENY beats every ALLOW.

ACLs and topics are written before the server starts, through the ``seglog`` CLI's own ``main``
in-process (``seglog acls --add``, ``seglog topics create``), one ``acls --add`` per operation.
:func:`disk_state` is what "nothing changed on disk" compares: every partition directory, the
size and bytes of every segment file, and every file outside the partition directories (the
ACL file, topic configs); checkpoints and indexes, rewritten by the server's own housekeeping,
are left out.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serve_harness import DEFAULT_PROPERTIES, ServeProcess

from seglog.cli.main import main as seglog_main
from seglog.protocol import messages
from serve_wire import WireClient

ANONYMOUS = "User:ANONYMOUS"
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
AUTH_CODES = frozenset({29, 30, 31, 53})  # TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_ ...FAILED
LISTED, HIDDEN = "listed", "hidden"  # outcomes of the APIs that filter instead of failing
_RESOURCE_OPTION = {"topic": "--topic", "group": "--group", "txn": "--transactional-id"}
_VOLATILE_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", "checkpoint", ".lock")


@dataclass(frozen=True)
class Names:
    """The resources of one row variant: a topic, a group and a transactional id named
    ``base``, and a second topic ``base-x`` for setups that need one."""

    base: str

    @property
    def topic(self) -> str:
        return self.base

    @property
    def group(self) -> str:
        return self.base

    @property
    def txn(self) -> str:
        return self.base

    @property
    def extra(self) -> str:
        return f"{self.base}-x"

    def of(self, kind: str) -> str:
        return {"topic": self.topic, "group": self.group, "txn": self.txn, "extra": self.extra}[
            kind
        ]


@dataclass(frozen=True)
class Need:
    """One ACL a request needs: ``kind`` (topic, group, txn, extra, or cluster) and the
    ``operation`` as ``seglog acls --operation`` spells it; ``denied`` is the outcome when it
    is missing; ``deny`` takes it away with a DENY binding (for an implied operation);
    ``changes_nothing`` is False for the few checks whose refusal still lets the request act
    (CreateTopics' DESCRIBE_CONFIGS only blanks the configs of the created topic)."""

    kind: str
    operation: str
    denied: object
    deny: bool = False
    changes_nothing: bool = True


@dataclass(frozen=True)
class Row:
    """One request of the table (see the module docstring). ``build(names, prepared)`` is the
    request, ``outcome(response, names)`` what is compared, ``allowed`` the outcome with every
    need granted (None: anything but an authorization error); ``prepare(wire, names)`` runs
    setup requests first (its result is ``prepared``), needing the ``setup`` ACLs
    (``(kind, operation)``; an operation ``!Op`` is a DENY of it); ``topics`` are the kinds of
    topic created before the server starts; ``check_ok`` checks the disk after the allowed
    request; an ``isolated`` row's allowed variant gets a server of its own in the cluster
    table (its ACL would change the others' answers)."""

    id: str
    api_key: int
    version: int
    needs: tuple[Need, ...]
    build: Callable[[Names, Any], Any]
    outcome: Callable[[Any, Names], object]
    allowed: object = None
    setup: tuple[tuple[str, str], ...] = ()
    prepare: Callable[[WireClient, Names], Any] | None = None
    topics: tuple[str, ...] = ("topic",)
    check_ok: Callable[[Path, Names], None] | None = None
    isolated: bool = False

    def variants(self) -> list[str]:
        return ["ok", *(f"no{i}" for i in range(len(self.needs)))]

    def names(self, variant: str) -> Names:
        return Names(f"{self.id}-{variant}")

    def grants(self, variant: str) -> list[tuple[str, str, str, str]]:
        """``(permission, kind, name, operation)`` of every binding the variant holds."""
        names = self.names(variant)
        out = [
            ("deny", kind, _name(names, kind), op[1:])
            if op.startswith("!")
            else ("allow", kind, _name(names, kind), op)
            for kind, op in self.setup
        ]
        for i, need in enumerate(self.needs):
            missing = variant == f"no{i}"
            if not missing:
                out.append(("allow", need.kind, _name(names, need.kind), need.operation))
            elif need.deny:
                out.append(("deny", need.kind, _name(names, need.kind), need.operation))
        return out

    def missing(self, variant: str) -> Need | None:
        return None if variant == "ok" else self.needs[int(variant[2:])]


def _name(names: Names, kind: str) -> str:
    return "" if kind == "cluster" else names.of(kind)


def cases(rows: Iterable[Row]) -> list[tuple[Row, str]]:
    return [(row, variant) for row in rows for variant in row.variants()]


def cli(data_dir: Path, *args: str) -> None:
    """The ``seglog`` command, in-process (its output swallowed); it must succeed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = seglog_main(["--data-dir", str(data_dir), *args])
    assert status == 0, out.getvalue()


def prepare_directory(
    data_dir: Path, topics: Iterable[str], grants: Iterable[tuple[str, str, str, str]]
) -> None:
    """Create ``topics`` (one partition) and write ``grants`` for ANONYMOUS (DENY ones for
    ``User:*``), one ``seglog acls --add`` per permission and operation."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for topic in sorted(set(topics)):
        cli(data_dir, "topics", "create", "--topic", topic, "--partitions", "1")
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for permission, kind, name, operation in grants:
        grouped.setdefault((permission, operation), []).append((kind, name))
    for (permission, operation), resources in sorted(grouped.items()):
        args = ["acls", "--add", "--operation", operation]
        args += (
            ["--allow-principal", ANONYMOUS]
            if permission == "allow"
            else ["--deny-principal", "User:*"]
        )
        for kind, name in sorted(set(resources)):
            args += ["--cluster"] if kind == "cluster" else [_RESOURCE_OPTION[_kind(kind)], name]
        cli(data_dir, *args)


def _kind(kind: str) -> str:
    return "topic" if kind == "extra" else kind


def start_server(data_dir: Path) -> ServeProcess:
    return ServeProcess(data_dir, DEFAULT_PROPERTIES | AUTHORIZER).start()


def serve_rows(data_dir: Path, rows: list[Row]) -> Iterator[ServeProcess]:
    """A module fixture's body: one server holding the topics and ACLs of every variant of
    ``rows``, stopped (exit status 0) after the module."""
    topics = [row.names(v).of(kind) for row, v in cases(rows) for kind in row.topics]
    prepare_directory(data_dir, topics, [g for row, v in cases(rows) for g in row.grants(v)])
    process = start_server(data_dir)
    try:
        yield process
        process.stop()
    finally:
        process.kill()


def listed(found: set[str], name: str) -> str:
    """The outcome of a filtering API: whether ``name`` is among what it answered."""
    return LISTED if name in found else HIDDEN


def disk_state(data_dir: Path) -> dict[str, str]:
    """What a refused request must leave as it was (see the module docstring)."""
    state: dict[str, str] = {}
    for path in sorted(data_dir.rglob("*")):
        relative = path.relative_to(data_dir).as_posix()
        if path.is_dir():
            state[relative] = "dir"
        elif not path.name.endswith(_VOLATILE_SUFFIXES):
            state[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@dataclass
class Checked:
    """What :func:`run_case` saw, for the assertion message."""

    outcome: object
    response: Any = field(repr=False)


def run_case(server: ServeProcess, row: Row, variant: str) -> None:
    """Send the row's request in this variant and assert Kafka's outcome (see module doc)."""
    names = row.names(variant)
    with WireClient(server.bootstrap) as wire:
        prepared = row.prepare(wire, names) if row.prepare is not None else None
        before = disk_state(server.data_dir)
        response = wire.call(row.api_key, row.version, row.build(names, prepared))
    outcome = row.outcome(response, names)
    need = row.missing(variant)
    context = f"{row.id} [{variant}]: outcome {outcome!r}\n{response!r}"
    if need is None:
        if row.allowed is None:
            assert outcome not in AUTH_CODES and outcome != HIDDEN, context
        else:
            assert outcome == row.allowed, context
        if row.check_ok is not None:
            row.check_ok(server.data_dir, names)
        return
    assert outcome == need.denied, context
    if need.changes_nothing:
        assert disk_state(server.data_dir) == before, f"{context}\nthe refused request wrote"


# Request builders shared by both tables.


def init_producer(wire: WireClient, txn: str | None) -> tuple[int, int]:
    """InitProducerId for ``txn``: ``(producer id, epoch)``, or ``(4242, 0)`` when refused (the
    request that follows is then refused before its producer is looked at)."""
    answer = wire.call(
        22, 4, messages.InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000)
    )
    if answer.error_code != 0:
        return 4242, 0
    return answer.producer_id, answer.producer_epoch


def commit_request(group: str, topic: str) -> Any:
    """A simple (generation -1) OffsetCommit of offset 0 (it creates an empty group)."""
    return messages.OffsetCommitRequest(
        group_id=group,
        topics=[
            messages.OffsetCommitRequestOffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    messages.OffsetCommitRequestOffsetCommitRequestPartition(
                        partition_index=0, committed_offset=0
                    )
                ],
            )
        ],
    )


def commit_offset(wire: WireClient, group: str, topic: str) -> int:
    """:func:`commit_request` sent: its partition's error code."""
    answer = wire.call(8, 8, commit_request(group, topic))
    code: int = answer.topics[0].partitions[0].error_code
    return code


def fetch_request(topic: str, replica_id: int = -1) -> Any:
    """A Fetch of partition 0 from offset 0 (a follower's when ``replica_id`` >= 0)."""
    partition = messages.FetchRequestFetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1024
    )
    return messages.FetchRequest(
        replica_id=replica_id,
        max_wait_ms=0,
        topics=[messages.FetchRequestFetchTopic(topic=topic, partitions=[partition])],
    )


def epoch_request(topic: str, replica_id: int = -1) -> Any:
    """OffsetForLeaderEpoch for partition 0 of ``topic`` (a follower's when ``replica_id`` >= 0)."""
    partition = messages.OffsetForLeaderEpochRequestOffsetForLeaderPartition(0, -1, 0)
    return messages.OffsetForLeaderEpochRequest(
        replica_id=replica_id,
        topics=[messages.OffsetForLeaderEpochRequestOffsetForLeaderTopic(topic, [partition])],
    )


def set_config(resource_type: int, name: str, key: str, value: str) -> Any:
    """One IncrementalAlterConfigs resource that SETs ``key`` to ``value``."""
    return messages.IncrementalAlterConfigsRequestAlterConfigsResource(
        resource_type=resource_type,
        resource_name=name,
        configs=[
            messages.IncrementalAlterConfigsRequestAlterableConfig(
                name=key, config_operation=0, value=value
            )
        ],
    )


def first_partition_code(topics: list[Any]) -> int:
    """The error code of the first partition of the first topic of a response."""
    code: int = topics[0].partitions[0].error_code
    return code


def topic_dir_exists(data_dir: Path, names: Names) -> None:
    """``check_ok`` of a request that creates ``names.topic``."""
    assert (data_dir / f"{names.topic}-0").is_dir()


def partition_1_exists(data_dir: Path, names: Names) -> None:
    """``check_ok`` of a request that adds a second partition to ``names.topic``."""
    assert (data_dir / f"{names.topic}-1").is_dir()


def records_written(data_dir: Path, names: Names) -> None:
    """``check_ok`` of a request that appends to ``names.topic``."""
    assert (data_dir / f"{names.topic}-0" / "00000000000000000000.log").stat().st_size > 0
