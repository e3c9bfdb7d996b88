"""``seglog clean`` and ``seglog cleaner status``: Kafka's log cleaner, one pass at a time.

The log cleaner compacts the partitions of topics whose ``cleanup.policy`` holds ``compact``:
it keeps the last record of each key (and, for ``delete.retention.ms``, its tombstone),
rewriting the segments below the *first uncleanable offset* (the active segment is never
touched, nor anything at or above the high watermark or younger than
``min.compaction.lag.ms``). A partition is cleaned when its **dirty ratio** (bytes not yet
cleaned over all cleanable bytes) is above ``min.cleanable.dirty.ratio``, or when its oldest
dirty record is older than ``max.compaction.lag.ms``. What was cleaned is remembered per
log directory in ``cleaner-offset-checkpoint`` (the partition's *first dirty offset*).

* ``seglog clean --once [--topic T]``: one cleaner pass now: every cleanable partition (the
  filthiest first) is cleaned once, then retention runs on the compacted logs (the segments
  of ``compact,delete`` topics past ``retention.ms``/``retention.bytes``, and any segment
  below the log start offset). Per cleaned partition it prints Kafka's cleaner statistics;
  per failed one the error. A partition that cannot be cleaned (legacy v0/v1 entries,
  corrupt data; transactions are cleaned as Kafka cleans them) is marked *uncleanable* (KIP-346)
  and the pass goes on with the others. Exit status 1 when any partition failed.
* ``seglog clean --dry-run [--topic T]``: per compacted partition what a pass would do: dirty
  ratio against ``min.cleanable.dirty.ratio``, the dirty range ``[first dirty, first
  uncleanable)``, clean and dirty bytes, the groups of segments each rewritten into one (by
  their base offsets), the records in the dirty range (an upper bound of the distinct keys)
  and how much of the offset map that would fill (past 100%, a pass cleans only part of the
  range and the next pass goes on). It opens the data dirs read-only and changes nothing.
* ``seglog cleaner status [--topic T]``: per compacted partition its cleaning state, dirty
  ratio, ``cleaner-offset-checkpoint`` entry, first dirty and first uncleanable offsets, log
  start and end offsets, and why it is uncleanable. Read-only.

``--once`` is required unless ``--dry-run`` is given: the long-running cleaner (threads that
clean every ``log.cleaner.backoff.ms``) is the scheduler command ``seglog maintain``;
``--once`` keeps ``seglog clean`` meaning one pass. With
``--read-only`` only ``--dry-run`` is allowed.

The cleaning states (``in progress``, ``aborted``, ``paused(n)``) live in the memory of the
process that cleans: ``cleaner status`` in a new process shows state ``none``. An
uncleanable mark is also recorded in ``seglog-cleaner-history.json`` until the partition's
next successful round, so ``cleaner status`` in any process shows the partition ``clean
--once`` reported "marked uncleanable", with the same reason. A new pass (``clean --once``,
``maintain`` started again) retries it, as a restarted Kafka broker does; ``clean --dry-run``
therefore counts it as cleanable unless this process marked it.

Cleaned segments replace the old ones with Kafka's ``.cleaned`` -> ``.swap`` -> ``.deleted``
steps (crash-safe at each); the old files stay ``*.deleted`` until the next command that
opens the data dir removes them. SIGINT/SIGTERM during a pass stop the partition being
cleaned at its next check (nothing of that round is swapped in); the pass reports what it
did and the command exits as interrupted.

``--json`` prints one JSON object on one line:

* ``clean --once``: ``{"dry_run": false, "topic": null, "results": [{"topic", "partition",
  "stats": {...} | null, "error": null | "...", "uncleanable": false}], "metrics": {...}}``
  (``stats`` as Kafka's ``CleanerStats``; ``metrics`` the cleaner gauges with Kafka's names);
* ``clean --dry-run``: ``{"dry_run": true, "topic": null, "map_capacity_keys": N,
  "partitions": [{"topic", "partition", "cleanable", "would_clean", "dirty_ratio",
  "min_cleanable_dirty_ratio", "first_dirty_offset", "first_uncleanable_offset",
  "clean_bytes", "dirty_bytes", "max_compaction_delay_ms", "groups", "estimated_keys_max",
  "map_capacity_keys", "estimated_map_use", "state", "uncleanable_reason"}]}``;
* ``cleaner status``: ``{"topic": null, "partitions": [{"topic", "partition", "state",
  "dirty_ratio", "min_cleanable_dirty_ratio", "cleanable", "checkpoint",
  "checkpoint_reset_reason", "first_dirty_offset", "first_uncleanable_offset",
  "log_start_offset", "log_end_offset", "clean_bytes", "dirty_bytes",
  "uncleanable_reason"}]}``.

Why this module is longer than the house's ~500 lines: it is two commands over one model
(``clean`` and ``cleaner status`` print the same per-partition cleaner state: dirty ratios,
lags, uncleanable reasons), and each output format (text, JSON, progress) is a few short
functions.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    command_options_parent,
    is_read_only,
    json_line,
    missing_action,
    open_manager,
    print_table,
    topic_name,
)
from seglog.cli.progress import ProgressBar
from seglog.cli.text import plural
from seglog.engine.cleaning.cleaner_manager import CleaningCandidate, Uncleanable
from seglog.engine.cleaning.log_cleaner import CleanPlan, CleanResult, LogCleaner
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.errors import UnknownTopicError
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers
    from seglog.engine.log_manager import LogManager
    from seglog.engine.progress import ProgressCallback

CLEAN_EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog clean --dry-run
  seglog --data-dir /var/lib/seglog clean --once --topic prices
  seglog --data-dir /var/lib/seglog clean --once --json | jq '.results[].stats'"""

