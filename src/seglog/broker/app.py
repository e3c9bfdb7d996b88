"""The server assembled: handlers, dispatcher, network edge, run until stopped.

:func:`run_server` is what ``seglog serve`` runs on an opened log manager: it binds the
listeners, prints the ready line (``seglog serve: listening on PLAINTEXT://HOST:PORT``), serves
until ``stop`` is set, then shuts down cleanly (see :class:`seglog.broker.net.server.KafkaServer`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from seglog.broker.dispatch import Dispatcher
from seglog.broker.handlers import api_versions, fetch, metadata, offsets, produce
from seglog.broker.net.server import KafkaServer
from seglog.broker.registry import ApiHandler
from seglog.broker.server_config import Listener, ServerConfig
from seglog.broker.state import BrokerState

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
    state = BrokerState(manager, config, cluster_id=cluster_id_of(manager))
    dispatcher = Dispatcher(state, all_handlers())
    server = KafkaServer(dispatcher, config)
    bound = await server.start()
    state.advertise(bound[0])
    on_ready(bound)
    try:
        await stop.wait()
    finally:
        state.appends.close()  # long polls answer now rather than after their max_wait_ms
        await server.stop()
        LOG.info(
            "served %d request(s) on %d connection(s)",
            server.stats.requests,
            server.stats.accepted,
        )
