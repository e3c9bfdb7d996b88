"""The table of request handlers; ApiVersions is generated from it.

A handler is an async function ``(state, context, request) -> response`` for one API key over a
range of versions. Nothing is advertised in ApiVersions that has no handler here: the response
lists exactly this table. One exception to "advertised = served": Produce is advertised from
version 0 (``advertised_min``) while v0-2 are refused, because librdkafka before 2.11.1 (Debian's
kcat) otherwise stops compressing gzip/snappy/lz4 batches without a word (KAFKA-18659; Kafka 4
does the same).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from seglog.broker.state import BrokerState, RequestContext


class CloseConnection(Exception):
    """The connection must be closed (the reason is logged), without a response unless a
    ``farewell`` body is given: a failed authentication is answered with its error, after
    ``delay_ms``, and then closed, as Kafka does. The dispatcher encodes the farewell into
    ``farewell_parts`` (a raw frame may be given there directly)."""

    def __init__(
        self,
        reason: str,
        *,
        farewell: Any = None,
        farewell_parts: list[Any] | None = None,
        delay_ms: int = 0,
    ) -> None:
        super().__init__(reason)
        self.farewell = farewell
        self.farewell_parts = farewell_parts
        self.delay_ms = delay_ms


Handler = Callable[[BrokerState, RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    """One API: its key, the versions served, and the handler."""

    api_key: int
    min_version: int
    max_version: int
    handle: Handler
    advertised_min: int | None = None

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class HandlerRegistry:
    """API key -> handler; the source of the ApiVersions response."""

    def __init__(self, handlers: list[ApiHandler]) -> None:
        self._handlers: dict[int, ApiHandler] = {}
        for handler in handlers:
            if handler.api_key in self._handlers:
                raise ValueError(f"two handlers for API key {handler.api_key}")
            self._handlers[handler.api_key] = handler

    def get(self, api_key: int) -> ApiHandler | None:
        return self._handlers.get(api_key)

    def advertised(self) -> list[tuple[int, int, int]]:
        """``(api_key, min_version, max_version)`` of every handler, by key."""
        return [
            (
                h.api_key,
                h.min_version if h.advertised_min is None else h.advertised_min,
                h.max_version,
            )
            for h in sorted(self._handlers.values(), key=lambda h: h.api_key)
        ]
