"""The options of seglog's Spark source, parsed and checked the way Spark's Kafka source does.

Pure Python (no pyspark): the planner, the executors and tests all use
:func:`parse_source_options`. Spark hands a data source its options with **lower-cased keys**
(``startingOffsets`` arrives as ``startingoffsets``); lookups here are case-insensitive
anyway, so a plain dict with any casing works too.

Options (what differs from Spark's Kafka source is marked *seglog*):

* where the logs are (*seglog*, replaces ``kafka.bootstrap.servers``): ``path`` = a log
  directory, or several separated by commas (Kafka's ``log.dirs``), and/or ``config`` = a
  broker ``server.properties`` whose ``log.dirs`` and topic defaults apply (``path`` given
  too replaces its ``log.dirs``, as the CLI's ``--data-dir`` does). One of them is required.
* which partitions: exactly one of ``assign`` (JSON ``{"topicA":[0,1]}``, must start with
  ``{``), ``subscribe`` (comma-separated topics, blanks trimmed and dropped) and
  ``subscribePattern`` (a Python regex searched, unanchored, in each topic name, as Scala's
  ``findFirstIn``; Kafka's internal topics, ``__consumer_offsets``, ``__transaction_state``
  and ``__share_group_state``, are not listed, as an admin listing leaves them out; other
  names starting with ``__`` are ordinary topics).
* ``startingOffsets``: ``earliest`` / ``latest`` / JSON ``{"t":{"0":23,"1":-2}}`` (-2
  earliest, -1 latest); default ``earliest`` for batch, ``latest`` for streaming. A JSON
  value must name every partition read (Spark: "you must specify all TopicPartitions").
  Precedence: ``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``;
  ``startingOffsetsByTimestampStrategy`` = ``error`` (default) or ``latest`` says what a
  timestamp no record reaches resolves to.
* ``endingOffsets`` (batch only): ``latest`` (default) / JSON (no -2); ``endingTimestamp`` >
  ``endingOffsetsByTimestamp`` > ``endingOffsets``; a timestamp no record reaches -> latest.
* ``failOnDataLoss`` (default true), ``includeHeaders`` (default false), ``minPartitions``
  (int > 0), ``maxRecordsPerPartition`` (long > 0), and for streaming
  ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` (<= max) and ``maxTriggerDelay``
  (Spark duration, default ``15m``).
* ``readCompacted`` (*seglog*, default false): read the Pulsar-style compacted view.
* ``pushFilters`` (*seglog*, default false): let filters on ``topic``, ``partition``,
  ``offset`` and ``timestamp`` narrow the scan (:mod:`seglog.spark.source`). Off by default
  because Spark 4.3 keeps the plan a pushdown made on the DataFrame it loaded: a later
  query on the *same* DataFrame without a filter, or a union of a filtered and an
  unfiltered branch of it, reuses the narrowed plan and returns too few rows. Turn it on
  for DataFrames that are scanned once, with one set of filters.
* ``kafka.isolation.level``: ``read_uncommitted`` (default) or ``read_committed``, the values
  of the Kafka consumer Spark's source hands it to. ``read_committed`` reads up to each
  partition's last stable offset (``latest`` means the LSO, as a read_committed consumer's
  end offsets do) and leaves out the records of aborted transactions; control records are
  never rows at either level. Another value is refused (Spark's consumer would fail too).
* ``kafka.*``: accepted and ignored (there is no broker to talk to), except the ones Spark
  forbids (``kafka.auto.offset.reset``, ``kafka.key.deserializer``,
  ``kafka.value.deserializer``, ``kafka.enable.auto.commit``, ``kafka.interceptor.classes``),
  rejected with Spark's reason. ``groupIdPrefix``, ``kafkaConsumer.pollTimeoutMs`` and
  ``fetchOffset.*`` are accepted and ignored.
* Any other name is refused with the closest known one ("did you mean 'startingOffsets'?"),
  where Spark's Kafka source would ignore a typo silently; every option that source
  documents is accepted, so its jobs still run unchanged. The allow-lists of the source and
  the sink, and what Spark itself passes (``path``; ``paths`` is refused with the fix), are
  in :mod:`seglog.spark.option_names`.

Every problem raises :class:`~seglog.errors.SparkOptionError` naming the option, the value
and what is allowed. The parsed :class:`SourceOptions` holds only strings, numbers and
tuples: it is pickled to the executors.

Why this module is longer than the house's ~500 lines: it is the one table of every option of
the source and its checks, with Spark's Kafka source's exact error texts; the options are read
in one place so the driver, the executors and the tests agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from seglog.config import BrokerConfig
from seglog.core.isolation import IsolationLevel
from seglog.errors import InvalidConfigError, SparkOptionError
from seglog.format.properties import parse_properties
from seglog.format.topic_names import INTERNAL_TOPICS
from seglog.spark.option_names import check_source_option_names
from seglog.storage.files import read_file_bytes
from seglog.storage.log_dir_mirror import mirror, partition_filter
from seglog.storage.object_store import ObjectLocation, is_remote, local_path_of
from seglog.storage.remote_copy_store import CopyTarget, S3Settings

EARLIEST = -2
LATEST = -1
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
MAX_SERVER_PROPERTIES_BYTES = 1024 * 1024
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000

#: kafka.* options Spark's Kafka source refuses, with its reason.
FORBIDDEN_KAFKA_OPTIONS: dict[str, str] = {
    "kafka.auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported; set the source option "
        "'startingOffsets' to 'earliest' or 'latest' to say where to start"
    ),
    "kafka.key.deserializer": (
        "Kafka option 'key.deserializer' is not supported: keys are always read as bytes; "
        "use DataFrame operations to deserialize them"
    ),
    "kafka.value.deserializer": (
        "Kafka option 'value.deserializer' is not supported: values are always read as "
        "bytes; use DataFrame operations to deserialize them"
    ),
    "kafka.enable.auto.commit": (
        "Kafka option 'enable.auto.commit' is not supported: the source commits no offsets"
    ),
    "kafka.interceptor.classes": (
        "Kafka option 'interceptor.classes' is not supported: the source returns records as "
        "bytes, so interceptors could break the query"
    ),
}

_STRATEGY_KEYS = ("assign", "subscribe", "subscribepattern")
_ENDING_KEYS = ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")
_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


class StrategyKind(Enum):
    """How the topic-partitions to read are chosen."""

    ASSIGN = "assign"
    SUBSCRIBE = "subscribe"
    SUBSCRIBE_PATTERN = "subscribePattern"


@dataclass(frozen=True, slots=True)
class Strategy:
    """``assign`` (``partitions``), ``subscribe`` (``topics``) or ``subscribePattern``."""

    kind: StrategyKind
    topics: tuple[str, ...] = ()
    partitions: tuple[tuple[str, int], ...] = ()
    pattern: str = ""

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is chosen (for ``assign``: named in it)."""
        if self.kind is StrategyKind.SUBSCRIBE:
            return topic in self.topics
        if self.kind is StrategyKind.SUBSCRIBE_PATTERN:
            return topic not in INTERNAL_TOPICS and re.search(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.partitions)


