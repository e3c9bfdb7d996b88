"""Listener, TLS and principal settings, checked without a server.

* ``listeners`` / ``listener.security.protocol.map`` as Kafka reads them (names upper-cased,
  Kafka's default map, a custom map replacing it), ``listener.name.<name>.<key>`` overrides;
* the safe-defaults rule for unencrypted listeners reachable from other hosts;
* every refused TLS setting names its key (and the file, for files);
* the principal's distinguished name equals ``cryptography``'s RFC 4514 text of the subject
  (the same text as Java's RFC 2253 ``X500Principal.getName()`` for these attributes),
  escapes, non-string attribute types and multi-valued RDNs included.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID
from tls_certs import ALICE_PRINCIPAL, KEY_PASSWORD, Pki, issue, new_key

from seglog.broker.security.principal import principal_of_certificate, subject_dn
from seglog.broker.security.tls import TlsSettings, server_context
from seglog.broker.server_config import Listener, ServerConfig, listener_properties
from seglog.errors import InvalidCertificateError, InvalidConfigError


def test_listeners_with_the_default_and_a_custom_protocol_map() -> None:
    config = ServerConfig.from_properties(
        {"listeners": "plaintext://127.0.0.1:0,SASL_PLAINTEXT://localhost:9094"}
    )
    assert config.listeners == (
        Listener("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"),
        Listener("SASL_PLAINTEXT", "localhost", 9094, "SASL_PLAINTEXT"),
    )
    custom = {"listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENTS:SASL_PLAINTEXT"}
    config = ServerConfig.from_properties(
        custom | {"listeners": "INTERNAL://[::1]:9092,clients://127.0.0.1:9093"}
    )
    assert [(x.name, x.host, x.security_protocol) for x in config.listeners] == [
        ("INTERNAL", "::1", "PLAINTEXT"),
        ("CLIENTS", "127.0.0.1", "SASL_PLAINTEXT"),
    ]
    with pytest.raises(InvalidConfigError, match="listener PLAINTEXT has no security protocol"):
        ServerConfig.from_properties(custom | {"listeners": "PLAINTEXT://127.0.0.1:1"})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listener.security.protocol.map": "A:TLS"}, "'TLS' is not one of"),
        ({"listener.security.protocol.map": "A"}, "is not NAME:PROTOCOL"),
        ({"listener.security.protocol.map": "A:SSL,a:SSL"}, "A is mapped twice"),
        ({"listeners": "PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2"}, "twice"),
        ({"listeners": "PLAINTEXT://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:1"}, "same host"),
        ({"advertised.listeners": "SSL://h:1"}, "names no listener"),
    ],
)
def test_bad_listener_settings_are_refused(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        ServerConfig.from_properties(props)


def test_listener_name_overrides_win_key_by_key() -> None:
    props = {"ssl.client.auth": "none", "listener.name.mtls.ssl.client.auth": "required"}
    props["ssl.keystore.location"] = "/a.pem"
    seen = listener_properties(props, "MTLS")
    assert (seen["ssl.client.auth"], seen["ssl.keystore.location"]) == ("required", "/a.pem")
    assert seen.key_of("ssl.client.auth") == "listener.name.mtls.ssl.client.auth"
    assert seen.key_of("ssl.keystore.location") == "ssl.keystore.location"
    assert listener_properties(props, "SSL")["ssl.client.auth"] == "none"


@pytest.mark.parametrize(
    "listeners",
    ["PLAINTEXT://:9092", "PLAINTEXT://0.0.0.0:9092", "SASL_PLAINTEXT://[::]:1", "PLAINTEXT://h:1"],
)
def test_unencrypted_listener_off_loopback_needs_an_authorizer_or_an_explicit_setting(
    listeners: str,
) -> None:
    with pytest.raises(InvalidConfigError, match=r"seglog.allow.insecure.listeners=true"):
        ServerConfig.from_properties({"listeners": listeners})
    allowed = ServerConfig.from_properties(
        {"listeners": listeners, "seglog.allow.insecure.listeners": "true"}
    )
    assert allowed.insecure_listeners == allowed.listeners
    with_acls = ServerConfig.from_properties(
        {"listeners": listeners, "authorizer.class.name": "seglog.broker.acl.AclAuthorizer"}
    )
    assert with_acls.insecure_listeners == with_acls.listeners  # still warned: not encrypted


def test_loopback_and_encrypted_listeners_need_no_setting(pki: Pki) -> None:
    listeners = "PLAINTEXT://127.0.0.1:0,A://localhost:0,B://[::1]:0,SSL://:0,SASL_SSL://h:0"
    config = ServerConfig.from_properties(
        {
            "listeners": listeners,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,A:PLAINTEXT,B:SASL_PLAINTEXT,"
            "SSL:SSL,SASL_SSL:SASL_SSL",
            "ssl.keystore.location": str(pki.server_keystore),
        }
    )
    assert config.insecure_listeners == ()
    assert sorted(config.tls) == ["SASL_SSL", "SSL"]


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, r"ssl.keystore.type=JKS \(listener SSL\): seglog reads PEM"),
        ({"listener.name.ssl.ssl.truststore.type": "PKCS12"}, "listener.name.ssl.ssl.truststore"),
        ({"ssl.keystore.password": "x"}, "ssl.keystore.password .*has no password"),
        ({"ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c"}, "not both"),
        ({"ssl.client.auth": "required"}, "needs the CAs"),
        ({"ssl.client.auth": "want"}, "is not one of required, requested, none"),
        ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "'TLSv1.1'.*not served"),
        ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"),
        ({"ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1"}, "is not DEFAULT or RULE"),
    ],
)
def test_refused_tls_settings_name_their_key(props: dict[str, str], message: str) -> None:
    base = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/k.pem"}
    with pytest.raises(InvalidConfigError, match=message):
        ServerConfig.from_properties(base | props)


def test_an_ssl_listener_without_a_certificate_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="listener SSL serves TLS but has no certif"):
        ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0"})
    with pytest.raises(InvalidConfigError, match="needs its certificate chain"):
        ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.key": "k"})


def test_server_context_loads_pem_files_and_inline_pem(pki: Pki) -> None:
    plain = TlsSettings.from_properties({"ssl.keystore.location": str(pki.server_keystore)}, "SSL")
    assert server_context(plain).verify_mode.name == "CERT_NONE"
    encrypted = {
        "ssl.keystore.location": str(pki.server_keystore_encrypted),
        "ssl.key.password": KEY_PASSWORD,
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "requested",
    }
    assert server_context(TlsSettings.from_properties(encrypted, "SSL")).verify_mode.name == (
        "CERT_OPTIONAL"
    )
    inline = {
        "ssl.keystore.key": (pki.root / "server.key").read_text(),
        "ssl.keystore.certificate.chain": (pki.root / "server.chain").read_text(),
        "ssl.truststore.certificates": pki.ca.read_text(),
        "ssl.client.auth": "required",
        "ssl.enabled.protocols": "TLSv1.3",
    }
    context = server_context(TlsSettings.from_properties(inline, "SSL"))
    assert context.verify_mode.name == "CERT_REQUIRED"
    assert context.minimum_version.name == context.maximum_version.name == "TLSv1_3"


def test_server_context_errors_name_the_key_and_file(pki: Pki, tmp_path: Path) -> None:
    def context_of(props: dict[str, str]) -> None:
        seen = listener_properties(props, "SSL")
        server_context(TlsSettings.from_properties(seen, "SSL", seen.key_of))

    jks = tmp_path / "server.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02binary keystore")
    with pytest.raises(InvalidConfigError, match=f"ssl.keystore.location={jks}: not a PEM file"):
        context_of({"ssl.keystore.location": str(jks)})
    missing = tmp_path / "missing.pem"
    with pytest.raises(InvalidConfigError, match=r"listener.name.ssl.ssl.keystore.location=.*"):
        context_of({"listener.name.ssl.ssl.keystore.location": str(missing)})
    encrypted = str(pki.server_keystore_encrypted)
    with pytest.raises(InvalidConfigError, match=r"encrypted: set ssl.key.password"):
        context_of({"ssl.keystore.location": encrypted})
    with pytest.raises(InvalidConfigError, match=r"wrong ssl.key.password"):
        context_of({"ssl.keystore.location": encrypted, "ssl.key.password": "wrong"})
    key_only = tmp_path / "key-only.pem"
    key_only.write_text((pki.root / "server.key").read_text())
    with pytest.raises(InvalidConfigError, match="cannot load the private key and certificate"):
        context_of({"ssl.keystore.location": str(key_only)})
    with pytest.raises(InvalidConfigError, match=r"ssl.truststore.certificates: no PEM block"):
        context_of(
            {"ssl.keystore.location": str(pki.server_keystore), "ssl.truststore.certificates": "x"}
        )


def _der(subject: x509.Name) -> tuple[bytes, x509.Certificate]:
    cert = issue(subject, new_key())
    return cert.public_bytes(serialization.Encoding.DER), cert


@pytest.mark.parametrize(
    "attributes",
    [
        [
            (NameOID.COUNTRY_NAME, "US"),
            (NameOID.ORGANIZATION_NAME, "Acme"),
            (NameOID.COMMON_NAME, "bob"),
        ],
        [(NameOID.COMMON_NAME, 'Smith, John + "Jr" <x>;\\y')],
        [(NameOID.COMMON_NAME, "#leading"), (NameOID.ORGANIZATIONAL_UNIT_NAME, " both ends ")],
        [
            (NameOID.DOMAIN_COMPONENT, "com"),
            (NameOID.DOMAIN_COMPONENT, "example"),
            (NameOID.USER_ID, "u1"),
        ],
        [
            (NameOID.LOCALITY_NAME, "Zürich"),
            (NameOID.STATE_OR_PROVINCE_NAME, "ZH"),
            (NameOID.STREET_ADDRESS, "Bahnhofstr. 1"),
        ],
    ],
)
def test_subject_dn_matches_the_rfc_text_of_the_subject(
    attributes: list[tuple[x509.ObjectIdentifier, str]],
) -> None:
    der, cert = _der(x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes]))
    assert subject_dn(der) == cert.subject.rfc4514_string()


def test_types_java_does_not_name_are_dotted_oids_with_hex_der_values() -> None:
    """Java's RFC 2253 text (and so Kafka's principal) writes emailAddress and serialNumber as
    ``OID=#<DER of the value>``: IA5String (0x16) and PrintableString (0x13) here."""
    der, _ = _der(
        x509.Name(
            [
                x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@example.com"),
                x509.NameAttribute(NameOID.SERIAL_NUMBER, "42"),
                x509.NameAttribute(NameOID.COMMON_NAME, "mail"),
            ]
        )
    )
    email = "#16" + "0d" + b"a@example.com".hex()
    assert subject_dn(der) == f"CN=mail,2.5.4.5=#13023432,1.2.840.113549.1.9.1={email}"


