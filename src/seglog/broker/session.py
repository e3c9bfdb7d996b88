"""One client connection's security state: its listener, its principal, its authentication.

A :class:`Session` is created by the network edge when a connection is accepted and lives as long
as the connection. It is the only per-connection state the dispatcher and the handlers see:

* ``listener`` / ``security_protocol``: the listener's name (``PLAINTEXT``, ``SSL``, a custom
  name of ``listener.security.protocol.map``) and its protocol (one of
  :data:`SECURITY_PROTOCOLS`);
* ``principal``: Kafka's ``User:NAME`` text: ``User:ANONYMOUS`` on PLAINTEXT listeners and on SSL
  listeners without a client certificate, ``User:<distinguished name>`` from a client
  certificate, ``User:<user>`` after SASL;
* ``authenticated``: False on ``SASL_*`` listeners until the SASL exchange succeeds; until then
  only ApiVersions, SaslHandshake and SaslAuthenticate are served;
* ``sasl``: the SASL exchange in progress (owned by the SASL code; opaque here);
* ``session_expires_ms``: when a SASL session must be re-authenticated
  (``connections.max.reauth.ms``), on the clock's monotonic milliseconds; None when never.
"""

from __future__ import annotations

from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True, eq=False)
class Session:
    """The security state of one connection (see the module docstring)."""

    client_host: str
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
    authenticated: bool = True
    sasl: object | None = None
    session_expires_ms: int | None = None

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")