class OffsetKind(Enum):
    """What an offset option says."""

    EARLIEST = "earliest"
    LATEST = "latest"
    SPECIFIC = "specific"  # per partition offsets (-2 earliest, -1 latest)
    TIMESTAMP = "timestamp"  # one timestamp for every partition
    SPECIFIC_TIMESTAMPS = "specific_timestamps"  # per partition timestamps


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """A starting or ending position; ``values`` maps (topic, partition) to offset or ms."""

    kind: OffsetKind
    values: tuple[tuple[tuple[str, int], int], ...] = ()
    timestamp_ms: int = -1
    option: str = ""  # the option it came from, for messages

    def as_dict(self) -> dict[tuple[str, int], int]:
        """``values`` as a dict."""
        return dict(self.values)


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Parsed, checked options of one query (picklable: strings, numbers and tuples only)."""

    log_dirs: tuple[str, ...]
    config_path: str | None
    strategy: Strategy
    starting: OffsetSpec
    ending: OffsetSpec
    is_streaming: bool
    fail_on_data_loss: bool = True
    include_headers: bool = False
    read_compacted: bool = False
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    push_filters: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    starting_timestamp_strategy_latest: bool = False
    ignored: tuple[str, ...] = field(default=(), compare=False)
    compacted_copy: CopyTarget | None = None  # readCompacted from a copy in object storage
    s3: S3Settings = field(default_factory=S3Settings)  # for log directories in object storage

    def broker_config(self) -> BrokerConfig:
        """The broker config the logs are opened with (server.properties, then ``path``);
        log directories in object storage are mirrored for the topics the query reads."""
        strategy = self.strategy
        if strategy.kind is StrategyKind.ASSIGN:
            chosen = set(strategy.partitions)
            return broker_config_of(
                self.log_dirs, self.config_path, s3=self.s3, wanted=lambda t, p: (t, p) in chosen
            )
        return broker_config_of(
            self.log_dirs, self.config_path, s3=self.s3, wanted=lambda t, _: strategy.matches(t)
        )


def local_log_dirs(
    log_dirs: Sequence[str],
    s3: S3Settings | None = None,
    wanted: Callable[[str, int], bool] | None = None,
) -> tuple[str, ...]:
    """``log_dirs`` as local directories: object-store locations (``s3://...``) become their
    read-only mirrors (:mod:`seglog.storage.log_dir_mirror`) holding the partitions
    ``wanted(topic, partition)`` selects (all when None); local paths are unchanged."""
    out = []
    for directory in log_dirs:
        if not is_remote(directory):
            out.append(local_path_of(directory))
            continue
        location = ObjectLocation(directory, s3 or S3Settings())
        if not location.exists():
            raise SparkOptionError(f"log directory {directory!r} does not exist (no object there)")
        keep = partition_filter(wanted) if wanted is not None else None
        out.append(str(mirror(location, keep)))
    return tuple(out)


def broker_config_of(
    log_dirs: tuple[str, ...],
    config_path: str | None,
    *,
    s3: S3Settings | None = None,
    wanted: Callable[[str, int], bool] | None = None,
) -> BrokerConfig:
    """BrokerConfig from an optional ``server.properties`` and log dirs (which replace its);
    object-store log dirs are mirrored (:func:`local_log_dirs`)."""
    log_dirs = local_log_dirs(log_dirs, s3, wanted)
    properties: dict[str, str] = {}
    if config_path is not None:
        data = read_file_bytes(config_path, max_bytes=MAX_SERVER_PROPERTIES_BYTES)
        properties = parse_properties(data.decode("iso-8859-1"), path=config_path)
    if log_dirs:
        properties.pop("log.dir", None)
        properties["log.dirs"] = ",".join(log_dirs)
    elif "log.dirs" not in properties and "log.dir" not in properties:
        raise SparkOptionError(
            f"option 'config' ({config_path}) names no log.dirs; give option 'path' too"
        )
    try:
        return BrokerConfig.from_properties(properties)
    except InvalidConfigError as exc:
        raise SparkOptionError(f"the broker configuration is invalid: {exc}") from exc


def parse_source_options(
    options: Mapping[str, str], *, is_streaming: bool, log_dirs_required: bool = True
) -> SourceOptions:
    """Check the options of a batch (``is_streaming=False``) or streaming read
    (``log_dirs_required=False``: the caller reads ``path`` itself, as the tiered source does)."""
    check_source_option_names(options)
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    for key, reason in FORBIDDEN_KAFKA_OPTIONS.items():
        if key in opts:
            raise SparkOptionError(reason)
    log_dirs, config_path = _locations(opts) if log_dirs_required else ((), None)
    strategy = _strategy(opts)
    if is_streaming:
        for key in _ENDING_KEYS:
            if key in opts:
                raise SparkOptionError(
                    f"option {_spelled(key)!r}: ending offset not valid in streaming queries"
                )
    starting = _starting(opts, is_streaming)
    ending = OffsetSpec(OffsetKind.LATEST, option="endingOffsets")
    if not is_streaming:
        ending = _ending(opts)
        _check_batch_offsets(starting, ending)
    strategy_name = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_name not in ("error", "latest"):
        raise SparkOptionError(
            f"option 'startingOffsetsByTimestampStrategy' is {strategy_name!r}; "
            "expected 'error' or 'latest'"
        )
    max_per_trigger = _positive(opts, "maxoffsetspertrigger", LONG_MAX)
    min_per_trigger = _positive(opts, "minoffsetspertrigger", LONG_MAX)
    if (
        max_per_trigger is not None
        and min_per_trigger is not None
        and min_per_trigger > max_per_trigger
    ):
        raise SparkOptionError(
            f"option 'minOffsetsPerTrigger' ({min_per_trigger}) can't be greater than "
            f"'maxOffsetsPerTrigger' ({max_per_trigger})"
        )
    delay = DEFAULT_MAX_TRIGGER_DELAY_MS
    if "maxtriggerdelay" in opts:
        delay = parse_duration_ms(opts["maxtriggerdelay"], "maxTriggerDelay")
    return SourceOptions(
        log_dirs=log_dirs,
        config_path=config_path,
        strategy=strategy,
        starting=starting,
        ending=ending,
        is_streaming=is_streaming,
        fail_on_data_loss=_boolean(opts, "failondataloss", True),
        include_headers=_boolean(opts, "includeheaders", False),
        read_compacted=_boolean(opts, "readcompacted", False),
        isolation_level=_isolation_level(opts),
        push_filters=_boolean(opts, "pushfilters", False),
        min_partitions=_positive(opts, "minpartitions", INT_MAX),
        max_records_per_partition=_positive(opts, "maxrecordsperpartition", LONG_MAX),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=delay,
        starting_timestamp_strategy_latest=strategy_name == "latest",
        ignored=tuple(
            sorted(k for k in opts if k.startswith("kafka.") and k != ISOLATION_LEVEL_OPTION)
        ),
        compacted_copy=_compacted_copy(opts),
        s3=S3Settings.from_options(opts).resolved()
        if any(is_remote(d) for d in log_dirs)
        else S3Settings(),
    )


ISOLATION_LEVEL_OPTION = "kafka.isolation.level"


def _isolation_level(opts: Mapping[str, str]) -> IsolationLevel:
    """``kafka.isolation.level`` (default ``read_uncommitted``)."""
    text = opts.get(ISOLATION_LEVEL_OPTION)
    if text is None:
        return IsolationLevel.READ_UNCOMMITTED
    try:
        return IsolationLevel.parse(text, option=ISOLATION_LEVEL_OPTION)
    except InvalidConfigError as exc:
        raise SparkOptionError(f"option {exc}") from exc


def _compacted_copy(opts: Mapping[str, str]) -> CopyTarget | None:
    """``compactedCopy`` (``s3://bucket/prefix``, where ``seglog spark compact-copy``
    published the copies) with the ``s3.*`` options; only with ``readCompacted``."""
    uri = opts.get("compactedcopy")
    if uri is None:
        return None
    if not _boolean(opts, "readcompacted", False):
        raise SparkOptionError("option 'compactedCopy' needs option 'readCompacted' set to true")
    try:
        return CopyTarget(uri.strip(), S3Settings.from_options(opts).resolved())
    except ValueError as exc:
        raise SparkOptionError(f"option 'compactedCopy': {exc} (give s3://bucket/prefix)") from exc


def include_headers_of(options: Mapping[str, str]) -> bool:
    """Just ``includeHeaders`` (what ``DataSource.schema()`` needs), checked."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    return _boolean(opts, "includeheaders", False)


# --- pieces ------------------------------------------------------------------------------------
_SPELLING = {
    "assign": "assign",
    "subscribe": "subscribe",
    "subscribepattern": "subscribePattern",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "startingtimestamp": "startingTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "failondataloss": "failOnDataLoss",
    "includeheaders": "includeHeaders",
    "readcompacted": "readCompacted",
    "pushfilters": "pushFilters",
    "minpartitions": "minPartitions",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
}


def _spelled(key: str) -> str:
    """The option's name as the Kafka source documents it."""
    return _SPELLING.get(key, key)


def _locations(opts: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    path = opts.get("path")
    config_path = opts.get("config")
    if path is None and config_path is None:
        raise SparkOptionError(
            "option 'path' is required: a log directory, or several separated by commas "
            "(Kafka's log.dirs); or give option 'config' = a server.properties naming log.dirs"
        )
    dirs: tuple[str, ...] = ()
    if path is not None:
        dirs = tuple(d.strip() for d in path.split(",") if d.strip())
        if not dirs:
            raise SparkOptionError(f"option 'path' is {path!r}: no log directory named")
        for directory in dirs:
            if not is_remote(directory) and not Path(local_path_of(directory)).is_dir():
                raise SparkOptionError(f"option 'path': log directory {directory!r} does not exist")
    if config_path is not None and not config_path.strip():
        raise SparkOptionError("option 'config' is empty: give a server.properties path")
    return dirs, config_path


def _strategy(opts: Mapping[str, str]) -> Strategy:
    given = [key for key in _STRATEGY_KEYS if key in opts]
    names = ", ".join(_spelled(k) for k in _STRATEGY_KEYS)
    if not given:
        raise SparkOptionError(
            f"one of the following options must be specified for the seglog source: {names}"
        )
    if len(given) > 1:
        raise SparkOptionError(
            f"only one of the following options can be specified for the seglog source: "
            f"{names} (got {', '.join(_spelled(k) for k in given)})"
        )
    key = given[0]
    value = opts[key]
    if key == "assign":
        return Strategy(StrategyKind.ASSIGN, partitions=_assign(value))
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise SparkOptionError(
                f"no topics to subscribe to as specified value for option 'subscribe' is {value!r}"
            )
        return Strategy(StrategyKind.SUBSCRIBE, topics=topics)
    pattern = value.strip()
    if not pattern:
        raise SparkOptionError(
            f"pattern to subscribe is empty as specified value for option 'subscribePattern' "
            f"is {value!r}"
        )
    try:
        re.compile(pattern)
    except re.error as exc:
        raise SparkOptionError(
            f"option 'subscribePattern' {pattern!r} is not a valid regular expression: {exc}"
        ) from exc
    return Strategy(StrategyKind.SUBSCRIBE_PATTERN, pattern=pattern)


def _assign(value: str) -> tuple[tuple[str, int], ...]:
    text = value.strip()
    if not text.startswith("{"):
        raise SparkOptionError(
            f"no topicpartitions to assign as specified value for option 'assign' is "
            f"{value!r}; expected JSON such as {_ASSIGN_EXAMPLE}"
        )
    body = _json(text, "assign", _ASSIGN_EXAMPLE)
    out: list[tuple[str, int]] = []
    for topic, partitions in body.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in partitions
        ):
            raise SparkOptionError(
                f"option 'assign': topic {topic!r} needs a list of partition numbers >= 0, "
                f"got {partitions!r}; expected e.g. {_ASSIGN_EXAMPLE}"
            )
        out.extend((topic, p) for p in partitions)
    if not out:
        raise SparkOptionError(f"option 'assign' {value!r} names no topic-partition")
    return tuple(dict.fromkeys(out))


def _json(text: str, option: str, example: str) -> dict[str, object]:
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SparkOptionError(
            f"option {option!r} is not valid JSON ({exc}): expected e.g. {example}, got {text!r}"
        ) from exc
    if not isinstance(body, dict):
        raise SparkOptionError(f"option {option!r}: expected e.g. {example}, got {text!r}")
    return body


def _partition_values(
    text: str, option: str, example: str
) -> tuple[tuple[tuple[str, int], int], ...]:
    """``{"topic":{"0":n}}`` -> (((topic, 0), n), ...)."""
    body = _json(text, option, example)
    out: list[tuple[tuple[str, int], int]] = []
    for topic, per_partition in body.items():
        if not isinstance(per_partition, dict):
            raise SparkOptionError(f"option {option!r}: expected e.g. {example}, got {text!r}")
        for partition_text, value in per_partition.items():
            try:
                partition = int(partition_text)
            except ValueError:
                partition = -1
            if partition < 0 or str(partition) != str(partition_text).strip():
                raise SparkOptionError(
                    f"option {option!r}: partition {partition_text!r} of topic {topic!r} is not "
                    f"a partition number; expected e.g. {example}"
                )
            if not isinstance(value, int) or isinstance(value, bool):
                raise SparkOptionError(
                    f"option {option!r}: the value for {topic}-{partition} is {value!r}, not an "
                    f"integer; expected e.g. {example}"
                )
            out.append(((topic, partition), value))
    return tuple(out)


def _offsets(opts: Mapping[str, str], key: str, default: OffsetKind) -> OffsetSpec:
    name = _spelled(key)
    text = opts.get(key)
    if text is None:
        return OffsetSpec(default, option=name)
    word = text.strip().lower()
    if word == "earliest":
        return OffsetSpec(OffsetKind.EARLIEST, option=name)
    if word == "latest":
        return OffsetSpec(OffsetKind.LATEST, option=name)
    if not word.startswith("{"):
        raise SparkOptionError(
            f"option {name!r} is {text!r}: expected 'earliest', 'latest' or JSON such as "
            f"{_OFFSETS_EXAMPLE}"
        )
    values = _partition_values(text, name, _OFFSETS_EXAMPLE)
    for (topic, partition), offset in values:
        if offset < EARLIEST:
            raise SparkOptionError(
                f"option {name!r}: offset {offset} for {topic}-{partition} is invalid; use an "
                "offset >= 0, -2 for earliest or -1 for latest"
            )
    return OffsetSpec(OffsetKind.SPECIFIC, values=values, option=name)


def _timestamp(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise SparkOptionError(
            f"option {name!r} is {text!r}: expected a timestamp in milliseconds since the "
            "epoch (an integer >= 0)"
        )
    return value


def _timestamps(opts: Mapping[str, str], single: str, per_partition: str) -> OffsetSpec | None:
    if single in opts:
        return OffsetSpec(
            OffsetKind.TIMESTAMP,
            timestamp_ms=_timestamp(opts[single], _spelled(single)),
            option=_spelled(single),
        )
    if per_partition in opts:
        name = _spelled(per_partition)
        values = _partition_values(opts[per_partition], name, _TIMESTAMPS_EXAMPLE)
        for (topic, partition), value in values:
            if value < 0:
                raise SparkOptionError(
                    f"option {name!r}: the timestamp for {topic}-{partition} is {value}; "
                    "a timestamp cannot be negative"
                )
        return OffsetSpec(OffsetKind.SPECIFIC_TIMESTAMPS, values=values, option=name)
    return None


def _starting(opts: Mapping[str, str], is_streaming: bool) -> OffsetSpec:
    by_time = _timestamps(opts, "startingtimestamp", "startingoffsetsbytimestamp")
    if by_time is not None:
        return by_time
    return _offsets(
        opts, "startingoffsets", OffsetKind.LATEST if is_streaming else OffsetKind.EARLIEST
    )


def _ending(opts: Mapping[str, str]) -> OffsetSpec:
    by_time = _timestamps(opts, "endingtimestamp", "endingoffsetsbytimestamp")
    if by_time is not None:
        return by_time
    return _offsets(opts, "endingoffsets", OffsetKind.LATEST)


def _check_batch_offsets(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's batch rules: no latest start, no earliest end, start <= end."""
    if starting.kind is OffsetKind.LATEST:
        raise SparkOptionError(
            "option 'startingOffsets': starting offset can't be latest for batch queries"
        )
    if starting.kind is OffsetKind.SPECIFIC:
        for (topic, partition), offset in starting.values:
            if offset == LATEST:
                raise SparkOptionError(
                    f"option 'startingOffsets': the offset for {topic}-{partition} can't be "
                    "latest (-1) for batch queries"
                )
    if ending.kind is OffsetKind.EARLIEST:
        raise SparkOptionError(
            "option 'endingOffsets': ending offset can't be earliest for batch queries"
        )
    if ending.kind is OffsetKind.SPECIFIC:
        for (topic, partition), offset in ending.values:
            if offset == EARLIEST:
                raise SparkOptionError(
                    f"option 'endingOffsets': the offset for {topic}-{partition} can't be "
                    "earliest (-2) for batch queries"
                )
    if starting.kind is OffsetKind.SPECIFIC and ending.kind is OffsetKind.SPECIFIC:
        start, end = starting.as_dict(), ending.as_dict()
        if set(start) != set(end):
            raise SparkOptionError(
                "options 'startingOffsets' and 'endingOffsets' must name the same "
                f"topic-partitions: {_tps(start)} vs {_tps(end)}"
            )
        for tp, offset in start.items():
            if offset >= 0 and end[tp] >= 0 and offset > end[tp]:
                raise SparkOptionError(
                    f"the starting offset {offset} of {tp[0]}-{tp[1]} is above its ending "
                    f"offset {end[tp]}"
                )


def _tps(values: Mapping[tuple[str, int], int]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(values)) + "]"


def _boolean(opts: Mapping[str, str], key: str, default: bool) -> bool:
    text = opts.get(key)
    if text is None:
        return default
    word = text.strip().lower()
    if word in ("true", "false"):
        return word == "true"
    raise SparkOptionError(f"option {_spelled(key)!r} is {text!r}: expected 'true' or 'false'")


def _positive(opts: Mapping[str, str], key: str, maximum: int) -> int | None:
    text = opts.get(key)
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 0 < value <= maximum:
        raise SparkOptionError(
            f"invalid value {text!r} for option {_spelled(key)!r}, must be a positive integer"
            + (" (at most 2147483647)" if maximum == INT_MAX else "")
        )
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def parse_duration_ms(text: str, option: str) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``, ``2h``, ``1d``; no unit = ms)."""
    match = _DURATION.match(text)
    if match is None:
        raise SparkOptionError(
            f"option {option!r} is {text!r}: expected a duration such as 15m, 30s or 500ms"
        )
    unit = (match.group(2) or "ms").lower()
    factor = 86_400_000 if unit == "d" else _DURATION_MS[unit]
    return int(int(match.group(1)) * factor)
