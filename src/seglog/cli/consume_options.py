"""The options of ``seglog consume``: seglog's own, and Kafka's and kcat's as aliases.

``kafka-console-consumer.sh`` habits accepted (same meaning as seglog's option named):

=====================================  ===============================================
``--topic T``                          the ``TOPIC`` argument
``--from-beginning``                   ``--offset earliest`` (already seglog's default)
``--offset earliest|latest|N``         the same
``--partition P``                      the same
``--max-messages N``                   ``--max-records N``
``--timeout-ms MS``                    with ``--follow``: stop after MS without a new record
                                       (without ``--follow`` the command ends at the log
                                       end anyway, so it changes nothing)
``--isolation-level L``                ``read_uncommitted`` (the default) or
                                       ``read_committed``: up to the last stable offset,
                                       without the records of aborted transactions
``--property NAME=VALUE``              the text layout (:mod:`seglog.cli.consume_output`):
                                       ``print.key|timestamp|partition|offset|headers|
                                       value|delivery``, ``key.separator``,
                                       ``line.separator``, ``headers.separator``,
                                       ``null.literal``; ``key.deserializer`` /
                                       ``value.deserializer`` only as Kafka's
                                       ``ByteArrayDeserializer`` or ``StringDeserializer``
                                       (bytes are printed as they are either way)
``--formatter CLASS``                  ``DefaultMessageFormatter`` (the text layout) or
                                       ``NoOpMessageFormatter`` (print nothing), by short
                                       or full Kafka class name
=====================================  ===============================================

kcat's ``-f FORMAT`` (with ``-Z`` for ``NULL``) selects its format string
(:mod:`seglog.cli.kcat_format`). An unknown ``--property`` name is an error with the
nearest known name, not ignored: a typo would otherwise print the wrong thing silently.
``--property`` and ``--formatter`` shape the text output only; combining them with
``--format json`` or ``-f`` is an error (which one wins would be a guess).

``--isolation-level read_committed`` is Kafka's: each partition is read up to its last stable
offset (the first offset of its earliest open transaction; the log end when none is open),
records of aborted transactions (found through the segments' ``.txnindex`` files) are left
out, and ``--offset latest`` starts at the last stable offset. Control records (transaction
markers) are never printed at either level. It applies under ``--read-compacted`` too.
"""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seglog.cli.arg_types import non_negative_int
from seglog.cli.common import command_options_parent, positive_int
from seglog.cli.consume_output import (
    TEXT_PROPERTIES,
    TRUE_FALSE_PROPERTIES,
    Renderer,
    TextLayout,
    json_record_line,
    no_output,
)
from seglog.cli.kcat_format import parse_format
from seglog.errors import InvalidConfigError

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

DESERIALIZERS = frozenset(
    {
        "org.apache.kafka.common.serialization.ByteArrayDeserializer",
        "org.apache.kafka.common.serialization.StringDeserializer",
    }
)
KNOWN_PROPERTIES = (
    *TRUE_FALSE_PROPERTIES,
    *TEXT_PROPERTIES,
    "key.deserializer",
    "value.deserializer",
)
DEFAULT_FORMATTERS = frozenset(
    {
        "DefaultMessageFormatter",
        "kafka.tools.DefaultMessageFormatter",
        "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
    }
)
NO_OP_FORMATTERS = frozenset(
    {
        "NoOpMessageFormatter",
        "kafka.tools.NoOpMessageFormatter",
        "org.apache.kafka.tools.consumer.NoOpMessageFormatter",
    }
)
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def offset_spec(text: str) -> str | int:
    """``earliest``, ``latest`` or an offset >= 0."""
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


