"""Topic names, partitions and partition directory names, as Kafka spells them.

Topic names follow ``org.apache.kafka.common.internals.Topic.validate``, checked in this order:

1. not empty;
2. not ``.`` or ``..``;
3. at most 249 characters (counted in UTF-16 units, like Java's ``String.length``);
4. only ASCII letters, digits, ``.``, ``_`` and ``-``.

A valid name therefore never holds ``/``, NUL, whitespace or a line break, and is never ``.`` or
``..``, so it is safe as a directory name. Partitions are int32 values in ``[0, 2**31 - 1]``.

Creating a topic adds two of Kafka's rules (:func:`check_new_topic_name`):

* **internal names**: ``__cluster_metadata`` (Kafka's controller answers "Creation of internal
  topic __cluster_metadata is prohibited.") and ``__consumer_offsets``,
  ``__transaction_state``, ``__share_group_state`` (a broker creates those itself, with its own
  partition count and configs) are refused with that message: a hand-made one would stand in
  the way of the broker's when the directory is handed to Kafka;
* **collisions**: ``.`` and ``_`` are the same character in Kafka's metric names, so a topic
  whose name equals an existing one after ``.`` -> ``_`` (``a.b`` beside ``a_b``) is refused:
  "Topic 'a.b' collides with existing topic: a_b". A name holding either character gets
  kafka-topics.sh's :data:`COLLISION_WARNING`.

Partition directories in a log directory (``LocalLog.parseTopicPartitionName``)::

    {topic}-{partition}                      live log
    {topic}-{partition}.{uuid}-delete        pending delete   (name capped at 255 characters)
    {topic}-{partition}.{uuid}-future        target of a log-dir move (not capped)
    {topic}-{partition}.{uuid}-stray         KRaft stray replica (capped at 255 characters)

* ``uuid`` is a random UUID as 32 lower-case hex characters (dashes removed).
* Parsing: a name ending in ``-delete``, ``-future`` or ``-stray`` must match
  ``^(\\S+)-(\\S+)\\.(\\S+)-<suffix>$`` and is cut at its **last** ``.``; the rest is split at its
  **last** ``-`` into topic and partition. The topic must be non-empty (it is not validated,
  as in Kafka) and the partition a Java int (optional sign, ASCII digits, int32 range; a
  non-canonical spelling such as ``t-007`` parses as Kafka parses it, to partition 7).
* The capped names are ``{topic[:n]}-{partition}.{uuid}{suffix}`` with ``n`` as large as fits
  in 255 characters, so a long topic's pending-delete directory parses to a **prefix** of the
  topic; Kafka never needs the topic back from a deleted directory. The ``-future`` name is not
  capped (as in Kafka), so a 249-character topic's future directory exceeds 255 characters.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from seglog.errors import InvalidTopicError

MAX_TOPIC_NAME_LENGTH = 249
MAX_DIR_NAME_LENGTH = 255
MAX_PARTITION = (1 << 31) - 1
# Kafka's internal topics (Topic.INTERNAL_TOPICS and the share-group state of Kafka 4): an
# admin listing leaves them out unless asked, so Spark's subscribePattern never matches them.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: Names a topic may never be created with (see the module docstring).
RESERVED_TOPICS = INTERNAL_TOPICS | {CLUSTER_METADATA_TOPIC}
#: What kafka-topics.sh prints when creating a name that holds ``.`` or ``_``.
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
    "('_') could collide. To avoid issues it is best to use either, but not both."
)
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_UUID_HEX = re.compile(r"[0-9a-f]{32}")
# Java's \S is [^ \t\n\x0B\f\r]; Python's \S would also exclude Unicode spaces.
_SUFFIXED_DIR = {
    suffix: re.compile(rf"([^ \t\n\x0b\f\r]+)-([^ \t\n\x0b\f\r]+)\.([^ \t\n\x0b\f\r]+){suffix}")
    for suffix in (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)
}


class TopicPartition(NamedTuple):
    """A topic and a partition number; ``str()`` is Kafka's ``topic-partition`` form."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionDirKind(StrEnum):
    """What a partition directory holds, from its name's suffix."""

    LIVE = "live"
    DELETE = "delete"
    FUTURE = "future"
    STRAY = "stray"


_SUFFIX_OF_KIND = {
    PartitionDirKind.DELETE: DELETE_DIR_SUFFIX,
    PartitionDirKind.FUTURE: FUTURE_DIR_SUFFIX,
    PartitionDirKind.STRAY: STRAY_DIR_SUFFIX,
}


@dataclass(frozen=True, slots=True)
class ParsedPartitionDir:
    """A partition directory name taken apart: its topic, partition, kind and unique id.

    ``uuid`` is the text between the last ``.`` and the suffix for suffixed kinds (Kafka only
    requires it to be non-blank), None for a live directory. For capped ``-delete``/``-stray``
    names the topic may be a prefix of the real one.
    """

    topic: str
    partition: int
    kind: PartitionDirKind
    uuid: str | None

    @property
    def topic_partition(self) -> TopicPartition:
        """The (topic, partition) pair."""
        return TopicPartition(self.topic, self.partition)


def _java_length(text: str) -> int:
    """``String.length()``: UTF-16 units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicError` unless Kafka's ``Topic.validate`` accepts ``name``."""
    if not name:
        raise InvalidTopicError("topic name is illegal: it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError(f'topic name {name!r} is illegal: it cannot be "." or ".."')
    length = _java_length(name)
    if length > MAX_TOPIC_NAME_LENGTH:
        shown = name if length <= 300 else name[:300] + "..."
        raise InvalidTopicError(
            f"topic name {shown!r} is illegal: it is {length} characters long, longer than "
            f"{MAX_TOPIC_NAME_LENGTH}"
        )
    if not _LEGAL_TOPIC.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: it contains a character other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )


