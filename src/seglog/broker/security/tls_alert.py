"""The TLS alert of a failed server handshake, which asyncio would drop.

When a server-side handshake fails (an expired or untrusted client certificate, a missing one
under ``ssl.client.auth=required``, no common protocol version), OpenSSL writes the alert that
says why (``certificate_expired``, ``certificate_required``, ``unknown_ca``, ...) into the
connection's outgoing buffer and raises. asyncio's TLS layer (``loop.start_tls``) then closes
the connection without sending that buffer, so the client sees only the connection ending
(librdkafka: "Disconnected"), where a Kafka broker's client would read the reason
(``sslv3 alert certificate expired``).

:class:`AlertingContext` is the server's :class:`ssl.SSLContext`: the TLS objects it makes
(:class:`AlertingObject`) send that buffer themselves when their handshake fails, through the
sink :data:`ALERT_SINK` held when the object was made. The server sets :data:`ALERT_SINK` to
the raw connection's ``write`` around ``loop.start_tls``; asyncio builds the TLS object in a
callback scheduled from that call, which runs with a copy of the caller's context variables,
so each connection's object gets that connection's sink. Without a sink (the context used
elsewhere, or an asyncio that builds its objects differently) nothing is sent: the failure is
the same as without this module, never worse.
"""

from __future__ import annotations

import contextvars
import ssl
from collections.abc import Callable

AlertSink = Callable[[bytes], None]

ALERT_SINK: contextvars.ContextVar[AlertSink | None] = contextvars.ContextVar(
    "seglog_tls_alert_sink", default=None
)


class AlertingObject(ssl.SSLObject):
    """An :class:`ssl.SSLObject` that flushes its alert when its handshake fails."""

    _alert_bio: ssl.MemoryBIO | None = None
    _alert_sink: AlertSink | None = None

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError:
            if self._alert_bio is not None and self._alert_sink is not None:
                alert = self._alert_bio.read()
                if alert:
                    self._alert_sink(alert)
            raise


class AlertingContext(ssl.SSLContext):
    """A server context whose TLS objects send their handshake failure's alert."""

    sslobject_class = AlertingObject

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        made = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        sink = ALERT_SINK.get()
        if isinstance(made, AlertingObject) and sink is not None:
            made._alert_bio, made._alert_sink = outgoing, sink
        return made
