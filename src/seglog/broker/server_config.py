"""The settings of ``seglog serve`` that are not storage settings: listeners, limits, groups.

Kafka's ``server.properties`` keys, defaults and ranges (``KafkaConfig``), read from the same
properties as the storage settings (:class:`seglog.config.BrokerConfig`):

=====================================  ==========================  ==========================
key                                    default                     meaning
=====================================  ==========================  ==========================
listeners                              PLAINTEXT://127.0.0.1:9092  where to accept (port 0: any)
advertised.listeners                   the bound listener          what Metadata tells clients
socket.request.max.bytes               104857600                   largest request frame
queued.max.requests                    500                         requests read, not answered
max.connections                        2147483647                  open client connections
connections.max.idle.ms                600000                      idle connections closed
auto.create.topics.enable              true                        Metadata creates topics
delete.topic.enable                    true                        DeleteTopics allowed
=====================================  ==========================  ==========================

The consumer-group settings (``group.*``) are :class:`GroupConfig`'s, the transaction
coordinator's (``transaction.max.timeout.ms``, ``transactional.id.expiration.ms``, the two
cleanup intervals) :class:`TransactionConfig`'s; the ``offsets.*`` and
``transaction.state.log.*`` ones are storage settings (:class:`seglog.config.BrokerConfig`).

Decision: ``listeners`` defaults to loopback (``127.0.0.1``), not Kafka's all-interfaces
``PLAINTEXT://:9092``: a development broker with no authentication should not be reachable
from the network unless asked. Only the PLAINTEXT security protocol is served; any other
listener is refused with an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.errors import InvalidConfigError

INT32_MAX = 2**31 - 1
DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``NAME://host:port`` entry; an empty host means every interface."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_listeners(text: str, key: str = "listeners") -> tuple[Listener, ...]:
    """Kafka's listener list: ``PLAINTEXT://host:port`` entries separated by commas."""
    listeners: list[Listener] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, address = entry.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not colon or not port_text.isdigit():
            raise InvalidConfigError(f"{key}: {entry!r} is not NAME://host:port")
        if name.upper() != "PLAINTEXT":
            raise InvalidConfigError(
                f"{key}: {entry!r}: only PLAINTEXT listeners are served (no TLS or SASL)"
            )
        port = int(port_text)
        if port > 65535:
            raise InvalidConfigError(f"{key}: {entry!r}: port {port} is above 65535")
        listeners.append(Listener("PLAINTEXT", host.strip("[]"), port))
    if not listeners:
        raise InvalidConfigError(f"{key}: no listener in {text!r}")
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise InvalidConfigError(f"{key}: {text!r} names a listener twice")
    return tuple(listeners)


def _int(props: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidConfigError(f"{key}: {text!r} is not an integer") from None
    if value < minimum:
        raise InvalidConfigError(f"{key}: {value} is below the minimum {minimum}")
    return value


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    text = props.get(key)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfigError(f"{key}: {text!r} is not true or false")
    return value == "true"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The server's settings (see the module docstring)."""

    listeners: tuple[Listener, ...] = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    advertised_listeners: tuple[Listener, ...] | None = None
    socket_request_max_bytes: int = 104_857_600
    queued_max_requests: int = 500
    max_connections: int = INT32_MAX
    connections_max_idle_ms: int = 600_000
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    groups: GroupConfig = field(default_factory=GroupConfig)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], *, listeners_override: str | None = None
    ) -> ServerConfig:
        """The settings of a ``server.properties``; ``listeners_override``: ``--listeners``."""
        listeners_text = listeners_override or props.get("listeners") or DEFAULT_LISTENERS
        advertised_text = props.get("advertised.listeners")
        config = cls(
            listeners=parse_listeners(listeners_text),
            advertised_listeners=(
                parse_listeners(advertised_text, "advertised.listeners")
                if advertised_text
                else None
            ),
            socket_request_max_bytes=_int(props, "socket.request.max.bytes", 104_857_600, 1),
            queued_max_requests=_int(props, "queued.max.requests", 500, 1),
            max_connections=_int(props, "max.connections", INT32_MAX, 0),
            connections_max_idle_ms=_int(props, "connections.max.idle.ms", 600_000, 1),
            auto_create_topics_enable=_bool(props, "auto.create.topics.enable", True),
            delete_topic_enable=_bool(props, "delete.topic.enable", True),
            groups=GroupConfig.from_properties(props),
            transactions=TransactionConfig.from_properties(props),
        )
        return config
