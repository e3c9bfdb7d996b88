"""Minimal Kafka wire clients for the ``seglog serve`` benchmarks, and a ``sendfile`` peer.

:class:`WireClient` is a blocking socket speaking Kafka's framing through ``seglog.protocol``:
requests are encoded with the codec (request header v2, as every version used here is
flexible), responses are read with ``recv_into`` into one reused buffer and only the parts a
benchmark needs are decoded (``records`` decode as views of that buffer, never copied).

* :meth:`WireClient.fetch_all`: sessionless Fetch v12 (read_uncommitted) from an offset to the
  log end, one request in flight (as a consumer), the next offset taken from the last batch
  header of each response (base offset + last offset delta + 1); the bytes are discarded.
* :meth:`WireClient.produce_all`: pre-encoded Produce v9 requests, a window of up to 5 in flight
  (librdkafka's idempotent limit), every partition response checked for error code 0.

:class:`SendfilePeer` is the floor of the Fetch benchmark: a thread that, for every connection,
sends a list of file ranges with ``os.sendfile`` (no framing, no requests) to a client that
discards them with the same ``recv_into`` loop.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

from seglog.protocol import codec, messages

FETCH_VERSION = 12
PRODUCE_VERSION = 9
RECV_BUFFER_BYTES = 4 * 1024 * 1024
_SIZE = struct.Struct(">i")
_BATCH_HEAD = struct.Struct(">qi")  # baseOffset, batchLength
_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta, at byte 23 of a v2 batch
_HEADER_WRITER = codec.struct_writer(messages.RequestHeader, 2, True)


def encode_request(api_key: int, version: int, correlation_id: int, body: object) -> bytes:
    """A whole request frame: size prefix, header v2 (flexible), body."""
    out = bytearray(4)
    header = messages.RequestHeader(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="seglog-bench",
    )
    _HEADER_WRITER(out, [], header)
    out += codec.encode(body, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def next_offset_after(records: memoryview) -> int:
    """The offset after the last whole v2 batch of ``records`` (-1 when there is none)."""
    position = 0
    end = len(records)
    last = -1
    while position + 27 <= end:
        base, length = _BATCH_HEAD.unpack_from(records, position)
        if position + 12 + length > end:
            break
        (delta,) = _LAST_DELTA.unpack_from(records, position + 23)
        last = base + delta + 1
        position += 12 + length
    return last


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER_BYTES)


def recv_exactly(sock: socket.socket, view: memoryview) -> None:
    """Fill ``view`` from the socket (EOF is an error)."""
    got = 0
    size = len(view)
    recv_into = sock.recv_into
    while got < size:
        count = recv_into(view[got:], size - got)
        if count == 0:
            raise ConnectionError("the server closed the connection mid-response")
        got += count


class WireClient:
    """One connection to a Kafka server (see the module docstring)."""

    def __init__(self, host: str, port: int, buffer_bytes: int = 64 * 1024 * 1024) -> None:
        self.sock = socket.create_connection((host, port))
        _tune(self.sock)
        self.buffer = bytearray(buffer_bytes)
        self.view = memoryview(self.buffer)
        self.correlation_id = 0

    def close(self) -> None:
        """Close the connection."""
        self.view.release()
        self.sock.close()

    def read_frame(self) -> memoryview:
        """The next response frame (without its size prefix), a view of the reused buffer."""
        recv_exactly(self.sock, self.view[:4])
        (size,) = _SIZE.unpack_from(self.buffer, 0)
        if size > len(self.buffer):
            self.view.release()
            self.buffer = bytearray(size)
            self.view = memoryview(self.buffer)
        frame = self.view[:size]
        recv_exactly(self.sock, frame)
        return frame

    def _next_id(self) -> int:
        self.correlation_id += 1
        return self.correlation_id

    def fetch_all(
        self, topic: str, start: int, end: int, *, max_bytes: int, partition_max_bytes: int
    ) -> tuple[int, list[int]]:
        """Fetch ``[start, end)`` of partition 0: the bytes, and each response's records size."""
        offset = start
        total = 0
        sizes: list[int] = []
        partition = messages.FetchRequestFetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes
        )
        request = messages.FetchRequest(
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=max_bytes,
            topics=[messages.FetchRequestFetchTopic(topic=topic, partitions=[partition])],
        )
        while offset < end:
            partition.fetch_offset = offset
            frame_bytes = encode_request(1, FETCH_VERSION, self._next_id(), request)
            self.sock.sendall(frame_bytes)
            frame = self.read_frame()
            _, body_at = codec.decode(messages.ResponseHeader, frame, 1, whole=False)
            response, _ = codec.decode(messages.FetchResponse, frame, FETCH_VERSION, offset=body_at)
            answer = response.responses[0].partitions[0]
            if response.error_code or answer.error_code:
                raise RuntimeError(f"fetch at {offset}: error {answer.error_code}")
            records = answer.records
            assert isinstance(records, memoryview)
            after = next_offset_after(records)
            if after <= offset:
                raise RuntimeError(f"fetch at {offset}: no whole batch in the response")
            total += len(records)
            sizes.append(len(records))
            offset = after
            records.release()
            frame.release()
        return total, sizes

    def produce_requests(self, topic: str, batches: Sequence[bytes]) -> list[bytes]:
        """One Produce v9 request (acks=1) per batch, encoded (outside any clock)."""
        frames = []
        for batch in batches:
            body = messages.ProduceRequest(
                acks=1,
                timeout_ms=30_000,
                topic_data=[
                    messages.ProduceRequestTopicProduceData(
                        name=topic,
                        partition_data=[
                            messages.ProduceRequestPartitionProduceData(index=0, records=batch)
                        ],
                    )
                ],
            )
            frames.append(encode_request(0, PRODUCE_VERSION, self._next_id(), body))
        return frames

    def produce_all(self, frames: Sequence[bytes], window: int = 5) -> int:
        """Send every frame with up to ``window`` in flight; returns the responses checked."""
        sent = 0
        answered = 0
        while answered < len(frames):
            while sent < len(frames) and sent - answered < window:
                self.sock.sendall(frames[sent])
                sent += 1
            frame = self.read_frame()
            _, body_at = codec.decode(messages.ResponseHeader, frame, 1, whole=False)
            response, _ = codec.decode(
                messages.ProduceResponse, frame, PRODUCE_VERSION, offset=body_at
            )
            code = response.responses[0].partition_responses[0].error_code
            frame.release()
            if code:
                raise RuntimeError(f"produce request {answered}: error code {code}")
            answered += 1
        return answered


