"""``seglog topics``: create, list, describe, alter and delete topics (like ``kafka-topics.sh``).

* ``topics create NAME --partitions N [--config KEY=VALUE]...``: prints ``Created topic NAME.``
  (Kafka's line); the data dirs are created if missing.
* ``topics list [--json]``: a table of topics (name, partitions, bytes on disk).
* ``topics describe NAME [--json]``: Kafka's ``Topic: ... Configs: ...`` line (the overrides),
  then a table of partitions (offsets, recovery point, size, directory) and one of segments.
  ``--json`` adds the effective config (overrides over the broker defaults).
* ``topics alter NAME [--config KEY=VALUE]... [--delete-config KEY]...``: sets and removes
  overrides; removing a key the topic does not override is an error (it is usually a typo).
* ``topics delete NAME``: renames the partition directories to ``*-delete``; they are
  removed after ``file.delete.delay.ms`` by a running manager (a one-shot command leaves them).

Topic names are checked as Kafka checks them (``..``, ``a/b``, 250 characters are rejected)
before anything is opened. A ``--config`` key given twice is an error.

JSON shapes (one object on one line):

* list: ``{"topics": [{"name", "partitions", "size_bytes"}]}``
* describe: ``{"name", "topic_id", "overrides": {..}, "config": {..}, "partitions":
  [{"partition", "directory", "log_start_offset", "log_end_offset", "high_watermark",
  "recovery_point", "size_bytes", "segments": [{"base_offset", "size_bytes",
  "offset_index_entries", "time_index_entries", "max_timestamp"}]}], "sources": {key:
  source}, "configs_known": bool}``

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
    missing_action,
    open_manager,
    positive_int,
    print_table,
)
from seglog.engine.log_manager import TopicDescription
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.errors import InvalidConfigError
from seglog.format.topic_names import validate_topic_name

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog topics create prices --partitions 3 \\
      --config cleanup.policy=compact
  seglog --data-dir /var/lib/seglog topics list
  seglog --data-dir /var/lib/seglog topics describe prices --json | jq .partitions
  seglog --data-dir /var/lib/seglog topics alter prices --config retention.ms=3600000
  seglog --data-dir /var/lib/seglog topics delete prices"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog topics`` and its subcommands."""
    parser = subparsers.add_parser(
        "topics",
        help="create, list, describe, alter and delete topics",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    parent = command_options_parent()

    create = actions.add_parser(
        "create",
        parents=[parent],
        help="create a topic",
        description="Create a topic with N partitions (Kafka's topic-name rules); the data "
        "dirs are created if missing. --config takes Kafka's topic config names "
        "(README: Configuration reference).",
    )
    create.add_argument("name", metavar="NAME", help="topic name")
    create.add_argument(
        "--partitions", type=positive_int, required=True, metavar="N", help="partition count"
    )
    create.add_argument(
        "--config",
        dest="configs",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config override (repeatable), e.g. cleanup.policy=compact",
    )
    create.set_defaults(handler=run_create)

    listing = actions.add_parser(
        "list",
        parents=[parent],
        help="list topics",
        description="The topics of the data dirs: name, partitions and bytes on disk.",
    )
    listing.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    listing.set_defaults(handler=run_list)

    describe = actions.add_parser(
        "describe",
        parents=[parent],
        help="partitions, segments, offsets and configs of a topic",
        description="A topic's config overrides (Kafka's 'Topic: ... Configs: ...' line), its "
        "partitions (offsets, recovery point, size, directory) and segments.",
    )
    describe.add_argument("name", metavar="NAME", help="topic name")
    describe.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    describe.set_defaults(handler=run_describe)

    alter = actions.add_parser(
        "alter",
        parents=[parent],
        help="set or remove config overrides",
        description="Set (--config KEY=VALUE) and remove (--delete-config KEY) a topic's "
        "config overrides; its logs use them at once.",
    )
    alter.add_argument("name", metavar="NAME", help="topic name")
    alter.add_argument(
        "--config",
        dest="configs",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config override (repeatable)",
    )
    alter.add_argument(
        "--delete-config",
        dest="delete_configs",
        action="append",
        default=[],
        metavar="KEY",
        help="remove a config override (repeatable)",
    )
    alter.set_defaults(handler=run_alter)

    delete = actions.add_parser(
        "delete",
        parents=[parent],
        help="delete a topic",
        description="Delete a topic: its partition directories are renamed to Kafka's "
        "'-delete' form, then removed after file.delete.delay.ms.",
    )
    delete.add_argument("name", metavar="NAME", help="topic name")
    delete.set_defaults(handler=run_delete)

    parser.set_defaults(
        handler=lambda _args: missing_action(parser, "create, list, describe, alter, delete")
    )


def _configs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``--config KEY=VALUE`` pairs as a mapping; a key given twice is an error."""
    configs: dict[str, str] = {}
    for key, value in pairs:
        if key in configs:
            raise InvalidConfigError(f"--config {key} is given twice")
        configs[key] = value
    return configs


def run_create(args: argparse.Namespace) -> int:
    """``topics create``."""
    validate_topic_name(args.name)
    configs = _configs(args.configs)
    with open_manager(args, writes=True, create_dirs=True) as manager, deferred_interrupts():
        manager.create_topic(args.name, args.partitions, configs)
    print(f"Created topic {args.name}.")
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
    validate_topic_name(args.name)
    with open_manager(args) as manager:
        description = manager.describe_topic(args.name)
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
    """``topics alter``."""
    validate_topic_name(args.name)
    configs = _configs(args.configs)
    removals = list(dict.fromkeys(args.delete_configs))
    if not configs and not removals:
        raise InvalidConfigError("nothing to alter: give --config KEY=VALUE or --delete-config KEY")
    both = sorted(set(configs) & set(removals))
    if both:
        raise InvalidConfigError(f"{', '.join(both)}: both set (--config) and deleted")
    with open_manager(args, writes=True) as manager:
        overrides = manager.describe_topic(args.name).overrides
        missing = [key for key in removals if key not in overrides]
        if missing:
            current = ", ".join(sorted(overrides)) or "none"
            raise InvalidConfigError(
                f"topic {args.name!r} does not override {', '.join(missing)} "
                f"(its overrides: {current})"
            )
        with deferred_interrupts():
            manager.alter_topic(args.name, configs, remove=removals)
    print(f"Completed updating config for topic {args.name}.")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    """``topics delete``."""
    validate_topic_name(args.name)
    with open_manager(args, writes=True) as manager, deferred_interrupts():
        manager.delete_topic(args.name)
    print(f"Deleted topic {args.name}.")
    return EXIT_OK
