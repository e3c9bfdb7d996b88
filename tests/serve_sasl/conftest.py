"""Fixtures of the SASL integration tests: one ``seglog serve`` on a SASL_PLAINTEXT listener
per module (PLAIN user ``admin`` from JAAS; SCRAM user ``alice`` added with the CLI before the
start), certificates for the SASL_SSL tests, and ``kcat``'s path.

The server harness, certificates and SSL client settings are those of ``tests/serve_security``
(one harness for any listener set), put on the import path here.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve_security"))

from sasl_server import ALICE_PASSWORD, SETTINGS, SaslServe, add_user
from tls_certs import Pki, make_pki


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serve: integration tests against a real `seglog serve` process"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.serve)


@pytest.fixture(scope="module")
def server_settings() -> dict[str, str]:
    """The server's settings; a module overrides this to add its own."""
    return dict(SETTINGS, **{"connection.failed.authentication.delay.ms": "10"})


@pytest.fixture(scope="module")
def sasl_serve(
    tmp_path_factory: pytest.TempPathFactory, server_settings: dict[str, str]
) -> Iterator[SaslServe]:
    data_dir = tmp_path_factory.mktemp("sasl") / "data"
    data_dir.mkdir()
    add_user(data_dir, "alice", ALICE_PASSWORD)
    server = SaslServe(data_dir, server_settings).start()
    try:
        yield server
        server.stop()
    finally:
        server.kill()
        print(server.log()[-5000:])


@pytest.fixture(scope="session")
def kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.skip("kcat is not installed (Debian: apt-get install kcat)")
    return path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, the server's keystore for 127.0.0.1 and client certificates (``alice``, ...)."""
    return make_pki(tmp_path_factory.mktemp("pki"))
