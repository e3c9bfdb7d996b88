"""What every config does, and the README's configuration reference rendered from the code.

:data:`TOPIC_CONFIG_DOCS` describes every topic config of
:data:`~seglog.config.TOPIC_CONFIG_KEYS`, :data:`BROKER_SETTING_DOCS` every ``server.properties``
key of :data:`~seglog.config.BROKER_KEYS` that is not only a broker synonym of a topic config
(the synonyms are described from the topic config they set). Descriptions use Kafka's words
(``TopicConfig``, ``ServerLogConfigs``, ``CleanerConfig``) where Kafka has the config, then say
what seglog does with it.

:func:`render_reference` turns them, with the names, types, defaults and checks of
:mod:`seglog.config`, into the ``## Configuration reference`` section of README.md;
``scripts/config_reference.py --write`` puts it there, and
``tests/unit/test_config_reference.py`` fails when the README and the code disagree (a new key
without a description, a changed default).

Values are printed as Kafka prints them in its documentation (``ConfigDef.convertToString``):
integers in full (``1073741824``, ``9223372036854775807``), doubles as Java's
``Double.toString`` (``0.5``, ``1.7976931348623157E308``), booleans ``true``/``false``, lists
comma-joined (``delete``), an unset default ``null``; valid values as Kafka's validators print
themselves (``[14,...]``, ``[0,...,1]``, ``[compact, delete]``). A short gloss follows large
defaults (``(1 GiB)``, ``(7 days)``, ``(Long.MAX_VALUE)``).

This module imports only :mod:`seglog.config` and the standard library.

Why this module is longer than the house's ~500 lines: it is prose, one description per config
(the README's reference is rendered from it); its code is a short renderer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from seglog.config import (
    BROKER_KEYS,
    BROKER_TIMESTAMP_DIFFERENCE_KEY,
    DEFAULT_LOG_DIR,
    DEFAULT_NODE_ID,
    DOUBLE_MAX,
    IGNORED_TOPIC_KEYS,
    INT32_MAX,
    INT64_MAX,
    TOPIC_CONFIG_KEYS,
    BrokerKey,
    Check,
    ConfigType,
    TopicConfigKey,
)

SECTION_TITLE = "## Configuration reference"
REGENERATE_COMMAND = ".venv/bin/python scripts/config_reference.py --write"

TOPIC_CONFIG_DOCS: Mapping[str, str] = {
    "segment.bytes": (
        "This configuration controls the segment file size for the log. Retention and "
        "cleaning is always done a file at a time so a larger segment size means fewer files "
        "but less granular control over retention. seglog rolls a new segment before an "
        "append that would pass it."
    ),
    "segment.ms": (
        "This configuration controls the period of time after which Kafka will force the log "
        "to roll even if the segment file isn't full to ensure that retention can delete or "
        "compact old data. A compacted log also rolls by `max.compaction.lag.ms`."
    ),
    "segment.jitter.ms": (
        "The maximum random jitter subtracted from the scheduled segment roll time to avoid "
        "thundering herds of segment rolling."
    ),
    "segment.index.bytes": (
        "This configuration controls the size of the index that maps offsets to file "
        "positions. We preallocate this index file and shrink it only after log rolls. A full "
        "`.index` or `.timeindex` rolls the segment."
    ),
    "index.interval.bytes": (
        "This setting controls how frequently Kafka adds an index entry to its offset index. "
        "More indexing allows reads to jump closer to the exact position in the log but makes "
        "the index larger. seglog adds `.index` and `.timeindex` entries the same way."
    ),
    "flush.messages": (
        "This setting allows specifying an interval at which we will force an fsync of data "
        "written to the log. seglog fsyncs the log when this many records were appended since "
        "the recovery point."
    ),
    "flush.ms": (
        "This setting allows specifying a time interval at which we will force an fsync of "
        "data written to the log. Checked by the flusher every "
        "`log.flush.scheduler.interval.ms`."
    ),
    "retention.bytes": (
        "This configuration controls the maximum size a partition (which consists of log "
        "segments) can grow to before we will discard old log segments to free up space if we "
        'are using the "delete" retention policy. -1: no size limit.'
    ),
    "retention.ms": (
        "This configuration controls the maximum time we will retain a log before we will "
        'discard old log segments to free up space if we are using the "delete" retention '
        "policy. If set to -1, no time limit is applied. A segment's age is its largest "
        "record timestamp."
    ),
    "max.message.bytes": (
        "The largest record batch size allowed by Kafka (after compression if compression is "
        "enabled). Larger batches are rejected on append (`RecordTooLargeError`); seglog's "
        "producer and the Spark sink build batches below it."
    ),
    "file.delete.delay.ms": (
        "The time to wait before deleting a file from the filesystem. Deleted segments are "
        "renamed `*.deleted` first and unlinked this much later."
    ),
    "delete.retention.ms": (
        "The amount of time to retain delete tombstone markers for log compacted topics. "
        "Used by the log cleaner (KIP-534 delete horizon) and by the compacted-copy compactor."
    ),
    "min.compaction.lag.ms": (
        "The minimum time a message will remain uncompacted in the log. Only applicable for "
        "logs that are being compacted."
    ),
    "max.compaction.lag.ms": (
        "The maximum time a message will remain ineligible for compaction in the log. Only "
        "applicable for logs that are being compacted. A log with older dirty records is "
        "cleaned whatever its dirty ratio."
    ),
    "min.cleanable.dirty.ratio": (
        "This configuration controls how frequently the log compactor will attempt to clean "
        "the log (assuming log compaction is enabled). A log is cleaned when the share of its "
        "cleanable bytes not cleaned yet is above this ratio."
    ),
    "cleanup.policy": (
        'This config designates the retention policy to use on log segments. The "delete" '
        "policy will discard old segments when their retention time or size limit has been "
        'reached. The "compact" policy will enable log compaction, which retains the latest '
        "value for each key; both may be given (`compact,delete`)."
    ),
    "compression.type": (
        "Specify the final compression type for a given topic. seglog: the codec of the "
        "batches it builds (`produce`, `Log.append_records`, the Spark sink; `producer` means "
        "uncompressed there); batches appended as they are keep their own codec."
    ),
    "compression.gzip.level": (
        "The compression level to use if compression.type is set to gzip. Checked; seglog "
        "compresses at the codec's default level."
    ),
    "compression.lz4.level": (
        "The compression level to use if compression.type is set to lz4. Checked; seglog "
        "compresses at the codec's default level."
    ),
    "compression.zstd.level": (
        "The compression level to use if compression.type is set to zstd. Checked; seglog "
        "compresses at the codec's default level."
    ),
    "preallocate": (
        "True if we should preallocate the file on disk when creating a new log segment "
        "(`.log` files start at `segment.bytes` and are trimmed on roll and close; after a "
        "crash, recovery cuts the zero tail and keeps every record)."
    ),
    "message.timestamp.type": (
        "Define whether the timestamp in the message is message create time or log append "
        "time. With `LogAppendTime` appends are stamped with the clock's time."
    ),
    "message.timestamp.before.max.ms": (
        "The allowable timestamp difference between the broker's timestamp and the message "
        "timestamp, when the message timestamp is earlier; with `CreateTime` a batch outside "
        "it is rejected."
    ),
    "message.timestamp.after.max.ms": (
        "The allowable timestamp difference between the broker's timestamp and the message "
        "timestamp, when the message timestamp is later; with `CreateTime` a batch outside it "
        "is rejected."
    ),
    "compaction.threshold.bytes": (
        "seglog's own (Pulsar's `brokerServiceCompactionThresholdInBytes`): run the "
        "compacted-copy compactor when the log after the copy's horizon holds more bytes than "
        "this; 0 turns it off. Checked every `log.compaction.check.interval.ms`."
    ),
    "compaction.retain.null.key": (
        "seglog's own (Pulsar's `topicCompactionRetainNullKey`): keep keyless records in the "
        "compacted copy."
    ),
    "compaction.strategy": (
        "seglog's own (Kafka's KIP-280, never merged there): which record of a key both "
        "compactors keep: the latest offset, the highest record timestamp, or the highest "
        "decimal number in the named header; ties go to the later offset."
    ),
}
"""One description per topic config of :data:`~seglog.config.TOPIC_CONFIG_KEYS`."""

BROKER_SETTING_DOCS: Mapping[str, str] = {
    "log.dirs": (
        "A comma-separated list of the directories where the log data is stored. If not set, "
        "the value in log.dir is used. `--data-dir DIR` (repeatable) replaces it."
    ),
    "log.dir": (
        "The directory in which the log data is kept (supplemental for log.dirs property). "
        "The `seglog` command has no default directory: it asks for `--data-dir`."
    ),
    "node.id": (
        "The node ID associated with the roles this process is playing. Written to "
        "`meta.properties` and shown by `log-dirs describe`."
    ),
    "broker.id": (
        "The broker id for this server. A synonym of `node.id` (which wins; both set must be "
        "equal)."
    ),
    "log.retention.check.interval.ms": (
        "The frequency in milliseconds that the log cleaner checks whether any log is "
        "eligible for deletion (the retention task of `seglog maintain`)."
    ),
    "log.flush.scheduler.interval.ms": (
        "The frequency in ms that the log flusher checks whether any log needs to be flushed "
        "to disk. Also the default of `flush.ms` when `log.flush.interval.ms` is not set."
    ),
    "log.flush.offset.checkpoint.interval.ms": (
        "The frequency with which we update the persistent record of the last flush which "
        "acts as the log recovery point (`recovery-point-offset-checkpoint`)."
    ),
    "log.flush.start.offset.checkpoint.interval.ms": (
        "The frequency with which we update the persistent record of log start offset "
        "(`log-start-offset-checkpoint`)."
    ),
    "replica.high.watermark.checkpoint.interval.ms": (
        "The frequency with which the high watermark is saved out to disk "
        "(`replication-offset-checkpoint`)."
    ),
    "log.initial.task.delay.ms": (
        "The initial task delay in millisecond when initializing tasks in LogManager (before "
        "the first run of every periodic task)."
    ),
    "num.recovery.threads.per.data.dir": (
        "The number of threads per data directory to be used for log recovery at startup and "
        "flushing at shutdown. Read and checked; not used by seglog."
    ),
    "num.partitions": (
        "The default number of log partitions per topic: the partition count of `topics "
        "create` without `--partitions`."
    ),
    "log.dir.failure.timeout.ms": (
        "If the broker is unable to successfully communicate to the controller that some log "
        "directory has failed for longer than this time, the broker will fail and shut down. "
        "Read and checked; not used (seglog has no controller)."
    ),
    "log.cleaner.enable": (
        "Enable the log cleaner process to run on the server. When false no cleaner threads "
        "start (`clean --once` still runs a pass)."
    ),
    "log.cleaner.threads": "The number of background threads to use for log cleaning.",
    "log.cleaner.dedupe.buffer.size": (
        "The total memory used for log deduplication across all cleaner threads: the offset "
        "map of each thread gets its share (more than 1 MiB each)."
    ),
    "log.cleaner.io.buffer.size": (
        "The total memory used for log cleaner I/O buffers across all cleaner threads. "
        "Read and checked; not used by seglog's cleaner."
    ),
    "log.cleaner.io.buffer.load.factor": (
        "Log cleaner dedupe buffer load factor. The percentage full the dedupe buffer can "
        "become; past it a cleaning round is partial."
    ),
    "log.cleaner.io.max.bytes.per.second": (
        "The log cleaner will be throttled so that the sum of its read and write i/o will be "
        "less than this value on average."
    ),
    "log.cleaner.backoff.ms": "The amount of time to sleep when there are no logs to clean.",
    "producer.id.expiration.ms": (
        "The time in ms that a topic partition leader will wait before expiring producer IDs. "
        "The cleaner keeps the last batch of a producer seen more recently than this."
    ),
    "producer.id.expiration.check.interval.ms": (
        "The interval at which to remove producer IDs that have expired due to "
        "producer.id.expiration.ms passing. Read and checked; not used by seglog."
    ),
    "log.compaction.check.interval.ms": (
        "seglog's own (Pulsar's `brokerServiceCompactionMonitorIntervalInSeconds`): how often "
        "`seglog maintain` checks each topic's `compaction.threshold.bytes`."
    ),
    "offsets.topic.num.partitions": (
        "The number of partitions for the offset commit topic (should not change after "
        "deployment): `__consumer_offsets` is created with it on first use, and a group's "
        "partition is `abs(groupId.hashCode()) % offsets.topic.num.partitions`."
    ),
    "offsets.topic.segment.bytes": (
        "The offsets topic segment bytes should be kept relatively small in order to "
        "facilitate faster log compaction and cache loads: the `segment.bytes` of "
        "`__consumer_offsets` when seglog creates it."
    ),
    "offsets.retention.minutes": (
        "For subscribed consumers, committed offset of a specific partition will be expired "
        "and discarded when 1) this retention period has elapsed after the consumer group "
        "loses all its consumers (i.e. becomes empty); 2) this retention period has elapsed "
        "since the last time an offset is committed for the partition and the group is no "
        "longer subscribed to the corresponding topic. For standalone consumers (using manual "
        "assignment), offsets will be expired after this retention period has elapsed since "
        "the time of last commit. Expired offsets are written as tombstones."
    ),
    "offsets.retention.check.interval.ms": "Frequency at which to check for stale offsets.",
    "offset.metadata.max.bytes": (
        "The maximum size for a metadata entry associated with an offset commit."
    ),
    "transaction.state.log.num.partitions": (
        "The number of partitions for the transaction topic (should not change after "
        "deployment): `__transaction_state` is created with it on first use, and a "
        "transactional id's partition is `abs(transactionalId.hashCode()) % "
        "transaction.state.log.num.partitions`."
    ),
    "transaction.state.log.segment.bytes": (
        "The transaction topic segment bytes should be kept relatively small in order to "
        "facilitate faster log compaction and cache loads: the `segment.bytes` of "
        "`__transaction_state` when seglog creates it."
    ),
    BROKER_TIMESTAMP_DIFFERENCE_KEY: (
        "Deprecated in Kafka (removed in 4.0): the default of "
        "`message.timestamp.before.max.ms` and `message.timestamp.after.max.ms` when those are "
        "left at 9223372036854775807."
    ),
}
"""One description per broker setting of :data:`~seglog.config.BROKER_KEYS` that is not only
the broker synonym of a topic config, in the order of the README's table."""

