"""``seglog delete-records``: move partitions' log start offsets up (``kafka-delete-records.sh``).

The offsets come from a JSON file in Kafka's ``--offset-json-file`` format::

    {"partitions": [{"topic": "prices", "partition": 0, "offset": 5}], "version": 1}

Records below ``offset`` can no longer be read (``consume --offset earliest`` starts at it);
``offset`` ``-1`` means the partition's high watermark (everything goes). Only the log start
offset moves: whole segments below it are removed by the next retention pass (``seglog
retention --once``, rule "log start offset"), as in Kafka.

The file is checked strictly before anything is opened, and any problem is an error naming
it: not UTF-8 or not JSON; a top-level key other than ``partitions`` and ``version``;
``version`` other than 1 (a missing ``version`` means 1, as in Kafka); ``partitions``
missing, not an array, or empty; an entry that is not an object with exactly ``topic`` (a
valid topic name), ``partition`` (an integer 0..2147483647) and ``offset`` (an integer, -1 or
0..2^63-1); a key given twice in an object; a partition listed twice (Kafka's "Offset json
file contains duplicate topic partitions"). Files above 16 MiB are refused. (Kafka ignores
unknown keys; seglog refuses them, since a misspelt key would otherwise be silently dropped.)

Then every partition is checked before any is changed: an unknown topic or partition, an
offset beyond the high watermark, or a topic whose ``cleanup.policy`` lacks ``delete`` is
``seglog: error: ...`` with status 1, and no log start offset moves.

Output is Kafka's, partitions in the file's order::

    Executing records delete operation
    Records delete operation completed:
    partition: prices-0	low_watermark: 5

``--json`` prints ``{"partitions": [{"topic", "partition", "low_watermark"}]}`` on one line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from seglog.cli.common import (
    EXIT_OK,
    command_options_parent,
    deferred_interrupts,
    json_line,
    open_manager,
)
from seglog.cli.strict_json import kind_of, loads_strict
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition, validate_topic_name
from seglog.storage.files import read_file_bytes

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

MAX_OFFSET_JSON_FILE_BYTES = 16 * 1024 * 1024
PARTITION_MAX = (1 << 31) - 1
OFFSET_MAX = (1 << 63) - 1
HIGH_WATERMARK = -1  # Kafka's "offset": -1
FILE_KEYS = frozenset({"partitions", "version"})
ENTRY_KEYS = ("topic", "partition", "offset")

EPILOG = """\
Examples:
  echo '{"partitions": [{"topic": "prices", "partition": 0, "offset": 5}], "version": 1}' \\
      > offsets.json
  seglog --data-dir /var/lib/seglog delete-records --offset-json-file offsets.json
  seglog --data-dir /var/lib/seglog retention --once   # removes the segments below"""


class OffsetJsonFileError(SeglogError, ValueError):
    """An ``--offset-json-file`` that is not a valid offsets file."""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog delete-records``."""
    parser = subparsers.add_parser(
        "delete-records",
        parents=[command_options_parent()],
        help="delete records below an offset (like kafka-delete-records.sh)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--offset-json-file",
        required=True,
        metavar="FILE",
        help='offsets per partition: {"partitions": [{"topic": "t", "partition": 0, '
        '"offset": 5}], "version": 1} (offset -1: the high watermark)',
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    parser.set_defaults(handler=run)


# --- the offsets file -------------------------------------------------------------------------


def _integer(where: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):  # 5.0 and true are refused
        raise ValueError(f"{where} must be an integer, not {kind_of(value)}")
    if not low <= value <= high:
        raise ValueError(f"{where} {value} is outside {low}..{high}")
    return value


def _entry(index: int, entry: Any) -> tuple[TopicPartition, int]:
    where = f"partitions[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be an object, not {kind_of(entry)}")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
            f"(allowed: {', '.join(ENTRY_KEYS)})"
        )
    missing = [key for key in ENTRY_KEYS if key not in entry]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(map(repr, missing))}")
    topic = entry["topic"]
    if not isinstance(topic, str):
        raise ValueError(f"{where}.topic must be a string, not {kind_of(topic)}")
    try:
        validate_topic_name(topic)
    except SeglogError as exc:
        raise ValueError(f"{where}.topic: {exc}") from None
    partition = _integer(f"{where}.partition", entry["partition"], 0, PARTITION_MAX)
    offset = _integer(f"{where}.offset", entry["offset"], HIGH_WATERMARK, OFFSET_MAX)
    return TopicPartition(topic, partition), offset


def _parse(data: bytes) -> dict[TopicPartition, int]:
    """The offsets of a file's bytes; ``ValueError`` says what is wrong."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    document = loads_strict(text)
    if not isinstance(document, dict):
        raise ValueError(f"expected a JSON object, got {kind_of(document)}")
    unknown = sorted(set(document) - FILE_KEYS)
    if unknown:
        raise ValueError(
            f"unknown key(s) {', '.join(map(repr, unknown))} (allowed: partitions, version)"
        )
    if "version" in document:
        version = document["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"'version' must be an integer, not {kind_of(version)}")
        if version != 1:
            raise ValueError(f"unsupported version {version} (only version 1 exists)")
    if "partitions" not in document:
        raise ValueError("missing 'partitions'")
    entries = document["partitions"]
    if not isinstance(entries, list):
        raise ValueError(f"'partitions' must be an array, not {kind_of(entries)}")
    if not entries:
        raise ValueError("'partitions' is empty: no partition to delete records from")
    offsets: dict[TopicPartition, int] = {}
    duplicates: list[TopicPartition] = []
    for index, entry in enumerate(entries):
        tp, offset = _entry(index, entry)
        if tp in offsets and tp not in duplicates:
            duplicates.append(tp)
        offsets[tp] = offset
    if duplicates:
        raise ValueError(
            "Offset json file contains duplicate topic partitions: "
            + ",".join(map(str, duplicates))
        )
    return offsets


def read_offset_json_file(path: str) -> dict[TopicPartition, int]:
    """The offsets per partition of an ``--offset-json-file`` (in file order), checked."""
    data = read_file_bytes(path, max_bytes=MAX_OFFSET_JSON_FILE_BYTES)
    try:
        return _parse(data)
    except ValueError as exc:  # includes int() limits on absurdly long numbers
        raise OffsetJsonFileError(f"{path}: {exc}") from None


# --- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog delete-records``."""
    offsets = read_offset_json_file(args.offset_json_file)
    with open_manager(args, writes=True) as manager, deferred_interrupts():
        low_watermarks = manager.delete_records(offsets)
    if args.json:
        partitions = [
            {"topic": tp.topic, "partition": tp.partition, "low_watermark": low_watermarks[tp]}
            for tp in offsets
        ]
        print(json_line({"partitions": partitions}))
        return EXIT_OK
    print("Executing records delete operation")
    print("Records delete operation completed:")
    for tp in offsets:
        print(f"partition: {tp}\tlow_watermark: {low_watermarks[tp]}")
    return EXIT_OK
