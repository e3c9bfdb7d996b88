"""How ``seglog consume`` writes one record: Kafka's text layout, JSON, kcat's ``-f``.

Every renderer maps ``(topic, partition, ConsumedRecord)`` to the exact bytes written for
it (its line separator included), so the fast path of :mod:`seglog.cli.consume_fast` can be
checked against it byte for byte.

**Text** (:class:`TextLayout`) is the layout of Kafka's ``DefaultMessageFormatter`` (what
``kafka-console-consumer.sh`` prints), with its properties and defaults:

* fields in this order, each only when its ``print.*`` property is true: ``print.timestamp``
  (``CreateTime:MS`` or ``LogAppendTime:MS``, ``NO_TIMESTAMP`` for a v0 message),
  ``print.partition`` (``Partition:P``), ``print.offset`` (``Offset:N``), ``print.delivery``
  (``Delivery:NONE``: seglog has no share groups), ``print.headers`` (``KEY:VALUE`` pairs
  joined by ``headers.separator``, default ``,``; ``NO_HEADERS`` when there are none),
  ``print.key``, ``print.value`` (default true; the only field printed by default);
* a field is followed by ``key.separator`` (default a tab) when another field follows, by
  ``line.separator`` (default ``\\n``) when it is the last; a record printing no field
  writes nothing;
* a null key, value or header value prints ``null.literal`` (default ``null``); bytes are
  written as they are (no decoding).

**JSON** (:func:`record_json`): one object per line, fields ``topic, partition, offset,
timestamp, timestampType, key, value, headers`` in that order; ``timestampType`` is Kafka's
name (``CreateTime``, ``LogAppendTime``, ``NoTimestampType`` for v0 messages). Text that is
not UTF-8 moves to ``key_base64`` / ``value_base64`` / ``headers_base64`` (see ``seglog
consume --help``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seglog.cli.common import json_line
from seglog.format.records import Header, TimestampType

if TYPE_CHECKING:  # the engine is loaded by the command, not by its parser
    from seglog.engine.log.record_scan import ConsumedRecord

#: What renders one record: ``(topic, partition, record) -> bytes``.
Renderer = Callable[[str, int, "ConsumedRecord"], bytes]

TRUE_FALSE_PROPERTIES = (
    "print.timestamp",
    "print.partition",
    "print.offset",
    "print.delivery",
    "print.headers",
    "print.key",
    "print.value",
)
TEXT_PROPERTIES = ("key.separator", "line.separator", "headers.separator", "null.literal")


@dataclass(frozen=True, slots=True)
class TextLayout:
    """Kafka's ``DefaultMessageFormatter`` settings (module docstring), defaults included."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> TextLayout:
        """Settings from ``--property`` values (already checked to be known names).

        A ``print.*`` value is true when it is ``true`` in any case, spaces around ignored
        (Kafka's rule: anything else is false).
        """
        flags = {
            name.replace(".", "_"): properties[name].strip().lower() == "true"
            for name in TRUE_FALSE_PROPERTIES
            if name in properties
        }
        texts = {
            name.replace(".", "_"): properties[name].encode("utf-8", "surrogateescape")
            for name in TEXT_PROPERTIES
            if name in properties
        }
        return cls(**flags, **texts)  # type: ignore[arg-type]

    @property
    def is_value_and_key_only(self) -> bool:
        """Only the key (optionally) and the value are printed: the fast path's case."""
        return self.print_value and not (
            self.print_timestamp
            or self.print_partition
            or self.print_offset
            or self.print_delivery
            or self.print_headers
        )

    def render(self, _topic: str, partition: int, record: ConsumedRecord) -> bytes:
        """The bytes of one record in Kafka's layout."""
        fields: list[bytes] = []
        null = self.null_literal
        if self.print_timestamp:
            if record.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
                fields.append(b"NO_TIMESTAMP")
            else:
                name = record.timestamp_type.name_in_kafka
                fields.append(f"{name}:{record.timestamp}".encode())
        if self.print_partition:
            fields.append(b"Partition:%d" % partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_delivery:
            fields.append(b"Delivery:NONE")
        if self.print_headers:
            if not record.headers:
                fields.append(b"NO_HEADERS")
            else:
                fields.append(
                    self.headers_separator.join(
                        h.key_bytes() + b":" + (null if h.value is None else h.value)
                        for h in record.headers
                    )
                )
        if self.print_key:
            fields.append(null if record.key is None else record.key)
        if self.print_value:
            fields.append(null if record.value is None else record.value)
        if not fields:
            return b""
        return self.key_separator.join(fields) + self.line_separator


def _nothing(_topic: str, _partition: int, _record: ConsumedRecord) -> bytes:
    return b""


def no_output() -> Renderer:
    """Kafka's ``NoOpMessageFormatter``: nothing per record (the count still goes to stderr)."""
    return _nothing


# --- JSON -----------------------------------------------------------------------------------------


def _text_or_none(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _put_bytes(obj: dict[str, Any], name: str, data: bytes | None) -> None:
    """``obj[name]`` = text or null; ``obj[name_base64]`` instead when not UTF-8."""
    if data is None:
        obj[name] = None
        return
    text = _text_or_none(data)
    if text is None:
        obj[f"{name}_base64"] = base64.b64encode(data).decode("ascii")
    else:
        obj[name] = text


def _put_headers(obj: dict[str, Any], headers: tuple[Header, ...]) -> None:
    as_text: dict[str, str | None] = {}
    for header in headers:
        key = _text_or_none(header.key_bytes())
        value = None if header.value is None else _text_or_none(header.value)
        if key is None or key in as_text or (header.value is not None and value is None):
            obj["headers_base64"] = [
                [
                    base64.b64encode(h.key_bytes()).decode("ascii"),
                    None if h.value is None else base64.b64encode(h.value).decode("ascii"),
                ]
                for h in headers
            ]
            return
        as_text[key] = value
    obj["headers"] = as_text


def record_json(topic: str, partition: int, record: ConsumedRecord) -> dict[str, Any]:
    """The ``--format json`` object of a record (module docstring)."""
    obj: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestampType": record.timestamp_type.name_in_kafka,
    }
    _put_bytes(obj, "key", record.key)
    _put_bytes(obj, "value", record.value)
    _put_headers(obj, record.headers)
    return obj


def json_record_line(topic: str, partition: int, record: ConsumedRecord) -> bytes:
    """One ``--format json`` line (the reference the fast path is compared with)."""
    return json_line(record_json(topic, partition, record)).encode() + b"\n"
