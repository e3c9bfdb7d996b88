"""``seglog acls --bootstrap-server ... --command-config FILE`` over an SSL listener with
``ssl.client.auth=required`` and the ACL authorizer, the CLI showing alice's certificate with an
**encrypted** private key (PKCS#8, ``-----BEGIN ENCRYPTED PRIVATE KEY-----``):

* ``ssl.keystore.type=PEM`` and ``ssl.keystore.location`` (key then certificate in one file),
  or the inline ``ssl.keystore.key`` / ``ssl.keystore.certificate.chain`` (written over
  backslash-continued lines, as Kafka's documentation shows them) with the inline
  ``ssl.truststore.certificates``;
* ``ssl.key.password`` right (alice, a super user by her certificate's principal, adds and lists
  an ACL), wrong or missing (exit 1, the error names the key password problem and never the
  password; nothing was added, as a later ``--list`` shows; the server still serves).

Without a keystore the server refuses the handshake: the successes prove the key was used."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from tls_certs import ALICE_PRINCIPAL, Pki, key_pem
from tls_server import SRC, TIMEOUT_S, TlsServe, serve_for_fixture, tls_properties

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORD = "alice-key-s3cret"
WRONG = "not-the-key-password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsServe]:
    data_dir = tmp_path_factory.mktemp("cli-client-keys") / "data"
    properties = tls_properties(
        pki,
        client_auth="required",
        **{"authorizer.class.name": AUTHORIZER, "super.users": ALICE_PRINCIPAL},
    )
    yield from serve_for_fixture(TlsServe(data_dir, properties))


def encrypted_key(pki: Pki) -> str:
    """alice's private key as encrypted PKCS#8 PEM (password :data:`PASSWORD`)."""
    key = serialization.load_pem_private_key(pki.key("alice").read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    pem = key_pem(key, PASSWORD).decode()
    assert pem.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    return pem


def continued(pem: str) -> str:
    """PEM as one properties value over several lines (backslash continuations)."""
    return "\\\n    ".join(pem.strip().splitlines())


def file_config(tmp_path: Path, pki: Pki, password: str | None) -> Path:
    keystore = tmp_path / "alice-encrypted.pem"
    keystore.write_text(encrypted_key(pki) + pki.cert("alice").read_text())
    lines = [
        "security.protocol=SSL",
        f"ssl.truststore.location={pki.ca}",
        "ssl.truststore.type=PEM",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={keystore}",
    ]
    return _write(tmp_path / "file.properties", lines, password)


def inline_config(tmp_path: Path, pki: Pki, password: str | None) -> Path:
    lines = [
        "security.protocol=SSL",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.key={continued(encrypted_key(pki))}",
        f"ssl.keystore.certificate.chain={continued(pki.cert('alice').read_text())}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.certificates={continued(pki.ca.read_text())}",
    ]
    return _write(tmp_path / "inline.properties", lines, password)


def _write(path: Path, lines: list[str], password: str | None) -> Path:
    if password is not None:
        lines.append(f"ssl.key.password={password}")
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


CONFIGS = {"location": file_config, "inline": inline_config}


def acls(server: TlsServe, config: Path, *args: str) -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(server.data_dir.parent / "x")]
    command += ["acls", "--bootstrap-server", server.bootstrap("SSL")]
    command += ["--command-config", str(config), *args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, check=False
    )
    return done.returncode, done.stdout, done.stderr


def add(server: TlsServe, config: Path, topic: str) -> tuple[int, str, str]:
    return acls(
        server, config, "--add", "--allow-principal", "User:bob", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip


def listed(server: TlsServe, tmp_path: Path, pki: Pki) -> str:
    """All ACLs, listed by alice with the right key password."""
    code, out, err = acls(server, file_config(tmp_path, pki, PASSWORD), "--list")
    assert code == 0, err
    return out


@pytest.mark.parametrize("form", sorted(CONFIGS))
def test_encrypted_key_with_its_password(
    server: TlsServe, pki: Pki, tmp_path: Path, form: str
) -> None:
    config = CONFIGS[form](tmp_path, pki, PASSWORD)
    code, _, err = add(server, config, f"keyed-{form}")
    assert code == 0, err
    code, out, err = acls(server, config, "--list", "--topic", f"keyed-{form}")
    assert code == 0, err
    assert "User:bob" in out and "READ" in out.upper(), out


@pytest.mark.parametrize("form", sorted(CONFIGS))
@pytest.mark.parametrize(
    ("password", "problem"),
    [
        (WRONG, "wrong ssl.key.password: it does not decrypt the private key"),
        (None, "the private key is encrypted: set ssl.key.password"),
        ("", "the private key is encrypted: set ssl.key.password"),
    ],
    ids=["wrong", "missing", "empty"],
)
def test_a_key_password_problem_is_named(
    server: TlsServe, pki: Pki, tmp_path: Path, form: str, password: str | None, problem: str
) -> None:
    config = CONFIGS[form](tmp_path, pki, password)
    topic = f"never-{form}-{'missing' if password is None else len(password)}"
    code, out, err = add(server, config, topic)
    assert code == 1, (out, err)
    setting = "ssl.keystore.location=" if form == "location" else "ssl.keystore.key"
    assert err.startswith("seglog: error:") and f"{config}: {setting}" in err, err
    assert problem in err, err
    assert WRONG not in err + out and PASSWORD not in err + out
    assert topic not in listed(server, tmp_path, pki)
    assert server.alive()


@pytest.mark.parametrize("who", ["nobody", "stranger"])
def test_a_refused_client_certificate_is_explained(
    server: TlsServe, pki: Pki, tmp_path: Path, who: str
) -> None:
    """No client certificate, or one from a CA the server does not trust: under TLS 1.3 the
    client's handshake completes and the server then refuses it with a TLS alert; the CLI shows
    the alert, says the session was refused and names the keystore settings."""
    lines = ["security.protocol=SSL", f"ssl.truststore.location={pki.ca}"]
    if who == "stranger":
        keystore = tmp_path / "stranger.pem"
        keystore.write_bytes(pki.key("stranger").read_bytes() + pki.cert("stranger").read_bytes())
        lines.append(f"ssl.keystore.location={keystore}")
    config = _write(tmp_path / f"{who}.properties", lines, None)
    code, out, err = add(server, config, f"never-{who}")
    assert code == 1, (out, err)
    assert err.startswith("seglog: error:") and server.bootstrap("SSL") in err, err
    assert "the TLS session was refused" in err and "ssl.keystore.location" in err, err
    # with the server's TLS alert naming the refusal
    assert {"nobody": "alert certificate required", "stranger": "alert unknown ca"}[who] in err
    assert f"never-{who}" not in listed(server, tmp_path, pki)
    assert server.alive()
