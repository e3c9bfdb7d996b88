"""Building a v2 record batch from many records quickly: the producer's open batch.

:class:`OpenBatch` is the batch a producer fills for one partition: records are encoded as
they are added (so the exact size is always known) and :meth:`OpenBatch.build` frames them.
The bytes are exactly those of :class:`seglog.format.builder.BatchBuilder` for the same
records (base offset 0, CreateTime, no producer id), which stays the reference; this class
only avoids its per-record costs on the common record (no headers, non-negative timestamp
delta, offset delta, key and value lengths below 8 KiB): the zig-zag varints come from a
table and the record is assembled in one ``bytes.join``.

When a batch is full follows Kafka's ``batch.size``: a record is added while the batch's
uncompressed size stays within ``batch_size`` (header included); a record that does not fit
a non-empty batch starts the next one (:meth:`OpenBatch.add` returns False). A record larger
than ``batch_size`` gets a batch of its own, as in Kafka, up to ``max_batch_bytes`` (the
topic's ``max.message.bytes``): for a compressed batch its worst-case compressed size is
what must fit. A record that fits no batch raises :class:`RecordTooLargeError`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from operator import add

from seglog.errors import RecordTooLargeError
from seglog.format.batch import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    assemble_batch,
    encode_record,
    make_attributes,
)
from seglog.format.compression import CompressionType, compress, max_compressed_size
from seglog.format.records import NO_TIMESTAMP, Header
from seglog.format.varint import encode_varint

TABLE_SIZE = 1 << 13  # values 0..8191: zig-zag varints of one or two bytes
_ZIGZAG = [encode_varint(value) for value in range(TABLE_SIZE)]  # signed value -> bytes
_NULL = b"\x01"  # zig-zag varint of -1
_ZERO = b"\x00"
_LENGTHS = [len(encoded) for encoded in _ZIGZAG]
# Lengths of a record's body fit here when its value and key are below TABLE_SIZE.
_BODY_ZIGZAG = [encode_varint(value) for value in range(4 * TABLE_SIZE)]
_BODY_LENGTHS = [len(encoded) for encoded in _BODY_ZIGZAG]
MIN_RECORD_BYTES = 7  # length, attributes, deltas, null key, empty value, header count
# Per timestamp-delta prefix: attributes, timestamp delta, offset delta (by index), null key:
# the first bytes of every keyless record after its length. Made on first use of a delta.
_KEYLESS_PREFIXES: dict[int, tuple[list[bytes], list[int]]] = {}
KEYLESS_PREFIX_DELTAS_MAX = 64  # deltas whose prefixes are kept (then the cache is cleared)


def _keyless_prefixes(delta: int, upto: int) -> tuple[list[bytes], list[int]]:
    """The prefixes of keyless records with this timestamp delta, for offset deltas
    ``0..upto-1`` at least (the lists grow on demand: most batches hold a few hundred)."""
    found = _KEYLESS_PREFIXES.get(delta)
    if found is None:
        if len(_KEYLESS_PREFIXES) >= KEYLESS_PREFIX_DELTAS_MAX:
            _KEYLESS_PREFIXES.clear()
        found = _KEYLESS_PREFIXES[delta] = ([], [])
    prefixes, lengths = found
    if len(prefixes) < upto:
        head = _ZERO + _ZIGZAG[delta]
        end = min(TABLE_SIZE, max(upto, 2 * len(prefixes), 256))
        more = [head + offset + _NULL for offset in _ZIGZAG[len(prefixes) : end]]
        prefixes.extend(more)
        # body bytes besides the value's length and bytes: the prefix and the header count
        lengths.extend([len(p) + 1 for p in more])
    return found


def largest_uncompressed_batch(codec: CompressionType, max_batch_bytes: int) -> int:
    """The largest uncompressed batch (header included) whose worst-case built size is at
    most ``max_batch_bytes`` (the bound grows with the input, so a binary search finds it)."""

    def projected(size: int) -> int:
        if codec is CompressionType.NONE:
            return size
        return RECORD_BATCH_OVERHEAD + max_compressed_size(codec, size - RECORD_BATCH_OVERHEAD)

    low, high = RECORD_BATCH_OVERHEAD, max_batch_bytes
    if projected(low) > max_batch_bytes:
        return low - 1
    while low < high:
        middle = (low + high + 1) // 2
        if projected(middle) <= max_batch_bytes:
            low = middle
        else:
            high = middle - 1
    return low


class OpenBatch:
    """The records of one batch being filled (see the module docstring)."""

    __slots__ = (
        "base_timestamp",
        "batch_size",
        "codec",
        "count",
        "hard_limit",
        "max_timestamp",
        "opened_at",
        "parts",
        "size",
    )

    def __init__(
        self, batch_size: int, hard_limit: int, codec: CompressionType, opened_at: float
    ) -> None:
        self.batch_size = min(batch_size, hard_limit)
        self.hard_limit = hard_limit  # from largest_uncompressed_batch()
        self.codec = codec
        self.opened_at = opened_at  # when the first record came (the linger clock)
        self.parts: list[bytes] = []
        self.count = 0
        self.size = RECORD_BATCH_OVERHEAD
        self.base_timestamp = NO_TIMESTAMP
        self.max_timestamp = NO_TIMESTAMP

    def add(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> bool:
        """Add a record; False (batch unchanged) when it does not fit this non-empty batch."""
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
        delta = timestamp - self.base_timestamp
        key_length = -1 if key is None else len(key)
        value_length = -1 if value is None else len(value)
        if (
            headers
            or not 0 <= delta < TABLE_SIZE
            or count >= TABLE_SIZE
            or key_length >= TABLE_SIZE
            or value_length >= TABLE_SIZE
        ):
            record = encode_record(count, delta, key, value, headers)
        else:
            table = _ZIGZAG
            delta_bytes = table[delta]
            count_bytes = table[count]
            body = 2 + len(delta_bytes) + len(count_bytes)  # attributes, header count
            key_part: tuple[bytes, ...]
            if key is None:
                key_part = (_NULL,)
                body += 1
            else:
                key_part = (table[key_length], key)
                body += len(key_part[0]) + key_length
            if value is None:
                value_part: tuple[bytes, ...] = (_NULL,)
                body += 1
            else:
                value_part = (table[value_length], value)
                body += len(value_part[0]) + value_length
            record = b"".join(
                (
                    table[body] if body < TABLE_SIZE else encode_varint(body),
                    _ZERO,
                    delta_bytes,
                    count_bytes,
                    *key_part,
                    *value_part,
                    _ZERO,
                )
            )
        size = self.size + len(record)
        if size > self.batch_size and count:
            return False
        if size > self.hard_limit:
            raise RecordTooLargeError(
                f"a record of {len(record)} bytes does not fit in a batch of at most "
                f"{self.hard_limit} bytes uncompressed ({RECORD_BATCH_OVERHEAD} of header; "
                "the topic's max.message.bytes)"
            )
        self.parts.append(record)
        self.count = count + 1
        self.size = size
        if timestamp > self.max_timestamp:  # noqa: PLR1730 - cheaper than max() per record
            self.max_timestamp = timestamp
        return True

    def add_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        start: int,
    ) -> int:
        """Add records ``start..`` of ``values`` (and ``keys``; None: all keys null), all with
        ``timestamp`` and no headers, while they fit; returns the index of the first record
        not added (``len(values)`` when all were). Same bytes as :meth:`add` one by one."""
        index, end = start, len(values)
        while index < end:
            index, full = self._add_run(timestamp, keys, values, index)
            if full or index == end:
                return index
            # A record the run does not take (null value, long key or value, ...): alone.
            if not self.add(timestamp, None if keys is None else keys[index], values[index]):
                return index
            index += 1
        return index

    def _add_run(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        start: int,
    ) -> tuple[int, bool]:
        """The loop of :meth:`add_many`: ``(next index, batch full)``."""
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
        delta = timestamp - self.base_timestamp
        if not 0 <= delta < TABLE_SIZE:
            return start, False
        if keys is None:
            index, size, full = start, self.size, False
            while not full and index < len(values):
                done = index
                index, count, size, full = self._keyless_columns(delta, values, index, count, size)
                if index == done:
                    break
            if not full and index < len(values):
                self.count, self.size = count, size
                index, count, size, full = self._keyless_run(delta, values, index, count)
        else:
            index, count, size, full = self._keyed_run(delta, keys, values, start, count)
        if index > start:
            self.count = count
            self.size = size
            if timestamp > self.max_timestamp:  # noqa: PLR1730
                self.max_timestamp = timestamp
        return index, full

    def _keyless_columns(
        self, delta: int, values: Sequence[bytes | None], start: int, count: int, size: int
    ) -> tuple[int, int, int, bool]:
        """Keyless records from ``start`` column by column (sizes summed with ``accumulate``,
        the batch's end found with ``bisect``, the parts laid out with slice assignments), as
        long as no value is null or long; ``(next index, count, size, batch full)``."""
        room = self.batch_size - size
        first = values[start]
        if first is None:
            return start, count, size, False
        # About as many records as fit if they are like the first (more are taken next time).
        guess = room // (len(first) + MIN_RECORD_BYTES) + 2
        window: list[bytes] = list(values[start : start + min(TABLE_SIZE - count, guess)])  # type: ignore[arg-type]
        if not window or None in window:
            return start, count, size, False
        value_lengths = list(map(len, window))
        if max(value_lengths) >= TABLE_SIZE:
            return start, count, size, False
        prefixes, prefix_lengths = _keyless_prefixes(delta, count + len(window))
        bodies = list(
            map(
                add,
                map(add, prefix_lengths[count : count + len(window)], value_lengths),
                map(_LENGTHS.__getitem__, value_lengths),
            )
        )
        sizes = list(map(add, bodies, map(_BODY_LENGTHS.__getitem__, bodies)))
        fitting = bisect_right(list(accumulate(sizes)), room)
        if fitting == 0:
            if count or sizes[0] > self.hard_limit - size:
                return start, count, size, count > 0  # full, or add() raises for it
            fitting = 1  # a record larger than batch.size: a batch of its own, as in Kafka
        parts: list[bytes] = [_ZERO] * (5 * fitting)
        parts[0::5] = map(_BODY_ZIGZAG.__getitem__, bodies[:fitting])
        parts[1::5] = prefixes[count : count + fitting]
        parts[2::5] = map(_ZIGZAG.__getitem__, value_lengths[:fitting])
        parts[3::5] = window[:fitting]
        self.parts.extend(parts)
        size += sum(sizes[:fitting])
        # Not all of the window fitted: the batch is full.
        return start + fitting, count + fitting, size, fitting < len(window)

    def _keyless_run(
        self, delta: int, values: Sequence[bytes | None], start: int, count: int
    ) -> tuple[int, int, int, bool]:
        """Keyless records from ``start``: ``(next index, count, size, batch full)``."""
        table, lengths = _ZIGZAG, _LENGTHS
        prefixes, prefix_lengths = _keyless_prefixes(delta, TABLE_SIZE)
        extend = self.parts.extend
        size = self.size
        limit, hard = self.batch_size, self.hard_limit
        index = start
        for value in values[start:] if start else values:
            if value is None or count >= TABLE_SIZE:
                break
            value_length = len(value)
            if value_length >= TABLE_SIZE:
                break
            body = prefix_lengths[count] + lengths[value_length] + value_length
            length = table[body] if body < TABLE_SIZE else encode_varint(body)
            record_size = len(length) + body
            if size + record_size > limit and (count or size + record_size > hard):
                return index, count, size, count > 0
            extend((length, prefixes[count], table[value_length], value, _ZERO))
            count += 1
            size += record_size
            index += 1
        return index, count, size, False

    def _keyed_run(
        self,
        delta: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        start: int,
        count: int,
    ) -> tuple[int, int, int, bool]:
        """Records with keys from ``start``: ``(next index, count, size, batch full)``."""
        table = _ZIGZAG
        head = _ZERO + table[delta]  # attributes, timestamp delta
        fixed = 2 + len(table[delta])  # attributes, timestamp delta, header count
        extend = self.parts.extend
        size = self.size
        limit, hard = self.batch_size, self.hard_limit
        index, end = start, len(values)
        while index < end:
            value = values[index]
            key = keys[index]
            if (
                value is None
                or count >= TABLE_SIZE
                or len(value) >= TABLE_SIZE
                or (key is not None and len(key) >= TABLE_SIZE)
            ):
                break
            value_length = len(value)
            count_bytes = table[count]
            body = fixed + len(count_bytes) + len(table[value_length]) + value_length
            body += 1 if key is None else len(table[len(key)]) + len(key)
            length = table[body] if body < TABLE_SIZE else encode_varint(body)
            record_size = len(length) + body
            if size + record_size > limit and (count or size + record_size > hard):
                return index, count, size, count > 0
            if key is None:
                extend((length, head, count_bytes, _NULL, table[value_length], value, _ZERO))
            else:
                extend(
                    (
                        length,
                        head,
                        count_bytes,
                        table[len(key)],
                        key,
                        table[value_length],
                        value,
                        _ZERO,
                    )
                )
            count += 1
            size += record_size
            index += 1
        return index, count, size, False

    def _add_each(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        start: int,
    ) -> int:
        for index in range(start, len(values)):
            if not self.add(timestamp, None if keys is None else keys[index], values[index]):
                return index
        return len(values)

    def build(self) -> bytes:
        """The batch's bytes (base offset 0; the log assigns offsets); must not be empty."""
        section = b"".join(self.parts)
        if self.codec is not CompressionType.NONE:
            section = compress(self.codec, section)
        return assemble_batch(
            section,
            base_offset=0,
            partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
            attributes=make_attributes(self.codec),
            last_offset_delta=self.count - 1,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            producer_id=NO_PRODUCER_ID,
            producer_epoch=NO_PRODUCER_EPOCH,
            base_sequence=NO_SEQUENCE,
            records_count=self.count,
        )
