"""Fixtures of the TLS tests: certificates made for the session, and servers with an SSL
listener beside a PLAINTEXT one (both on loopback, port 0)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tls_certs import Pki, make_pki
from tls_server import TlsServe

TlsFactory = Callable[..., TlsServe]


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls_properties(pki: Pki, client_auth: str = "none", **extra: str) -> dict[str, str]:
    """A PLAINTEXT and an SSL listener on loopback; the SSL one reads ``server.pem``."""
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": client_auth,
        "group.initial.rebalance.delay.ms": "0",
        **extra,
    }


@pytest.fixture
def tls_serve(tmp_path: Path) -> Iterator[TlsFactory]:
    """Start servers: ``tls_serve(properties)``; each is stopped (exit 0 required) at the end."""
    started: list[TlsServe] = []

    def make(properties: dict[str, str]) -> TlsServe:
        server = TlsServe(tmp_path / f"data{len(started)}", properties)
        started.append(server)
        return server.start()

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.skip("kcat is not installed (apt-get install kcat)")
    return path
