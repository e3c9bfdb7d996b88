"""What an SSL listener refuses, and that refusing never hurts the server or other clients.

Under ``ssl.client.auth=required``: an expired client certificate, one signed by a CA the
server does not trust, and no certificate at all are refused during the TLS handshake, before
any request reaches a handler; a plaintext Kafka client on the TLS port gets no Kafka response
either. In every case nothing is written (the topic the client tried to produce to does not
exist afterwards), the server stays up, and a good client is served right after on both
listeners.

The refused client sees its connection closed (asyncio's TLS layer drops the connection without
sending the TLS alert Kafka's JVM would send): librdkafka reports a transport failure, a raw
client an ``ssl.SSLError`` or end of stream, never a Kafka response.
"""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess

import pytest
from tls_certs import Pki
from tls_clients import (
    FRAME,
    host_port,
    kafka_response_over_tls,
    librdkafka_ssl,
    produce_over_ssl,
    read_frame,
    read_over_ssl,
)
from tls_server import TlsFactory, TlsServe, tls_properties


def assert_served(server: TlsServe, pki: Pki) -> None:
    """The server is up and serves a good client on the SSL and the PLAINTEXT listeners."""
    assert server.alive(), server.log_tail()
    response = kafka_response_over_tls(server.bootstrap("SSL"), pki, "alice")
    assert struct.unpack(">ih", response[:6]) == (7, 0)  # correlation id, error NONE
    with socket.create_connection(host_port(server.bootstrap("PLAINTEXT")), timeout=30) as raw:
        raw.sendall(FRAME)
        assert struct.unpack(">ih", read_frame(raw)[:6]) == (7, 0)


def assert_topic_absent(server: TlsServe, kcat: str, topic: str) -> None:
    """No partition directory of ``topic`` on disk, and no such topic in the metadata of all
    topics (a metadata request for all topics creates none)."""
    assert not list(server.data_dir.glob(f"{topic}-*")), sorted(server.data_dir.iterdir())
    result = subprocess.run(
        [kcat, "-b", server.bootstrap("PLAINTEXT"), "-L", "-J"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f'"{topic}"'.encode() not in result.stdout, result.stdout


def server_log(server: TlsServe) -> str:
    return server.stderr_path.read_text(errors="replace")


# the alert the client reads, by the identity it shows and the highest TLS version it offers
ALERTS: dict[str | None, dict[ssl.TLSVersion, str]] = {
    "expired": {
        ssl.TLSVersion.TLSv1_3: "ALERT_CERTIFICATE_EXPIRED",
        ssl.TLSVersion.TLSv1_2: "ALERT_CERTIFICATE_EXPIRED",
    },
    "stranger": {
        ssl.TLSVersion.TLSv1_3: "ALERT_UNKNOWN_CA",
        ssl.TLSVersion.TLSv1_2: "ALERT_UNKNOWN_CA",
    },
    None: {
        ssl.TLSVersion.TLSv1_3: "ALERT_CERTIFICATE_REQUIRED",
        ssl.TLSVersion.TLSv1_2: "ALERT_HANDSHAKE_FAILURE",
    },
}


@pytest.mark.parametrize(
    ("identity", "reason"),
    [
        ("expired", "certificate has expired"),
        ("stranger", "unable to get local issuer certificate"),
        (None, "peer did not return a certificate"),
    ],
)
def test_bad_or_missing_client_certificate_is_refused_and_nothing_written(
    identity: str | None, reason: str, pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    server = tls_serve(tls_properties(pki, client_auth="required"))
    # The server sends the TLS alert naming the refusal, as a Kafka broker does, under TLS 1.3
    # (the certificate is checked after the client's side of the handshake: the alert is
    # read with the first response) and TLS 1.2 (the handshake itself fails).
    for version, alert in ALERTS[identity].items():
        with pytest.raises(ssl.SSLError, match=alert):
            kafka_response_over_tls(server.bootstrap("SSL"), pki, identity, version)
    topic = f"refused-{identity}"
    command = [kcat, "-b", server.bootstrap("SSL"), "-P", "-t", topic, "-p", "0"]
    for key, value in librdkafka_ssl(pki, identity).items():
        command += ["-X", f"{key}={value}"]
    result = subprocess.run(
        [*command, "-X", "message.timeout.ms=5000"],
        input=b"never written\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert b"Broker transport failure" in result.stderr or b"SSL" in result.stderr, result.stderr
    assert_topic_absent(server, kcat, topic)
    assert_served(server, pki)
    # the server says why, naming the client and the listener
    handshake = f"closing 127.0.0.1: TLS handshake on SSL://{server.bootstrap('SSL')} failed"
    assert handshake in server_log(server)  # the bound port, not the configured 0
    assert reason in server_log(server), server.log_tail()


def test_expired_certificate_refused_where_a_valid_one_is_served(
    pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    """The same CA signs both; only the validity differs: the expired one writes nothing."""
    server = tls_serve(tls_properties(pki, client_auth="required"))
    bootstrap = server.bootstrap("SSL")
    produce_over_ssl("confluent", kcat, bootstrap, pki, "alice", "valid", [(b"k", b"v")])
    assert read_over_ssl("confluent", kcat, bootstrap, pki, "alice", "valid") == [(0, b"k", b"v")]
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.timeout.ms": 5000}
        | librdkafka_ssl(pki, "expired")
    )
    errors: list[object] = []
    producer.produce("valid", b"expired", partition=0, on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert len(errors) == 1 and errors[0] is not None, errors  # a delivery error, not acked
    assert read_over_ssl("confluent", kcat, bootstrap, pki, "alice", "valid") == [(0, b"k", b"v")]
    assert_served(server, pki)


def test_plaintext_client_on_the_tls_port_is_refused_and_the_server_stays_up(
    pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    server = tls_serve(tls_properties(pki))
    # A raw Kafka request in clear text: the TLS layer takes it for a bad handshake.
    with socket.create_connection(host_port(server.bootstrap("SSL")), timeout=30) as raw:
        raw.sendall(FRAME)
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
        # no Kafka response (size prefix, then correlation id 7): the connection just closes
        assert received[4:8] != struct.pack(">i", 7), received
    # librdkafka configured for PLAINTEXT against the SSL port fails, writing nothing.
    result = subprocess.run(
        [
            kcat,
            "-b",
            server.bootstrap("SSL"),
            "-P",
            "-t",
            "cleartext",
            "-X",
            "message.timeout.ms=5000",
        ],
        input=b"never written\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0, result.stderr
    # Many at once: the server keeps serving.
    for _ in range(20):
        with socket.create_connection(host_port(server.bootstrap("SSL")), timeout=30) as raw:
            raw.sendall(b"\x16\x03\x01\x00\x05garbage" + FRAME)
    assert_topic_absent(server, kcat, "cleartext")
    assert_served(server, pki)
    assert "a client not speaking TLS? check its security.protocol" in server_log(server)


def test_a_client_silent_in_its_handshake_is_closed_at_the_idle_limit(
    pki: Pki, tls_serve: TlsFactory
) -> None:
    """``connections.max.idle.ms`` bounds the handshake too: a client that connects to the TLS
    port and sends nothing is closed by the server (the read below ends instead of blocking
    for its 30 s timeout), and the server goes on serving."""
    server = tls_serve(tls_properties(pki, **{"connections.max.idle.ms": "1000"}))
    with socket.create_connection(host_port(server.bootstrap("SSL")), timeout=30) as raw:
        assert raw.recv(4096) == b""  # closed by the server, nothing sent
    assert_served(server, pki)
    assert "TLS handshake on SSL://" in server_log(server), server.log_tail()
