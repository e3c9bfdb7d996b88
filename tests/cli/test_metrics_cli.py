"""``seglog metrics`` and the metrics it gathers: Kafka's names, real values, read-only opens."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cli_support import Cli
from prometheus_client.parser import text_string_to_metric_families

from seglog.cli.metrics import exposition
from seglog.engine.inspect.metrics import collect_metrics, kafka_metric_name
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.engine.producer import Producer, ProduceRecord

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Prometheus text -> ({(sample name, sorted labels): value}, {family: help})."""
    samples: Samples = {}
    helps: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        helps[family.name] = family.documentation
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples, helps


def lab(**labels: str | int) -> tuple[tuple[str, str], ...]:
    """Labels as ``parse`` keys them: sorted (name, text) pairs."""
    return tuple(sorted((name, str(value)) for name, value in labels.items()))


def tp(topic: str, partition: int) -> tuple[tuple[str, str], ...]:
    return lab(topic=topic, partition=partition)


def produce(cli: Cli, topic: str, lines: bytes) -> None:
    cli.ok("produce", topic, "--key-separator", "=", stdin=lines)


def send_batches(
    manager: LogManager, topic: str, records: list[tuple[bytes, bytes | None]]
) -> None:
    """One batch per record (each flushed alone)."""
    producer = Producer(manager, topic)
    for key, value in records:
        producer.send(ProduceRecord(value=value, key=key, partition=0))
        producer.flush()


def test_kafka_names_map_by_one_rule() -> None:
    assert kafka_metric_name("kafka.log", "Log", "Size") == "kafka_log_Log_Size"
    assert (
        kafka_metric_name("kafka.log", "LogCleaner", "max-buffer-utilization-percent")
        == "kafka_log_LogCleaner_max_buffer_utilization_percent"
    )
    assert (
        kafka_metric_name("kafka.log", "LogCleanerManager", "uncleanable-partitions-count")
        == "kafka_log_LogCleanerManager_uncleanable_partitions_count"
    )


