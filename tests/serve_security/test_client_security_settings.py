"""``--command-config`` TLS settings refused before any connection, each with an error naming
the setting and the file: a key not matching its certificate, one store given twice (file and
inline), an inline key without its chain, a key password without a key, a non-PEM store type,
and a ``load_cert_chain`` failure that is not about the password (a certificate without key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tls_certs import Pki

from seglog.cli.client_security import ClientSecurity
from seglog.errors import InvalidConfigError


def refused(props: dict[str, str]) -> str:
    with pytest.raises(InvalidConfigError) as caught:
        ClientSecurity.from_properties({"security.protocol": "SSL", **props}, "cmd.properties")
    message = str(caught.value)
    assert message.startswith("cmd.properties: "), message
    return message


def test_a_key_not_matching_its_certificate(pki: Pki, tmp_path: Path) -> None:
    keystore = tmp_path / "mixed.pem"
    keystore.write_bytes(pki.key("stranger").read_bytes() + pki.cert("alice").read_bytes())
    message = refused({"ssl.keystore.location": str(keystore)})
    assert f"ssl.keystore.location={keystore}: the private key does not match" in message


def test_a_certificate_without_its_key(pki: Pki) -> None:
    message = refused({"ssl.keystore.location": str(pki.cert("alice"))})
    assert "cannot load a private key and its certificate chain" in message, message


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"ssl.keystore.location": "k.pem", "ssl.keystore.key": "x"},
            "ssl.keystore.location and ssl.keystore.key name the same store",
        ),
        (
            {"ssl.truststore.location": "ca.pem", "ssl.truststore.certificates": "x"},
            "ssl.truststore.location and ssl.truststore.certificates name the same store",
        ),
        (
            {"ssl.keystore.key": "x"},
            "ssl.keystore.key and ssl.keystore.certificate.chain go together",
        ),
        ({"ssl.key.password": "p"}, "ssl.key.password without a keystore"),
        ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type=JKS is not supported"),
        (
            {"ssl.keystore.key": "not pem", "ssl.keystore.certificate.chain": "not pem"},
            "ssl.keystore.key: no PEM block",
        ),
    ],
)
def test_settings_refused(extra: dict[str, str], expected: str) -> None:
    assert expected in refused(extra)


def test_inline_unencrypted_key_on_one_line(pki: Pki) -> None:
    one_line = {
        "ssl.keystore.key": pki.key("alice").read_text().replace("\n", ""),
        "ssl.keystore.certificate.chain": pki.cert("alice").read_text().replace("\n", " "),
        "ssl.truststore.certificates": pki.ca.read_text(),
    }
    security = ClientSecurity.from_properties(
        {"security.protocol": "SSL", **one_line}, "cmd.properties"
    )
    assert security.ssl_context is not None and security.protocol == "SSL"
    assert security.ssl_context.check_hostname
