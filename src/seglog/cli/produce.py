"""``seglog produce TOPIC``: append the lines of stdin to a topic as records.

Input is read as bytes, one record per line. A line ends at ``\\n``; a ``\\r`` just before it
is dropped too (as Kafka's console producer's ``readLine`` does). Empty lines are skipped but
counted, so line numbers in errors are the input's own. No line may be longer than
``--max-line-bytes`` (default 1 MiB, terminator not counted).

Text lines (the default): the whole line is the value and the key is null, unless

* ``--key-separator SEP``: the line is split at the first SEP into key and value; a line
  without SEP is an error;
* ``--null-value MARKER``: a value equal to MARKER is produced as null (a tombstone). Keys
  are never null in text mode (use ``--format json``).

Keys and values are the line's bytes as given: text mode never decodes them.

``--format json``: each line is one JSON object (UTF-8)::

    {"key": "k", "value": "v", "timestamp": 1700000000000, "headers": {"h": "x"}, "partition": 0}

* ``value`` (text or null) is required, or ``value_base64`` instead (base64 bytes, or null);
* ``key`` (text or null) or ``key_base64`` (base64 or null): optional, at most one;
* ``headers``: an object of key -> text or null, or ``headers_base64``: a list of
  ``[key_base64, value_base64 or null]`` pairs (repeated keys, binary values); at most one;
* ``timestamp``: CreateTime in ms, an integer >= 0 (default: now);
* ``partition``: an existing partition (default: the key's murmur2 partition for a keyed
  record, round-robin for a keyless one, as Kafka's clients do).

The ``_base64`` forms are what ``seglog consume --format json`` writes for bytes that are not
valid UTF-8, so its output (less ``topic`` and ``offset``) can be produced again. Anything
else (not an object, an unknown field, a wrong type, a duplicate field, bad base64, a negative
timestamp, a partition the topic does not have) is an error naming the line.

On an error, the records of the lines before it are produced (as a console producer would
have sent them), the summary says which, and the exit status is 1. Ctrl-C does the same with
status 130. The summary (records, and the offsets written per partition) goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import io
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    deferred_interrupts,
    open_manager,
    positive_int,
)
from seglog.cli.progress import BYTES, ProgressBar
from seglog.cli.strict_json import kind_of, loads_strict
from seglog.config import LogConfig
from seglog.engine.producer import Producer, ProduceRecord, ProduceSummary
from seglog.errors import InvalidRecordError
from seglog.format.records import Header
from seglog.format.topic_names import validate_topic_name

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

DEFAULT_MAX_LINE_BYTES = 1024 * 1024
MAX_LINE_BYTES_LIMIT = 64 * 1024 * 1024
PENDING_RECORDS_MAX = 1000  # records parsed, then handed to the producer in one go
PENDING_BYTES_MAX = 4 * 1024 * 1024
# The engine's Producer buffers by record count only and appends each partition's buffer as one
# chunk. The command hands it at most this many (over-estimated) bytes between flushes, and at
# most one batch's worth (max.message.bytes) and half a segment: so memory stays bounded, the
# log never rejects a chunk as larger than segment.bytes, and each append is a single batch, as
# a Kafka producer's are, so every offset index entry names its batch's last offset (what
# kafka-dump-log --verify-index-only checks).
APPEND_BYTES_MAX = 32 * 1024 * 1024
BATCH_OVERHEAD_BYTES = 61
RECORD_OVERHEAD_BYTES = 40  # varints of a record at their longest, and then some
HEADER_OVERHEAD_BYTES = 10
PROGRESS_STEP_BYTES = 256 * 1024  # the bar is updated at most once per this many bytes read
INT64_MAX = (1 << 63) - 1
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

EPILOG = """\
Examples:
  printf 'AAPL:189.5\\nMSFT:402.1\\nAAPL:-\\n' | \\
      seglog --data-dir D produce prices --key-separator : --null-value -
  echo '{"key": "AAPL", "value": "190", "headers": {"src": "feed"}}' | \\
      seglog --data-dir D produce prices --format json"""


class InputLineError(InvalidRecordError):
    """A line of input that is not a valid record; ``line`` is its 1-based number."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


def register(subparsers: Subparsers) -> None:
    """Add ``seglog produce``."""
    parser = subparsers.add_parser(
        "produce",
        parents=[command_options_parent()],
        help="append the lines of stdin to a topic",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC", help="topic to produce to")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="input lines: text (default) or one JSON object per line",
    )
    parser.add_argument(
        "--key-separator",
        metavar="SEP",
        help="text: split each line at the first SEP into key and value",
    )
    parser.add_argument(
        "--null-value",
        metavar="MARKER",
        help="text: a value equal to MARKER is produced as null (a tombstone)",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="longest line accepted, in bytes (default %(default)s)",
    )
    parser.set_defaults(handler=run)


# --- reading lines ----------------------------------------------------------------------------


