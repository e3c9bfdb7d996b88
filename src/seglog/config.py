"""Kafka's storage configuration: names, defaults, synonyms and precedence.

Two levels, as in Kafka:

* :class:`LogConfig` holds the **topic-level** configs of one log. Its fields are the Kafka
  topic keys in snake_case (``segment.bytes`` -> ``segment_bytes``). A topic's log config is
  ``LogConfig.from_overrides(topic overrides, broker defaults)``: a topic override wins over the
  broker default.
* :class:`BrokerConfig` holds the broker's settings read from ``server.properties``: the log
  directories, the node id, the broker-only storage settings, and ``log_defaults``,
  the :class:`LogConfig` every topic starts from, resolved from the broker synonyms.

Precedence among broker synonyms (``ServerTopicConfigSynonyms``), highest first::

    segment.ms       log.roll.ms > log.roll.hours (x 3 600 000)
    segment.jitter.ms  log.roll.jitter.ms > log.roll.jitter.hours (x 3 600 000)
    retention.ms     log.retention.ms > log.retention.minutes (x 60 000) > log.retention.hours
                     (x 3 600 000); a negative result is normalized to -1 (= no time limit)
    flush.ms         log.flush.interval.ms > log.flush.scheduler.interval.ms
    others           one broker key each (see TOPIC_CONFIG_KEYS), compression.* keep their names

``message.timestamp.before/after.max.ms`` fall back to the deprecated
``log.message.timestamp.difference.max.ms`` when they are left at Long.MAX (Kafka 3.6+). The
topic-level ``message.timestamp.difference.max.ms`` is rejected: its fallback depends on the
raw broker value, which a resolved :class:`LogConfig` no longer has (Kafka 4.0 removed it).

Values are parsed as Kafka's ``ConfigDef`` parses them: the text is trimmed (Java
``String.trim``: every character <= U+0020), ints and longs are Java ``parseInt`` /
``parseLong`` (sign and ASCII digits, in range), doubles a Java decimal literal (NaN is
rejected), booleans ``true``/``false`` in any case, lists split on commas with surrounding
whitespace. String choices are case-sensitive, as in Kafka.

Decisions:

* ``segment.bytes`` minimum is 14 (``LegacyRecord.RECORD_OVERHEAD_V0``, Kafka 3.9); Kafka 4.0's
  1 MiB minimum (KIP-1030) is deliberately **not** enforced, so tests can roll tiny segments.
* ``message.timestamp.after.max.ms`` defaults to Long.MAX (3.9), not 4.0's one hour;
  ``num.recovery.threads.per.data.dir`` defaults to 1 (3.9), not 4.0's 2.
* Periods of periodic tasks (retention check, flush scheduler, checkpoint intervals,
  producer-id expiration check) must be >= 1 even where Kafka's ConfigDef allows 0: a zero
  period makes Kafka's scheduler fail at startup, here it fails when the config is read.
* ``log.cleaner.io.buffer.load.factor`` must be in (0, 1] and
  ``log.cleaner.io.max.bytes.per.second`` > 0 (Kafka has no validator for either).
* ``node.id`` and ``broker.id`` are synonyms: ``node.id`` wins; both set to different values is
  an error, as in Kafka. Ids must be >= 0 (no ZooKeeper-era id generation); default 1.
* Topic configs Kafka knows but that do not concern this storage engine
  (:data:`IGNORED_TOPIC_KEYS`: replication, tiered storage, message format/down-conversion) are
  accepted and ignored by ``from_overrides``; ``remote.storage.enable=true`` is rejected.
* ``server.properties`` keys unknown here are ignored and listed in
  ``BrokerConfig.ignored_keys``; known keys with bad values raise.

This module imports only :mod:`seglog.errors` and the standard library (layer contract).

Why this module is longer than the house's ~500 lines: it is the one typed table of every Kafka
topic and broker config seglog honours (name, type, default, check, synonyms), with Java's
parsing rules beside it; a table split over files would make a config harder to find, and each
entry is a few declarative lines.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from seglog.errors import InvalidConfigError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
DOUBLE_MAX = sys.float_info.max
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
MIB = 1024 * 1024

CLEANUP_POLICY_DELETE = "delete"
CLEANUP_POLICY_COMPACT = "compact"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
ZSTD_MIN_LEVEL = -131072  # Zstd.minCompressionLevel() (-(1 << 17))
ZSTD_MAX_LEVEL = 22

_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # Java \s is ASCII
_JAVA_TRIM = "".join(chr(code) for code in range(0x21))


class ConfigType(StrEnum):
    """A ``ConfigDef.Type``."""

    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"


_TYPE_NAMES = {
    ConfigType.INT: "an int32",
    ConfigType.LONG: "an int64",
    ConfigType.DOUBLE: "a number",
    ConfigType.BOOLEAN: "true or false",
    ConfigType.STRING: "a string",
    ConfigType.LIST: "a comma-separated list",
}


class Check(NamedTuple):
    """A value constraint: ``test(value)`` and the text ``expected`` that describes it."""

    test: Callable[[Any], bool]
    expected: str


def _anything() -> Check:
    return Check(lambda value: True, "")


def _at_least(minimum: float) -> Check:
    return Check(lambda value: value >= minimum, f">= {minimum}")


def _between(low: float, high: float) -> Check:
    return Check(lambda value: low <= value <= high, f"in [{low}, {high}]")


def _positive_fraction() -> Check:
    return Check(lambda value: 0 < value <= 1, "in (0, 1]")


def _positive() -> Check:
    return Check(lambda value: value > 0, "> 0")


def _one_of(*choices: str) -> Check:
    return Check(lambda value: value in choices, f"one of {', '.join(choices)}")


def _compaction_strategy() -> Check:
    def ok(value: object) -> bool:
        if not isinstance(value, str):
            return False
        if value in ("offset", "timestamp"):
            return True
        prefix, _, name = value.partition(":")
        return prefix == "header" and bool(name)

    return Check(ok, "offset, timestamp or header:<name>")


def _list_of(*choices: str) -> Check:
    return Check(
        lambda value: all(item in choices for item in value),
        f"with items from {', '.join(choices)}",
    )


def _gzip_level() -> Check:
    # GzipCompression.LevelValidator: Deflater.BEST_SPEED..BEST_COMPRESSION or DEFAULT (-1).
    return Check(lambda value: value == -1 or 1 <= value <= 9, "in [1, 9] or -1")


def _parse_value(kind: ConfigType, text: str) -> Any:
    """Parse ``text`` as ``ConfigDef.parseType`` does; raises ValueError when it does not."""
    trimmed = text.strip(_JAVA_TRIM)
    if kind in (ConfigType.INT, ConfigType.LONG):
        if not _JAVA_INTEGER.fullmatch(trimmed):
            raise ValueError
        value = int(trimmed)
        low, high = (INT32_MIN, INT32_MAX) if kind is ConfigType.INT else (INT64_MIN, INT64_MAX)
        if not low <= value <= high:
            raise ValueError
        return value
    if kind is ConfigType.DOUBLE:
        if not _JAVA_DOUBLE.fullmatch(trimmed) or "NaN" in trimmed:
            raise ValueError
        return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
    if kind is ConfigType.BOOLEAN:
        lowered = trimmed.lower()
        if lowered not in ("true", "false"):
            raise ValueError
        return lowered == "true"
    if kind is ConfigType.LIST:
        return tuple(_LIST_SEPARATOR.split(trimmed)) if trimmed else ()
    return trimmed


def _format_value(kind: ConfigType, value: Any) -> str:
    """The Kafka text of a parsed value (parses back to the same value)."""
    if kind is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if kind is ConfigType.LIST:
        return ",".join(value)
    if kind is ConfigType.DOUBLE:
        return repr(float(value)).replace("inf", "Infinity")
    return str(value)


def _value_problem(kind: ConfigType, check: Check, value: Any) -> str | None:
    """Why an already typed ``value`` is not acceptable, or None."""
    if kind is ConfigType.BOOLEAN:
        type_ok = isinstance(value, bool)
    elif kind is ConfigType.INT:
        type_ok = type(value) is int and INT32_MIN <= value <= INT32_MAX
    elif kind is ConfigType.LONG:
        type_ok = type(value) is int and INT64_MIN <= value <= INT64_MAX
    elif kind is ConfigType.DOUBLE:
        type_ok = isinstance(value, int | float) and not isinstance(value, bool)
        type_ok = type_ok and not math.isnan(value)
    elif kind is ConfigType.LIST:
        type_ok = isinstance(value, tuple) and all(isinstance(item, str) for item in value)
    else:
        type_ok = isinstance(value, str)
    if type_ok and check.test(value):
        return None
    return f"expected {_TYPE_NAMES[kind]} {check.expected}".rstrip()


def _invalid_value(key: str, text: object, problem: str) -> InvalidConfigError:
    return InvalidConfigError(f"invalid value {text!r} for {key}: {problem}")


def _parse_checked(key: str, kind: ConfigType, check: Check, text: str) -> Any:
    """Parse and check the text of ``key``; :class:`InvalidConfigError` names key and value."""
    if not isinstance(text, str):
        raise _invalid_value(key, text, "expected a string")
    try:
        value = _parse_value(kind, text)
    except ValueError:
        raise _invalid_value(
            key, text, f"expected {_TYPE_NAMES[kind]} {check.expected}".rstrip()
        ) from None
    problem = _value_problem(kind, check, value)
    if problem:
        raise _invalid_value(key, text, problem)
    return value


# --- topic-level configs ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicConfigKey:
    """A topic-level config: its Kafka key, ``LogConfig`` field, broker synonyms and default.

    ``synonyms`` are the broker properties that set the default, highest priority first;
    ``*.hours`` / ``*.minutes`` synonyms are converted to milliseconds.
    """

    name: str
    field: str
    synonyms: tuple[str, ...]
    default: Any
    kind: ConfigType
    check: Check

    def parse(self, text: str) -> Any:
        """The typed value of ``text``; :class:`InvalidConfigError` if Kafka would reject it."""
        return _parse_checked(self.name, self.kind, self.check, text)

    def format(self, value: Any) -> str:
        """The Kafka text of ``value``."""
        return _format_value(self.kind, value)


def _key(
    name: str, synonyms: tuple[str, ...], default: Any, kind: ConfigType, check: Check
) -> TopicConfigKey:
    return TopicConfigKey(name, name.replace(".", "_"), synonyms, default, kind, check)


TOPIC_CONFIG_KEYS: Mapping[str, TopicConfigKey] = {
    key.name: key
    for key in (
        _key("segment.bytes", ("log.segment.bytes",), 1 << 30, ConfigType.INT, _at_least(14)),
        _key(
            "segment.ms",
            ("log.roll.ms", "log.roll.hours"),
            168 * MS_PER_HOUR,
            ConfigType.LONG,
            _at_least(1),
        ),
        _key(
            "segment.jitter.ms",
            ("log.roll.jitter.ms", "log.roll.jitter.hours"),
            0,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "segment.index.bytes",
            ("log.index.size.max.bytes",),
            10 * MIB,
            ConfigType.INT,
            _at_least(4),
        ),
        _key(
            "index.interval.bytes",
            ("log.index.interval.bytes",),
            4096,
            ConfigType.INT,
            _at_least(0),
        ),
        _key(
            "flush.messages",
            ("log.flush.interval.messages",),
            INT64_MAX,
            ConfigType.LONG,
            _at_least(1),
        ),
        _key(
            "flush.ms",
            ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
            INT64_MAX,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key("retention.bytes", ("log.retention.bytes",), -1, ConfigType.LONG, _anything()),
        _key(
            "retention.ms",
            ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
            168 * MS_PER_HOUR,
            ConfigType.LONG,
            _at_least(-1),
        ),
        _key(
            "max.message.bytes",
            ("message.max.bytes",),
            MIB + 12,
            ConfigType.INT,
            _at_least(0),
        ),
        _key(
            "file.delete.delay.ms",
            ("log.segment.delete.delay.ms",),
            60_000,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "delete.retention.ms",
            ("log.cleaner.delete.retention.ms",),
            24 * MS_PER_HOUR,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "min.compaction.lag.ms",
            ("log.cleaner.min.compaction.lag.ms",),
            0,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "max.compaction.lag.ms",
            ("log.cleaner.max.compaction.lag.ms",),
            INT64_MAX,
            ConfigType.LONG,
            _at_least(1),
        ),
        _key(
            "min.cleanable.dirty.ratio",
            ("log.cleaner.min.cleanable.ratio",),
            0.5,
            ConfigType.DOUBLE,
            _between(0, 1),
        ),
        _key(
            "cleanup.policy",
            ("log.cleanup.policy",),
            (CLEANUP_POLICY_DELETE,),
            ConfigType.LIST,
            _list_of(CLEANUP_POLICY_COMPACT, CLEANUP_POLICY_DELETE),
        ),
        _key(
            "compression.type",
            ("compression.type",),
            "producer",
            ConfigType.STRING,
            _one_of(*COMPRESSION_TYPES),
        ),
        _key(
            "compression.gzip.level",
            ("compression.gzip.level",),
            -1,
            ConfigType.INT,
            _gzip_level(),
        ),
        _key(
            "compression.lz4.level",
            ("compression.lz4.level",),
            9,
            ConfigType.INT,
            _between(1, 17),
        ),
        _key(
            "compression.zstd.level",
            ("compression.zstd.level",),
            3,
            ConfigType.INT,
            _between(ZSTD_MIN_LEVEL, ZSTD_MAX_LEVEL),
        ),
        _key("preallocate", ("log.preallocate",), False, ConfigType.BOOLEAN, _anything()),
        _key(
            "message.timestamp.type",
            ("log.message.timestamp.type",),
            "CreateTime",
            ConfigType.STRING,
            _one_of(*TIMESTAMP_TYPES),
        ),
        _key(
            "message.timestamp.before.max.ms",
            ("log.message.timestamp.before.max.ms",),
            INT64_MAX,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "message.timestamp.after.max.ms",
            ("log.message.timestamp.after.max.ms",),
            INT64_MAX,
            ConfigType.LONG,
            _at_least(0),
        ),
        # seglog's own (Pulsar-style compacted copy): Pulsar's brokerServiceCompaction-
        # ThresholdInBytes and topicCompactionRetainNullKey, under Kafka-style names.
        _key(
            "compaction.threshold.bytes",
            ("log.compaction.threshold.bytes",),
            0,
            ConfigType.LONG,
            _at_least(0),
        ),
        _key(
            "compaction.retain.null.key",
            ("log.compaction.retain.null.key",),
            False,
            ConfigType.BOOLEAN,
            _anything(),
        ),
        # KIP-280 (accepted, never merged in Kafka): which record of a key both compactors
        # keep: the latest offset, the highest timestamp, or the highest numeric version in a
        # header; ties go to the later offset.
        _key(
            "compaction.strategy",
            ("log.compaction.strategy",),
            "offset",
            ConfigType.STRING,
            _compaction_strategy(),
        ),
    )
}

IGNORED_TOPIC_KEYS = frozenset(
    {
        "unclean.leader.election.enable",
        "min.insync.replicas",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "message.format.version",
        "message.downconversion.enable",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
    }
)
"""Kafka topic configs accepted and ignored by ``LogConfig.from_overrides`` (not storage)."""

DEPRECATED_TIMESTAMP_DIFFERENCE_KEY = "message.timestamp.difference.max.ms"
BROKER_TIMESTAMP_DIFFERENCE_KEY = "log.message.timestamp.difference.max.ms"

_TOPIC_KEY_OF_SYNONYM = {
    synonym: key.name for key in TOPIC_CONFIG_KEYS.values() for synonym in key.synonyms
}


def _unknown_topic_key(key: str) -> InvalidConfigError:
    message = f"unknown topic config {key!r}"
    if key in _TOPIC_KEY_OF_SYNONYM and key not in TOPIC_CONFIG_KEYS:
        message += (
            f": {key!r} is a broker setting; the topic config is {_TOPIC_KEY_OF_SYNONYM[key]!r}"
        )
    elif key == DEPRECATED_TIMESTAMP_DIFFERENCE_KEY:
        message += (
            ": it is deprecated (removed in Kafka 4.0); use message.timestamp.before.max.ms "
            "and message.timestamp.after.max.ms"
        )
    else:
        close = difflib.get_close_matches(key, list(TOPIC_CONFIG_KEYS), n=1)
        if close:
            message += f"; did you mean {close[0]!r}?"
    return InvalidConfigError(message)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic-level configs of one log (Kafka's ``LogConfig``); Kafka's defaults."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 168 * MS_PER_HOUR
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * MIB
    index_interval_bytes: int = 4096
    flush_messages: int = INT64_MAX
    flush_ms: int = INT64_MAX
    retention_bytes: int = -1
    retention_ms: int = 168 * MS_PER_HOUR
    max_message_bytes: int = MIB + 12
    file_delete_delay_ms: int = 60_000
    delete_retention_ms: int = 24 * MS_PER_HOUR
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = INT64_MAX
    min_cleanable_dirty_ratio: float = 0.5
    cleanup_policy: tuple[str, ...] = (CLEANUP_POLICY_DELETE,)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = INT64_MAX
    message_timestamp_after_max_ms: int = INT64_MAX
    compaction_threshold_bytes: int = 0  # compacted copy: backlog that triggers a run (0 off)
    compaction_retain_null_key: bool = False  # compacted copy: keep keyless records
    compaction_strategy: str = "offset"  # offset | timestamp | header:<name> (KIP-280)

    def __post_init__(self) -> None:
        for key in TOPIC_CONFIG_KEYS.values():
            value = getattr(self, key.field)
            problem = _value_problem(key.kind, key.check, value)
            if problem:
                raise _invalid_value(key.name, value, problem)
        # LogConfig.validateValues
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflicting topic configs: min.compaction.lag.ms ({self.min_compaction_lag_ms}) "
                f"> max.compaction.lag.ms ({self.max_compaction_lag_ms})"
            )

    @property
    def is_compacted(self) -> bool:
        """Whether the cleanup policy includes ``compact``."""
        return CLEANUP_POLICY_COMPACT in self.cleanup_policy

    @property
    def has_delete(self) -> bool:
        """Whether the cleanup policy includes ``delete`` (retention by time and size)."""
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """``LogConfig.maxSegmentMs``: a compacted log also rolls by ``max.compaction.lag.ms``."""
        if self.is_compacted and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def init_file_size(self) -> int:
        """``LogConfig.initFileSize``: new ``.log`` files are preallocated to this size."""
        return self.segment_bytes if self.preallocate else 0

    @classmethod
    def from_overrides(
        cls, overrides: Mapping[str, str], defaults: LogConfig | None = None
    ) -> LogConfig:
        """``defaults`` (the broker's) with the topic's ``overrides`` applied on top."""
        values: dict[str, Any] = {}
        for name, text in overrides.items():
            key = TOPIC_CONFIG_KEYS.get(name)
            if key is not None:
                values[key.field] = key.parse(text)
            elif name == "remote.storage.enable":
                if _parse_checked(name, ConfigType.BOOLEAN, _anything(), text):
                    raise _invalid_value(name, text, "tiered storage is not supported")
            elif name not in IGNORED_TOPIC_KEYS:
                raise _unknown_topic_key(name)
        return dataclasses.replace(defaults if defaults is not None else cls(), **values)

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka text, keyed by the Kafka key."""
        return {
            key.name: key.format(getattr(self, key.field)) for key in TOPIC_CONFIG_KEYS.values()
        }


def overrides_of(config: LogConfig, defaults: LogConfig) -> dict[str, str]:
    """The topic overrides that turn ``defaults`` into ``config`` (only keys that differ)."""
    return {
        key.name: key.format(getattr(config, key.field))
        for key in TOPIC_CONFIG_KEYS.values()
        if getattr(config, key.field) != getattr(defaults, key.field)
    }


# --- broker-level configs ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerKey:
    """A broker property read by :meth:`BrokerConfig.from_properties`."""

    name: str
    kind: ConfigType
    check: Check
    field: str | None = None  # the BrokerConfig field it sets directly, if any
    default: Any = None
    topic_key: str | None = None  # the topic config it is a synonym of, if any
    multiplier_ms: int = 1  # 60 000 for *.minutes, 3 600 000 for *.hours


def _synonym_keys() -> dict[str, BrokerKey]:
    keys = {}
    for topic_key in TOPIC_CONFIG_KEYS.values():
        for synonym in topic_key.synonyms:
            multiplier = 1
            kind = topic_key.kind
            check = topic_key.check
            if synonym.endswith(".hours"):
                multiplier, kind = MS_PER_HOUR, ConfigType.INT
            elif synonym.endswith(".minutes"):
                multiplier, kind = MS_PER_MINUTE, ConfigType.INT
            if topic_key.name == "retention.ms":
                check = _anything()  # any value; negatives mean "no limit" (-1)
            elif synonym == "log.roll.hours":
                check = _at_least(1)
            elif synonym == "log.roll.jitter.hours":
                check = _at_least(0)
            keys[synonym] = BrokerKey(
                synonym, kind, check, topic_key=topic_key.name, multiplier_ms=multiplier
            )
    return keys


_BROKER_ONLY_KEYS = (
    BrokerKey(
        "log.retention.check.interval.ms",
        ConfigType.LONG,
        _at_least(1),
        "log_retention_check_interval_ms",
        300_000,
    ),
    BrokerKey(
        "log.flush.scheduler.interval.ms",
        ConfigType.LONG,
        _at_least(1),
        "log_flush_scheduler_interval_ms",
        INT64_MAX,
        topic_key="flush.ms",
    ),
    BrokerKey(
        "log.flush.offset.checkpoint.interval.ms",
        ConfigType.INT,
        _at_least(1),
        "log_flush_offset_checkpoint_interval_ms",
        60_000,
    ),
    BrokerKey(
        "log.flush.start.offset.checkpoint.interval.ms",
        ConfigType.INT,
        _at_least(1),
        "log_flush_start_offset_checkpoint_interval_ms",
        60_000,
    ),
    BrokerKey(
        "replica.high.watermark.checkpoint.interval.ms",
        ConfigType.LONG,
        _at_least(1),
        "replica_high_watermark_checkpoint_interval_ms",
        5_000,
    ),
    BrokerKey(
        "log.initial.task.delay.ms",
        ConfigType.LONG,
        _at_least(0),
        "log_initial_task_delay_ms",
        30_000,
    ),
    BrokerKey(
        "num.recovery.threads.per.data.dir",
        ConfigType.INT,
        _at_least(1),
        "num_recovery_threads_per_data_dir",
        1,
    ),
    # The partition count of a topic created without --partitions (Kafka: num.partitions).
    BrokerKey("num.partitions", ConfigType.INT, _at_least(1), "num_partitions", 1),
    BrokerKey(
        "log.dir.failure.timeout.ms",
        ConfigType.LONG,
        _at_least(1),
        "log_dir_failure_timeout_ms",
        30_000,
    ),
    BrokerKey("log.cleaner.enable", ConfigType.BOOLEAN, _anything(), "log_cleaner_enable", True),
    BrokerKey("log.cleaner.threads", ConfigType.INT, _at_least(0), "log_cleaner_threads", 1),
    BrokerKey(
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        _positive(),
        "log_cleaner_dedupe_buffer_size",
        128 * MIB,
    ),
    BrokerKey(
        "log.cleaner.io.buffer.size",
        ConfigType.INT,
        _at_least(0),
        "log_cleaner_io_buffer_size",
        512 * 1024,
    ),
    BrokerKey(
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        _positive_fraction(),
        "log_cleaner_io_buffer_load_factor",
        0.9,
    ),
    BrokerKey(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        _positive(),
        "log_cleaner_io_max_bytes_per_second",
        DOUBLE_MAX,
    ),
    BrokerKey(
        "log.cleaner.backoff.ms", ConfigType.LONG, _at_least(0), "log_cleaner_backoff_ms", 15_000
    ),
    BrokerKey(
        "producer.id.expiration.ms",
        ConfigType.INT,
        _at_least(1),
        "producer_id_expiration_ms",
        24 * MS_PER_HOUR,
    ),
    BrokerKey(
        "producer.id.expiration.check.interval.ms",
        ConfigType.INT,
        _at_least(1),
        "producer_id_expiration_check_interval_ms",
        600_000,
    ),
    # seglog's own: how often the scheduler checks compaction.threshold.bytes (Pulsar's
    # brokerServiceCompactionMonitorIntervalInSeconds, 60 s).
    BrokerKey(
        "log.compaction.check.interval.ms",
        ConfigType.LONG,
        _at_least(1),
        "log_compaction_check_interval_ms",
        60_000,
    ),
    # The group coordinator's __consumer_offsets (GroupCoordinatorConfig).
    BrokerKey(
        "offsets.topic.num.partitions",
        ConfigType.INT,
        _at_least(1),
        "offsets_topic_num_partitions",
        50,
    ),
    BrokerKey(
        "offsets.topic.segment.bytes",
        ConfigType.INT,
        _at_least(1),
        "offsets_topic_segment_bytes",
        100 * MIB,
    ),
    BrokerKey(
        "offsets.retention.minutes",
        ConfigType.INT,
        _at_least(1),
        "offsets_retention_minutes",
        10080,
    ),
    BrokerKey(
        "offsets.retention.check.interval.ms",
        ConfigType.LONG,
        _at_least(1),
        "offsets_retention_check_interval_ms",
        600_000,
    ),
    BrokerKey(
        "offset.metadata.max.bytes",
        ConfigType.INT,
        _anything(),
        "offset_metadata_max_bytes",
        4096,
    ),
    # The transaction coordinator's __transaction_state (TransactionLogConfig).
    BrokerKey(
        "transaction.state.log.num.partitions",
        ConfigType.INT,
        _at_least(1),
        "transaction_state_log_num_partitions",
        50,
    ),
    BrokerKey(
        "transaction.state.log.segment.bytes",
        ConfigType.INT,
        _at_least(1),
        "transaction_state_log_segment_bytes",
        100 * MIB,
    ),
)

_NODE_ID_CHECK = _between(0, INT32_MAX)

BROKER_KEYS: Mapping[str, BrokerKey] = {
    **_synonym_keys(),
    **{key.name: key for key in _BROKER_ONLY_KEYS},
    BROKER_TIMESTAMP_DIFFERENCE_KEY: BrokerKey(
        BROKER_TIMESTAMP_DIFFERENCE_KEY, ConfigType.LONG, _at_least(0)
    ),
    "log.dirs": BrokerKey("log.dirs", ConfigType.STRING, _anything()),
    "log.dir": BrokerKey("log.dir", ConfigType.STRING, _anything()),
    "node.id": BrokerKey("node.id", ConfigType.INT, _NODE_ID_CHECK),
    "broker.id": BrokerKey("broker.id", ConfigType.INT, _NODE_ID_CHECK),
}
"""Every ``server.properties`` key read here; any other key is ignored."""

DEFAULT_LOG_DIR = "/tmp/kafka-logs"
DEFAULT_NODE_ID = 1


def _csv_list(text: str) -> tuple[str, ...]:
    """Kafka's ``Csv.parseCsvList``: split on commas (and surrounding blanks), drop empties."""
    return tuple(item for item in _LIST_SEPARATOR.split(text.strip(_JAVA_TRIM)) if item)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The broker's storage settings and the topic defaults (``log_defaults``)."""

    log_dirs: tuple[str, ...] = (DEFAULT_LOG_DIR,)
    node_id: int = DEFAULT_NODE_ID
    log_defaults: LogConfig = field(default_factory=LogConfig)
    log_retention_check_interval_ms: int = 300_000
    log_flush_scheduler_interval_ms: int = INT64_MAX
    log_flush_offset_checkpoint_interval_ms: int = 60_000
    log_flush_start_offset_checkpoint_interval_ms: int = 60_000
    replica_high_watermark_checkpoint_interval_ms: int = 5_000
    log_initial_task_delay_ms: int = 30_000
    num_recovery_threads_per_data_dir: int = 1
    num_partitions: int = 1
    log_dir_failure_timeout_ms: int = 30_000
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_dedupe_buffer_size: int = 128 * MIB
    log_cleaner_io_buffer_size: int = 512 * 1024
    log_cleaner_io_buffer_load_factor: float = 0.9
    log_cleaner_io_max_bytes_per_second: float = DOUBLE_MAX
    log_cleaner_backoff_ms: int = 15_000
    producer_id_expiration_ms: int = 24 * MS_PER_HOUR
    producer_id_expiration_check_interval_ms: int = 600_000
    log_compaction_check_interval_ms: int = 60_000
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 100 * MIB
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_segment_bytes: int = 100 * MIB
    ignored_keys: tuple[str, ...] = field(default=(), compare=False)
    """``server.properties`` keys that were not read (not storage settings), for reporting."""

    def __post_init__(self) -> None:
        for key in _BROKER_ONLY_KEYS:
            assert key.field is not None
            value = getattr(self, key.field)
            problem = _value_problem(key.kind, key.check, value)
            if problem:
                raise _invalid_value(key.name, value, problem)
        if not self.log_dirs or not all(isinstance(d, str) and d for d in self.log_dirs):
            raise _invalid_value("log.dirs", self.log_dirs, "expected at least one directory")
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise _invalid_value("log.dirs", ",".join(self.log_dirs), "a directory is repeated")
        problem = _value_problem(ConfigType.INT, _NODE_ID_CHECK, self.node_id)
        if problem:
            raise _invalid_value("node.id", self.node_id, problem)
        if not isinstance(self.log_defaults, LogConfig):
            raise InvalidConfigError(f"log_defaults {self.log_defaults!r} is not a LogConfig")
        # KafkaConfig: "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread"
        threads = self.log_cleaner_threads
        if threads > 0 and self.log_cleaner_dedupe_buffer_size // threads <= MIB:
            raise _invalid_value(
                "log.cleaner.dedupe.buffer.size",
                str(self.log_cleaner_dedupe_buffer_size),
                f"must be more than 1 MiB per cleaner thread ({threads} threads)",
            )

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """The settings of a parsed ``server.properties``; keys not read here are ignored."""
        values: dict[str, Any] = {}
        ignored: list[str] = []
        for name, text in props.items():
            key = BROKER_KEYS.get(name)
            if key is None:
                ignored.append(name)
            else:
                values[name] = _parse_checked(name, key.kind, key.check, text)

        direct: dict[str, Any] = {
            key.field: values[key.name]
            for key in _BROKER_ONLY_KEYS
            if key.field is not None and key.name in values
        }
        log_dirs_text = values.get("log.dirs")
        if log_dirs_text is None:
            log_dirs_text = values.get("log.dir", DEFAULT_LOG_DIR)
        direct["log_dirs"] = _csv_list(log_dirs_text)
        node_id, broker_id = values.get("node.id"), values.get("broker.id")
        if node_id is not None and broker_id is not None and node_id != broker_id:
            raise InvalidConfigError(
                f"node.id ({node_id}) and broker.id ({broker_id}) must be equal when both are set"
            )
        direct["node_id"] = next(
            (value for value in (node_id, broker_id) if value is not None), DEFAULT_NODE_ID
        )
        return cls(
            log_defaults=_resolve_log_defaults(values),
            ignored_keys=tuple(ignored),
            **direct,
        )

    def to_properties(self) -> dict[str, str]:
        """``server.properties`` keys that :meth:`from_properties` reads back to this config."""
        props = {"log.dirs": ",".join(self.log_dirs), "node.id": str(self.node_id)}
        for key in _BROKER_ONLY_KEYS:
            assert key.field is not None
            props[key.name] = _format_value(key.kind, getattr(self, key.field))
        for topic_key in TOPIC_CONFIG_KEYS.values():
            # The highest-priority synonym takes the value in the topic key's own unit.
            props[topic_key.synonyms[0]] = topic_key.format(
                getattr(self.log_defaults, topic_key.field)
            )
        return props


def _resolve_log_defaults(values: Mapping[str, Any]) -> LogConfig:
    """The broker's default :class:`LogConfig` from parsed broker values."""
    resolved: dict[str, Any] = {}
    for topic_key in TOPIC_CONFIG_KEYS.values():
        source = next((name for name in topic_key.synonyms if name in values), None)
        if source is None:
            continue
        value = values[source]
        multiplier = BROKER_KEYS[source].multiplier_ms
        if multiplier != 1:
            value *= multiplier
        if topic_key.name == "retention.ms" and value < 0:
            value = -1  # KafkaConfig.logRetentionTimeMillis
        problem = _value_problem(topic_key.kind, topic_key.check, value)
        if problem:
            raise _invalid_value(source, values[source], f"{problem} (as {topic_key.name})")
        resolved[topic_key.field] = value
    difference = values.get(BROKER_TIMESTAMP_DIFFERENCE_KEY)
    if difference is not None:
        # LogConfig.getMessageTimestampBefore/AfterMaxMs: Long.MAX falls back to the old key.
        for name in ("message_timestamp_before_max_ms", "message_timestamp_after_max_ms"):
            if resolved.get(name, INT64_MAX) == INT64_MAX:
                resolved[name] = difference
    try:
        return LogConfig(**resolved)
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"broker log defaults: {exc}") from None
