"""The settings of ``seglog serve`` that are not storage settings: listeners, limits, groups.

Kafka's ``server.properties`` keys, defaults and ranges (``KafkaConfig``), read from the same
properties as the storage settings (:class:`seglog.config.BrokerConfig`):

=====================================  ==========================  ==========================
key                                    default                     meaning
=====================================  ==========================  ==========================
listeners                              PLAINTEXT://127.0.0.1:9092  where to accept (port 0: any)
listener.security.protocol.map         NAME:NAME for Kafka's four  each listener's protocol
advertised.listeners                   the bound listener          what Metadata tells clients
seglog.allow.insecure.listeners        false                       see "Safe defaults"
seglog.ssl.reload.check.ms             5000                        see "Certificate rotation"
socket.request.max.bytes               104857600                   largest request frame
queued.max.requests                    500                         requests read, not answered
max.connections                        2147483647                  open client connections
connections.max.idle.ms                600000                      idle connections closed
auto.create.topics.enable              true                        Metadata creates topics
delete.topic.enable                    true                        DeleteTopics allowed
=====================================  ==========================  ==========================

The consumer-group settings (``group.*``) are :class:`GroupConfig`'s, the transaction
coordinator's (``transaction.max.timeout.ms``, ``transactional.id.expiration.ms``, the two
cleanup intervals) :class:`TransactionConfig`'s; the authorizer's (``authorizer.class.name``,
``super.users``, ``allow.everyone.if.no.acl.found``) :class:`AuthorizerSettings`'s; the
``offsets.*`` and ``transaction.state.log.*`` ones are storage settings
(:class:`seglog.config.BrokerConfig`).

**Listeners.** ``listeners`` holds ``NAME://host:port`` entries (names are case-insensitive
and upper-cased, as Kafka's ``ListenerName.normalised``; each name once; two listeners never
share a non-zero port on the same host). ``listener.security.protocol.map`` maps each name to
``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``; when it is not set, Kafka's default
maps those four names to themselves (so ``SSL://...`` is an SSL listener), and when it is set it
replaces that default, as in Kafka. A setting may be given for one listener only as
``listener.name.<name in lower case>.<key>`` (:func:`listener_properties`), which wins over
``<key>`` for that listener; the TLS settings of every ``SSL``/``SASL_SSL`` listener are read
this way (:class:`seglog.broker.security.tls.TlsSettings`), except that a ``SASL_SSL``
listener asks for client certificates only when its own
``listener.name.<name>.ssl.client.auth`` says so (Kafka's rule since KIP-684).
``advertised.listeners`` entries are matched to listeners by name; a listener not named there
is advertised as bound.

**Safe defaults.** ``listeners`` defaults to loopback (``127.0.0.1``), not Kafka's
all-interfaces ``PLAINTEXT://:9092``: a development broker with no authentication should not be
reachable from the network unless asked. A listener that is not on loopback (an empty host,
``0.0.0.0``, ``::``, a host name other than ``localhost``, any non-loopback address) and whose
protocol does not encrypt (``PLAINTEXT``, ``SASL_PLAINTEXT``) is refused unless an authorizer
is configured (``authorizer.class.name``) or ``seglog.allow.insecure.listeners=true`` is set;
with that setting the server starts and logs a warning per such listener
(:attr:`ServerConfig.insecure_listeners`). A host name is judged by its text, never resolved:
only ``localhost`` counts as loopback.

**Certificate rotation.** When the PEM files of a TLS listener (``ssl.keystore.location``,
``ssl.truststore.location``) change on disk, new connections use the new key, certificate and
CAs; open connections keep theirs (:mod:`seglog.broker.security.tls_reload`). The files are
checked on an accepted connection, at most once per ``seglog.ssl.reload.check.ms`` (0: never,
the files are read at start only). New files that do not make a valid TLS context (a key not
matching its certificate, PEM that does not parse) are not applied: the server keeps the
previous ones and logs a warning once per change. The setting is broker-wide: Kafka's way
(``ssl.*`` as a dynamic broker config) needs a config API seglog does not have.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from seglog.broker.acl.settings import AuthorizerSettings
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.properties import bool_setting, int_setting
from seglog.broker.security.sasl_config import SaslConfig
from seglog.broker.security.tls import TlsSettings
from seglog.broker.security.tls_reload import DEFAULT_RELOAD_CHECK_MS, RELOAD_CHECK_KEY
from seglog.broker.session import SECURITY_PROTOCOLS
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.errors import InvalidConfigError

INT32_MAX = 2**31 - 1
DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"


ENCRYPTED_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
ALLOW_INSECURE_KEY = "seglog.allow.insecure.listeners"
PROTOCOL_MAP_KEY = "listener.security.protocol.map"


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``NAME://host:port`` entry; an empty host means every interface."""

    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"

    @property
    def encrypted(self) -> bool:
        return self.security_protocol in ENCRYPTED_PROTOCOLS

    @property
    def on_loopback(self) -> bool:
        """Whether the listener accepts only local connections (judged by its host's text)."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.split("%", 1)[0]).is_loopback
        except ValueError:
            return False  # "" (every interface) or a host name: reachable from elsewhere


def parse_protocol_map(text: str | None) -> dict[str, str]:
    """``listener.security.protocol.map`` (``NAME:PROTOCOL`` pairs); Kafka's default when None."""
    if text is None:
        return {protocol: protocol for protocol in SECURITY_PROTOCOLS}
    mapping: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise InvalidConfigError(f"{PROTOCOL_MAP_KEY}: {entry!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(
                f"{PROTOCOL_MAP_KEY}: {entry!r}: {protocol!r} is not one of "
                + ", ".join(SECURITY_PROTOCOLS)
            )
        if name in mapping:
            raise InvalidConfigError(f"{PROTOCOL_MAP_KEY}: {name} is mapped twice")
        mapping[name] = protocol
    return mapping


