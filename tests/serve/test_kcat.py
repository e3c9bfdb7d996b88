"""kcat (librdkafka 2.0, the old non-flexible request versions) against ``seglog serve``.

``-L`` lists the broker at its advertised address and the auto-created topics with their
partitions; ``-Q`` finds offsets by timestamp (and the -1 / -2 sentinels) for several
partitions in one request; ``-C -o end -e`` stops at the log end offset; ``-P`` with the
partitioner spreads keyed records over a three-partition topic and each partition reads back.
"""

from __future__ import annotations

import json
import re
import subprocess

from serve_clients import (
    assert_all_read,
    every_reading,
    kcat_produce,
    kcat_read,
)
from serve_harness import ServeFactory, ServeProcess
from serve_records import TIMEOUT_S


def _kcat(kcat: str, server: ServeProcess, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [kcat, "-b", server.bootstrap, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_metadata_lists_the_broker_and_the_topics(serve_factory: ServeFactory, kcat: str) -> None:
    server = serve_factory({"num.partitions": "3"})
    kcat_produce(kcat, server.bootstrap, "listed", [("k", "v")])
    metadata = json.loads(_kcat(kcat, server, "-L", "-J").stdout)

    assert metadata["brokers"] == [{"id": 1, "name": server.bootstrap}]
    assert metadata["controllerid"] == 1
    [topic] = metadata["topics"]
    assert topic["topic"] == "listed"
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
    for partition in topic["partitions"]:
        assert partition["leader"] == 1
        assert partition["replicas"] == [{"id": 1}] and partition["isrs"] == [{"id": 1}]
        assert "error" not in partition


def test_query_offsets_by_timestamp(serve_factory: ServeFactory, kcat: str) -> None:
    server = serve_factory({"num.partitions": "3"})
    for partition in range(3):
        lines = [(f"k{i}", f"p{partition} v{i}") for i in range(5 + partition)]
        kcat_produce(kcat, server.bootstrap, "q", lines, partition=partition)
    stamps = [kcat_read(kcat, server.bootstrap, "q", p)[2][1] for p in range(3)]

    def query(*wanted: tuple[int, int]) -> dict[int, int]:
        args = [a for p, ts in wanted for a in ("-t", f"q:{p}:{ts}")]
        out = _kcat(kcat, server, "-Q", *args).stdout
        found = re.findall(r"^q \[(\d+)\] offset (-?\d+)$", out, flags=re.MULTILINE)
        return {int(p): int(o) for p, o in found}

    # kcat stamps a whole run alike, so a run's timestamp finds its first record.
    assert query((0, stamps[0]), (1, stamps[1]), (2, stamps[2])) == {0: 0, 1: 0, 2: 0}
    assert query((0, -1), (1, -1), (2, -1)) == {0: 5, 1: 6, 2: 7}
    assert query((0, -2), (1, -2), (2, -2)) == {0: 0, 1: 0, 2: 0}
    # After every record: no offset (-1), as Kafka answers.
    assert query((0, stamps[0] + 3_600_000)) == {0: -1}


def test_consume_from_the_end_stops_at_the_log_end_offset(serve: ServeProcess, kcat: str) -> None:
    kcat_produce(kcat, serve.bootstrap, "ends", [(f"k{i}", f"v{i}") for i in range(4)])
    result = _kcat(kcat, serve, "-C", "-t", "ends", "-p", "0", "-o", "end", "-e")

    assert result.stdout == ""
    assert "Reached end of topic ends [0] at offset 4" in result.stderr


def test_partitioner_spreads_keys_and_each_partition_reads_back(
    serve_factory: ServeFactory, kcat: str
) -> None:
    server = serve_factory({"num.partitions": "3"})
    lines = [(f"key-{i}", f"value {i}") for i in range(60)]
    subprocess.run(
        [kcat, "-b", server.bootstrap, "-P", "-t", "spread", "-K", "\t", "-z", "snappy"],
        input="".join(f"{k}\t{v}\n" for k, v in lines),
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    seen: dict[bytes | None, bytes | None] = {}
    sizes = []
    for partition in range(3):
        reading = every_reading(kcat, server.bootstrap, server.data_dir, "spread", partition)
        records = reading["kcat"]
        assert [r[0] for r in records] == list(range(len(records)))
        assert_all_read(reading, records)
        seen.update({r[2]: r[3] for r in records})
        sizes.append(len(records))

    assert seen == {k.encode(): v.encode() for k, v in lines}
    assert sum(sizes) == 60 and 0 not in sizes  # the keys' hashes reach every partition