STATUS_EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog cleaner status
  seglog --data-dir /var/lib/seglog cleaner status --topic prices --json"""

ONCE_REQUIRED = (
    "--once is required (or --dry-run): this command runs the log cleaner one time and exits "
    "(the long-running cleaner is 'seglog maintain')"
)
READ_ONLY_CLEANS_NOTHING = (
    "cleaning rewrites segments, which a --read-only open cannot do: use --dry-run to see "
    "what it would clean"
)
_DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_GROUP_BASES_SHOWN = 5
_GROUPS_SHOWN = 6


# --- registration -----------------------------------------------------------------------------


def register(subparsers: Subparsers) -> None:
    """Add ``seglog clean`` and ``seglog cleaner``."""
    parent = command_options_parent()
    clean = subparsers.add_parser(
        "clean",
        parents=[parent],
        help="compact the compacted topics now (one log cleaner pass), or say what it would do",
        description=__doc__,
        epilog=CLEAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    clean.add_argument(
        "--once", action="store_true", help="run one cleaner pass over every log, then exit"
    )
    clean.add_argument(
        "--dry-run",
        action="store_true",
        help="print what a pass would clean; open read-only and change nothing",
    )
    clean.add_argument(
        "--topic", type=topic_name, metavar="TOPIC", help="only the partitions of this topic"
    )
    clean.add_argument("--json", action="store_true", help="one JSON object instead of text")
    clean.set_defaults(handler=lambda args: run_clean(args, clean))

    cleaner = subparsers.add_parser(
        "cleaner",
        help="the log cleaner's view of the compacted partitions (read-only)",
        description=__doc__,
        epilog=STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = cleaner.add_subparsers(title="actions", metavar="ACTION")
    status = actions.add_parser(
        "status",
        parents=[parent],
        help="per compacted partition: state, dirty ratio, checkpoint, uncleanable reason",
        description="Per compacted partition: cleaning state, dirty ratio, "
        "cleaner-offset-checkpoint entry, first dirty and first uncleanable offsets, log "
        "start and end offsets, and why it is uncleanable. Read-only.",
    )
    status.add_argument(
        "--topic", type=topic_name, metavar="TOPIC", help="only the partitions of this topic"
    )
    status.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    status.set_defaults(handler=run_status)
    cleaner.set_defaults(handler=lambda _args: missing_action(cleaner, "status"))


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Usage and ``seglog clean: error: ...`` on stderr; status 2, as argparse does."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _read_only_args(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with ``--read-only`` set: a dry run or status must not write even the lock."""
    return argparse.Namespace(**{**vars(args), "command_read_only": True})