def read_lines(
    stream: IO[bytes] | _CountingReader, max_line_bytes: int
) -> Iterator[tuple[int, bytes]]:
    """``(line number, content)`` of each non-empty line, terminator removed."""
    number = 0
    while True:
        raw = stream.readline(max_line_bytes + 2)  # room for the content and "\r\n"
        if not raw:
            return
        number += 1
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        if len(raw) > max_line_bytes:
            raise InputLineError(number, f"longer than --max-line-bytes {max_line_bytes}")
        if raw:
            yield number, raw


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How text lines become records."""

    key_separator: bytes | None
    null_value: bytes | None

    def parse(self, number: int, line: bytes) -> ProduceRecord:
        """The record of one text line."""
        key: bytes | None = None
        value: bytes | None = line
        if self.key_separator is not None:
            key, sep, value = line.partition(self.key_separator)
            if not sep:
                shown = self.key_separator.decode("utf-8", "backslashreplace")
                raise InputLineError(number, f"no key separator {shown!r} in the line")
        if self.null_value is not None and value == self.null_value:
            value = None
        return ProduceRecord(value=value, key=key)


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
    unknown = sorted(set(obj) - JSON_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(JSON_FIELDS))
        raise InputLineError(
            number, f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: {allowed})"
        )
    has_value, value = _bytes_field(number, obj, "value")
    if not has_value:
        raise InputLineError(number, "'value' is required (a string or null)")
    _, key = _bytes_field(number, obj, "key")
    partition = _int_field(number, obj, "partition", (1 << 31) - 1)
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


def _record_bytes(record: ProduceRecord) -> int:
    size = RECORD_OVERHEAD_BYTES + len(record.key or b"") + len(record.value or b"")
    for header in record.headers:
        size += HEADER_OVERHEAD_BYTES + len(header.key_bytes()) + len(header.value or b"")
    return size


# --- the command ------------------------------------------------------------------------------


class _CountingReader:
    """A binary stream's ``readline``, counting the bytes read (for the progress bar)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.bytes_read = 0

    def readline(self, size: int = -1) -> bytes:
        """The next line (at most ``size`` bytes), as ``IO.readline``."""
        data = self._stream.readline(size)
        self.bytes_read += len(data)
        return data


def input_size_bytes(stream: IO[bytes]) -> int | None:
    """Bytes left to read when ``stream`` is a regular file (``produce < file``), else None."""
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        return max(info.st_size - os.lseek(fd, 0, os.SEEK_CUR), 0)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


class _Sender:
    """Hands parsed records to the producer in groups, with interrupts held back."""

    def __init__(self, producer: Producer, flush_bytes: int) -> None:
        self.producer = producer
        self.flush_bytes = flush_bytes
        self.pending: list[tuple[ProduceRecord, int]] = []  # with their estimated sizes
        self.pending_bytes = 0
        self.unflushed_bytes = 0

    def add(self, record: ProduceRecord) -> None:
        size = _record_bytes(record)
        self.pending.append((record, size))
        self.pending_bytes += size
        if len(self.pending) >= PENDING_RECORDS_MAX or self.pending_bytes >= PENDING_BYTES_MAX:
            self.send_pending()

    def send_pending(self) -> None:
        with deferred_interrupts():
            for record, size in self.pending:
                if self.unflushed_bytes and self.unflushed_bytes + size > self.flush_bytes:
                    self.producer.flush()
                    self.unflushed_bytes = 0
                self.producer.send(record)
                self.unflushed_bytes += size
            self.pending.clear()
            self.pending_bytes = 0

    def finish(self) -> ProduceSummary:
        self.send_pending()
        with deferred_interrupts():
            return self.producer.flush()


def append_bytes_limit(config: LogConfig) -> int:
    """Most (estimated) bytes handed to the producer between two flushes (see above)."""
    batch_bytes = config.max_message_bytes - BATCH_OVERHEAD_BYTES
    return max(1, min(APPEND_BYTES_MAX, config.segment_bytes // 2, batch_bytes))


def _encode_arg(text: str | None) -> bytes | None:
    # Command-line text back to the bytes the user typed (undecodable bytes survive).
    return None if text is None else text.encode("utf-8", "surrogateescape")


def summary_lines(topic: str, summary: ProduceSummary) -> list[str]:
    """What ``produce`` prints on stderr."""
    lines = [f"Produced {summary.records} record(s) to topic {topic}."]
    for partition in sorted(summary.offsets):
        first, last = summary.offsets[partition]
        lines.append(f"  partition {partition}: offsets {first}..{last} ({last - first + 1})")
    return lines


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog produce``."""
    validate_topic_name(args.topic)
    if args.format == "json" and (args.key_separator is not None or args.null_value is not None):
        raise InvalidRecordError(
            "--key-separator and --null-value are for text input; JSON lines say it themselves"
        )
    if args.key_separator == "":
        raise InvalidRecordError("--key-separator cannot be empty")
    if args.max_line_bytes > MAX_LINE_BYTES_LIMIT:
        raise InvalidRecordError(f"--max-line-bytes is above the limit {MAX_LINE_BYTES_LIMIT}")
    text_format = TextFormat(_encode_arg(args.key_separator), _encode_arg(args.null_value))
    stdin = _CountingReader(sys.stdin.buffer)
    with open_manager(args, writes=True) as manager:
        producer = Producer(manager, args.topic)
        partitions = frozenset(producer.partitions)
        sender = _Sender(producer, append_bytes_limit(manager.log_config(args.topic)))
        try:
            bar = ProgressBar("producing", total=input_size_bytes(sys.stdin.buffer), unit=BYTES)
            with bar:
                for number, line in read_lines(stdin, args.max_line_bytes):
                    if args.format == "json":
                        sender.add(parse_json_line(number, line, partitions))
                    else:
                        sender.add(text_format.parse(number, line))
                    if stdin.bytes_read - bar.completed >= PROGRESS_STEP_BYTES:
                        bar.update(stdin.bytes_read)
                bar.update(stdin.bytes_read)
            sender.finish()
        except (InputLineError, KeyboardInterrupt):
            # The records of the lines before are produced, as a console producer would
            # have sent them. (After an engine or I/O error nothing more is written.)
            sender.finish()
            raise
        finally:
            for text in summary_lines(args.topic, producer.summary):
                print(text, file=sys.stderr)
    return EXIT_OK
