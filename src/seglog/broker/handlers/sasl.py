"""SaslHandshake (key 17, v0-1), SaslAuthenticate (key 36, v0-2), and the SASL gate.

On a ``SASL_*`` listener each connection has an :class:`Authenticator` (in ``Session.sasl``,
made on its first request). :func:`gate` runs before every request: until authentication
completes only ApiVersions (once), SaslHandshake and then SaslAuthenticate pass; anything else
closes the connection, as Kafka does. After completion, a request arriving once the session
expired (``connections.max.reauth.ms``) closes the connection unless it is the SaslHandshake
that starts a re-authentication. A v0 SaslHandshake is followed by raw tokens, handled by
:func:`raw_token` without a Kafka header.

On other listeners (and on an authenticated connection that cannot re-authenticate) both APIs
answer ``ILLEGAL_SASL_STATE``, as Kafka's ``KafkaApis``.

A failed authentication is logged (client host, listener, mechanism, user name and what was
wrong; never a password or a proof), answered with ``UNSUPPORTED_SASL_MECHANISM`` or
``SASL_AUTHENTICATION_FAILED`` after the throttle's delay (no answer for raw v0 tokens, as
Kafka), and the connection is closed. A token is evaluated in a worker thread: checking a PLAIN
password against a stored SCRAM credential runs PBKDF2 (milliseconds), which must not stall the
event loop that serves every other client. Session deadlines and the throttle read the clock's
monotonic milliseconds (``Session.session_expires_ms`` is on that scale), as Kafka reads
``nanoTime``: a wall-clock step never expires or extends a session.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import NoReturn

from seglog.broker.handlers import api_versions
from seglog.broker.registry import ApiHandler, CloseConnection
from seglog.broker.security.authenticator import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    Authenticator,
    AuthStep,
    Phase,
    complete_session,
)
from seglog.broker.security.exchange import SaslAuthenticationFailed
from seglog.broker.session import Session
from seglog.broker.state import BrokerState, RequestContext
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from seglog.protocol.schema import ExternalRecords

LOG = logging.getLogger("seglog.serve")
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def authenticator_of(state: BrokerState, session: Session) -> Authenticator | None:
    """The session's authenticator (made on first use); None off SASL listeners."""
    if not session.uses_sasl or state.sasl is None:
        return None
    if not isinstance(session.sasl, Authenticator):
        session.sasl = state.sasl.authenticator(session.listener)
    return session.sasl


def gate(state: BrokerState, session: Session, api_key: int, version: int) -> None:
    """Raise :class:`CloseConnection` when the session may not send this request now."""
    if not session.uses_sasl:
        return
    auth = authenticator_of(state, session)
    if auth is None:
        raise CloseConnection(f"no SASL settings for the {session.security_protocol} listener")
    if auth.in_progress:
        if not auth.allows(api_key):
            raise CloseConnection(
                f"API key {api_key} during SASL {auth.phase.value} "
                f"(only ApiVersions, SaslHandshake and SaslAuthenticate before authentication)"
            )
        if api_key == api_versions.API_KEY and version <= api_versions.MAX_VERSION:
            auth.api_versions_answered = True
        return
    expires = session.session_expires_ms
    if expires is not None and state.manager.clock.monotonic_ms() >= expires:
        if api_key == SASL_HANDSHAKE and auth.supports_reauthentication:
            return
        raise CloseConnection(
            f"SASL session of {session.principal} expired (connections.max.reauth.ms) "
            "without re-authentication"
        )


def _refuse(
    state: BrokerState, session: Session, error: SaslAuthenticationFailed, farewell: object
) -> NoReturn:
    assert state.sasl is not None
    auth = session.sasl
    mechanism = auth.mechanism if isinstance(auth, Authenticator) else None
    delay = state.sasl.throttle.failed(session.client_host, state.manager.clock.monotonic_ms())
    LOG.info(
        "failed SASL authentication from %s on %s (mechanism %s, user %r): %s; closing after %d ms",
        session.client_host,
        session.listener,
        mechanism,
        error.user,
        error.reason,
        delay,
    )
    raise CloseConnection(
        f"failed SASL authentication: {error.reason}", farewell=farewell, delay_ms=delay
    )


def _completed(state: BrokerState, session: Session, auth: Authenticator, step: AuthStep) -> None:
    assert auth.user is not None
    lifetime_ms = step.session_lifetime_ms
    complete_session(session, auth.user, lifetime_ms, state.manager.clock.monotonic_ms())
    LOG.log(
        logging.INFO if step.reauthenticated else logging.DEBUG,
        "%s %s as %s with %s (session lifetime %d ms)",
        session.client_host,
        "re-authenticated" if step.reauthenticated else "authenticated",
        session.principal,
        auth.mechanism,
        lifetime_ms,
    )


async def handle_handshake(
    state: BrokerState, context: RequestContext, request: SaslHandshakeRequest
) -> SaslHandshakeResponse:
    session = context.connection
    auth = authenticator_of(state, session)
    if auth is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
    if not auth.in_progress:
        if not auth.supports_reauthentication:
            return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
        auth.begin_reauthentication()
    mechanisms = list(auth.settings.mechanisms)
    if auth.phase is not Phase.HANDSHAKE or not auth.handshake(
        request.mechanism, context.api_version
    ):
        error = SaslAuthenticationFailed(
            "Unsupported SASL mechanism",
            f"SASL mechanism {request.mechanism!r} is not enabled"
            + (" or not the one re-authenticated" if auth.reauthenticating else ""),
        )
        farewell = SaslHandshakeResponse(ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms)
        _refuse(state, session, error, farewell)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=mechanisms)


async def handle_authenticate(
    state: BrokerState, context: RequestContext, request: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    session = context.connection
    auth = authenticator_of(state, session)
    if auth is None or not auth.in_progress:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=AFTER_AUTHENTICATION
        )
    try:
        step = await asyncio.to_thread(
            auth.authenticate, bytes(request.auth_bytes), context.api_version
        )
    except SaslAuthenticationFailed as error:
        farewell = SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=error.client_message
        )
        _refuse(state, session, error, farewell)
    if step.complete:
        _completed(state, session, auth, step)
    return SaslAuthenticateResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        auth_bytes=step.token,
        session_lifetime_ms=step.session_lifetime_ms,
    )


async def raw_token(
    state: BrokerState, session: Session, frame: bytes | memoryview
) -> list[bytes | ExternalRecords]:
    """A raw SASL token after a v0 SaslHandshake: the answer as a size-prefixed raw frame."""
    auth = session.sasl
    assert isinstance(auth, Authenticator)
    try:
        step = await asyncio.to_thread(auth.authenticate, bytes(frame), None)
    except SaslAuthenticationFailed as error:
        _refuse(state, session, error, None)
    if step.complete:
        _completed(state, session, auth, step)
    return [struct.pack(">i", len(step.token)) + step.token]


def expects_raw_token(session: Session) -> bool:
    """Whether the session's next frame is a raw SASL token (v0 handshake, exchange open)."""
    auth = session.sasl
    return isinstance(auth, Authenticator) and auth.raw_tokens and auth.phase is Phase.AUTHENTICATE


HANDLERS = [
    ApiHandler(SASL_HANDSHAKE, 0, 1, handle_handshake),
    ApiHandler(SASL_AUTHENTICATE, 0, 2, handle_authenticate),
]
