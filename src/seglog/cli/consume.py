"""``seglog consume TOPIC``: print the records of a topic (like ``kafka-console-consumer.sh``).

Partitions: ``--partition P``, or every partition in partition order. Each partition is read
from its start position up to its log end offset *as it was when the command started*, then
the command ends (it does not wait for new records). ``--max-records N`` stops after N
records in all. Control records (transaction markers) are never printed; records of aborted
transactions are (read_uncommitted, the console consumer's default).

Start position (per partition):

* ``--offset earliest`` (default): the log start offset;
* ``--offset latest``: the log end offset (so nothing is printed);
* ``--offset N``: offset N, which must be in ``[log start, log end]``; needs ``--partition``
  (as in Kafka's console consumer);
* ``--timestamp MS``: the first offset whose record timestamp is >= MS (Kafka's ListOffsets);
  a partition with no such record prints nothing.

``--format text`` (default) writes each value's bytes as they are, one per line (``null`` for
a null value, or ``--null-value MARKER``); ``--print-key`` writes ``key<SEP>value`` with
``--key-separator`` (default a tab). Values holding newlines make text output ambiguous; use
JSON for anything but plain lines.

``--format json`` writes one object per record, on one line::

    {"topic":"t","partition":0,"offset":0,"timestamp":1700000000000,"key":"k","value":"v",
     "headers":{"h":"x"}}

``key`` and ``value`` are the UTF-8 text, or null for a null key or value. Bytes that are not
valid UTF-8 are never mangled: the field is replaced by ``key_base64`` / ``value_base64``
(standard base64), so exactly one of ``value`` and ``value_base64`` is present (and one of
``key`` and ``key_base64``). Likewise ``headers`` is an object of key -> text or null, unless
a header key repeats or a header key or value is not UTF-8: then ``headers_base64`` replaces
it, a list of ``[key_base64, value_base64 or null]`` pairs in record order. ``seglog produce
--format json`` accepts all of these fields, so output can be produced again.

``--read-compacted`` reads as a Pulsar read-compacted reader does (see ``seglog compact``):
per partition, the records of the published compacted copy (one per key, the latest at or
below the copy's compaction horizon) up to the horizon, then the original log's records after
it. A partition without a published copy reads as without the option. The copy is kept
whatever the log start offset (retention and ``delete-records`` do not apply to it), so with
a copy ``--offset earliest`` starts at offset 0 and ``--offset N`` accepts any N from 0 to the
log end; ``--timestamp MS`` finds its offset in the log (as without the option), and the
compacted view is read from there. Every other option works as without it.

After the records, ``Processed a total of N messages`` goes to stderr (Kafka's line).

Damage never shortens the output silently: a corrupt or torn batch, offsets out of place, a
partition leader epoch going down, or (in a topic never compacted, whose configs are known)
a gap in the offsets stops the command with an error naming the file, the position and the
offset being read, after the records before it were printed, and the exit status is 1.
``--skip-corrupt`` reads past the damage instead, from the next whole batch with a valid CRC,
and writes one ``WARNING: skipped FILE positions A..B (offsets X..Y): why`` line to stderr
for each range it passed over.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    json_line,
    non_negative_int,
    open_manager,
    positive_int,
)
from seglog.engine.compaction.compactor import copy_store, iter_compacted_records
from seglog.engine.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Log
from seglog.engine.log.record_scan import ConsumedRecord, SkippedRange
from seglog.errors import InvalidConfigError, OffsetOutOfRangeError, UnknownTopicError
from seglog.format.records import Header
from seglog.format.topic_names import validate_topic_name

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

FETCH_MAX_BYTES = 1024 * 1024  # bytes read at a time (the first batch comes whole if larger)

EPILOG = """\
Examples:
  seglog --data-dir D consume prices --print-key
  seglog --data-dir D consume prices --partition 1 --offset 100 --max-records 10
  seglog --data-dir D consume prices --timestamp 1700000000000 --format json | jq .value
  seglog --data-dir D consume prices --read-compacted --print-key
  seglog --data-dir /var/lib/kafka/data consume orders --format json  # read-only: no lock"""


