"""Certificates to rotate, the two ways files get replaced, and a raw client that reads the
server's certificate serial.

:class:`Ca` is a CA with its key, so a test can issue a second server certificate from the same
CA (a new serial and expiry) or switch to a new CA. :func:`replace` writes a file as
cert-manager or certbot do (``rename``: a temporary file in the same directory, fsynced, then
renamed over the old one) or as a hand does (``in-place``: truncated and rewritten).
:func:`server_serial` makes a TLS handshake with Python's ``ssl`` and returns the serial of the
certificate the server presented; :class:`OpenTls` keeps such a connection open to use later.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from tls_certs import cert_pem, issue, key_pem, new_key
from tls_clients import FRAME, host_port, read_frame

HOW = ("rename", "in-place")


def name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class Ca:
    """A CA whose key is kept, to issue certificates."""

    common_name: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=new_key)

    def __post_init__(self) -> None:
        self.cert = issue(name(self.common_name), self.key, ca=True)

    @property
    def pem(self) -> bytes:
        return cert_pem(self.cert)

    def server(self, days: int = 30) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """A key and a certificate for ``localhost`` / ``127.0.0.1`` valid for ``days``."""
        key = new_key()
        not_after = dt.datetime.now(dt.UTC) + dt.timedelta(days=days)
        issuer = (name(self.common_name), self.key)
        return key, issue(name("localhost"), key, issuer, server=True, not_after=not_after)

    def keystore(self, days: int = 30) -> tuple[bytes, x509.Certificate]:
        """A server keystore (key, then chain) and its leaf certificate."""
        key, cert = self.server(days)
        return key_pem(key) + cert_pem(cert) + self.pem, cert

    def client(self, root: Path, common_name: str) -> tuple[Path, Path]:
        """A client certificate and key written to ``root`` (``<cn>.crt``, ``<cn>.key``)."""
        key = new_key()
        cert = issue(name(common_name), key, (name(self.common_name), self.key))
        (root / f"{common_name}.crt").write_bytes(cert_pem(cert))
        (root / f"{common_name}.key").write_bytes(key_pem(key))
        return root / f"{common_name}.crt", root / f"{common_name}.key"


def replace(path: Path, data: bytes, how: str) -> None:
    """Write ``data`` as ``path``'s new content, by atomic rename or in place (see above)."""
    if how == "rename":
        temporary = path.with_name(f".{path.name}.new")
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    elif how == "in-place":
        with path.open("r+b") as handle:
            handle.truncate(0)
            handle.write(data)
    else:
        raise ValueError(how)


def client_context(cafile: Path, identity: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cafile))
    if identity is not None:
        context.load_cert_chain(str(identity[0]), str(identity[1]))
    return context


class OpenTls:
    """A TLS connection to the server, kept open: :meth:`api_versions` sends a request on it."""

    def __init__(
        self, address: str, cafile: Path, identity: tuple[Path, Path] | None = None
    ) -> None:
        raw = socket.create_connection(host_port(address), timeout=30)
        self.sock = client_context(cafile, identity).wrap_socket(raw, server_hostname="127.0.0.1")

    @property
    def serial(self) -> int:
        der = self.sock.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def api_versions(self) -> bytes:
        self.sock.sendall(FRAME)
        return read_frame(self.sock)

    def close(self) -> None:
        self.sock.close()


def server_serial(address: str, cafile: Path, identity: tuple[Path, Path] | None = None) -> int:
    """The serial of the certificate the server presents to a new connection, which must
    also answer ApiVersions (a full Kafka exchange, not just a handshake)."""
    connection = OpenTls(address, cafile, identity)
    try:
        assert connection.api_versions()[:4] == (7).to_bytes(4, "big")  # correlation id
        return connection.serial
    finally:
        connection.close()
