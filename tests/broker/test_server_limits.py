"""The server edge against hostile clients: a real ``seglog serve`` process, raw sockets.

Each test starts the server with the limits it needs, misbehaves on raw sockets (oversized,
truncated, abandoned, garbage, unknown or refused requests, idle floods), and checks what Kafka
does: the offending connection is answered or closed, and nothing else is disturbed. After each:
the server is still up, a well-behaved kafka-python client produces and reads back all its data,
SIGTERM stops the server with status 0, and the directory carries the clean-shutdown marker and
reads back through seglog's API.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from server_harness import (
    CLIENT_TIMEOUT_S,
    SRC,
    TOPIC,
    api_versions,
    closed_by_server,
    connect,
    finish,
    raw_frame,
    read_frame,
    read_response,
    reopen_values,
    request_frame,
    round_trip,
    served_broker,
    values,
)

from seglog.broker.app import all_handlers
from seglog.format.builder import build_batches
from seglog.format.records import Record
from seglog.protocol import messages


def test_oversized_size_prefix_closes_only_that_connection(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"socket.request.max.bytes": "4096"}) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        bystander = connect(broker)
        api_versions(bystander, 1)
        for size in (4097, 2**31 - 1, -1, -(2**31)):
            hostile = connect(broker)
            hostile.sendall(struct.pack(">i", size) + b"\x00" * 16)
            assert closed_by_server(hostile), f"size prefix {size} was not refused"
            hostile.close()
        api_versions(bystander, 2)  # the other connection never noticed
        bystander.close()
        at_limit = connect(broker)  # a request of exactly socket.request.max.bytes is served
        frame = _frame_of_size(4096)
        at_limit.sendall(frame)
        assert read_response(at_limit, 18, 3)[0] == 9
        at_limit.close()
        finish(broker, before)


def _frame_of_size(size: int) -> bytes:
    """An ApiVersions v3 request frame whose payload (after the size prefix) is ``size`` bytes."""
    for length in range(size, 0, -1):
        body = messages.ApiVersionsRequest(client_software_name="a" * length)
        frame = request_frame(body, 3, 9)
        if len(frame) - 4 == size:
            return frame
    raise AssertionError(f"no ApiVersions request of {size} bytes")


def test_truncated_frames_and_clients_vanishing_mid_request(tmp_path: Path) -> None:
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        batch = build_batches([Record(0, 1_700_000_000_000, b"k", b"half-sent")])[0]
        produce = messages.ProduceRequest(
            acks=1,
            timeout_ms=5000,
            topic_data=[
                messages.ProduceRequestTopicProduceData(
                    name=TOPIC,
                    partition_data=[messages.ProduceRequestPartitionProduceData(0, batch)],
                )
            ],
        )
        frame = request_frame(produce, 9, 7)
        for cut in (2, 4, 10, len(frame) // 2, len(frame) - 1):
            # EOF after part of a frame: the server sees the half request, then the end
            sock = connect(broker)
            sock.sendall(frame[:cut])
            sock.shutdown(socket.SHUT_WR)
            assert closed_by_server(sock)
            sock.close()
            # the same, the socket reset (SO_LINGER 0) instead of closed
            sock = connect(broker)
            sock.sendall(frame[:cut])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        assert broker.alive()
        round_trip(broker, TOPIC, values("between"))
        finish(broker, before)
        assert b"half-sent" not in reopen_values(broker.data_dir, TOPIC)


KILLED_PRODUCER = """
import sys
from kafka import KafkaProducer
producer = KafkaProducer(bootstrap_servers=sys.argv[1], acks=1, enable_idempotence=False,
                         linger_ms=1)
index = 0
def acked(i):
    return lambda metadata: print(i, flush=True)
while True:
    producer.send(sys.argv[2], value=b"killed-%d" % index, partition=0).add_callback(acked(index))
    index += 1
    if index % 50 == 0:
        producer.flush()
