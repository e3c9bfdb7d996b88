"""``seglog log-dirs describe``: the log directories and their partitions, as JSON.

The JSON is what ``kafka-log-dirs.sh --describe`` prints (this node as the one broker)::

    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,
     "partitions":[{"partition":"t-0","size":83,"offsetLag":0,"isFuture":false}]}]}]}

only the JSON, on one line, so it can be piped to ``jq`` (Kafka's tool prints two
"Querying brokers ..." / "Received ..." lines before it). ``--topic-list a,b`` keeps only the
partitions of those topics, as in Kafka; ``--pretty`` indents the JSON. ``--json`` is
accepted for symmetry with the other inspection commands (the output is JSON either way).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    json_line,
    missing_action,
    open_manager,
)
from seglog.format.topic_names import validate_topic_name

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``seglog log-dirs``."""
    parser = subparsers.add_parser(
        "log-dirs",
        help="describe the log directories (like kafka-log-dirs.sh --describe)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    describe = actions.add_parser(
        "describe",
        parents=[command_options_parent()],
        help="print every log directory and its partitions as JSON",
        description="Every log directory and its partitions (size, offset lag) as JSON, like "
        "kafka-log-dirs.sh --describe.",
    )
    describe.add_argument(
        "--topic-list",
        default="",
        metavar="TOPIC[,TOPIC...]",
        help="only the partitions of these topics (default: all)",
    )
    describe.add_argument("--pretty", action="store_true", help="indent the JSON")
    describe.add_argument(
        "--json", action="store_true", help="JSON output (the default and only format)"
    )
    describe.set_defaults(handler=run_describe)
    parser.set_defaults(handler=lambda _args: missing_action(parser, "describe"))


def _topic_of(partition_name: str) -> str:
    return partition_name.rpartition("-")[0]


def run_describe(args: argparse.Namespace) -> int:
    """``log-dirs describe``."""
    topics = [t for t in args.topic_list.split(",") if t]
    for topic in topics:
        validate_topic_name(topic)
    with open_manager(args) as manager:
        description: dict[str, Any] = manager.describe_log_dirs()
    if topics:
        wanted = set(topics)
        for broker in description["brokers"]:
            for log_dir in broker["logDirs"]:
                log_dir["partitions"] = [
                    p for p in log_dir["partitions"] if _topic_of(p["partition"]) in wanted
                ]
    print(json.dumps(description, indent=2) if args.pretty else json_line(description))
    return EXIT_OK
