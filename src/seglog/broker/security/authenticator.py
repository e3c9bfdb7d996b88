"""One connection's SASL authentication, as Kafka's ``SaslServerAuthenticator`` runs it; sans I/O.

**Phases** of an :class:`Authenticator` (kept in ``Session.sasl``):

* ``HANDSHAKE``: the connection may send ApiVersions (once answered, not again) and then
  SaslHandshake; nothing else.
* ``AUTHENTICATE``: after a SaslHandshake naming an enabled mechanism: only SaslAuthenticate
  (v1 handshake), or raw size-prefixed SASL tokens (v0 handshake, Kafka before 1.0: the tokens
  travel without a Kafka header, and the answers too).
* ``COMPLETE``: the exchange succeeded: the session's principal is ``User:<user>``,
  ``authenticated`` is True, and ``session_expires_ms`` is set when a re-authentication
  deadline applies.

Any failure (unknown mechanism, bad credentials, a malformed token) ends the connection: it is
answered with the error (when the protocol allows one) and closed.

**Re-authentication** (KIP-368): ``connections.max.reauth.ms`` (per mechanism) sets the session's
lifetime, returned in SaslAuthenticate v1+ ``session_lifetime_ms``. A client that sent
SaslAuthenticate v1+ may re-authenticate at any time by sending SaslHandshake on its
authenticated connection: same mechanism and same principal, or the connection is closed. A
request other than SaslHandshake arriving after the session expired closes the connection,
whether or not the client can re-authenticate (as Kafka).

**Throttling** (:class:`FailureThrottle`): a failed authentication is answered after
``connection.failed.authentication.delay.ms`` (Kafka's delay), doubled for every further failure
from the same client host within a minute, up to 32 times (a password-guessing flood slows
down; successful logins are never delayed).
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from seglog.broker.security.credential_store import CredentialStore
from seglog.broker.security.exchange import SaslAuthenticationFailed, SaslExchange
from seglog.broker.security.plain import PLAIN, PlainServerExchange, constant_time_equal
from seglog.broker.security.sasl_config import ListenerSasl, SaslConfig
from seglog.broker.security.scram import SCRAM_MECHANISMS, ScramServerExchange, password_matches
from seglog.broker.session import Session

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


class Phase(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"


@dataclass(frozen=True, slots=True)
class AuthStep:
    """The server's answer to one token: the token to send back, and, when the exchange just
    completed, the session lifetime (0: no deadline)."""

    token: bytes
    complete: bool = False
    session_lifetime_ms: int = 0
    reauthenticated: bool = False


class Authenticator:
    """The SASL state of one connection (see the module docstring)."""

    def __init__(self, settings: ListenerSasl, new_exchange: Callable[[str], SaslExchange]) -> None:
        self.settings = settings
        self._new_exchange = new_exchange
        self.phase = Phase.HANDSHAKE
        self.api_versions_answered = False
        self.raw_tokens = False
        self.exchange: SaslExchange | None = None
        self.mechanism: str | None = None
        self.user: str | None = None
        self.supports_reauthentication = False
        self.reauthenticating = False

    @property
    def in_progress(self) -> bool:
        return self.phase is not Phase.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be served in the current phase."""
        if self.phase is Phase.HANDSHAKE:
            return api_key == SASL_HANDSHAKE or (
                api_key == API_VERSIONS
                and not self.api_versions_answered
                and not self.reauthenticating
            )
        if self.phase is Phase.AUTHENTICATE:
            return api_key == SASL_AUTHENTICATE and not self.raw_tokens
        return True

    def begin_reauthentication(self) -> None:
        """An authenticated client sent SaslHandshake: start over, keeping mechanism and user."""
        self.phase = Phase.HANDSHAKE
        self.reauthenticating = True
        self.exchange = None

    def handshake(self, mechanism: str, version: int) -> bool:
        """SaslHandshake: True when ``mechanism`` is enabled (and, on re-authentication, the
        one used before); the exchange then starts."""
        if mechanism not in self.settings.mechanisms:
            return False
        if self.reauthenticating and mechanism != self.mechanism:
            return False
        self.mechanism = mechanism
        self.exchange = self._new_exchange(mechanism)
        self.raw_tokens = version == 0
        self.phase = Phase.AUTHENTICATE
        return True

    def authenticate(self, token: bytes, version: int | None) -> AuthStep:
        """One client token (``version``: SaslAuthenticate's, None for a raw v0 token).

        Raises:
            SaslAuthenticationFailed: the exchange is refused; the connection must close.
        """
        exchange = self.exchange
        if self.phase is not Phase.AUTHENTICATE or exchange is None:
            raise SaslAuthenticationFailed(
                "Unexpected SASL token", f"SASL token in phase {self.phase.value}"
            )
        if version is not None and version > 0:
            self.supports_reauthentication = True
        answer = exchange.evaluate(token)
        if not exchange.complete:
            return AuthStep(answer)
        user = exchange.user
        assert user is not None
        if self.reauthenticating and user != self.user:
            raise SaslAuthenticationFailed(
                f"Cannot change principals during re-authentication from User:{self.user}: "
                f"User:{user}",
                f"re-authentication of User:{self.user} as User:{user}",
                user,
            )
        self.user = user
        self.phase = Phase.COMPLETE
        reauthenticated, self.reauthenticating = self.reauthenticating, False
        lifetime = self.settings.reauth_ms.get(exchange.mechanism, 0)
        return AuthStep(answer, True, lifetime, reauthenticated)


