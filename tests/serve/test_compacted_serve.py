"""A compacted topic produced through the wire, cleaned by the server's cleaner while a client
keeps consuming, and payloads no text tool could carry.

The topic rolls tiny segments and is cleanable at once, so the cleaner (run by ``seglog serve``
as by ``seglog maintain``) rewrites it while records arrive. A consumer that started at the
beginning and keeps reading never sees an offset twice or out of order, and ends with the
latest value of every key; afterwards every client and ``seglog consume`` read the same
compacted log, and kafka-python decodes its files.
"""

from __future__ import annotations

import threading
import time

from serve_clients import create_topic, disk_records, seglog_consume
from serve_harness import ServeFactory, ServeProcess
from serve_python_clients import (
    aiokafka_read,
    confluent_produce,
    confluent_read,
    kafka_python_read,
)
from serve_records import TIMEOUT_S, Msg, Rec, expected_records, headers_of

from serve_wire import WireClient, build_batch, produce_request

KEYS = 20
ROUNDS = 30
INVALID_TOPIC_EXCEPTION = 17


def _follow(bootstrap: str, stop: threading.Event, out: list[Rec]) -> None:
    """A confluent-kafka consumer reading ``compacted`` from the beginning until ``stop``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition("compacted", 0, OFFSET_BEGINNING)])
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            out.append(
                (
                    message.offset(),
                    message.timestamp()[1],
                    message.key(),
                    message.value(),
                    headers_of(message.headers()),
                )
            )
    finally:
        consumer.close()


def _settled(server: ServeProcess) -> list[Rec]:
    """The topic once the cleaner has nothing left to do (the same reading three times over
    a few cleaner backoffs: only the active segment is dirty then)."""
    previous: list[Rec] = []
    same = 0
    deadline = time.monotonic() + 4 * TIMEOUT_S
    while same < 3:
        assert time.monotonic() < deadline, "the cleaner never settled"
        time.sleep(0.5)
        reading = seglog_consume(server.data_dir, "compacted")
        same = same + 1 if reading == previous else 0
        previous = reading
    return previous


def test_a_compacted_topic_is_cleaned_while_a_client_consumes(
    serve_factory: ServeFactory,
) -> None:
    server = serve_factory({"log.cleaner.backoff.ms": "50"}, start=False)
    create_topic(
        server.data_dir,
        "compacted",
        "cleanup.policy=compact",
        "segment.bytes=2048",
        "min.cleanable.dirty.ratio=0.01",
        "delete.retention.ms=0",
    )
    server.start()
    seen: list[Rec] = []
    stop = threading.Event()
    follower = threading.Thread(target=_follow, args=(server.bootstrap, stop, seen))
    follower.start()
    latest: dict[bytes, bytes] = {}
    try:
        for round_number in range(ROUNDS):
            batch = [
                Msg(f"key-{k}".encode(), f"round {round_number} of key {k}".encode())
                for k in range(KEYS)
            ]
            confluent_produce(server.bootstrap, "compacted", batch)
            latest.update({m.key: m.value for m in batch if m.key and m.value})
        produced = ROUNDS * KEYS
        deadline = time.monotonic() + 4 * TIMEOUT_S
        while len(seglog_consume(server.data_dir, "compacted")) >= produced:
            assert time.monotonic() < deadline, "the cleaner never compacted the topic"
            time.sleep(0.5)
        while (not seen or seen[-1][0] < produced - 1) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        follower.join(TIMEOUT_S)

    offsets = [r[0] for r in seen]
    assert offsets == sorted(set(offsets)) and offsets[-1] == produced - 1
    assert {r[2]: r[3] for r in seen} == latest

    compacted = _settled(server)
    assert len(compacted) < produced and {r[2]: r[3] for r in compacted} == latest
    assert confluent_read(server.bootstrap, "compacted") == compacted
    assert kafka_python_read(server.bootstrap, "compacted") == compacted
    assert aiokafka_read(server.bootstrap, "compacted") == compacted
    server.stop()
    assert disk_records(server.data_dir, "compacted") == compacted


def test_binary_keys_values_and_headers_read_back(serve: ServeProcess) -> None:
    every_byte = bytes(range(256))
    messages = [
        Msg(every_byte, every_byte[::-1], (("bin", every_byte), ("", b""))),
        Msg(b"", b"", ()),  # empty, not null
        Msg(b"\x00", None, (("h\u00e9", b"\xff\xfe"),)),
        Msg(None, b"\x80" * 3000, ()),
    ]
    confluent_produce(serve.bootstrap, "binary", messages)
    expected = [(o, -1, *r[2:]) for o, r in enumerate(expected_records(messages))]
    stamped = [
        (r[0], got[1], *r[2:])
        for r, got in zip(expected, seglog_consume(serve.data_dir, "binary"), strict=True)
    ]

    assert seglog_consume(serve.data_dir, "binary") == stamped
    assert confluent_read(serve.bootstrap, "binary") == stamped
    assert kafka_python_read(serve.bootstrap, "binary") == stamped
    assert aiokafka_read(serve.bootstrap, "binary") == stamped
    assert disk_records(serve.data_dir, "binary") == stamped


def test_produce_to_an_internal_topic_is_refused(serve: ServeProcess) -> None:
    with WireClient(serve.bootstrap) as wire:
        answer = wire.call(
            0, 9, produce_request("__consumer_offsets", 0, build_batch([b"k"], [b"v"], 0))
        )
    assert answer.responses[0].partition_responses[0].error_code == INVALID_TOPIC_EXCEPTION
