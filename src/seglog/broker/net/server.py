"""The asyncio TCP server: connections, Kafka's limits, ordered responses, clean shutdown.

Per connection, one request is handled at a time and answered before the next is read (Kafka
mutes a connection while its request is in flight), so responses leave in request order. Limits,
as Kafka's ``SocketServer`` applies them:

* ``socket.request.max.bytes``: a larger size prefix closes the connection before its body is
  read (:class:`FrameReader` semantics); a negative size too. Before SASL authentication the
  bound is ``sasl.server.max.receive.size`` (Kafka's 512 KiB).
* a request the dispatcher refuses closes the connection; a refused login is first answered
  with its error after the failed-login delay (which holds no ``queued.max.requests`` slot).
* ``max.connections``: a connection above it is closed at once.
* ``queued.max.requests``: at most that many requests are being handled at once across all
  connections; a connection whose request finds no room waits (it is not read meanwhile).
  Requests that wait on other clients (:data:`PARKING_API_KEYS`: a Fetch long poll waits for
  a Produce, JoinGroup and SyncGroup for the other members) take no slot, as Kafka parks them
  in purgatory outside its request queue: holding one would deadlock the limit against the very
  request that ends the wait. Their number is still bounded, by the connections (one request
  in flight per connection).
* ``connections.max.idle.ms``: a connection with no traffic for that long is closed, between
  requests or halfway through one (a client stalled mid-frame idles out too), or while its
  response waits that long to be taken (a client that does not read: its connection is aborted
  rather than closed: reset, as a close would go on delivering the unread bytes).
* a client that vanishes mid-request (EOF, reset) only ends its own connection.

Requests are read by :class:`FrameProtocol` straight into a reused buffer (a request body is
never copied in the process). Responses are written as parts: bytes with
``transport.write``, file ranges with ``loop.sendfile`` (``os.sendfile`` underneath), so record
bytes go from the page cache to the socket without passing through Python.

Shutdown (:meth:`KafkaServer.stop`): the listening sockets close, idle connections close, every
request already being handled is answered, then the connections close. A connection still busy
after :data:`SHUTDOWN_GRACE_S` (a client that does not read its responses, so the write never
ends) is aborted: shutdown never waits on a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from seglog.broker.dispatch import Dispatcher, Parts
from seglog.broker.file_records import FileRange, FileRangesRecords
from seglog.broker.net.frame_protocol import FrameProtocol
from seglog.broker.registry import CloseConnection
from seglog.broker.server_config import Listener, ServerConfig
from seglog.broker.session import SECURITY_PROTOCOLS, Session

LOG = logging.getLogger("seglog.serve")
_SIZE = struct.Struct(">i")


SHUTDOWN_GRACE_S = 10.0
# Fetch (1), JoinGroup (11), SyncGroup (14): requests that may wait for other clients' requests.
PARKING_API_KEYS = frozenset({1, 11, 14})


def _parks(frame: bytes | memoryview) -> bool:
    """Whether a request frame's API (its first two bytes) may park waiting for others."""
    return len(frame) >= 2 and int.from_bytes(frame[:2], "big", signed=True) in PARKING_API_KEYS


@dataclass(slots=True, eq=False)
class _Connection:
    writer: asyncio.StreamWriter
    task: asyncio.Task[None] | None = None
    busy: bool = False
    peer: str = ""
    session: Session = field(default_factory=lambda: Session("unknown"))


@dataclass(slots=True)
class ServerStats:
    """Counters for logs and tests."""

    accepted: int = 0
    refused: int = 0
    closed_idle: int = 0
    closed_bad: int = 0
    requests: int = 0
    active: set[int] = field(default_factory=set)


