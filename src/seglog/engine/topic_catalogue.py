"""Where each topic's configs come from, and whether they are known at all.

Precedence, highest first (each key is taken from the first layer that sets it):

1. ``SEGLOG_TOPIC_OVERRIDE``: an override set with ``seglog topics create/alter``, kept in
   seglog's own ``seglog-topics.json`` (never in a broker's files);
2. ``DYNAMIC_TOPIC_CONFIG``: the topic's config in the KRaft metadata image of the log
   directory (``__cluster_metadata``), or, where no metadata describes them,
   ``INTERNAL_TOPIC_CONFIG``: the configs Kafka itself sets when it creates
   ``__consumer_offsets`` and ``__transaction_state`` (see :data:`INTERNAL_TOPIC_CONFIGS`);
3. ``DYNAMIC_BROKER_CONFIG`` then ``DYNAMIC_DEFAULT_BROKER_CONFIG``: broker configs in the
   metadata image (this node's id, then the cluster-wide default ``""``), merged over the
   static ones as Kafka's ``DynamicBrokerConfig`` merges them (the broker key's synonyms then
   decide, e.g. ``log.retention.ms`` over ``log.retention.hours``);
4. ``STATIC_BROKER_CONFIG``: ``--config server.properties``;
5. ``DEFAULT_CONFIG``: Kafka's default.

The names are those of ``kafka-configs.sh --describe --all``, plus seglog's own
``SEGLOG_TOPIC_OVERRIDE`` and ``INTERNAL_TOPIC_CONFIG``. A static broker value equal to
Kafka's default is reported as ``DEFAULT_CONFIG`` (seglog keeps the parsed value, not the text).

**Known or not.** A topic's configs are known when seglog created it, when the metadata image
holds it, when it is ``__consumer_offsets`` or ``__transaction_state``, or once a user set its
``cleanup.policy`` with ``seglog topics alter``. Otherwise (a ZooKeeper-era directory whose
configs lived in ZooKeeper, a directory copied without its metadata) applying seglog's
defaults could delete a compacted topic's data: such a topic is never touched by retention,
the cleaner, the compaction triggers, ``delete-records`` or ``compact`` until its
``cleanup.policy`` is set explicitly, and every view says :data:`CONFIGS_UNKNOWN`.
``__cluster_metadata`` belongs to the KRaft quorum: never opened, retained, cleaned,
compacted, altered or deleted by seglog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from seglog.config import TOPIC_CONFIG_KEYS, BrokerConfig, LogConfig
from seglog.errors import InvalidConfigError, InvalidTopicError
from seglog.format.checkpoint import kafka_uuid_from_bytes
from seglog.format.kraft_metadata import MetadataImage
from seglog.storage.log_dir import TopicMetadata

CONFIGS_UNKNOWN = "configs unknown: set them with topics alter"
KRAFT_METADATA_TOPIC = "__cluster_metadata"
CLEANUP_POLICY = "cleanup.policy"
CLUSTER_DEFAULT_RESOURCE = ""

# What Kafka sets when it creates its internal topics (GroupCoordinator.offsetsTopicConfigs /
# GroupCoordinatorService, TransactionStateManager.transactionTopicConfigs), with the broker
# defaults offsets.topic.segment.bytes = transaction.state.log.segment.bytes = 104857600 and
# transaction.state.log.min.isr = 2. Keys seglog does not use (min.insync.replicas,
# unclean.leader.election.enable) are shown but change nothing here.
INTERNAL_TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "__consumer_offsets": {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": "104857600",
    },
    "__transaction_state": {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": "2",
        "segment.bytes": "104857600",
        "unclean.leader.election.enable": "false",
    },
}


class ConfigSource(StrEnum):
    """Where a config value came from (kafka-configs.sh's names, plus seglog's)."""

    SEGLOG_TOPIC_OVERRIDE = "SEGLOG_TOPIC_OVERRIDE"
    DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
    INTERNAL_TOPIC_CONFIG = "INTERNAL_TOPIC_CONFIG"
    DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
    DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
    STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
    DEFAULT_CONFIG = "DEFAULT_CONFIG"


@dataclass(frozen=True, slots=True)
class ResolvedTopic:
    """A topic's effective config, each key's source, its id and whether configs are known.

    ``config`` is also what an unknown topic's logs run with (segment size for reads and
    rolls); nothing acts on its cleanup policy while ``is_known`` is False.
    """

    name: str
    topic_id: str
    config: LogConfig
    sources: dict[str, ConfigSource]
    extra: dict[str, tuple[str, ConfigSource]]  # keys seglog does not use, e.g. min.insync.replicas
    is_known: bool


def check_not_metadata_topic(name: str, action: str) -> None:
    """Raise ``InvalidTopicError`` for ``__cluster_metadata`` (the KRaft quorum's log)."""
    if name == KRAFT_METADATA_TOPIC:
        raise InvalidTopicError(
            f"cannot {action} {KRAFT_METADATA_TOPIC}: it is the KRaft metadata log, owned by "
            "the controller quorum; seglog only reads it"
        )


def _apply_topic_layer(
    config: LogConfig,
    sources: dict[str, ConfigSource],
    extra: dict[str, tuple[str, ConfigSource]],
    configs: Mapping[str, str],
    source: ConfigSource,
    *,
    strict: bool,
) -> LogConfig:
    """``configs`` over ``config``; keys seglog does not use go to ``extra`` (``strict``:
    an unknown key raises, as for seglog's own overrides)."""
    used = {k: v for k, v in configs.items() if k in TOPIC_CONFIG_KEYS}
    for key, value in configs.items():
        if key not in TOPIC_CONFIG_KEYS:
            if strict:
                LogConfig.from_overrides({key: value}, config)  # raises for an unknown key
            extra[key] = (value, source)
    result = LogConfig.from_overrides(used, config)
    for key in used:
        sources[key] = source
    return result


class TopicCatalogue:
    """Resolves topics against the broker config, the KRaft metadata image and seglog's own
    metadata (see the module docstring)."""

    def __init__(self, broker: BrokerConfig, image: MetadataImage | None, node_id: int) -> None:
        self.image = image
        self._broker_defaults, self._broker_sources = self._broker_layers(broker, image, node_id)

    @staticmethod
    def _broker_layers(
        broker: BrokerConfig, image: MetadataImage | None, node_id: int
    ) -> tuple[LogConfig, dict[str, ConfigSource]]:
        kafka_default = LogConfig()
        static = broker.log_defaults
        sources = {
            key.name: (
                ConfigSource.STATIC_BROKER_CONFIG
                if getattr(static, key.field) != getattr(kafka_default, key.field)
                else ConfigSource.DEFAULT_CONFIG
            )
            for key in TOPIC_CONFIG_KEYS.values()
        }
        if image is None:
            return static, sources
        cluster = image.broker_configs.get(CLUSTER_DEFAULT_RESOURCE, {})
        node = image.broker_configs.get(str(node_id), {})
        if not cluster and not node:
            return static, sources
        # Static values as the highest-priority synonym, only where server.properties set
        # them, then the dynamic layers over them (DynamicBrokerConfig's merge).
        props = {
            key.synonyms[0]: key.format(getattr(static, key.field))
            for key in TOPIC_CONFIG_KEYS.values()
            if sources[key.name] is ConfigSource.STATIC_BROKER_CONFIG and key.synonyms
        }
        props.update(cluster)
        props.update(node)
        try:
            merged = BrokerConfig.from_properties(props).log_defaults
        except InvalidConfigError as exc:
            raise InvalidConfigError(
                f"a dynamic broker config in the KRaft metadata is not valid: {exc}"
            ) from exc
        for key in TOPIC_CONFIG_KEYS.values():
            if any(s in node for s in key.synonyms):
                sources[key.name] = ConfigSource.DYNAMIC_BROKER_CONFIG
            elif any(s in cluster for s in key.synonyms):
                sources[key.name] = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return merged, sources

    def resolve(
        self,
        name: str,
        seglog: TopicMetadata | None,
        *,
        disk_topic_id: str | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> ResolvedTopic:
        """The resolved topic ``name``; ``overrides`` replaces seglog's stored ones (to
        validate a change before it is written)."""
        stored = dict(seglog.configs) if seglog is not None else {}
        own = dict(overrides) if overrides is not None else stored
        sources = dict(self._broker_sources)
        extra: dict[str, tuple[str, ConfigSource]] = {}
        config = self._broker_defaults
        image_topic = self.image.topic_by_name(name) if self.image is not None else None
        if image_topic is not None and self.image is not None:
            topic_configs = self.image.topic_configs.get(name, {})
            config = _apply_topic_layer(
                config,
                sources,
                extra,
                topic_configs,
                ConfigSource.DYNAMIC_TOPIC_CONFIG,
                strict=False,
            )
        elif name in INTERNAL_TOPIC_CONFIGS:
            config = _apply_topic_layer(
                config,
                sources,
                extra,
                INTERNAL_TOPIC_CONFIGS[name],
                ConfigSource.INTERNAL_TOPIC_CONFIG,
                strict=False,
            )
        config = _apply_topic_layer(
            config, sources, extra, own, ConfigSource.SEGLOG_TOPIC_OVERRIDE, strict=True
        )
        created_by_seglog = seglog is not None and not seglog.discovered
        is_known = (
            created_by_seglog
            or image_topic is not None
            or name in INTERNAL_TOPIC_CONFIGS
            or CLEANUP_POLICY in own
        )
        topic_id = ""
        if seglog is not None and seglog.topic_id:
            topic_id = seglog.topic_id
        elif image_topic is not None:
            topic_id = kafka_uuid_from_bytes(image_topic.topic_id.bytes)
        elif disk_topic_id:
            topic_id = disk_topic_id
        return ResolvedTopic(name, topic_id, config, sources, extra, is_known)


def describe_sources(resolved: ResolvedTopic) -> dict[str, str]:
    """Every key's source as text (the keys seglog uses, then the others it shows)."""
    out = {key: source.value for key, source in resolved.sources.items()}
    out.update({key: source.value for key, (_, source) in resolved.extra.items()})
    return out
