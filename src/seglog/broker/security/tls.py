"""TLS for ``SSL`` and ``SASL_SSL`` listeners: Kafka's ``ssl.*`` settings and the server context.

:class:`TlsSettings` reads one listener's settings (``listener.name.<name>.ssl.*`` over
``ssl.*``, see :class:`seglog.broker.server_config.ListenerProperties`) without touching a file;
:func:`server_context` builds the :class:`ssl.SSLContext` from them (it reads the PEM files).

==================================  ===================  ==========================================
key                                 default              meaning
==================================  ===================  ==========================================
ssl.keystore.type                   PEM                  only PEM is read (see below)
ssl.keystore.location               none                 one PEM file: private key + cert chain
ssl.key.password                    none                 the private key's password, if encrypted
ssl.keystore.key                    none                 inline PEM private key (PKCS#8)
ssl.keystore.certificate.chain      none                 inline PEM certificate chain (leaf first)
ssl.truststore.type                 PEM                  only PEM is read
ssl.truststore.location             none                 PEM file: CAs trusted for client certs
ssl.truststore.certificates         none                 the same, inline
ssl.client.auth                     none                 required | requested | none
ssl.enabled.protocols               TLSv1.2,TLSv1.3      the TLS versions accepted
ssl.principal.mapping.rules         DEFAULT              DN -> principal name (``principal_rules``)
==================================  ===================  ==========================================

Decisions, each for a demanding user's safety or clarity:

* ``ssl.keystore.type`` / ``ssl.truststore.type`` default to PEM (Kafka's default is JKS, a Java
  format): seglog reads PEM only, and ``JKS`` or ``PKCS12`` is refused with an error naming the
  key and the conversion to make (``keytool -importkeystore`` to PKCS12, then ``openssl pkcs12
  -nodes``). A keystore file that is not PEM is refused the same way.
* As Kafka, ``ssl.keystore.password`` and ``ssl.truststore.password`` are refused with PEM (only
  the key has a password), a file and inline PEM for the same store are refused together, and an
  inline key needs its chain.
* ``ssl.client.auth=required|requested`` needs a truststore: Kafka would fall back to the JVM's
  public CAs, which would let any certificate a public CA signed name a principal here.
* ``ssl.enabled.protocols`` accepts ``TLSv1.2`` and ``TLSv1.3`` only (older versions are broken);
  ``ssl.cipher.suites`` (Java's cipher names) is refused rather than silently ignored; the
  default OpenSSL suites of those versions are used.
* An encrypted key without ``ssl.key.password`` is an error, never a terminal prompt.
* Inline PEM values may lose their line breaks (one line, or backslash continuations in
  ``server.properties``), as Kafka allows: they are re-wrapped (:func:`normalize_pem`).
"""

from __future__ import annotations

import re
import ssl
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from seglog.broker.security.principal_rules import DEFAULT_RULES, PrincipalRule, parse_rules
from seglog.broker.security.tls_alert import AlertingContext
from seglog.errors import InvalidConfigError
from seglog.storage.private_file import private_file

