"""The moving parts of ``seglog produce``: stdin read as it comes, batches sent as Kafka's
producer sends them.

**Batching** (:class:`LingeringProducer`), as the producer's ``batch.size`` and ``linger.ms``
(``batch.size`` capped at half the topic's ``segment.bytes``): each partition has one open
batch (:class:`~seglog.format.bulk_builder.OpenBatch`). A batch
is sent (appended to the partition's log) when the next record does not fit in ``batch.size``
bytes, or when ``linger.ms`` has passed since its first record came, or at the end of input
(or Ctrl-C). Records therefore reach the log, and readers, at most ``linger.ms`` after their
line was read. Full batches are appended after each chunk of input is parsed, several batches
of a partition in one write (each still gets its own offset index entry).

Flushing follows the topic's config: the log fsyncs after ``flush.messages`` records (as it
does for every append) and :meth:`LingeringProducer.send` fsyncs a log when ``flush.ms``
has passed since its last flush; by default neither is set (Kafka leaves flushing to the OS)
and the log is fsynced once, when the command ends.

**Compression**: the topic's ``compression.type`` when it names a codec (``uncompressed``:
none), as Kafka's broker recompresses to it; when it is ``producer`` (the default), the
producer's ``--compression-codec`` (default none, as Kafka's console producer).

**Reading** (:class:`InputChunks`): stdin is read in chunks of up to
:data:`READ_CHUNK_BYTES` with ``os.read`` (whatever a pipe holds, so a line written to a pipe
is seen at once), after waiting with ``poll`` at most until the next open batch is due, so
the linger timer runs while no input comes. A regular file is read without waiting; a stream
without a file descriptor (tests) is read with its ``read``.

**Interrupts** (:class:`StopSignals`): SIGINT and SIGTERM stop the command cleanly: while it
waits for input they interrupt the wait at once; while it works they are noted and act at the
next chunk boundary, so a record is never half added to a batch. The records read so far are
sent and the exit status is 128 + the signal (130 for Ctrl-C).
"""

from __future__ import annotations

import math
import os
import select
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import IO

from seglog.cli.common import deferred_interrupts
from seglog.config import LogConfig
from seglog.core.partitioner import partition_for_key
from seglog.engine.log_manager import LogManager
from seglog.engine.producer import ProduceSummary
from seglog.errors import UnknownTopicError
from seglog.format.bulk_builder import OpenBatch, largest_uncompressed_batch
from seglog.format.compression import CompressionType
from seglog.format.records import Header
from seglog.kernels.layouts import BATCH_HEADER_BYTES

READ_CHUNK_BYTES = 1024 * 1024
APPEND_CHUNK_BYTES_MAX = 8 * 1024 * 1024  # batches of a partition appended in one write
KEY_CACHE_MAX = 65_536  # keys whose partition is remembered (murmur2 in Python is slow)
INT64_MAX = (1 << 63) - 1


def effective_codec(config: LogConfig, producer_codec: CompressionType) -> CompressionType:
    """The codec batches are written with (see the module docstring)."""
    name = config.compression_type
    if name == "producer":
        return producer_codec
    if name == "uncompressed":
        return CompressionType.NONE
    return CompressionType[name.upper()]


