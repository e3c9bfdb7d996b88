"""``seglog compact`` and ``seglog compaction-status``: the Pulsar-style compacted copy.

Beside each partition's log, the compactor keeps a *compacted copy* (in
``<topic>-<partition>/compaction/``): per key, the latest record at an offset up to the copy's
**compaction horizon**. The original log is never modified. A read-compacted reader
(``seglog consume --read-compacted``) sees the copy up to the horizon, then the log after it.

* ``seglog compact TOPIC [--partition P]``: run the compactor now on every partition of the
  topic (or on one). Each run reads the previous copy and the log after its horizon, writes a
  new copy and publishes it with the new horizon (the log end offset minus one at the start
  of the run). Per partition it prints the horizon (previous -> new), the records read, kept
  and removed, the distinct keys, the bytes read and written, the copy's size and the
  duration; a run with nothing new since the last one is a no-op, and a run whose offset map
  filled stops at an earlier batch end (*partial*: the next run goes on from there).
  One run per partition at a time: a partition whose run is already under way is reported
  as ``already running`` and the others are still compacted. Exit status 1 when any
  partition was not compacted (its status then says ERROR, with the message).
* ``seglog compaction-status TOPIC``: per partition the state (``NOT_RUN``, ``RUNNING``,
  ``SUCCESS`` or ``ERROR``, with its message) and the figures of the last completed run
  (horizon, records read, kept and removed, keys, duration). An ``ERROR`` or ``RUNNING``
  state keeps the figures of the run before. The status is persisted beside the copy, so it
  survives restarts; a ``RUNNING`` left by a process that stopped becomes ``ERROR`` at the
  next read-write open of the data dir. The command opens the data dirs read-only and
  changes nothing.

The compactor applies the topic's rules: tombstones stay for ``delete.retention.ms`` after
the first run that copied them, keyless records are dropped unless
``compaction.retain.null.key`` is true, and with ``cleanup.policy`` holding ``delete`` a record
older than ``retention.ms`` leaves the copy. A run over a topic with
``compaction.threshold.bytes`` > 0 also happens on its own in a running manager (the
scheduler); this command runs one now.

SIGINT/SIGTERM during ``compact`` are held back until the partition being compacted is done
(its copy is published or not, never half), then the command stops before the next one and
exits as interrupted. A compaction cannot run with ``--read-only``.

``--json`` prints one JSON object on one line:

* ``compact``: ``{"topic": "t", "partition": null, "results": [{"topic", "partition",
  "run": {"previous_horizon", "horizon", "records_read", "records_kept",
  "records_removed", "keys", "bytes_read", "bytes_written", "copy_bytes", "duration_s",
  "is_partial", "is_noop", "copy", "started_ms", "segments"} | null, "message": "...",
  "error": null | "...", "already_running": false}]}``;
* ``compaction-status``: ``{"topic": "t", "partitions": [{"topic", "partition", "state",
  "message", "figures": {...as "run" above...} | null}]}`` (``figures`` null when never
  run).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seglog.cli.arg_types import non_negative_int
from seglog.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    command_options_parent,
    deferred_interrupts,
    is_read_only,
    json_line,
    open_manager,
    print_table,
    topic_name,
)
from seglog.cli.progress import ProgressBar
from seglog.cli.text import plural
from seglog.engine.compaction.compactor import CompactionRun, CompactionRunningError
from seglog.errors import SeglogError, UnknownTopicError
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers
    from seglog.engine.log_manager import LogManager
    from seglog.storage.compacted_copy import CompactionStatus

COMPACT_EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog compact prices
  seglog --data-dir /var/lib/seglog compact prices --partition 0 --json | jq '.results[].run'"""

