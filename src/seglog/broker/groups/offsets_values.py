"""The values the ``__consumer_offsets`` store takes and gives: its settings (``offsets.*``),
a client's commit, and what a load or an expiry did (:mod:`.offsets_store` uses them)."""

from __future__ import annotations

from dataclasses import dataclass

from seglog.config import MS_PER_MINUTE, BrokerConfig
from seglog.format.group_records import NO_LEADER_EPOCH
from seglog.format.topic_names import TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetsSettings:
    """The broker settings the store follows (``offsets.*``)."""

    num_partitions: int = 50
    segment_bytes: int = 104_857_600
    retention_ms: int = 10080 * MS_PER_MINUTE
    metadata_max_bytes: int = 4096

    @classmethod
    def from_broker(cls, broker: BrokerConfig) -> OffsetsSettings:
        """The settings of a ``server.properties``."""
        return cls(
            broker.offsets_topic_num_partitions,
            broker.offsets_topic_segment_bytes,
            broker.offsets_retention_minutes * MS_PER_MINUTE,
            broker.offset_metadata_max_bytes,
        )

    def topic_configs(self) -> dict[str, str]:
        """The configs ``__consumer_offsets`` is created with."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(self.segment_bytes),
        }


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """What a client commits for one partition (a null metadata is committed as ``""``)."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class LoadSummary:
    """What :meth:`OffsetsStore.load` replayed."""

    partitions: int
    records: int
    skipped: int  # records of key types seglog does not read
    groups: int
    offsets: int
    pending: int = 0  # offsets of transactions without a marker yet


@dataclass(frozen=True, slots=True)
class ExpiryResult:
    """What :meth:`OffsetsStore.expire_offsets` deleted."""

    offsets: dict[str, list[TopicPartition]]
    groups: list[str]  # groups removed (Empty, no offsets left)
