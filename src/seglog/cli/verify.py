"""``seglog verify TOPIC``: check a topic's files against Kafka's on-disk invariants.

For each partition (``--partition P``: only that one) every segment is read in bounded
chunks and checked (see :mod:`seglog.engine.inspect.verify` for the full list and the
problem kinds):

* every batch framed whole and its CRC right; damage is reported with the file and the byte
  position, in the middle of a closed segment as well as a torn tail on the active one;
* offsets strictly increasing, each segment's batches within [its base offset, the next
  segment's base offset), and the last offset + 1 equal to the log end offset;
* every ``.index`` and ``.timeindex`` entry pointing where Kafka's rules say;
* for a topic with ``cleanup.policy`` holding ``compact``, below the partition's entry in its
  log directory's ``cleaner-offset-checkpoint`` (what the log cleaner has cleaned): no key
  twice, and every tombstone in a batch carrying a delete horizon (KIP-534);
* the transaction rules: no transactional data below the last stable offset without the
  COMMIT or ABORT marker that ends it (``txn-marker-missing``), no record of an aborted
  transaction below the cleaner checkpoint (``aborted-data-retained``), every ``.txnindex``
  entry at its ABORT marker and matching its transaction's data (``txn-index-entry``), and an
  entry for every ABORT whose data remains (``txn-index-missing``).

Verify never writes: the data dirs are opened read-only (as ``--read-only`` does), so no
lock, checkpoint or clean-shutdown marker is written and nothing is repaired. What the open
had to repair in memory (a torn tail after a crash, an index that contradicts its log) is
still on disk, so it is reported too.

Output: one line per partition, ``OK`` or its problem count, then one line per problem
(kind, file, position, offset, message), then a summary line. ``--json`` prints one JSON
document instead, on one line (shown folded)::

    {"topic": "t", "ok": false,
     "partitions": [{"partition": 0, "ok": false, "log_start_offset": 0,
                     "log_end_offset": 120, "compacted": false, "cleaner_checkpoint": null,
                     "segments_checked": 2, "batches_checked": 12, "records_checked": 120,
                     "bytes_checked": 8100, "problems_omitted": 0,
                     "problems": [{"kind": "crc", "path": ".../00000000000000000000.log",
                                   "position": 1234, "offset": null, "message": "..."}]}]}

Exit status: 0 when every partition is OK, 1 when any problem was found (or the topic or
partition does not exist), 2 for usage errors (an illegal topic name among them).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog.cli.arg_types import non_negative_int
from seglog.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    command_options_parent,
    json_line,
    open_manager,
    topic_name,
)
from seglog.cli.text import plural
from seglog.engine.inspect.verify import VerifyProblem, VerifyReport, verify_log
from seglog.engine.log import Log
from seglog.errors import UnknownTopicError
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import CLEANER_OFFSET_CHECKPOINT, LogDirectory

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

KIND_CHECKPOINT = "checkpoint"

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog verify events
  seglog --data-dir /var/lib/seglog verify events --partition 3
  seglog --data-dir /var/lib/seglog verify events --json | jq '.partitions[].problems'"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog verify``."""
    parser = subparsers.add_parser(
        "verify",
        parents=[command_options_parent()],
        help="check a topic's segments, indexes, compaction and transaction invariants (read-only)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", type=topic_name, metavar="TOPIC", help="topic to check")
    parser.add_argument(
        "--partition",
        type=non_negative_int,
        metavar="P",
        help="check only this partition (default: all, in partition order)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.set_defaults(handler=run)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition's report with what the command knew about it."""

    report: VerifyReport
    log_start_offset: int
    log_end_offset: int
    is_compacted: bool
    cleaner_checkpoint: int | None


class CleanerCheckpoints:
    """``cleaner-offset-checkpoint`` of each log directory root, read once, read-only.

    The :class:`~seglog.engine.log_manager.LogManager` has no accessor for it (the log
    cleaner owns that file), so it is read here through :class:`LogDirectory`.
    """

    def __init__(self) -> None:
        self._roots: dict[Path, tuple[dict[TopicPartition, int], list[str]]] = {}
        self._last_round_ms: dict[Path, dict[str, int]] = {}

    def last_clean_ms(self, log: Log) -> int | None:
        """The clock time of the partition's last recorded cleaning round (None if none),
        from ``seglog-cleaner-history.json``."""
        root = log.directory.parent
        if root not in self._last_round_ms:
            history = LogDirectory(root, writable=False).read_cleaner_history()
            self._last_round_ms[root] = {
                name: int(rounds[-1]["round_ms"])
                for name, rounds in history.partitions.items()
                if rounds
            }
        return self._last_round_ms[root].get(str(log.topic_partition))

    def of(self, log: Log) -> tuple[int | None, list[str]]:
        """The partition's checkpointed offset (None if absent) and the file's problems."""
        root = log.directory.parent
        if root not in self._roots:
            directory = LogDirectory(root, writable=False)
            offsets = directory.read_offsets(CLEANER_OFFSET_CHECKPOINT)
            self._roots[root] = (offsets, list(directory.problems))
        offsets, problems = self._roots[root]
        return offsets.get(log.topic_partition), problems


def verify_partition(log: Log, checkpoints: CleanerCheckpoints) -> PartitionResult:
    """Verify one log with its cleaner checkpoint and its last cleaning round's time."""
    checkpoint, checkpoint_problems = checkpoints.of(log)
    last_clean = checkpoints.last_clean_ms(log) if checkpoint is not None else None
    report = verify_log(log, cleaner_checkpoint=checkpoint, last_clean_ms=last_clean)
    if log.config.is_compacted and checkpoint_problems:
        # An unreadable checkpoint reads as empty: say why the key checks did not run.
        path = str(log.directory.parent / CLEANER_OFFSET_CHECKPOINT)
        extra = tuple(
            VerifyProblem(KIND_CHECKPOINT, path, None, None, f"{text}; key checks skipped")
            for text in checkpoint_problems
        )
        report = replace(report, problems=extra + report.problems)
    return PartitionResult(
        report,
        log.log_start_offset,
        log.log_end_offset,
        log.config.is_compacted,
        checkpoint,
    )


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def problem_line(problem: VerifyProblem) -> str:
    """One problem as text: kind, file, position, offset, message."""
    return (
        f"  {problem.kind}  {problem.path}  position {_or_dash(problem.position)}  "
        f"offset {_or_dash(problem.offset)}  {problem.message}"
    )


def partition_lines(result: PartitionResult) -> list[str]:
    """The human report of one partition."""
    report = result.report
    checked = (
        f"{plural(report.segments_checked, 'segment')}, "
        f"{plural(report.batches_checked, 'batch', 'batches')}, "
        f"{plural(report.records_checked, 'record')}, {report.bytes_checked} bytes"
    )
    if result.is_compacted:
        checked += (
            "; no cleaner checkpoint: key checks skipped"
            if result.cleaner_checkpoint is None
            else f"; keys checked below the cleaner checkpoint {result.cleaner_checkpoint}"
        )
    name = str(report.topic_partition)
    if report.ok:
        return [f"{name}: OK ({checked})"]
    found = len(report.problems) + report.problems_omitted
    lines = [f"{name}: {plural(found, 'problem')} ({checked})"]
    lines += [problem_line(p) for p in report.problems]
    if report.problems_omitted:
        lines.append(f"  ... and {report.problems_omitted} more, not listed")
    return lines


def summary_line(topic: str, results: list[PartitionResult]) -> str:
    """The last line: how many partitions were checked and how many have problems."""
    bad = [r for r in results if not r.report.ok]
    checked = plural(len(results), "partition")
    if not bad:
        return f"Verified {checked} of topic {topic}: all OK."
    problems = sum(len(r.report.problems) + r.report.problems_omitted for r in bad)
    return (
        f"Verified {checked} of topic {topic}: {plural(problems, 'problem')} in "
        f"{plural(len(bad), 'partition')}."
    )


def problem_json(problem: VerifyProblem) -> dict[str, Any]:
    """A problem as a JSON object."""
    return {
        "kind": problem.kind,
        "path": problem.path,
        "position": problem.position,
        "offset": problem.offset,
        "message": problem.message,
    }


def as_json(topic: str, results: list[PartitionResult]) -> dict[str, Any]:
    """The ``--json`` document (see the module docstring)."""
    partitions = []
    for result in results:
        report = result.report
        partitions.append(
            {
                "partition": report.topic_partition.partition,
                "ok": report.ok,
                "log_start_offset": result.log_start_offset,
                "log_end_offset": result.log_end_offset,
                "compacted": result.is_compacted,
                "cleaner_checkpoint": result.cleaner_checkpoint,
                "segments_checked": report.segments_checked,
                "batches_checked": report.batches_checked,
                "records_checked": report.records_checked,
                "bytes_checked": report.bytes_checked,
                "problems_omitted": report.problems_omitted,
                "problems": [problem_json(p) for p in report.problems],
            }
        )
    return {
        "topic": topic,
        "ok": all(r.report.ok for r in results),
        "partitions": partitions,
    }


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog verify``."""
    # Verify never writes: not even the lock, checkpoints or the clean-shutdown marker.
    read_only_args = argparse.Namespace(**{**vars(args), "command_read_only": True})
    checkpoints = CleanerCheckpoints()
    results: list[PartitionResult] = []
    with open_manager(read_only_args) as manager:
        if args.partition is None:
            partitions = manager.partitions_of(args.topic)
            if not partitions:
                raise UnknownTopicError(f"topic {args.topic!r} does not exist")
        else:
            partitions = [args.partition]
        for partition in partitions:
            log = manager.get_log(args.topic, partition)
            result = verify_partition(log, checkpoints)
            results.append(result)
            if not args.json:
                print("\n".join(partition_lines(result)), flush=True)
    if args.json:
        print(json_line(as_json(args.topic, results)))
    else:
        print(summary_line(args.topic, results))
    return EXIT_OK if all(r.report.ok for r in results) else EXIT_FAILURE
