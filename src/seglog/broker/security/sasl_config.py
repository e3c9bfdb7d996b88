"""The SASL settings of ``seglog serve`` (Kafka's keys), per listener.

=============================================================  =========================  =====
key                                                            default                    unit
=============================================================  =========================  =====
sasl.enabled.mechanisms (``listener.name.<l>.`` prefix wins)   SCRAM-SHA-256,SCRAM-SHA-512
listener.name.<l>.plain.sasl.jaas.config                       none (no JAAS PLAIN users)
connections.max.reauth.ms (``listener.name.<l>.<mech>.``)      0 (never)                  ms
connection.failed.authentication.delay.ms                      100                        ms
sasl.server.max.receive.size                                   524288                     bytes
=============================================================  =========================  =====

``<l>`` is the listener name in lower case, as in Kafka (``listener.name.sasl_plaintext.``).

Decisions:

* ``sasl.enabled.mechanisms`` defaults to the SCRAM mechanisms, not Kafka's ``GSSAPI``: seglog
  serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only (GSSAPI and OAUTHBEARER are refused with an
  error naming the key), and SCRAM needs no password in a configuration file. PLAIN is served
  only when named.
* PLAIN users are the JAAS ``user_NAME="password"`` options of the listener **and** the users of
  the SCRAM credential file (the PLAIN password is checked against the stored salted credential,
  SCRAM-SHA-512 first), so a user added with ``seglog scram-credentials`` logs in with any of the
  three mechanisms and no plain password need be written in ``server.properties``. A JAAS user
  wins over a stored credential of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from seglog.broker.properties import int_setting
from seglog.broker.security.plain import PLAIN, parse_jaas_options, plain_users
from seglog.broker.security.scram import SCRAM_MECHANISMS
from seglog.errors import InvalidConfigError

SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
DEFAULT_MECHANISMS = "SCRAM-SHA-256,SCRAM-SHA-512"
DEFAULT_FAILED_AUTH_DELAY_MS = 100
DEFAULT_MAX_RECEIVE_SIZE = 524_288


@dataclass(frozen=True, slots=True)
class ListenerSasl:
    """The SASL settings of one listener."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    reauth_ms: Mapping[str, int] = field(default_factory=dict)  # mechanism -> ms (0: never)


def _listener_sasl(props: Mapping[str, str], listener: str) -> ListenerSasl:
    prefix = f"listener.name.{listener.lower()}."
    key = prefix + "sasl.enabled.mechanisms"
    if key not in props:
        key = "sasl.enabled.mechanisms"
    names = [m.strip() for m in props.get(key, DEFAULT_MECHANISMS).split(",") if m.strip()]
    for name in names:
        if name not in SUPPORTED_MECHANISMS:
            raise InvalidConfigError(
                f"{key}: {name!r} is not served (seglog serves {', '.join(SUPPORTED_MECHANISMS)})"
            )
    if not names:
        raise InvalidConfigError(f"{key}: no SASL mechanism for listener {listener}")
    jaas_key = prefix + "plain.sasl.jaas.config"
    users = plain_users(parse_jaas_options(props[jaas_key], jaas_key)) if jaas_key in props else {}
    global_reauth = int_setting(props, "connections.max.reauth.ms", 0, 0)
    reauth = {
        name: int_setting(
            props, f"{prefix}{name.lower()}.connections.max.reauth.ms", global_reauth, 0
        )
        for name in names
    }
    return ListenerSasl(tuple(dict.fromkeys(names)), users, reauth)


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """The SASL settings of the server (see the module docstring)."""

    listeners: Mapping[str, ListenerSasl] = field(default_factory=dict)
    failed_authentication_delay_ms: int = DEFAULT_FAILED_AUTH_DELAY_MS
    max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE
    properties: Mapping[str, str] = field(default_factory=dict)  # for listeners named later

    @classmethod
    def from_properties(cls, props: Mapping[str, str], sasl_listeners: Iterable[str]) -> SaslConfig:
        """The settings for the SASL listeners named ``sasl_listeners`` (checked now; another
        listener's settings are read from the same properties when first asked for)."""
        return cls(
            {name: _listener_sasl(props, name) for name in sasl_listeners},
            int_setting(props, "connection.failed.authentication.delay.ms", 100, 0),
            int_setting(props, "sasl.server.max.receive.size", DEFAULT_MAX_RECEIVE_SIZE, 1),
            dict(props),
        )

    def for_listener(self, listener: str) -> ListenerSasl:
        found = self.listeners.get(listener)
        return found if found is not None else _listener_sasl(self.properties, listener)
