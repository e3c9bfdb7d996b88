"""``seglog consume TOPIC``: print the records of a topic (like ``kafka-console-consumer.sh``).

Partitions: ``--partition P``, or every partition in partition order. Each partition is read
from its start position up to its log end offset *as it was when the command started*, then
the command ends, unless ``--follow`` is given: then it keeps polling the partitions (every
``--poll-ms``, reopening each read-only to see what other processes appended) and prints new
records as they arrive, partition by partition, until Ctrl-C, ``--timeout-ms`` without a new
record, or ``--max-records``. The partitions followed are those of the start.
``--max-records N`` (Kafka's ``--max-messages``) stops after N records in all. Control
records (transaction markers) are never printed; records of aborted transactions are
(read_uncommitted, the console consumer's default).

Start position (per partition):

* ``--offset earliest`` (default): the log start offset;
* ``--offset latest``: the log end offset (so nothing is printed);
* ``--offset N``: offset N, which must be in ``[log start, log end]``; needs ``--partition``
  (as in Kafka's console consumer);
* ``--timestamp MS``: the first offset whose record timestamp is >= MS (Kafka's ListOffsets);
  a partition with no such record prints nothing.

``--format text`` (default) writes each value's bytes as they are, one per line (``null`` for
a null value, or ``--null-value MARKER``); ``--print-key`` writes ``key<SEP>value`` with
``--key-separator`` (default a tab). This is Kafka's console consumer layout, and its
``--property print.timestamp=true`` (``print.partition``, ``print.offset``, ``print.headers``,
``print.key``, ``print.value``, ``key.separator``, ``line.separator``, ``headers.separator``,
``null.literal``) add fields exactly as Kafka prints them. Values holding newlines make text
output ambiguous; use JSON for anything but plain lines. kcat's ``-f FORMAT`` (``%t %p %o %T
%k %K %s %S %R %h %%``, ``\\n`` ``\\t`` escapes) prints what its format string says.

Kafka's options are accepted as aliases: ``--topic``, ``--from-beginning``, ``--max-messages``,
``--timeout-ms``, ``--isolation-level``, ``--property``, ``--formatter``. ``--isolation-level
read_committed`` reads each partition up to its last stable offset (the first offset of its
earliest open transaction, else the log end) and leaves out the records of aborted
transactions, as Kafka's console consumer with that level does; with ``--follow`` the read
moves on as transactions end.

``--format json`` writes one object per record, on one line::

    {"topic":"t","partition":0,"offset":0,"timestamp":1700000000000,
     "timestampType":"CreateTime","key":"k","value":"v","headers":{"h":"x"}}

``timestampType`` is ``CreateTime``, ``LogAppendTime`` (the broker stamped the batch; the
timestamp is then the batch's, as Kafka reports it) or ``NoTimestampType`` (v0 messages).

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

After the records, ``Processed a total of N messages`` goes to stderr (Kafka's line), also
after Ctrl-C (exit status 130). When the reader of stdout goes away (``seglog consume T |
head -1``) the command stops quietly with status 0, as reading less than everything is what
the pipeline asked for; the count line still goes to stderr.

Large reads of ``--format json`` and of the plain text layout take a fast path (whole chunks
decoded into columns; JSON lines written by one compiled pass, the first run on a machine
compiling it once) that writes exactly the same bytes.

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
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from seglog.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    broker_config,
    open_manager,
)
from seglog.cli.consume_options import (
    Output,
    register_parser,
    resolve_offset,
    resolve_output,
    resolve_topic,
)
from seglog.core.isolation import IsolationLevel
from seglog.engine.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Log
from seglog.errors import InvalidConfigError, OffsetOutOfRangeError, UnknownTopicError
from seglog.format.topic_names import validate_topic_name

# The compacted copy's reader (--read-compacted) and the one-partition opener (--follow) are
# imported where they are used: most reads need neither, and every import is start-up time.
if TYPE_CHECKING:
    from seglog.cli.common import Subparsers
    from seglog.engine.log.record_scan import ConsumedRecord, SkippedRange

FETCH_MAX_BYTES = 1024 * 1024  # bytes read at a time (the first batch comes whole if larger)
#: ``auto`` (default): the fast path for partitions holding at least FAST_PATH_MIN_BYTES;
#: ``fast``: always where the output allows it; ``slow``: never. For tests and benchmarks.
FAST_PATH_ENV = "SEGLOG_CONSUME_PATH"
FAST_PATH_MIN_BYTES = 4 * 1024 * 1024  # below this, numpy/numba imports cost more than they save

EPILOG = """\
Examples:
  seglog --data-dir D consume prices --print-key
  seglog --data-dir D consume prices --partition 1 --offset 100 --max-records 10
  seglog --data-dir D consume prices --timestamp 1700000000000 --format json | jq .value
  seglog --data-dir D consume prices --read-compacted --print-key
  seglog --data-dir D consume --topic prices --from-beginning --max-messages 5 \\
      --property print.key=true --property print.timestamp=true
  seglog --data-dir D consume prices -f '%t [%p] @%o: %k=%s\\n'
  seglog --data-dir D consume prices --follow --timeout-ms 10000
  seglog --data-dir /var/lib/kafka/data consume orders --format json  # read-only: no lock"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog consume``."""
    parser = register_parser(subparsers, __doc__ or "", EPILOG)
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
    # Read-only, stdout flushed by run(): nothing to do at exit but tear down (main.py).
    parser.set_defaults(handler=run, exit_at_once=True)


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
    has_copy = False
    if read_compacted:
        from seglog.engine.compaction.compactor import copy_store

        has_copy = copy_store(log).published() is not None
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
        isolation_level=scan.isolation_level,
    )
    yield from itertools.islice(records, limit)


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """How a partition is read: past damage or not, and whether offsets must be gap-free."""

    skip_corrupt: bool = False
    check_gaps: bool = False
    on_skip: Callable[[SkippedRange], None] | None = None
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED


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
    from seglog.engine.compaction.compactor import iter_compacted_records

    count = 0
    scan = scan or ScanOptions()
    records = iter_compacted_records(
        log,
        first,
        end,
        skip_corrupt=scan.skip_corrupt,
        on_skip=scan.on_skip,
        isolation_level=scan.isolation_level,
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


# --- the command ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Count:
    records: int = 0
    is_reading: bool = False


@dataclass(slots=True)
class _Reading:
    """What every partition read of one command shares."""

    topic: str
    output: Output
    limit: int | None
    read_compacted: bool
    skip_corrupt: bool
    read_committed: bool
    out: IO[bytes]
    counted: _Count
    scans: dict[int, ScanOptions] = field(default_factory=dict)

    @property
    def remaining(self) -> int | None:
        """Records still allowed by ``--max-records`` (None: no limit)."""
        return None if self.limit is None else self.limit - self.counted.records


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog consume``."""
    topic = resolve_topic(args)
    validate_topic_name(topic)
    offset = resolve_offset(args)
    if isinstance(offset, int) and args.partition is None:
        raise InvalidConfigError("--offset N needs --partition (offsets are per partition)")
    output = resolve_output(args)
    sys.stdout.flush()
    counted = _Count()
    reading = _Reading(
        topic=topic,
        output=output,
        limit=args.max_records,
        read_compacted=args.read_compacted,
        skip_corrupt=args.skip_corrupt,
        read_committed=args.isolation_level == "read_committed",
        out=sys.stdout.buffer,
        counted=counted,
    )
    status = EXIT_OK
    try:
        _consume(args, offset, reading)
        reading.out.flush()
    except KeyboardInterrupt:
        # Kafka's console consumer prints its count on Ctrl-C too.
        counted.is_reading = True
        status = EXIT_INTERRUPTED
        _flush_quietly(reading.out)
    except BrokenPipeError:
        # The reader of stdout went away (``| head -1``): it asked for no more. Stop quietly.
        _silence_stdout()
    finally:
        # Kafka's closing line, also when the read stopped at damage (the error follows it);
        # not when the command failed before reading (a wrong path or topic).
        if counted.is_reading:
            print(f"Processed a total of {counted.records} messages", file=sys.stderr)
    return status


def _flush_quietly(out: IO[bytes]) -> None:
    try:
        out.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError:
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured)
        pass


def _consume(args: argparse.Namespace, offset: str | int, reading: _Reading) -> None:
    topic = reading.topic
    positions: dict[int, int] = {}
    with open_manager(args) as manager:
        checkpoints = manager.cleaner_checkpoints()
        if args.partition is None:
            partitions = manager.partitions_of(topic)
            if not partitions:
                raise UnknownTopicError(f"topic {topic!r} does not exist")
        else:
            partitions = [args.partition]
        plans: list[tuple[int, Log, int, int]] = []
        for partition in partitions:
            log = manager.get_log(topic, partition)
            end = readable_end(log, reading.read_committed)
            first = start_offset(log, offset, args.timestamp, read_compacted=args.read_compacted)
            if offset == "latest":
                first = end  # the LSO under read_committed, as a Kafka consumer's latest
            reading.scans[partition] = ScanOptions(
                skip_corrupt=args.skip_corrupt,
                # A log never compacted has contiguous offsets: a gap there is damage. A
                # broker's topic whose configs are unknown may have been compacted there.
                check_gaps=manager.is_config_known(topic)
                and not log.config.is_compacted
                and (topic, partition) not in checkpoints,
                on_skip=report_skipped,
                isolation_level=IsolationLevel.parse(args.isolation_level),
            )
            plans.append((partition, log, first, end))
        reading.counted.is_reading = True
        for partition, log, first, end in plans:
            if reading.remaining == 0:
                return
            read_range(reading, log, partition, first, end)
            positions[partition] = max(first, end)  # read_committed: first may pass the LSO
    if args.follow:
        reading.out.flush()
        _follow(args, reading, positions)


def _follow(args: argparse.Namespace, reading: _Reading, positions: dict[int, int]) -> None:
    """Poll the partitions for records appended after ``positions`` (module docstring)."""
    from seglog.engine.compaction.partition_reader import open_partition_log

    broker = broker_config(args)
    timeout = None if args.timeout_ms is None else args.timeout_ms / 1000
    last_data = time.monotonic()
    while reading.remaining != 0:
        time.sleep(args.poll_ms / 1000)
        before = reading.counted.records
        for partition, position in positions.items():
            log = open_partition_log(broker, reading.topic, partition)
            try:
                end = readable_end(log, reading.read_committed)
                if end > position:
                    read_range(reading, log, partition, position, end)
                    positions[partition] = end
            finally:
                log.close()
            if reading.remaining == 0:
                break
        reading.out.flush()
        now = time.monotonic()
        if reading.counted.records > before:
            last_data = now
        elif timeout is not None and now - last_data >= timeout:
            return


def read_range(reading: _Reading, log: Log, partition: int, first: int, end: int) -> None:
    """Write the records of ``[first, end)`` of one partition, fast path first when it fits."""
    skip = 0
    if _use_fast_path(reading, log):
        from seglog.cli.consume_fast import FastRequest, FastState, fast_lines
        from seglog.core.aborted_batches import AbortedIntervals

        layout = reading.output.layout
        request = FastRequest(
            topic=reading.topic,
            partition=partition,
            first=first,
            end=end,
            limit=reading.remaining,
            check_gaps=reading.scans[partition].check_gaps,
            kind=reading.output.kind,
            print_key=layout is not None and layout.print_key,
            key_separator=b"\t" if layout is None else layout.key_separator,
            null_literal=b"null" if layout is None else layout.null_literal,
            aborted=AbortedIntervals(log.aborted_transactions(first, end))
            if reading.read_committed
            else None,
        )
        state = FastState()
        base = reading.counted.records
        for piece in fast_lines(log, request, state):
            reading.out.write(piece)
            reading.counted.records = base + state.records
        if not state.handed_over:
            return
        skip = state.records
        reading.counted.records = base  # the slow path counts them again below
    limit = reading.remaining
    reader = read_compacted_partition if reading.read_compacted else read_partition
    records = reader(log, first, end, limit, reading.scans[partition])
    render, topic, out, counted = reading.output.render, reading.topic, reading.out, reading.counted
    for index, record in enumerate(records):
        counted.records += 1
        if index >= skip:
            out.write(render(topic, partition, record))


def _use_fast_path(reading: _Reading, log: Log) -> bool:
    output = reading.output
    fits = output.kind == "json" or (
        output.kind == "text"
        and output.layout is not None
        and output.layout.is_value_and_key_only
        and output.layout.line_separator == b"\n"
    )
    if not fits or reading.read_compacted or reading.skip_corrupt:
        return False
    choice = os.environ.get(FAST_PATH_ENV, "auto").strip().lower()
    if choice in ("fast", "slow"):
        return choice == "fast"
    return sum(segment.size for segment in log.segments) >= FAST_PATH_MIN_BYTES


def readable_end(log: Log, read_committed: bool) -> int:
    """Where a read of ``log`` ends now: the last stable offset under read_committed (the
    records past it belong to, or follow, an open transaction), else the log end offset."""
    return log.last_stable_offset if read_committed else log.log_end_offset
