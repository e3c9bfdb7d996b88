"""Inline PEM in a real ``server.properties``, written as Kafka's documentation shows it: one
value continued over many lines with trailing backslashes (the properties format joins them,
losing the line breaks). ``seglog serve`` reads the key, chain and CAs and serves over TLS."""

from __future__ import annotations

import struct
from pathlib import Path

from tls_certs import Pki
from tls_clients import kafka_response_over_tls
from tls_server import TlsFactory


def continued(path: Path) -> str:
    """The file's PEM as one properties value over several lines (backslash continuations)."""
    return "\\\n    ".join(path.read_text().strip().splitlines())


def test_inline_pem_with_continuation_lines(pki: Pki, tls_serve: TlsFactory) -> None:
    server = tls_serve(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": continued(pki.root / "server.key"),
            "ssl.keystore.certificate.chain": continued(pki.root / "server.chain"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": continued(pki.ca),
            "ssl.client.auth": "required",
        }
    )
    assert "\\\n    MI" in server.config_path.read_text()  # really continued lines
    response = kafka_response_over_tls(server.bootstrap("SSL"), pki, "alice")
    assert struct.unpack(">ih", response[:6]) == (7, 0)
