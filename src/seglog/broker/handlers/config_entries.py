"""Config entries as the admin APIs report them: value, source, type, synonyms, documentation.

Shared by DescribeConfigs and CreateTopics (v5+ echoes the new topic's configs). Kafka's wire
numbers:

* ``config_source``: 1 DYNAMIC_TOPIC_CONFIG, 2 DYNAMIC_BROKER_CONFIG, 3
  DYNAMIC_DEFAULT_BROKER_CONFIG, 4 STATIC_BROKER_CONFIG (set in ``server.properties``), 5
  DEFAULT_CONFIG. seglog's own topic overrides (``seglog-topics.json``) and the configs Kafka
  gives its internal topics are topic-level configs, so they are reported as 1, as Kafka
  reports a topic override.
* ``config_type`` (v3+): 1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST.

**Topic resources** list every topic config seglog knows (:data:`~seglog.config.TOPIC_CONFIG_KEYS`,
seglog's compaction keys included), then the Kafka topic configs seglog accepts and ignores
(replication and tiered storage, with Kafka's defaults), so a client's read-modify-write
(describe everything, alter with everything) round-trips. None is read-only or sensitive.
Synonyms, highest priority first: the topic-level value, the ``server.properties`` value (under
the broker key's highest-priority name, in the topic key's unit) when it differs from Kafka's
default, and Kafka's default under the broker key Kafka gives the default to (e.g.
``log.retention.hours=168``). Dynamic broker configs read from a KRaft metadata image show in
an entry's source but not as a synonym.

**Broker resources** list ``node.id``, ``log.dirs``, every storage setting seglog reads (each
topic config's broker key under its highest-priority name, in the topic key's unit; the
``*.hours`` / ``*.minutes`` spellings are not listed), and the server settings (listeners,
limits, group timeouts). All are read-only: seglog has no dynamic broker configs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from seglog.broker.server_config import ServerConfig
from seglog.config import BROKER_KEYS, TOPIC_CONFIG_KEYS, BrokerConfig, ConfigType, LogConfig
from seglog.config_docs import BROKER_SETTING_DOCS, TOPIC_CONFIG_DOCS
from seglog.engine.topic_catalogue import ConfigSource

if TYPE_CHECKING:
    from seglog.broker.state import BrokerState
    from seglog.engine.topic_catalogue import ResolvedTopic

DYNAMIC_TOPIC = 1
DYNAMIC_BROKER = 2
DYNAMIC_DEFAULT_BROKER = 3
STATIC_BROKER = 4
DEFAULT = 5

WIRE_SOURCE = {
    ConfigSource.SEGLOG_TOPIC_OVERRIDE: DYNAMIC_TOPIC,
    ConfigSource.DYNAMIC_TOPIC_CONFIG: DYNAMIC_TOPIC,
    ConfigSource.INTERNAL_TOPIC_CONFIG: DYNAMIC_TOPIC,
    ConfigSource.DYNAMIC_BROKER_CONFIG: DYNAMIC_BROKER,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG: DYNAMIC_DEFAULT_BROKER,
    ConfigSource.STATIC_BROKER_CONFIG: STATIC_BROKER,
    ConfigSource.DEFAULT_CONFIG: DEFAULT,
}

BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
WIRE_TYPE = {
    ConfigType.BOOLEAN: BOOLEAN,
    ConfigType.STRING: STRING,
    ConfigType.INT: INT,
    ConfigType.LONG: LONG,
    ConfigType.DOUBLE: DOUBLE,
    ConfigType.LIST: LIST,
}

# Kafka topic configs seglog accepts and ignores (IGNORED_TOPIC_KEYS), with Kafka's defaults;
# the two removed in Kafka 4.0 (message.format.version, message.downconversion.enable) are
# accepted but not listed.
IGNORED_TOPIC_DEFAULTS: dict[str, tuple[str, int]] = {
    "min.insync.replicas": ("1", INT),
    "unclean.leader.election.enable": ("false", BOOLEAN),
    "follower.replication.throttled.replicas": ("", LIST),
    "leader.replication.throttled.replicas": ("", LIST),
    "remote.storage.enable": ("false", BOOLEAN),
    "local.retention.ms": ("-2", LONG),
    "local.retention.bytes": ("-2", LONG),
    "remote.log.copy.disable": ("false", BOOLEAN),
    "remote.log.delete.on.disable": ("false", BOOLEAN),
}
IGNORED_DOC = (
    "Accepted for compatibility with Kafka and ignored: seglog is one node without "
    "replication or tiered storage."
)

# server.properties keys of ServerConfig: (key, field, wire type, documentation).
SERVER_KEYS: tuple[tuple[str, str, int, str], ...] = (
    ("listeners", "listeners", LIST, "Where the server accepts connections (NAME://host:port)."),
    ("advertised.listeners", "advertised_listeners", LIST, "The address Metadata tells clients."),
    ("socket.request.max.bytes", "socket_request_max_bytes", INT, "The largest request frame."),
    ("queued.max.requests", "queued_max_requests", INT, "Requests read but not yet answered."),
    ("max.connections", "max_connections", INT, "Open client connections allowed."),
    ("connections.max.idle.ms", "connections_max_idle_ms", LONG, "Idle connections are closed."),
    ("auto.create.topics.enable", "auto_create_topics_enable", BOOLEAN, "Metadata creates topics."),
    ("delete.topic.enable", "delete_topic_enable", BOOLEAN, "DeleteTopics is allowed."),
    (
        "group.initial.rebalance.delay.ms",
        "groups.initial_rebalance_delay_ms",
        INT,
        "The delay of the first rebalance of an empty group.",
    ),
    (
        "group.min.session.timeout.ms",
        "groups.min_session_timeout_ms",
        INT,
        "The smallest session timeout a member may ask for.",
    ),
    (
        "group.max.session.timeout.ms",
        "groups.max_session_timeout_ms",
        INT,
        "The largest session timeout a member may ask for.",
    ),
    ("group.max.size", "groups.max_size", INT, "The most members a group may have."),
)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a resource; ``synonyms``: ``(name, value, source)``, highest first."""

    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    documentation: str | None
    synonyms: tuple[tuple[str, str | None, int], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT


def _default_synonym(name: str) -> tuple[str, str | None, int]:
    """Kafka's default of a topic config, named by the broker key that carries it."""
    key = TOPIC_CONFIG_KEYS[name]
    if not key.synonyms:
        return (name, key.format(key.default), DEFAULT)
    broker_name = key.synonyms[-1]
    multiplier = BROKER_KEYS[broker_name].multiplier_ms
    value = key.default // multiplier if multiplier != 1 else key.default
    return (broker_name, key.format(value), DEFAULT)


def topic_entries(state: BrokerState, resolved: ResolvedTopic) -> list[ConfigEntry]:
    """Every config of a resolved topic (see the module docstring)."""
    static = state.manager.broker.log_defaults
    kafka_default = LogConfig()
    entries = []
    for key in TOPIC_CONFIG_KEYS.values():
        value = key.format(getattr(resolved.config, key.field))
        source = WIRE_SOURCE[resolved.sources.get(key.name, ConfigSource.DEFAULT_CONFIG)]
        synonyms: list[tuple[str, str | None, int]] = []
        if source == DYNAMIC_TOPIC:
            synonyms.append((key.name, value, DYNAMIC_TOPIC))
        static_value = getattr(static, key.field)
        if static_value != getattr(kafka_default, key.field):
            broker_name = key.synonyms[0] if key.synonyms else key.name
            synonyms.append((broker_name, key.format(static_value), STATIC_BROKER))
        synonyms.append(_default_synonym(key.name))
        entries.append(
            ConfigEntry(
                key.name,
                value,
                source,
                False,
                WIRE_TYPE[key.kind],
                TOPIC_CONFIG_DOCS.get(key.name),
                tuple(synonyms),
            )
        )
    for name, (default, wire_type) in IGNORED_TOPIC_DEFAULTS.items():
        value, source = default, DEFAULT
        if name in resolved.extra:
            value, origin = resolved.extra[name]
            source = WIRE_SOURCE[origin]
        synonyms = [(name, value, source)] if source != DEFAULT else []
        synonyms.append((name, default, DEFAULT))
        entries.append(
            ConfigEntry(name, value, source, False, wire_type, IGNORED_DOC, tuple(synonyms))
        )
    for name, (value, origin) in sorted(resolved.extra.items()):
        if name not in IGNORED_TOPIC_DEFAULTS:  # e.g. a removed key from a broker's metadata
            source = WIRE_SOURCE[origin]
            entries.append(
                ConfigEntry(
                    name, value, source, False, STRING, IGNORED_DOC, ((name, value, source),)
                )
            )
    return entries


def _source_of(value: object, default: object) -> int:
    return STATIC_BROKER if value != default else DEFAULT


def broker_entries(state: BrokerState) -> list[ConfigEntry]:
    """Every broker setting of this node (see the module docstring)."""
    broker = state.manager.broker
    props = broker.to_properties()
    defaults = BrokerConfig(log_dirs=broker.log_dirs).to_properties()
    entries = []
    for name, value in props.items():
        key = BROKER_KEYS[name]
        source = STATIC_BROKER if name == "log.dirs" else _source_of(value, defaults.get(name))
        doc = BROKER_SETTING_DOCS.get(name)
        if doc is None and key.topic_key is not None:
            doc = f"The default of the topic config {key.topic_key}. " + TOPIC_CONFIG_DOCS.get(
                key.topic_key, ""
            )
        wire_type = LIST if name == "log.dirs" else WIRE_TYPE[key.kind]
        synonyms = ((name, value, source),)
        entries.append(ConfigEntry(name, value, source, True, wire_type, doc, synonyms))
    config, default_config = state.config, ServerConfig()
    for name, field_name, wire_type, doc in SERVER_KEYS:
        raw, default_raw = _setting(config, field_name), _setting(default_config, field_name)
        source = _source_of(raw, default_raw)
        text = _server_text(raw)
        entries.append(
            ConfigEntry(name, text, source, True, wire_type, doc, ((name, text, source),))
        )
    return entries


def _setting(config: ServerConfig, path: str) -> object:
    """A server setting by its attribute path (``groups.max_size``: a nested setting)."""
    value: object = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _server_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value)
    return str(value)
