"""The metrics of a :class:`~seglog.engine.log_manager.LogManager`, gathered as plain data.

This module only *gathers* figures from a manager (no exposition format, no HTTP); the
command line renders them as Prometheus text (:mod:`seglog.cli.metrics`). It works on a
read-only manager too: nothing here writes, locks or changes any state.

**Names.** A metric Kafka has keeps Kafka's JMX name, mapped to a Prometheus name by one rule
(:func:`kafka_metric_name`)::

    <domain with "." -> "_">_<type>_<name with every character outside [A-Za-z0-9_] -> "_">

and the JMX name's other key properties become labels with the same names
(``topic``, ``partition``, ``logDirectory``). So ``kafka.log:type=Log,name=Size,topic=t,
partition=0`` is ``kafka_log_Log_Size{topic="t",partition="0"}`` and
``kafka.log:type=LogCleaner,name=max-buffer-utilization-percent`` is
``kafka_log_LogCleaner_max_buffer_utilization_percent``. The case of Kafka's names is kept
(``NumLogSegments``, ``DeadThreadCount``), so a name can be looked up in Kafka's documentation
by undoing the one rule. Values are Kafka's (the cleaner gauges are ints, as Kafka's are).

Figures Kafka has no metric for are named ``seglog_<area>_<what>[_<unit>]`` in Prometheus'
usual snake case, units spelled out (``_bytes``, ``_seconds``); counters are listed without
the ``_total`` suffix, which the exposition adds.

**The metrics** (K = Kafka's; labels in braces):

========================================================  ====  ================================
name                                                      kind  what
========================================================  ====  ================================
kafka_log_Log_Size{topic,partition}                       K     bytes of the segments
kafka_log_Log_NumLogSegments{topic,partition}             K     segment count
kafka_log_Log_LogStartOffset{topic,partition}             K     log start offset
kafka_log_Log_LogEndOffset{topic,partition}               K     log end offset
kafka_server_ReplicaManager_ProducerIdCount               K     producer ids of all partitions
seglog_log_producer_id_count{topic,partition}                   producer ids the partition keeps
seglog_log_last_stable_offset{topic,partition}                  the last stable offset
seglog_log_ongoing_transactions{topic,partition}                transactions open now
kafka_log_LogManager_OfflineLogDirectoryCount             K     roots that are no readable dir
kafka_log_LogManager_LogDirectoryOffline{logDirectory}    K     1 when that root is offline
kafka_log_LogCleaner_max_buffer_utilization_percent       K     cleaner gauges (Kafka's), from
kafka_log_LogCleaner_cleaner_recopy_percent               K     the threads' last rounds (0 in
kafka_log_LogCleaner_max_clean_time_secs                  K     a process that has not cleaned)
kafka_log_LogCleaner_max_compaction_delay_secs            K
kafka_log_LogCleaner_DeadThreadCount                      K
kafka_log_LogCleanerManager_max_dirty_percent             K     at the last choice of a log
kafka_log_LogCleanerManager_time_since_last_run_ms        K
kafka_log_LogCleanerManager_uncleanable_partitions_count  K     per logDirectory (KIP-346)
kafka_log_LogCleanerManager_uncleanable_bytes             K     per logDirectory (KIP-346)
seglog_log_cleaner_running                                      1 while cleaner threads run
seglog_log_cleaner_dirty_ratio{topic,partition}                 dirty ratio now (compacted logs)
seglog_retention_deleted_segments{topic,partition,rule}   ctr   deleted by this process
seglog_retention_deleted_bytes{topic,partition,rule}      ctr   their bytes
seglog_retention_pending_segments{topic,partition}              retention would delete now
seglog_retention_pending_bytes{topic,partition}                 their bytes
seglog_compaction_state{topic,partition,state}                  1 for the compactor's state
seglog_compaction_horizon{topic,partition}                      published horizon (-1: none)
seglog_compaction_backlog_bytes{topic,partition}                bytes after the horizon
seglog_compaction_last_run_<figure>{topic,partition}            the last run's figures (below)
seglog_metrics_collection_errors                                figures that failed to read
========================================================  ====  ================================

The producer-state gauges are Kafka's where Kafka has them:
``kafka_cluster_Partition_LastStableOffsetLag{topic,partition}`` (K, the high watermark minus
the LSO; too long a name for the table) is a ``kafka.cluster:type=Partition`` gauge and
``ProducerIdCount`` a broker-wide ``kafka.server:type=ReplicaManager`` one (the sum over
partitions); seglog adds the count per partition (what the broker's figure sums), the LSO
itself and the open transactions, which say where a ``read_committed`` reader stops and why.

The compactor's last-run figures, after Pulsar's ``pulsar_compaction_*`` (which are
per-broker counters; seglog keeps the last run per partition): ``records_read``,
``records_kept``, ``records_removed`` (Pulsar's ``removed_event_count``), ``keys``,
``bytes_read``, ``bytes_written``, ``copy_bytes`` (``compacted_entries_size``), ``segments``,
``duration_seconds`` and ``started_timestamp_seconds``. A partition whose compactor never ran
has no last-run samples. ``rule`` is the retention rule as ``seglog retention --json`` names it
(``retention.ms``, ``retention.bytes``, ``log start offset``).

Collection reads live state other threads change (a scrape runs beside the cleaner and the
scheduler): each figure is read once, so a scrape is not one atomic snapshot, and a
partition whose files change under the read (a segment deleted mid-scrape) is skipped for
that scrape and counted in ``seglog_metrics_collection_errors`` instead of failing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog.engine.compaction.compactor import copy_store
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition

if TYPE_CHECKING:
    from seglog.engine.log import Log
    from seglog.engine.log_manager import LogManager


GAUGE = "gauge"
COUNTER = "counter"
KAFKA_LOG_DOMAIN = "kafka.log"
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
COMPACTION_STATES = ("NOT_RUN", "RUNNING", "SUCCESS", "ERROR")
_TP_LABELS = ("topic", "partition")

#: The compactor's last-run figures: (status figure key, metric suffix, scale to the unit).
COMPACTION_FIGURES: tuple[tuple[str, str, float], ...] = (
    ("records_read", "records_read", 1.0),
    ("records_kept", "records_kept", 1.0),
    ("records_removed", "records_removed", 1.0),
    ("keys", "keys", 1.0),
    ("bytes_read", "bytes_read", 1.0),
    ("bytes_written", "bytes_written", 1.0),
    ("copy_bytes", "copy_bytes", 1.0),
    ("segments", "segments", 1.0),
    ("duration_s", "duration_seconds", 1.0),
    ("started_ms", "started_timestamp_seconds", 0.001),
)


def kafka_metric_name(domain: str, type_: str, name: str) -> str:
    """The Prometheus name of Kafka's JMX metric ``<domain>:type=<type>,name=<name>``."""
    parts = (domain.replace(".", "_"), type_, name)
    return "_".join(_NOT_NAME_CHARS.sub("_", part) for part in parts)


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of a metric: its label values (in the family's label order) and the value."""

    label_values: tuple[str, ...]
    value: float


@dataclass(frozen=True, slots=True)
class MetricFamily:
    """A metric: name, kind, help, where its name comes from, labels and samples.

    Invariants: ``name`` matches ``[a-zA-Z_][a-zA-Z0-9_]*``; a counter's name has no
    ``_total`` suffix; every sample has one value per label name.
    """

    name: str
    kind: str  # GAUGE or COUNTER
    help: str
    source: str  # Kafka's JMX name ("kafka.log:type=Log,name=Size"), or "seglog"
    label_names: tuple[str, ...]
    samples: tuple[Sample, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (``seglog metrics --json``)."""
        return {
            "name": self.name,
            "type": self.kind,
            "help": self.help,
            "source": self.source,
            "samples": [
                {
                    "labels": dict(zip(self.label_names, s.label_values, strict=True)),
                    "value": s.value,
                }
                for s in self.samples
            ],
        }


def _kafka(
    type_: str,
    name: str,
    help_text: str,
    samples: Sequence[Sample],
    label_names: tuple[str, ...] = (),
) -> MetricFamily:
    return MetricFamily(
        kafka_metric_name(KAFKA_LOG_DOMAIN, type_, name),
        GAUGE,
        help_text,
        f"{KAFKA_LOG_DOMAIN}:type={type_},name={name}",
        label_names,
        tuple(samples),
    )


def _seglog(
    name: str,
    help_text: str,
    samples: Sequence[Sample],
    label_names: tuple[str, ...] = _TP_LABELS,
    kind: str = GAUGE,
) -> MetricFamily:
    return MetricFamily(f"seglog_{name}", kind, help_text, "seglog", label_names, tuple(samples))


def _tp(tp: TopicPartition) -> tuple[str, str]:
    return (tp.topic, str(tp.partition))


# --- collection -------------------------------------------------------------------------------


def _is_offline(path: Path) -> bool:
    try:
        return not path.is_dir()
    except OSError:
        return True


def _cleaner_families(manager: LogManager) -> list[MetricFamily]:
    cleaner = manager.log_cleaner
    gauges = cleaner.metrics()  # Kafka's names and values

    def one(type_: str, name: str, help_text: str) -> MetricFamily:
        return _kafka(type_, name, help_text, [Sample((), gauges[name])])

    by_dir: Mapping[str, tuple[int, int]] = manager.cleaner_manager.uncleanable_bytes_by_dir()
    return [
        one(
            "LogCleaner",
            "max-buffer-utilization-percent",
            "Largest offset-map use of the cleaner threads' last rounds, in percent.",
        ),
        one(
            "LogCleaner",
            "cleaner-recopy-percent",
            "Bytes written over bytes read by the threads' last rounds, in percent.",
        ),
        one("LogCleaner", "max-clean-time-secs", "Longest last round of a cleaner thread (s)."),
        one(
            "LogCleaner",
            "max-compaction-delay-secs",
            "Largest delay past max.compaction.lag.ms seen at the last choice (s).",
        ),
        one("LogCleaner", "DeadThreadCount", "Cleaner threads that died."),
        one(
            "LogCleanerManager",
            "max-dirty-percent",
            "Largest dirty ratio seen at the last choice of a log to clean, in percent.",
        ),
        one(
            "LogCleanerManager",
            "time-since-last-run-ms",
            "Milliseconds since the cleaner last chose a log (or since the process started).",
        ),
        _kafka(
            "LogCleanerManager",
            "uncleanable-partitions-count",
            "Partitions marked uncleanable (KIP-346), per log directory.",
            [Sample((d,), float(c)) for d, (c, _) in sorted(by_dir.items())],
            ("logDirectory",),
        ),
        _kafka(
            "LogCleanerManager",
            "uncleanable-bytes",
            "Dirty bytes of the uncleanable partitions, per log directory.",
            [Sample((d,), float(b)) for d, (_, b) in sorted(by_dir.items())],
            ("logDirectory",),
        ),
        _seglog(
            "log_cleaner_running",
            "1 while the cleaner threads run in this process.",
            [Sample((), 1.0 if cleaner.is_running else 0.0)],
            (),
        ),
    ]


def collect_metrics(manager: LogManager) -> list[MetricFamily]:
    """Every metric of ``manager`` (module docstring), in a stable order."""
    logs = sorted(manager.logs().items())
    errors = 0
    size: list[Sample] = []
    segments: list[Sample] = []
    starts: list[Sample] = []
    ends: list[Sample] = []
    pending_segments: list[Sample] = []
    pending_bytes: list[Sample] = []
    for tp, log in logs:
        labels = _tp(tp)
        try:
            log_segments = log.segments
            values = (
                float(sum(s.size for s in log_segments)),
                float(len(log_segments)),
                float(log.log_start_offset),
                float(log.log_end_offset),
            )
            plan = log.plan_retention()
        except (SeglogError, OSError):
            errors += 1
            continue
        size.append(Sample(labels, values[0]))
        segments.append(Sample(labels, values[1]))
        starts.append(Sample(labels, values[2]))
        ends.append(Sample(labels, values[3]))
        pending_segments.append(Sample(labels, float(len(plan.deletions))))
        pending_bytes.append(Sample(labels, float(plan.size_bytes)))

    roots = [Path(d) for d in manager.broker.log_dirs]
    offline = [_is_offline(root) for root in roots]
    families = [
        _kafka("Log", "Size", "Bytes of the partition's segments.", size, _TP_LABELS),
        _kafka("Log", "NumLogSegments", "Segments of the partition.", segments, _TP_LABELS),
        _kafka("Log", "LogStartOffset", "The partition's log start offset.", starts, _TP_LABELS),
        _kafka("Log", "LogEndOffset", "The partition's log end offset.", ends, _TP_LABELS),
        _kafka(
            "LogManager",
            "OfflineLogDirectoryCount",
            "Log directories (roots of log.dirs) that are not readable directories.",
            [Sample((), float(sum(offline)))],
        ),
        _kafka(
            "LogManager",
            "LogDirectoryOffline",
            "1 when the log directory is offline.",
            [Sample((str(r),), 1.0 if o else 0.0) for r, o in zip(roots, offline, strict=True)],
            ("logDirectory",),
        ),
        *_cleaner_families(manager),
    ]

    dirty: list[Sample] = []
    try:
        for candidate in manager.cleaner_manager.candidates(manager.clock.now_ms()):
            dirty.append(Sample(_tp(candidate.topic_partition), candidate.to_clean.cleanable_ratio))
    except (SeglogError, OSError):
        errors += 1
        dirty = []
    families.append(
        _seglog(
            "log_cleaner_dirty_ratio",
            "Dirty bytes over cleanable bytes of each compacted partition, now.",
            dirty,
        )
    )

    counts = sorted(manager.retention_counters.snapshot().items())
    retention_labels = ("topic", "partition", "rule")
    families += [
        _seglog(
            "retention_deleted_segments",
            "Segments retention deleted in this process.",
            [Sample((*_tp(tp), rule), float(n)) for (tp, rule), (n, _) in counts],
            retention_labels,
            COUNTER,
        ),
        _seglog(
            "retention_deleted_bytes",
            "Bytes of the segments retention deleted in this process.",
            [Sample((*_tp(tp), rule), float(b)) for (tp, rule), (_, b) in counts],
            retention_labels,
            COUNTER,
        ),
        _seglog(
            "retention_pending_segments",
            "Segments retention would delete now.",
            pending_segments,
        ),
        _seglog("retention_pending_bytes", "Bytes retention would delete now.", pending_bytes),
    ]

    producers, producer_errors = _producer_families(logs)
    families += producers
    errors += producer_errors
    compaction, compaction_errors = _compaction_families(manager, logs)
    families += compaction
    families.append(
        _seglog(
            "metrics_collection_errors",
            "Partitions (or passes) whose figures could not be read in this scrape.",
            [Sample((), float(errors + compaction_errors))],
            (),
        )
    )
    return families


def _producer_families(
    logs: Sequence[tuple[TopicPartition, Log]],
) -> tuple[list[MetricFamily], int]:
    """Producer state per partition (module docstring); and the partitions that failed."""
    errors = 0
    counts: list[Sample] = []
    lags: list[Sample] = []
    stable: list[Sample] = []
    ongoing: list[Sample] = []
    for tp, log in logs:
        labels = _tp(tp)
        try:
            values = (
                log.producer_state.producer_count,
                log.high_watermark,
                log.last_stable_offset,
                len(log.ongoing_transactions()),
            )
        except (SeglogError, OSError):
            errors += 1
            continue
        producer_count, high_watermark, lso, open_txns = values
        counts.append(Sample(labels, float(producer_count)))
        lags.append(Sample(labels, float(max(0, high_watermark - lso))))
        stable.append(Sample(labels, float(lso)))
        ongoing.append(Sample(labels, float(open_txns)))
    families = [
        MetricFamily(
            kafka_metric_name("kafka.cluster", "Partition", "LastStableOffsetLag"),
            GAUGE,
            "The high watermark minus the last stable offset.",
            "kafka.cluster:type=Partition,name=LastStableOffsetLag",
            _TP_LABELS,
            tuple(lags),
        ),
        MetricFamily(
            kafka_metric_name("kafka.server", "ReplicaManager", "ProducerIdCount"),
            GAUGE,
            "Producer ids kept in the producer state of all partitions.",
            "kafka.server:type=ReplicaManager,name=ProducerIdCount",
            (),
            (Sample((), float(sum(c.value for c in counts))),),
        ),
        _seglog("log_producer_id_count", "Producer ids the partition's state keeps.", counts),
        _seglog("log_last_stable_offset", "The partition's last stable offset.", stable),
        _seglog("log_ongoing_transactions", "Transactions open in the partition now.", ongoing),
    ]
    return families, errors


def _compaction_families(
    manager: LogManager, logs: Sequence[tuple[TopicPartition, Log]]
) -> tuple[list[MetricFamily], int]:
    """The compactor's state, horizon, backlog and last-run figures; and the failures."""
    errors = 0
    states: list[Sample] = []
    horizons: list[Sample] = []
    backlogs: list[Sample] = []
    figures: dict[str, list[Sample]] = {suffix: [] for _, suffix, _ in COMPACTION_FIGURES}
    for tp, log in logs:
        labels = _tp(tp)
        try:
            status = manager.compaction.status(log)
            publication = copy_store(log).published()
            backlog = manager.compaction.backlog_bytes(log)
        except (SeglogError, OSError):
            errors += 1
            continue
        for state in COMPACTION_STATES:
            states.append(Sample((*labels, state), 1.0 if status.state == state else 0.0))
        horizons.append(Sample(labels, float(publication.horizon if publication else -1)))
        backlogs.append(Sample(labels, float(backlog)))
        run = status.figures or {}
        for key, suffix, scale in COMPACTION_FIGURES:
            value = run.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                figures[suffix].append(Sample(labels, float(value) * scale))
    families = [
        _seglog(
            "compaction_state",
            "1 for the compacted-copy compactor's state (NOT_RUN, RUNNING, SUCCESS, ERROR).",
            states,
            ("topic", "partition", "state"),
        ),
        _seglog(
            "compaction_horizon",
            "Compaction horizon of the published compacted copy (-1: none).",
            horizons,
        ),
        _seglog(
            "compaction_backlog_bytes",
            "Bytes of the log after the compaction horizon (what compaction.threshold.bytes "
            "is compared with).",
            backlogs,
        ),
    ]
    for _, suffix, _ in COMPACTION_FIGURES:
        families.append(
            _seglog(
                f"compaction_last_run_{suffix}",
                f"The last compaction run's {suffix.replace('_', ' ')}.",
                figures[suffix],
            )
        )
    return families, errors