STATUS_EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog compaction-status prices
  seglog --data-dir /var/lib/seglog compaction-status prices --json | jq '.partitions[].state'"""

READ_ONLY_COMPACTS_NOTHING = (
    "compaction writes a new compacted copy, which a --read-only open cannot do: use "
    "'seglog compaction-status' to see the last run"
)


# --- registration -----------------------------------------------------------------------------


def register(subparsers: Subparsers) -> None:
    """Add ``seglog compact`` and ``seglog compaction-status``."""
    parent = command_options_parent()
    compact = subparsers.add_parser(
        "compact",
        parents=[parent],
        help="build the compacted copy of a topic's partitions now (Pulsar-style compaction)",
        description=__doc__,
        epilog=COMPACT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compact.add_argument("topic", metavar="TOPIC", type=topic_name, help="topic to compact")
    compact.add_argument(
        "--partition",
        type=non_negative_int,
        metavar="P",
        help="compact only this partition (default: every partition of the topic)",
    )
    compact.add_argument("--json", action="store_true", help="one JSON object instead of text")
    compact.set_defaults(handler=lambda args: run_compact(args, compact))

    status = subparsers.add_parser(
        "compaction-status",
        parents=[parent],
        help="per partition: the compacted copy's state and last run's figures (read-only)",
        description=__doc__,
        epilog=STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument("topic", metavar="TOPIC", type=topic_name, help="topic to show")
    status.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    status.set_defaults(handler=run_status)


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Usage and ``seglog compact: error: ...`` on stderr; status 2, as argparse does."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _horizon(value: object) -> str:
    """A compaction horizon; -1 (no copy) reads ``none``."""
    return "none" if value is None or value == -1 else str(value)


def _partitions(manager: LogManager, topic: str, partition: int | None) -> list[int]:
    """The partitions to compact: ``partition``, or every one of the topic."""
    if partition is not None:
        manager.get_log(topic, partition)  # UnknownTopicError naming what is missing
        return [partition]
    partitions = manager.partitions_of(topic)
    if not partitions:
        raise UnknownTopicError(f"topic {topic!r} does not exist")
    return partitions


# --- compact ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    """One partition of ``seglog compact``: its run, or why there was none."""

    topic_partition: TopicPartition
    run: CompactionRun | None
    message: str = ""  # the engine's note on a partial or no-op run
    error: str | None = None
    already_running: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (see the module docstring)."""
        return {
            "topic": self.topic_partition.topic,
            "partition": self.topic_partition.partition,
            "run": None if self.run is None else self.run.to_json(),
            "message": self.message,
            "error": self.error,
            "already_running": self.already_running,
        }


def compact_partition(manager: LogManager, topic: str, partition: int) -> CompactOutcome:
    """Run one partition's compaction; a failure is reported, not raised."""
    tp = TopicPartition(topic, partition)
    try:
        runs = manager.compact(topic, partition)
    except CompactionRunningError as exc:
        return CompactOutcome(tp, None, error=str(exc), already_running=True)
    except SeglogError as exc:  # the status says ERROR; the other partitions go on
        return CompactOutcome(tp, None, error=f"{type(exc).__name__}: {exc}")
    run = runs[tp]
    # The engine's own words for a partial or no-op run (persisted with the status).
    status = manager.compaction.status(manager.get_log(topic, partition))
    return CompactOutcome(tp, run, status.message)


def outcome_lines(outcome: CompactOutcome) -> list[str]:
    """What ``compact`` prints for one partition."""
    tp = outcome.topic_partition
    run = outcome.run
    if run is None:
        if outcome.already_running:
            return [f"{tp}: not compacted: a compaction of {tp} is already running"]
        return [f"{tp}: not compacted: {outcome.error}"]
    if run.is_noop:
        return [
            f"{tp}: no-op, nothing new since the last run: horizon stays "
            f"{_horizon(run.horizon)} ({run.duration_s:.3f} s)"
        ]
    lines = [
        f"{tp}: horizon {_horizon(run.previous_horizon)} -> {_horizon(run.horizon)}; "
        f"records read {run.records_read}, kept {run.records_kept}, removed "
        f"{run.records_removed}; {plural(run.keys, 'key')}; bytes read {run.bytes_read}, "
        f"written {run.bytes_written}; copy {run.copy_bytes} bytes in "
        f"{plural(run.segments, 'segment')}; {run.duration_s:.3f} s"
    ]
    if run.is_partial:
        lines.append(f"{tp}: {outcome.message or 'partial run'}")
    return lines


