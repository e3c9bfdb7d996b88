"""Checkpoint and metadata text files: pure bytes <-> values, no file access.

Generic checkpoint file (``CheckpointFile``), UTF-8 text, ``\\n`` line ends::

    <version>\\n          Java int; must equal the file type's version (0 for every type here)
    <entry count>\\n      Java int >= 0
    <entry>\\n            exactly <entry count> lines

* A 0-byte file, and a file holding only the version line, read as "no entries" (Kafka creates
  checkpoint files empty).
* Lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (``BufferedReader.readLine``); the last line may
  lack its line end. A blank line among the entries is a malformed entry.
* Numbers are Java ``Integer.parseInt`` / ``Long.parseLong``: optional sign, ASCII digits,
  within int32 / int64 (the JDK also takes non-ASCII digits; no Kafka writer produces them).
* Entry fields are separated by runs of Java whitespace (``\\s+``); a line with leading
  whitespace has an empty first field and is malformed, trailing whitespace is ignored.

Entry types:

* offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``): ``<topic> <partition>
  <offset>``. Kafka writes a hash map's entries in its iteration order, so **readers must not
  care about the order**; :func:`encode_offset_checkpoint` writes entries sorted by
  ``(topic, partition)`` unless told to keep the mapping's order (a dict read by
  :func:`parse_offset_checkpoint` keeps the file's order, so a file re-encodes byte for byte).
  A partition listed twice is rejected (a map cannot have written it).
* ``leader-epoch-checkpoint``: ``<epoch> <start offset>``, epochs int32 >= 0 and start
  offsets int64 >= 0; epochs strictly ascending, start offsets never decreasing.

``partition.metadata``: exactly two lines and **no** line end after the second::

    version: 0
    topic_id: <22-character topic id>

Lines are split on ``:\\s+`` into a key and a value. Version >= 0 is accepted (as Kafka does);
the keys must be ``version`` and ``topic_id`` (stricter than Kafka, which ignores them), and
only a final line end may follow the second line.

Kafka UUIDs (topic ids, directory ids, cluster ids made by Kafka): 16 bytes (most significant
long, then least significant, big-endian) in base64url **without padding**, 22 characters. The
all-zero id is invalid. :func:`new_topic_id` never returns an id starting with ``-`` nor the
reserved ids 0 and 1 (``Uuid.randomUuid``). Only the canonical spelling is accepted (the unused
low 4 bits of the last character are zero), so an id is equal to another exactly when its
string is.

``.kafka_cleanshutdown``: since Kafka 3.7 the JSON ``{"version":0,"brokerEpoch":<long>}``
(no spaces, that field order, broker epoch -1 when unknown); up to 3.6 an empty file. What
matters to a broker is that the file exists.

``meta.properties``: Java properties (see :mod:`seglog.format.properties`) as
``Properties.store(writer, "")`` writes them: a ``#`` line, a ``#<java.util.Date>`` line, then
``key=value`` lines. Keys: ``version`` (0 when absent), ``cluster.id`` (required in v1),
``node.id`` (v1, required), ``broker.id`` (v0, optional), ``directory.id`` (optional Kafka
UUID). Other keys are ignored on reading, as in Kafka. Kafka reads the file as ISO-8859-1 and
so does :func:`parse_meta_properties`.

Why this module is longer than the house's ~500 lines: it holds every small text format of a
log directory (the generic checkpoint, leader epochs, ``meta.properties``,
``partition.metadata``), each a short parser/encoder pair sharing the Java text rules stated
here.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from seglog.errors import CorruptCheckpointError, InvalidTopicError
from seglog.format.properties import (
    KeyOrder,
    encode_properties,
    java_date_string,
    java_key_order,
    parse_property_entries,
)
from seglog.format.topic_names import TopicPartition, validate_topic_partition

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
CLEAN_SHUTDOWN_VERSION = 0
META_PROPERTIES_VERSIONS = (0, 1)

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

KAFKA_UUID_CHARS = 22
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID: never valid
ONE_UUID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.ONE_UUID / METADATA_TOPIC_ID: reserved, never generated

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_COLON_WHITESPACE = re.compile(r":[ \t\n\x0b\f\r]+")
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_BASE64URL_22 = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")

# meta.properties keys
VERSION_KEY = "version"
CLUSTER_ID_KEY = "cluster.id"
NODE_ID_KEY = "node.id"
BROKER_ID_KEY = "broker.id"
DIRECTORY_ID_KEY = "directory.id"


class CheckpointLine(NamedTuple):
    """One entry line of a checkpoint file with its 1-based ``line`` number."""

    line: int
    text: str


class EpochEntry(NamedTuple):
    """A ``leader-epoch-checkpoint`` entry: the first offset written under a leader epoch."""

    epoch: int
    start_offset: int


# --- shared helpers ---------------------------------------------------------------------------


def _decode_utf8(data: bytes, path: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = len(_LINE_BREAK.findall(data[: exc.start].decode("utf-8", "replace"))) + 1
        raise CorruptCheckpointError(
            f"byte {data[exc.start]:#04x} at position {exc.start} is not UTF-8",
            line=line,
            path=path,
        ) from exc


def _split_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` repeated: a final line end adds no empty line."""
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _java_split(line: str) -> list[str]:
    """Java ``line.split("\\\\s+")``: an empty first field kept, empty last fields dropped."""
    fields = _JAVA_WHITESPACE.split(line)
    while len(fields) > 1 and fields[-1] == "":
        fields.pop()
    return fields


