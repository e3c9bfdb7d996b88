"""Produce refusals and idempotent deduplication through ``seglog serve``, as clients see them.

* A keyless record to a ``cleanup.policy=compact`` topic: INVALID_RECORD (87), with the
  record's index in ``record_errors`` (Produce v8+); nothing of the batch is written.
* A batch above the topic's ``max.message.bytes``: MESSAGE_TOO_LARGE (10); nothing written.
* The same idempotent batch sent twice (a producer's retry after a lost answer): the second
  answer carries the original base offset and the log holds the records once.
"""

from __future__ import annotations

import pytest
from serve_clients import create_topic, disk_records, seglog_consume
from serve_harness import ServeFactory, ServeProcess
from serve_python_clients import confluent_read, kafka_python_produce
from serve_records import Msg

from serve_wire import WireClient, build_batch, idempotent_batch, metadata_request, produce_request

INVALID_RECORD = 87
MESSAGE_TOO_LARGE = 10
INVALID_PRODUCER_ID_MAPPING = 49
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TS = 1_700_000_000_000


def _confluent_errors(bootstrap: str, topic: str, messages: list[Msg]) -> list[int]:
    """Produce through confluent-kafka; the error code of each delivery (0: delivered)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.max.bytes": 10_000_000, "retries": 0}
    )
    codes: list[int] = []
    for m in messages:
        producer.produce(
            topic,
            key=m.key,
            value=m.value,
            partition=0,
            on_delivery=lambda err, _msg: codes.append(0 if err is None else err.code()),
        )
    assert producer.flush(30) == 0
    return codes


@pytest.fixture
def compacted(serve_factory: ServeFactory) -> ServeProcess:
    server = serve_factory(start=False)
    create_topic(server.data_dir, "compacted", "cleanup.policy=compact")
    return server.start()


def test_keyless_record_to_a_compacted_topic_is_invalid_record(compacted: ServeProcess) -> None:
    codes = _confluent_errors(compacted.bootstrap, "compacted", [Msg(None, b"no key")])
    assert codes == [INVALID_RECORD]

    # The raw answer (Produce v9) names the record: the second of a batch of three.
    batch = build_batch([b"k1", None, b"k3"], [b"v1", b"v2", b"v3"], TS)
    with WireClient(compacted.bootstrap) as wire:
        answer = wire.call(0, 9, produce_request("compacted", 0, batch))
    [partition] = answer.responses[0].partition_responses
    assert partition.error_code == INVALID_RECORD
    assert [e.batch_index for e in partition.record_errors] == [1]
    assert partition.error_message

    # Nothing was written: a keyed record then lands at offset 0.
    assert _confluent_errors(compacted.bootstrap, "compacted", [Msg(b"k", b"v")]) == [0]
    assert [(r[0], r[2], r[3]) for r in seglog_consume(compacted.data_dir, "compacted")] == [
        (0, b"k", b"v")
    ]


def test_a_batch_above_max_message_bytes_is_message_too_large(
    serve_factory: ServeFactory,
) -> None:
    server = serve_factory(start=False)
    create_topic(server.data_dir, "small", "max.message.bytes=4096")
    server.start()

    codes = _confluent_errors(server.bootstrap, "small", [Msg(b"big", b"x" * 20_000)])
    assert codes == [MESSAGE_TOO_LARGE]

    from kafka.errors import MessageSizeTooLargeError

    with pytest.raises(MessageSizeTooLargeError):
        kafka_python_produce(
            server.bootstrap,
            "small",
            [Msg(b"big", b"y" * 20_000)],
            enable_idempotence=False,
            max_request_size=10_000_000,
            retries=0,
        )
    assert _confluent_errors(server.bootstrap, "small", [Msg(b"fits", b"z" * 100)]) == [0]
    server.stop()
    assert [(r[0], r[2]) for r in disk_records(server.data_dir, "small")] == [(0, b"fits")]


def test_a_resent_idempotent_batch_is_answered_with_its_original_offset(
    serve: ServeProcess,
) -> None:
    producer_id, epoch = 4242, 0
    first = idempotent_batch(producer_id, epoch, 0, [b"a0", b"a1", b"a2"], TS)
    second = idempotent_batch(producer_id, epoch, 3, [b"b0", b"b1"], TS + 1)
    with WireClient(serve.bootstrap) as wire:
        topic = wire.call(3, 9, metadata_request("idem")).topics[0]
        assert topic.error_code == 0, topic

        def send(batch: bytes) -> tuple[int, int]:
            answer = wire.call(0, 9, produce_request("idem", 0, batch))
            [partition] = answer.responses[0].partition_responses
            return partition.error_code, partition.base_offset

        assert send(first) == (0, 0)
        assert send(second) == (0, 3)
        assert send(first) == (0, 0)  # a retry of the first batch: its original offset
        assert send(second) == (0, 3)
        third = idempotent_batch(producer_id, epoch, 5, [b"c0"], TS + 2)
        assert send(third) == (0, 5)

    serve.stop()
    stored = disk_records(serve.data_dir, "idem")
    assert [(r[0], r[3]) for r in stored] == list(
        enumerate([b"a0", b"a1", b"a2", b"b0", b"b1", b"c0"])
    )


@pytest.mark.parametrize(
    ("transactional_id", "codes"),
    [
        (None, [TRANSACTIONAL_ID_AUTHORIZATION_FAILED] * 2),  # Kafka refuses the whole request
        # no InitProducerId made this producer id the id's: Kafka's verification answer
        ("txn", [INVALID_PRODUCER_ID_MAPPING, 0]),
    ],
)
def test_transactional_batches_outside_a_transaction_are_refused(
    serve: ServeProcess, transactional_id: str | None, codes: list[int]
) -> None:
    """A transactional batch the coordinator does not know would open a transaction no
    marker ever closes: it would pin the last stable offset and stall every read_committed
    consumer (librdkafka's default) of the partition forever."""
    txn = build_batch(
        [b"k"], [b"in txn"], TS, producer_id=77, epoch=0, base_sequence=0, transactional=True
    )
    plain = build_batch([b"k"], [b"plain"], TS)
    with WireClient(serve.bootstrap) as wire:
        wire.call(3, 9, metadata_request("txn"))
        wire.call(3, 9, metadata_request("other"))
        request = produce_request("txn", 0, txn, transactional_id=transactional_id)
        request.topic_data.append(produce_request("other", 0, plain).topic_data[0])
        answer = wire.call(0, 9, request)
    assert [p.error_code for t in answer.responses for p in t.partition_responses] == codes

    messages = [Msg(b"k", f"v{i}".encode()) for i in range(3)]
    _confluent_errors(serve.bootstrap, "txn", messages)
    assert [r[3] for r in confluent_read(serve.bootstrap, "txn")] == [m.value for m in messages]
    other = [r[3] for r in seglog_consume(serve.data_dir, "other")]
    assert other == ([b"plain"] if codes[1] == 0 else [])


def test_an_acks_zero_refusal_closes_the_connection(compacted: ServeProcess) -> None:
    """acks=0 gets no answer, so Kafka closes the connection when a partition is refused:
    the producer notices, refreshes its metadata and reconnects. Accepted ones stay open."""
    keyless = build_batch([None], [b"v"], TS)
    keyed = build_batch([b"k"], [b"v"], TS)
    with WireClient(compacted.bootstrap, timeout_s=2.0) as wire:
        wire.send(0, 9, produce_request("compacted", 0, keyed, acks=0))
        [topic] = wire.call(3, 9, metadata_request("compacted")).topics  # still open
        assert topic.error_code == 0
        wire.send(0, 9, produce_request("compacted", 0, keyless, acks=0))
        assert wire.closed_by_peer()
    assert [(r[0], r[2]) for r in seglog_consume(compacted.data_dir, "compacted")] == [(0, b"k")]
