"""kafka-topics.sh's spelling of ``seglog topics``: ``--create``, ``--list``, ``--describe``,
``--alter``, ``--delete`` as action flags, with ``--topic`` and the tool's other options.

``seglog topics --create --topic T --partitions 3 --replication-factor 1`` runs exactly what
``seglog topics create T --partitions 3`` runs (same checks, output and exit status); only the
spelling differs. The rules are kafka-topics.sh's (``TopicCommand.checkArgs``):

* exactly one action flag; ``--topic`` is required but for ``--list`` and ``--describe``;
* ``--partitions`` only with ``--create``/``--alter``, ``--replication-factor`` and
  ``--if-not-exists`` only with ``--create``, ``--if-exists`` only with
  ``--alter``/``--delete``/``--describe``, ``--config`` only with ``--create``/``--alter``,
  ``--exclude-internal`` only with ``--list``/``--describe``. Breaking one is a usage error
  (status 2) naming the option and the actions it goes with;
* ``--topic`` of every action but ``--create`` is a regular expression matched against the
  whole name, a comma separating alternatives (Kafka's include list): ``--describe --topic
  'prices.*'`` describes every matching topic. No match is an error ("Topic 'x' does not exist
  as expected", Kafka's words) unless ``--if-exists`` is given;
* ``--list`` prints the names one per line, as kafka-topics.sh does (scripts read it); the
  seglog spelling ``topics list`` keeps its table. The internal topics are listed unless
  ``--exclude-internal``.

``--bootstrap-server HOST:PORT`` (every spelling) is accepted so that a kafka-topics.sh line
runs unchanged, and ignored with a note on stderr: seglog opens the log directories
(``--data-dir``/``--config server.properties``), it never talks to a broker.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Final

from seglog.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    key_value,
    missing_action,
    open_manager,
    positive_int,
)
from seglog.errors import InvalidConfigError, UnknownTopicError
from seglog.format.topic_names import INTERNAL_TOPICS

Handler = Callable[[argparse.Namespace], int]

ACTIONS: Final = ("create", "list", "describe", "alter", "delete")

#: Which actions each option goes with (TopicCommand.checkInvalidArgs); dest -> (flag, actions).
_ALLOWED: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "kafka_partitions": ("--partitions", frozenset({"create", "alter"})),
    "kafka_replication_factor": ("--replication-factor", frozenset({"create"})),
    "kafka_configs": ("--config", frozenset({"create", "alter"})),
    "kafka_delete_configs": ("--delete-config", frozenset({"alter"})),
    "kafka_if_exists": ("--if-exists", frozenset({"alter", "delete", "describe"})),
    "kafka_if_not_exists": ("--if-not-exists", frozenset({"create"})),
    "kafka_exclude_internal": ("--exclude-internal", frozenset({"list", "describe"})),
    "kafka_json": ("--json", frozenset({"describe"})),
}


def kafka_compat_parent() -> argparse.ArgumentParser:
    """A parent parser adding ``--bootstrap-server`` (accepted, ignored with a note)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--bootstrap-server",
        dest="bootstrap_server",
        default=argparse.SUPPRESS,
        metavar="HOST:PORT",
        help="accepted for kafka-topics.sh lines and ignored: seglog opens the log "
        "directories (--data-dir), not a broker",
    )
    return parent


def note_bootstrap_server(args: argparse.Namespace) -> None:
    """Say on stderr that ``--bootstrap-server`` is ignored, when it was given."""
    server = getattr(args, "bootstrap_server", None)
    if server is not None:
        print(
            f"seglog: note: --bootstrap-server {server} is ignored: seglog works on the log "
            "directories (--data-dir or --config server.properties), not through a broker",
            file=sys.stderr,
        )


