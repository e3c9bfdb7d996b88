"""A real ``seglog serve`` process on a SASL listener, and the clients' settings.

:func:`add_user` adds SCRAM users with ``seglog scram-credentials`` (the CLI, before or while
the server runs); :class:`SaslServe` starts ``seglog serve`` on one ``SASL_PLAINTEXT`` (or
``SASL_SSL``) listener on loopback with the given ``server.properties`` settings, waits for its
ready line and stops it with SIGTERM (exit 0 asserted). :func:`partition_dirs` lists the topic
directories on disk, so a refused client is shown to have written nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tls_certs import Pki
from tls_server import TlsServe, tls_properties

SRC = Path(__file__).resolve().parents[2] / "src"
TIMEOUT_S = 60.0

ADMIN_PASSWORD = "admin-secret"
ALICE_PASSWORD = "alice-secret"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}";'
)
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def sasl_ssl_properties(pki: Pki, listeners: str = "SASL_SSL://127.0.0.1:0") -> dict[str, str]:
    """:data:`SETTINGS` for a ``SASL_SSL`` listener (TLS from ``pki``'s ``server.pem``, no
    client certificate asked; the JAAS PLAIN user ``admin`` under ``listener.name.sasl_ssl.``);
    ``listeners`` may add others (e.g. an ``SSL`` one)."""
    sasl = {k: v for k, v in SETTINGS.items() if not k.startswith("listener.name.")}
    sasl["listener.name.sasl_ssl.plain.sasl.jaas.config"] = JAAS
    sasl["connection.failed.authentication.delay.ms"] = "10"
    return tls_properties(pki, listeners=listeners, **sasl)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def seglog(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``seglog --data-dir DATA_DIR ARGS...`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def add_user(data_dir: Path, user: str, password: str) -> None:
    """Give ``user`` SCRAM-SHA-256 and SCRAM-SHA-512 credentials with the CLI."""
    done = seglog(
        data_dir,
        "scram-credentials",
        "--user",
        user,
        "--add",
        f"SCRAM-SHA-256=[iterations=4096,password={password}],SCRAM-SHA-512=[password={password}]",
    )
    assert done.returncode == 0, done.stderr


def partition_dirs(data_dir: Path) -> set[str]:
    """The partition directories (``topic-N``) in ``data_dir``."""
    return {
        p.name for p in data_dir.iterdir() if p.is_dir() and p.name.rpartition("-")[2].isdigit()
    }


class SaslServe:
    """One ``seglog serve`` subprocess with a single SASL listener (``SASL_PLAINTEXT`` on
    loopback unless ``properties`` names ``listeners``): a one-listener view of
    :class:`tls_server.TlsServe`, the harness that starts any listener set."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        listeners = properties.get("listeners", "SASL_PLAINTEXT://127.0.0.1:0")
        assert "," not in listeners, "SaslServe serves one listener; use TlsServe for several"
        self.server = TlsServe(data_dir, {"listeners": listeners, **properties})
        self.data_dir = data_dir
        self.bootstrap = ""

    def start(self) -> SaslServe:
        self.server.start()
        (self.bootstrap,) = self.server.addresses.values()
        return self

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.bootstrap.rsplit(":", 1)
        return host, int(port)

    def alive(self) -> bool:
        return self.server.alive()

    def log(self) -> str:
        return self.server.log()

    def stop(self) -> None:
        self.server.stop()

    def kill(self) -> None:
        self.server.kill()