def _check_topic(manager: LogManager, topic: str | None) -> None:
    if topic is not None and topic not in manager.topic_names():
        raise UnknownTopicError(f"topic {topic!r} does not exist")


def skipped_partitions(manager: LogManager, topic: str | None) -> list[TopicPartition]:
    """Partitions the cleaner leaves alone because their topic's configs are unknown."""
    return [tp for tp in manager.unknown_config_partitions() if topic in (None, tp.topic)]


def _print_skipped(skipped: list[TopicPartition]) -> None:
    for tp in skipped:
        print(f"SKIPPED {tp}: {CONFIGS_UNKNOWN}")


def _ratio(value: float) -> str:
    return f"{value:.3f}"


def _nothing_compacted(manager: LogManager, topic: str | None) -> str:
    """Why no partition is listed: the topic is not compacted, or no topic is."""
    if topic is None:
        return "no topic has cleanup.policy=compact"
    if not manager.is_config_known(topic):
        return f"topic {topic}: {CONFIGS_UNKNOWN}"
    configs = [log.config for tp, log in sorted(manager.logs().items()) if tp.topic == topic]
    if not configs:
        return f"topic {topic} has no partition here"
    return f"topic {topic} is not compacted (cleanup.policy={','.join(configs[0].cleanup_policy)})"


# --- clean --once -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """One ``clean --once`` pass: each partition's result, and whether it is now uncleanable."""

    results: list[CleanResult]
    uncleanable: dict[TopicPartition, Uncleanable]  # marked during this pass
    metrics: dict[str, float]

    def is_uncleanable(self, tp: TopicPartition) -> bool:
        """``tp`` was marked uncleanable by this pass."""
        return tp in self.uncleanable

    @property
    def failed(self) -> list[CleanResult]:
        """The partitions that were not cleaned."""
        return [r for r in self.results if r.error is not None or r.stats is None]


@contextmanager
def _interrupts_stop_cleaning(cleaner: LogCleaner) -> Iterator[list[int]]:
    """SIGINT/SIGTERM stop the round at its next check instead of interrupting a write.

    Yields the signals received; the caller raises the first again once it has reported what
    the pass did (restoring the handlers first). Outside the main thread it does nothing.
    """
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return

    def stop(signum: int, _frame: object) -> None:
        pending.append(signum)
        cleaner.stop()  # the running round raises CleaningAbortedError at its next check

    previous = {signum: signal.signal(signum, stop) for signum in _DEFERRED_SIGNALS}
    try:
        yield pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


@contextmanager
def _engine_log_silenced() -> Iterator[None]:
    """The cleaner logs each failure; the command reports it itself, once, on stdout."""
    logger = logging.getLogger("seglog.cleaner")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def clean_pass(
    manager: LogManager, topic: str | None, progress: ProgressCallback | None = None
) -> PassOutcome:
    """Run one cleaner pass on ``manager`` (``topic``: only its partitions; ``progress``:
    partitions cleaned of those cleanable)."""
    before = manager.cleaner_manager.uncleanable()
    with _engine_log_silenced():
        results = manager.clean_once(topic=topic, progress=progress)
    after = manager.cleaner_manager.uncleanable()
    marked = {tp: mark for tp, mark in after.items() if before.get(tp) != mark}
    # A partition whose dirty range could not even be computed is marked while the pass
    # chooses, without a result of its own: report it as a failure too.
    seen = {r.topic_partition for r in results}
    extra = [
        CleanResult(tp, None, mark.reason) for tp, mark in sorted(marked.items()) if tp not in seen
    ]
    return PassOutcome([*results, *extra], marked, manager.log_cleaner.metrics())