#: Defaults of broker keys that :class:`~seglog.config.BrokerKey` does not carry (they are
#: resolved by ``BrokerConfig.from_properties`` itself); None is printed ``null``.
_OTHER_BROKER_DEFAULTS: Mapping[str, Any] = {
    "log.dirs": None,
    "log.dir": DEFAULT_LOG_DIR,
    "node.id": DEFAULT_NODE_ID,
    "broker.id": None,
    BROKER_TIMESTAMP_DIFFERENCE_KEY: INT64_MAX,
}

_UNITS_MS = ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute"), (1_000, "second"))
_UNITS_BYTES = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


class MissingDocsError(LookupError):
    """A config has no description (or a description names no config)."""


def is_synonym_only(key: BrokerKey) -> bool:
    """Whether ``key`` only sets the default of a topic config (no broker field of its own)."""
    return key.topic_key is not None and key.field is None


def java_double(value: float) -> str:
    """Java's ``Double.toString`` of a finite ``value`` (``0.5``, ``1.7976931348623157E308``)."""
    text = repr(float(value))
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return text  # repr is plain in this range, with the shortest digits, as Java's
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = f"{digits[0]}." + ("".join(map(str, digits[1:])) or "0")
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(digits) - 1}"


def kafka_text(kind: ConfigType, value: Any) -> str:
    """``value`` as Kafka's documentation prints a default (``ConfigDef.convertToString``)."""
    if value is None:
        return "null"
    if kind is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if kind is ConfigType.LIST:
        return ",".join(value)
    if kind is ConfigType.DOUBLE:
        return java_double(value)
    return str(value)