def _java_int(
    text: str, *, bits: int, what: str, line: int | None, path: str | None, minimum: int | None
) -> int:
    """``Integer.parseInt`` (bits=32) or ``Long.parseLong`` (bits=64), then a lower bound."""
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    kind = "an int32" if bits == 32 else "an int64"
    if not _JAVA_INTEGER.fullmatch(text) or len(text) > 40:  # no int64 needs 40 characters
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise CorruptCheckpointError(f"{what} {shown!r} is not {kind}", line=line, path=path)
    value = int(text)
    if not low <= value <= high:
        raise CorruptCheckpointError(
            f"{what} {text} is outside {kind} [{low}, {high}]", line=line, path=path
        )
    if minimum is not None and value < minimum:
        raise CorruptCheckpointError(
            f"{what} {value} is below the minimum {minimum}", line=line, path=path
        )
    return value


def _check_line_text(text: str) -> None:
    if _LINE_BREAK.search(text):
        raise ValueError(f"checkpoint entry {text!r} spans lines")


# --- generic checkpoint file -----------------------------------------------------------


def parse_checkpoint(data: bytes, *, version: int, path: str | None = None) -> list[CheckpointLine]:
    """The entry lines of a checkpoint file of ``version`` (empty for a 0-byte file)."""
    lines = _split_lines(_decode_utf8(data, path))
    if not lines:
        return []
    found_version = _java_int(lines[0], bits=32, what="version", line=1, path=path, minimum=None)
    if found_version != version:
        raise CorruptCheckpointError(
            f"unrecognised version {found_version}, expected version {version}", line=1, path=path
        )
    if len(lines) == 1:
        return []
    count = _java_int(lines[1], bits=32, what="entry count", line=2, path=path, minimum=0)
    entries = [CheckpointLine(number, text) for number, text in enumerate(lines[2:], start=3)]
    if len(entries) != count:
        raise CorruptCheckpointError(
            f"entry count {count} does not match the {len(entries)} entry lines that follow",
            line=2,
            path=path,
        )
    return entries


def encode_checkpoint(version: int, entries: Sequence[str]) -> bytes:
    """A checkpoint file: version line, count line, one line per entry, final ``\\n``."""
    for text in entries:
        _check_line_text(text)
    lines = [str(version), str(len(entries)), *entries]
    return "".join(line + "\n" for line in lines).encode("utf-8")