class LingeringProducer:
    """Open batches per partition of one topic, sent per ``batch.size`` and ``linger.ms``."""

    def __init__(
        self,
        manager: LogManager,
        topic: str,
        *,
        batch_size: int,
        linger_ms: int,
        codec: CompressionType,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.partitions = tuple(manager.partitions_of(topic))
        if not self.partitions:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        self.partition_set = frozenset(self.partitions)
        self.logs = {p: manager.get_log(topic, p) for p in self.partitions}
        config = manager.log_config(topic)
        self.codec = effective_codec(config, codec)
        # At most half a segment, so a segment holds at least two batches (and a tiny test
        # segment.bytes gets one record per batch, as a record-at-a-time producer would), and
        # at most max.message.bytes with the batch header: a larger batch would be refused.
        self.batch_size = min(
            batch_size,
            max(1, config.segment_bytes // 2),
            max(1, config.max_message_bytes - BATCH_HEADER_BYTES),
        )
        self.hard_limit = largest_uncompressed_batch(
            self.codec, min(config.max_message_bytes, config.segment_bytes)
        )
        self.chunk_limit = min(config.segment_bytes, APPEND_CHUNK_BYTES_MAX)
        self.linger_s = linger_ms / 1000
        self.flush_interval_s = None if config.flush_ms >= INT64_MAX else config.flush_ms / 1000
        self.monotonic = monotonic
        self.clock_ms = manager.clock.now_ms  # CreateTime of records without a timestamp
        self.open: dict[int, OpenBatch] = {}
        self.sealed: dict[int, list[bytes]] = {}
        self.summary = ProduceSummary()
        self._last_flush = {p: monotonic() for p in self.partitions}
        self._next_round_robin = 0
        self._key_partitions: dict[bytes, int] = {}

    # --- partition choice -----------------------------------------------------------------
    def partition_for(self, key: bytes | None) -> int:
        """Kafka's default partition of a key (murmur2), round-robin for a null key."""
        partitions = self.partitions
        if key is None:
            index = self._next_round_robin
            self._next_round_robin = index + 1
            return partitions[index % len(partitions)]
        partition = self._key_partitions.get(key)
        if partition is None:
            partition = partitions[partition_for_key(key, len(partitions))]
            if len(self._key_partitions) >= KEY_CACHE_MAX:
                self._key_partitions.clear()
            self._key_partitions[key] = partition
        return partition

    # --- batching ---------------------------------------------------------------------------
    def add(
        self,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> None:
        """Add a record to its partition's open batch (sealing the batch when full)."""
        batch = self.open.get(partition)
        if batch is None:
            batch = OpenBatch(self.batch_size, self.hard_limit, self.codec, self.monotonic())
            self.open[partition] = batch
        if not batch.add(timestamp, key, value, headers):
            self.sealed.setdefault(partition, []).append(batch.build())
            batch = OpenBatch(self.batch_size, self.hard_limit, self.codec, self.monotonic())
            self.open[partition] = batch
            batch.add(timestamp, key, value, headers)

    def add_many(
        self,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
    ) -> None:
        """Add records of one partition and timestamp, without headers (``keys`` None: all
        keys null), as :meth:`add` would one by one."""
        index = 0
        end = len(values)
        while index < end:
            batch = self.open.get(partition)
            if batch is None:
                batch = OpenBatch(self.batch_size, self.hard_limit, self.codec, self.monotonic())
                self.open[partition] = batch
            index = batch.add_many(timestamp, keys, values, index)
            if index < end:
                del self.open[partition]
                self.sealed.setdefault(partition, []).append(batch.build())

    def seconds_until_due(self) -> float | None:
        """How long until the oldest open batch has lingered enough (None: no open batch)."""
        if not self.open:
            return None
        oldest = min(batch.opened_at for batch in self.open.values())
        return max(0.0, oldest + self.linger_s - self.monotonic())

    def send(self, *, everything: bool = False) -> None:
        """Append the full batches and those that lingered enough (``everything``: all)."""
        now = self.monotonic()
        for partition, batch in list(self.open.items()):
            if everything or now - batch.opened_at >= self.linger_s:
                del self.open[partition]
                self.sealed.setdefault(partition, []).append(batch.build())
        if not self.sealed:
            return
        with deferred_interrupts():
            for partition in sorted(self.sealed):
                batches = self.sealed.pop(partition)
                self._append(partition, batches)
                if (
                    self.flush_interval_s is not None
                    and now - self._last_flush[partition] >= self.flush_interval_s
                ):
                    self.logs[partition].flush()
                    self._last_flush[partition] = now

    def _append(self, partition: int, batches: list[bytes]) -> None:
        log = self.logs[partition]
        group: list[bytes] = []
        size = 0
        for batch in batches:
            if group and size + len(batch) > self.chunk_limit:
                self.summary.add(partition, log.append(b"".join(group)))
                group, size = [], 0
            group.append(batch)
            size += len(batch)
        if group:
            self.summary.add(partition, log.append(b"".join(group)))

    def flush(self) -> None:
        """fsync every partition's log up to its end."""
        with deferred_interrupts():
            for log in self.logs.values():
                log.flush()


class StopSignals:
    """SIGINT/SIGTERM as a clean stop (see the module docstring); ``signum`` once one came."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.waiting = False

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = signum
        if self.waiting:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[StopSignals]:
        """Handle the signals for the block (only in the main thread; elsewhere: nothing)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if a signal came while working."""
        if self.signum is not None:
            raise KeyboardInterrupt


class InputChunks:
    """A binary stream read in chunks, waiting at most a given time for data."""

    def __init__(self, stream: IO[bytes], stop: StopSignals) -> None:
        self._stream = stream
        self._stop = stop
        self._fd: int | None = None
        self._poll: select.poll | None = None
        self.regular_file = False
        self.bytes_read = 0
        try:
            fd = stream.fileno()
            mode = os.fstat(fd).st_mode
        except (OSError, ValueError, AttributeError):
            return
        self._fd = fd
        self.regular_file = stat.S_ISREG(mode)
        if not self.regular_file:
            self._poll = select.poll()
            self._poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def read(self, timeout_s: float | None) -> bytes | None:
        """The next chunk; ``b""`` at the end of input; None when nothing came within
        ``timeout_s`` (None: wait as long as it takes)."""
        self._stop.waiting = True
        try:
            self._stop.check()
            if (
                self._poll is not None
                and timeout_s is not None
                and not self._poll.poll(math.ceil(timeout_s * 1000))
            ):
                return None
            if self._fd is not None:
                data = os.read(self._fd, READ_CHUNK_BYTES)
            else:
                data = self._stream.read(READ_CHUNK_BYTES)
        finally:
            self._stop.waiting = False
        self.bytes_read += len(data)
        return data