def result_lines(outcome: PassOutcome) -> list[str]:
    """Per partition: Kafka's statistics of the round, or why it was not cleaned."""
    lines: list[str] = []
    for result in outcome.results:
        tp = result.topic_partition
        if result.stats is not None and result.error is None:
            lines.extend(result.stats.summary(str(tp)).splitlines())
        elif outcome.is_uncleanable(tp):
            lines.append(f"{tp}: not cleaned, marked uncleanable: {result.error}")
        else:
            lines.append(f"{tp}: not cleaned: {result.error}")
    return lines


def pass_summary(outcome: PassOutcome, nothing_reason: str) -> str:
    """The last line of ``clean --once``."""
    if not outcome.results:
        return f"Nothing to clean: {nothing_reason}."
    cleaned = [r.stats for r in outcome.results if r.stats is not None and r.error is None]
    read = sum(s.bytes_read for s in cleaned)
    written = sum(s.bytes_written for s in cleaned)
    line = f"Cleaned {plural(len(cleaned), 'partition')}"
    if cleaned:
        line += f" ({read} bytes read, {written} written)"
    failed = len(outcome.failed)
    if failed:
        line += f"; {failed} failed"
    if cleaned:
        line += "; replaced segments are renamed *.deleted until the next open removes them"
    return line + "."


def pass_json(outcome: PassOutcome, topic: str | None) -> dict[str, Any]:
    """The ``clean --once --json`` document."""
    results = [
        {**r.to_json(), "uncleanable": outcome.is_uncleanable(r.topic_partition)}
        for r in outcome.results
    ]
    return {"dry_run": False, "topic": topic, "results": results, "metrics": outcome.metrics}


def _nothing_to_clean_reason(manager: LogManager, topic: str | None) -> str:
    candidates = manager.cleaner_manager.candidates(manager.clock.now_ms(), topic=topic)
    if not candidates:
        return _nothing_compacted(manager, topic)
    return (
        f"no compacted partition is cleanable now (of {len(candidates)}: the dirty ratio is "
        "not above min.cleanable.dirty.ratio); see 'seglog clean --dry-run'"
    )


def _run_once(args: argparse.Namespace) -> int:
    with open_manager(args, writes=True) as manager:
        _check_topic(manager, args.topic)
        bar = ProgressBar("cleaning partitions", json_output=args.json)
        with _interrupts_stop_cleaning(manager.log_cleaner) as interrupts, bar:
            outcome = clean_pass(manager, args.topic, progress=bar.callback)
        nothing = "" if outcome.results else _nothing_to_clean_reason(manager, args.topic)
    if args.json:
        print(json_line(pass_json(outcome, args.topic)))
    else:
        for line in result_lines(outcome):
            print(line)
        print(pass_summary(outcome, nothing))
    sys.stdout.flush()
    if interrupts:
        signal.raise_signal(interrupts[0])  # to the handler it was meant for (main: 130)
    return EXIT_FAILURE if outcome.failed else EXIT_OK


# --- clean --dry-run --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One compacted partition in ``clean --dry-run``."""

    plan: CleanPlan
    state: str
    uncleanable: Uncleanable | None

    @property
    def would_clean(self) -> bool:
        """A pass would clean it: cleanable, not held by anyone, not marked uncleanable."""
        return self.plan.candidate.is_cleanable and self.state == "none" and not self.uncleanable

    def to_json(self) -> dict[str, Any]:
        """The plan's JSON with what this process knows about the partition."""
        return {
            **self.plan.to_json(),
            "would_clean": self.would_clean,
            "state": self.state,
            "uncleanable_reason": self.uncleanable.reason if self.uncleanable else None,
        }


def plan_entries(manager: LogManager, topic: str | None) -> list[PlanEntry]:
    """Every compacted partition's plan (``topic``: only its partitions)."""
    cleaner = manager.cleaner_manager
    marks = cleaner.uncleanable()
    # Filtered here rather than with plan_cleaning(topic=...): that one only knows the topics
    # of seglog's metadata, not the ones found on disk (a broker's directory, read-only).
    entries = []
    for plan in manager.plan_cleaning():
        tp = plan.candidate.topic_partition
        if topic is None or tp.topic == topic:
            entries.append(PlanEntry(plan, cleaner.state_of(tp), marks.get(tp)))
    return entries