def _gloss(name: str, kind: ConfigType, value: Any) -> str:
    """A short human reading of a large default: ``1 GiB``, ``7 days``, ``Long.MAX_VALUE``."""
    if value is None or kind in (ConfigType.BOOLEAN, ConfigType.LIST, ConfigType.STRING):
        return ""
    if kind is ConfigType.DOUBLE:
        return "Double.MAX_VALUE" if value == DOUBLE_MAX else ""
    if value == INT64_MAX:
        return "Long.MAX_VALUE"
    if value == INT32_MAX:
        return "Integer.MAX_VALUE"
    if value <= 0:
        return ""
    if name.endswith(".ms"):
        for size, unit in _UNITS_MS:
            if value >= size and value % size == 0 and value != 1_000:
                count = value // size
                return f"{count} {unit}{'s' if count != 1 else ''}"
    if name.endswith(".bytes") or name.endswith(".size"):
        for size, unit in _UNITS_BYTES:
            if value >= size:
                count, rest = divmod(value, size)
                if rest == 0:
                    return f"{count} {unit}"
                if rest < 1024 and value >= 1 << 20:
                    return f"{count} {unit} + {rest}"
    return ""


def default_text(name: str, kind: ConfigType, value: Any) -> str:
    """The default cell: Kafka's text in code format, then a gloss if it helps."""
    text = f"`{kafka_text(kind, value)}`"
    gloss = _gloss(name, kind, value)
    return f"{text} ({gloss})" if gloss else text


