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

Records are appended **as lines arrive**, in batches, as Kafka's producer sends them: a
partition's batch is appended when it reaches ``--batch-size`` bytes or ``--linger-ms`` after
its first record (so ``tail -f app.log | seglog produce T`` shows each line to readers within
the linger time), and at the end of input. Defaults are those of ``kafka-console-producer.sh``:
16384 bytes (at most half the topic's ``segment.bytes``) and 1000 ms. The topic's
``compression.type`` applies, or ``--compression-codec`` when it is ``producer``.

Kafka's console producer options are accepted too: ``--topic T`` (instead of TOPIC),
``--property parse.key=true`` with ``--property key.separator=SEP`` (default a tab, as Kafka)
and ``--property null.marker=M`` (key or value equal to M is null, as Kafka),
``--compression-codec [none|gzip|snappy|lz4|zstd]`` (gzip when given without a value, as
Kafka), ``--batch-size`` / ``--max-partition-memory-bytes`` (``batch.size``), ``--timeout``
(``linger.ms``), and ``--producer-property KEY=VALUE`` / ``--producer.config FILE`` for
``batch.size``, ``linger.ms`` and ``compression.type`` (any other producer property is
refused, naming it: there is no broker to send it to). Options given on the command line
win over ``--producer-property``, which wins over ``--producer.config``, as in Kafka.

At the end of input the records are fsynced, then the summary (records, and the offsets
written per partition) goes to stderr, status 0. On a bad line, the records of the lines
before it are produced (as a console producer would have sent them), the summary says which,
and the status is 1. Ctrl-C (SIGINT) or SIGTERM does the same with status 130 (143). When
writing fails (a full disk), the error says how many records are safe (written and synced)
and what failed.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import stat
import sys
from typing import IO, TYPE_CHECKING

from seglog.cli.arg_types import non_negative_int
from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    key_value,
    open_manager,
    positive_int,
)
from seglog.cli.produce_input import (
    InputLineError,
    ParsedChunk,
    parse_json_chunk,
    parse_json_fast,
    parse_json_line,
)
from seglog.cli.produce_live import InputChunks, LingeringProducer, StopSignals
from seglog.cli.produce_options import (
    CODECS,
    DEFAULT_BATCH_SIZE,
    DEFAULT_LINGER_MS,
    Settings,
    settings_of,
)
from seglog.cli.progress import BYTES, ProgressBar
from seglog.engine.producer import ProduceSummary
from seglog.errors import SeglogError
from seglog.storage.atomic import TMP_SUFFIX

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

DEFAULT_MAX_LINE_BYTES = 1024 * 1024

EPILOG = """\
Examples:
  printf 'AAPL:189.5\\nMSFT:402.1\\nAAPL:-\\n' | \\
      seglog --data-dir D produce prices --key-separator : --null-value -
  echo '{"key": "AAPL", "value": "190", "headers": {"src": "feed"}}' | \\
      seglog --data-dir D produce prices --format json
  tail -f app.log | seglog --data-dir D produce --topic app-logs --linger-ms 200
  seglog --data-dir D produce --topic prices --property parse.key=true \\
      --property key.separator=: --compression-codec < prices.txt"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog produce``."""
    parser = subparsers.add_parser(
        "produce",
        parents=[command_options_parent()],
        help="append the lines of stdin to a topic, as they arrive",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC", nargs="?", help="topic to produce to")
    parser.add_argument(
        "--topic", dest="topic_option", metavar="TOPIC", help="the topic, as Kafka spells it"
    )
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
    parser.add_argument(
        "--batch-size",
        "--max-partition-memory-bytes",
        dest="batch_size",
        type=positive_int,
        metavar="BYTES",
        help=f"batch.size: a batch is appended when full (default {DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--linger-ms",
        "--timeout",
        dest="linger_ms",
        type=non_negative_int,
        metavar="MS",
        help="linger.ms: a batch is appended at most MS after its first record "
        f"(default {DEFAULT_LINGER_MS}, as kafka-console-producer.sh --timeout)",
    )
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        choices=CODECS,
        metavar="CODEC",
        help="none, gzip (when given without a value), snappy, lz4 or zstd; used when the "
        "topic's compression.type is producer",
    )
    parser.add_argument(
        "--property",
        dest="properties",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="Kafka's line reader properties: parse.key=true|false, key.separator=SEP "
        "(default a tab), null.marker=M",
    )
    parser.add_argument(
        "--producer-property",
        dest="producer_properties",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="batch.size, linger.ms or compression.type",
    )
    parser.add_argument(
        "--producer.config",
        dest="producer_config",
        metavar="FILE",
        help="a producer properties file (batch.size, linger.ms, compression.type)",
    )
    parser.set_defaults(handler=run)