def complete_session(session: Session, user: str, lifetime_ms: int, now_ms: int) -> None:
    """Mark ``session`` authenticated as ``User:<user>``, with its re-authentication deadline."""
    session.principal = f"User:{user}"
    session.authenticated = True
    session.session_expires_ms = now_ms + lifetime_ms if lifetime_ms > 0 else None


class FailureThrottle:
    """Delays of failed authentications per client host (see the module docstring); bounded
    to :data:`MAX_HOSTS` hosts, the oldest forgotten first."""

    WINDOW_MS = 60_000
    MAX_DOUBLINGS = 5
    MAX_HOSTS = 10_000

    def __init__(self, base_delay_ms: int) -> None:
        self.base_delay_ms = base_delay_ms
        self._hosts: OrderedDict[str, tuple[int, int]] = OrderedDict()  # host -> (count, last)

    def failed(self, host: str, now_ms: int) -> int:
        """Record a failure from ``host``; returns the delay (ms) before it is answered."""
        count, last = self._hosts.pop(host, (0, now_ms))
        count = count + 1 if now_ms - last <= self.WINDOW_MS else 1
        self._hosts[host] = (count, now_ms)
        while len(self._hosts) > self.MAX_HOSTS:
            self._hosts.popitem(last=False)
        return self.base_delay_ms << min(count - 1, self.MAX_DOUBLINGS)


class SaslServer:
    """The server's SASL side: settings, credentials, throttle; makes each connection's
    :class:`Authenticator`."""

    def __init__(self, config: SaslConfig, store: CredentialStore | None) -> None:
        self.config = config
        self.store = store
        self.throttle = FailureThrottle(config.failed_authentication_delay_ms)

    def authenticator(self, listener: str) -> Authenticator:
        settings = self.config.for_listener(listener)
        return Authenticator(settings, lambda mechanism: self._exchange(settings, mechanism))

    def _exchange(self, settings: ListenerSasl, mechanism: str) -> SaslExchange:
        if mechanism == PLAIN:
            return PlainServerExchange(lambda user, pw: self._plain_ok(settings, user, pw))
        assert mechanism in SCRAM_MECHANISMS
        store = self.store
        return ScramServerExchange(
            mechanism, lambda user, name: None if store is None else store.lookup(user, name)
        )

    def _plain_ok(self, settings: ListenerSasl, user: str, password: str) -> bool:
        expected = settings.plain_users.get(user)
        if expected is not None:
            return constant_time_equal(expected, password)
        if self.store is None:
            return False
        stored = self.store.credentials_of(user)
        for name in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            if name in stored:
                return password_matches(name, stored[name], password)
        return False
