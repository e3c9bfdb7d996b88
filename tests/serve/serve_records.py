"""The records the ``seglog serve`` tests produce and compare, client-neutral.

A reading of one partition is a list of :data:`Rec` tuples ``(offset, timestamp, key, value,
headers)``, ``headers`` a tuple of ``(key, value-or-None)`` pairs, so the readings of every
client, of ``seglog consume`` and of the segment files compare with ``==``. Producers take
:class:`Msg` values. Start positions (:data:`Start`): ``"earliest"``, ``"latest"`` or an ``int``
timestamp (the first record at or after it, Kafka's ListOffsets).

Values are UTF-8 text so that kcat's JSON envelope (``-J``) carries them unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Headers = tuple[tuple[str, bytes | None], ...]
Rec = tuple[int, int, bytes | None, bytes | None, Headers]
Start = str | int
OFFSET = "offset:"  # a start of "offset:N": an explicit position
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Msg:
    """One record to produce; ``timestamp`` None lets the client stamp it."""

    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp: int | None = None


def sample_messages(count: int, *, base_ts: int, tag: str, null_headers: bool = True) -> list[Msg]:
    """Keys, null keys, null values (never both: kafka-python and aiokafka refuse that),
    repeated, empty and (with ``null_headers``) null header values, increasing timestamps.
    kafka-python's producer refuses a null header value, so its runs leave that header out."""
    out = []
    for i in range(count):
        key = None if i % 5 == 3 else f"{tag}-key-{i % 7}".encode()
        null_value = i % 6 == 4 and key is not None
        value = None if null_value else f"{tag} value {i} {'x' * (i % 50)}".encode()
        headers: Headers = ()
        if i % 3 == 0:
            headers = (("h", f"{i}".encode()), ("empty", b""), ("h", b"again"))
            if null_headers:
                headers += (("null", None),)
        out.append(Msg(key, value, headers, base_ts + i * 10))
    return out


def expected_records(messages: Sequence[Msg], first_offset: int = 0) -> list[Rec]:
    return [
        (
            first_offset + i,
            m.timestamp if m.timestamp is not None else -1,
            m.key,
            m.value,
            m.headers,
        )
        for i, m in enumerate(messages)
    ]


def headers_of(pairs: Any) -> Headers:
    return tuple((k, None if v is None else bytes(v)) for k, v in (pairs or ()))
