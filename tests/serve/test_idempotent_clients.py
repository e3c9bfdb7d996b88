"""Idempotent producers of the real clients through ``seglog serve``.

kafka-python's default producer is idempotent (KIP-679 defaults); confluent-kafka and aiokafka
are with ``enable.idempotence`` / ``enable_idempotence``. Each first asks InitProducerId for a
producer id, then sends batches with producer id, epoch and sequence numbers, which the server
checks against the partition's producer state. Every record reads back once through every
client, and the segment files carry the producer id in each batch.
"""

from __future__ import annotations

import pytest
from serve_clients import CODECS, assert_all_read, every_reading, kcat_produce, produce_with
from serve_harness import ServeProcess
from serve_python_clients import kafka_python_produce
from serve_records import expected_records, sample_messages

from serve_wire import WireClient, metadata_request
from support.kafka_oracle import kafka_python_view

BASE_TS = 1_700_000_000_000


def _producer_ids(server: ServeProcess, topic: str) -> set[int]:
    ids: set[int] = set()
    for path in sorted((server.data_dir / f"{topic}-0").glob("*.log")):
        view = kafka_python_view(path.read_bytes())
        ids |= {batch.header["producer_id"] for batch in view.batches}
    return ids


@pytest.mark.parametrize("producer", ["confluent-kafka", "kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_producer_records_read_back_once(
    serve: ServeProcess, kcat: str, producer: str, codec: str
) -> None:
    messages = sample_messages(
        30, base_ts=BASE_TS, tag=f"idem-{producer}", null_headers=producer != "kafka-python"
    )
    topic = f"idem-{producer}-{codec}"
    produce_with(producer, kcat, serve.bootstrap, topic, messages, codec=codec, idempotent=True)

    assert_all_read(
        every_reading(kcat, serve.bootstrap, serve.data_dir, topic), expected_records(messages)
    )
    ids = _producer_ids(serve, topic)
    assert len(ids) == 1 and min(ids) >= 0, ids


def test_kafka_python_default_producer_is_idempotent(serve: ServeProcess, kcat: str) -> None:
    messages = sample_messages(10, base_ts=BASE_TS, tag="default", null_headers=False)
    offsets = kafka_python_produce(serve.bootstrap, "kp-default", messages)

    assert offsets == list(range(10))
    assert min(_producer_ids(serve, "kp-default")) >= 0


def test_producer_ids_never_repeat_across_restarts(serve: ServeProcess) -> None:
    from seglog.protocol import messages

    def new_id() -> int:
        with WireClient(serve.bootstrap) as wire:
            wire.call(3, 9, metadata_request("ids"))
            answer = wire.call(
                22, 4, messages.InitProducerIdRequest(transactional_id=None, producer_id=-1)
            )
        assert answer.error_code == 0
        return int(answer.producer_id)

    before = {new_id() for _ in range(3)}
    serve.restart()
    after = {new_id() for _ in range(3)}
    assert len(before | after) == 6


def test_kcat_idempotent_producer(serve: ServeProcess, kcat: str) -> None:
    lines = [(f"k{i}", f"value {i}") for i in range(25)]
    kcat_produce(
        kcat,
        serve.bootstrap,
        "kcat-idem",
        lines,
        codec="lz4",
        properties=["enable.idempotence=true"],
    )
    readings = every_reading(kcat, serve.bootstrap, serve.data_dir, "kcat-idem")
    stamped = readings["segment files (kafka-python)"]
    assert [(r[0], r[2], r[3]) for r in stamped] == [
        (i, k.encode(), v.encode()) for i, (k, v) in enumerate(lines)
    ]
    assert_all_read(readings, stamped)
    assert min(_producer_ids(serve, "kcat-idem")) >= 0
