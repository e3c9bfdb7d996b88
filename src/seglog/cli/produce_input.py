"""Input lines of ``seglog produce`` as records: text lines and JSON objects.

The formats are described in :mod:`seglog.cli.produce`. :func:`parse_json_line` is the
reference parser (Python's ``json`` with duplicate keys and ``NaN`` refused);
:func:`parse_json_fast` parses the common line (``key``/``value``/``timestamp``/
``partition`` only, strings, integers and nulls) with orjson and returns None for anything
else, which then goes to the reference parser. Both give the same record for every line the
fast one accepts (tests/cli/test_produce_fast_path.py checks it), so which one parsed a line
never shows in the log.

Why the fast parser may trust orjson: it only accepts a line without any backslash, so keys
are exactly their text, and it counts the line's quote characters: with no backslash each
key and each string value has exactly two, so ``2 * (keys + string values)`` quotes means no
key was given twice (orjson would keep the last one silently, where the reference refuses).
"""

from __future__ import annotations

import base64
import binascii
import operator
from dataclasses import dataclass
from typing import Any

import orjson

from seglog.cli.strict_json import kind_of, loads_strict
from seglog.engine.producer import ProduceRecord
from seglog.errors import InvalidRecordError
from seglog.format.records import Header

INT64_MAX = (1 << 63) - 1
PARTITION_MAX = (1 << 31) - 1
JSON_FIELDS = frozenset(
    {
        "key",
        "key_base64",
        "value",
        "value_base64",
        "headers",
        "headers_base64",
        "timestamp",
        "partition",
    }
)
# The other fields of `consume --format json`'s lines, accepted and ignored so that
# `consume --format json | produce --format json` copies a topic: the record goes to the topic
# produced to, at its log end offset, with the line's timestamp as its CreateTime.
CONSUMED_FIELDS = frozenset({"topic", "offset", "timestampType"})
FAST_FIELDS = frozenset({"key", "value", "timestamp", "partition"})


class InputLineError(InvalidRecordError):
    """A line of input that is not a valid record; ``line`` is its 1-based number."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How text lines become records: ``key_separator`` splits key from value (a line
    without it is an error); a value equal to ``null_value`` is null; a key equal to
    ``null_key`` is null (Kafka's ``null.marker`` applies to both)."""

    key_separator: bytes | None
    null_value: bytes | None
    null_key: bytes | None = None

    def parse(self, number: int, line: bytes) -> tuple[bytes | None, bytes | None]:
        """``(key, value)`` of one text line."""
        key: bytes | None = None
        value: bytes | None = line
        if self.key_separator is not None:
            key, sep, value = line.partition(self.key_separator)
            if not sep:
                shown = self.key_separator.decode("utf-8", "backslashreplace")
                raise InputLineError(number, f"no key separator {shown!r} in the line")
            if self.null_key is not None and key == self.null_key:
                key = None
        if self.null_value is not None and value == self.null_value:
            value = None
        return key, value


