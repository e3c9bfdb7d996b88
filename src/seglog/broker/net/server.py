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

Listeners (:mod:`seglog.broker.server_config`): one socket per listener; ``SSL`` and
``SASL_SSL`` ones wrap their connections in TLS
(:func:`seglog.broker.security.tls.server_context`): an accepted connection reads nothing
until ``loop.start_tls`` has made the handshake, and serves requests only once it succeeded,
so a client that fails it (a plaintext client, an expired or untrusted certificate, a missing
one under ``ssl.client.auth=required``) never reaches a handler: its connection is closed, the
failure counted (``ServerStats.tls_failed``) and logged at INFO with OpenSSL's reason, and
the client is sent OpenSSL's TLS alert first, as a Kafka broker sends it, so it can say why
(``certificate expired``, ``certificate required``, ...; asyncio alone would drop it, see
:mod:`seglog.broker.security.tls_alert`); a silent client loses its connection after
``min(connections.max.idle.ms, 60 s)`` of handshake.
After the handshake, bytes that are no TLS record or a record that fails to decrypt end the
connection, logged at INFO with OpenSSL's reason (``TLS error on <listener>``).
Each TLS listener's context is a :class:`ReloadingContext`: on an accepted connection, at most
once per ``seglog.ssl.reload.check.ms``, its PEM files are checked and a rotation applied
(new connections get the new certificates, open ones keep theirs; counted in
``ServerStats.tls_reloads`` and ``tls_reload_failures``, see
:mod:`seglog.broker.security.tls_reload`).
Connections in their handshake count against ``max.connections``. Each connection's
:class:`Session` is set here: its listener and security protocol, the principal of its client
certificate (``User:<DN>``, see :mod:`seglog.broker.security.principal`) and
``authenticated=False`` on ``SASL_*`` listeners (the SASL exchange sets it). Over TLS a
Fetch's file ranges cannot go by ``sendfile`` (the bytes must be encrypted in the process):
they are read with ``os.pread`` in :data:`TLS_READ_BYTES` chunks and written through the TLS
transport, under the same flow control and idle limit.

Shutdown (:meth:`KafkaServer.stop`): the listening sockets close, idle connections close, every
request already being handled is answered, then the connections close. A connection still busy
after :data:`SHUTDOWN_GRACE_S` (a client that does not read its responses, so the write never
ends) is aborted: shutdown never waits on a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import ssl
import struct
from dataclasses import dataclass, field
from typing import Any

from seglog.broker.dispatch import Dispatcher, Parts
from seglog.broker.file_records import FileRange, FileRangesRecords
from seglog.broker.net.frame_protocol import FrameProtocol
from seglog.broker.registry import CloseConnection
from seglog.broker.security.principal import principal_of_certificate
from seglog.broker.security.principal_rules import (
    DEFAULT_RULES,
    NoMatchingRuleError,
    PrincipalRule,
)
from seglog.broker.security.tls_alert import ALERT_SINK
from seglog.broker.security.tls_reload import ReloadingContext
from seglog.broker.server_config import Listener, ServerConfig
from seglog.broker.session import ANONYMOUS, Session
from seglog.errors import InvalidCertificateError

LOG = logging.getLogger("seglog.serve")
_SIZE = struct.Struct(">i")


SHUTDOWN_GRACE_S = 10.0
TLS_HANDSHAKE_MAX_S = 60.0
TLS_READ_BYTES = 1024 * 1024
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
    # Under TLS, the writer of the TCP transport beneath: kept while the connection lives, as
    # a StreamWriter closes its transport when it is garbage-collected.
    tcp_writer: asyncio.StreamWriter | None = None


