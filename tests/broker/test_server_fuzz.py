"""Random well-formed requests of every served API and version against a real server.

The frames decode (hypothesis draws random values of the generated messages: any topic names,
partitions, offsets, timestamps, record bytes, flags), so they reach the handlers. Rule: every
request is answered with the right correlation id (Produce with ``acks=0`` excepted) or the
connection is closed as Kafka closes it; no handler fails with an unexpected exception (the
server logs those as ``failed``: every refusal must be a Kafka error code); the server stays up,
and at the end a well-behaved client still round-trips its data and the directory reopens clean.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_harness import (
    TOPIC,
    ServedBroker,
    connect,
    finish,
    read_frame,
    request_frame,
    round_trip,
    served_broker,
    values,
)

from seglog.broker.app import all_handlers
from seglog.format.builder import build_batches
from seglog.format.records import Record
from seglog.protocol import codec, messages
from seglog.protocol.framing import REQUESTS
from support.protocol_messages import message_values

EXAMPLES = int(os.environ.get("SEGLOG_FUZZ_EXAMPLES", "250"))
SERVED = [
    (REQUESTS[h.api_key], version)
    for h in all_handlers()
    for version in range(
        max(h.min_version, REQUESTS[h.api_key].valid_versions[0]),
        min(h.max_version, REQUESTS[h.api_key].valid_versions[1]) + 1,
    )
]
PROBE = messages.ApiVersionsRequest()
BEFORE = values("before")
# The fuzzed requests aim at their own topic (they may delete its records); the well-behaved
# client's topic must come out of the run untouched.
AIMED_TOPIC = "fuzzed"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedBroker]:
    props = {"group.initial.rebalance.delay.ms": "0"}  # no 3 s wait per new group
    with served_broker(tmp_path_factory.mktemp("fuzz"), props) as served:
        round_trip(served, TOPIC, BEFORE)
        round_trip(served, AIMED_TOPIC, values("aimed"))  # the topic aimed requests name exists
        yield served


TOPIC_FIELDS = {"name", "topic"}
PARTITION_FIELDS = {"partition", "partition_index", "index"}
OFFSET_FIELDS = {"fetch_offset", "offset", "timestamp", "log_start_offset"}


def _aim(draw: st.DrawFn, value: Any) -> None:
    """Point a drawn request at a topic that exists, its partitions and offsets near its
    end, and give Produce a valid batch sometimes, so that handlers get past the lookups."""
    for item in fields(value):
        name, current = item.name, getattr(value, item.name)
        if is_dataclass(current):
            _aim(draw, current)
        elif isinstance(current, list):
            for element in current:
                if is_dataclass(element):
                    _aim(draw, element)
        elif name in TOPIC_FIELDS and isinstance(current, str):
            setattr(value, name, AIMED_TOPIC)
        elif name in PARTITION_FIELDS and isinstance(current, int):
            setattr(value, name, draw(st.integers(-1, 1)))
        elif name in OFFSET_FIELDS and isinstance(current, int):
            setattr(value, name, draw(st.integers(-5, 30)))
        elif name == "records" and draw(st.booleans()):
            stamp = int(time.time() * 1000) + draw(st.integers(-(10**9), 10**7))
            record = Record(0, stamp, draw(st.none() | st.binary(max_size=8)), b"v")
            setattr(value, name, build_batches([record])[0])
    if isinstance(value, messages.ProduceRequest):
        value.acks = draw(st.sampled_from([-1, 0, 1, value.acks]))
        value.transactional_id = None


# Requests that may wait (long polls, joins, syncs) wait at most this long: valid waits of
# up to 2**31 ms would only stall the test (the server's own bounds are tested elsewhere).
WAIT_FIELDS = {"max_wait_ms": 50, "rebalance_timeout_ms": 200, "session_timeout_ms": 6000}


def _bound_waits(value: Any) -> None:
    for item in fields(value):
        current = getattr(value, item.name)
        if item.name in WAIT_FIELDS and isinstance(current, int):
            setattr(value, item.name, min(current, WAIT_FIELDS[item.name]))
        elif is_dataclass(current):
            _bound_waits(current)
        elif isinstance(current, list):
            for element in current:
                if is_dataclass(element):
                    _bound_waits(element)


@st.composite
def served_requests(draw: st.DrawFn) -> tuple[Any, int]:
    spec, version = draw(st.sampled_from(SERVED))
    value = draw(message_values(spec.cls, version, spec.is_flexible(version)))
    if draw(st.booleans()):
        _aim(draw, value)
    _bound_waits(value)
    return value, version


def _correlation_of(frame: bytes, api_key: int, version: int) -> int:
    header_version = 0 if api_key == 18 else (1 if REQUESTS[api_key].is_flexible(version) else 0)
    header, _ = codec.decode(messages.ResponseHeader, frame, header_version, whole=False)
    return int(header.correlation_id)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(served_requests(), min_size=1, max_size=4))
def test_random_requests_are_answered_or_closed(
    broker: ServedBroker, requests: list[tuple[Any, int]]
) -> None:
    sock = connect(broker)
    try:
        for index, (value, version) in enumerate(requests):
            sock.sendall(request_frame(value, version, index) + request_frame(PROBE, 0, -1))
            silent = isinstance(value, messages.ProduceRequest) and value.acks == 0
            frame = read_frame(sock)
            if frame is None:
                return  # closed as Kafka closes (the log says why); the server must live on
            api_key = type(value).__name__
            spec = messages.SPECS[api_key]
            if silent:
                assert _correlation_of(frame, 18, 0) == -1
                continue
            assert _correlation_of(frame, spec.api_key, version) == index
            probe = read_frame(sock)
            assert probe is not None and _correlation_of(probe, 18, 0) == -1
    finally:
        sock.close()
    assert broker.alive(), broker.log_text()[-3000:]


def test_after_fuzzing_no_handler_failed_and_data_is_safe(broker: ServedBroker) -> None:
    """Runs after the fuzz test (file order): the log names no handler failure."""
    assert broker.alive(), broker.log_text()[-3000:]
    failures = [line for line in broker.log_text().splitlines() if " failed" in line]
    assert not failures, "\n".join(failures[:20])
    finish(broker, BEFORE)