# --- lines to records -------------------------------------------------------------------------


class LineFeeder:
    """Splits chunks of input into lines and hands their records to the producer."""

    def __init__(
        self, producer: LingeringProducer, settings: Settings, json_lines: bool, max_line: int
    ) -> None:
        self.producer = producer
        self.settings = settings
        self.json_lines = json_lines
        self.max_line = max_line
        self.clock_ms = producer.clock_ms
        self.leftover = b""
        self.lines_done = 0

    def feed(self, data: bytes) -> None:
        """The complete lines of ``data`` (after what was left of the last chunk)."""
        block = self.leftover + data if self.leftover else data
        end = block.rfind(b"\n")
        if end < 0:
            self.leftover = block
            if len(block) > self.max_line + 1:  # room for a "\r"
                self._too_long(self.lines_done + 1)
            return
        self.leftover = block[end + 1 :]
        self._lines(block[:end])

    def finish(self) -> None:
        """The last line, when the input does not end with a newline."""
        if self.leftover:
            block, self.leftover = self.leftover, b""
            self._lines(block)

    def _too_long(self, number: int) -> None:
        raise InputLineError(number, f"longer than --max-line-bytes {self.max_line}")

    def _lines(self, block: bytes) -> None:
        lines = block.split(b"\n")
        base = self.lines_done
        if b"\r" in block:
            lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        too_long = None
        if max(map(len, lines)) > self.max_line:
            too_long = next(i for i, line in enumerate(lines) if len(line) > self.max_line)
            lines = lines[:too_long]  # the lines before it are produced, then the error
        if self.json_lines:
            self._json(lines, base, b"\\" not in block)
        else:
            self._text(lines, base)
        self.lines_done = base + len(lines)
        if too_long is not None:
            self._too_long(base + too_long + 1)

    def _text(self, lines: list[bytes], base: int) -> None:
        producer = self.producer
        add, choose, parse = producer.add, producer.partition_for, self.settings.text.parse
        now = self.clock_ms()
        for index, line in enumerate(lines):
            if line:
                key, value = parse(base + index + 1, line)
                add(choose(key), now, key, value)

    def _json(self, lines: list[bytes], base: int, fast: bool) -> None:
        producer = self.producer
        now = self.clock_ms()
        if fast:
            chunk = parse_json_chunk([line for line in lines if line], producer.partition_set)
            if chunk is not None:
                self._json_chunk(chunk, now)
                return
        add, choose, partitions = producer.add, producer.partition_for, producer.partition_set
        for index, line in enumerate(lines):
            if not line:
                continue
            parsed = parse_json_fast(line, partitions) if fast else None
            if parsed is None:
                record = parse_json_line(base + index + 1, line, partitions)
                key, value = record.key, record.value
                partition = choose(key) if record.partition is None else record.partition
                timestamp = now if record.timestamp_ms is None else record.timestamp_ms
                add(partition, timestamp, key, value, record.headers)
            else:
                key, value, given_timestamp, given_partition = parsed
                add(
                    choose(key) if given_partition is None else given_partition,
                    now if given_timestamp is None else given_timestamp,
                    key,
                    value,
                )

    def _json_chunk(self, chunk: ParsedChunk, now: int) -> None:
        producer = self.producer
        keys, values = chunk.keys, chunk.values
        if len(producer.partitions) == 1 and chunk.timestamps is None and chunk.partitions is None:
            producer.add_many(producer.partitions[0], now, keys, values)
            return
        add, choose = producer.add, producer.partition_for
        timestamps, partitions = chunk.timestamps, chunk.partitions
        for index, value in enumerate(values):
            key = None if keys is None else keys[index]
            partition = None if partitions is None else partitions[index]
            timestamp = None if timestamps is None else timestamps[index]
            add(
                choose(key) if partition is None else partition,
                now if timestamp is None else timestamp,
                key,
                value,
            )


