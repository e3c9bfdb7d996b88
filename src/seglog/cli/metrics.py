"""``seglog metrics``: the storage, retention, cleaner and compactor metrics, for Prometheus.

Prints the metrics of the data dirs once, in the Prometheus text exposition format (version
0.0.4, as ``prometheus_client`` renders it), and exits. ``seglog maintain`` serves the same
metrics over HTTP while it runs.

The names are Kafka's where Kafka has the metric, mapped by one rule from the JMX name:
``kafka.log:type=Log,name=Size,topic=t,partition=0`` is ``kafka_log_Log_Size{topic="t",
partition="0"}`` (domain dots and every character outside ``[A-Za-z0-9_]`` become ``_``; the
other JMX key properties are labels). Figures Kafka has no metric for are ``seglog_*``. Each
metric's HELP line ends with its source (``Kafka: kafka.log:type=...`` or ``seglog``). The
full list is in :mod:`seglog.engine.inspect.metrics`.

The data dirs are opened read-only (no lock, nothing written), so the command also works on a
directory a running ``seglog maintain`` or broker holds, and on a read-only copy. The cleaner
gauges (``kafka_log_LogCleaner_*``) describe the rounds of the process that cleaned: in this
one-shot process they read 0; ``seglog_log_cleaner_dirty_ratio`` and
``seglog_retention_pending_*`` are computed now from the files.

``--json`` prints one JSON object instead::

    {"metrics": [{"name": "kafka_log_Log_Size", "type": "gauge", "help": "...",
                  "source": "kafka.log:type=Log,name=Size",
                  "samples": [{"labels": {"topic": "t", "partition": "0"}, "value": 83.0}]}]}

(``name`` of a counter without ``_total``, as in the module's table.)
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from seglog.cli.common import EXIT_OK, command_options_parent, json_line, open_manager
from seglog.engine.inspect.metrics import COUNTER, MetricFamily, collect_metrics

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers
    from seglog.engine.log_manager import LogManager

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog metrics
  seglog --data-dir /var/lib/seglog metrics | grep '^kafka_log_Log_Size'
  seglog --data-dir /var/lib/seglog metrics --json | jq '.metrics[].name'"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog metrics``."""
    parser = subparsers.add_parser(
        "metrics",
        parents=[command_options_parent()],
        help="print the metrics (Prometheus text, Kafka's names) once; read-only",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object instead of Prometheus text"
    )
    parser.set_defaults(handler=run)


def to_prometheus(family: MetricFamily) -> Metric:
    """One gathered family as a ``prometheus_client`` metric family."""
    help_text = f"{family.help} (" + (
        "seglog)" if family.source == "seglog" else f"Kafka: {family.source})"
    )
    metric: GaugeMetricFamily | CounterMetricFamily
    if family.kind == COUNTER:
        metric = CounterMetricFamily(family.name, help_text, labels=family.label_names)
    else:
        metric = GaugeMetricFamily(family.name, help_text, labels=family.label_names)
    for sample in family.samples:
        metric.add_metric(list(sample.label_values), sample.value)
    return metric


class ManagerCollector:
    """A ``prometheus_client`` collector over a :class:`LogManager` (set now or later).

    Until :meth:`attach` it collects nothing, so an HTTP server can bind its port before the
    data dirs are opened (a port in use then fails before anything is touched). It has no
    ``describe``: the registry must not collect at registration (the manager may be absent).
    """

    def __init__(self, manager: LogManager | None = None) -> None:
        self._manager = manager
        self._lock = threading.Lock()

    def attach(self, manager: LogManager | None) -> None:
        """Collect from ``manager`` from now on (None: collect nothing, e.g. while closing)."""
        with self._lock:
            self._manager = manager

    def collect(self) -> Iterable[Metric]:
        """Every metric of the manager (see :mod:`seglog.engine.inspect.metrics`)."""
        with self._lock:  # a scrape never runs beside attach(None) and the close after it
            manager = self._manager
            families = [] if manager is None else collect_metrics(manager)
        return [to_prometheus(family) for family in families]


def registry_for(collector: ManagerCollector) -> CollectorRegistry:
    """A registry holding only ``collector`` (no process or platform metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def exposition(manager: LogManager) -> str:
    """The manager's metrics in the Prometheus text format."""
    return generate_latest(registry_for(ManagerCollector(manager))).decode("utf-8")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog metrics``."""
    # Read-only: a scrape must not write even the lock (a running maintain holds it).
    read_only_args = argparse.Namespace(**{**vars(args), "command_read_only": True})
    with open_manager(read_only_args) as manager:
        if args.json:
            text = json_line({"metrics": [f.to_json() for f in collect_metrics(manager)]})
            print(text)
        else:
            print(exposition(manager), end="")
    return EXIT_OK