CLIENT_AUTH = ("required", "requested", "none")
PROTOCOL_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY_MODE = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)
_CONVERT = (
    "convert it to PEM (keytool -importkeystore -deststoretype PKCS12, then openssl pkcs12 "
    "-nodes) and set {key}=PEM"
)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """One listener's TLS settings (see the module docstring); ``keys`` maps each setting to the
    key it was read from (``listener.name.<name>.<key>`` or ``<key>``), for error messages."""

    listener: str
    keystore_location: str | None = None
    key_password: str | None = None
    keystore_key: str | None = None
    keystore_chain: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    principal_rules: tuple[PrincipalRule, ...] = DEFAULT_RULES
    keys: tuple[tuple[str, str], ...] = ()

    def key(self, name: str) -> str:
        return dict(self.keys).get(name, name)

    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, str],
        listener: str,
        key_of: Callable[[str], str] = lambda key: key,
    ) -> TlsSettings:
        """Read and check the settings; raises :class:`InvalidConfigError` naming the key."""

        def get(key: str) -> str | None:
            value = props.get(key)
            return value if value is None or value.strip() else None

        for store in ("keystore", "truststore"):
            type_key = f"ssl.{store}.type"
            kind = (get(type_key) or "PEM").strip().upper()
            if kind != "PEM":
                raise InvalidConfigError(
                    f"{key_of(type_key)}={kind} (listener {listener}): seglog reads PEM only; "
                    + _CONVERT.format(key=key_of(type_key))
                )
            if get(f"ssl.{store}.password") is not None:
                raise InvalidConfigError(
                    f"{key_of(f'ssl.{store}.password')} (listener {listener}): a PEM "
                    f"{store} has no password (only the key has one: ssl.key.password)"
                )
        location, key, chain = (
            get("ssl.keystore.location"),
            get("ssl.keystore.key"),
            get("ssl.keystore.certificate.chain"),
        )
        if location is not None and (key is not None or chain is not None):
            raise InvalidConfigError(
                f"{key_of('ssl.keystore.location')} and {key_of('ssl.keystore.key')} (listener "
                f"{listener}): give the key and chain either in a file or inline, not both"
            )
        if (key is None) != (chain is None):
            raise InvalidConfigError(
                f"{key_of('ssl.keystore.key')} and {key_of('ssl.keystore.certificate.chain')} "
                f"(listener {listener}): an inline key needs its certificate chain and back"
            )
        if location is None and key is None:
            raise InvalidConfigError(
                f"listener {listener} serves TLS but has no certificate: set "
                f"{key_of('ssl.keystore.location')} (a PEM file with the key and the "
                f"certificate chain) or {key_of('ssl.keystore.key')} and "
                f"{key_of('ssl.keystore.certificate.chain')}"
            )
        trust_file, trust_inline = (
            get("ssl.truststore.location"),
            get("ssl.truststore.certificates"),
        )
        if trust_file is not None and trust_inline is not None:
            raise InvalidConfigError(
                f"{key_of('ssl.truststore.location')} and "
                f"{key_of('ssl.truststore.certificates')} (listener {listener}): give one"
            )
        client_auth = (get("ssl.client.auth") or "none").strip().lower()
        if client_auth not in CLIENT_AUTH:
            raise InvalidConfigError(
                f"{key_of('ssl.client.auth')}={client_auth!r} (listener {listener}) is not one "
                f"of {', '.join(CLIENT_AUTH)}"
            )
        if client_auth != "none" and trust_file is None and trust_inline is None:
            raise InvalidConfigError(
                f"{key_of('ssl.client.auth')}={client_auth} (listener {listener}) needs the CAs "
                f"that sign client certificates: set {key_of('ssl.truststore.location')} or "
                f"{key_of('ssl.truststore.certificates')}"
            )
        protocols = tuple(
            p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
        )
        for protocol in protocols:
            if protocol not in PROTOCOL_VERSIONS:
                raise InvalidConfigError(
                    f"{key_of('ssl.enabled.protocols')}: {protocol!r} (listener {listener}) is "
                    f"not served (only {', '.join(PROTOCOL_VERSIONS)})"
                )
        if get("ssl.cipher.suites") is not None:
            raise InvalidConfigError(
                f"{key_of('ssl.cipher.suites')} (listener {listener}): not supported; the "
                "OpenSSL defaults of the enabled TLS versions are used"
            )
        rules = parse_rules(
            get("ssl.principal.mapping.rules"), key_of("ssl.principal.mapping.rules")
        )
        names = (
            "ssl.keystore.location",
            "ssl.keystore.key",
            "ssl.key.password",
            "ssl.truststore.location",
            "ssl.truststore.certificates",
            "ssl.keystore.certificate.chain",
        )
        return cls(
            listener=listener,
            keystore_location=location,
            key_password=props.get("ssl.key.password"),
            keystore_key=key,
            keystore_chain=chain,
            truststore_location=trust_file,
            truststore_certificates=trust_inline,
            client_auth=client_auth,
            protocols=protocols,
            principal_rules=rules,
            keys=tuple((name, key_of(name)) for name in names),
        )


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The server-side :class:`ssl.SSLContext` of a listener; reads the PEM files.

    Raises:
        InvalidConfigError: a file is missing, is not PEM, or holds a key that does not match
            its certificate or cannot be decrypted; the message names the key and the file.
    """
    context = AlertingContext(ssl.PROTOCOL_TLS_SERVER)  # sends a failed handshake's alert
    versions = sorted(PROTOCOL_VERSIONS[p] for p in settings.protocols)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    if settings.keystore_location is not None:
        _load_chain(context, settings, settings.keystore_location, "ssl.keystore.location")
    else:
        assert settings.keystore_key is not None and settings.keystore_chain is not None
        key = normalize_pem(settings.keystore_key, settings.key("ssl.keystore.key"))
        chain = settings.keystore_chain
        chain = normalize_pem(chain, settings.key("ssl.keystore.certificate.chain"))
        with private_file(key + chain, "keystore.pem") as path:  # ssl reads keys from files only
            _load_chain(context, settings, path, "ssl.keystore.key")
    context.verify_mode = _VERIFY_MODE[settings.client_auth]
    if settings.truststore_location is not None:
        key = settings.key("ssl.truststore.location")
        _require_pem(settings.truststore_location, key)
        try:
            context.load_verify_locations(cafile=settings.truststore_location)
        except (ssl.SSLError, OSError) as error:
            raise InvalidConfigError(
                f"{key}={settings.truststore_location}: cannot load the CAs: {error}"
            ) from None
    elif settings.truststore_certificates is not None:
        key = settings.key("ssl.truststore.certificates")
        pem = normalize_pem(settings.truststore_certificates, key)
        try:
            context.load_verify_locations(cadata=pem)
        except (ssl.SSLError, ValueError) as error:
            raise InvalidConfigError(f"{key}: cannot load the CAs: {error}") from None
    return context


def normalize_pem(text: str, key: str) -> str:
    """Inline PEM as OpenSSL reads it: each ``-----BEGIN X-----`` ... ``-----END X-----`` block
    with its base64 re-wrapped at 64 characters on lines of their own. A ``server.properties``
    value written on one line, or joined by backslash continuations, loses its line breaks;
    Kafka accepts such values, so seglog does too.

    Raises:
        InvalidConfigError: ``text`` holds no PEM block (the message names ``key``).
    """
    blocks = []
    for match in _PEM_BLOCK.finditer(text):
        label, body = match.group(1), "".join(match.group(2).split())
        lines = "\n".join(textwrap.wrap(body, 64))
        blocks.append(f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n")
    if not blocks:
        raise InvalidConfigError(f"{key}: no PEM block (-----BEGIN ...----- ... -----END ...-----)")
    return "".join(blocks)


def _require_pem(path: str, key: str) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20)
    except OSError as error:
        raise InvalidConfigError(f"{key}={path}: cannot read it: {error}") from None
    if b"-----BEGIN " not in head:
        raise InvalidConfigError(
            f"{key}={path}: not a PEM file (a JKS or PKCS12 store?); "
            + _CONVERT.format(key=key.replace("location", "type"))
        )


def _load_chain(context: ssl.SSLContext, settings: TlsSettings, path: str, key: str) -> None:
    """Load the key and chain of ``path``; errors name ``key`` (the user's setting)."""
    shown = settings.key(key)
    if key == "ssl.keystore.location":
        _require_pem(path, shown)
        shown = f"{shown}={path}"
    password_key = settings.key("ssl.key.password")

    def password() -> str:
        if settings.key_password is None:
            raise InvalidConfigError(f"{shown}: the private key is encrypted: set {password_key}")
        return settings.key_password

    try:
        context.load_cert_chain(path, password=password)
    except ssl.SSLError as error:
        raise InvalidConfigError(
            f"{shown}: cannot load the private key and certificate chain ({error.reason or error}"
            f"; wrong {password_key}, a key not matching the certificate, or no key?)"
        ) from None
    except OSError as error:
        raise InvalidConfigError(f"{shown}: cannot read it: {error}") from None
