"""``seglog consumer-groups``: list, describe, reset and delete consumer groups offline
(like ``kafka-consumer-groups.sh``), reading and writing ``__consumer_offsets`` directly.

* ``--list``: every group with stored metadata or committed offsets, one per line.
* ``--describe --group G`` (repeatable): per partition the group committed to or is assigned:
  GROUP, TOPIC, PARTITION, CURRENT-OFFSET (committed), LOG-END-OFFSET (the high watermark),
  LAG, CONSUMER-ID, HOST, CLIENT-ID (from the stored assignment; ``-`` when none); on stderr,
  as Kafka, "Consumer group 'G' has no active members." for an Empty group.
  ``--state``: GROUP, ASSIGNMENT-STRATEGY, STATE, #MEMBERS, GENERATION;
  ``--members``: GROUP, CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS.
* ``--reset-offsets --group G (--topic T[:P,...]... | --all-topics) (--to-earliest |
  --to-latest | --to-offset N | --to-datetime ISO8601 | --shift-by N) [--dry-run |
  --execute]``: prints the plan (GROUP, TOPIC, PARTITION, NEW-OFFSET); only ``--execute``
  commits it (one batch: atomic). Without either, a dry run with Kafka's warning.
* ``--delete --group G`` (repeatable): tombstones for the group's metadata and offsets.

**State offline.** There is no coordinator here: a group's state is what its last stored
metadata says: members -> ``Stable``, none -> ``Empty``. As Kafka refuses to reset or delete a
group that is not Empty, so does this command for a group whose stored metadata lists
members (stop the consumers, or let the server record the group as Empty, first). Exit status
1 then, so scripts notice (Kafka prints the error and exits 0).

**Reads never write.** ``--list``, ``--describe`` and dry runs open the data dirs read-only
(no lock): they work on a copied broker directory and beside a running ``seglog serve``.
``--execute`` and ``--delete`` take the lock; when a running server (or ``maintain``) holds it,
they wait ``--lock-wait-ms`` and fail naming the holder: go through the server then (a Kafka
client's AdminClient), since it owns the groups' live state.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from seglog.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, open_manager, print_table

if TYPE_CHECKING:
    from seglog.broker.groups.offsets_store import OffsetsStore
    from seglog.cli.common import Subparsers

HELP = "list, describe, reset and delete consumer groups (like kafka-consumer-groups.sh)"
DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)
EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog consumer-groups --list
  seglog --data-dir /var/lib/seglog consumer-groups --describe --group my-group
  seglog --data-dir /var/lib/seglog consumer-groups --reset-offsets --group my-group \\
      --topic orders --to-earliest --execute
  seglog --data-dir /var/lib/seglog consumer-groups --delete --group my-group"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog consumer-groups``."""
    parser = subparsers.add_parser(
        "consumer-groups",
        help=HELP,
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the groups")
    action.add_argument("--describe", action="store_true", help="describe groups")
    action.add_argument("--reset-offsets", action="store_true", help="reset committed offsets")
    action.add_argument("--delete", action="store_true", help="delete groups")
    parser.add_argument(
        "--group", dest="groups", action="append", default=[], metavar="G", help="a group id"
    )
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--state", action="store_true", help="--describe: the groups' state")
    view.add_argument("--members", action="store_true", help="--describe: the groups' members")
    parser.add_argument(
        "--topic",
        dest="topics",
        action="append",
        default=[],
        metavar="T[:P,...]",
        help="--reset-offsets: a topic, or some of its partitions (repeatable)",
    )
    parser.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every committed partition"
    )
    to = parser.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to the log start offset")
    to.add_argument("--to-latest", action="store_true", help="reset to the log end offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N")
    to.add_argument("--shift-by", type=int, metavar="N", help="move the committed offset by N")
    to.add_argument(
        "--to-datetime", metavar="ISO8601", help="reset to the first offset at or after this time"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    parser.set_defaults(handler=run, parser=parser)


def _usage_error(args: argparse.Namespace, message: str) -> int:
    parser: argparse.ArgumentParser = args.parser
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog consumer-groups``."""
    if (args.describe or args.reset_offsets or args.delete) and not args.groups:
        return _usage_error(args, "--group is required with --describe, --reset-offsets, --delete")
    if (args.state or args.members) and not args.describe:
        return _usage_error(args, "--state and --members go with --describe")
    if args.reset_offsets:
        return _run_reset(args)
    from seglog.broker.groups.offsets_store import OffsetsStore

    with open_manager(args, writes=bool(args.delete)) as manager:
        store = OffsetsStore.open(manager)
        if args.list:
            for group in store.groups():
                print(group)
            return EXIT_OK
        if args.delete:
            return _delete(store, args.groups)
        status = EXIT_OK
        for group in args.groups:
            if _state(store, group) == "Dead":
                print(f"Error: Consumer group '{group}' does not exist.", file=sys.stderr)
                status = EXIT_FAILURE
            elif args.state:
                _describe_state(store, group)
            elif args.members:
                _describe_members(store, group)
            else:
                _describe_offsets(store, group)
    return status


def _state(store: OffsetsStore, group: str) -> str:
    from seglog.broker.groups.offset_expiry import stored_state

    if group not in store.groups():
        return "Dead"
    return stored_state(store.group_metadata(group))


def _assignments(store: OffsetsStore, group: str) -> dict[tuple[str, int], tuple[str, str, str]]:
    """(topic, partition) -> (consumer id, host, client id) from the stored assignments."""
    from seglog.errors import CorruptGroupRecordError
    from seglog.format.consumer_protocol import assignment_partitions

    metadata = store.group_metadata(group)
    out: dict[tuple[str, int], tuple[str, str, str]] = {}
    if metadata is None or metadata.protocol_type != "consumer":
        return out
    for member in metadata.members:
        try:
            owned = assignment_partitions(member.assignment)
        except CorruptGroupRecordError as exc:
            print(f"seglog: member {member.member_id}: {exc}", file=sys.stderr)
            continue
        for tp in owned:
            out[tp] = (member.member_id, member.client_host, member.client_id)
    return out


def _describe_offsets(store: OffsetsStore, group: str) -> None:
    from seglog.errors import UnknownTopicError
    from seglog.format.topic_names import TopicPartition

    if _state(store, group) == "Empty":
        print(f"\nConsumer group '{group}' has no active members.\n", file=sys.stderr)
    committed = store.committed(group)
    owners = _assignments(store, group)
    rows = []
    for tp in sorted(set(committed) | {TopicPartition(*tp) for tp in owners}):
        current = committed.get(tp)
        try:
            end: int | None = store.manager.get_log(tp.topic, tp.partition).high_watermark
        except UnknownTopicError:
            end = None
        lag = "-" if current is None or end is None else max(end - current.offset, 0)
        consumer, host, client = owners.get((tp.topic, tp.partition), ("-", "-", "-"))
        rows.append(
            [
                group,
                tp.topic,
                tp.partition,
                "-" if current is None else current.offset,
                "-" if end is None else end,
                lag,
                consumer,
                host,
                client,
            ]
        )
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    print_table(rows, [*header, "CONSUMER-ID", "HOST", "CLIENT-ID"], sys.stdout)


def _describe_state(store: OffsetsStore, group: str) -> None:
    metadata = store.group_metadata(group)
    strategy = (metadata.protocol if metadata else None) or "-"
    members = len(metadata.members) if metadata else 0
    generation = metadata.generation if metadata else "-"
    row = [group, strategy, _state(store, group), members, generation]
    header = ["GROUP", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS", "GENERATION"]
    print_table([row], header, sys.stdout)


def _describe_members(store: OffsetsStore, group: str) -> None:
    metadata = store.group_metadata(group)
    if metadata is None or not metadata.members:
        print(f"\nConsumer group '{group}' has no active members.\n", file=sys.stderr)
        return
    owners = _assignments(store, group)
    rows = [
        [
            group,
            m.member_id,
            m.client_host,
            m.client_id,
            sum(1 for owner in owners.values() if owner[0] == m.member_id),
        ]
        for m in metadata.members
    ]
    print_table(rows, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"], sys.stdout)


def _not_inactive(store: OffsetsStore, group: str, action: str) -> str | None:
    state = _state(store, group)
    if state in ("Empty", "Dead"):
        return None
    return (
        f"Error: {action} can only be done if the group '{group}' is inactive, but the "
        f"current state is {state} (its stored metadata lists members: stop the consumers "
        "or let the server record the group as Empty first)."
    )


def _delete(store: OffsetsStore, groups: list[str]) -> int:
    failures = []
    for group in groups:
        if group not in store.groups():
            failures.append(
                f"* Group '{group}' could not be deleted due to: GroupIdNotFound: "
                "The group id does not exist."
            )
        elif _not_inactive(store, group, "Deletion") is not None:
            failures.append(
                f"* Group '{group}' could not be deleted due to: GroupNotEmpty: "
                f"The group is not empty (state {_state(store, group)})."
            )
        else:
            store.delete_group(group, now_ms=int(time.time() * 1000))
    deleted = [g for g in groups if not any(f"'{g}'" in f for f in failures)]
    if deleted:
        names = ", ".join(f"'{g}'" for g in deleted)
        print(f"Deletion of requested consumer groups ({names}) was successful.")
    if failures:
        print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
        for line in failures:
            print(line, file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _run_reset(args: argparse.Namespace) -> int:
    from seglog.broker.groups.offsets_store import OffsetAndMetadata, OffsetsStore
    from seglog.cli.consumer_groups_reset import (
        ResetSpec,
        new_offset,
        parse_datetime_ms,
        partitions_to_reset,
    )

    if bool(args.topics) == bool(args.all_topics):
        return _usage_error(args, "--reset-offsets needs one of --topic or --all-topics")
    if args.to_earliest:
        spec = ResetSpec("earliest")
    elif args.to_latest:
        spec = ResetSpec("latest")
    elif args.to_offset is not None:
        spec = ResetSpec("offset", args.to_offset)
    elif args.shift_by is not None:
        spec = ResetSpec("shift", args.shift_by)
    elif args.to_datetime is not None:
        spec = ResetSpec("datetime", parse_datetime_ms(args.to_datetime))
    else:
        return _usage_error(
            args,
            "--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, "
            "--to-datetime, --shift-by",
        )
    if not args.execute and not args.dry_run:
        print(DRY_RUN_WARNING, file=sys.stderr)
    status = EXIT_OK
    with open_manager(args, writes=bool(args.execute)) as manager:
        store = OffsetsStore.open(manager)
        for group in args.groups:
            refusal = _not_inactive(store, group, "Assignments reset")
            if refusal is not None:
                print(refusal, file=sys.stderr)
                status = EXIT_FAILURE
                continue
            committed = store.committed(group)
            plan = {
                tp: new_offset(manager, tp, spec, committed.get(tp))
                for tp in partitions_to_reset(manager, committed, args.topics, args.all_topics)
            }
            if args.execute and plan:
                store.commit(
                    group,
                    {tp: OffsetAndMetadata(offset) for tp, offset in plan.items()},
                    now_ms=int(time.time() * 1000),
                )
            rows = [[group, tp.topic, tp.partition, offset] for tp, offset in plan.items()]
            print_table(rows, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], sys.stdout)
    return status
