"""``seglog topics``: create, list, describe, alter and delete topics (like ``kafka-topics.sh``).

* ``topics create NAME [--partitions N] [--config KEY=VALUE]... [--if-not-exists]``: prints
  ``Created topic NAME.`` (Kafka's line); the data dirs are created if missing. Without
  ``--partitions`` the topic gets ``num.partitions`` of ``--config server.properties`` (1 when
  unset), as a broker does. ``--replication-factor 1`` is accepted; any other value is refused
  (seglog stores each partition once, in this node's log directories). Kafka's internal names
  (``__consumer_offsets``, ``__transaction_state``, ...) are refused, and so is a name equal to
  an existing topic's after ``.`` -> ``_`` ("Topic 'a.b' collides with existing topic: a_b"); a
  name holding ``.`` or ``_`` gets kafka-topics.sh's WARNING line, on stderr (stdout keeps the
  result lines scripts read).
* ``topics list [--json]``: a table of topics (name, partitions, bytes on disk).
* ``topics describe NAME [--json]``: Kafka's ``Topic: ... Configs: ...`` line (the overrides),
  then a table of partitions (offsets, recovery point, the last stable offset, the open
  transactions and the first one's first offset (``-``: none open), the producers the
  partition remembers, size, directory) and one of segments.
  ``--json`` adds the effective config (overrides over the broker defaults).
* ``topics alter NAME [--config KEY=VALUE]... [--delete-config KEY]... [--partitions N]``: sets
  and removes overrides; removing a key the topic does not override is an error (it is
  usually a typo). ``--partitions N`` raises the partition count to N (an increase only, as in
  Kafka; the new partitions' directories are created crash-safely, and keyed records spread
  over the new count from then on).
* ``topics delete NAME``: renames the partition directories to ``*-delete``; they are
  removed after ``file.delete.delay.ms`` by a running manager (a one-shot command leaves them).
  The consumer groups' committed offsets of the topic get tombstones in ``__consumer_offsets``,
  as Kafka's group coordinator writes them.

Topic names are checked as Kafka checks them (``..``, ``a/b``, 250 characters are rejected)
before anything is opened. A ``--config`` key given twice is an error. Every action also
takes the name as ``--topic NAME``; ``describe``, ``alter`` and ``delete`` take
``--if-exists`` (nothing happens, status 0, when the topic is absent) and ``create``
``--if-not-exists``. kafka-topics.sh's own spelling (``topics --create --topic NAME ...``,
``--list``, ``--describe``, ``--alter``, ``--delete``) works too: see
:mod:`seglog.cli.topics_kafka`. ``--bootstrap-server`` is accepted and ignored with a note on
stderr: seglog works on log directories, not through a broker.

JSON shapes (one object on one line):

* list: ``{"topics": [{"name", "partitions", "size_bytes"}]}``
* describe: ``{"name", "topic_id", "overrides": {..}, "config": {..}, "partitions":
  [{"partition", "directory", "log_start_offset", "log_end_offset", "high_watermark",
  "recovery_point", "size_bytes", "last_stable_offset", "ongoing_transactions",
  "first_ongoing_offset" (null: none open), "producer_count", "segments": [{"base_offset",
  "size_bytes", "offset_index_entries", "time_index_entries", "max_timestamp"}]}],
  "sources": {key: source}, "configs_known": bool}``

``describe`` prints ``Configs:`` as kafka-topics.sh does (the topic-level configs: seglog's
overrides, the broker metadata's topic configs, Kafka's internal-topic configs), then every
config with its source (kafka-configs.sh's DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, and seglog's
SEGLOG_TOPIC_OVERRIDE and INTERNAL_TOPIC_CONFIG; precedence in
:mod:`seglog.engine.topic_catalogue`). A topic whose configs are unknown says
``configs unknown: set them with topics alter``. The topic id is seglog's, the metadata
image's, or the one in the partition's ``partition.metadata``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    deferred_interrupts,
    json_line,
    key_value,
    open_manager,
    positive_int,
    print_table,
)
from seglog.cli.topics_kafka import add_kafka_actions, kafka_compat_parent, note_bootstrap_server
from seglog.engine.log_manager import LogManager, TopicDescription
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.errors import InvalidConfigError
from seglog.format.topic_names import COLLISION_WARNING, has_collision_chars, validate_topic_name

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog topics create prices --partitions 3 \\
      --config cleanup.policy=compact
  seglog --data-dir /var/lib/seglog topics list
  seglog --data-dir /var/lib/seglog topics describe prices --json | jq .partitions
  seglog --data-dir /var/lib/seglog topics alter prices --config retention.ms=3600000
  seglog --data-dir /var/lib/seglog topics alter prices --partitions 6
  seglog --data-dir /var/lib/seglog topics delete prices
kafka-topics.sh's spelling:
  seglog --data-dir /var/lib/seglog topics --create --topic prices --partitions 3 \\
      --replication-factor 1 --if-not-exists
  seglog --data-dir /var/lib/seglog topics --alter --topic prices --partitions 6
  seglog --data-dir /var/lib/seglog topics --list"""