# --- the command ------------------------------------------------------------------------------


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


def summary_lines(topic: str, summary: ProduceSummary) -> list[str]:
    """What ``produce`` prints on stderr."""
    lines = [f"Produced {summary.records} record(s) to topic {topic}."]
    for partition in sorted(summary.offsets):
        first, last = summary.offsets[partition]
        lines.append(f"  partition {partition}: offsets {first}..{last} ({last - first + 1})")
    return lines


class WriteFailedError(SeglogError):
    """Writing failed after some records were produced; the message says which are safe."""


def write_failure(exc: OSError, summary: ProduceSummary, synced: bool) -> WriteFailedError:
    """The error for an ``OSError`` while producing (see the module docstring): what failed
    (the file, never its ``.tmp``), and which records are safe."""
    path = getattr(exc, "path", None) or exc.filename
    reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
    if path is not None:
        what = f"writing {os.fsdecode(path).removesuffix(TMP_SUFFIX)} failed: {reason}"
    else:
        what = f"writing failed: {reason}"
    if synced:
        safe = (
            f"all {summary.records} record(s) produced are safe (written and synced); the "
            "directory was not marked as cleanly shut down, so its next open checks the logs"
        )
    elif summary.records:
        safe = (
            f"the {summary.records} record(s) written before it (the summary above) could not "
            "be synced: the next open recovers the log and keeps every whole batch"
        )
    else:
        safe = "no record was written"
    return WriteFailedError(f"{what}; {safe}")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog produce``."""
    settings = settings_of(args)
    stdin = sys.stdin.buffer
    total = input_size_bytes(stdin)
    stop = StopSignals()
    producer: LingeringProducer | None = None
    synced = False
    try:
        with open_manager(args, writes=True) as manager, stop.installed():
            producer = LingeringProducer(
                manager,
                settings.topic,
                batch_size=settings.batch_size,
                linger_ms=settings.linger_ms,
                codec=settings.codec,
            )
            chunks = InputChunks(stdin, stop)
            feeder = LineFeeder(producer, settings, args.format == "json", args.max_line_bytes)
            try:
                with ProgressBar("producing", total=total, unit=BYTES) as bar:
                    while True:
                        data = chunks.read(producer.seconds_until_due())
                        if data is None:  # a batch lingered enough
                            producer.send()
                            continue
                        if not data:
                            feeder.finish()
                            break
                        feeder.feed(data)
                        producer.send()
                        bar.update(chunks.bytes_read)
                        stop.check()
                producer.send(everything=True)
                producer.flush()
                synced = True
            except (InputLineError, KeyboardInterrupt):
                # The records of the lines before are produced, as a console producer would
                # have sent them.
                producer.send(everything=True)
                producer.flush()
                synced = True
                raise
            except OSError:
                # Nothing more is written; what was written is synced if the disk lets us.
                try:
                    producer.flush()
                    synced = True
                except OSError:
                    pass
                raise
            finally:
                for text in summary_lines(settings.topic, producer.summary):
                    print(text, file=sys.stderr)
    except KeyboardInterrupt:
        return 128 + (stop.signum or signal.SIGINT)
    except OSError as exc:
        if producer is None or isinstance(exc, BrokenPipeError):
            raise
        first: BaseException = exc  # a failed close reports the write that failed first
        while isinstance(first.__context__, OSError):
            first = first.__context__
        assert isinstance(first, OSError)
        raise write_failure(first, producer.summary, synced) from exc
    return EXIT_OK
