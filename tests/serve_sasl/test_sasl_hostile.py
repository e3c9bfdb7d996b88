"""Hostile clients on a SASL listener, over ``SASL_PLAINTEXT`` and over ``SASL_SSL`` (one body
per test, parametrized by the transport): requests before authentication, exchanges cut short,
oversized and malformed auth bytes, a flood of failed logins. Over TLS the hostile client first
makes a proper TLS handshake (trusting the test CA), so its bad bytes reach the SASL layer.
Each ends only its own connection; the server stays up, nothing reaches the disk, and a
well-behaved client still produces and consumes.

``SASL_SSL`` only: clients that misbehave around the TLS layer itself (a handshake made, then
garbage inside or beneath TLS, or nothing at all; a ClientHello stopped half-way) while a real
client (kcat) works; the stalled ones are dropped by the server's handshake and idle limits.

Both servers run with Kafka's default failed-login delay (100 ms, doubled per further failure
from the same host), so the flood also goes through the throttle, and with
``connections.max.idle.ms`` = 30 s, which also bounds a TLS handshake (so a stalled one is
seen dropped within the test's patience).
"""

from __future__ import annotations

import os
import ssl
import struct
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from sasl_clients import clients_of, kafka_python_consume, kafka_python_produce
from sasl_server import ALICE_PASSWORD, SETTINGS, SaslServe, partition_dirs, sasl_ssl_properties
from sasl_wire import RawConnection, partial_client_hello, request_frame, tls_client_context
from tls_certs import Pki

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "broker"))
from scram_client import ScramClient

from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.protocol import messages
from seglog.protocol.error_codes import ErrorCode

FAILED = ErrorCode.SASL_AUTHENTICATION_FAILED
IDLE_MS = 30_000  # connections.max.idle.ms, and so the TLS handshake limit
PATIENCE_S = 3 * IDLE_MS / 1000  # how long a test waits for the server to drop a stalled client
GOOD = "good-"  # the prefix of every topic a well-behaved client writes


@dataclass(frozen=True)
class Transport:
    """How a raw hostile client reaches the SASL listener: plain TCP, or TLS trusting ``ca``."""

    name: str  # the listener's security protocol
    ca: Path | None

    def connect(self, server: SaslServe, timeout_s: float = 30.0) -> RawConnection:
        tls = tls_client_context(self.ca) if self.ca is not None else None
        return RawConnection(server.host_port, timeout_s, tls)


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def transport(request: pytest.FixtureRequest, pki: Pki) -> Transport:
    return Transport(request.param, pki.ca if request.param == "SASL_SSL" else None)


@pytest.fixture(scope="module")
def server_settings(transport: Transport, pki: Pki) -> dict[str, str]:
    """The same SASL settings on either listener, with the default failed-login delay."""
    if transport.ca is None:
        settings = dict(SETTINGS)
    else:
        settings = sasl_ssl_properties(pki)
        del settings["connection.failed.authentication.delay.ms"]
    settings["connections.max.idle.ms"] = str(IDLE_MS)
    return settings


tls_only = pytest.mark.parametrize("transport", ["SASL_SSL"], indirect=True)

Produce = Callable[..., "str | None"]
Consume = Callable[..., list[str]]


def healthy(
    server: SaslServe,
    transport: Transport,
    topic: str,
    produce: Produce = kafka_python_produce,
    consume: Consume = kafka_python_consume,
) -> None:
    """The server is up, no hostile client's bytes reached the disk (every topic there is a
    well-behaved client's), and a well-behaved client produces and reads back."""
    assert server.alive(), server.log()[-3000:]
    topics = {d.rpartition("-")[0] for d in partition_dirs(server.data_dir)}
    assert all(t.startswith((GOOD, "__")) for t in topics), topics
    values = [f"{topic}-{i}" for i in range(3)]
    args = (server.bootstrap, "SCRAM-SHA-256", "alice", ALICE_PASSWORD, GOOD + topic)
    assert produce(*args, values, ca=transport.ca) is None
    assert consume(*args, 3, ca=transport.ca) == values


def handshake(conn: RawConnection, mechanism: str = "SCRAM-SHA-256") -> None:
    answer = conn.call(17, 1, messages.SaslHandshakeRequest(mechanism))
    assert answer.error_code == 0


def authenticate(conn: RawConnection, token: bytes) -> messages.SaslAuthenticateResponse:
    answer: messages.SaslAuthenticateResponse = conn.call(
        36, 2, messages.SaslAuthenticateRequest(token)
    )
    return answer


