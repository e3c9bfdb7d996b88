"""``--command-config FILE``: the security settings of the CLI's broker connection.

The file is a Java properties file, as ``kafka-acls.sh --command-config`` and
``kafka-transactions.sh --command-config`` read it. Settings read::

    security.protocol                       PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
    ssl.truststore.location                 PEM file of the CA certificates (default: the
                                            system's trusted CAs)
    ssl.truststore.certificates             the same CAs, inline PEM
    ssl.truststore.type / ssl.keystore.type PEM or absent (nothing else is read)
    ssl.keystore.location                   PEM file: client private key + certificate chain
    ssl.keystore.key                        the client private key, inline PEM (PKCS#8)
    ssl.keystore.certificate.chain          its certificate chain, inline PEM (leaf first)
    ssl.key.password                        the key's password, if it is encrypted
    ssl.endpoint.identification.algorithm   https (default: check the server's host name) or
                                            empty (do not)
    sasl.mechanism                          PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512
    sasl.jaas.config                        '<LoginModule> required username="u" password="p";'

Keys that tune a Kafka client's retries, timeouts, buffers or identity (:data:`IGNORED`, e.g.
``client.id``, ``request.timeout.ms``) are accepted and ignored: files written for
``kafka-acls.sh`` commonly carry them and they change nothing for one blocking request at a
time. Any other key, or a value seglog does not support, raises
:class:`~seglog.errors.InvalidConfigError` naming the key and the file: a security setting
silently dropped could send a password in clear.

Keys and certificates, as Kafka's clients read them: one store is given either as a file or
inline, never both; an inline key needs its chain and back. Inline PEM may have lost its line
breaks (one properties line, or backslash continuations) and is re-wrapped. An encrypted key
(``-----BEGIN ENCRYPTED PRIVATE KEY-----``) is decrypted with ``ssl.key.password``; without
one (or with an empty one) the error says the key is encrypted, never a terminal prompt, and a
password that does not decrypt it is named as wrong (the password itself is never shown).
"""

from __future__ import annotations

import argparse
import ssl
from dataclasses import dataclass
from pathlib import Path