def _offset_spec(text: str) -> str | int:
    if text in ("earliest", "latest"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an offset (an integer >= 0), 'earliest' or 'latest', got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"an offset must be >= 0, got {value}")
    return value


def register(subparsers: Subparsers) -> None:
    """Add ``seglog consume``."""
    parser = subparsers.add_parser(
        "consume",
        parents=[command_options_parent()],
        help="print the records of a topic",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC", help="topic to read")
    parser.add_argument(
        "--partition",
        type=non_negative_int,
        metavar="P",
        help="read only this partition (default: all, in partition order)",
    )
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--offset",
        type=_offset_spec,
        default="earliest",
        metavar="N|earliest|latest",
        help="where to start (default: earliest); a number needs --partition",
    )
    start.add_argument(
        "--timestamp",
        type=non_negative_int,
        metavar="MS",
        help="start at the first record with timestamp >= MS (epoch milliseconds)",
    )
    parser.add_argument(
        "--max-records", type=positive_int, metavar="N", help="stop after N records in all"
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument(
        "--print-key", action="store_true", help="text: print key<SEP>value instead of value"
    )
    parser.add_argument(
        "--key-separator",
        default="\t",
        metavar="SEP",
        help="text: what separates key and value with --print-key (default: a tab)",
    )
    parser.add_argument(
        "--null-value",
        default="null",
        metavar="MARKER",
        help="text: what a null key or value prints as (default: null)",
    )
    parser.add_argument(
        "--read-compacted",
        action="store_true",
        help="read the compacted copy up to its horizon, then the log after it "
        "(see 'seglog compact')",
    )
    parser.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="read on past damaged bytes, reporting each skipped range on stderr (default: "
        "stop with an error naming the file, position and offset)",
    )
    parser.set_defaults(handler=run)


# --- rendering --------------------------------------------------------------------------------


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
    """The ``--format json`` object of a record (see the module docstring)."""
    obj: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
    }
    _put_bytes(obj, "key", record.key)
    _put_bytes(obj, "value", record.value)
    _put_headers(obj, record.headers)
    return obj


# --- reading ----------------------------------------------------------------------------------


def start_offset(
    log: Log, offset: str | int, timestamp: int | None, *, read_compacted: bool = False
) -> int:
    """Where to start reading ``log`` (see the module docstring).

    ``read_compacted``: with a published compacted copy, the earliest offset is 0 (the copy
    is kept below the log start offset), and so is the lowest ``--offset N``.
    """
    if timestamp is not None:
        found = log.fetch_offset_by_timestamp(timestamp)
        return log.log_end_offset if found is None else found.offset
    has_copy = read_compacted and copy_store(log).published() is not None
    if offset == "earliest" and has_copy:
        return 0
    if offset in ("earliest", "latest"):
        which = EARLIEST_TIMESTAMP if offset == "earliest" else LATEST_TIMESTAMP
        found = log.fetch_offset_by_timestamp(which)
        assert found is not None  # earliest and latest always answer
        return found.offset
    assert isinstance(offset, int)
    start, end = 0 if has_copy else log.log_start_offset, log.log_end_offset
    if not start <= offset <= end:
        what = "copy start" if has_copy else "log start"
        raise OffsetOutOfRangeError(
            f"offset {offset} is outside [{start}, {end}] ({what}, log end) of "
            f"{log.topic_partition}"
        )
    return offset


def read_partition(
    log: Log, first: int, end: int, limit: int | None, scan: ScanOptions | None = None
) -> Iterator[ConsumedRecord]:
    """Records of ``log`` from ``first`` up to ``end`` (exclusive), at most ``limit``.

    Reads through :meth:`Log.iter_records`, which decodes each batch once and never stops
    silently at damage: it raises ``CorruptRecordError`` (or, with ``scan.skip_corrupt``,
    reports the skipped range and reads on).
    """
    if limit == 0:
        return
    scan = scan or ScanOptions()
    records = log.iter_records(
        first,
        end,
        max_bytes=FETCH_MAX_BYTES,
        skip_corrupt=scan.skip_corrupt,
        on_skip=scan.on_skip,
        check_gaps=scan.check_gaps,
    )
    yield from itertools.islice(records, limit)


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """How a partition is read: past damage or not, and whether offsets must be gap-free."""

    skip_corrupt: bool = False
    check_gaps: bool = False
    on_skip: Callable[[SkippedRange], None] | None = None


