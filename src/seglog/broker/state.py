"""What every request handler of ``seglog serve`` shares: the logs, the settings, the identity.

:class:`BrokerState` is created once per server. It holds the :class:`LogManager` (opened
read-write: the server owns the data directories' lock), the server settings, the broker's
identity (node id from ``node.id``, cluster id from ``meta.properties``), the endpoint clients are
told to use, and :class:`AppendWaiters`, which wakes Fetch long polls when a partition grows.
Everything here runs on the server's event loop thread; the log manager's own threads (cleaner,
scheduler) never call into it.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seglog.broker.authorization import (
    SUPPORTED_OPERATIONS,
    AllowEverything,
    Authorizer,
    Operation,
    ResourceType,
    operations_bitfield,
)
from seglog.broker.server_config import Listener, ServerConfig
from seglog.broker.session import Session
from seglog.errors import InvalidTopicError, UnknownTopicError
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.broker.acl.authorizer import AclAuthorizer
    from seglog.broker.group_service import GroupService
    from seglog.broker.security.authenticator import SaslServer
    from seglog.broker.txn_service import TxnService
    from seglog.engine.log.partition_log import Log
    from seglog.engine.log_manager import LogManager

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
INT32_MIN = -(2**31)


def topic_uuid(topic_id: str | None) -> uuid.UUID:
    """Kafka's topic id text (URL-safe base64 of 16 bytes, as in ``partition.metadata``)."""
    if not topic_id:
        return uuid.UUID(int=0)
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except ValueError:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=raw) if len(raw) == 16 else uuid.UUID(int=0)


class AppendWaiters:
    """Fetch long polls waiting for any of some partitions to grow.

    A waiter registers an :class:`asyncio.Event` under each partition it reads; an append to a
    partition sets every event registered there. Events are removed by the waiter when its wait
    ends, whether woken or timed out, so the map holds only live waits.
    """

    def __init__(self) -> None:
        self._events: dict[TopicPartition, set[asyncio.Event]] = {}
        self.closed = False

    def notify(self, tp: TopicPartition) -> None:
        for event in self._events.get(tp, ()):
            event.set()

    def close(self) -> None:
        """The server is stopping: wake every wait, and let no new one start (long polls are
        answered with what there is, so shutdown never waits out a ``max_wait_ms``)."""
        self.closed = True
        for events in self._events.values():
            for event in events:
                event.set()

    async def wait(self, partitions: Iterable[TopicPartition], timeout_s: float) -> bool:
        """Wait until one of ``partitions`` is appended to or ``timeout_s`` passes (at once
        when closed)."""
        if self.closed:
            return False
        event = asyncio.Event()
        keys = list(partitions)
        for tp in keys:
            self._events.setdefault(tp, set()).add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            for tp in keys:
                waiting = self._events.get(tp)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._events[tp]


@dataclass(slots=True)
class RequestContext:
    """Who sent a request and at which version, on which connection (its :class:`Session`)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    session: Session | None = None

    @property
    def connection(self) -> Session:
        """The connection's session (a PLAINTEXT, anonymous one when none was given)."""
        if self.session is None:
            self.session = Session(self.client_host)
        return self.session

    @property
    def principal(self) -> str:
        return self.connection.principal


class BrokerState:
    """The shared state of the server (see the module docstring)."""

    def __init__(
        self, manager: LogManager, config: ServerConfig, *, cluster_id: str, groups: GroupService
    ) -> None:
        self.manager = manager
        self.groups = groups
        # The transaction coordinator (set by the server's wiring; None: transactions refused).
        self.txns: TxnService | None = None
        self.config = config
        self.node_id = manager.broker.node_id
        self.cluster_id = cluster_id
        self.endpoint = Listener("PLAINTEXT", "127.0.0.1", 9092)
        # The endpoint clients of each listener are told (set by advertise).
        self.endpoints: dict[str, Listener] = {}
        self.appends = AppendWaiters()
        # Answers every authorization question (``authorizer.class.name``; none: allow all).
        self.authorizer: Authorizer = AllowEverything()
        # The SASL side (mechanisms, credentials, throttle) for SASL_* listeners: set by the
        # server's assembly; None serves no SASL (SaslHandshake answers ILLEGAL_SASL_STATE).
        self.sasl: SaslServer | None = None
        # The ACL authorizer when ``authorizer.class.name`` is set (the ACL APIs answer
        # SECURITY_DISABLED without one); then also ``authorizer``.
        self.acls: AclAuthorizer | None = None
        # (api_key, min, max) of every handler: set by the dispatcher from its registry.
        self.advertised: list[tuple[int, int, int]] = []
        # Creates an internal topic with its own settings (``__consumer_offsets``) or returns
        # False: set by the group coordinator's wiring; auto-creation never makes them.
        self.create_internal_topic: Callable[[str], bool] = lambda name: False
        # Called with a topic's name after DeleteTopics deleted it (e.g. to write tombstones
        # for the committed offsets of its partitions): set by the group coordinator's wiring.
        self.on_topic_deleted: list[Callable[[str], None]] = []

    def authorize(
        self,
        context: RequestContext,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether the request's principal may perform ``operation`` on the resource."""
        return self.authorizer.authorize(context.connection, operation, resource_type, name)

    def authorized_names(
        self,
        context: RequestContext,
        operation: Operation,
        resource_type: ResourceType,
        names: Iterable[str | None],
    ) -> set[str]:
        """The ``names`` the principal may perform ``operation`` on (each asked once; Kafka's
        ``filterByAuthorized``)."""
        return {
            name
            for name in {n for n in names if n is not None}
            if self.authorize(context, operation, resource_type, name)
        }

    def authorize_by_resource_type(
        self, context: RequestContext, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may perform ``operation`` on some resource of the type."""
        return self.authorizer.authorize_by_resource_type(
            context.connection, operation, resource_type
        )

    def authorized_operations(
        self, context: RequestContext, resource_type: ResourceType, name: str
    ) -> int:
        """Kafka's ``*_authorized_operations`` bit field of the resource for the principal
        (every supported operation without an authorizer)."""
        session = context.connection
        return operations_bitfield(
            operation
            for operation in SUPPORTED_OPERATIONS.get(resource_type, ())
            if self.authorizer.authorize(session, operation, resource_type, name)
        )

    def log_of(self, topic: str, partition: int) -> Log | None:
        """The partition's log, or None when the topic or partition is not here (a partition
        number no topic can have, e.g. negative, is not here either: Kafka answers
        UNKNOWN_TOPIC_OR_PARTITION for it)."""
        try:
            return self.manager.get_log(topic, partition)
        except (UnknownTopicError, InvalidTopicError):
            return None

    def advertise(self, bound: Iterable[Listener]) -> None:
        """Set the endpoint each listener's clients are told: the ``advertised.listeners`` entry
        of the same name, else the bound address (an unspecified host: ``127.0.0.1``)."""
        advertised = {a.name: a for a in self.config.advertised_listeners or ()}
        self.endpoints = {}
        for listener in bound:
            chosen = advertised.get(listener.name, listener)
            host = chosen.host or listener.host
            if host in ("", "0.0.0.0", "::"):
                host = "127.0.0.1"
            port = chosen.port or listener.port
            self.endpoints[listener.name] = Listener(
                listener.name, host, port, listener.security_protocol
            )
        if self.endpoints:
            self.endpoint = next(iter(self.endpoints.values()))

    def endpoint_for(self, context: RequestContext) -> Listener:
        """The endpoint of the listener the request came in on (Kafka answers Metadata and
        FindCoordinator with the address of the client's own listener)."""
        return self.endpoints.get(context.connection.listener, self.endpoint)
