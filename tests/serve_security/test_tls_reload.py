"""Certificates rotated on disk under a running ``seglog serve``, seen by real clients.

Each test starts a real server with ``seglog.ssl.reload.check.ms=100``, replaces its PEM files
(by atomic rename as cert-manager and certbot do, or rewritten in place) and polls with a
deadline until new connections see the change: the serial of the certificate a raw Python TLS
client is shown, then a record written by confluent-kafka and read back by kafka-python.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tls_certs import Pki
from tls_clients import produce_over_ssl, read_over_ssl
from tls_rotation import HOW, Ca, OpenTls, replace, server_serial
from tls_server import TlsFactory, TlsServe

DEADLINE_S = 30.0
REFUSED = (ssl.SSLError, EOFError, ConnectionError)


class Files:
    """The server's files in ``root``: ``ca.pem`` (the server's CA, what clients trust),
    ``server.pem`` (its keystore) and ``clients-ca.pem`` (its truststore)."""

    def __init__(self, root: Path, clients_ca: Ca | None = None) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.ca = root, Ca("server CA")
        self.clients_ca = clients_ca or self.ca
        self.ca_path, self.keystore = root / "ca.pem", root / "server.pem"
        self.truststore = root / "clients-ca.pem"
        self.ca_path.write_bytes(self.ca.pem)
        data, self.cert = self.ca.keystore()
        self.keystore.write_bytes(data)
        self.truststore.write_bytes(self.clients_ca.pem)

    def properties(self, check_ms: int = 100, client_auth: str = "none") -> dict[str, str]:
        return {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.location": str(self.truststore),
            "ssl.client.auth": client_auth,
            "seglog.ssl.reload.check.ms": str(check_ms),
        }


def until(condition: Callable[[], bool], what: str, server: TlsServe) -> None:
    """Poll ``condition`` until it holds; fail after :data:`DEADLINE_S`."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE_S} s\n{server.log_tail()}")
        time.sleep(0.05)


def connects(address: str, cafile: Path, identity: tuple[Path, Path] | None = None) -> bool:
    try:
        server_serial(address, cafile, identity)
    except REFUSED:
        return False
    return True


def _log_lines(server: TlsServe, text: str) -> list[str]:
    return [line for line in server.log().splitlines() if text in line]


@pytest.mark.parametrize("how", HOW)
def test_rotated_server_certificate_for_new_connections_only(
    tmp_path: Path, tls_serve: TlsFactory, how: str
) -> None:
    files = Files(tmp_path / "pki")
    server = tls_serve(files.properties())
    address = server.bootstrap("SSL")
    before = OpenTls(address, files.ca_path)
    try:
        assert before.serial == files.cert.serial_number
        before.api_versions()
        data, cert = files.ca.keystore(days=90)  # same CA: a new serial and expiry
        replace(files.keystore, data, how)
        until(
            lambda: server_serial(address, files.ca_path) == cert.serial_number,
            "the new certificate",
            server,
        )
        pki = Pki(files.root)  # clients trust ca.pem, which did not change
        pairs = [(b"k", b"after rotation")]
        produce_over_ssl("confluent", "", address, pki, None, "rotated", pairs)
        assert read_over_ssl("kafka-python", "", address, pki, None, "rotated") == [
            (0, b"k", b"after rotation")
        ]
        # the connection made before keeps its certificate and goes on working
        assert before.api_versions()[:4] == (7).to_bytes(4, "big")
        assert before.serial == files.cert.serial_number
    finally:
        before.close()
    (line,) = _log_lines(server, "reloaded TLS certificates")
    after = cert.not_valid_after_utc.strftime("%Y-%m-%d %H:%M:%S")
    assert (
        f"reloaded TLS certificates of SSL://{address}: subject CN=localhost, "
        f"serial {cert.serial_number:x}, not after {after} UTC"
    ) in line