def groups_text(groups: Sequence[Sequence[int]]) -> str:
    """The groups of a plan by base offsets, shortened: ``[0,10,20] [30]``."""
    if not groups:
        return "-"
    parts = []
    for group in groups[:_GROUPS_SHOWN]:
        if len(group) <= _GROUP_BASES_SHOWN:
            parts.append("[" + ",".join(str(b) for b in group) + "]")
        else:
            parts.append(
                f"[{group[0]},{group[1]},...,{group[-1]} ({plural(len(group), 'segment')})]"
            )
    if len(groups) > _GROUPS_SHOWN:
        parts.append(f"... ({len(groups)} groups)")
    return " ".join(parts)


def _cleanable_text(entry: PlanEntry) -> str:
    candidate = entry.plan.candidate
    if entry.uncleanable is not None:
        return "no (uncleanable)"
    if not candidate.is_cleanable:
        return "no"
    if entry.state != "none":
        return f"no ({entry.state})"
    t = candidate.to_clean
    if t.needs_compaction_now and t.cleanable_ratio <= t.min_cleanable_dirty_ratio:
        return "yes (max.compaction.lag.ms)"
    return "yes"


def map_use_text(estimated_keys: int, capacity: int) -> str:
    """The share of the offset map the dirty range could fill; past 100% a pass is partial."""
    if capacity <= 0:
        return "-"
    share = 100.0 * estimated_keys / capacity
    return f"{share:.1f}%" if share <= 100 else f"{share:.0f}% (partial)"


def plan_rows(entries: list[PlanEntry]) -> list[tuple[object, ...]]:
    """The ``clean --dry-run`` table rows."""
    rows: list[tuple[object, ...]] = []
    for entry in entries:
        plan = entry.plan
        t = plan.candidate.to_clean
        rows.append(
            (
                plan.candidate.topic_partition,
                _cleanable_text(entry),
                _ratio(t.cleanable_ratio),
                f"{t.min_cleanable_dirty_ratio:g}",
                f"[{t.first_dirty_offset},{t.first_uncleanable_offset})",
                t.clean_bytes,
                t.cleanable_bytes,
                plan.estimated_keys,
                map_use_text(plan.estimated_keys, plan.map_capacity_keys),
                groups_text(plan.groups),
            )
        )
    return rows


PLAN_HEADER = (
    "PARTITION",
    "CLEANABLE",
    "DIRTY_RATIO",
    "MIN_RATIO",
    "DIRTY_RANGE",
    "CLEAN_BYTES",
    "DIRTY_BYTES",
    "KEYS_MAX",
    "MAP_USE",
    "GROUPS",
)


def _run_dry(args: argparse.Namespace) -> int:
    with open_manager(_read_only_args(args)) as manager:
        _check_topic(manager, args.topic)
        entries = plan_entries(manager, args.topic)
        capacity = manager.log_cleaner.map_capacity_keys
        nothing = "" if entries else _nothing_compacted(manager, args.topic)
        skipped = skipped_partitions(manager, args.topic)
    if args.json:
        document = {
            "dry_run": True,
            "topic": args.topic,
            "map_capacity_keys": capacity,
            "partitions": [e.to_json() for e in entries],
            # Only when some partition is skipped (configs unknown), as "skipped": {tp: why}.
            **({"skipped": {str(tp): CONFIGS_UNKNOWN for tp in skipped}} if skipped else {}),
        }
        print(json_line(document))
        return EXIT_OK
    _print_skipped(skipped)
    if not entries:
        print(f"Nothing to clean: {nothing}; nothing was changed (--dry-run).")
        return EXIT_OK
    print_table(plan_rows(entries), PLAN_HEADER, sys.stdout)
    would = sum(1 for e in entries if e.would_clean)
    print(
        f"Would clean {would} of {plural(len(entries), 'compacted partition')} "
        f"(offset map: {capacity} keys per round); nothing was changed (--dry-run)."
    )
    return EXIT_OK