def produce_request(topic: str) -> messages.ProduceRequest:
    """A Produce of one real record to ``topic`` (auto-created were it ever handled)."""
    batch = encode_batch([Record(0, 1_700_000_000_000, None, b"hostile")], base_offset=0)
    partition = messages.ProduceRequestPartitionProduceData(index=0, records=batch)
    data = messages.ProduceRequestTopicProduceData(name=topic, partition_data=[partition])
    return messages.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[data])


def test_requests_before_authentication_close_the_connection(
    sasl_serve: SaslServe, transport: Transport
) -> None:
    with transport.connect(sasl_serve) as conn:  # would auto-create the topic if handled
        topics = [messages.MetadataRequestMetadataRequestTopic(name="hostile-early")]
        conn.sock.sendall(request_frame(3, 12, messages.MetadataRequest(topics=topics)))
        assert conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:
        handshake(conn)
        conn.sock.sendall(request_frame(0, 9, produce_request("hostile-early")))
        assert conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:  # anything but a Kafka request
        conn.sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.closed_by_peer()
    healthy(sasl_serve, transport, "after-early-requests")


def test_exchanges_cut_short(sasl_serve: SaslServe, transport: Transport) -> None:
    client = ScramClient("sha256", "alice", ALICE_PASSWORD)
    for stage in range(5):
        conn = transport.connect(sasl_serve)
        if stage >= 1:
            handshake(conn)
        if stage >= 2:
            first = authenticate(conn, client.first())
            assert first.error_code == 0
        if stage == 3:  # half a frame, then gone
            conn.sock.sendall(
                request_frame(36, 2, messages.SaslAuthenticateRequest(b"x" * 50))[:20]
            )
        if stage == 4:  # a size prefix and nothing more
            conn.sock.sendall(struct.pack(">i", 1000))
        conn.close()
    healthy(sasl_serve, transport, "after-cut-short")


def test_oversized_auth_frames(sasl_serve: SaslServe, transport: Transport) -> None:
    # Before authentication a frame is bounded by sasl.server.max.receive.size (512 KiB).
    with transport.connect(sasl_serve) as conn:
        handshake(conn)
        conn.sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 1000)
        assert conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:
        conn.sock.sendall(struct.pack(">i", 2**31 - 1))
        assert conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:  # large but allowed: refused as garbage
        handshake(conn)
        answer = authenticate(conn, os.urandom(400_000))
        assert answer.error_code == FAILED
        assert conn.closed_by_peer()
    healthy(sasl_serve, transport, "after-oversized")


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"\xff\xfe\xfd",
        b"n,,n=alice",
        b"n,,n=alice,r=" + b"\x00" * 10,
        b"n,,n=alice,r=abc" + b"," * 5000,
        b"p=tls-server-end-point,,n=alice,r=abc",
    ],
)
def test_malformed_client_first(sasl_serve: SaslServe, transport: Transport, token: bytes) -> None:
    with transport.connect(sasl_serve) as conn:
        handshake(conn)
        answer = authenticate(conn, token)
        assert answer.error_code == FAILED
        assert conn.closed_by_peer()
    assert sasl_serve.alive(), sasl_serve.log()[-3000:]


def test_malformed_client_final_and_requests(sasl_serve: SaslServe, transport: Transport) -> None:
    client = ScramClient("sha256", "alice", ALICE_PASSWORD)
    with transport.connect(sasl_serve) as conn:
        handshake(conn)
        first = authenticate(conn, client.first())
        final = client.final(first.auth_bytes)
        answer = authenticate(conn, final[:-8] + b"AAAAAAA=")  # a proof one bit off
        assert answer.error_code == FAILED and conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:  # a SaslAuthenticate body cut short
        handshake(conn)
        frame = request_frame(36, 2, messages.SaslAuthenticateRequest(b"n,,n=alice,r=abc"))
        truncated = frame[4:-6]
        conn.sock.sendall(struct.pack(">i", len(truncated)) + truncated)
        assert conn.closed_by_peer()
    with transport.connect(sasl_serve) as conn:  # PLAIN with a missing field
        handshake(conn, "PLAIN")
        answer = authenticate(conn, b"alice\x00" + ALICE_PASSWORD.encode())
        assert answer.error_code == FAILED and conn.closed_by_peer()
    healthy(sasl_serve, transport, "after-malformed")


def _failed_login(server: SaslServe, transport: Transport, n: int) -> int:
    with transport.connect(server, timeout_s=60.0) as conn:
        if n % 2:
            handshake(conn, "PLAIN")
            answer = authenticate(conn, f"\x00alice\x00guess-{n}".encode())
        else:
            client = ScramClient("sha512", f"user-{n}", "guess")
            handshake(conn, "SCRAM-SHA-512")
            answer = authenticate(conn, client.first())
        assert conn.closed_by_peer()
        return int(answer.error_code)


