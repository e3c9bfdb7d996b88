"""The server assembled: handlers, dispatcher, network edge, run until stopped.

:func:`run_server` is what ``seglog serve`` runs on an opened log manager: it binds the
listeners, calls ``on_ready`` with the bound listeners (``seglog serve`` prints one ready line
per listener, ``seglog serve: listening on NAME://HOST:PORT``), serves until ``stop`` is set,
then shuts down cleanly (see :class:`seglog.broker.net.server.KafkaServer`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from seglog.broker.acl.authorizer import AclAuthorizer
from seglog.broker.dispatch import Dispatcher
from seglog.broker.group_service import GroupService
from seglog.broker.groups.coordinator import GroupCoordinator
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetsStore
from seglog.broker.handlers import (
    acls,
    admin_topics,
    api_versions,
    cluster,
    configs,
    fetch,
    group_admin,
    group_membership,
    group_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    sasl,
    transactions,
    txn_admin,
    txn_offsets,
)
from seglog.broker.net.server import KafkaServer
from seglog.broker.registry import ApiHandler
from seglog.broker.security.authenticator import SaslServer
from seglog.broker.security.credential_store import CredentialStore
from seglog.broker.server_config import ALLOW_INSECURE_KEY, Listener, ServerConfig
from seglog.broker.state import BrokerState
from seglog.broker.txn_service import TxnService
from seglog.broker.txns.coordinator import TransactionCoordinator
from seglog.broker.txns.state_store import TRANSACTION_STATE_TOPIC, TransactionStateStore
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.engine.log_manager import LogManager

LOG = logging.getLogger("seglog.serve")


def all_handlers() -> list[ApiHandler]:
    """Every API this server serves (ApiVersions lists exactly these)."""
    return [
        *api_versions.HANDLERS,
        *metadata.HANDLERS,
        *produce.HANDLERS,
        *fetch.HANDLERS,
        *offsets.HANDLERS,
        *admin_topics.HANDLERS,
        *configs.HANDLERS,
        *cluster.HANDLERS,
        *producer_ids.HANDLERS,
        *group_membership.HANDLERS,
        *group_offsets.HANDLERS,
        *group_admin.HANDLERS,
        *transactions.HANDLERS,
        *txn_admin.HANDLERS,
        *txn_offsets.HANDLERS,
        *sasl.HANDLERS,
        *acls.HANDLERS,
    ]


def cluster_id_of(manager: LogManager) -> str:
    """The cluster id of ``meta.properties`` (a fresh directory gets one when first written)."""
    meta = manager.meta
    return (meta.cluster_id if meta is not None else None) or "seglog"


async def run_server(
    manager: LogManager,
    config: ServerConfig,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[list[Listener]], None],
) -> None:
    """Serve ``manager``'s logs until ``stop`` is set; see the module docstring."""
    groups = open_groups(manager, config)
    state = BrokerState(manager, config, cluster_id=cluster_id_of(manager), groups=groups)
    txns = open_txns(manager, config)
    state.txns = txns
    txns.on_marker.append(marker_hook(state))
    state.create_internal_topic = lambda name: (
        (name == OFFSETS_TOPIC and groups.ensure_offsets_topic())
        or (name == TRANSACTION_STATE_TOPIC and txns.ensure_topic())
    )
    state.on_topic_deleted.append(groups.topic_deleted)
    state.sasl = SaslServer(config.sasl, CredentialStore(manager.first_directory))
    install_authorizer(state)
    restored = txns.restore()
    if restored:
        LOG.info("restored %d transactional id(s) from %s", restored, TRANSACTION_STATE_TOPIC)
    dispatcher = Dispatcher(state, all_handlers())
    server = KafkaServer(dispatcher, config)
    bound = await server.start()
    state.advertise(bound)
    for listener in config.insecure_listeners:
        LOG.warning(
            "listener %s accepts unencrypted connections from other hosts with no authorizer "
            "(%s=true)",
            listener,
            ALLOW_INSECURE_KEY,
        )
    groups.start()
    txns.start()
    on_ready(bound)
    try:
        await stop.wait()
    finally:
        state.appends.close()  # parked long polls answer now, not at their max_wait_ms
        await server.stop()
        await txns.stop()
        await groups.stop()
        LOG.info(
            "served %d request(s) on %d connection(s)",
            server.stats.requests,
            server.stats.accepted,
        )


def install_authorizer(state: BrokerState) -> None:
    """With ``authorizer.class.name`` set, load the ACLs of the first data directory and make
    them decide every request (without it, everything is allowed, as in Kafka)."""
    settings = state.config.authorizer
    if not settings.enabled:
        return
    authorizer = AclAuthorizer(state.manager.first_directory, settings)
    state.acls = authorizer
    state.authorizer = authorizer
    LOG.info(
        "authorizer %s: %d ACL(s), %d super user(s), allow.everyone.if.no.acl.found=%s",
        settings.class_name,
        len(authorizer.table),
        len(settings.super_users),
        str(settings.allow_everyone_if_no_acl_found).lower(),
    )


def open_groups(manager: LogManager, config: ServerConfig) -> GroupService:
    """The group coordinator with every group ``__consumer_offsets`` holds restored."""
    store = OffsetsStore.open(manager)
    service = GroupService(
        GroupCoordinator(config.groups),
        store,
        now_ms=manager.clock.now_ms,
        expiry_interval_ms=manager.broker.offsets_retention_check_interval_ms,
    )
    restored = service.restore()
    if restored:
        LOG.info("restored %d consumer group(s) from %s", restored, OFFSETS_TOPIC)
    return service


def open_txns(manager: LogManager, config: ServerConfig) -> TxnService:
    """The transaction coordinator over the loaded ``__transaction_state`` (not restored yet:
    :meth:`TxnService.restore` completes prepared transactions, so it runs once the markers'
    hooks are wired)."""

    def new_producer_id() -> int | None:
        try:
            return manager.producer_ids.next_producer_id()
        except SeglogError as error:
            LOG.error("InitProducerId: cannot reserve producer ids: %s", error)
            return None

    return TxnService(
        TransactionCoordinator(config.transactions, new_producer_id=new_producer_id),
        TransactionStateStore.open(manager),
        manager,
        now_ms=manager.clock.now_ms,
    )


def marker_hook(state: BrokerState) -> Callable[[TopicPartition, int, bool], None]:
    """What follows each transaction marker: Fetch long polls wake, and on a
    ``__consumer_offsets`` partition the transaction's offsets are applied or dropped."""

    def after_marker(tp: TopicPartition, producer_id: int, commit: bool) -> None:
        state.appends.notify(tp)
        if tp.topic == OFFSETS_TOPIC:
            state.groups.complete_transaction(tp.partition, producer_id, commit=commit)

    return after_marker