_OTHER_CHECKS = {"> 0": "(0,...]", "in (0, 1]": "(0,...,1]"}
_AT_LEAST = re.compile(r">= (\S+)")
_BETWEEN = re.compile(r"in \[(\S+), (\S+)\]")
_BETWEEN_OR = re.compile(r"in \[(\S+), (\S+)\] or (\S+)")


def valid_values_text(kind: ConfigType, check: Check) -> str:
    """The valid values as Kafka's validators print themselves (``[14,...]``, ``[a, b]``)."""
    expected = check.expected
    if not expected:
        return "`true`, `false`" if kind is ConfigType.BOOLEAN else "any"
    for pattern, template in (
        (_AT_LEAST, "[{0},...]"),
        (_BETWEEN_OR, "[{0},...,{1}] or {2}"),
        (_BETWEEN, "[{0},...,{1}]"),
    ):
        match = pattern.fullmatch(expected)
        if match:
            return f"`{template.format(*match.groups())}`"
    for prefix in ("one of ", "with items from "):
        if expected.startswith(prefix):
            return f"`[{expected.removeprefix(prefix)}]`"
    return f"`{_OTHER_CHECKS.get(expected, expected)}`"  # seglog's own checks


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _synonym_default(topic_key: TopicConfigKey, synonym: BrokerKey) -> Any:
    """A synonym's own default: the lowest-priority synonym carries the topic default (in its
    unit); the ones above it are unset (``null``), as in Kafka (``log.roll.ms`` null,
    ``log.roll.hours`` 168)."""
    if synonym.name != topic_key.synonyms[-1]:
        return None
    if synonym.multiplier_ms == 1:
        return topic_key.default
    default: int = topic_key.default
    return default // synonym.multiplier_ms


