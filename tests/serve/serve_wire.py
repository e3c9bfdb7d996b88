"""A minimal blocking Kafka client over ``seglog.protocol`` for requests no client lets a test
send exactly (the same idempotent batch twice, a chosen producer id).

Record batches come from kafka-python's ``DefaultRecordBatchBuilder`` (a peer's encoder, not
seglog's), so the server is judged on bytes it did not write itself.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from seglog.protocol import codec, messages
from seglog.protocol.framing import RESPONSES, response_header_version

_SIZE = struct.Struct(">i")


class WireClient:
    """One connection; :meth:`call` sends a request and returns the decoded response body."""

    def __init__(self, bootstrap: str, timeout_s: float = 30.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_exact(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(out)} of {size} bytes")
            out += chunk
        return bytes(out)

    def send(self, api_key: int, version: int, body: Any) -> None:
        """Send a request that gets no answer (an ``acks=0`` Produce)."""
        self.correlation_id += 1
        self.sock.sendall(self._frame(api_key, version, body))

    def closed_by_peer(self) -> bool:
        """Whether the server closed the connection (waits up to the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except TimeoutError:
            return False

    def _frame(self, api_key: int, version: int, body: Any) -> bytes:
        request_spec = messages.SPECS[type(body).__name__]
        header_version = 2 if request_spec.is_flexible(version) else 1
        header = codec.encode(
            messages.RequestHeader(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=self.correlation_id,
                client_id="seglog-tests",
            ),
            header_version,
        )
        payload = header + codec.encode(body, version)
        return _SIZE.pack(len(payload)) + payload

    def call(
        self, api_key: int, version: int, body: Any, sent: threading.Event | None = None
    ) -> Any:
        """Send ``body``, set ``sent`` once it is on the wire, and return the decoded answer."""
        self.correlation_id += 1
        self.sock.sendall(self._frame(api_key, version, body))
        if sent is not None:
            sent.set()
        (size,) = _SIZE.unpack(self._read_exact(4))
        frame = self._read_exact(size)
        reply_header, end = codec.decode(
            messages.ResponseHeader, frame, response_header_version(api_key, version), whole=False
        )
        assert reply_header.correlation_id == self.correlation_id
        value, _ = codec.decode(RESPONSES[api_key].cls, frame, version, offset=end)
        return value


def build_batch(
    keys: list[bytes | None],
    values: list[bytes],
    timestamp: int,
    *,
    producer_id: int = -1,
    epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """One uncompressed v2 batch built by kafka-python (idempotent when ``producer_id`` >= 0)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for offset, (key, value) in enumerate(zip(keys, values, strict=True)):
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=[])
    return bytes(builder.build())


def idempotent_batch(
    producer_id: int, epoch: int, base_sequence: int, values: list[bytes], timestamp: int
) -> bytes:
    """An idempotent producer's batch of ``values`` (key ``k``) from ``base_sequence``."""
    return build_batch(
        [b"k"] * len(values),
        values,
        timestamp,
        producer_id=producer_id,
        epoch=epoch,
        base_sequence=base_sequence,
    )


def produce_request(
    topic: str, partition: int, records: bytes, acks: int = -1, transactional_id: str | None = None
) -> Any:
    return messages.ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=30_000,
        topic_data=[
            messages.ProduceRequestTopicProduceData(
                name=topic,
                partition_data=[
                    messages.ProduceRequestPartitionProduceData(index=partition, records=records)
                ],
            )
        ],
    )


def metadata_request(topic: str) -> Any:
    return messages.MetadataRequest(
        topics=[messages.MetadataRequestMetadataRequestTopic(name=topic)],
        allow_auto_topic_creation=True,
    )