def run_clean(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog clean``."""
    if args.dry_run:
        return _run_dry(args)
    if not args.once:
        return _usage_error(parser, ONCE_REQUIRED)
    if is_read_only(args):
        return _usage_error(parser, READ_ONLY_CLEANS_NOTHING)
    return _run_once(args)


# --- cleaner status ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusEntry:
    """One compacted partition in ``cleaner status``."""

    candidate: CleaningCandidate
    state: str
    checkpoint: int | None  # the cleaner-offset-checkpoint entry
    uncleanable: Uncleanable | None

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (see the module docstring)."""
        c = self.candidate
        t = c.to_clean
        return {
            "topic": c.topic_partition.topic,
            "partition": c.topic_partition.partition,
            "state": self.state,
            "dirty_ratio": round(t.cleanable_ratio, 6),
            "min_cleanable_dirty_ratio": t.min_cleanable_dirty_ratio,
            "cleanable": c.is_cleanable,
            "checkpoint": self.checkpoint,
            "checkpoint_reset_reason": c.offsets.reset_reason,
            "first_dirty_offset": t.first_dirty_offset,
            "first_uncleanable_offset": t.first_uncleanable_offset,
            "log_start_offset": c.log.log_start_offset,
            "log_end_offset": c.log.log_end_offset,
            "clean_bytes": t.clean_bytes,
            "dirty_bytes": t.cleanable_bytes,
            "uncleanable_reason": self.uncleanable.reason if self.uncleanable else None,
        }


def status_entries(manager: LogManager, topic: str | None) -> list[StatusEntry]:
    """Every compacted partition's cleaner status (``topic``: only its partitions)."""
    cleaner = manager.cleaner_manager
    checkpoints = manager.cleaner_checkpoints()
    marks = cleaner.uncleanable_status()  # this process's and the last pass's
    return [
        StatusEntry(c, cleaner.state_of(tp), checkpoints.get(tp), marks.get(tp))
        for c in cleaner.candidates(manager.clock.now_ms(), topic=topic)
        for tp in (c.topic_partition,)
    ]


STATUS_HEADER = (
    "PARTITION",
    "STATE",
    "DIRTY_RATIO",
    "CHECKPOINT",
    "FIRST_DIRTY",
    "FIRST_UNCLEANABLE",
    "LOG_START",
    "LOG_END",
    "UNCLEANABLE",
)


def status_rows(entries: list[StatusEntry]) -> list[tuple[object, ...]]:
    """The ``cleaner status`` table rows."""
    return [
        (
            e.candidate.topic_partition,
            e.state,
            _ratio(e.candidate.to_clean.cleanable_ratio),
            "-" if e.checkpoint is None else e.checkpoint,
            e.candidate.to_clean.first_dirty_offset,
            e.candidate.to_clean.first_uncleanable_offset,
            e.candidate.log.log_start_offset,
            e.candidate.log.log_end_offset,
            e.uncleanable.reason if e.uncleanable else "-",
        )
        for e in entries
    ]


def run_status(args: argparse.Namespace) -> int:
    """Entry point of ``seglog cleaner status``."""
    with open_manager(_read_only_args(args)) as manager:
        _check_topic(manager, args.topic)
        entries = status_entries(manager, args.topic)
        nothing = "" if entries else _nothing_compacted(manager, args.topic)
        skipped = skipped_partitions(manager, args.topic)
    if args.json:
        partitions = [e.to_json() for e in entries]
        document: dict[str, object] = {"topic": args.topic, "partitions": partitions}
        if skipped:  # partitions left alone as configs unknown: {tp: why}
            document["skipped"] = {str(tp): CONFIGS_UNKNOWN for tp in skipped}
        print(json_line(document))
        return EXIT_OK
    _print_skipped(skipped)
    if entries:
        print_table(status_rows(entries), STATUS_HEADER, sys.stdout)
    else:
        print(f"No compacted partitions: {nothing}.")
    return EXIT_OK