def parse_listeners(
    text: str, key: str = "listeners", protocols: Mapping[str, str] | None = None
) -> tuple[Listener, ...]:
    """Kafka's listener list: ``NAME://host:port`` entries separated by commas, each name
    mapped to its protocol by ``protocols`` (Kafka's default map when None)."""
    protocol_of = parse_protocol_map(None) if protocols is None else protocols
    listeners: list[Listener] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, address = entry.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not colon or not port_text.isdigit() or not name.strip():
            raise InvalidConfigError(f"{key}: {entry!r} is not NAME://host:port")
        name = name.strip().upper()
        protocol = protocol_of.get(name)
        if protocol is None:
            raise InvalidConfigError(
                f"{key}: {entry!r}: listener {name} has no security protocol in "
                f"{PROTOCOL_MAP_KEY} (mapped: {', '.join(sorted(protocol_of)) or 'none'})"
            )
        port = int(port_text)
        if port > 65535:
            raise InvalidConfigError(f"{key}: {entry!r}: port {port} is above 65535")
        listeners.append(Listener(name, host.strip("[]"), port, protocol))
    if not listeners:
        raise InvalidConfigError(f"{key}: no listener in {text!r}")
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise InvalidConfigError(f"{key}: {text!r} names a listener twice")
    ports = [(listener.host, listener.port) for listener in listeners if listener.port]
    if len(set(ports)) != len(ports):
        raise InvalidConfigError(f"{key}: {text!r} gives two listeners the same host and port")
    return tuple(listeners)


class ListenerProperties(Mapping[str, str]):
    """The settings as one listener sees them: ``listener.name.<name>.<key>`` wins over
    ``<key>`` (Kafka's ``valuesWithPrefixOverride``, key by key). :meth:`key_of` names the key
    a value came from, for error messages."""

    def __init__(self, props: Mapping[str, str], listener: str) -> None:
        self._props = props
        self.prefix = f"listener.name.{listener.lower()}."

    def key_of(self, key: str) -> str:
        prefixed = self.prefix + key
        return prefixed if prefixed in self._props else key

    def __getitem__(self, key: str) -> str:
        return self._props[self.key_of(key)]

    def __iter__(self) -> Iterator[str]:
        seen = {k[len(self.prefix) :] for k in self._props if k.startswith(self.prefix)}
        yield from seen
        yield from (k for k in self._props if k not in seen and not k.startswith("listener.name."))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def listener_properties(props: Mapping[str, str], listener: str) -> ListenerProperties:
    """``props`` as the listener ``listener`` sees them (see :class:`ListenerProperties`)."""
    return ListenerProperties(props, listener)