def test_flood_of_failed_logins(sasl_serve: SaslServe, transport: Transport) -> None:
    with ThreadPoolExecutor(max_workers=16) as pool:
        flood = [pool.submit(_failed_login, sasl_serve, transport, n) for n in range(64)]
        healthy(sasl_serve, transport, "during-flood")  # a good login is never delayed
        codes = [f.result(timeout=120) for f in flood]
    assert codes == [FAILED] * 64
    log = sasl_serve.log()
    assert "closing after 3200 ms" in log  # the throttle reached its ceiling
    assert "guess" not in log  # no password in the log
    healthy(sasl_serve, transport, "after-flood")


def _tls_then_garbage_or_nothing(server: SaslServe, transport: Transport) -> list[bool]:
    """TLS connections that, once the handshake is made, send no Kafka frame; for each that
    waits for it, whether the server closed the connection."""
    with transport.connect(server):
        pass  # gone at once, no close_notify
    with transport.connect(server) as conn:
        assert isinstance(conn.sock, ssl.SSLSocket)
        conn.sock.unwrap()  # close_notify, answered by the server's, then gone
    closed = []
    for garbage in (b"\xff" * 64, b"GET / HTTP/1.1\r\n\r\n", b"\0\0\0\x20" + os.urandom(32)):
        with transport.connect(server) as conn:
            conn.sock.sendall(garbage)
            closed.append(conn.closed_by_peer())
    for beneath in (b"\x17\x03\x03\x00\x40" + os.urandom(64), b"\x00" * 300):
        with transport.connect(server) as conn:
            conn.raw_tcp().sendall(beneath)
            closed.append(conn.closed_by_peer())
    return closed


@tls_only
def test_tls_made_then_garbage_or_nothing(
    sasl_serve: SaslServe, transport: Transport, kcat: str
) -> None:
    """The TLS handshake succeeds, then no Kafka frame: the client leaves (with or without
    close_notify), sends garbage inside TLS, or garbage beneath it (a forged application-data
    record, bytes that are no TLS record), over and over while kcat produces and consumes.
    Each connection alone is closed."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        hostile = _tls_then_garbage_or_nothing
        rounds = [pool.submit(hostile, sasl_serve, transport) for _ in range(8)]
        healthy(sasl_serve, transport, "during-tls-garbage", *clients_of(kcat, "kcat"))
        assert [f.result(timeout=PATIENCE_S) for f in rounds] == [[True] * 5] * 8
    assert "Traceback" not in sasl_serve.log(), sasl_serve.log()[-3000:]
    # the two rounds beneath TLS are logged with OpenSSL's reason, naming the listener
    assert sasl_serve.log().count("TLS error on SASL_SSL://") >= 2 * 8, sasl_serve.log()[-3000:]
    healthy(sasl_serve, transport, "after-tls-garbage", *clients_of(kcat, "kcat"))


@tls_only
def test_tls_handshake_stopped_half_way(
    sasl_serve: SaslServe, transport: Transport, kcat: str
) -> None:
    """Clients holding connections in or just after the TLS handshake (half a ClientHello,
    no byte at all, a finished handshake and then silence) do not stop a real client; the
    server drops each after its handshake or idle limit. Half a ClientHello and then gone
    only ends that connection."""
    assert transport.ca is not None
    host, _ = sasl_serve.host_port
    half_hello = partial_client_hello(tls_client_context(transport.ca), host)
    with RawConnection(sasl_serve.host_port) as conn:
        conn.sock.sendall(half_hello)  # then gone
    held = [RawConnection(sasl_serve.host_port, PATIENCE_S) for _ in range(6)]
    held += [transport.connect(sasl_serve, PATIENCE_S) for _ in range(3)]
    try:
        for conn in held[:3]:
            conn.sock.sendall(half_hello)
        healthy(sasl_serve, transport, "while-tls-stalled", *clients_of(kcat, "kcat"))
        assert [conn.closed_by_peer() for conn in held] == [True] * len(held)
    finally:
        for conn in held:
            conn.close()
    # one handshake cut short, six stalled past the limit: each logged with its reason
    assert sasl_serve.log().count("TLS handshake on SASL_SSL") >= 7, sasl_serve.log()[-3000:]
    healthy(sasl_serve, transport, "after-tls-stalled", *clients_of(kcat, "kcat"))
