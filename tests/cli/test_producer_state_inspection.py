"""Producer state in ``seglog topics describe`` and ``seglog metrics``: the last stable
offset, the open transactions and the producer count, as the log's producer state has them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Cli
from prometheus_client.parser import text_string_to_metric_families

from seglog.engine.log_manager import open_log_dirs
from seglog.testing.transactions import append_idempotent, append_transactional


@pytest.fixture
def txn_cli(cli: Cli) -> Cli:
    """Topic ``t``, two partitions. Partition 0: producer 1 commits (0, marker 1), producer 2
    opens a transaction (2), producer 3 appends idempotently (3), producer 4 opens another
    (4): LSO 2, two open, four producers. Partition 1: one plain record."""
    with open_log_dirs([cli.data_dir]) as manager:
        manager.create_topic("t", 2)
        log = manager.get_log("t", 0)
        append_transactional(log, 1, 0, 0, [(b"a", b"1")])
        log.append_marker(1, 0, commit=True, coordinator_epoch=0)
        append_transactional(log, 2, 0, 0, [(b"b", b"2")])
        append_idempotent(log, 3, 0, 0, [(b"c", b"3")])
        append_transactional(log, 4, 0, 0, [(b"d", b"4")])
        manager.get_log("t", 1).append_records([(b"x", b"y")])
    return cli


def test_describe_shows_lso_open_transactions_and_producers(txn_cli: Cli) -> None:
    described = json.loads(txn_cli.ok("topics", "describe", "t", "--json").out)
    first, second = described["partitions"]
    assert {k: first[k] for k in _PRODUCER_FIELDS} == {
        "log_end_offset": 5,
        "last_stable_offset": 2,
        "ongoing_transactions": 2,
        "first_ongoing_offset": 2,
        "producer_count": 4,
    }
    assert {k: second[k] for k in _PRODUCER_FIELDS} == {
        "log_end_offset": 1,
        "last_stable_offset": 1,
        "ongoing_transactions": 0,
        "first_ongoing_offset": None,
        "producer_count": 0,
    }
    text = txn_cli.ok("topics", "describe", "t").lines
    header = next(line for line in text if line.startswith("PARTITION") and "LAST_STABLE" in line)
    columns = header.split()
    rows = [line.split() for line in text[text.index(header) + 1 :][:2]]
    at = columns.index("LAST_STABLE_OFFSET")
    assert columns[at : at + 4] == [
        "LAST_STABLE_OFFSET",
        "ONGOING_TXNS",
        "FIRST_TXN_OFFSET",
        "PRODUCERS",
    ]
    assert rows[0][at : at + 4] == ["2", "2", "2", "4"]
    assert rows[1][at : at + 4] == ["1", "0", "-", "0"]


_PRODUCER_FIELDS = (
    "log_end_offset",
    "last_stable_offset",
    "ongoing_transactions",
    "first_ongoing_offset",
    "producer_count",
)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_metrics_have_kafkas_producer_state_gauges(txn_cli: Cli, data_dir: Path) -> None:
    samples = _samples(txn_cli.ok("metrics").out)
    p0 = (("partition", "0"), ("topic", "t"))
    p1 = (("partition", "1"), ("topic", "t"))
    assert samples[("kafka_cluster_Partition_LastStableOffsetLag", p0)] == 3  # 5 - 2
    assert samples[("kafka_cluster_Partition_LastStableOffsetLag", p1)] == 0
    assert samples[("kafka_server_ReplicaManager_ProducerIdCount", ())] == 4
    assert samples[("seglog_log_producer_id_count", p0)] == 4
    assert samples[("seglog_log_producer_id_count", p1)] == 0
    assert samples[("seglog_log_last_stable_offset", p0)] == 2
    assert samples[("seglog_log_ongoing_transactions", p0)] == 2
    assert samples[("seglog_log_ongoing_transactions", p1)] == 0
    assert samples[("seglog_metrics_collection_errors", ())] == 0