def report_skipped(skipped: SkippedRange) -> None:
    """``--skip-corrupt``: one line on stderr per range read past."""
    sys.stdout.flush()
    print(f"WARNING: {skipped.describe()}", file=sys.stderr, flush=True)


def read_compacted_partition(
    log: Log, first: int, end: int, limit: int | None, scan: ScanOptions | None = None
) -> Iterator[ConsumedRecord]:
    """What a read-compacted reader sees of ``log`` from ``first`` up to ``end``
    (exclusive), at most ``limit`` records: the compacted copy up to its horizon, then the
    log after it."""
    if limit == 0:
        return
    count = 0
    scan = scan or ScanOptions()
    records = iter_compacted_records(
        log, first, end, skip_corrupt=scan.skip_corrupt, on_skip=scan.on_skip
    )
    try:
        for record in records:
            yield record
            count += 1
            if limit is not None and count >= limit:
                return
    finally:
        # A generator: closing it releases the copy's segment files as soon as the limit is
        # reached, not when it is garbage collected.
        close = getattr(records, "close", None)
        if close is not None:
            close()


def _binary_stdout() -> IO[bytes]:
    sys.stdout.flush()
    return sys.stdout.buffer


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog consume``."""
    validate_topic_name(args.topic)
    if isinstance(args.offset, int) and args.partition is None:
        raise InvalidConfigError("--offset N needs --partition (offsets are per partition)")
    separator = args.key_separator.encode("utf-8", "surrogateescape")
    null_marker = args.null_value.encode("utf-8", "surrogateescape")
    is_json = args.format == "json"
    out = _binary_stdout()
    counted = _Count()
    try:
        _consume(args, out, separator, null_marker, is_json, counted)
    finally:
        # Kafka's closing line, also when the read stopped at damage (the error follows it);
        # not when the command failed before reading (a wrong path or topic).
        if counted.is_reading:
            print(f"Processed a total of {counted.records} messages", file=sys.stderr)
    return EXIT_OK


@dataclass(slots=True)
class _Count:
    records: int = 0
    is_reading: bool = False


def _consume(
    args: argparse.Namespace,
    out: IO[bytes],
    separator: bytes,
    null_marker: bytes,
    is_json: bool,
    counted: _Count,
) -> None:
    total = 0
    with open_manager(args) as manager:
        checkpoints = manager.cleaner_checkpoints()
        if args.partition is None:
            partitions = manager.partitions_of(args.topic)
            if not partitions:
                raise UnknownTopicError(f"topic {args.topic!r} does not exist")
        else:
            partitions = [args.partition]
        for partition in partitions:
            log = manager.get_log(args.topic, partition)
            end = log.log_end_offset
            first = start_offset(
                log, args.offset, args.timestamp, read_compacted=args.read_compacted
            )
            limit = None if args.max_records is None else args.max_records - total
            if limit == 0:
                break
            reader = read_compacted_partition if args.read_compacted else read_partition
            scan = ScanOptions(
                skip_corrupt=args.skip_corrupt,
                # A log never compacted has contiguous offsets: a gap there is damage. A
                # broker's topic whose configs are unknown may have been compacted there.
                check_gaps=manager.is_config_known(args.topic)
                and not log.config.is_compacted
                and (args.topic, partition) not in checkpoints,
                on_skip=report_skipped,
            )
            counted.is_reading = True
            for record in reader(log, first, end, limit, scan):
                total += 1
                counted.records = total
                if is_json:
                    line = json_line(record_json(args.topic, partition, record)).encode()
                    out.write(line + b"\n")
                    continue
                value = null_marker if record.value is None else record.value
                if args.print_key:
                    key = null_marker if record.key is None else record.key
                    out.write(key + separator + value + b"\n")
                else:
                    out.write(value + b"\n")
        out.flush()