from seglog.broker.security.plain import parse_jaas_options
from seglog.broker.security.scram import SCRAM_MECHANISMS
from seglog.broker.security.tls import normalize_pem
from seglog.errors import InvalidConfigError
from seglog.format.properties import parse_properties
from seglog.storage.private_file import private_file

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
READ = {
    "security.protocol",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.type",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "sasl.mechanism",
    "sasl.jaas.config",
}
IGNORED = {
    "client.id",
    "request.timeout.ms",
    "default.api.timeout.ms",
    "retries",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "connections.max.idle.ms",
    "metadata.max.age.ms",
    "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms",
    "send.buffer.bytes",
    "receive.buffer.bytes",
    "client.dns.lookup",
}


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How to secure one connection: TLS (``ssl_context``) and SASL (``mechanism`` with
    ``username``/``password``), each None when not used. ``repr`` never shows the password."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    def __repr__(self) -> str:
        return f"ClientSecurity({self.protocol}, mechanism={self.mechanism}, user={self.username})"

    @classmethod
    def from_file(cls, path: str | Path) -> ClientSecurity:
        """Read a ``--command-config`` file (see the module docstring)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidConfigError(
                f"--command-config {path}: {error.strerror or error}"
            ) from None
        return cls.from_properties(parse_properties(text, path=str(path)), str(path))

    @classmethod
    def from_properties(cls, props: dict[str, str], where: str) -> ClientSecurity:
        for key in props:
            if key not in READ and key not in IGNORED:
                raise InvalidConfigError(
                    f"{where}: {key} is not a setting seglog's CLI reads (it reads "
                    f"{', '.join(sorted(READ))})"
                )
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise InvalidConfigError(
                f"{where}: security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}"
            )
        context = _ssl_context(props, where) if protocol.endswith("SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = props.get("sasl.mechanism", "PLAIN").strip()
        if mechanism not in MECHANISMS:
            raise InvalidConfigError(
                f"{where}: sasl.mechanism={mechanism} is not one of {', '.join(MECHANISMS)}"
            )
        if "sasl.jaas.config" not in props:
            raise InvalidConfigError(f"{where}: {protocol} needs sasl.jaas.config")
        options = parse_jaas_options(props["sasl.jaas.config"], f"{where}: sasl.jaas.config")
        if "username" not in options or "password" not in options:
            raise InvalidConfigError(f"{where}: sasl.jaas.config needs username and password")
        return cls(protocol, context, mechanism, options["username"], options["password"])


def _ssl_context(props: dict[str, str], where: str) -> ssl.SSLContext:
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        if props.get(key, "PEM").strip().upper() != "PEM":
            raise InvalidConfigError(
                f"{where}: {key}={props[key]} is not supported; only PEM files are read"
            )
    for one, other in (
        ("ssl.truststore.location", "ssl.truststore.certificates"),
        ("ssl.keystore.location", "ssl.keystore.key"),
        ("ssl.keystore.location", "ssl.keystore.certificate.chain"),
    ):
        if one in props and other in props:
            raise InvalidConfigError(f"{where}: {one} and {other} name the same store: keep one")
    if ("ssl.keystore.key" in props) != ("ssl.keystore.certificate.chain" in props):
        raise InvalidConfigError(
            f"{where}: ssl.keystore.key and ssl.keystore.certificate.chain go together"
        )
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise InvalidConfigError(
            f"{where}: ssl.endpoint.identification.algorithm={algorithm} is not https or empty"
        )
    context.check_hostname = algorithm == "https"
    _load_truststore(context, props, where)
    if "ssl.keystore.location" in props:
        _load_keystore(context, props["ssl.keystore.location"], props, where)
    elif "ssl.keystore.key" in props:
        key = normalize_pem(props["ssl.keystore.key"], f"{where}: ssl.keystore.key")
        chain = props["ssl.keystore.certificate.chain"]
        chain = normalize_pem(chain, f"{where}: ssl.keystore.certificate.chain")
        with private_file(key + chain, "keystore.pem") as path:  # ssl reads keys from files only
            _load_keystore(context, path, props, where)
    elif "ssl.key.password" in props:
        raise InvalidConfigError(f"{where}: ssl.key.password without a keystore")
    return context


def _load_truststore(context: ssl.SSLContext, props: dict[str, str], where: str) -> None:
    location = "ssl.truststore.location" in props
    key = "ssl.truststore.location" if location else "ssl.truststore.certificates"
    if key not in props:
        return  # the system's trusted CAs
    try:
        if location:
            context.load_verify_locations(cafile=props[key])
        else:
            context.load_verify_locations(cadata=normalize_pem(props[key], f"{where}: {key}"))
    except (OSError, ssl.SSLError, ValueError) as error:
        raise InvalidConfigError(f"{where}: {key}: {error}") from None


def _load_keystore(context: ssl.SSLContext, path: str, props: dict[str, str], where: str) -> None:
    """Load the client key and chain from ``path``; errors name the user's setting and say
    whether the key is encrypted (see the module docstring)."""
    location = props.get("ssl.keystore.location")
    shown = f"{where}: " + (f"ssl.keystore.location={location}" if location else "ssl.keystore.key")
    given = props.get("ssl.key.password", "")
    asked: list[bool] = []

    def password() -> str:
        asked.append(True)
        if not given:
            raise InvalidConfigError(f"{shown}: the private key is encrypted: set ssl.key.password")
        return given

    try:
        context.load_cert_chain(path, password=password)
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            problem = "the private key does not match the certificate"
        elif asked:
            problem = "wrong ssl.key.password: it does not decrypt the private key"
        else:
            problem = (
                f"cannot load a private key and its certificate chain ({error.reason or error}"
                "; the PEM needs both)"
            )
        raise InvalidConfigError(f"{shown}: {problem}") from None
    except OSError as error:
        raise InvalidConfigError(f"{shown}: {error.strerror or error}") from None


def security_of(args: argparse.Namespace) -> ClientSecurity:
    """The ``--command-config`` file's settings (PLAINTEXT without one)."""
    path = getattr(args, "command_config", None)
    return ClientSecurity() if path is None else ClientSecurity.from_file(path)