@pytest.mark.parametrize("how", HOW)
def test_rotated_truststore_trusts_the_new_clients_ca_only(
    tmp_path: Path, tls_serve: TlsFactory, how: str
) -> None:
    old_ca, new_ca = Ca("clients CA 1"), Ca("clients CA 2")
    files = Files(tmp_path / "pki", old_ca)
    alice, bob = old_ca.client(files.root, "alice"), new_ca.client(files.root, "bob")
    server = tls_serve(files.properties(client_auth="required"))
    address = server.bootstrap("SSL")
    assert not connects(address, files.ca_path, bob)
    before = OpenTls(address, files.ca_path, alice)
    try:
        before.api_versions()
        replace(files.truststore, new_ca.pem, how)
        until(lambda: connects(address, files.ca_path, bob), "bob trusted", server)
        with pytest.raises(REFUSED):
            server_serial(address, files.ca_path, alice)
        pki = Pki(files.root)
        produce_over_ssl("confluent", "", address, pki, "bob", "trusted", [(b"k", b"bob")])
        assert read_over_ssl("kafka-python", "", address, pki, "bob", "trusted") == [
            (0, b"k", b"bob")
        ]
        assert before.api_versions()[:4] == (7).to_bytes(4, "big")  # alice's open connection
    finally:
        before.close()


@pytest.mark.parametrize("how", HOW)
def test_broken_keystore_keeps_the_old_one_warns_once_then_takes_a_good_one(
    tmp_path: Path, tls_serve: TlsFactory, how: str
) -> None:
    files = Files(tmp_path / "pki")
    server = tls_serve(files.properties())
    address = server.bootstrap("SSL")
    old_serial = files.cert.serial_number
    # a half-rotated pair: the new key written, the certificate still the old one
    key_pem_end = b"-----END PRIVATE KEY-----\n"
    new_data, new_cert = files.ca.keystore()
    new_key = new_data[: new_data.index(key_pem_end) + len(key_pem_end)]
    old_chain = files.keystore.read_bytes().split(key_pem_end, 1)[1]
    replace(files.keystore, new_key + old_chain, how)

    def warned() -> bool:
        assert server_serial(address, files.ca_path) == old_serial  # accepts drive the checks
        return bool(_log_lines(server, "not reloaded"))

    until(warned, "the warning", server)
    # more checks come and go (five intervals of connections): the old certificate stays
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        assert server_serial(address, files.ca_path) == old_serial
    (warning,) = _log_lines(server, "not reloaded")
    assert "WARNING" in warning and f"SSL://{address}" in warning
    assert f"ssl.keystore.location={files.keystore}" in warning
    assert "KEY_VALUES_MISMATCH" in warning
    replace(files.keystore, new_data, how)
    until(
        lambda: server_serial(address, files.ca_path) == new_cert.serial_number,
        "the good keystore",
        server,
    )
    assert len(_log_lines(server, "not reloaded")) == 1
    assert len(_log_lines(server, "reloaded TLS certificates of")) == 1


def test_reload_disabled_by_zero(tmp_path: Path, tls_serve: TlsFactory) -> None:
    """Two servers rotated alike: the one checking every 100 ms shows the time was enough."""
    fixed, checking = Files(tmp_path / "fixed"), Files(tmp_path / "checking")
    fixed_server = tls_serve(fixed.properties(check_ms=0))
    checking_server = tls_serve(checking.properties())
    for files in (fixed, checking):
        data, files.cert = files.ca.keystore(days=90)
        replace(files.keystore, data, "rename")
    fixed_address = fixed_server.bootstrap("SSL")
    checking_address = checking_server.bootstrap("SSL")

    def rotated() -> bool:
        server_serial(fixed_address, fixed.ca_path)  # accepts drive the checks, if any
        return server_serial(checking_address, checking.ca_path) == checking.cert.serial_number

    until(rotated, "the checking server's rotation", checking_server)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        assert server_serial(fixed_address, fixed.ca_path) != fixed.cert.serial_number
    assert not _log_lines(fixed_server, "reloaded")
