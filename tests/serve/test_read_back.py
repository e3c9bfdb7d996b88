"""Every record produced through ``seglog serve`` reads back identically through every client.

Each producer (kcat, confluent-kafka, kafka-python, aiokafka) writes the same messages (keys,
null keys, null values, repeated / empty / null headers, explicit timestamps) with each codec;
then kcat, confluent-kafka, kafka-python, aiokafka and ``seglog consume`` read them from the
earliest offset, from a timestamp and from the latest offset, and kafka-python decodes the
segment files on disk: every reading must equal the messages produced, offsets included. After a
SIGTERM and a restart on the same directory the records are still there, unchanged.
"""

from __future__ import annotations

import time

import pytest
from serve_clients import (
    CODECS,
    PRODUCERS,
    assert_all_read,
    disk_records,
    every_reading,
    produce_with,
)
from serve_harness import ServeFactory, ServeProcess
from serve_records import Msg, Rec, expected_records, sample_messages

BASE_TS = 1_700_000_000_000


def _stamped_by_client(
    expected: list[Rec], reading: list[Rec], before: int, after: int
) -> list[Rec]:
    """``expected`` with the timestamps the client chose (kcat stamps records itself), each
    checked to lie in the time the produce ran."""
    assert len(reading) == len(expected), (len(reading), len(expected))
    for record in reading:
        assert before <= record[1] <= after, (record, before, after)
    return [(e[0], r[1], *e[2:]) for e, r in zip(expected, reading, strict=True)]


def _produce(
    client: str, kcat: str, server: ServeProcess, topic: str, messages: list[Msg], codec: str
) -> list[Rec]:
    before = int(time.time() * 1000)
    produce_with(client, kcat, server.bootstrap, topic, messages, codec=codec)
    after = int(time.time() * 1000)
    expected = expected_records(messages)
    if client == "kcat":
        stamped = [(o, -1, k, v, h) for o, _, k, v, h in expected]
        expected = _stamped_by_client(stamped, disk_records(server.data_dir, topic), before, after)
    return expected


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", PRODUCERS)
def test_every_client_reads_back_what_each_client_produced(
    serve: ServeProcess, kcat: str, producer: str, codec: str
) -> None:
    null_headers = producer != "kafka-python"
    messages = sample_messages(
        40, base_ts=BASE_TS, tag=f"{producer}/{codec}", null_headers=null_headers
    )
    if producer == "kcat":
        messages = [Msg(m.key, m.value, m.headers) for m in messages]
    topic = f"t-{producer}-{codec}"
    expected = _produce(producer, kcat, serve, topic, messages, codec)

    assert_all_read(every_reading(kcat, serve.bootstrap, serve.data_dir, topic), expected)


def test_start_from_a_timestamp_and_from_the_latest_offset(serve: ServeProcess, kcat: str) -> None:
    messages = sample_messages(30, base_ts=BASE_TS, tag="ts")
    produce_with("confluent-kafka", kcat, serve.bootstrap, "times", messages, codec="lz4")
    expected = expected_records(messages)

    # A timestamp between two records: the first record at or after it.
    middle = BASE_TS + 17 * 10 - 3
    assert_all_read(
        every_reading(kcat, serve.bootstrap, serve.data_dir, "times", start=middle), expected[17:]
    )
    # A timestamp after every record: nothing.
    after_all = BASE_TS + 10_000
    assert_all_read(
        every_reading(kcat, serve.bootstrap, serve.data_dir, "times", start=after_all), []
    )
    # The latest offset: nothing now.
    assert_all_read(
        every_reading(kcat, serve.bootstrap, serve.data_dir, "times", start="latest"), []
    )


def test_records_survive_a_restart_on_the_same_directory(
    serve_factory: ServeFactory, kcat: str
) -> None:
    server = serve_factory()
    first = sample_messages(20, base_ts=BASE_TS, tag="before", null_headers=False)
    produce_with("kafka-python", kcat, server.bootstrap, "kept", first, codec="gzip")
    server.restart()
    second = sample_messages(20, base_ts=BASE_TS + 1000, tag="after")
    produce_with("aiokafka", kcat, server.bootstrap, "kept", second, codec="zstd")

    expected = expected_records(first + second)
    assert_all_read(every_reading(kcat, server.bootstrap, server.data_dir, "kept"), expected)
    server.stop()
    assert disk_records(server.data_dir, "kept") == expected
