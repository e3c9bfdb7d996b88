"""``seglog consumer-groups --describe --group G`` beside a running ``seglog serve`` shows the
lag a Kafka client computes (high watermark minus committed offset), for an active member
(its member id and host from the stored assignment) and after it left (Empty group)."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
from group_server import PARTITIONS, GroupServer, seglog, wait_for
from group_workload import produce_numbered

COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
COMMITTED = {0: 10, 1: 15, 2: 20, 3: 25}


def described(server: GroupServer, group: str) -> tuple[dict[tuple[str, int], list[str]], str]:
    """The rows of ``consumer-groups --describe`` by (topic, partition), and stderr."""
    done = seglog(server.data_dir, "consumer-groups", "--describe", "--group", group)
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert header[: len(COLUMNS)] == COLUMNS, header
    table = {(row[1], int(row[2])): row for row in rows}
    assert all(row[0] == group for row in rows)
    return table, done.stderr


def client_lag(consumer: Consumer, topic: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(committed, high watermark, lag) per partition, as the client sees them."""
    wanted = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    seen = {}
    for tp in consumer.committed(wanted, timeout=10):
        _, high = consumer.get_watermark_offsets(tp, timeout=10)
        seen[(topic, tp.partition)] = (tp.offset, high, high - tp.offset)
    return seen


def cli_lag(table: dict[tuple[str, int], list[str]]) -> dict[tuple[str, int], tuple[int, ...]]:
    return {key: (int(row[3]), int(row[4]), int(row[5])) for key, row in table.items()}


def test_describe_shows_the_lag_the_client_sees(
    server: GroupServer, topic: str, group: str
) -> None:
    member = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 200,
        }
    )
    member.subscribe([topic])
    read: list[object] = []
    wait_for(
        "the member to read the topic",
        lambda: read.extend(member.consume(100, 0.05)) or len(read) >= 100,
    )
    member.commit(
        offsets=[TopicPartition(topic, p, o) for p, o in COMMITTED.items()], asynchronous=False
    )
    seen = client_lag(member, topic)
    assert seen == {(topic, p): (o, 25, 25 - o) for p, o in COMMITTED.items()}
    table, _ = described(server, group)
    assert cli_lag(table) == seen
    assert {row[6] for row in table.values()} == {member.memberid()}
    assert {row[7] for row in table.values()} == {"/127.0.0.1"}
    member.close()

    produce_numbered(server.bootstrap, topic, range(25, 30), create=False)
    viewer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group})
    seen = client_lag(viewer, topic)
    viewer.close()
    assert seen == {(topic, p): (o, 30, 30 - o) for p, o in COMMITTED.items()}
    table, stderr = described(server, group)
    assert cli_lag(table) == seen
    assert f"Consumer group '{group}' has no active members." in stderr