# --- offset checkpoints ----------------------------------------------------------------


def parse_offset_checkpoint(data: bytes, *, path: str | None = None) -> dict[TopicPartition, int]:
    """``{(topic, partition): offset}`` of an offset checkpoint, in the file's entry order."""
    offsets: dict[TopicPartition, int] = {}
    first_line: dict[TopicPartition, int] = {}
    for line, text in parse_checkpoint(data, version=OFFSET_CHECKPOINT_VERSION, path=path):
        fields = _java_split(text)
        if len(fields) != 3:
            raise CorruptCheckpointError(
                f"expected 3 fields '<topic> <partition> <offset>', found {len(fields)} in "
                f"{text!r}",
                line=line,
                path=path,
            )
        topic, partition_text, offset_text = fields
        partition = _java_int(
            partition_text, bits=32, what="partition", line=line, path=path, minimum=None
        )
        offset = _java_int(offset_text, bits=64, what="offset", line=line, path=path, minimum=None)
        tp = TopicPartition(topic, partition)
        if tp in offsets:
            raise CorruptCheckpointError(
                f"partition {tp} is listed twice (first on line {first_line[tp]})",
                line=line,
                path=path,
            )
        offsets[tp] = offset
        first_line[tp] = line
    return offsets


def encode_offset_checkpoint(
    entries: Mapping[TopicPartition, int], *, keep_order: bool = False
) -> bytes:
    """An offset checkpoint, entries sorted by (topic, partition) unless ``keep_order``.

    Kafka writes hash-map order and readers do not care; sorting makes our files
    deterministic. ``keep_order=True`` writes the mapping's own order (to reproduce a file).
    """
    items = list(entries.items())
    if not keep_order:
        items.sort(key=lambda item: (item[0].topic, item[0].partition))
    lines = []
    for key, offset in items:
        tp = TopicPartition(*key)
        validate_topic_partition(tp)
        if not INT64_MIN <= offset <= INT64_MAX:
            raise ValueError(f"offset {offset} of {tp} is outside int64")
        lines.append(f"{tp.topic} {tp.partition} {offset}")
    return encode_checkpoint(OFFSET_CHECKPOINT_VERSION, lines)


# --- leader-epoch-checkpoint -----------------------------------------------------------


def parse_leader_epoch_checkpoint(data: bytes, *, path: str | None = None) -> list[EpochEntry]:
    """The entries of a ``leader-epoch-checkpoint``, checked ascending and non-negative."""
    entries: list[EpochEntry] = []
    for line, text in parse_checkpoint(data, version=LEADER_EPOCH_CHECKPOINT_VERSION, path=path):
        fields = _java_split(text)
        if len(fields) != 2:
            raise CorruptCheckpointError(
                f"expected 2 fields '<epoch> <start offset>', found {len(fields)} in {text!r}",
                line=line,
                path=path,
            )
        epoch = _java_int(fields[0], bits=32, what="epoch", line=line, path=path, minimum=0)
        start_offset = _java_int(
            fields[1], bits=64, what="start offset", line=line, path=path, minimum=0
        )
        entry = EpochEntry(epoch, start_offset)
        problem = _epoch_order_problem(entries[-1] if entries else None, entry)
        if problem:
            raise CorruptCheckpointError(problem, line=line, path=path)
        entries.append(entry)
    return entries


def _epoch_order_problem(previous: EpochEntry | None, entry: EpochEntry) -> str | None:
    if previous is None:
        return None
    if entry.epoch <= previous.epoch:
        return f"epoch {entry.epoch} does not follow epoch {previous.epoch} in ascending order"
    if entry.start_offset < previous.start_offset:
        return (
            f"start offset {entry.start_offset} of epoch {entry.epoch} is below start offset "
            f"{previous.start_offset} of epoch {previous.epoch}"
        )
    return None