def test_metrics_show_each_partition_with_kafkas_names(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    produce(cli, "t", b"a=1\nb=2\nc=3\nd=4\n")
    described = json.loads(cli.ok("topics", "describe", "t", "--json").out)
    result = cli.ok("metrics")
    samples, helps = parse(result.out)
    for p in described["partitions"]:
        labels = tp("t", p["partition"])
        assert samples[("kafka_log_Log_Size", labels)] == p["size_bytes"]
        assert samples[("kafka_log_Log_LogEndOffset", labels)] == p["log_end_offset"]
        assert samples[("kafka_log_Log_LogStartOffset", labels)] == 0
        assert samples[("kafka_log_Log_NumLogSegments", labels)] == len(p["segments"])
    assert sum(p["log_end_offset"] for p in described["partitions"]) == 4
    assert samples[("kafka_log_LogManager_OfflineLogDirectoryCount", ())] == 0
    root = (("logDirectory", str(data_dir)),)
    assert samples[("kafka_log_LogManager_LogDirectoryOffline", root)] == 0
    assert samples[("kafka_log_LogCleanerManager_uncleanable_partitions_count", root)] == 0
    assert samples[("kafka_log_LogCleanerManager_uncleanable_bytes", root)] == 0
    for name in (
        "kafka_log_LogCleaner_max_buffer_utilization_percent",
        "kafka_log_LogCleaner_cleaner_recopy_percent",
        "kafka_log_LogCleaner_max_clean_time_secs",
        "kafka_log_LogCleaner_DeadThreadCount",
        "kafka_log_LogCleanerManager_max_dirty_percent",
    ):
        assert samples[(name, ())] == 0  # this one-shot process cleaned nothing
    assert helps["kafka_log_Log_Size"].endswith("(Kafka: kafka.log:type=Log,name=Size)")
    assert helps["kafka_log_LogCleaner_cleaner_recopy_percent"].endswith(
        "(Kafka: kafka.log:type=LogCleaner,name=cleaner-recopy-percent)"
    )
    # Not a compacted-copy topic: every partition says NOT_RUN, horizon -1.
    assert samples[("seglog_compaction_state", lab(topic="t", partition=0, state="NOT_RUN"))] == 1
    assert samples[("seglog_compaction_state", lab(topic="t", partition=0, state="SUCCESS"))] == 0
    assert samples[("seglog_compaction_horizon", tp("t", 0))] == -1
    assert samples[("seglog_metrics_collection_errors", ())] == 0


def test_metrics_follow_delete_records(cli: Cli, tmp_path: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    produce(cli, "t", b"a=1\nb=2\nc=3\n")
    offsets = tmp_path / "offsets.json"
    offsets.write_text('{"partitions": [{"topic": "t", "partition": 0, "offset": 2}]}')
    cli.ok("delete-records", "--offset-json-file", offsets)
    samples, _ = parse(cli.ok("metrics").out)
    assert samples[("kafka_log_Log_LogStartOffset", tp("t", 0))] == 2
    assert samples[("kafka_log_Log_LogEndOffset", tp("t", 0))] == 3


def test_metrics_on_a_read_only_directory_write_nothing(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    produce(cli, "t", b"a=1\nb=2\n")
    before = {p: p.stat().st_mtime_ns for p in data_dir.rglob("*")}
    data_dir.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        result = cli.run("metrics")
        also = cli.run("metrics", "--read-only")
    finally:
        data_dir.chmod(0o755)
    assert result.status == 0, result.err
    assert also.status == 0, also.err
    samples, _ = parse(result.out)
    assert samples[("kafka_log_Log_LogEndOffset", tp("t", 0))] == 2
    after = {p: p.stat().st_mtime_ns for p in data_dir.rglob("*")}
    assert after == before  # no lock, no checkpoint, no marker taken or written
    assert (data_dir / ".kafka_cleanshutdown").exists()


def test_metrics_json_is_one_document_with_the_same_figures(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    produce(cli, "t", b"a=1\nb=2\n")
    text = cli.ok("metrics").out
    result = cli.ok("metrics", "--json")
    document = json.loads(result.out)  # one document: json.loads refuses trailing data
    assert result.out.count("\n") == 1
    families = {f["name"]: f for f in document["metrics"]}
    size = families["kafka_log_Log_Size"]
    assert size["type"] == "gauge"
    assert size["source"] == "kafka.log:type=Log,name=Size"
    samples, _ = parse(text)
    assert size["samples"] == [
        {
            "labels": {"topic": "t", "partition": "0"},
            "value": samples[("kafka_log_Log_Size", tp("t", 0))],
        }
    ]
    counter = families["seglog_retention_deleted_segments"]
    assert counter["type"] == "counter" and counter["samples"] == []
    # Every family of the text format is in the JSON (counters without _total).
    text_names = {f.name for f in text_string_to_metric_families(text)}
    assert text_names == set(families)


def test_retention_cleaner_and_compactor_figures(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    manager = open_log_dirs([data_dir], overrides={"log.cleaner.dedupe.buffer.size": "2097152"})
    try:
        manager.create_topic("r", 1, {"segment.bytes": "100"})
        send_batches(manager, "r", [(b"k%d" % i, b"v%d" % i) for i in range(4)])
        log = manager.get_log("r", 0)
        segment_sizes = [s.size for s in log.segments]
        assert len(segment_sizes) == 4  # one batch per segment
        manager.delete_records({log.topic_partition: 2})
        pending = {f.name: f for f in collect_metrics(manager)}
        assert pending["seglog_retention_pending_segments"].samples[0].value == 2
        assert pending["seglog_retention_pending_bytes"].samples[0].value == sum(segment_sizes[:2])
        manager.run_retention()

        manager.create_topic(
            "c", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
        )
        send_batches(manager, "c", [(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"a", b"4")])
        manager.get_log("c", 0).roll()
        [plan] = manager.plan_cleaning(topic="c")
        dirty_before, _ = parse(exposition(manager))
        ratio = plan.candidate.to_clean.cleanable_ratio
        assert ratio > 0
        assert dirty_before[("seglog_log_cleaner_dirty_ratio", tp("c", 0))] == ratio
        results = manager.clean_once(topic="c")
        assert [r.error for r in results] == [None]
        runs = manager.compact("c")
        run = runs[manager.get_log("c", 0).topic_partition]

        samples, _ = parse(exposition(manager))
        rule = lab(topic="r", partition=0, rule="log start offset")
        assert samples[("seglog_retention_deleted_segments_total", rule)] == 2
        assert samples[("seglog_retention_deleted_bytes_total", rule)] == sum(segment_sizes[:2])
        assert samples[("kafka_log_Log_LogStartOffset", tp("r", 0))] == 2
        assert samples[("kafka_log_Log_NumLogSegments", tp("r", 0))] == 2
        assert samples[("seglog_retention_pending_segments", tp("r", 0))] == 0

        stats = results[0].stats
        assert stats is not None
        assert samples[("kafka_log_LogCleaner_cleaner_recopy_percent", ())] == int(
            100 * stats.bytes_written / stats.bytes_read
        )
        assert 0 < samples[("kafka_log_LogCleaner_cleaner_recopy_percent", ())] < 100
        # Kafka's gauge is the largest ratio at the *last* choice: the pass's final choice
        # (which found nothing more to clean) saw the log clean.
        assert samples[("kafka_log_LogCleanerManager_max_dirty_percent", ())] == 0
        assert samples[("kafka_log_LogCleaner_max_buffer_utilization_percent", ())] == int(
            100 * stats.buffer_utilization
        )
        assert samples[("seglog_log_cleaner_dirty_ratio", tp("c", 0))] == 0  # all clean now

        c0 = tp("c", 0)
        assert (
            samples[("seglog_compaction_state", lab(topic="c", partition=0, state="SUCCESS"))] == 1
        )
        assert samples[("seglog_compaction_horizon", c0)] == run.horizon == 3
        assert samples[("seglog_compaction_last_run_records_read", c0)] == run.records_read
        assert samples[("seglog_compaction_last_run_records_kept", c0)] == run.records_kept == 2
        assert samples[("seglog_compaction_last_run_keys", c0)] == 2
        assert samples[("seglog_compaction_last_run_started_timestamp_seconds", c0)] == (
            pytest.approx(run.started_ms / 1000)
        )
        assert samples[("seglog_compaction_backlog_bytes", c0)] == 0
        # A partition never compacted has no last-run samples.
        assert ("seglog_compaction_last_run_records_read", tp("r", 0)) not in samples
    finally:
        manager.close()


def test_offline_log_directory_is_counted(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    manager = open_log_dirs([data_dir])
    try:
        manager.create_topic("t", 1)
        moved = tmp_path / "moved"
        os.rename(data_dir, moved)  # the root disappears under the running manager
        try:
            samples, _ = parse(exposition(manager))
        finally:
            os.rename(moved, data_dir)
        assert samples[("kafka_log_LogManager_OfflineLogDirectoryCount", ())] == 1
        root = (("logDirectory", str(data_dir)),)
        assert samples[("kafka_log_LogManager_LogDirectoryOffline", root)] == 1
    finally:
        manager.close()