def _tls_settings(props: Mapping[str, str], listener: Listener) -> TlsSettings:
    """A listener's TLS settings. On a SASL_SSL listener only the listener-prefixed
    ``ssl.client.auth`` counts (Kafka's KIP-684: a broker-wide ``ssl.client.auth=required``
    meant for SSL listeners does not ask SASL clients for certificates)."""
    seen = listener_properties(props, listener.name)
    if listener.security_protocol == "SASL_SSL" and seen.prefix + "ssl.client.auth" not in props:
        seen = listener_properties(
            {k: v for k, v in props.items() if k != "ssl.client.auth"}, listener.name
        )
    return TlsSettings.from_properties(seen, listener.name, seen.key_of)


def _insecure(props: Mapping[str, str], listeners: tuple[Listener, ...]) -> tuple[Listener, ...]:
    """The unencrypted non-loopback listeners; raises unless they are allowed (see "Safe
    defaults" in the module docstring)."""
    exposed = tuple(lsn for lsn in listeners if not lsn.encrypted and not lsn.on_loopback)
    authorizer = (props.get("authorizer.class.name") or "").strip()
    if not exposed or authorizer:
        return exposed
    if bool_setting(props, ALLOW_INSECURE_KEY, False):
        return exposed
    raise InvalidConfigError(
        f"listeners: {', '.join(map(str, exposed))} would accept unencrypted connections from "
        "other hosts with no authorizer (every client may read and write every topic): use "
        "SSL or SASL_SSL, listen on 127.0.0.1, set authorizer.class.name, or set "
        f"{ALLOW_INSECURE_KEY}=true to accept the risk"
    )


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The server's settings (see the module docstring)."""

    listeners: tuple[Listener, ...] = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    advertised_listeners: tuple[Listener, ...] | None = None
    # The TLS settings of every SSL/SASL_SSL listener, by listener name.
    tls: Mapping[str, TlsSettings] = field(default_factory=dict)
    # Unencrypted listeners reachable from other hosts, allowed explicitly: warned about.
    insecure_listeners: tuple[Listener, ...] = ()
    # How often (at most) a TLS listener's PEM files are checked for a rotation; 0: never.
    ssl_reload_check_ms: int = DEFAULT_RELOAD_CHECK_MS
    socket_request_max_bytes: int = 104_857_600
    queued_max_requests: int = 500
    max_connections: int = INT32_MAX
    connections_max_idle_ms: int = 600_000
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    groups: GroupConfig = field(default_factory=GroupConfig)
    sasl: SaslConfig = field(default_factory=SaslConfig)
    authorizer: AuthorizerSettings = field(default_factory=AuthorizerSettings)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], *, listeners_override: str | None = None
    ) -> ServerConfig:
        """The settings of a ``server.properties``; ``listeners_override``: ``--listeners``."""
        listeners_text = listeners_override or props.get("listeners") or DEFAULT_LISTENERS
        advertised_text = props.get("advertised.listeners")
        protocols = parse_protocol_map(props.get(PROTOCOL_MAP_KEY))
        listeners = parse_listeners(listeners_text, protocols=protocols)
        advertised = (
            parse_listeners(advertised_text, "advertised.listeners", protocols)
            if advertised_text
            else None
        )
        names = {listener.name for listener in listeners}
        for entry in advertised or ():
            if entry.name not in names:
                raise InvalidConfigError(
                    f"advertised.listeners: {entry} names no listener of listeners "
                    f"({', '.join(sorted(names))})"
                )
        config = cls(
            listeners=listeners,
            advertised_listeners=advertised,
            tls={
                listener.name: _tls_settings(props, listener)
                for listener in listeners
                if listener.encrypted
            },
            insecure_listeners=_insecure(props, listeners),
            ssl_reload_check_ms=int_setting(props, RELOAD_CHECK_KEY, DEFAULT_RELOAD_CHECK_MS, 0),
            socket_request_max_bytes=int_setting(props, "socket.request.max.bytes", 104_857_600, 1),
            queued_max_requests=int_setting(props, "queued.max.requests", 500, 1),
            max_connections=int_setting(props, "max.connections", INT32_MAX, 0),
            connections_max_idle_ms=int_setting(props, "connections.max.idle.ms", 600_000, 1),
            auto_create_topics_enable=bool_setting(props, "auto.create.topics.enable", True),
            delete_topic_enable=bool_setting(props, "delete.topic.enable", True),
            groups=GroupConfig.from_properties(props),
            sasl=SaslConfig.from_properties(
                props, [x.name for x in listeners if x.security_protocol.startswith("SASL_")]
            ),
            authorizer=AuthorizerSettings.from_properties(props),
            transactions=TransactionConfig.from_properties(props),
        )
        return config
