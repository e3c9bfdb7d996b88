"""Hostile clients on a SASL_PLAINTEXT listener: requests before authentication, exchanges cut
short, oversized and malformed auth bytes, a flood of failed logins. Each ends only its own
connection; the server stays up and a well-behaved client still produces and consumes.

The server runs with Kafka's default failed-login delay (100 ms, doubled per further failure
from the same host), so the flood also goes through the throttle.
"""

from __future__ import annotations

import os
import struct
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sasl_clients import kafka_python_consume, kafka_python_produce
from sasl_server import ALICE_PASSWORD, SETTINGS, SaslServe
from sasl_wire import RawConnection, request_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "broker"))
from scram_client import ScramClient

from seglog.protocol import messages
from seglog.protocol.error_codes import ErrorCode

FAILED = ErrorCode.SASL_AUTHENTICATION_FAILED


@pytest.fixture(scope="module")
def server_settings() -> dict[str, str]:
    return dict(SETTINGS)  # the default failed-login delay


def healthy(server: SaslServe, topic: str) -> None:
    """The server is up and a well-behaved client produces and reads back."""
    assert server.alive(), server.log()[-3000:]
    values = [f"{topic}-{i}" for i in range(3)]
    args = (server.bootstrap, "SCRAM-SHA-256", "alice", ALICE_PASSWORD, topic)
    assert kafka_python_produce(*args, values) is None
    assert kafka_python_consume(*args, 3) == values


def handshake(conn: RawConnection, mechanism: str = "SCRAM-SHA-256") -> None:
    answer = conn.call(17, 1, messages.SaslHandshakeRequest(mechanism))
    assert answer.error_code == 0


def authenticate(conn: RawConnection, token: bytes) -> messages.SaslAuthenticateResponse:
    answer: messages.SaslAuthenticateResponse = conn.call(
        36, 2, messages.SaslAuthenticateRequest(token)
    )
    return answer


def test_requests_before_authentication_close_the_connection(sasl_serve: SaslServe) -> None:
    with RawConnection(sasl_serve.host_port) as conn:
        conn.sock.sendall(request_frame(3, 12, messages.MetadataRequest(topics=None)))
        assert conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:
        handshake(conn)
        conn.sock.sendall(request_frame(0, 9, messages.ProduceRequest(acks=1, timeout_ms=1000)))
        assert conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:  # anything but a Kafka request
        conn.sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.closed_by_peer()
    healthy(sasl_serve, "after-early-requests")


def test_exchanges_cut_short(sasl_serve: SaslServe) -> None:
    client = ScramClient("sha256", "alice", ALICE_PASSWORD)
    for stage in range(5):
        conn = RawConnection(sasl_serve.host_port)
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
    healthy(sasl_serve, "after-cut-short")


def test_oversized_auth_frames(sasl_serve: SaslServe) -> None:
    # Before authentication a frame is bounded by sasl.server.max.receive.size (512 KiB).
    with RawConnection(sasl_serve.host_port) as conn:
        handshake(conn)
        conn.sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 1000)
        assert conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:
        conn.sock.sendall(struct.pack(">i", 2**31 - 1))
        assert conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:  # large but allowed: refused as garbage
        handshake(conn)
        answer = authenticate(conn, os.urandom(400_000))
        assert answer.error_code == FAILED
        assert conn.closed_by_peer()
    healthy(sasl_serve, "after-oversized")


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
def test_malformed_client_first(sasl_serve: SaslServe, token: bytes) -> None:
    with RawConnection(sasl_serve.host_port) as conn:
        handshake(conn)
        answer = authenticate(conn, token)
        assert answer.error_code == FAILED
        assert conn.closed_by_peer()


def test_malformed_client_final_and_requests(sasl_serve: SaslServe) -> None:
    client = ScramClient("sha256", "alice", ALICE_PASSWORD)
    with RawConnection(sasl_serve.host_port) as conn:
        handshake(conn)
        first = authenticate(conn, client.first())
        final = client.final(first.auth_bytes)
        answer = authenticate(conn, final[:-8] + b"AAAAAAA=")  # a proof one bit off
        assert answer.error_code == FAILED and conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:  # a SaslAuthenticate body cut short
        handshake(conn)
        frame = request_frame(36, 2, messages.SaslAuthenticateRequest(b"n,,n=alice,r=abc"))
        truncated = frame[4:-6]
        conn.sock.sendall(struct.pack(">i", len(truncated)) + truncated)
        assert conn.closed_by_peer()
    with RawConnection(sasl_serve.host_port) as conn:  # PLAIN with a missing field
        handshake(conn, "PLAIN")
        answer = authenticate(conn, b"alice\x00" + ALICE_PASSWORD.encode())
        assert answer.error_code == FAILED and conn.closed_by_peer()
    healthy(sasl_serve, "after-malformed")


def _failed_login(host_port: tuple[str, int], n: int) -> int:
    with RawConnection(host_port, timeout_s=60.0) as conn:
        if n % 2:
            handshake(conn, "PLAIN")
            answer = authenticate(conn, f"\x00alice\x00guess-{n}".encode())
        else:
            client = ScramClient("sha512", f"user-{n}", "guess")
            handshake(conn, "SCRAM-SHA-512")
            answer = authenticate(conn, client.first())
        assert conn.closed_by_peer()
        return int(answer.error_code)


def test_flood_of_failed_logins(sasl_serve: SaslServe) -> None:
    with ThreadPoolExecutor(max_workers=16) as pool:
        flood = [pool.submit(_failed_login, sasl_serve.host_port, n) for n in range(64)]
        healthy(sasl_serve, "during-flood")  # a good login is never delayed
        codes = [f.result(timeout=120) for f in flood]
    assert codes == [FAILED] * 64
    log = sasl_serve.log()
    assert "closing after 3200 ms" in log  # the throttle reached its ceiling
    assert "guess" not in log  # no password in the log
    healthy(sasl_serve, "after-flood")