def is_valid_topic_name(name: str) -> bool:
    """Whether :func:`validate_topic_name` accepts ``name``."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


def has_collision_chars(name: str) -> bool:
    """Whether ``name`` holds ``.`` or ``_`` (Kafka's ``Topic.hasCollisionChars``)."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    """``name`` with every ``.`` as ``_``: the form two colliding names share."""
    return name.replace(".", "_")


def colliding_topic(name: str, existing: Iterable[str]) -> str | None:
    """The first (sorted) existing topic other than ``name`` that collides with it, or None."""
    if not has_collision_chars(name):
        return None
    unified = unify_collision_chars(name)
    return next(
        (
            other
            for other in sorted(existing)
            if other != name and unify_collision_chars(other) == unified
        ),
        None,
    )


def check_new_topic_name(name: str, existing: Iterable[str]) -> None:
    """Raise :class:`InvalidTopicError` unless a topic ``name`` may be created beside the
    ``existing`` ones: Kafka's name rules, then its internal-name and collision rules."""
    validate_topic_name(name)
    if name in RESERVED_TOPICS:
        owner = (
            "it is the KRaft metadata log, owned by the controller quorum"
            if name == CLUSTER_METADATA_TOPIC
            else "a Kafka broker creates it itself, with its own partition count and configs"
        )
        raise InvalidTopicError(f"Creation of internal topic {name} is prohibited ({owner}).")
    other = colliding_topic(name, existing)
    if other is not None:
        raise InvalidTopicError(
            f"Topic '{name}' collides with existing topic: {other} (Kafka's metric names "
            "spell '.' and '_' alike)"
        )


def validate_partition(partition: int) -> None:
    """Raise :class:`InvalidTopicError` unless ``0 <= partition <= 2**31 - 1``."""
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise InvalidTopicError(f"partition {partition!r} is not an int")
    if not 0 <= partition <= MAX_PARTITION:
        raise InvalidTopicError(f"partition {partition} is outside [0, {MAX_PARTITION}]")


def validate_topic_partition(tp: TopicPartition) -> None:
    """Validate both the topic name and the partition."""
    validate_topic_name(tp.topic)
    validate_partition(tp.partition)


def partition_dir_name(tp: TopicPartition) -> str:
    """``{topic}-{partition}``, the live directory of a partition (``LocalLog.logDirName``)."""
    validate_topic_partition(tp)
    return f"{tp.topic}-{tp.partition}"


def new_dir_uuid_hex() -> str:
    """A random UUID as 32 lower-case hex characters, as Kafka puts in suffixed dir names."""
    return uuid.uuid4().hex


def _check_uuid_hex(uuid_hex: str) -> None:
    if not _UUID_HEX.fullmatch(uuid_hex):
        raise ValueError(f"uuid {uuid_hex!r} is not 32 lower-case hex characters")


def _capped_dir_name(tp: TopicPartition, uuid_hex: str | None, suffix: str) -> str:
    """``LocalLog.logDirNameWithSuffixCappedLength``: truncate the topic to fit 255 characters."""
    validate_topic_partition(tp)
    uuid_hex = new_dir_uuid_hex() if uuid_hex is None else uuid_hex
    _check_uuid_hex(uuid_hex)
    full_suffix = f"-{tp.partition}.{uuid_hex}{suffix}"
    prefix_length = min(len(tp.topic), MAX_DIR_NAME_LENGTH - len(full_suffix))
    return tp.topic[:prefix_length] + full_suffix


def delete_dir_name(tp: TopicPartition, uuid_hex: str | None = None) -> str:
    """``{topic}-{partition}.{uuid}-delete``, capped at 255 characters (random uuid if None)."""
    return _capped_dir_name(tp, uuid_hex, DELETE_DIR_SUFFIX)


def stray_dir_name(tp: TopicPartition, uuid_hex: str | None = None) -> str:
    """``{topic}-{partition}.{uuid}-stray``, capped at 255 characters (random uuid if None)."""
    return _capped_dir_name(tp, uuid_hex, STRAY_DIR_SUFFIX)


def future_dir_name(tp: TopicPartition, uuid_hex: str | None = None) -> str:
    """``{topic}-{partition}.{uuid}-future`` (not capped, as in Kafka; random uuid if None)."""
    validate_topic_partition(tp)
    uuid_hex = new_dir_uuid_hex() if uuid_hex is None else uuid_hex
    _check_uuid_hex(uuid_hex)
    return f"{tp.topic}-{tp.partition}.{uuid_hex}{FUTURE_DIR_SUFFIX}"


def parse_partition_dir_name(name: str) -> ParsedPartitionDir | None:
    """Take a directory name apart as ``LocalLog.parseTopicPartitionName`` does.

    Returns None for a name Kafka would reject as not a partition directory. Names that parse
    but that a log manager skips (``__cluster_metadata-0``) are returned; skipping is the
    caller's decision.
    """
    if "-" not in name:
        return None
    kind = PartitionDirKind.LIVE
    unique_id: str | None = None
    body = name
    for candidate, suffix in _SUFFIX_OF_KIND.items():
        if name.endswith(suffix):
            if not _SUFFIXED_DIR[suffix].fullmatch(name):
                return None
            dot = name.rindex(".")
            kind = candidate
            unique_id = name[dot + 1 : len(name) - len(suffix)]
            body = name[:dot]
            break
    dash = body.rfind("-")
    topic, partition_text = body[:dash], body[dash + 1 :]
    if dash < 0 or not topic or not _JAVA_INT.fullmatch(partition_text):
        return None
    partition = int(partition_text)
    if not -(1 << 31) <= partition <= MAX_PARTITION:
        return None
    return ParsedPartitionDir(topic, partition, kind, unique_id)
