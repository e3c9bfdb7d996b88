"""``seglog retention --once``: apply retention to every log now and say what it deleted.

Kafka's broker runs retention every ``log.retention.check.interval.ms``; this command runs
that same pass once over every partition of the data dirs and exits. Three rules, each
deleting whole segments from the oldest:

* ``log start offset``: a segment wholly below the log start offset (after
  ``seglog delete-records``), whatever the cleanup policy;
* ``retention.bytes``: while the partition is bigger than ``retention.bytes`` (``-1``: no
  limit, the default), for topics whose ``cleanup.policy`` has ``delete``;
* ``retention.ms``: a segment whose largest record timestamp is more than ``retention.ms``
  old (default 7 days; ``-1``: forever), for topics whose ``cleanup.policy`` has ``delete``.

A segment is only deleted when every record in it is below the high watermark, and a log
always keeps an active segment: when every segment goes, the log rolls first (a new empty
segment at the log end offset). The log start offset moves up to the first kept segment.

Output: one row per deleted segment (partition, base offset, bytes, rule; ``--verbose`` adds
the reason), then a summary line. ``--dry-run`` prints what *would* be deleted and changes
nothing at all: it opens the data dirs read-only (as ``--read-only`` does), so no segment is
rolled or renamed and no checkpoint, lock or clean-shutdown marker is written.

Deleted segments' files are renamed ``*.deleted`` (Kafka's two-step deletion). A running
manager unlinks them after ``file.delete.delay.ms``; this one-shot command exits before that,
so they stay on disk until the next command opens the data dir, which removes them. With
``file.delete.delay.ms=0`` they are unlinked at once: none is left when the command returns.

``--json`` prints one object on one line::

    {"dry_run": false,
     "deleted": [{"topic": "t", "partition": 0, "base_offset": 0, "size_bytes": 4021,
                  "rule": "retention.ms", "reason": "largest timestamp ... over retention.ms"}],
     "log_start_offsets": {"t-0": 120},
     "skipped": {"legacy-0": "configs unknown: set them with topics alter"}}

``log_start_offsets`` holds the new log start offset of each partition that lost segments
(with ``--dry-run``: what it would become). ``skipped`` (present only when not empty) lists
the partitions retention leaves alone because their topic's configs are unknown (a broker's
topic with no metadata saying its cleanup policy, see :mod:`seglog.engine.topic_catalogue`);
the table prints them as
``SKIPPED <partition>: configs unknown: set them with topics alter``.

``--once`` is required: without it the command is an error, because a long-running loop
(retention, flushes, file deletion on a timer) belongs to the scheduler command ``seglog
maintain``; ``--once`` keeps ``seglog retention`` meaning one pass.
With ``--read-only`` only ``--dry-run`` is allowed (a read-only open cannot delete).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    command_options_parent,
    deferred_interrupts,
    is_read_only,
    json_line,
    open_manager,
    print_table,
)
from seglog.cli.text import plural
from seglog.core.retention import RetentionPlan
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog retention --once --dry-run
  seglog --data-dir /var/lib/seglog retention --once --verbose
  seglog --data-dir /var/lib/seglog retention --once --json | jq .log_start_offsets"""

ONCE_REQUIRED = (
    "--once is required: this command runs retention one time and exits (the long-running "
    "scheduler is 'seglog maintain')"
)


def register(subparsers: Subparsers) -> None:
    """Add ``seglog retention``."""
    parser = subparsers.add_parser(
        "retention",
        parents=[command_options_parent()],
        help="delete old segments now (retention.ms, retention.bytes, log start offset)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--once", action="store_true", help="run retention once over every log, then exit"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be deleted; change nothing"
    )
    parser.add_argument("--verbose", action="store_true", help="add why each segment goes")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    parser.set_defaults(handler=lambda args: run(args, parser))


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Usage and ``seglog retention: error: ...`` on stderr; status 2, as argparse does."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def summary_line(
    results: list[tuple[TopicPartition, RetentionPlan]],
    *,
    dry_run: bool,
    files_left: bool = True,
) -> str:
    """The last line: how many segments and bytes from how many partitions (``files_left``:
    some deleted segment's files wait as ``*.deleted``, i.e. its ``file.delete.delay.ms`` > 0)."""
    segments = sum(len(plan.deletions) for _, plan in results)
    size = sum(plan.size_bytes for _, plan in results)
    what = f"{plural(segments, 'segment')} ({size} bytes) from {plural(len(results), 'partition')}"
    if dry_run:
        return f"Would delete {what}; nothing was changed (--dry-run)."
    if segments == 0 or not files_left:
        return f"Deleted {what}."
    return f"Deleted {what}; their files are renamed *.deleted until the next open removes them."


def as_json(
    results: list[tuple[TopicPartition, RetentionPlan]],
    *,
    dry_run: bool,
    skipped: list[TopicPartition] = (),  # type: ignore[assignment]
) -> Any:
    """The ``--json`` document (see the module docstring)."""
    deleted = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "base_offset": d.base_offset,
            "size_bytes": d.size_bytes,
            "rule": str(d.rule),
            "reason": d.reason,
        }
        for tp, plan in results
        for d in plan.deletions
    ]
    starts = {
        str(tp): plan.new_log_start_offset
        for tp, plan in results
        if plan.new_log_start_offset is not None
    }
    return {
        "dry_run": dry_run,
        "deleted": deleted,
        "log_start_offsets": starts,
        **({"skipped": {str(tp): CONFIGS_UNKNOWN for tp in skipped}} if skipped else {}),
    }


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog retention``."""
    if not args.once:
        return _usage_error(parser, ONCE_REQUIRED)
    if is_read_only(args) and not args.dry_run:
        return _usage_error(
            parser,
            "retention deletes segments, which a --read-only open cannot do: add --dry-run "
            "to see what it would delete",
        )
    files_left = False
    if args.dry_run:
        # Read-only: a dry run must not write even the lock, checkpoints or the marker.
        read_only_args = argparse.Namespace(**{**vars(args), "command_read_only": True})
        with open_manager(read_only_args) as manager:
            results = manager.run_retention(dry_run=True)
            skipped = manager.unknown_config_partitions()
    else:
        with open_manager(args, writes=True) as manager, deferred_interrupts():
            results = manager.run_retention()
            skipped = manager.unknown_config_partitions()
            files_left = any(
                manager.get_log(tp.topic, tp.partition).config.file_delete_delay_ms > 0
                for tp, plan in results
                if plan.deletions
            )
    if args.json:
        print(json_line(as_json(results, dry_run=args.dry_run, skipped=skipped)))
        return EXIT_OK
    for tp in skipped:
        print(f"SKIPPED {tp}: {CONFIGS_UNKNOWN}")
    rows: list[tuple[object, ...]] = []
    for tp, plan in results:
        for d in plan.deletions:
            row: tuple[object, ...] = (tp, d.base_offset, d.size_bytes, d.rule)
            rows.append((*row, d.reason) if args.verbose else row)
    if rows:
        header = ("PARTITION", "BASE_OFFSET", "SIZE_BYTES", "RULE")
        print_table(rows, (*header, "REASON") if args.verbose else header, sys.stdout)
    print(summary_line(results, dry_run=args.dry_run, files_left=files_left))
    return EXIT_OK
