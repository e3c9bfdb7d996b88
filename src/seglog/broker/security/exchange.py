"""What every server-side SASL exchange (PLAIN, SCRAM) offers, and how it fails.

An exchange is sans I/O: :meth:`SaslExchange.evaluate` takes the client's next token and
returns the server's answer. It reads no clock, opens no file and no socket; credentials come
from the lookup it was built with. After the last token, ``complete`` is True and ``user`` is
the authenticated user name (the principal is ``User:<user>``).

A failed exchange raises :class:`SaslAuthenticationFailed`. It carries two texts: the
``client_message`` sent to the client in SaslAuthenticate's ``error_message`` (never saying
whether the user exists, and never any secret), and the ``reason`` logged on the server (it
may name the user and what was wrong; it never holds a password or a proof).
"""

from __future__ import annotations

from typing import Protocol

from seglog.errors import SeglogError


class SaslAuthenticationFailed(SeglogError):
    """A SASL exchange was refused: bad credentials, unknown user, malformed token."""

    def __init__(self, client_message: str, reason: str, user: str | None = None) -> None:
        super().__init__(reason)
        self.client_message = client_message
        self.reason = reason
        self.user = user


class SaslExchange(Protocol):
    """One client's server-side exchange for one mechanism (see the module docstring)."""

    mechanism: str
    complete: bool
    user: str | None

    def evaluate(self, token: bytes) -> bytes: ...
