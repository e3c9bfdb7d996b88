"""KRaft metadata records (``__cluster_metadata``) and the topic part of the metadata image.

A data batch of the ``__cluster_metadata`` log or of a KRaft snapshot (``.checkpoint``) holds
records whose **value** is one metadata record, framed as (Kafka's ``MetadataRecordSerde``):

* unsigned varint frame version (1, the only one Kafka writes or accepts);
* unsigned varint api key: the record type (2 TopicRecord, 3 PartitionRecord, 4 ConfigRecord,
  9 RemoveTopicRecord, ... : every other type is skipped by seglog);
* unsigned varint version of that record's schema;
* the generated message in its **flexible** encoding (the primitives of
  :mod:`seglog.format.kraft`: compact strings, compact arrays, uuid, tagged fields).

Layouts decoded here (Kafka's ``metadata/src/main/resources/common/metadata/*.json``):

* 2 ``TopicRecord`` v0: Name compact string, TopicId uuid, tagged fields.
* 3 ``PartitionRecord`` v0-2: PartitionId int32, TopicId uuid, then fields seglog does not
  need (replicas, ISR, leader, ...) which are not decoded: only the two leading fields are.
* 4 ``ConfigRecord`` v0: ResourceType int8 (2 topic, 4 broker), ResourceName compact string
  (a topic name; for a broker its node id, or "" for the cluster-wide default), Name compact
  string, Value compact nullable string (null deletes the key), tagged fields.
* 9 ``RemoveTopicRecord`` v0: TopicId uuid, tagged fields.

:class:`MetadataImage` folds these records in log order exactly as the broker's metadata
image does: the latest record for a key wins, a ConfigRecord with a null value deletes the
key, a RemoveTopicRecord removes the topic, its partitions and its topic configs (Kafka's
``ConfigurationsDelta`` drops the configs of a removed topic). A topic re-created under the
same name gets a new id. Pure: values in, values out; a record too short for its layout
raises :class:`~seglog.errors.CorruptRecordError` (the storage reader names file and offset).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from seglog.errors import CorruptRecordError
from seglog.format.kraft import _Cursor

TOPIC_RECORD = 2
PARTITION_RECORD = 3
CONFIG_RECORD = 4
REMOVE_TOPIC_RECORD = 9
RESOURCE_TYPE_TOPIC = 2
RESOURCE_TYPE_BROKER = 4
FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic was created: its name and id."""

    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition of a topic exists (other fields are not decoded)."""

    partition_id: int
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A config key of a resource was set (``value`` None: deleted)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    """A topic was deleted."""

    topic_id: uuid.UUID


MetadataRecord = TopicRecord | PartitionRecord | ConfigRecord | RemoveTopicRecord


def _required_string(cursor: _Cursor, what: str) -> str:
    text = cursor.compact_string()
    if text is None:
        raise CorruptRecordError(f"null {what} in a metadata record")
    return text


def decode_metadata_record(value: bytes) -> MetadataRecord | None:
    """Decode one metadata record value; None for a record type seglog does not use."""
    cursor = _Cursor(value)
    frame_version = cursor.uvarint()
    if frame_version != FRAME_VERSION:
        raise CorruptRecordError(f"metadata record frame version {frame_version} is not 1")
    api_key = cursor.uvarint()
    version = cursor.uvarint()
    if api_key not in _MAX_VERSIONS:
        return None
    if version > _MAX_VERSIONS[api_key]:
        raise CorruptRecordError(
            f"metadata record type {api_key} version {version} is unknown "
            f"(0-{_MAX_VERSIONS[api_key]})"
        )
    try:
        return _decode_body(cursor, api_key)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"metadata record type {api_key}: {exc.reason}") from exc


_MAX_VERSIONS = {TOPIC_RECORD: 0, PARTITION_RECORD: 2, CONFIG_RECORD: 0, REMOVE_TOPIC_RECORD: 0}


def _decode_body(cursor: _Cursor, api_key: int) -> MetadataRecord:
    record: MetadataRecord
    if api_key == TOPIC_RECORD:
        name = _required_string(cursor, "topic name")
        record = TopicRecord(name, cursor.uuid())
    elif api_key == PARTITION_RECORD:
        return PartitionRecord(cursor.int32(), cursor.uuid())  # the rest is not needed
    elif api_key == CONFIG_RECORD:
        resource_type = cursor.int8()
        resource_name = _required_string(cursor, "config resource name")
        name = _required_string(cursor, "config name")
        record = ConfigRecord(resource_type, resource_name, name, cursor.compact_string())
    else:
        record = RemoveTopicRecord(cursor.uuid())
    cursor.tagged_fields()
    return record


@dataclass(slots=True)
class ImageTopic:
    """A topic of the image: name, id and partition numbers."""

    name: str
    topic_id: uuid.UUID
    partitions: set[int] = field(default_factory=set)


@dataclass(slots=True)
class MetadataImage:
    """Topics, topic configs and broker configs, as the broker's metadata image holds them.

    ``broker_configs`` is keyed by resource name: ``""`` the cluster-wide default
    (DYNAMIC_DEFAULT_BROKER_CONFIG), a node id (DYNAMIC_BROKER_CONFIG).
    """

    topics: dict[uuid.UUID, ImageTopic] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def apply(self, record: MetadataRecord) -> None:
        """Fold one record in (log order: the latest wins)."""
        if isinstance(record, TopicRecord):
            self.topics[record.topic_id] = ImageTopic(record.name, record.topic_id)
        elif isinstance(record, PartitionRecord):
            topic = self.topics.get(record.topic_id)
            if topic is not None:  # a partition of an unknown topic is ignored, as Kafka's
                topic.partitions.add(record.partition_id)
        elif isinstance(record, ConfigRecord):
            if record.resource_type == RESOURCE_TYPE_TOPIC:
                target = self.topic_configs.setdefault(record.resource_name, {})
            elif record.resource_type == RESOURCE_TYPE_BROKER:
                target = self.broker_configs.setdefault(record.resource_name, {})
            else:
                return
            if record.value is None:
                target.pop(record.name, None)
            else:
                target[record.name] = record.value
        else:
            removed = self.topics.pop(record.topic_id, None)
            if removed is not None:
                self.topic_configs.pop(removed.name, None)

    def topic_by_name(self, name: str) -> ImageTopic | None:
        """The live topic called ``name``, if any."""
        return next((t for t in self.topics.values() if t.name == name), None)
