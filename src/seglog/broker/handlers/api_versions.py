"""ApiVersions (key 18, v0-4): the versions of every API this server handles.

The list is the handler registry's (nothing advertised without a handler). An ApiVersions
request newer than v4 is answered by the dispatcher from its header alone, with a v0 body:
``UNSUPPORTED_VERSION`` and one entry, key 18 with this server's range, so the client retries
at a version both know (Kafka's ``ApiVersionsRequest.getErrorResponse``). From v3 the client
names its software; names outside ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` get
``INVALID_REQUEST``, as Kafka answers.
"""

from __future__ import annotations

import re

from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)

API_KEY = 18
MAX_VERSION = 4
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def versions_response(
    advertised: list[tuple[int, int, int]], error: ErrorCode
) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=int(error),
        api_keys=[
            ApiVersionsResponseApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised
        ],
    )


def unsupported_version_response() -> ApiVersionsResponse:
    """The v0 body for an ApiVersions version above ours: error 35 and our range for key 18."""
    return versions_response([(API_KEY, 0, MAX_VERSION)], ErrorCode.UNSUPPORTED_VERSION)


async def handle(
    state: BrokerState, context: RequestContext, request: ApiVersionsRequest
) -> ApiVersionsResponse:
    if context.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name or "")
        and _SOFTWARE.fullmatch(request.client_software_version or "")
    ):
        return versions_response(state.advertised, ErrorCode.INVALID_REQUEST)
    return versions_response(state.advertised, ErrorCode.NONE)


HANDLERS = [ApiHandler(API_KEY, 0, MAX_VERSION, handle)]
