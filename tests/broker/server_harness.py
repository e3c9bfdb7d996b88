"""A real ``seglog serve`` process for tests, raw Kafka sockets, and a well-behaved client.

* :func:`served_broker`: starts ``python -m seglog.cli --data-dir D --config F serve
  --listeners PLAINTEXT://127.0.0.1:0`` with the given ``server.properties`` settings, waits for
  its ready line and yields a :class:`ServedBroker`; the process is killed if the test leaves it
  running.
* Raw clients: :func:`connect`, :func:`request_frame` (header v1/v2 as the version says, size
  prefix), :func:`read_response`, :func:`closed_by_server` (the server closed the connection).
* The "other client" that must be unaffected: kafka-python producing (acks=1) and consuming
  (no group, from the log start) through :func:`produce_values` and :func:`consume_values`.
* After the server stopped: :func:`reopen_values` checks the clean-shutdown marker and reads a
  partition back through seglog's own API; :func:`finish` is the end of every edge test.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.protocol import codec, messages
from seglog.protocol.framing import REQUESTS, RESPONSES, response_header_version

TOPIC = "edge"
SRC = Path(__file__).resolve().parents[2] / "src"
READY = "seglog serve: listening on PLAINTEXT://"
START_TIMEOUT_S = 90.0
CLIENT_TIMEOUT_S = 60.0


@dataclass
class ServedBroker:
    """A running ``seglog serve`` subprocess."""

    process: subprocess.Popen[str]
    data_dir: Path
    host: str
    port: int
    stderr_path: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM, and the clean exit the contract promises (status 0)."""
        assert self.alive(), f"the server died:\n{self.log_text()[-3000:]}"
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=START_TIMEOUT_S)
        assert status == 0, f"exit status {status}:\n{self.log_text()[-3000:]}"


@contextmanager
def served_broker(
    tmp_path: Path, settings: Mapping[str, str] | None = None
) -> Iterator[ServedBroker]:
    """Start ``seglog serve`` on a free loopback port with ``settings`` in ``--config``."""
    data_dir = tmp_path / "data"
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in (settings or {}).items()))
    stderr_path = tmp_path / "serve.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir)]
    argv += ["--config", str(config), "serve", "--listeners", "PLAINTEXT://127.0.0.1:0"]
    argv += ["--metrics-port", "0", "--log-level", "INFO"]
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
        line = process.stdout.readline() if ready else ""
        assert line.startswith(READY), f"no ready line ({line!r}):\n{stderr_path.read_text()}"
        host, _, port = line.strip()[len(READY) :].rpartition(":")
        yield ServedBroker(process, data_dir, host, int(port), stderr_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=START_TIMEOUT_S)
        if process.stdout is not None:
            process.stdout.close()


# --- raw Kafka clients ---------------------------------------------------------------------------


def connect(broker: ServedBroker, timeout: float = CLIENT_TIMEOUT_S) -> socket.socket:
    sock = socket.create_connection((broker.host, broker.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def request_frame(body: Any, version: int, correlation_id: int, client_id: str = "raw") -> bytes:
    """A whole request frame (size prefix, header v1 or v2, body) built by seglog's codec."""
    spec = messages.SPECS[type(body).__name__]
    header = messages.RequestHeader(
        request_api_key=spec.api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    payload = codec.encode(header, 2 if spec.is_flexible(version) else 1)
    payload += codec.encode(body, version)
    return struct.pack(">i", len(payload)) + payload


def raw_frame(api_key: int, version: int, correlation_id: int, rest: bytes = b"") -> bytes:
    """A frame with a v1 header (empty client id) and arbitrary bytes after it."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, 0) + rest
    return struct.pack(">i", len(payload)) + payload


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes | None:
    """One response frame without its size prefix; None when the server closed the socket."""
    prefix = _read_exactly(sock, 4)
    if prefix is None:
        return None
    return _read_exactly(sock, struct.unpack(">i", prefix)[0])


def read_response(sock: socket.socket, api_key: int, version: int) -> tuple[int, Any]:
    """``(correlation_id, body)`` of the next response, decoded at ``version``."""
    frame = read_frame(sock)
    assert frame is not None, "the server closed the connection instead of answering"
    header_version = response_header_version(api_key, version)
    header, end = codec.decode(messages.ResponseHeader, frame, header_version, whole=False)
    body, _ = codec.decode(RESPONSES[api_key].cls, frame, version, offset=end)
    return header.correlation_id, body


def closed_by_server(sock: socket.socket, timeout: float = CLIENT_TIMEOUT_S) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``timeout``, nothing sent."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def api_versions(sock: socket.socket, correlation_id: int, version: int = 3) -> Any:
    """An ApiVersions round trip on ``sock``; returns the response body."""
    body = messages.ApiVersionsRequest(
        client_software_name="seglog-tests", client_software_version="1.0"
    )
    sock.sendall(request_frame(body, version, correlation_id))
    got, response = read_response(sock, REQUESTS[18].api_key, version)
    assert got == correlation_id
    return response


# --- the well-behaved client (kafka-python) ------------------------------------------------------


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    """Produce ``values`` to partition 0 with acks=1; returns their offsets."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=1, enable_idempotence=False, linger_ms=2
    )
    try:
        futures = [producer.send(topic, value=value, partition=0) for value in values]
        producer.flush(timeout=CLIENT_TIMEOUT_S)
        return [future.get(timeout=CLIENT_TIMEOUT_S).offset for future in futures]
    finally:
        producer.close(timeout=10)


def consume_values(bootstrap: str, topic: str, end_offset: int) -> dict[int, bytes]:
    """Partition 0's values by offset, from the log start up to ``end_offset`` (exclusive),
    read with no consumer group."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        values: dict[int, bytes] = {}
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while consumer.position(partition) < end_offset and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.update((record.offset, record.value) for record in records)
        return values
    finally:
        consumer.close()


def round_trip(broker: ServedBroker, topic: str, values: list[bytes]) -> None:
    """Produce ``values`` after whatever the topic holds; every value reads back in order."""
    offsets = produce_values(broker.bootstrap, topic, values)
    assert offsets == list(range(offsets[0], offsets[0] + len(values)))
    consumed = consume_values(broker.bootstrap, topic, offsets[-1] + 1)
    assert [consumed.get(offset) for offset in offsets] == values


def reopen_values(data_dir: Path, topic: str) -> list[bytes | None]:
    """After a clean stop: the clean-shutdown marker is there (no recovery at the next open),
    and partition 0 of ``topic`` reads back through ``LogManager``."""
    assert (data_dir / ".kafka_cleanshutdown").is_file(), "no clean-shutdown marker"
    broker = BrokerConfig(log_dirs=(str(data_dir),))
    with LogManager.open(broker, read_only=True) as manager:
        log = manager.get_log(topic, 0)
        return [record.value for record in log.iter_records(log.log_start_offset)]


def values(tag: str, count: int = 20) -> list[bytes]:
    """``count`` distinct values tagged ``tag``."""
    return [f"{tag}-{i}".encode() for i in range(count)]


def finish(broker: ServedBroker, before: list[bytes]) -> None:
    """The end of every edge test: the server is up; the other client's data (``before``) is
    all there and new data round-trips; SIGTERM stops it cleanly and the directory reopens
    with every value."""
    assert broker.alive(), broker.log_text()[-3000:]
    after = values("after")
    round_trip(broker, TOPIC, after)
    broker.stop()
    stored = reopen_values(broker.data_dir, TOPIC)
    for value in before + after:
        assert value in stored, f"{value!r} is missing after the restart"