class KafkaServer:
    """Accepts Kafka clients on the configured listeners and serves them with a dispatcher."""

    def __init__(self, dispatcher: Dispatcher, config: ServerConfig) -> None:
        self.dispatcher = dispatcher
        self.config = config
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self._accepting: set[asyncio.Task[None]] = set()
        self._request_slots = asyncio.Semaphore(config.queued_max_requests)
        self._no_slot: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
        self._stopping = False
        self.stats = ServerStats()
        self.bound: list[Listener] = []

    async def start(self) -> list[Listener]:
        """Bind every listener (port 0: a free port); returns the bound addresses."""
        loop = asyncio.get_running_loop()
        for listener in self.config.listeners:
            server = await loop.create_server(
                lambda listener=listener: FrameProtocol(
                    lambda reader, writer: self._connected(reader, writer, listener)
                ),
                host=listener.host or None,
                port=listener.port,
                reuse_address=True,
            )
            self._servers.append(server)
            sock = server.sockets[0]
            host, port = sock.getsockname()[:2]
            self.bound.append(Listener(listener.name, listener.host or host, port))
        return self.bound

    async def stop(self) -> None:
        """Stop accepting, close idle connections, answer requests in flight, then close."""
        self._stopping = True
        for server in self._servers:
            server.close()
        for connection in list(self._connections):
            if not connection.busy and connection.task is not None:
                connection.task.cancel()
        tasks = [c.task for c in self._connections if c.task is not None]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_S)
            for connection in list(self._connections):
                if connection.task in late:
                    LOG.warning(
                        "closing %s: still busy %.0f s into shutdown",
                        connection.peer,
                        SHUTDOWN_GRACE_S,
                    )
                    _abort(connection.writer)
                    connection.task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    def _connected(
        self, reader: FrameProtocol, writer: asyncio.StreamWriter, listener: Listener
    ) -> None:
        task = asyncio.ensure_future(self._accept(reader, writer, listener))
        self._accepting.add(task)
        task.add_done_callback(self._accepting.discard)

    async def _accept(
        self, reader: FrameProtocol, writer: asyncio.StreamWriter, listener: Listener
    ) -> None:
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else "unknown"
        if self._stopping or len(self._connections) >= self.config.max_connections:
            self.stats.refused += 1
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = _Connection(
            writer, asyncio.current_task(), peer=str(host), session=_session(str(host), listener)
        )
        self._connections.add(connection)
        self.stats.accepted += 1
        try:
            await self._serve(connection, reader)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away mid-frame, or the connection idled out
        finally:
            self._connections.discard(connection)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve(self, connection: _Connection, reader: FrameProtocol) -> None:
        idle_s = self.config.connections_max_idle_ms / 1000
        while not self._stopping:
            # Before SASL authentication a frame is bounded by sasl.server.max.receive.size.
            authenticated = connection.session.authenticated
            limit = (
                self.config.socket_request_max_bytes
                if authenticated
                else self.config.sasl.max_receive_size
            )
            try:
                prefix = await reader.readexactly(4, timeout=idle_s)
            except TimeoutError:
                self.stats.closed_idle += 1
                return
            (size,) = _SIZE.unpack(prefix)
            if size < 0 or size > limit:
                self.stats.closed_bad += 1
                LOG.warning(
                    "closing %s: request of %d bytes exceeds %s=%d",
                    connection.peer,
                    size,
                    "socket.request.max.bytes" if authenticated else "sasl.server.max.receive.size",
                    limit,
                )
                return
            try:
                # Under the idle limit too: a client stalled halfway through a frame idles
                # out like a silent one instead of holding its connection and buffer forever.
                frame = await reader.readexactly(size, timeout=idle_s)
            except TimeoutError:
                self.stats.closed_idle += 1
                return
            connection.busy = True
            closing: CloseConnection | None = None
            try:
                slot: contextlib.AbstractAsyncContextManager[Any] = (
                    self._no_slot if _parks(frame) else self._request_slots
                )
                async with slot:
                    self.stats.requests += 1
                    try:
                        parts = await self.dispatcher.dispatch(frame, connection.session)
                    except CloseConnection as reason:
                        closing = reason
                if closing is not None:
                    await self._close_with(connection, closing, idle_s)
                    return
                if parts is not None:
                    try:
                        await _write_parts(connection.writer, parts, idle_s)
                    except TimeoutError:
                        self.stats.closed_idle += 1
                        LOG.info("closing %s: it does not read its responses", connection.peer)
                        _abort(connection.writer)
                        return
            finally:
                connection.busy = False

    async def _close_with(
        self, connection: _Connection, closing: CloseConnection, idle_s: float
    ) -> None:
        """End a connection the dispatcher closed: after its delay (a failed login, held
        without a request slot), send its farewell response, if any."""
        self.stats.closed_bad += 1
        LOG.info("closing %s: %s", connection.peer, closing)
        if closing.delay_ms > 0:
            await asyncio.sleep(closing.delay_ms / 1000)
        if closing.farewell_parts:
            with contextlib.suppress(TimeoutError):
                await _write_parts(connection.writer, closing.farewell_parts, idle_s)


def _session(host: str, listener: Listener) -> Session:
    """A new connection's session: its listener and, from the listener's name, its security
    protocol; not authenticated yet on a SASL_* listener."""
    protocol = listener.name if listener.name in SECURITY_PROTOCOLS else "PLAINTEXT"
    return Session(
        host,
        listener=listener.name,
        security_protocol=protocol,
        authenticated=not protocol.startswith("SASL_"),
    )


def _abort(writer: asyncio.StreamWriter) -> None:
    """Drop a connection whose client does not read: reset it (SO_LINGER 0) so that neither
    asyncio nor the kernel goes on trying to deliver the unread bytes."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _send_range(
    loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter, file_range: FileRange
) -> None:
    """``sendfile`` one range to the connection's socket (the transport is drained first)."""
    with open(file_range.fileno(), "rb", buffering=0, closefd=False) as handle:
        await loop.sendfile(writer.transport, handle, file_range.position, file_range.size)


async def _write_parts(writer: asyncio.StreamWriter, parts: Parts, idle_s: float) -> None:
    """Write a response frame: bytes directly, file ranges with sendfile, in order.

    Raises:
        TimeoutError: one step of the write (a drain, one file range) took longer than
            ``idle_s``: the client is not reading its responses.
    """
    loop = asyncio.get_running_loop()
    try:
        pending = bytearray()
        for part in parts:
            if isinstance(part, bytes):
                pending += part
                continue
            if pending:
                writer.write(bytes(pending))
                pending.clear()
            if isinstance(part, FileRangesRecords):
                for file_range in part.ranges:
                    async with asyncio.timeout(idle_s):
                        await writer.drain()
                    async with asyncio.timeout(idle_s):
                        await _send_range(loop, writer, file_range)
            else:
                raise TypeError(f"cannot send records of type {type(part).__name__}")
        if pending:
            writer.write(bytes(pending))
        async with asyncio.timeout(idle_s):
            await writer.drain()
    finally:
        for part in parts:
            if isinstance(part, FileRangesRecords):
                part.close()
