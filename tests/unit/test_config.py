"""Kafka's storage configuration: names, defaults, synonyms, precedence (spec §17)."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.config import (
    BROKER_KEYS,
    IGNORED_TOPIC_KEYS,
    INT64_MAX,
    TOPIC_CONFIG_KEYS,
    BrokerConfig,
    LogConfig,
    overrides_of,
)
from seglog.errors import InvalidConfigError

LONG_MAX = 9223372036854775807

# Spec §17.1, at Kafka trunk 1eb7644 (3.9 / 4.0-SNAPSHOT): key -> (broker synonyms, default).
SPEC_TOPIC_DEFAULTS: dict[str, tuple[tuple[str, ...], object]] = {
    "segment.bytes": (("log.segment.bytes",), 1073741824),
    "segment.ms": (("log.roll.ms", "log.roll.hours"), 604800000),
    "segment.jitter.ms": (("log.roll.jitter.ms", "log.roll.jitter.hours"), 0),
    "segment.index.bytes": (("log.index.size.max.bytes",), 10485760),
    "index.interval.bytes": (("log.index.interval.bytes",), 4096),
    "flush.messages": (("log.flush.interval.messages",), LONG_MAX),
    "flush.ms": (("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), LONG_MAX),
    "retention.bytes": (("log.retention.bytes",), -1),
    "retention.ms": (
        ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        604800000,
    ),
    "max.message.bytes": (("message.max.bytes",), 1048588),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms",), 60000),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms",), 86400000),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms",), 0),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms",), LONG_MAX),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio",), 0.5),
    "cleanup.policy": (("log.cleanup.policy",), ("delete",)),
    "compression.type": (("compression.type",), "producer"),
    "compression.gzip.level": (("compression.gzip.level",), -1),
    "compression.lz4.level": (("compression.lz4.level",), 9),
    "compression.zstd.level": (("compression.zstd.level",), 3),
    "preallocate": (("log.preallocate",), False),
    "message.timestamp.type": (("log.message.timestamp.type",), "CreateTime"),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms",), LONG_MAX),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms",), LONG_MAX),
    # seglog's own keys (the Pulsar-style compacted copy), not Kafka's
    "compaction.threshold.bytes": (("log.compaction.threshold.bytes",), 0),
    "compaction.retain.null.key": (("log.compaction.retain.null.key",), False),
    "compaction.strategy": (("log.compaction.strategy",), "offset"),
}

SPEC_BROKER_DEFAULTS = {
    "log_dirs": ("/tmp/kafka-logs",),
    "log_retention_check_interval_ms": 300000,
    "log_flush_scheduler_interval_ms": LONG_MAX,
    "log_flush_offset_checkpoint_interval_ms": 60000,
    "log_flush_start_offset_checkpoint_interval_ms": 60000,
    "replica_high_watermark_checkpoint_interval_ms": 5000,
    "log_initial_task_delay_ms": 30000,
    "num_recovery_threads_per_data_dir": 1,
    "log_dir_failure_timeout_ms": 30000,
    "log_cleaner_enable": True,
    "log_cleaner_threads": 1,
    "log_cleaner_dedupe_buffer_size": 134217728,
    "log_cleaner_io_buffer_size": 524288,
    "log_cleaner_io_buffer_load_factor": 0.9,
    "log_cleaner_io_max_bytes_per_second": sys.float_info.max,
    "log_cleaner_backoff_ms": 15000,
    "producer_id_expiration_ms": 86400000,
    "producer_id_expiration_check_interval_ms": 600000,
    "log_compaction_check_interval_ms": 60000,
}


# --- defaults -----------------------------------------------------------------------------------


def test_topic_keys_synonyms_and_defaults_match_the_spec() -> None:
    assert set(TOPIC_CONFIG_KEYS) == set(SPEC_TOPIC_DEFAULTS)
    config = LogConfig()
    for name, (synonyms, default) in SPEC_TOPIC_DEFAULTS.items():
        key = TOPIC_CONFIG_KEYS[name]
        assert key.field == name.replace(".", "_")
        assert key.synonyms == synonyms, name
        assert key.default == default, name
        assert getattr(config, key.field) == default, name
    assert [f.name for f in dataclasses.fields(LogConfig)] == [
        k.field for k in TOPIC_CONFIG_KEYS.values()
    ]


def test_broker_defaults_match_the_spec() -> None:
    broker = BrokerConfig.from_properties({})
    assert broker == BrokerConfig()
    assert broker.node_id == 1
    assert broker.log_defaults == LogConfig()
    for name, default in SPEC_BROKER_DEFAULTS.items():
        assert getattr(broker, name) == default, name


def test_derived_properties() -> None:
    config = LogConfig()
    assert config.has_delete and not config.is_compacted
    assert config.max_segment_ms == config.segment_ms
    assert config.init_file_size == 0
    compacted = LogConfig(cleanup_policy=("compact",), max_compaction_lag_ms=1000)
    assert compacted.is_compacted and not compacted.has_delete
    assert compacted.max_segment_ms == 1000
    both = LogConfig(cleanup_policy=("compact", "delete"), segment_ms=500, max_compaction_lag_ms=9)
    assert both.is_compacted and both.has_delete and both.max_segment_ms == 9
    assert LogConfig(max_compaction_lag_ms=9).max_segment_ms == LogConfig().segment_ms
    assert LogConfig(preallocate=True, segment_bytes=100).init_file_size == 100


def test_small_segments_are_allowed_below_kip_1030() -> None:
    assert LogConfig.from_overrides({"segment.bytes": "14"}).segment_bytes == 14
    with pytest.raises(InvalidConfigError, match=r"segment.bytes: expected an int32 >= 14"):
        LogConfig.from_overrides({"segment.bytes": "13"})


# --- topic overrides ----------------------------------------------------------------------------


def test_topic_override_wins_over_broker_default() -> None:
    broker = BrokerConfig.from_properties({"log.retention.hours": "1", "log.segment.bytes": "500"})
    config = LogConfig.from_overrides({"retention.ms": "42"}, broker.log_defaults)
    assert config.retention_ms == 42
    assert config.segment_bytes == 500  # not overridden: the broker's default


def test_parsing_as_configdef() -> None:
    config = LogConfig.from_overrides(
        {
            "segment.ms": "  +100\t",
            "min.cleanable.dirty.ratio": "1e-1",
            "cleanup.policy": " compact , delete ",
            "preallocate": "TRUE",
            "compression.type": "zstd",
            "compression.zstd.level": "-5",
            "message.timestamp.type": "LogAppendTime",
            "retention.bytes": "-7",
        }
    )
    assert config.segment_ms == 100
    assert config.min_cleanable_dirty_ratio == 0.1
    assert config.cleanup_policy == ("compact", "delete")
    assert config.preallocate is True
    assert config.compression_zstd_level == -5
    assert config.message_timestamp_type == "LogAppendTime"
    assert config.retention_bytes == -7
    assert LogConfig.from_overrides({"cleanup.policy": ""}).cleanup_policy == ()
    assert (
        LogConfig.from_overrides({"min.cleanable.dirty.ratio": "1.0d"}).min_cleanable_dirty_ratio
        == 1
    )


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("segment.ms", "0", "expected an int64 >= 1"),
        ("segment.ms", "1_000", "expected an int64 >= 1"),
        ("segment.ms", "9223372036854775808", "expected an int64"),
        ("segment.bytes", "2147483648", "expected an int32"),
        ("retention.ms", "-2", "expected an int64 >= -1"),
        ("min.cleanable.dirty.ratio", "1.5", r"expected a number in \[0, 1\]"),
        ("min.cleanable.dirty.ratio", "NaN", "expected a number"),
        ("min.cleanable.dirty.ratio", "half", "expected a number"),
        ("cleanup.policy", "delete,", "with items from compact, delete"),
        ("cleanup.policy", "Compact", "with items from compact, delete"),
        ("compression.type", "ZSTD", "one of uncompressed, zstd, lz4, snappy, gzip, producer"),
        ("compression.gzip.level", "0", r"in \[1, 9\] or -1"),
        ("compression.lz4.level", "18", r"in \[1, 17\]"),
        ("compression.zstd.level", "23", r"in \[-131072, 22\]"),
        ("preallocate", "yes", "expected true or false"),
        ("message.timestamp.type", "createtime", "one of CreateTime, LogAppendTime"),
        ("max.compaction.lag.ms", "0", ">= 1"),
    ],
)
def test_bad_topic_values_name_key_value_and_range(key: str, value: str, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match) as info:
        LogConfig.from_overrides({key: value})
    assert key in str(info.value) and repr(value) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_unknown_topic_key_suggests_the_closest() -> None:
    with pytest.raises(InvalidConfigError, match=r"unknown topic config 'retention\.msx'") as info:
        LogConfig.from_overrides({"retention.msx": "1"})
    assert "did you mean 'retention.ms'" in str(info.value)
    with pytest.raises(InvalidConfigError, match=r"unknown topic config 'zzz'$"):
        LogConfig.from_overrides({"zzz": "1"})


def test_broker_key_given_as_topic_override_names_the_topic_key() -> None:
    with pytest.raises(
        InvalidConfigError, match=r"broker setting; the topic config is 'retention.ms'"
    ):
        LogConfig.from_overrides({"log.retention.hours": "1"})


def test_deprecated_timestamp_difference_is_rejected_at_topic_level() -> None:
    with pytest.raises(InvalidConfigError, match=r"message.timestamp.before.max.ms"):
        LogConfig.from_overrides({"message.timestamp.difference.max.ms": "1"})


def test_non_storage_topic_keys_are_ignored() -> None:
    overrides = dict.fromkeys(IGNORED_TOPIC_KEYS, "1")
    overrides["remote.storage.enable"] = "false"
    assert LogConfig.from_overrides(overrides) == LogConfig()
    with pytest.raises(InvalidConfigError, match="tiered storage is not supported"):
        LogConfig.from_overrides({"remote.storage.enable": "true"})


def test_min_compaction_lag_above_max_is_rejected() -> None:
    with pytest.raises(InvalidConfigError, match=r"min.compaction.lag.ms .* > max.compaction"):
        LogConfig.from_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_constructor_validates_fields() -> None:
    with pytest.raises(InvalidConfigError, match=r"segment.bytes"):
        LogConfig(segment_bytes=1)
    with pytest.raises(InvalidConfigError, match="preallocate"):
        LogConfig(preallocate=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match=r"segment.ms"):
        LogConfig(segment_ms=True)
    with pytest.raises(InvalidConfigError, match=r"cleanup.policy"):
        LogConfig(cleanup_policy=["delete"])  # type: ignore[arg-type]


def test_override_values_must_be_strings() -> None:
    with pytest.raises(InvalidConfigError, match="expected a string"):
        LogConfig.from_overrides({"segment.ms": 5})  # type: ignore[dict-item]


def test_to_properties_and_overrides_of() -> None:
    defaults = LogConfig()
    props = defaults.to_properties()
    assert props["segment.bytes"] == "1073741824"
    assert props["cleanup.policy"] == "delete"
    assert props["preallocate"] == "false"
    assert props["min.cleanable.dirty.ratio"] == "0.5"
    assert LogConfig.from_overrides(props) == defaults
    config = dataclasses.replace(defaults, retention_ms=-1, cleanup_policy=("compact",))
    assert overrides_of(config, defaults) == {"retention.ms": "-1", "cleanup.policy": "compact"}
    assert overrides_of(defaults, defaults) == {}


_CONFIG_VALUES = {
    "segment_bytes": st.integers(14, 2**31 - 1),
    "segment_ms": st.integers(1, INT64_MAX),
    "segment_jitter_ms": st.integers(0, INT64_MAX),
    "retention_ms": st.integers(-1, INT64_MAX),
    "retention_bytes": st.integers(-(2**63), INT64_MAX),
    "min_cleanable_dirty_ratio": st.floats(0, 1),
    "cleanup_policy": st.lists(st.sampled_from(["delete", "compact"]), max_size=2).map(tuple),
    "compression_type": st.sampled_from(["uncompressed", "zstd", "lz4", "snappy", "gzip"]),
    "compression_gzip_level": st.sampled_from([-1, 1, 5, 9]),
    "preallocate": st.booleans(),
    "message_timestamp_type": st.sampled_from(["CreateTime", "LogAppendTime"]),
    "min_compaction_lag_ms": st.integers(0, 1000),
}


@given(st.fixed_dictionaries({}, optional=_CONFIG_VALUES))
def test_overrides_round_trip(values: dict[str, object]) -> None:
    defaults = LogConfig()
    config = dataclasses.replace(defaults, **values)
    overrides = overrides_of(config, defaults)
    assert set(overrides) <= set(TOPIC_CONFIG_KEYS)
    assert LogConfig.from_overrides(overrides, defaults) == config
    assert LogConfig.from_overrides(config.to_properties()) == config


# --- broker precedence --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected_ms"),
    [
        ({"log.retention.hours": "2"}, 2 * 3_600_000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3"}, 3 * 60_000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "4"}, 4),
        ({"log.retention.minutes": "3", "log.retention.ms": "4"}, 4),
        ({"log.retention.hours": "-5"}, -1),
        ({"log.retention.minutes": "-1"}, -1),
        ({"log.retention.ms": "-100"}, -1),
        ({}, 168 * 3_600_000),
    ],
)
def test_retention_precedence_ms_over_minutes_over_hours(
    props: dict[str, str], expected_ms: int
) -> None:
    assert BrokerConfig.from_properties(props).log_defaults.retention_ms == expected_ms


def test_roll_and_jitter_precedence() -> None:
    broker = BrokerConfig.from_properties({"log.roll.hours": "1", "log.roll.jitter.hours": "2"})
    assert broker.log_defaults.segment_ms == 3_600_000
    assert broker.log_defaults.segment_jitter_ms == 7_200_000
    broker = BrokerConfig.from_properties(
        {"log.roll.hours": "1", "log.roll.ms": "5", "log.roll.jitter.ms": "6"}
    )
    assert broker.log_defaults.segment_ms == 5
    assert broker.log_defaults.segment_jitter_ms == 6


def test_flush_ms_falls_back_to_the_scheduler_interval() -> None:
    broker = BrokerConfig.from_properties({"log.flush.scheduler.interval.ms": "2000"})
    assert broker.log_defaults.flush_ms == 2000
    assert broker.log_flush_scheduler_interval_ms == 2000
    broker = BrokerConfig.from_properties(
        {"log.flush.scheduler.interval.ms": "2000", "log.flush.interval.ms": "10"}
    )
    assert broker.log_defaults.flush_ms == 10


def test_every_broker_synonym_sets_its_topic_default() -> None:
    broker = BrokerConfig.from_properties(
        {
            "log.segment.bytes": "1000",
            "log.index.size.max.bytes": "4096",
            "log.index.interval.bytes": "10",
            "log.flush.interval.messages": "3",
            "log.retention.bytes": "99",
            "message.max.bytes": "2000",
            "log.segment.delete.delay.ms": "7",
            "log.cleaner.delete.retention.ms": "8",
            "log.cleaner.min.compaction.lag.ms": "9",
            "log.cleaner.max.compaction.lag.ms": "10",
            "log.cleaner.min.cleanable.ratio": "0.25",
            "log.cleanup.policy": "compact",
            "compression.type": "lz4",
            "compression.gzip.level": "5",
            "compression.lz4.level": "12",
            "compression.zstd.level": "7",
            "log.preallocate": "true",
            "log.message.timestamp.type": "LogAppendTime",
            "log.message.timestamp.before.max.ms": "11",
            "log.message.timestamp.after.max.ms": "12",
        }
    )
    assert broker.log_defaults == LogConfig(
        segment_bytes=1000,
        segment_index_bytes=4096,
        index_interval_bytes=10,
        flush_messages=3,
        retention_bytes=99,
        max_message_bytes=2000,
        file_delete_delay_ms=7,
        delete_retention_ms=8,
        min_compaction_lag_ms=9,
        max_compaction_lag_ms=10,
        min_cleanable_dirty_ratio=0.25,
        cleanup_policy=("compact",),
        compression_type="lz4",
        compression_gzip_level=5,
        compression_lz4_level=12,
        compression_zstd_level=7,
        preallocate=True,
        message_timestamp_type="LogAppendTime",
        message_timestamp_before_max_ms=11,
        message_timestamp_after_max_ms=12,
    )


def test_deprecated_timestamp_difference_fills_unset_before_and_after() -> None:
    broker = BrokerConfig.from_properties({"log.message.timestamp.difference.max.ms": "100"})
    assert broker.log_defaults.message_timestamp_before_max_ms == 100
    assert broker.log_defaults.message_timestamp_after_max_ms == 100
    broker = BrokerConfig.from_properties(
        {
            "log.message.timestamp.difference.max.ms": "100",
            "log.message.timestamp.before.max.ms": "5",
        }
    )
    assert broker.log_defaults.message_timestamp_before_max_ms == 5
    assert broker.log_defaults.message_timestamp_after_max_ms == 100


def test_log_dirs_over_log_dir() -> None:
    assert BrokerConfig.from_properties({"log.dir": "/a"}).log_dirs == ("/a",)
    broker = BrokerConfig.from_properties({"log.dir": "/a", "log.dirs": " /b , /c ,"})
    assert broker.log_dirs == ("/b", "/c")
    with pytest.raises(InvalidConfigError, match="at least one directory"):
        BrokerConfig.from_properties({"log.dirs": " , "})
    with pytest.raises(InvalidConfigError, match="repeated"):
        BrokerConfig.from_properties({"log.dirs": "/a,/a"})


def test_node_id_over_broker_id() -> None:
    assert BrokerConfig.from_properties({"broker.id": "7"}).node_id == 7
    assert BrokerConfig.from_properties({"node.id": "3"}).node_id == 3
    assert BrokerConfig.from_properties({"node.id": "3", "broker.id": "3"}).node_id == 3
    with pytest.raises(InvalidConfigError, match="must be equal"):
        BrokerConfig.from_properties({"node.id": "3", "broker.id": "4"})
    with pytest.raises(InvalidConfigError, match=r"node.id"):
        BrokerConfig.from_properties({"node.id": "-1"})


def test_broker_only_settings() -> None:
    broker = BrokerConfig.from_properties(
        {
            "log.retention.check.interval.ms": "1000",
            "log.flush.offset.checkpoint.interval.ms": "2000",
            "log.flush.start.offset.checkpoint.interval.ms": "3000",
            "replica.high.watermark.checkpoint.interval.ms": "4000",
            "log.initial.task.delay.ms": "0",
            "num.recovery.threads.per.data.dir": "4",
            "log.cleaner.enable": "false",
            "log.cleaner.threads": "2",
            "log.cleaner.dedupe.buffer.size": "4194304",
            "log.cleaner.io.buffer.size": "1024",
            "log.cleaner.io.buffer.load.factor": "0.5",
            "log.cleaner.io.max.bytes.per.second": "1e6",
            "log.cleaner.backoff.ms": "10",
            "producer.id.expiration.ms": "60000",
        }
    )
    assert broker.log_retention_check_interval_ms == 1000
    assert broker.log_flush_offset_checkpoint_interval_ms == 2000
    assert broker.log_flush_start_offset_checkpoint_interval_ms == 3000
    assert broker.replica_high_watermark_checkpoint_interval_ms == 4000
    assert broker.log_initial_task_delay_ms == 0
    assert broker.num_recovery_threads_per_data_dir == 4
    assert broker.log_cleaner_enable is False
    assert broker.log_cleaner_threads == 2
    assert broker.log_cleaner_dedupe_buffer_size == 4194304
    assert broker.log_cleaner_io_buffer_size == 1024
    assert broker.log_cleaner_io_buffer_load_factor == 0.5
    assert broker.log_cleaner_io_max_bytes_per_second == 1e6
    assert broker.log_cleaner_backoff_ms == 10
    assert broker.producer_id_expiration_ms == 60000


def test_unknown_server_properties_keys_are_ignored_and_listed() -> None:
    props = {
        "process.roles": "broker,controller",
        "listeners": "PLAINTEXT://:9092",
        "zookeeper.connect": "localhost:2181",
        "log.segment.bytes": "1000",
        "log.message.format.version": "2.8",
    }
    broker = BrokerConfig.from_properties(props)
    assert broker.ignored_keys == (
        "process.roles",
        "listeners",
        "zookeeper.connect",
        "log.message.format.version",
    )
    assert broker.log_defaults.segment_bytes == 1000
    assert broker == BrokerConfig.from_properties({"log.segment.bytes": "1000"})


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("log.segment.bytes", "1k", "expected an int32 >= 14"),
        ("log.roll.hours", "0", ">= 1"),
        ("log.roll.ms", "0", ">= 1"),
        ("log.roll.jitter.hours", "-1", ">= 0"),
        ("log.retention.hours", "x", "expected an int32"),
        ("log.retention.hours", "2147483648", "expected an int32"),
        ("log.cleaner.min.cleanable.ratio", "2", r"in \[0, 1\]"),
        ("log.cleanup.policy", "remove", "with items from"),
        ("log.retention.check.interval.ms", "0", ">= 1"),
        ("log.flush.offset.checkpoint.interval.ms", "0", ">= 1"),
        ("log.flush.scheduler.interval.ms", "0", ">= 1"),
        ("num.recovery.threads.per.data.dir", "0", ">= 1"),
        ("log.cleaner.enable", "on", "true or false"),
        ("log.cleaner.io.buffer.load.factor", "0", r"in \(0, 1\]"),
        ("log.cleaner.io.max.bytes.per.second", "-1", "> 0"),
        ("log.cleaner.dedupe.buffer.size", "1048576", "1 MiB per cleaner thread"),
        ("log.message.timestamp.difference.max.ms", "-1", ">= 0"),
        ("node.id", "x", "expected an int32"),
    ],
)
def test_bad_broker_values_name_key_and_value(key: str, value: str, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match) as info:
        BrokerConfig.from_properties({key: value})
    assert key in str(info.value) and repr(value) in str(info.value)


def test_shadowed_synonym_is_still_validated() -> None:
    # Kafka parses every key: a bad log.roll.hours fails even when log.roll.ms is set.
    with pytest.raises(InvalidConfigError, match=r"log.roll.hours"):
        BrokerConfig.from_properties({"log.roll.ms": "5", "log.roll.hours": "0"})


def test_cleaner_threads_zero_skips_the_per_thread_check() -> None:
    broker = BrokerConfig.from_properties({"log.cleaner.threads": "0"})
    assert broker.log_cleaner_threads == 0


def test_broker_log_defaults_cross_check() -> None:
    with pytest.raises(InvalidConfigError, match=r"broker log defaults: .*min.compaction.lag.ms"):
        BrokerConfig.from_properties(
            {
                "log.cleaner.min.compaction.lag.ms": "10",
                "log.cleaner.max.compaction.lag.ms": "5",
            }
        )


def test_broker_to_properties_round_trip() -> None:
    broker = BrokerConfig.from_properties(
        {
            "log.dirs": "/a,/b",
            "node.id": "4",
            "log.retention.hours": "3",
            "log.cleaner.io.max.bytes.per.second": "1.5",
            "log.cleanup.policy": "compact,delete",
        }
    )
    props = broker.to_properties()
    assert set(props) <= set(BROKER_KEYS)
    assert BrokerConfig.from_properties(props) == broker
    assert BrokerConfig.from_properties(BrokerConfig().to_properties()) == BrokerConfig()