def add_options(parser: argparse.ArgumentParser) -> None:
    """Every option of ``seglog consume`` (module docstring for the Kafka aliases)."""
    parser.add_argument("topic", nargs="?", metavar="TOPIC", help="topic to read")
    parser.add_argument(
        "--topic", dest="topic_option", metavar="TOPIC", help="the topic (Kafka's spelling)"
    )
    parser.add_argument(
        "--partition",
        type=non_negative_int,
        metavar="P",
        help="read only this partition (default: all, in partition order)",
    )
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--offset",
        type=offset_spec,
        default=None,
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
        "--from-beginning",
        action="store_true",
        help="start at the earliest offset (Kafka's option; seglog's default anyway)",
    )
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument(
        "--max-records", type=positive_int, metavar="N", help="stop after N records in all"
    )
    limit.add_argument(
        "--max-messages",
        dest="max_records",
        type=positive_int,
        metavar="N",
        help="the same (Kafka's spelling)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="at the log end, keep polling for new records (end with Ctrl-C, --timeout-ms "
        "or --max-records)",
    )
    parser.add_argument(
        "--timeout-ms",
        type=positive_int,
        metavar="MS",
        help="with --follow: stop when no new record came for MS milliseconds",
    )
    parser.add_argument(
        "--poll-ms",
        type=positive_int,
        default=200,
        metavar="MS",
        help="with --follow: how often the log end is checked (default: 200)",
    )
    parser.add_argument(
        "--isolation-level",
        choices=ISOLATION_LEVELS,
        default="read_uncommitted",
        help="read_uncommitted (default: every record, those of open and aborted "
        "transactions too); read_committed: up to the last stable offset, without the "
        "records of aborted transactions",
    )
    _output_options(parser)


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument(
        "--print-key",
        action="store_true",
        help="text: print key<SEP>value instead of value (= --property print.key=true)",
    )
    parser.add_argument(
        "--key-separator",
        default=None,
        metavar="SEP",
        help="text: what separates the fields (default: a tab; = --property key.separator)",
    )
    parser.add_argument(
        "--null-value",
        default=None,
        metavar="MARKER",
        help="text: what a null key or value prints as (default: null; = --property null.literal)",
    )
    parser.add_argument(
        "--property",
        dest="properties",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Kafka's formatter properties: print.key, print.timestamp, print.partition, "
        "print.offset, print.headers, print.value, key.separator, line.separator, "
        "headers.separator, null.literal",
    )
    parser.add_argument(
        "--formatter",
        metavar="CLASS",
        help="Kafka's formatter class: DefaultMessageFormatter (text) or NoOpMessageFormatter",
    )
    parser.add_argument(
        "-f",
        dest="kcat_format",
        metavar="FORMAT",
        help="kcat's format string: %%t %%p %%o %%T %%k %%K %%s %%S %%R %%h %%%%, "
        "escapes \\n \\t \\r \\xHH",
    )
    parser.add_argument(
        "-Z",
        dest="kcat_null",
        action="store_true",
        help="with -f: print a null (or empty) key or value as NULL (kcat's -Z)",
    )


def register_parser(
    subparsers: Subparsers, description: str, epilog: str
) -> argparse.ArgumentParser:
    """Add the ``consume`` parser (its handler is set by the caller)."""
    parser = subparsers.add_parser(
        "consume",
        parents=[command_options_parent()],
        help="print the records of a topic",
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser)
    return parser


@dataclass(frozen=True, slots=True)
class Output:
    """What is printed per record: ``kind`` is ``json``, ``text``, ``kcat`` or ``none``."""

    kind: str
    render: Renderer
    layout: TextLayout | None = None  # for ``text``


def resolve_topic(args: argparse.Namespace) -> str:
    """The topic from ``TOPIC`` or ``--topic`` (exactly one, or both the same)."""
    positional, option = args.topic, args.topic_option
    if positional is None and option is None:
        raise InvalidConfigError("a topic is required: seglog consume TOPIC (or --topic TOPIC)")
    if positional is not None and option is not None and positional != option:
        raise InvalidConfigError(
            f"two topics given: {positional!r} and --topic {option!r}; give one"
        )
    return str(positional if positional is not None else option)


def resolve_offset(args: argparse.Namespace) -> str | int:
    """The start: ``--offset`` or ``--from-beginning`` (Kafka refuses both together)."""
    if args.from_beginning and args.offset is not None and args.offset != "earliest":
        raise InvalidConfigError(
            f"--from-beginning and --offset {args.offset} disagree; give one of them"
        )
    if args.from_beginning and args.timestamp is not None:
        raise InvalidConfigError("--from-beginning and --timestamp disagree; give one of them")
    return "earliest" if args.offset is None else args.offset


def parse_properties(items: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` items, checked against the known names."""
    properties: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise InvalidConfigError(f"--property {item!r}: expected NAME=VALUE")
        if name not in KNOWN_PROPERTIES:
            close = difflib.get_close_matches(name, KNOWN_PROPERTIES, n=1)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidConfigError(
                f"--property {name}: unknown formatter property{suggestion} (known: "
                f"{', '.join(KNOWN_PROPERTIES)})"
            )
        if name.endswith(".deserializer") and value.strip() not in DESERIALIZERS:
            raise InvalidConfigError(
                f"--property {name}={value}: seglog prints bytes as they are; only "
                "ByteArrayDeserializer and StringDeserializer are accepted"
            )
        properties[name] = value
    return properties


def resolve_output(args: argparse.Namespace) -> Output:
    """The per-record output of the options given (module docstring for the rules)."""
    properties = parse_properties(args.properties)
    seglog_text = {
        "print.key": "true" if args.print_key else None,
        "key.separator": args.key_separator,
        "null.literal": args.null_value,
    }
    for name, value in seglog_text.items():
        if value is not None:
            properties.setdefault(name, value)
    text_options = bool(properties) or args.formatter is not None
    if args.kcat_format is not None:
        if args.format == "json" or text_options:
            raise InvalidConfigError(
                "-f (kcat's format) cannot be combined with --format json, --property, "
                "--formatter, --print-key, --key-separator or --null-value"
            )
        fmt = parse_format(args.kcat_format, null_as_text=args.kcat_null)
        return Output("kcat", fmt.render)
    if args.kcat_null:
        raise InvalidConfigError("-Z only applies with -f FORMAT")
    if args.format == "json":
        if text_options:
            raise InvalidConfigError(
                "--format json has a fixed layout: --property, --formatter, --print-key, "
                "--key-separator and --null-value apply to the text output only"
            )
        return Output("json", json_record_line)
    if args.formatter is not None:
        name = args.formatter.strip()
        if name in NO_OP_FORMATTERS:
            return Output("none", no_output())
        if name not in DEFAULT_FORMATTERS:
            raise InvalidConfigError(
                f"--formatter {name}: seglog has DefaultMessageFormatter (text, shaped by "
                "--property) and NoOpMessageFormatter; use --format json or -f FORMAT for "
                "other layouts"
            )
    layout = TextLayout.from_properties(properties)
    return Output("text", layout.render, layout)