"""


def test_producer_process_killed_while_producing(tmp_path: Path) -> None:
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED_PRODUCER, broker.bootstrap, TOPIC],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        acked: list[int] = []
        try:
            assert child.stdout is not None
            while len(acked) < 300:
                line = child.stdout.readline()
                assert line, "the producer child ended early"
                acked.append(int(line))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=CLIENT_TIMEOUT_S)
            if child.stdout is not None:
                child.stdout.close()
        finish(broker, before)
        stored = reopen_values(broker.data_dir, TOPIC)
        for index in acked:
            assert b"killed-%d" % index in stored, f"acknowledged record {index} is lost"


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(9999, 0), (-1, 0), (32767, 3), (3, 99), (3, -1), (2, 0), (1, 3), (18, -1)],
    ids=[
        "key-9999",
        "key-minus-1",
        "key-32767",
        "metadata-v99",
        "metadata-v-1",
        "listoffsets-v0",
        "fetch-v3",
        "apiversions-v-1",
    ],
)
def test_unknown_api_or_unsupported_version_closes(
    tmp_path: Path, api_key: int, version: int
) -> None:
    """Kafka closes the connection; the next client is served as if nothing happened."""
    served = {h.api_key: h for h in all_handlers()}
    handler = served.get(api_key)
    assert handler is None or not handler.serves(version), "the case must be refused"
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        sock = connect(broker)
        sock.sendall(raw_frame(api_key, version, 5, b"\x00" * 8))
        assert closed_by_server(sock)
        sock.close()
        finish(broker, before)


def test_api_versions_above_v4_answers_v0_error(tmp_path: Path) -> None:
    with served_broker(tmp_path) as broker:
        sock = connect(broker)
        for correlation, version in enumerate((5, 9, 127, 32767), start=1):
            # header v2 (every ApiVersions version from v3 is flexible); the body is not read
            payload = struct.pack(">hhih", 18, version, correlation, 2) + b"me\x00" + b"\x07junk"
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            got, body = read_response(sock, 18, 0)
            assert got == correlation
            assert body.error_code == 35  # UNSUPPORTED_VERSION
            assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [
                (18, 0, 4)
            ]
        response = api_versions(sock, 99, version=3)  # the retry a client makes
        assert response.error_code == 0
        advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert advertised[0][0] == 0  # Produce advertised from v0 (librdkafka's codec check)
        sock.close()
        before = values("before")
        round_trip(broker, TOPIC, before)
        finish(broker, before)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_garbage_bytes_close_the_connection(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    with served_broker(tmp_path, {"socket.request.max.bytes": "65536"}) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        bystander = connect(broker)
        api_versions(bystander, 1)
        for attempt in range(28):
            # whole frames of noise (too short for a header first), refused as they are; or
            # noise in place of the size prefix too, then EOF
            size = attempt if attempt < 8 else rng.randrange(8, 2000)
            framed = attempt < 8 or rng.random() < 0.7
            garbage = rng.randbytes(size)
            sock = connect(broker)
            if framed:
                sock.sendall(struct.pack(">i", size) + garbage)
            else:
                sock.sendall(garbage)
                sock.shutdown(socket.SHUT_WR)
            assert closed_by_server(sock)
            sock.close()
        api_versions(bystander, 2)
        bystander.close()
        finish(broker, before)


def _raise_open_files(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.fail(f"RLIMIT_NOFILE hard limit {hard} is below the {needed} this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_thousand_idle_connections_while_a_client_works(tmp_path: Path) -> None:
    _raise_open_files(2500)  # before the server starts: it inherits the limit
    with served_broker(tmp_path) as broker:
        idle = [connect(broker) for _ in range(1000)]
        try:
            api_versions(idle[-1], 1)  # the last one was accepted, so all the others were
            before = values("before", 200)
            round_trip(broker, TOPIC, before)
            for index, sock in enumerate(idle[::97]):
                api_versions(sock, 10 + index)  # idle ones still served
        finally:
            for sock in idle:
                sock.close()
        finish(broker, before)


def test_idle_connections_are_closed(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"connections.max.idle.ms": "2500"}) as broker:
        silent = connect(broker)
        half_frame = connect(broker)
        half_frame.sendall(raw_frame(18, 3, 1, b"\x00" * 10)[:9])  # then nothing more
        chatty = connect(broker)
        deadline = time.monotonic() + 5.0
        correlation = 0
        while time.monotonic() < deadline:  # a request every 0.1 s: never idle for 2.5 s
            correlation += 1
            api_versions(chatty, correlation)
            time.sleep(0.1)
        assert closed_by_server(silent)
        assert closed_by_server(half_frame)
        api_versions(chatty, correlation + 1)
        for sock in (silent, half_frame, chatty):
            sock.close()
        before = values("before")
        round_trip(broker, TOPIC, before)
        finish(broker, before)


def test_max_connections_refuses_extra_connections(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"max.connections": "4"}) as broker:
        held = [connect(broker) for _ in range(4)]
        for index, sock in enumerate(held):
            api_versions(sock, index)
        extra = connect(broker)  # the TCP handshake completes; the server closes it at once
        assert closed_by_server(extra)
        extra.close()
        for index, sock in enumerate(held):
            api_versions(sock, 10 + index)  # the held ones are untouched
        for sock in held:
            sock.close()
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while True:  # slots come back once the server has seen the closes
            sock = connect(broker)
            try:
                api_versions(sock, 99)
                break
            except AssertionError:
                assert time.monotonic() < deadline, "no slot came back after closing"
                time.sleep(0.1)
            finally:
                sock.close()
        before = values("before")
        round_trip(broker, TOPIC, before)
        finish(broker, before)


def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        metadata = messages.MetadataRequest(
            topics=[messages.MetadataRequestMetadataRequestTopic(name=TOPIC)]
        )
        offsets = messages.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                messages.ListOffsetsRequestListOffsetsTopic(
                    name=TOPIC,
                    partitions=[messages.ListOffsetsRequestListOffsetsPartition(0, timestamp=-1)],
                )
            ],
        )
        versions_body = messages.ApiVersionsRequest()
        plan = [(versions_body, 18, 0), (metadata, 3, 12), (offsets, 2, 7), (metadata, 3, 1)]
        sent = [plan[i % len(plan)] for i in range(60)]
        sock = connect(broker)
        sock.sendall(b"".join(request_frame(b, v, 1000 + i) for i, (b, _, v) in enumerate(sent)))
        for index, (_, api_key, version) in enumerate(sent):
            correlation, body = read_response(sock, api_key, version)
            assert correlation == 1000 + index
            if api_key == 2:
                assert body.topics[0].partitions[0].offset == len(before)
        sock.close()
        finish(broker, before)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_is_refused_by_closing(tmp_path: Path, version: int) -> None:
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        sock = connect(broker)
        # v0-2 bodies: acks int16, timeout int32, one topic, one partition, a message set
        body = struct.pack(">hi", 1, 5000) + struct.pack(">ih", 1, len(TOPIC)) + TOPIC.encode()
        body += struct.pack(">iii", 1, 0, 0)
        sock.sendall(raw_frame(0, version, 3, body))
        assert closed_by_server(sock)
        sock.close()
        finish(broker, before)


def test_acks_zero_gets_no_response(tmp_path: Path) -> None:
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        records = [Record(i, 1_700_000_000_000 + i, None, b"acks0-%d" % i) for i in range(5)]
        batch = build_batches(records)[0]
        produce = messages.ProduceRequest(
            acks=0,
            timeout_ms=5000,
            topic_data=[
                messages.ProduceRequestTopicProduceData(
                    name=TOPIC,
                    partition_data=[messages.ProduceRequestPartitionProduceData(0, batch)],
                )
            ],
        )
        sock = connect(broker)
        sock.sendall(
            request_frame(produce, 9, 41) + request_frame(messages.ApiVersionsRequest(), 0, 42)
        )
        correlation, _ = read_response(sock, 18, 0)
        assert correlation == 42  # the first answer is the ApiVersions one: none for acks=0
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            read_frame(sock)
        sock.close()
        finish(broker, before)
        stored = reopen_values(broker.data_dir, TOPIC)
        assert [v for v in stored if v is not None and v.startswith(b"acks0-")] == [
            r.value for r in records
        ]
