"""``ServerStats.tls_reloads`` / ``tls_reload_failures`` of an in-process server (the real
:class:`KafkaServer` and ApiVersions handler on a real data directory) whose keystore is
replaced twice: by a half-rotated pair (refused, counted once however many clients connect),
then by a good one (applied, counted once)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from tls_certs import cert_pem, key_pem
from tls_rotation import Ca, replace, server_serial

from seglog.broker.app import open_groups
from seglog.broker.dispatch import Dispatcher
from seglog.broker.handlers import api_versions
from seglog.broker.net.server import KafkaServer
from seglog.broker.server_config import ServerConfig
from seglog.broker.state import BrokerState
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager

DEADLINE_S = 30.0


def test_server_stats_count_reloads_and_refusals(tmp_path: Path) -> None:
    ca = Ca("stats CA")
    ca_path, keystore = tmp_path / "ca.pem", tmp_path / "server.pem"
    ca_path.write_bytes(ca.pem)
    data, first = ca.keystore()
    keystore.write_bytes(data)
    config = ServerConfig.from_properties(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "seglog.ssl.reload.check.ms": "50",
        }
    )
    manager = LogManager.open(BrokerConfig(log_dirs=(str(tmp_path / "data"),)))
    state = BrokerState(manager, config, cluster_id="reload", groups=open_groups(manager, config))
    server = KafkaServer(Dispatcher(state, api_versions.HANDLERS), config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        (bound,) = asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
        address = f"{bound.host}:{bound.port}"
        key, cert = ca.server()
        replace(keystore, key_pem(key) + cert_pem(first) + ca.pem, "rename")
        deadline = time.monotonic() + DEADLINE_S
        while server.stats.tls_reload_failures == 0:
            assert time.monotonic() < deadline, "no refusal"
            assert server_serial(address, ca_path) == first.serial_number
        end = time.monotonic() + 0.25  # five more intervals of connections
        while time.monotonic() < end:
            assert server_serial(address, ca_path) == first.serial_number
        assert (server.stats.tls_reloads, server.stats.tls_reload_failures) == (0, 1)
        replace(keystore, key_pem(key) + cert_pem(cert) + ca.pem, "rename")
        while server_serial(address, ca_path) != cert.serial_number:
            assert time.monotonic() < deadline, "no reload"
        assert (server.stats.tls_reloads, server.stats.tls_reload_failures) == (1, 1)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
        manager.close()
