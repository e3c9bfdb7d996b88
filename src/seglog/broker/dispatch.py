"""One request frame in, one response (or none) out: version checks, decode, handler, encode.

The dispatcher knows nothing of sockets: it takes a frame's bytes and returns the response
frame as parts (bytes and file ranges), ``None`` for a request Kafka does not answer
(``acks=0`` Produce), or raises :class:`CloseConnection` where Kafka closes the connection:

* a frame too short for a header, or a header or body that does not decode;
* an API key without a handler, or a version outside the handler's range (Produce v0-2 are
  advertised but refused this way, as Kafka 4 refuses them);
* a handler failing unexpectedly (logged with its traceback; other connections go on);
* on a ``SASL_*`` listener, a request SASL does not allow now (:func:`sasl.gate`: before
  authentication only ApiVersions, SaslHandshake and SaslAuthenticate; after an expired
  session only the SaslHandshake of a re-authentication). A raw SASL token (after a v0
  SaslHandshake) is no Kafka request: :func:`sasl.raw_token` answers it.

A handler refusing an authentication raises :class:`CloseConnection` with a farewell body:
it is encoded here, and the network edge sends it (after the throttle's delay) before closing.

The one exception is ApiVersions above the versions served: answered, not closed, with the v0
error body that lets any client retry at a version both sides know.
"""

from __future__ import annotations

import logging

from seglog.broker.handlers import api_versions, sasl
from seglog.broker.registry import ApiHandler, CloseConnection, HandlerRegistry
from seglog.broker.session import Session
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import ProtocolDecodeError
from seglog.protocol.framing import decode_request, encode_response, peek_header
from seglog.protocol.schema import ExternalRecords

LOG = logging.getLogger("seglog.serve")
Parts = list[bytes | ExternalRecords]


class Dispatcher:
    """Routes decoded requests to the handlers of a :class:`HandlerRegistry`."""

    def __init__(self, state: BrokerState, handlers: list[ApiHandler]) -> None:
        self.state = state
        self.registry = HandlerRegistry(handlers)
        state.advertised = self.registry.advertised()

    async def dispatch(self, frame: bytes | memoryview, session: Session) -> Parts | None:
        """Handle one request frame (without its size prefix) of the connection ``session``;
        see the module docstring."""
        if session.uses_sasl and sasl.expects_raw_token(session):
            return await sasl.raw_token(self.state, session, frame)
        try:
            api_key, version, correlation_id = peek_header(frame)
        except ProtocolDecodeError as error:
            raise CloseConnection(str(error)) from None
        sasl.gate(self.state, session, api_key, version)
        handler = self.registry.get(api_key)
        if handler is None:
            raise CloseConnection(f"unknown API key {api_key} (version {version})")
        if api_key == api_versions.API_KEY and version > handler.max_version:
            body = api_versions.unsupported_version_response()
            return encode_response(api_key, 0, correlation_id, body)
        if not handler.serves(version):
            raise CloseConnection(
                f"API key {api_key} version {version} is outside the served "
                f"{handler.min_version}-{handler.max_version}"
            )
        try:
            request = decode_request(frame)
            body = request.decode_body()
        except ProtocolDecodeError as error:
            raise CloseConnection(f"malformed request: {error}") from None
        context = RequestContext(
            api_key, version, correlation_id, request.client_id, session.client_host, session
        )
        try:
            response = await handler.handle(self.state, context, body)
        except CloseConnection as closing:
            # the handler's own decision (an acks=0 produce that failed, a refused login)
            if closing.farewell is not None and closing.farewell_parts is None:
                closing.farewell_parts = encode_response(
                    api_key, version, correlation_id, closing.farewell
                )
            raise
        except Exception as error:
            LOG.exception("API key %d v%d from %s failed", api_key, version, request.client_id)
            raise CloseConnection(f"handler failed: {error}") from error
        if response is None:
            return None
        return encode_response(api_key, version, correlation_id, response)
