"""The server's read side (``seglog.broker.net.frame_protocol``) over real loopback sockets.

A server built on :class:`FrameProtocol` reads Kafka-style frames (int32 size, then the body)
with ``readexactly`` and echoes each body back, as the broker's read loop does. Clients send
frames byte by byte, many at once, larger than every buffer, and vanish mid-frame; each frame
read must equal the one sent, and a view stays intact until the next read even while later
bytes keep arriving.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct

import pytest

from seglog.broker.net.frame_protocol import HIGH_WATER_BYTES, INITIAL_BYTES, FrameProtocol

SIZE = struct.Struct(">i")


def frame(body: bytes) -> bytes:
    return SIZE.pack(len(body)) + body


async def serve(received: list[bytes], checks: list[bool]) -> asyncio.Server:
    """A server reading frames, checking each view again after the next frame arrived."""

    async def run(reader: FrameProtocol, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(4))
                view = await reader.readexactly(size)
                body = bytes(view)
                received.append(body)
                await asyncio.sleep(0.001)  # later bytes land in the buffer meanwhile
                checks.append(bytes(view) == body)
                writer.write(frame(body[:16]))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    tasks: set[asyncio.Task[None]] = set()

    def connected(reader: FrameProtocol, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(run(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: FrameProtocol(connected), "127.0.0.1", 0)


async def exchange(chunks: list[bytes], answers: int) -> tuple[list[bytes], list[bool], bytes]:
    received: list[bytes] = []
    checks: list[bool] = []
    server = await serve(received, checks)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for chunk in chunks:
        writer.write(chunk)
        await writer.drain()
    replies = await reader.readexactly(answers)
    writer.close()
    server.close()
    await server.wait_closed()
    return received, checks, replies


@pytest.mark.parametrize(
    "sizes",
    [
        [0, 1, 7],
        [100] * 50,
        [INITIAL_BYTES - 3, INITIAL_BYTES + 5, 10, 3 * INITIAL_BYTES],
        [HIGH_WATER_BYTES * 3, 20, HIGH_WATER_BYTES + 1, 64 * 1024],
    ],
    ids=["tiny", "many-small", "around-the-buffer", "above-high-water"],
)
def test_pipelined_frames_arrive_whole_and_in_order(sizes: list[int]) -> None:
    bodies = [os.urandom(size) for size in sizes]
    stream = b"".join(frame(body) for body in bodies)
    answers = sum(4 + min(16, len(body)) for body in bodies)
    received, checks, replies = asyncio.run(exchange([stream], answers))
    assert received == bodies
    assert all(checks)  # no view was overwritten by the bytes that followed it
    assert replies == b"".join(frame(body[:16]) for body in bodies)


def test_a_frame_sent_byte_by_byte_is_read_whole() -> None:
    bodies = [os.urandom(300), b"x" * 5]
    stream = b"".join(frame(body) for body in bodies)
    chunks = [stream[i : i + 1] for i in range(len(stream))]
    received, checks, _ = asyncio.run(exchange(chunks, 4 + 16 + 4 + 5))
    assert received == bodies
    assert all(checks)


def test_a_client_vanishing_mid_frame_ends_only_its_connection() -> None:
    async def scenario() -> tuple[list[bytes], bytes]:
        received: list[bytes] = []
        server = await serve(received, [])
        port = server.sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as vanishing:
            vanishing.sendall(SIZE.pack(1000) + b"partial")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"still served"))
        reply = await reader.readexactly(4 + 12)
        writer.close()
        server.close()
        await server.wait_closed()
        return received, reply

    received, reply = asyncio.run(scenario())
    assert received == [b"still served"]
    assert reply == frame(b"still served")


def test_a_read_times_out_and_leaves_the_bytes_received_buffered() -> None:
    async def scenario() -> tuple[bool, bytes]:
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[tuple[bool, bytes]] = loop.create_future()

        async def run(reader: FrameProtocol, writer: asyncio.StreamWriter) -> None:
            timed_out = False
            try:
                await reader.readexactly(8, timeout=0.05)
            except TimeoutError:
                timed_out = True
            rest = await reader.readexactly(8, timeout=5)
            outcome.set_result((timed_out, bytes(rest)))
            writer.close()

        tasks: set[asyncio.Task[None]] = set()

        def connected(reader: FrameProtocol, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(run(reader, writer))
            tasks.add(task)

        server = await loop.create_server(lambda: FrameProtocol(connected), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"abcd")
        await asyncio.sleep(0.2)  # past the first read's timeout
        writer.write(b"efgh")
        result = await asyncio.wait_for(outcome, 5)
        writer.close()
        server.close()
        await server.wait_closed()
        return result

    assert asyncio.run(scenario()) == (True, b"abcdefgh")
