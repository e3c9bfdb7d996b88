"""The protocol codec against kafka-python's ``kafka.protocol`` as an oracle.

For every API the server's handler registry serves (``seglog.broker.app.all_handlers()``) and
every version it serves, requests and responses alike, and for both request header versions and
both response header versions, hypothesis draws random message values and checks:

* our encode then our decode is the identity;
* kafka-python decodes our bytes to the same values (field by field, over the version's fields);
* kafka-python re-encoding what it decoded gives our exact bytes.

Whole frames too: a request frame kafka-python writes (header and body) goes through
``FrameReader`` and ``decode_request`` to the same values, and a response frame we write
(``encode_response``, with the header version Kafka's rules choose, ApiVersions' v0 header
included) decodes in kafka-python with its header.

Versions: the served range, not the advertised one, for Produce: v0-2 are advertised (librdkafka
reads compression support from them) but refused, and Kafka's definitions no longer describe
them. ``SEGLOG_ORACLE_EXAMPLES`` sets the examples per (message, version) (default 15).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.broker.app import all_handlers
from seglog.broker.handlers import api_versions
from seglog.protocol import codec, messages
from seglog.protocol.framing import FrameReader, decode_request, encode_response
from support.protocol_messages import kafka_python_class, message_values, same_values

pytestmark = pytest.mark.compat

ROOT = Path(__file__).resolve().parents[2]
ORACLE = settings(
    max_examples=int(os.environ.get("SEGLOG_ORACLE_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _served_cases() -> list[tuple[str, int]]:
    from seglog.protocol.framing import REQUESTS, RESPONSES

    cases: list[tuple[str, int]] = []
    for handler in all_handlers():
        for table in (REQUESTS, RESPONSES):
            spec = table[handler.api_key]
            low = max(handler.min_version, spec.valid_versions[0])
            high = min(handler.max_version, spec.valid_versions[1])
            assert low <= high, f"{spec.name}: served {handler.min_version}-{handler.max_version}"
            cases.extend((spec.name, version) for version in range(low, high + 1))
    return cases


CASES = _served_cases()


def _kafka_python_decode(name: str, data: bytes, version: int) -> Any:
    cls = kafka_python_class(name)
    if name == "ApiVersionsResponse":
        # kafka-python's ApiVersionsResponse.decode reads any error body as v0 (the client's
        # fallback); the plain decoder reads the version asked for.
        from kafka.protocol.api_message import ApiMessage

        return ApiMessage.decode.__func__(cls, data, version)  # type: ignore[attr-defined]
    return cls[version].decode(data)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_message_round_trips_and_matches_kafka_python(name: str, version: int) -> None:
    spec = messages.SPECS[name]

    @ORACLE
    @given(message_values(spec.cls, version, spec.is_flexible(version)))
    def check(value: Any) -> None:
        data = codec.encode(value, version)
        decoded, end = codec.decode(spec.cls, data, version)
        assert end == len(data)
        assert decoded == value
        theirs = _kafka_python_decode(name, data, version)
        assert same_values(value, theirs, version) == ""
        theirs._header = None
        assert theirs.encode(version=version) == data

    check()


HEADER_CASES = [("RequestHeader", 1), ("RequestHeader", 2), ("ResponseHeader", 0)]
HEADER_CASES.append(("ResponseHeader", 1))


@pytest.mark.parametrize(("name", "version"), HEADER_CASES)
def test_header_round_trips_and_matches_kafka_python(name: str, version: int) -> None:
    from kafka.protocol import api_header

    spec = messages.SPECS[name]
    flexible = spec.is_flexible(version)
    their_cls = getattr(api_header, name)

    @ORACLE
    @given(message_values(spec.cls, version, flexible))
    def check(value: Any) -> None:
        data = codec.encode(value, version)
        assert codec.decode(spec.cls, data, version)[0] == value
        theirs = their_cls.decode(io.BytesIO(data), flexible=flexible)
        assert same_values(value, theirs, version) == ""
        assert theirs.encode(flexible=flexible) == data

    check()


REQUEST_CASES = [(n, v) for n, v in CASES if n.endswith("Request")]
RESPONSE_CASES = [(n, v) for n, v in CASES if n.endswith("Response")]


@pytest.mark.parametrize(
    ("name", "version"), REQUEST_CASES, ids=[f"{n}-v{v}" for n, v in REQUEST_CASES]
)
def test_kafka_python_request_frames_decode(name: str, version: int) -> None:
    spec = messages.SPECS[name]

    @ORACLE
    @given(
        message_values(spec.cls, version, spec.is_flexible(version)),
        st.integers(-(2**31), 2**31 - 1),
        st.none() | st.text(max_size=10),
    )
    def check(value: Any, correlation_id: int, client_id: str | None) -> None:
        theirs = _kafka_python_decode(name, codec.encode(value, version), version)
        theirs._header = None
        theirs.with_header(correlation_id=correlation_id, client_id=client_id)
        frame = theirs.encode(header=True, framed=True)
        reader = FrameReader(len(frame))
        assert reader.feed(frame[:3]) == []
        (body,) = reader.feed(frame[3:])
        request = decode_request(body)
        assert (request.api_key, request.api_version) == (spec.api_key, version)
        assert (request.correlation_id, request.client_id) == (correlation_id, client_id)
        assert request.decode_body() == value

    check()


@pytest.mark.parametrize(
    ("name", "version"), RESPONSE_CASES, ids=[f"{n}-v{v}" for n, v in RESPONSE_CASES]
)
def test_response_frames_decode_in_kafka_python(name: str, version: int) -> None:
    spec = messages.SPECS[name]
    cls = kafka_python_class(name)

    @ORACLE
    @given(
        message_values(spec.cls, version, spec.is_flexible(version)),
        st.integers(-(2**31), 2**31 - 1),
    )
    def check(value: Any, correlation_id: int) -> None:
        if name == "ApiVersionsResponse":
            value.error_code = 0  # an error body is read as v0 by every client
        (frame,) = encode_response(spec.api_key, version, correlation_id, value)
        assert isinstance(frame, bytes)
        theirs = cls[version].decode(frame, header=True, framed=True)
        assert theirs.header.correlation_id == correlation_id
        assert same_values(value, theirs, version) == ""

    check()


@pytest.mark.parametrize("sent_version", [5, 9, 0x7FFF])
def test_api_versions_error_body_reads_as_kafka_clients_expect(sent_version: int) -> None:
    """Above v4 the answer is a v0 body (header v0): error 35 and key 18's range only."""
    from kafka.protocol.metadata import ApiVersionsResponse

    body = api_versions.unsupported_version_response()
    (frame,) = encode_response(api_versions.API_KEY, 0, 77, body)
    assert isinstance(frame, bytes)
    # kafka-python decodes with the version it sent (clamped to what it knows)
    theirs = ApiVersionsResponse.decode(
        frame, version=min(sent_version, 4), header=True, framed=True
    )
    assert theirs.header.correlation_id == 77
    assert theirs.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [
        (api_versions.API_KEY, 0, api_versions.MAX_VERSION)
    ]


def test_committed_messages_module_equals_regeneration() -> None:
    """``scripts/gen_protocol.py --check``: messages.py is what kafka-python's JSON generates."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protocol.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