def _name_options(parser: argparse.ArgumentParser) -> None:
    """The topic name, as a positional NAME or as kafka-topics.sh's ``--topic NAME``."""
    parser.add_argument("name", metavar="NAME", nargs="?", help="topic name")
    parser.add_argument(
        "--topic", dest="topic_option", metavar="NAME", help="the topic name (kafka-topics.sh)"
    )


def _config_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument(
        "--config",
        dest="configs",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=help_text,
    )


def _if_exists_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--if-exists",
        action="store_true",
        help="do nothing (status 0) when the topic does not exist",
    )


def register(subparsers: Subparsers) -> None:
    """Add ``seglog topics``, its subcommands and kafka-topics.sh's spelling of them."""
    parser = subparsers.add_parser(
        "topics",
        parents=[command_options_parent(), kafka_compat_parent()],
        help="create, list, describe, alter and delete topics",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    parents = [command_options_parent(), kafka_compat_parent()]

    create = actions.add_parser(
        "create",
        parents=parents,
        help="create a topic",
        description="Create a topic with N partitions (Kafka's topic-name rules; without "
        "--partitions, num.partitions of --config server.properties, else 1); the data dirs "
        "are created if missing. --config takes Kafka's topic config names (README: "
        "Configuration reference).",
    )
    _name_options(create)
    create.add_argument(
        "--partitions",
        type=positive_int,
        default=None,
        metavar="N",
        help="partition count (default: the broker's num.partitions, 1 when unset)",
    )
    create.add_argument(
        "--replication-factor",
        type=int,
        default=None,
        metavar="N",
        help="only 1: seglog stores each partition once, in this node's log directories",
    )
    create.add_argument(
        "--if-not-exists",
        action="store_true",
        help="do nothing (status 0) when the topic already exists",
    )
    _config_option(create, "a topic config override (repeatable), e.g. cleanup.policy=compact")
    create.set_defaults(handler=run_create)

    listing = actions.add_parser(
        "list",
        parents=parents,
        help="list topics",
        description="The topics of the data dirs: name, partitions and bytes on disk.",
    )
    listing.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    listing.set_defaults(handler=run_list)

    describe = actions.add_parser(
        "describe",
        parents=parents,
        help="partitions, segments, offsets and configs of a topic",
        description="A topic's config overrides (Kafka's 'Topic: ... Configs: ...' line), its "
        "partitions (offsets, recovery point, size, directory) and segments.",
    )
    _name_options(describe)
    _if_exists_option(describe)
    describe.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    describe.set_defaults(handler=run_describe)

    alter = actions.add_parser(
        "alter",
        parents=parents,
        help="set or remove config overrides, add partitions",
        description="Set (--config KEY=VALUE) and remove (--delete-config KEY) a topic's "
        "config overrides; its logs use them at once. --partitions N raises the partition "
        "count (an increase only, as in Kafka). WARNING (Kafka's): if partitions are "
        "increased for a topic that has a key, the partition logic or ordering of the "
        "messages will be affected.",
    )
    _name_options(alter)
    _if_exists_option(alter)
    _config_option(alter, "set a config override (repeatable)")
    alter.add_argument(
        "--delete-config",
        dest="delete_configs",
        action="append",
        default=[],
        metavar="KEY",
        help="remove a config override (repeatable)",
    )
    alter.add_argument(
        "--partitions",
        type=positive_int,
        default=None,
        metavar="N",
        help="the new partition count: more than the current one",
    )
    alter.set_defaults(handler=run_alter)

    delete = actions.add_parser(
        "delete",
        parents=parents,
        help="delete a topic",
        description="Delete a topic: its partition directories are renamed to Kafka's "
        "'-delete' form, then removed after file.delete.delay.ms.",
    )
    _name_options(delete)
    _if_exists_option(delete)
    delete.set_defaults(handler=run_delete)

    add_kafka_actions(parser, run_create, run_list, run_describe, run_alter, run_delete)


def _configs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``--config KEY=VALUE`` pairs as a mapping; a key given twice is an error."""
    configs: dict[str, str] = {}
    for key, value in pairs:
        if key in configs:
            raise InvalidConfigError(f"--config {key} is given twice")
        configs[key] = value
    return configs


def topic_of(args: argparse.Namespace) -> str:
    """The topic named by NAME or ``--topic`` (exactly one of them), validated."""
    positional: str | None = getattr(args, "name", None)
    option: str | None = getattr(args, "topic_option", None)
    if positional is not None and option is not None and positional != option:
        raise InvalidConfigError(
            f"two topic names: {positional!r} and --topic {option!r}; give one of them"
        )
    name = positional if positional is not None else option
    if name is None:
        raise InvalidConfigError("a topic name is required: give NAME or --topic NAME")
    validate_topic_name(name)
    return name


def check_replication_factor(factor: int | None) -> None:
    """``--replication-factor``: absent or 1; seglog keeps one copy of each partition."""
    if factor is not None and factor != 1:
        raise InvalidConfigError(
            f"--replication-factor {factor}: seglog is single-node storage, each partition is "
            "stored once in this node's log directories, so the replication factor is 1 "
            "(give 1 or leave it out)"
        )


def run_create(args: argparse.Namespace) -> int:
    """``topics create``."""
    name = topic_of(args)
    check_replication_factor(args.replication_factor)
    configs = _configs(args.configs)
    note_bootstrap_server(args)
    if has_collision_chars(name):
        print(COLLISION_WARNING, file=sys.stderr)
    with open_manager(args, writes=True, create_dirs=True) as manager:
        if args.if_not_exists and name in manager.topic_names():
            return EXIT_OK  # kafka-topics.sh --if-not-exists: nothing printed
        partitions = args.partitions or manager.broker.num_partitions
        with deferred_interrupts():
            manager.create_topic(name, partitions, configs)
    print(f"Created topic {name}.")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    """``topics list``."""
    rows: list[tuple[str, int, int]] = []
    with open_manager(args) as manager:
        for name in manager.topic_names():
            partitions = manager.partitions_of(name)
            size = sum(manager.get_log(name, p).size_bytes() for p in partitions)
            rows.append((name, len(partitions), size))
    if args.json:
        topics = [{"name": n, "partitions": p, "size_bytes": s} for n, p, s in rows]
        print(json_line({"topics": topics}))
    else:
        print_table(rows, ("TOPIC", "PARTITIONS", "SIZE_BYTES"), sys.stdout)
    return EXIT_OK


def run_describe(args: argparse.Namespace) -> int:
    """``topics describe``."""
    name = topic_of(args)
    note_bootstrap_server(args)
    with open_manager(args) as manager:
        if args.if_exists and name not in manager.topic_names():
            return EXIT_OK
        description = manager.describe_topic(name)
    if args.json:
        print(json_line(dataclasses.asdict(description)))
    else:
        _print_description(description)
    return EXIT_OK


def _print_description(description: TopicDescription) -> None:
    out = sys.stdout
    topic_level = {"SEGLOG_TOPIC_OVERRIDE", "DYNAMIC_TOPIC_CONFIG", "INTERNAL_TOPIC_CONFIG"}
    configs = ",".join(
        f"{k}={v}"
        for k, v in sorted(description.config.items())
        if description.sources.get(k) in topic_level
    )
    out.write(
        f"Topic: {description.name}\tTopicId: {description.topic_id or '-'}\t"
        f"PartitionCount: {len(description.partitions)}\tConfigs: {configs}\n"
    )
    if not description.configs_known:
        out.write(
            f"Note: {CONFIGS_UNKNOWN} (retention, the cleaner and compaction leave this "
            "topic alone until its cleanup.policy is set)\n"
        )
    out.write("\n")
    print_table(
        [
            (key, value, description.sources.get(key, "-"))
            for key, value in sorted(description.config.items())
        ],
        ("CONFIG", "VALUE", "SOURCE"),
        out,
    )
    out.write("\n")
    print_table(
        [
            (
                p.partition,
                p.log_start_offset,
                p.log_end_offset,
                p.high_watermark,
                p.recovery_point,
                p.last_stable_offset,
                p.ongoing_transactions,
                "-" if p.first_ongoing_offset is None else p.first_ongoing_offset,
                p.producer_count,
                len(p.segments),
                p.size_bytes,
                p.directory,
            )
            for p in description.partitions
        ],
        (
            "PARTITION",
            "LOG_START_OFFSET",
            "LOG_END_OFFSET",
            "HIGH_WATERMARK",
            "RECOVERY_POINT",
            "LAST_STABLE_OFFSET",
            "ONGOING_TXNS",
            "FIRST_TXN_OFFSET",
            "PRODUCERS",
            "SEGMENTS",
            "SIZE_BYTES",
            "DIRECTORY",
        ),
        out,
    )
    out.write("\n")
    print_table(
        [
            (
                p.partition,
                s.base_offset,
                s.size_bytes,
                s.offset_index_entries,
                s.time_index_entries,
                s.max_timestamp,
            )
            for p in description.partitions
            for s in p.segments
        ],
        (
            "PARTITION",
            "BASE_OFFSET",
            "SIZE_BYTES",
            "INDEX_ENTRIES",
            "TIMEINDEX_ENTRIES",
            "MAX_TIMESTAMP",
        ),
        out,
    )


def run_alter(args: argparse.Namespace) -> int:
    """``topics alter``: configs first validated, then the partitions added, then the configs
    written (each step crash-safe; a bad config changes nothing)."""
    name = topic_of(args)
    configs = _configs(args.configs)
    removals = list(dict.fromkeys(args.delete_configs))
    partitions: int | None = args.partitions
    note_bootstrap_server(args)
    if not configs and not removals and partitions is None:
        raise InvalidConfigError(
            "nothing to alter: give --partitions N, --config KEY=VALUE or --delete-config KEY"
        )
    both = sorted(set(configs) & set(removals))
    if both:
        raise InvalidConfigError(f"{', '.join(both)}: both set (--config) and deleted")
    with open_manager(args, writes=True) as manager:
        if args.if_exists and name not in manager.topic_names():
            return EXIT_OK
        before = manager.describe_topic(name)
        overrides = before.overrides
        missing = [key for key in removals if key not in overrides]
        if missing:
            current = ", ".join(sorted(overrides)) or "none"
            raise InvalidConfigError(
                f"topic {name!r} does not override {', '.join(missing)} (its overrides: {current})"
            )
        if configs or removals:
            new = {k: v for k, v in overrides.items() if k not in removals} | configs
            manager.log_config(name, new)  # validates before anything changes
        if partitions is not None:
            with deferred_interrupts():
                manager.increase_partitions(name, partitions)
            print(
                f"Increased the partition count of topic {name} from "
                f"{len(before.partitions)} to {partitions}."
            )
        if configs or removals:
            with deferred_interrupts():
                manager.alter_topic(name, configs, remove=removals)
            print(f"Completed updating config for topic {name}.")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    """``topics delete``."""
    name = topic_of(args)
    note_bootstrap_server(args)
    with open_manager(args, writes=True) as manager:
        if args.if_exists and name not in manager.topic_names():
            return EXIT_OK
        with deferred_interrupts():
            manager.delete_topic(name)
            _forget_committed_offsets(manager, name)
    print(f"Deleted topic {name}.")
    return EXIT_OK


def _forget_committed_offsets(manager: LogManager, name: str) -> None:
    """Tombstones for the consumer groups' offsets of a deleted topic, as Kafka's group
    coordinator writes them. A crash before they are written leaves offsets of a topic that is
    gone, which offset expiry removes later; damage in ``__consumer_offsets`` is reported and
    leaves them too (the topic is deleted either way)."""
    from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetsStore
    from seglog.errors import CorruptGroupRecordError

    if OFFSETS_TOPIC not in manager.topic_names():
        return
    try:
        OffsetsStore.open(manager).topic_deleted(name, now_ms=manager.clock.now_ms())
    except CorruptGroupRecordError as exc:
        print(f"seglog: committed offsets of {name} kept: {exc}", file=sys.stderr)
