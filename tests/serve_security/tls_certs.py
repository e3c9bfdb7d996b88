"""Certificates for the TLS tests, made in the test with ``cryptography`` (no files checked in).

:func:`make_pki` writes into a directory: a CA (``ca.pem``), the server's keystore for
``127.0.0.1`` / ``localhost`` (``server.pem``: key then chain, as ``ssl.keystore.location``
wants; ``server-encrypted.pem`` the same with the key encrypted by :data:`KEY_PASSWORD`), and
client certificates, each as ``<name>.crt`` + ``<name>.key``:

* ``alice``: signed by the CA, subject ``C=US, O=Acme, OU=eng, CN=alice`` (DER order), whose
  Kafka principal is ``User:CN=alice,OU=eng,O=Acme,C=US``;
* ``expired``: signed by the CA, valid from 30 days ago until yesterday;
* ``stranger``: signed by a CA the server does not trust.

That other CA is written too (``other-ca.pem``): a client trusting only it cannot verify the
server.

EC P-256 keys: quick to make, and every client here (OpenSSL underneath) speaks them.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_PASSWORD = "s3cret-key"
ALICE_PRINCIPAL = "User:CN=alice,OU=eng,O=Acme,C=US"


@dataclass(frozen=True)
class Pki:
    """The paths :func:`make_pki` wrote."""

    root: Path

    @property
    def ca(self) -> Path:
        return self.root / "ca.pem"

    @property
    def server_keystore(self) -> Path:
        return self.root / "server.pem"

    @property
    def server_keystore_encrypted(self) -> Path:
        return self.root / "server-encrypted.pem"

    @property
    def other_ca(self) -> Path:
        """The CA that signed ``stranger``, which did not sign the server's certificate."""
        return self.root / "other-ca.pem"

    def cert(self, name: str) -> Path:
        return self.root / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.root / f"{name}.key"


def _name(**parts: str) -> x509.Name:
    oids = {"C": NameOID.COUNTRY_NAME, "O": NameOID.ORGANIZATION_NAME}
    oids |= {"OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "CN": NameOID.COMMON_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in parts.items()])


def issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None = None,
    *,
    ca: bool = False,
    server: bool = False,
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> x509.Certificate:
    """A certificate for ``subject`` signed by ``issuer`` (self-signed when None)."""
    now = dt.datetime.now(dt.UTC)
    issuer_name, issuer_key = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(days=1))
        .not_valid_after(not_after or now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        usage = x509.KeyUsage(
            digital_signature=True,
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            key_cert_sign=True,
            crl_sign=True,
            encipher_only=False,
            decipher_only=False,
        )
        builder = builder.add_extension(usage, critical=True)
    elif server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def make_pki(root: Path) -> Pki:
    """Write the CA, server and client files into ``root`` (see the module docstring)."""
    root.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key, other_ca_key = new_key(), new_key()
    ca_name, other_ca_name = _name(O="seglog tests", CN="test CA"), _name(CN="other CA")
    ca = issue(ca_name, ca_key, ca=True)
    (root / "ca.pem").write_bytes(cert_pem(ca))
    (root / "other-ca.pem").write_bytes(cert_pem(issue(other_ca_name, other_ca_key, ca=True)))
    server_key = new_key()
    server = issue(_name(CN="localhost"), server_key, (ca_name, ca_key), server=True)
    chain = cert_pem(server) + cert_pem(ca)
    (root / "server.pem").write_bytes(key_pem(server_key) + chain)
    (root / "server-encrypted.pem").write_bytes(key_pem(server_key, KEY_PASSWORD) + chain)
    (root / "server.key").write_bytes(key_pem(server_key))
    (root / "server.chain").write_bytes(chain)
    clients = {
        "alice": (_name(C="US", O="Acme", OU="eng", CN="alice"), (ca_name, ca_key), {}),
        "expired": (
            _name(CN="expired"),
            (ca_name, ca_key),
            {"not_before": now - dt.timedelta(days=30), "not_after": now - dt.timedelta(days=1)},
        ),
        "stranger": (_name(CN="stranger"), (other_ca_name, other_ca_key), {}),
    }
    for name, (subject, issuer, validity) in clients.items():
        key = new_key()
        cert = issue(subject, key, issuer, **validity)
        (root / f"{name}.crt").write_bytes(cert_pem(cert))
        (root / f"{name}.key").write_bytes(key_pem(key))
    return Pki(root)