def _utf8(number: int, field: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputLineError(number, f"{field!r} is not valid Unicode (a lone surrogate)") from None


def _text_or_null(number: int, obj: dict[str, Any], field: str) -> bytes | None:
    value = obj[field]
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputLineError(number, f"{field!r} must be a string or null, not {kind_of(value)}")
    return _utf8(number, field, value)


def _base64_or_null(number: int, field: str, value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputLineError(number, f"{field!r} must be base64 text or null, not {kind_of(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputLineError(number, f"{field!r} is not valid base64") from None


def _bytes_field(number: int, obj: dict[str, Any], name: str) -> tuple[bool, bytes | None]:
    """``(given, bytes)`` of ``name`` or ``name_base64`` (never both)."""
    b64 = f"{name}_base64"
    if name in obj and b64 in obj:
        raise InputLineError(number, f"give {name!r} or {b64!r}, not both")
    if name in obj:
        return True, _text_or_null(number, obj, name)
    if b64 in obj:
        return True, _base64_or_null(number, b64, obj[b64])
    return False, None


def _int_field(number: int, obj: dict[str, Any], name: str, high: int) -> int | None:
    if name not in obj:
        return None
    value = obj[name]
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputLineError(number, f"{name!r} must be an integer, not {kind_of(value)}")
    if not 0 <= value <= high:
        raise InputLineError(number, f"{name!r} {value} is outside 0..{high}")
    return value


def _headers(number: int, obj: dict[str, Any]) -> tuple[Header, ...]:
    if "headers" in obj and "headers_base64" in obj:
        raise InputLineError(number, "give 'headers' or 'headers_base64', not both")
    if "headers" in obj:
        headers = obj["headers"]
        if not isinstance(headers, dict):
            raise InputLineError(number, f"'headers' must be an object, not {kind_of(headers)}")
        out = []
        for key, value in headers.items():
            _utf8(number, "headers", key)
            if value is not None and not isinstance(value, str):
                raise InputLineError(
                    number, f"header {key!r} must be a string or null, not {kind_of(value)}"
                )
            out.append(Header(key, None if value is None else _utf8(number, "headers", value)))
        return tuple(out)
    if "headers_base64" in obj:
        pairs = obj["headers_base64"]
        if not isinstance(pairs, list):
            raise InputLineError(
                number, f"'headers_base64' must be an array of pairs, not {kind_of(pairs)}"
            )
        out = []
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise InputLineError(
                    number, "'headers_base64' entries must be [key_base64, value_base64 or null]"
                )
            key = _base64_or_null(number, "headers_base64", pair[0])
            if key is None:
                raise InputLineError(number, "'headers_base64': a header key cannot be null")
            value = _base64_or_null(number, "headers_base64", pair[1])
            out.append(Header(key.decode("utf-8", "surrogateescape"), value))
        return tuple(out)
    return ()


def parse_json_line(number: int, line: bytes, partitions: frozenset[int]) -> ProduceRecord:
    """The record of one ``--format json`` line (see the module docstring)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputLineError(number, f"not UTF-8 (byte {exc.start})") from None
    try:
        obj = loads_strict(text)
    except ValueError as exc:
        raise InputLineError(number, str(exc)) from None
    if not isinstance(obj, dict):
        raise InputLineError(number, f"expected a JSON object, got {kind_of(obj)}")
    unknown = sorted(set(obj) - JSON_FIELDS - CONSUMED_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(JSON_FIELDS))
        raise InputLineError(
            number, f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: {allowed})"
        )
    has_value, value = _bytes_field(number, obj, "value")
    if not has_value:
        raise InputLineError(number, "'value' is required (a string or null)")
    _, key = _bytes_field(number, obj, "key")
    partition = _int_field(number, obj, "partition", PARTITION_MAX)
    if partition is not None and partition not in partitions:
        raise InputLineError(
            number, f"the topic has no partition {partition} (it has {len(partitions)})"
        )
    return ProduceRecord(
        value=value,
        key=key,
        headers=_headers(number, obj),
        timestamp_ms=_int_field(number, obj, "timestamp", INT64_MAX),
        partition=partition,
    )


_loads = orjson.loads
_value_of = operator.itemgetter("value")
_JSONDecodeError = orjson.JSONDecodeError


def parse_json_fast(
    line: bytes, partitions: frozenset[int]
) -> tuple[bytes | None, bytes | None, int | None, int | None] | None:
    """``(key, value, timestamp, partition)`` of a common JSON line, or None when the line
    needs :func:`parse_json_line` (anything unusual, and every error). ``line`` must hold no
    backslash (the caller checks whole chunks at once)."""
    try:
        obj = _loads(line)
    except _JSONDecodeError:
        return None
    if type(obj) is not dict or not obj.keys() <= FAST_FIELDS:
        return None
    strings = 0
    value = obj.get("value", line)  # line: a marker for "absent"
    if value is line:
        return None
    if value is not None:
        if type(value) is not str:
            return None
        strings += 1
        value = value.encode()
    key = obj.get("key")
    if key is not None:
        if type(key) is not str:
            return None
        strings += 1
        key = key.encode()
    timestamp = obj.get("timestamp")
    if timestamp is not None and (type(timestamp) is not int or not 0 <= timestamp <= INT64_MAX):
        return None
    partition = obj.get("partition")
    if partition is not None and (type(partition) is not int or partition not in partitions):
        return None
    if line.count(b'"') != 2 * (len(obj) + strings):
        return None  # a key given twice (see the module docstring)
    return key, value, timestamp, partition


@dataclass(slots=True)
class ParsedChunk:
    """The records of a chunk of JSON lines, column by column. ``keys``, ``timestamps`` and
    ``partitions`` are None when no line gave one (the common case: one call appends them)."""

    values: list[bytes | None]
    keys: list[bytes | None] | None
    timestamps: list[int | None] | None
    partitions: list[int | None] | None


def parse_json_chunk(lines: list[bytes], partitions: frozenset[int]) -> ParsedChunk | None:
    """The records of non-empty ``lines`` (holding no backslash) parsed at once with one
    orjson call, or None when any line needs :func:`parse_json_line` (then the caller parses
    line by line, which also finds the error). One JSON array of the lines holds exactly one
    object per line or is refused: a line holding two objects, or half of one, changes the
    count or the nesting. The quote count of the lines rules out repeated keys (see the
    module docstring)."""
    if not lines:
        return ParsedChunk([], None, None, None)
    joined = b",".join(lines)
    try:
        objects = _loads(b"[" + joined + b"]")
    except _JSONDecodeError:
        return None
    if len(objects) != len(lines):
        return None
    if set(map(type, objects)) == {dict} and set(map(len, objects)) == {1}:
        # Every line is {"value": ...}: column by column, without a Python loop per line.
        try:
            texts = list(map(_value_of, objects))
        except KeyError:
            return None
        kinds = set(map(type, texts))
        if not kinds <= {str, type(None)}:
            return None
        if type(None) in kinds:
            nulls = texts.count(None)
            values: list[bytes | None] = [None if t is None else t.encode() for t in texts]
        else:
            nulls = 0
            values = list(map(str.encode, texts))
        if joined.count(b'"') != 4 * len(texts) - 2 * nulls:
            return None  # "value" given twice somewhere
        return ParsedChunk(values, None, None, None)
    values = []
    keys: list[bytes | None] = []
    timestamps: list[int | None] = []
    chosen: list[int | None] = []
    any_key = any_timestamp = any_partition = False
    expected_quotes = 0
    for obj in objects:
        if type(obj) is not dict:
            return None
        if len(obj) == 1:  # the common line: {"value": ...}
            value = obj.get("value", joined)  # joined: a marker for "absent"
            if value is None:
                values.append(None)
                keys.append(None)
                timestamps.append(None)
                chosen.append(None)
                expected_quotes += 2
                continue
            if type(value) is not str:
                return None
            values.append(value.encode())
            keys.append(None)
            timestamps.append(None)
            chosen.append(None)
            expected_quotes += 4
            continue
        if not obj.keys() <= FAST_FIELDS:
            return None
        value = obj.get("value", joined)
        if value is joined or (value is not None and type(value) is not str):
            return None
        key = obj.get("key")
        if key is not None and type(key) is not str:
            return None
        timestamp = obj.get("timestamp")
        if timestamp is not None:
            if type(timestamp) is not int or not 0 <= timestamp <= INT64_MAX:
                return None
            any_timestamp = True
        partition = obj.get("partition")
        if partition is not None:
            if type(partition) is not int or partition not in partitions:
                return None
            any_partition = True
        expected_quotes += 2 * len(obj) + (value is not None) * 2 + (key is not None) * 2
        values.append(None if value is None else value.encode())
        if key is not None:
            any_key = True
            keys.append(key.encode())
        else:
            keys.append(None)
        timestamps.append(timestamp)
        chosen.append(partition)
    if joined.count(b'"') != expected_quotes:
        return None  # a key given twice somewhere
    return ParsedChunk(
        values,
        keys if any_key else None,
        timestamps if any_timestamp else None,
        chosen if any_partition else None,
    )