def check_documented() -> None:
    """Raise :class:`MissingDocsError` naming every config without (or extra) description."""
    broker_names = [name for name, key in BROKER_KEYS.items() if not is_synonym_only(key)]
    problems = []
    for kind, names, docs in (
        ("topic config", list(TOPIC_CONFIG_KEYS), TOPIC_CONFIG_DOCS),
        ("broker setting", broker_names, BROKER_SETTING_DOCS),
    ):
        missing = [name for name in names if name not in docs]
        extra = [name for name in docs if name not in names]
        if missing:
            problems.append(f"{kind}s without a description: {', '.join(missing)}")
        if extra:
            problems.append(f"descriptions of unknown {kind}s: {', '.join(extra)}")
    if problems:
        raise MissingDocsError(
            "; ".join(problems) + " (edit src/seglog/config_docs.py, then run "
            f"{REGENERATE_COMMAND})"
        )


def _topic_table() -> list[str]:
    lines = [
        _row(
            [
                "topic config",
                "broker synonyms (first wins)",
                "type",
                "default",
                "valid values",
                "what it does",
            ]
        ),
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key in TOPIC_CONFIG_KEYS.values():
        lines.append(
            _row(
                [
                    f"`{key.name}`",
                    ", ".join(f"`{synonym}`" for synonym in key.synonyms),
                    key.kind.value,
                    default_text(key.name, key.kind, key.default),
                    valid_values_text(key.kind, key.check),
                    TOPIC_CONFIG_DOCS[key.name],
                ]
            )
        )
    return lines


def _broker_table() -> list[str]:
    lines = [
        _row(["broker setting", "type", "default", "valid values", "what it does"]),
        "| --- | --- | --- | --- | --- |",
    ]
    for name, description in BROKER_SETTING_DOCS.items():
        key = BROKER_KEYS[name]
        default = key.default if key.field is not None else _OTHER_BROKER_DEFAULTS[name]
        lines.append(
            _row(
                [
                    f"`{name}`",
                    key.kind.value,
                    default_text(name, key.kind, default),
                    valid_values_text(key.kind, key.check),
                    description,
                ]
            )
        )
    return lines


def _synonym_table() -> list[str]:
    lines = [
        _row(["broker setting", "type", "default", "valid values", "the default of"]),
        "| --- | --- | --- | --- | --- |",
    ]
    for name, key in BROKER_KEYS.items():
        if not is_synonym_only(key):
            continue
        assert key.topic_key is not None
        topic_key = TOPIC_CONFIG_KEYS[key.topic_key]
        sets = f"`{topic_key.name}`"
        if key.multiplier_ms != 1:
            sets += f", in {name.rsplit('.', 1)[1]}"
        above = topic_key.synonyms[: topic_key.synonyms.index(name)]
        if above:
            verb = "is" if len(above) == 1 else "are"
            sets += " (when " + " and ".join(f"`{a}`" for a in above) + f" {verb} not set)"
        lines.append(
            _row(
                [
                    f"`{name}`",
                    key.kind.value,
                    default_text(name, key.kind, _synonym_default(topic_key, key)),
                    valid_values_text(key.kind, key.check),
                    sets,
                ]
            )
        )
    return lines


def render_reference() -> str:
    """The whole ``## Configuration reference`` section of README.md, ending with a newline."""
    check_documented()
    ignored = ", ".join(f"`{name}`" for name in sorted(IGNORED_TOPIC_KEYS))
    parts = [
        SECTION_TITLE,
        "",
        "<!-- Generated from src/seglog/config.py and src/seglog/config_docs.py by",
        f"     {REGENERATE_COMMAND}; tests/unit/test_config_reference.py checks it. -->",
        "",
        "Topic configs are given with `topics create|alter --config KEY=VALUE` (and to",
        "`LogManager.create_topic`); a topic override wins over the broker default, which comes",
        "from the `--config server.properties` synonyms, the first one set winning (`*.hours` and",
        "`*.minutes` are converted to milliseconds; a negative `log.retention.*` means -1).",
        "Values are parsed and checked as Kafka's `ConfigDef` does; defaults and valid values are",
        "printed as Kafka's documentation prints them. Descriptions are Kafka's where Kafka has",
        "the config, then what seglog does with it.",
        "",
        *_topic_table(),
        "",
        f"Kafka topic configs accepted and ignored (not storage): {ignored}; "
        "`remote.storage.enable=true` is rejected (no tiered storage).",
        "",
        "Broker settings read from `server.properties` (any other key is ignored):",
        "",
        *_broker_table(),
        "",
        "The broker defaults of the topic configs:",
        "",
        *_synonym_table(),
        "",
    ]
    return "\n".join(parts)


def readme_section(readme_text: str) -> str | None:
    """The ``## Configuration reference`` section of ``readme_text`` (up to the next ``## ``
    heading), or None when there is none."""
    start = readme_text.find(f"\n{SECTION_TITLE}\n")
    if start < 0:
        return None
    start += 1
    end = readme_text.find("\n## ", start + len(SECTION_TITLE))
    return readme_text[start : end if end >= 0 else len(readme_text)]