def add_kafka_actions(
    parser: argparse.ArgumentParser,
    run_create: Handler,
    run_list: Handler,
    run_describe: Handler,
    run_alter: Handler,
    run_delete: Handler,
) -> None:
    """Add kafka-topics.sh's options to the ``topics`` parser and make it their handler."""
    group = parser.add_argument_group("kafka-topics.sh's spelling (topics --create --topic T)")
    for action in ACTIONS:
        group.add_argument(
            f"--{action}",
            dest="kafka_actions",
            action="append_const",
            const=action,
            default=argparse.SUPPRESS,
            help=f"the same as 'topics {action}'",
        )
    group.add_argument(
        "--topic",
        dest="kafka_topic",
        metavar="TOPIC",
        help="the topic; a regular expression (whole name, ',' between alternatives) but "
        "with --create",
    )
    group.add_argument(
        "--partitions",
        dest="kafka_partitions",
        type=positive_int,
        metavar="N",
        help="--create: the partition count (default: num.partitions); --alter: the new, "
        "larger count",
    )
    group.add_argument(
        "--replication-factor",
        dest="kafka_replication_factor",
        type=int,
        metavar="N",
        help="--create: only 1 (single-node storage)",
    )
    group.add_argument(
        "--config",
        dest="kafka_configs",
        type=key_value,
        action="append",
        metavar="KEY=VALUE",
        help="--create/--alter: a topic config override (repeatable)",
    )
    group.add_argument(
        "--delete-config",
        dest="kafka_delete_configs",
        action="append",
        metavar="KEY",
        help="--alter: remove a config override (repeatable)",
    )
    group.add_argument(
        "--if-exists",
        dest="kafka_if_exists",
        action="store_true",
        default=None,
        help="--alter/--delete/--describe: do nothing when no topic matches",
    )
    group.add_argument(
        "--if-not-exists",
        dest="kafka_if_not_exists",
        action="store_true",
        default=None,
        help="--create: do nothing when the topic exists",
    )
    group.add_argument(
        "--exclude-internal",
        dest="kafka_exclude_internal",
        action="store_true",
        default=None,
        help="--list/--describe: leave out Kafka's internal topics (__consumer_offsets, ...)",
    )
    group.add_argument(
        "--json",
        dest="kafka_json",
        action="store_true",
        default=None,
        help="--describe: one JSON object per topic instead of tables",
    )
    handlers = {
        "create": run_create,
        "list": run_list,
        "describe": run_describe,
        "alter": run_alter,
        "delete": run_delete,
    }

    def run(args: argparse.Namespace) -> int:
        return _run(parser, handlers, args)

    parser.set_defaults(handler=run)


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _run(
    parser: argparse.ArgumentParser, handlers: dict[str, Handler], args: argparse.Namespace
) -> int:
    actions: list[str] = getattr(args, "kafka_actions", None) or []
    if not actions:
        return missing_action(
            parser, "create, list, describe, alter, delete, or --create, --list, ..."
        )
    if len(set(actions)) != 1:
        return _usage_error(
            parser,
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete",
        )
    action = actions[0]
    for dest, (flag, allowed) in _ALLOWED.items():
        if getattr(args, dest, None) is not None and action not in allowed:
            goes_with = " or ".join(f"--{a}" for a in ACTIONS if a in allowed)
            return _usage_error(parser, f"{flag} goes only with {goes_with}, not --{action}")
    if args.kafka_topic is None and action not in ("list", "describe"):
        return _usage_error(parser, f"--{action} needs --topic TOPIC")
    _fill(args)
    handler = handlers[action]
    if action == "create":
        args.name = args.kafka_topic
        return handler(args)
    if action == "list":
        return _list(args)
    status = EXIT_OK
    for name in _matching_topics(args):
        args.name = name
        status = max(status, handler(args))
    return status


def _fill(args: argparse.Namespace) -> None:
    """The seglog subcommands' attributes from the kafka-topics.sh options."""
    args.name = None
    args.topic_option = None
    args.partitions = args.kafka_partitions
    args.replication_factor = args.kafka_replication_factor
    args.configs = args.kafka_configs or []
    args.delete_configs = args.kafka_delete_configs or []
    args.if_exists = bool(args.kafka_if_exists)
    args.if_not_exists = bool(args.kafka_if_not_exists)
    args.json = bool(args.kafka_json)


def _include_list(text: str) -> re.Pattern[str]:
    """Kafka's ``IncludeList``: trimmed, ',' as '|', blanks and surrounding quotes dropped."""
    regex = text.strip().replace(",", "|").replace(" ", "").strip("\"'")
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidConfigError(f"--topic {text!r} is not a regular expression: {exc}") from None


def _topics(args: argparse.Namespace) -> list[str]:
    with open_manager(args) as manager:
        names = manager.topic_names()
    if args.kafka_exclude_internal:
        names = [name for name in names if name not in INTERNAL_TOPICS]
    if args.kafka_topic is not None:
        pattern = _include_list(args.kafka_topic)
        names = [name for name in names if pattern.fullmatch(name)]
    return names


def _matching_topics(args: argparse.Namespace) -> list[str]:
    """The topics ``--topic`` matches (all for ``--describe`` without it)."""
    names = _topics(args)
    if not names and args.kafka_topic is not None and not args.if_exists:
        raise UnknownTopicError(f"Topic '{args.kafka_topic}' does not exist as expected")
    return names


def _list(args: argparse.Namespace) -> int:
    """``--list``: the names, one per line."""
    for name in _topics(args):
        print(name)
    return EXIT_OK
