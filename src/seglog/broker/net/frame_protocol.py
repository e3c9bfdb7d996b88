"""A connection's read side without copies: the socket reads straight into a reused buffer.

:class:`FrameProtocol` is an :class:`asyncio.BufferedProtocol`: the event loop calls
``recv_into`` on the protocol's own ``bytearray``, and :meth:`FrameProtocol.readexactly`
returns a ``memoryview`` of it. Compared with ``asyncio.StreamReader`` (``recv`` into a fresh
``bytes``, appended to a ``bytearray``, then copied out by ``readexactly``) a request body is
copied once, by the kernel, instead of three times; on large Produce requests this is a
measurable part of the server's time.

Invariants:

* a view returned by :meth:`readexactly` stays valid (its bytes unchanged) until the next
  :meth:`readexactly` call: the connection handles one request at a time, and the socket only
  ever writes after the last received byte, or into a new buffer when the old one is full;
* unread bytes are bounded: reading pauses once ``max(HIGH_WATER_BYTES, the frame awaited)``
  are buffered and resumes when a read needs more (as ``StreamReader`` does with its limit);
* the buffer grows (geometrically) to hold the awaited frame whole (the caller has checked its
  size against ``socket.request.max.bytes`` before asking) and is given up for a smaller one
  once it is much larger than what is buffered and awaited;
* each received byte is moved within the process at most about once, however many requests a
  client pipelines (see :meth:`FrameProtocol._make_room`);
* when the buffer is full while a view of it is in use, the unread bytes move to a second
  buffer (the one released by the previous move, when its size fits): in a steady stream of
  requests two buffers alternate and nothing is allocated.

It also carries the write-side flow control ``asyncio.StreamWriter`` expects of its protocol
(``_drain_helper``, ``_get_close_waiter``), so the server writes through a ``StreamWriter``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

INITIAL_BYTES = 256 * 1024
MIN_FREE_BYTES = 64 * 1024
HIGH_WATER_BYTES = 1024 * 1024


def _time_out(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class FrameProtocol(asyncio.BufferedProtocol):
    """One connection: buffered reads for the server, write flow control for its writer."""

    def __init__(
        self,
        on_connect: Callable[[FrameProtocol, asyncio.StreamWriter], None],
        *,
        start_paused: bool = False,
    ) -> None:
        self._on_connect = on_connect
        # True for a connection that starts TLS first: not a byte is read before the TLS layer
        # takes the transport over (see switch_transport).
        self._start_paused = start_paused
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray(INITIAL_BYTES)
        self._start = 0  # first unread byte
        self._end = 0  # after the last received byte
        self._want = 0  # bytes the pending read needs unread (0: none pending)
        self._held: bytearray | None = None  # the buffer holding the view in use, if any
        self._spare: bytearray | None = None  # a released buffer, reused by _make_room
        self._reading_paused = False
        self._eof = False
        # why the transport was lost (e.g. an ssl.SSLError: a record that fails to decrypt)
        self.lost_error: Exception | None = None
        self._read_waiter: asyncio.Future[None] | None = None
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._closed: asyncio.Future[None] = self._loop.create_future()

    # --- transport callbacks ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if self._start_paused:
            transport.pause_reading()
        writer = asyncio.StreamWriter(transport, self, None, self._loop)
        self._on_connect(self, writer)

    def switch_transport(self, transport: asyncio.Transport) -> asyncio.StreamWriter:
        """Go on over ``transport`` (the TLS transport ``loop.start_tls`` returned, which now
        feeds this protocol); returns the writer to use from now on."""
        self._transport = transport
        self._reading_paused = False
        return asyncio.StreamWriter(transport, self, None, self._loop)

    def get_buffer(self, sizehint: int) -> memoryview:
        if len(self._buffer) - self._end < MIN_FREE_BYTES:
            self._make_room(max(self._want - (self._end - self._start), MIN_FREE_BYTES))
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        unread = self._end - self._start
        if self._want and unread >= self._want:
            self._wake()
        if not self._reading_paused and unread >= max(HIGH_WATER_BYTES, self._want):
            assert self._transport is not None
            self._transport.pause_reading()
            self._reading_paused = True

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self.lost_error = exc
        self._wake()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionResetError("connection lost"))
        self._drain_waiters.clear()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # --- what StreamWriter calls -------------------------------------------------------------
    async def _drain_helper(self) -> None:
        if self._closed.done():
            raise ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future[None]:
        return self._closed

    # --- the server's read side -------------------------------------------------------------
    async def readexactly(self, size: int, timeout: float | None = None) -> memoryview:
        """The next ``size`` bytes, as a view valid until the next call (see the invariants).

        ``timeout`` (seconds) bounds the whole wait, as ``asyncio.wait_for`` would, without a
        task per call.

        Raises:
            asyncio.IncompleteReadError: the peer closed before ``size`` bytes arrived.
            TimeoutError: ``timeout`` passed first (the bytes received stay buffered).
        """
        if self._held is not None:  # the caller is done with the previous view
            if self._held is not self._buffer:
                self._spare = self._held
            self._held = None
        deadline = None if timeout is None else self._loop.time() + timeout
        while self._end - self._start < size:
            if self._eof:
                partial = bytes(self._buffer[self._start : self._end])
                raise asyncio.IncompleteReadError(partial, size)
            self._want = size
            if len(self._buffer) - self._start < size:
                self._make_room(size - (self._end - self._start))
            if self._reading_paused:
                assert self._transport is not None
                self._reading_paused = False
                self._transport.resume_reading()
            waiter = self._read_waiter = self._loop.create_future()
            timer = None
            if deadline is not None:
                timer = self._loop.call_at(deadline, _time_out, waiter)
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                self._read_waiter = None
                self._want = 0
        view = memoryview(self._buffer)[self._start : self._start + size]
        self._start += size
        self._held = self._buffer
        return view

    def _wake(self) -> None:
        waiter = self._read_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _make_room(self, need: int) -> None:
        """Make ``need`` bytes of room after the unread bytes.

        In place (the unread bytes move to the front) when no view of this buffer is in use,
        it is big enough and the unread bytes fill at most half of it, so each byte is moved
        at most about once however requests are pipelined; otherwise the unread bytes move to
        the spare buffer or a new one of twice the room needed (growth is geometric, capped
        at ``HIGH_WATER_BYTES`` more than needed), and a buffer much larger than needed is
        given up."""
        unread = self._end - self._start
        required = unread + need
        size = len(self._buffer)
        # twice what is needed, but at most HIGH_WATER_BYTES more: a 100 MiB request gets
        # ~101 MiB, not 200 (unread bytes beyond the awaited frame never exceed the high water)
        capacity = max(INITIAL_BYTES, required + min(required, HIGH_WATER_BYTES))
        if (
            self._held is not self._buffer
            and required <= size <= 4 * capacity
            and 2 * unread <= size
        ):
            self._buffer[:unread] = self._buffer[self._start : self._end]
        else:
            spare = self._spare
            if spare is not None and required <= len(spare) <= 4 * capacity:
                fresh = spare
            else:
                fresh = bytearray(capacity)
            self._spare = None
            fresh[:unread] = memoryview(self._buffer)[self._start : self._end]
            self._buffer = fresh
        self._start = 0
        self._end = unread