def encode_leader_epoch_checkpoint(entries: Sequence[EpochEntry]) -> bytes:
    """A ``leader-epoch-checkpoint`` (entries must be ascending and non-negative)."""
    previous: EpochEntry | None = None
    lines = []
    for raw in entries:
        entry = EpochEntry(*raw)
        if not 0 <= entry.epoch <= INT32_MAX or not 0 <= entry.start_offset <= INT64_MAX:
            raise ValueError(f"epoch entry {entry} is outside [0, int32] x [0, int64]")
        problem = _epoch_order_problem(previous, entry)
        if problem:
            raise ValueError(problem)
        lines.append(f"{entry.epoch} {entry.start_offset}")
        previous = entry
    return encode_checkpoint(LEADER_EPOCH_CHECKPOINT_VERSION, lines)


# --- Kafka UUIDs ------------------------------------------------------------------------------


def kafka_uuid_to_bytes(text: str) -> bytes:
    """The 16 bytes of a Kafka UUID string; :class:`InvalidTopicError` if it is not one."""
    if not isinstance(text, str) or not _BASE64URL_22.fullmatch(text):
        raise InvalidTopicError(
            f"id {text!r} is not a Kafka UUID: expected 22 base64url characters (canonical, "
            "no padding)"
        )
    return base64.urlsafe_b64decode(text + "==")


