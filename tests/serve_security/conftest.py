"""Fixtures of the TLS tests: certificates made for the session, and servers with an SSL
listener beside a PLAINTEXT one (both on loopback, port 0)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tls_certs import Pki, make_pki
from tls_server import TlsFactory, TlsServe


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


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
