"""Fetch long polls: when they wait and when they must not.

* A fetch with a partition in error (OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION) is
  answered at once, whatever its ``max_wait_ms``.
* A ``current_leader_epoch`` other than the log's is refused, as Kafka refuses it.
* An append wakes a long poll; a stopping server wakes every long poll, so SIGTERM is never
  held up by a client's ``fetch.max.wait.ms``.
"""

from __future__ import annotations

import threading
import time

from serve_harness import ServeProcess
from serve_python_clients import confluent_produce
from serve_records import TIMEOUT_S, Msg

from seglog.protocol import messages
from serve_wire import WireClient, metadata_request

UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_LEADER_EPOCH = 75
TEN_MINUTES_MS = 10 * 60 * 1000


def _fetch(partitions: list[tuple[str, int, int]], max_wait_ms: int) -> messages.FetchRequest:
    topics: dict[str, messages.FetchRequestFetchTopic] = {}
    for topic, partition, offset in partitions:
        entry = topics.setdefault(topic, messages.FetchRequestFetchTopic(topic=topic))
        entry.partitions.append(
            messages.FetchRequestFetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20
            )
        )
    return messages.FetchRequest(
        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=list(topics.values())
    )


def test_a_fetch_with_a_partition_error_is_answered_without_waiting(serve: ServeProcess) -> None:
    """Kafka answers a fetch at once when a partition's read fails (``errorReadingData``):
    the client learns of OFFSET_OUT_OF_RANGE or a missing partition now, not after
    ``max_wait_ms``. The request waits far longer than the socket allows, so only an
    immediate answer arrives at all."""
    confluent_produce(serve.bootstrap, "waits", [Msg(b"k", b"v")])
    wait_ms = TEN_MINUTES_MS
    with WireClient(serve.bootstrap, timeout_s=TIMEOUT_S) as wire:
        for version in (4, 12):
            out_of_range = wire.call(
                1, version, _fetch([("waits", 0, 1), ("waits", 0, 99)], wait_ms)
            )
            [topic] = out_of_range.responses
            assert [p.error_code for p in topic.partitions] == [0, 1]  # OFFSET_OUT_OF_RANGE
            missing = wire.call(1, version, _fetch([("waits", 0, 1), ("waits", 7, 0)], wait_ms))
            codes = [p.error_code for t in missing.responses for p in t.partitions]
            assert codes == [0, UNKNOWN_TOPIC_OR_PARTITION]


def _long_poll(bootstrap: str, offset: int, answers: list[object], sent: threading.Event) -> None:
    with WireClient(bootstrap, timeout_s=TIMEOUT_S) as wire:
        try:
            answers.append(wire.call(1, 12, _fetch([("waits", 0, offset)], TEN_MINUTES_MS), sent))
        except (ConnectionError, OSError) as error:
            answers.append(error)


def test_an_append_wakes_a_long_poll(serve: ServeProcess) -> None:
    confluent_produce(serve.bootstrap, "waits", [Msg(b"k", b"v0")])
    answers: list[object] = []
    sent = threading.Event()
    poll = threading.Thread(target=_long_poll, args=(serve.bootstrap, 1, answers, sent))
    poll.start()
    assert sent.wait(TIMEOUT_S)
    while poll.is_alive() and not answers:  # an append before the poll registered is seen too
        confluent_produce(serve.bootstrap, "waits", [Msg(b"k", b"v1")])
        poll.join(0.5)
    poll.join(TIMEOUT_S)
    [answer] = answers
    assert isinstance(answer, messages.FetchResponse), answer
    [partition] = answer.responses[0].partitions
    assert partition.error_code == 0 and partition.records


def test_a_stopping_server_answers_its_long_polls(serve: ServeProcess) -> None:
    confluent_produce(serve.bootstrap, "waits", [Msg(b"k", b"v0")])
    answers: list[object] = []
    sent = threading.Event()
    poll = threading.Thread(target=_long_poll, args=(serve.bootstrap, 1, answers, sent))
    poll.start()
    assert sent.wait(TIMEOUT_S)
    time.sleep(0.5)  # let the server read the request (an unread one is simply dropped)
    serve.stop()  # SIGTERM: must exit 0 well before the poll's ten minutes
    poll.join(TIMEOUT_S)
    [answer] = answers
    if isinstance(answer, messages.FetchResponse):
        [partition] = answer.responses[0].partitions
        assert partition.error_code == 0 and not partition.records


def test_a_current_leader_epoch_other_than_the_logs_is_refused(serve: ServeProcess) -> None:
    """Kafka checks Fetch's and ListOffsets' ``current_leader_epoch``: a newer one is
    UNKNOWN_LEADER_EPOCH (an older one FENCED_LEADER_EPOCH: see the corpus tests, whose logs
    have epochs above 0); -1 skips the check."""
    confluent_produce(serve.bootstrap, "epochs", [Msg(b"k", b"v")])
    with WireClient(serve.bootstrap, timeout_s=TIMEOUT_S) as wire:
        [topic] = wire.call(3, 12, metadata_request("epochs")).topics
        epoch = topic.partitions[0].leader_epoch
        assert epoch >= 0

        def fetch_code(current: int) -> int:
            request = _fetch([("epochs", 0, 0)], 0)
            request.topics[0].partitions[0].current_leader_epoch = current
            [partition] = wire.call(1, 12, request).responses[0].partitions
            assert (partition.error_code == 0) == (
                partition.records is not None and len(partition.records) > 0
            )
            return int(partition.error_code)

        def list_code(current: int) -> int:
            request = messages.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    messages.ListOffsetsRequestListOffsetsTopic(
                        name="epochs",
                        partitions=[
                            messages.ListOffsetsRequestListOffsetsPartition(
                                partition_index=0, current_leader_epoch=current, timestamp=-1
                            )
                        ],
                    )
                ],
            )
            return int(wire.call(2, 7, request).topics[0].partitions[0].error_code)

        for check in (fetch_code, list_code):
            assert check(-1) == 0 and check(epoch) == 0
            assert check(epoch + 1) == UNKNOWN_LEADER_EPOCH