def kafka_uuid_from_bytes(raw: bytes) -> str:
    """The Kafka string of 16 UUID bytes (base64url without padding)."""
    if len(raw) != 16:
        raise ValueError(f"a UUID is 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def validate_topic_id(topic_id: str) -> None:
    """Raise :class:`InvalidTopicError` unless ``topic_id`` is a canonical, non-zero Kafka UUID."""
    kafka_uuid_to_bytes(topic_id)
    if topic_id == ZERO_UUID:
        raise InvalidTopicError(f"id {topic_id!r} is the all-zero UUID, which is never valid")


def _new_kafka_uuid() -> str:
    """``Uuid.randomUuid()``: a random (v4) UUID, never reserved, never starting with ``-``."""
    while True:
        raw = uuid.uuid4().bytes
        text = kafka_uuid_from_bytes(raw)
        most, least = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
        # Reserved: Uuid.ZERO_UUID, Uuid.ONE_UUID, and the DirectoryId sentinels below 100.
        if not text.startswith("-") and not (most == 0 and least < 100):
            return text


def new_topic_id() -> str:
    """A new random topic id (22 characters)."""
    return _new_kafka_uuid()


def new_directory_id() -> str:
    """A new random log directory id for ``meta.properties`` (22 characters)."""
    return _new_kafka_uuid()


def new_cluster_id() -> str:
    """A new random cluster id, as ``kafka-storage random-uuid`` prints (22 characters)."""
    return _new_kafka_uuid()


# --- partition.metadata ----------------------------------------------------------------


def encode_partition_metadata(topic_id: str) -> bytes:
    """``version: 0\\ntopic_id: <id>`` with no final line end."""
    validate_topic_id(topic_id)
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {topic_id}".encode("ascii")


def parse_partition_metadata(data: bytes, *, path: str | None = None) -> str:
    """The topic id of a ``partition.metadata`` file."""
    lines = _split_lines(_decode_utf8(data, path))
    if len(lines) < 2:
        raise CorruptCheckpointError(
            f"expected 2 lines 'version: 0' and 'topic_id: <id>', found {len(lines)}",
            line=len(lines) + 1,
            path=path,
        )
    if len(lines) > 2:
        raise CorruptCheckpointError(
            f"unexpected text {lines[2]!r} after the topic id", line=3, path=path
        )
    version_text = _metadata_value(lines[0], "version", 1, path)
    _java_int(version_text, bits=32, what="version", line=1, path=path, minimum=0)
    topic_id = _metadata_value(lines[1], "topic_id", 2, path)
    try:
        validate_topic_id(topic_id)
    except InvalidTopicError as exc:
        raise CorruptCheckpointError(str(exc), line=2, path=path) from exc
    return topic_id


def _metadata_value(text: str, key: str, line: int, path: str | None) -> str:
    fields = _COLON_WHITESPACE.split(text)
    while len(fields) > 1 and fields[-1] == "":
        fields.pop()
    if len(fields) != 2 or fields[0] != key:
        raise CorruptCheckpointError(
            f"expected '{key}: <value>', found {text!r}", line=line, path=path
        )
    return fields[1]


# --- .kafka_cleanshutdown --------------------------------------------------------------


def encode_clean_shutdown(broker_epoch: int = -1) -> bytes:
    """``{"version":0,"brokerEpoch":<epoch>}`` as Jackson writes it (-1 = unknown epoch)."""
    if isinstance(broker_epoch, bool) or not INT64_MIN <= broker_epoch <= INT64_MAX:
        raise ValueError(f"broker epoch {broker_epoch!r} is not an int64")
    return b'{"version":%d,"brokerEpoch":%d}' % (CLEAN_SHUTDOWN_VERSION, broker_epoch)


def parse_clean_shutdown(data: bytes, *, path: str | None = None) -> int | None:
    """The broker epoch of a clean-shutdown marker; None for an empty (pre-3.7) marker."""
    if not data:
        return None
    text = _decode_utf8(data, path)
    try:
        content = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CorruptCheckpointError(f"not JSON: {exc.msg}", line=exc.lineno, path=path) from exc
    except (ValueError, RecursionError) as exc:
        raise CorruptCheckpointError(f"not JSON: {exc}", line=1, path=path) from exc
    if not isinstance(content, dict) or set(content) != {"version", "brokerEpoch"}:
        raise CorruptCheckpointError(
            f'expected {{"version":0,"brokerEpoch":<long>}}, found {text[:200]!r}',
            line=1,
            path=path,
        )
    version, broker_epoch = content["version"], content["brokerEpoch"]
    if type(version) is not int or version != CLEAN_SHUTDOWN_VERSION:
        raise CorruptCheckpointError(
            f"unsupported clean-shutdown version {version!r}, expected {CLEAN_SHUTDOWN_VERSION}",
            line=1,
            path=path,
        )
    if type(broker_epoch) is not int or not INT64_MIN <= broker_epoch <= INT64_MAX:
        raise CorruptCheckpointError(
            f"brokerEpoch {broker_epoch!r} is not an int64", line=1, path=path
        )
    return broker_epoch


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


# --- meta.properties -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The identity of a log directory.

    v1 (KRaft): ``node_id`` and ``cluster_id`` required, no ``broker_id``. v0 (ZooKeeper era):
    optional ``broker_id`` and ``cluster_id``, no ``node_id``. ``directory_id`` (a Kafka UUID)
    is optional in both.
    """

    version: int
    node_id: int | None = None
    cluster_id: str | None = None
    directory_id: str | None = None
    broker_id: int | None = None

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """What breaks the rules above, or None."""
        if self.version not in META_PROPERTIES_VERSIONS:
            return f"unknown meta.properties version {self.version}, expected 0 or 1"
        for name, value in (("node.id", self.node_id), ("broker.id", self.broker_id)):
            if value is not None and not INT32_MIN <= value <= INT32_MAX:
                return f"{name} {value} is outside int32"
        if self.version == 1:
            if self.cluster_id is None:
                return "cluster.id was not found (required in version 1)"
            if self.node_id is None:
                return "node.id was not found (required in version 1)"
            if self.broker_id is not None:
                return "broker.id belongs to version 0 (version 1 uses node.id)"
        elif self.node_id is not None:
            return "node.id belongs to version 1 (version 0 uses broker.id)"
        if self.directory_id is not None:
            try:
                kafka_uuid_to_bytes(self.directory_id)
            except InvalidTopicError as exc:
                return f"directory.id: {exc}"
        return None

    @property
    def effective_node_id(self) -> int | None:
        """The broker's id: ``node.id`` in v1, ``broker.id`` in v0."""
        return self.node_id if self.version == 1 else self.broker_id

    def to_properties(self) -> dict[str, str]:
        """The keys and values, in the insertion order of Kafka's ``toProperties``."""
        props = {VERSION_KEY: str(self.version)}
        if self.cluster_id is not None:
            props[CLUSTER_ID_KEY] = self.cluster_id
        if self.version == 0:
            if self.broker_id is not None:
                props[BROKER_ID_KEY] = str(self.broker_id)
        else:
            props[NODE_ID_KEY] = str(self.node_id)
        if self.directory_id is not None:
            props[DIRECTORY_ID_KEY] = self.directory_id
        return props


def parse_meta_properties(data: bytes, *, path: str | None = None) -> MetaProperties:
    """A ``meta.properties`` file, read as Kafka's ``MetaProperties.Builder(Properties)``."""
    entries = parse_property_entries(data.decode("latin-1"), path=path)
    props = {entry.key: entry.value for entry in entries}
    line_of = {entry.key: entry.line for entry in entries}

    def java_int(key: str, minimum: int | None = None) -> int:
        return _java_int(
            props[key], bits=32, what=key, line=line_of[key], path=path, minimum=minimum
        )

    version = java_int(VERSION_KEY) if VERSION_KEY in props else 0
    if version not in META_PROPERTIES_VERSIONS:
        raise CorruptCheckpointError(
            f"unknown meta.properties version {version}, expected 0 or 1",
            line=line_of[VERSION_KEY],
            path=path,
        )
    node_id = broker_id = None
    if version == 0:
        broker_id = java_int(BROKER_ID_KEY) if BROKER_ID_KEY in props else None
    elif NODE_ID_KEY in props:
        node_id = java_int(NODE_ID_KEY)
    else:
        raise CorruptCheckpointError("node.id was not found (required in version 1)", path=path)
    cluster_id = props.get(CLUSTER_ID_KEY)
    if version == 1 and cluster_id is None:
        raise CorruptCheckpointError("cluster.id was not found (required in version 1)", path=path)
    directory_id = props.get(DIRECTORY_ID_KEY)
    if directory_id is not None:
        try:
            kafka_uuid_to_bytes(directory_id)
        except InvalidTopicError as exc:
            raise CorruptCheckpointError(
                f"directory.id: {exc}", line=line_of[DIRECTORY_ID_KEY], path=path
            ) from exc
    return MetaProperties(version, node_id, cluster_id, directory_id, broker_id)


def meta_properties_key_order(data: bytes) -> list[str]:
    """The keys of a ``meta.properties`` file in the order they appear (to re-encode it)."""
    entries = parse_property_entries(data.decode("latin-1"))
    return list(dict.fromkeys(entry.key for entry in entries))


def encode_meta_properties(
    meta: MetaProperties,
    *,
    now_ms: int | None = None,
    date_comment: str | None = None,
    order: KeyOrder | Sequence[str] = KeyOrder.CONCURRENT_HASH_MAP,
) -> bytes:
    """``meta.properties`` as Kafka's ``PropertiesUtils.writePropertiesFile`` writes it.

    The date line is ``java.util.Date.toString()`` of ``now_ms`` in UTC, or ``date_comment``
    verbatim (exactly one of the two). ``order`` is a JDK's key order (the default, JDK 9-17,
    gives the spec's ``node.id, directory.id, version, cluster.id``) or an explicit list of
    exactly the keys written.
    """
    if (now_ms is None) == (date_comment is None):
        raise ValueError("give exactly one of now_ms and date_comment")
    date = java_date_string(now_ms) if now_ms is not None else date_comment
    props = meta.to_properties()
    if isinstance(order, KeyOrder):
        keys = java_key_order(props, order)
    else:
        keys = list(order)
        if sorted(keys) != sorted(props):
            raise ValueError(f"key order {keys} is not a permutation of the keys {list(props)}")
    ordered = {key: props[key] for key in keys}
    return encode_properties(ordered, date_comment=date).encode("utf-8")
