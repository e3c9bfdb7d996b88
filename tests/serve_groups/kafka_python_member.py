"""A kafka-python group member as a child process: ``python kafka_python_member.py BOOTSTRAP
GROUP TOPIC SESSION_MS [MAX_POLL_INTERVAL_MS]`` (the latter is its rebalance timeout). It polls
forever and prints its assignment (partition numbers, JSON)
on stdout each time it changes, so a test can watch it and then kill it with SIGKILL."""

from __future__ import annotations

import json
import sys

from kafka import KafkaConsumer


def main() -> None:
    bootstrap, group, topic, session_ms = sys.argv[1:5]
    max_poll_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 300_000
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=int(session_ms),
        heartbeat_interval_ms=100,
        max_poll_interval_ms=max_poll_ms,
    )
    shown: list[int] | None = None
    while True:
        consumer.poll(timeout_ms=1000)  # see POLL_MS in test_groups_kafka_python.py
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != shown:
            shown = now
            print(json.dumps(now), flush=True)


if __name__ == "__main__":
    main()
