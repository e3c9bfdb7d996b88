"""Requests that wait, against a real ``seglog serve`` process: the request queue, shutdown.

``queued.max.requests`` bounds the requests being worked on at once; it must never turn into a
deadlock: a Fetch long poll parked until an append (Kafka keeps it in purgatory, outside the
request queue) must not hold the only slot against the Produce that would wake it, and many
connections pipelining through one slot are all answered, each in its own request order.

Shutdown (SIGTERM) answers what is in flight without waiting on clients: a parked long poll is
answered at once with what there is, and a client that never reads its responses is cut off
after a grace period; either way the exit status is 0 and the data is all there.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from server_harness import (
    CLIENT_TIMEOUT_S,
    TOPIC,
    ServedBroker,
    api_versions,
    connect,
    finish,
    read_response,
    reopen_values,
    request_frame,
    round_trip,
    served_broker,
    values,
)

from seglog.format.builder import build_batches
from seglog.format.reader import read_batches
from seglog.format.records import Record
from seglog.protocol import messages


def _produce(value: bytes, acks: int = 1) -> messages.ProduceRequest:
    batch = build_batches([Record(0, 1_700_000_000_000, None, value)])[0]
    partition = messages.ProduceRequestPartitionProduceData(index=0, records=batch)
    return messages.ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[messages.ProduceRequestTopicProduceData(TOPIC, partition_data=[partition])],
    )


def _long_poll(offset: int, max_wait_ms: int) -> messages.FetchRequest:
    partition = messages.FetchRequestFetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    return messages.FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[messages.FetchRequestFetchTopic(topic=TOPIC, partitions=[partition])],
    )


def test_a_parked_long_poll_does_not_hold_the_only_request_slot(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"queued.max.requests": "1"}) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        poller = connect(broker)
        # waits for data far longer than the producer's socket timeout
        poller.sendall(request_frame(_long_poll(len(before), 600_000), 12, 1))
        producer = connect(broker)
        api_versions(producer, 2)  # served while the poll is parked
        producer.sendall(request_frame(_produce(b"wakes-the-poll"), 9, 3))
        correlation, produced = read_response(producer, 0, 9)
        assert correlation == 3
        partition = produced.responses[0].partition_responses[0]
        assert (partition.error_code, partition.base_offset) == (0, len(before))
        correlation, fetched = read_response(poller, 1, 12)
        assert correlation == 1
        records = fetched.responses[0].partitions[0].records
        batches, _ = read_batches(bytes(records))
        assert [r.value for b in batches for r in b.records()] == [b"wakes-the-poll"]
        poller.close()
        producer.close()
        finish(broker, [*before, b"wakes-the-poll"])


def test_many_pipelining_connections_through_one_slot(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"queued.max.requests": "1"}) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        failures: list[str] = []

        def client(number: int) -> None:
            try:
                sock = connect(broker)
                frames = [request_frame(_produce(b"c%d-%d" % (number, i)), 9, i) for i in range(15)]
                sock.sendall(b"".join(frames))
                for i in range(15):
                    correlation, body = read_response(sock, 0, 9)
                    assert correlation == i
                    assert body.responses[0].partition_responses[0].error_code == 0
                sock.close()
            except Exception as error:  # reported by the main thread
                failures.append(f"client {number}: {error!r}")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures
        assert not any(thread.is_alive() for thread in threads)
        produced = [b"c%d-%d" % (n, i) for n in range(12) for i in range(15)]
        finish(broker, [*before, *produced])


def test_sigterm_answers_a_parked_long_poll_and_stops(tmp_path: Path) -> None:
    """Shutdown answers requests in flight: a long poll returns what there is, at once."""
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        poller = connect(broker)
        poller.sendall(request_frame(_long_poll(len(before), 600_000), 12, 1))
        api_versions(connect(broker), 2)  # the poll has been read and parked by now
        broker.stop()  # SIGTERM, exit status 0 (within the harness's start-up timeout)
        correlation, fetched = read_response(poller, 1, 12)
        assert correlation == 1
        assert fetched.responses[0].partitions[0].error_code == 0
        assert not fetched.responses[0].partitions[0].records
        assert reopen_values(broker.data_dir, TOPIC)[: len(before)] == before


def _fill_with_unread_fetches(broker: ServedBroker) -> tuple[list[bytes], socket.socket]:
    """Ten 100 kB records, then a connection that pipelines 40 whole-log Fetches (~40 MiB of
    responses, far more than the socket buffers hold) and reads nothing."""
    sock = connect(broker)
    big = [bytes([65 + i]) * 100_000 for i in range(10)]
    for index, value in enumerate(big):
        sock.sendall(request_frame(_produce(value), 9, index))
        assert read_response(sock, 0, 9)[1].responses[0].partition_responses[0].error_code == 0
    sock.close()
    stuck = connect(broker)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    whole_log = messages.FetchRequestFetchPartition(partition_max_bytes=1 << 22)
    fetch = messages.FetchRequest(
        max_wait_ms=0,
        max_bytes=1 << 22,
        topics=[messages.FetchRequestFetchTopic(topic=TOPIC, partitions=[whole_log])],
    )
    stuck.sendall(b"".join(request_frame(fetch, 12, i) for i in range(40)))
    return big, stuck


def test_a_client_not_reading_its_responses_is_cut_off_when_idle(tmp_path: Path) -> None:
    with served_broker(tmp_path, {"connections.max.idle.ms": "2500"}) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        big, stuck = _fill_with_unread_fetches(broker)
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while "does not read its responses" not in broker.log_text():
            assert time.monotonic() < deadline, "the stuck connection was never cut off"
            time.sleep(0.2)
        stuck.settimeout(CLIENT_TIMEOUT_S)
        with pytest.raises(ConnectionResetError):  # reset, not a slow flush of unread bytes
            while stuck.recv(1 << 16):
                pass
        stuck.close()
        finish(broker, [*before, *big])


def test_sigterm_with_a_client_that_never_reads_its_responses(tmp_path: Path) -> None:
    """A connection stuck writing to a client that does not read must not stall shutdown."""
    with served_broker(tmp_path) as broker:
        before = values("before")
        round_trip(broker, TOPIC, before)
        big, stuck = _fill_with_unread_fetches(broker)
        round_trip(broker, TOPIC, values("meanwhile"))  # others are not held up
        broker.stop()
        stuck.close()
        stored = reopen_values(broker.data_dir, TOPIC)
        assert all(value in stored for value in [*before, *big, *values("meanwhile")])