def test_multi_valued_rdn_and_the_kafka_principal(pki: Pki) -> None:
    rdn = x509.RelativeDistinguishedName(
        [x509.NameAttribute(NameOID.COMMON_NAME, "x"), x509.NameAttribute(NameOID.USER_ID, "7")]
    )
    der, cert = _der(
        x509.Name(
            [x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COUNTRY_NAME, "DE")]), rdn]
        )
    )
    assert subject_dn(der) == cert.subject.rfc4514_string()
    assert "+" in subject_dn(der)
    alice = x509.load_pem_x509_certificate(pki.cert("alice").read_bytes())
    assert (
        principal_of_certificate(alice.public_bytes(serialization.Encoding.DER)) == ALICE_PRINCIPAL
    )
    assert principal_of_certificate(None) is None and principal_of_certificate(b"") is None


def test_a_certificate_that_does_not_parse_raises_a_typed_error() -> None:
    der, _ = _der(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cut")]))
    for broken in (der[:40], b"\x31\x03abc", der[:1] + b"\x85" + der[2:]):
        with pytest.raises(InvalidCertificateError):
            subject_dn(broken)


def test_inline_pem_without_line_breaks_is_accepted(pki: Pki) -> None:
    """As Kafka: a PEM value on one line (or joined by properties continuations) loads."""

    def one_line(path: Path) -> str:
        return " ".join(path.read_text().split("\n"))

    inline = {
        "ssl.keystore.key": one_line(pki.root / "server.key"),
        "ssl.keystore.certificate.chain": one_line(pki.root / "server.chain"),
        "ssl.truststore.certificates": one_line(pki.ca),
        "ssl.client.auth": "required",
    }
    assert "\n" not in inline["ssl.keystore.certificate.chain"]
    context = server_context(TlsSettings.from_properties(inline, "SSL"))
    assert context.verify_mode.name == "CERT_REQUIRED"
    with pytest.raises(InvalidConfigError, match=r"ssl.keystore.key: no PEM block"):
        server_context(TlsSettings.from_properties(inline | {"ssl.keystore.key": "MIIE"}, "SSL"))


def test_sasl_ssl_asks_for_certificates_only_when_its_own_setting_says_so(pki: Pki) -> None:
    """Kafka's KIP-684: a broker-wide ``ssl.client.auth`` applies to SSL listeners only."""
    props = {
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "required",
    }
    config = ServerConfig.from_properties(props)
    assert (config.tls["SSL"].client_auth, config.tls["SASL_SSL"].client_auth) == (
        "required",
        "none",
    )
    prefixed = props | {"listener.name.sasl_ssl.ssl.client.auth": "requested"}
    assert ServerConfig.from_properties(prefixed).tls["SASL_SSL"].client_auth == "requested"