def file_ranges(paths: Sequence[Path], sizes: Sequence[int]) -> list[tuple[Path, int, int]]:
    """Consecutive ``(file, position, size)`` ranges covering ``sizes`` bytes over ``paths``
    (a size that crosses a file's end is split, as a Fetch response's ranges are)."""
    ranges: list[tuple[Path, int, int]] = []
    files = [(path, path.stat().st_size) for path in paths]
    index = 0
    position = 0
    for size in sizes:
        left = size
        while left > 0:
            path, length = files[index]
            take = min(left, length - position)
            ranges.append((path, position, take))
            left -= take
            position += take
            if position == length:
                index += 1
                position = 0
    return ranges


class SendfilePeer:
    """A thread serving each connection the same file ranges with ``os.sendfile``."""

    def __init__(self, ranges: Sequence[tuple[Path, int, int]]) -> None:
        self.ranges = list(ranges)
        self.total = sum(size for _, _, size in self.ranges)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        files: dict[Path, int] = {}
        try:
            while True:
                try:
                    conn, _ = self.listener.accept()
                except OSError:
                    return
                with conn:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    for path, start, size in self.ranges:
                        fd = files.get(path)
                        if fd is None:
                            fd = files[path] = os.open(path, os.O_RDONLY)
                        position, left = start, size
                        while left > 0:
                            sent = os.sendfile(conn.fileno(), fd, position, left)
                            position += sent
                            left -= sent
        finally:
            for fd in files.values():
                os.close(fd)

    def receive_all(self, buffer: memoryview) -> int:
        """Connect, read every byte into ``buffer`` (reused, overwritten), return the count."""
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            _tune(sock)
            got = 0
            recv_into = sock.recv_into
            chunk = len(buffer)
            while got < self.total:
                count = recv_into(buffer, min(chunk, self.total - got))
                if count == 0:
                    raise ConnectionError("the sendfile peer closed early")
                got += count
        return got

    def close(self) -> None:
        """Stop accepting (the thread ends)."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept()
        self.listener.close()
        self._thread.join(5)