def compact_summary(outcomes: list[CompactOutcome], interrupted: bool) -> str:
    """The last line of ``compact``."""
    done = [o for o in outcomes if o.run is not None]
    noop = sum(1 for o in done if o.run is not None and o.run.is_noop)
    line = f"Compacted {plural(len(done) - noop, 'partition')}"
    if noop:
        line += f"; {noop} had nothing new"
    failed = len(outcomes) - len(done)
    if failed:
        line += f"; {failed} failed"
    if interrupted:
        line += "; interrupted before the other partitions"
    return line + "."


def run_compact(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog compact``."""
    if is_read_only(args):
        return _usage_error(parser, READ_ONLY_COMPACTS_NOTHING)
    outcomes: list[CompactOutcome] = []
    pending: list[BaseException] = []
    with open_manager(args, writes=True) as manager:
        partitions = _partitions(manager, args.topic, args.partition)
        with ProgressBar(
            "compacting partitions", total=len(partitions), json_output=args.json
        ) as bar:
            for partition in partitions:
                try:
                    # One partition at a time, whole: an interrupt lands between two of them.
                    with deferred_interrupts():
                        outcomes.append(compact_partition(manager, args.topic, partition))
                except KeyboardInterrupt as exc:  # delivered once the partition was done
                    pending.append(exc)
                    break
                bar.advance()
    if args.json:
        results = [o.to_json() for o in outcomes]
        print(json_line({"topic": args.topic, "partition": args.partition, "results": results}))
    else:
        for outcome in outcomes:
            for line in outcome_lines(outcome):
                print(line)
        print(compact_summary(outcomes, interrupted=bool(pending)))
    sys.stdout.flush()
    if pending:
        raise pending[0]  # main: status 130
    return EXIT_FAILURE if any(o.run is None for o in outcomes) else EXIT_OK


# --- compaction-status ------------------------------------------------------------------------


def status_json(tp: TopicPartition, status: CompactionStatus) -> dict[str, Any]:
    """One partition of ``compaction-status --json``."""
    return {
        "topic": tp.topic,
        "partition": tp.partition,
        "state": status.state,
        "message": status.message,
        "figures": status.figures or None,
    }


STATUS_HEADER = (
    "PARTITION",
    "STATE",
    "HORIZON",
    "RECORDS_READ",
    "KEPT",
    "REMOVED",
    "KEYS",
    "DURATION_S",
    "MESSAGE",
)


def status_row(tp: TopicPartition, status: CompactionStatus) -> tuple[object, ...]:
    """One ``compaction-status`` table row (``-`` for figures of a run that never was)."""
    figures = status.figures or {}

    def figure(name: str) -> object:
        value = figures.get(name)
        return "-" if value is None else value

    duration = figures.get("duration_s")
    return (
        tp,
        status.state,
        _horizon(figures.get("horizon")) if figures else "-",
        figure("records_read"),
        figure("records_kept"),
        figure("records_removed"),
        figure("keys"),
        f"{duration:.3f}" if isinstance(duration, int | float) else "-",
        status.message or "-",
    )


def run_status(args: argparse.Namespace) -> int:
    """Entry point of ``seglog compaction-status``."""
    # Read-only: a status must not write even the lock, checkpoints or the marker.
    read_only_args = argparse.Namespace(**{**vars(args), "command_read_only": True})
    with open_manager(read_only_args) as manager:
        statuses = sorted(manager.compaction_status(args.topic).items())
    if args.json:
        partitions = [status_json(tp, status) for tp, status in statuses]
        print(json_line({"topic": args.topic, "partitions": partitions}))
        return EXIT_OK
    print_table([status_row(tp, status) for tp, status in statuses], STATUS_HEADER, sys.stdout)
    return EXIT_OK
