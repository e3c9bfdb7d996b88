"""``seglog acls --bootstrap-server ... --command-config FILE`` against a real ``seglog serve``
on a SASL_SSL listener with the ACL authorizer: ``User:admin`` (PLAIN, from the listener's JAAS
text) is a super user; ``alice`` is a SCRAM user added with the CLI before the start. The
connection checks the server's certificate (``ca.pem``) and its host name (``127.0.0.1``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sasl_server import ADMIN_PASSWORD, ALICE_PASSWORD, add_user, sasl_ssl_properties
from sasl_server import seglog as seglog_cli
from tls_certs import Pki
from tls_server import TlsServe, serve_for_fixture

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsServe]:
    data_dir = tmp_path_factory.mktemp("cli-command-config") / "data"
    data_dir.mkdir()
    add_user(data_dir, "alice", ALICE_PASSWORD)
    properties = sasl_ssl_properties(pki) | {
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
    }
    yield from serve_for_fixture(TlsServe(data_dir, properties))


def command_config(tmp_path: Path, pki: Pki, mechanism: str, user: str, password: str) -> Path:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    path = tmp_path / f"{user}-{mechanism}.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={pki.ca}\n"
        "ssl.truststore.type=PEM\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";\n'
        "client.id=ignored-here\n"
        "request.timeout.ms=30000\n"
    )
    return path


def acls(server: TlsServe, config: Path, *args: str) -> tuple[int, str, str]:
    bootstrap = server.bootstrap("SASL_SSL")
    done = seglog_cli(
        server.data_dir.parent / "unused",
        "acls",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(config),
        *args,
    )
    return done.returncode, done.stdout, done.stderr


def test_admin_adds_and_lists_over_plain_then_alice_lists_over_scram(
    server: TlsServe, pki: Pki, tmp_path: Path
) -> None:
    admin = command_config(tmp_path, pki, "PLAIN", "admin", ADMIN_PASSWORD)
    code, _, err = acls(
        server, admin, "--add", "--allow-principal", "User:alice", "--operation", "Read",
        "--topic", "orders",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = acls(
        server, admin, "--add", "--allow-principal", "User:alice", "--operation", "Describe",
        "--cluster",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = acls(server, admin, "--list", "--topic", "orders")
    assert code == 0, err
    assert "User:alice" in out and "READ" in out.upper(), out
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        alice = command_config(tmp_path, pki, mechanism, "alice", ALICE_PASSWORD)
        code, out, err = acls(server, alice, "--list")
        assert code == 0, err
        assert "orders" in out and "CLUSTER" in out.upper(), out


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password_fails_clearly(
    server: TlsServe, pki: Pki, tmp_path: Path, mechanism: str
) -> None:
    user = "admin" if mechanism == "PLAIN" else "alice"
    config = command_config(tmp_path, pki, mechanism, user, "not-the-password")
    code, out, err = acls(server, config, "--list")
    assert code == 1, (out, err)
    assert f"refused the {mechanism} login" in err and "SASL_AUTHENTICATION_FAILED" in err, err
    assert "not-the-password" not in err + out


def test_unknown_setting_is_named(server: TlsServe, pki: Pki, tmp_path: Path) -> None:
    config = command_config(tmp_path, pki, "PLAIN", "admin", ADMIN_PASSWORD)
    config.write_text(config.read_text() + "sasl.login.callback.handler.class=x.Y\n")
    code, _, err = acls(server, config, "--list")
    assert code == 1 and "sasl.login.callback.handler.class" in err, err


def test_plaintext_client_on_the_tls_port_without_command_config_fails(
    server: TlsServe, tmp_path: Path
) -> None:
    done = seglog_cli(
        tmp_path, "acls", "--bootstrap-server", server.bootstrap("SASL_SSL"), "--list"
    )
    assert done.returncode == 1, done.stderr
    assert "seglog: error:" in done.stderr