@dataclass(slots=True)
class ServerStats:
    """Counters for logs and tests."""

    accepted: int = 0
    refused: int = 0
    closed_idle: int = 0
    closed_bad: int = 0
    requests: int = 0
    tls_failed: int = 0
    tls_reloads: int = 0
    tls_reload_failures: int = 0
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
        self._contexts: dict[str, ReloadingContext] = {}

    async def start(self) -> list[Listener]:
        """Bind every listener (port 0: a free port); returns the bound addresses."""
        loop = asyncio.get_running_loop()
        self._contexts = {
            name: ReloadingContext(tls, self.config.ssl_reload_check_ms)
            for name, tls in self.config.tls.items()
        }
        for listener in self.config.listeners:
            server = await loop.create_server(
                functools.partial(
                    FrameProtocol,
                    functools.partial(self._connected, listener),
                    start_paused=listener.name in self._contexts,
                ),
                host=listener.host or None,
                port=listener.port,
                reuse_address=True,
            )
            self._servers.append(server)
            sock = server.sockets[0]
            host, port = sock.getsockname()[:2]
            self.bound.append(
                Listener(listener.name, listener.host or host, port, listener.security_protocol)
            )
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
        self, listener: Listener, reader: FrameProtocol, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.ensure_future(self._accept(listener, reader, writer))
        self._accepting.add(task)
        task.add_done_callback(self._accepting.discard)

    async def _accept(
        self, listener: Listener, reader: FrameProtocol, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        host = str(peer[0] if isinstance(peer, tuple) else "unknown")
        # as bound (port 0 configured: the port chosen), so log lines name the real address
        listener = next((b for b in self.bound if b.name == listener.name), listener)
        if self._stopping or len(self._connections) >= self.config.max_connections:
            self.stats.refused += 1
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = _Connection(writer, asyncio.current_task(), peer=host)
        self._connections.add(connection)  # a handshake in progress counts as a connection
        try:
            context = self._context(listener)
            if context is not None:
                try:
                    secured = await self._handshake(listener, host, reader, writer, context)
                except asyncio.CancelledError:  # shutdown: start_tls closed the connection
                    secured = None
                if secured is None:
                    return  # closed by start_tls, which owns the transport until it returns
                connection.tcp_writer, connection.writer = writer, secured
                writer = secured
            tls = self.config.tls.get(listener.name)
            rules = tls.principal_rules if tls is not None else DEFAULT_RULES
            session = _session(listener, host, writer, rules)
            if session is None:
                self.stats.closed_bad += 1
                writer.close()
                return
            connection.session = session
            self.stats.accepted += 1
            await self._serve(connection, reader)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away mid-frame, or the connection idled out
        finally:
            self._connections.discard(connection)
        if connection.tcp_writer is not None and isinstance(reader.lost_error, ssl.SSLError):
            # after the handshake: bytes that are no TLS record, or one that fails to decrypt
            LOG.info("closing %s: TLS error on %s: %s", host, listener, reader.lost_error)
        writer.close()
        with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
            await writer.wait_closed()

    def _context(self, listener: Listener) -> ssl.SSLContext | None:
        """The TLS context of a new connection on ``listener`` (None: plaintext), rotated
        first if its files changed and a check is due."""
        reloading = self._contexts.get(listener.name)
        if reloading is None:
            return None
        outcome = reloading.refresh(str(listener))
        if outcome == "reloaded":
            self.stats.tls_reloads += 1
        elif outcome == "failed":
            self.stats.tls_reload_failures += 1
        return reloading.context

    async def _handshake(
        self,
        listener: Listener,
        host: str,
        reader: FrameProtocol,
        writer: asyncio.StreamWriter,
        context: ssl.SSLContext,
    ) -> asyncio.StreamWriter | None:
        """The TLS handshake of a new connection; its writer over TLS, or None when it failed
        (logged with OpenSSL's reason, counted in ``stats.tls_failed``; the connection is
        closed)."""
        loop = asyncio.get_running_loop()
        handshake_s = min(TLS_HANDSHAKE_MAX_S, self.config.connections_max_idle_ms / 1000)
        raw = writer.transport
        # a failed handshake sends its TLS alert through the raw connection (tls_alert)
        sink = ALERT_SINK.set(lambda alert: None if raw.is_closing() else raw.write(alert))
        try:
            transport = await loop.start_tls(
                raw, reader, context, server_side=True, ssl_handshake_timeout=handshake_s
            )
        except (OSError, TimeoutError) as error:  # ssl.SSLError is an OSError
            self.stats.tls_failed += 1
            LOG.info("closing %s: TLS handshake on %s failed: %s", host, listener, _why(error))
            return None
        finally:
            ALERT_SINK.reset(sink)
        if transport is None:  # the client closed during the handshake
            self.stats.tls_failed += 1
            return None
        return reader.switch_transport(transport)

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


_CLEARTEXT_REASONS = ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER")


def _why(error: BaseException) -> str:
    """A failed handshake's reason, with a hint for the usual misconfiguration."""
    reason = getattr(error, "reason", None) or ""
    text = str(error) or type(error).__name__
    if isinstance(error, ssl.SSLError) and any(r in reason for r in _CLEARTEXT_REASONS):
        return f"{text} (a client not speaking TLS? check its security.protocol)"
    return text


def _session(
    listener: Listener,
    host: str,
    writer: asyncio.StreamWriter,
    rules: tuple[PrincipalRule, ...],
) -> Session | None:
    """The new connection's session (see the module docstring); None when its client
    certificate's subject does not parse or no ``ssl.principal.mapping.rules`` rule applies
    to it (the connection is closed, as Kafka fails its authentication)."""
    principal = ANONYMOUS
    ssl_object = writer.get_extra_info("ssl_object")
    # On SASL_SSL the principal comes from SASL (a certificate, if asked, only authenticates
    # the TLS layer), as in Kafka.
    if ssl_object is not None and listener.security_protocol == "SSL":
        certificate = ssl_object.getpeercert(binary_form=True)
        try:
            principal = principal_of_certificate(certificate, rules) or ANONYMOUS
        except (InvalidCertificateError, NoMatchingRuleError) as error:
            LOG.warning("closing %s on %s: its client certificate: %s", host, listener, error)
            return None
    protocol = listener.security_protocol
    return Session(
        host,
        listener=listener.name,
        security_protocol=protocol,
        principal=principal,
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
    """``sendfile`` one range to the connection's socket (the transport is drained first);
    over TLS, ``pread`` chunks written through the transport (see the module docstring)."""
    if writer.get_extra_info("sslcontext") is None:
        with open(file_range.fileno(), "rb", buffering=0, closefd=False) as handle:
            await loop.sendfile(writer.transport, handle, file_range.position, file_range.size)
        return
    position, end = file_range.position, file_range.position + file_range.size
    while position < end:
        chunk = os.pread(file_range.fileno(), min(TLS_READ_BYTES, end - position), position)
        if not chunk:
            raise ConnectionError(f"file range ended {end - position} byte(s) early")
        writer.write(chunk)
        position += len(chunk)
        await writer.drain()


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
