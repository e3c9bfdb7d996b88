"""``seglog maintain``: keep the data dirs maintained until stopped, serving metrics.

What Kafka's broker does in the background, as one long-running process:

* the scheduler (:mod:`seglog.engine.scheduler`): retention every
  ``log.retention.check.interval.ms``, flushes (``log.flush.scheduler.interval.ms``), the
  recovery-point, log-start-offset and high-watermark checkpoints, the compacted-copy
  compactor's threshold trigger (``log.compaction.check.interval.ms``), and the removal of
  ``.deleted`` files after ``file.delete.delay.ms``;
* the log cleaner's ``log.cleaner.threads`` threads (unless ``log.cleaner.enable=false``);
* an HTTP server with the metrics of ``seglog metrics`` at ``/metrics`` (Prometheus text),
  on ``--metrics-host`` (default 127.0.0.1: only this machine) and ``--metrics-port``
  (default 9644; ``0`` picks a free port).

The intervals and limits are the broker settings (``--config server.properties``, Kafka's
keys and defaults). The data dirs are opened read-write and locked for the whole run, so other
``seglog`` commands that change data (``produce``, ``topics create``, ...) fail while it runs,
naming it; commands that only read (``seglog metrics``, ``topics list``, ``consume``,
``cleaner status``, ``verify``) take no lock and still work.

**Output.** Once the port is bound and the data dirs are open, one line on stdout::

    seglog maintain: serving metrics on http://127.0.0.1:9644/metrics

(with the port actually bound, so ``--metrics-port 0`` can be read back). Everything else is
log lines on stderr (``--log-level``, default INFO): what was opened, each cleaner round
(Kafka's statistics), each segment retention deleted, each compaction run, any failing task,
and the shutdown.

**Stopping.** SIGTERM or SIGINT stops it cleanly: the HTTP server stops, the cleaner threads
finish their current check and the scheduler its current task, every log is flushed and
closed, the checkpoints and ``.kafka_cleanshutdown`` are written, the lock is released, and
the exit status is 0 (so the next open needs no recovery). A second signal during that
shutdown is held back until it is done. A port already in use fails at once, before the data
dirs are touched (status 1).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from prometheus_client import start_http_server

from seglog.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    command_options_parent,
    is_read_only,
    open_manager,
)
from seglog.cli.metrics import ManagerCollector, registry_for

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers
    from seglog.engine.log_manager import LogManager

LOG = logging.getLogger("seglog.maintain")
DEFAULT_METRICS_PORT = 9644
DEFAULT_METRICS_HOST = "127.0.0.1"
PORT_MAX = 65535
STOP_POLL_S = 0.5  # how often the main thread looks up from waiting (signals wake it anyway)
LOG_FORMAT = "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog maintain
  seglog --config server.properties maintain --metrics-port 0
  curl -s http://127.0.0.1:9644/metrics | grep kafka_log_LogCleaner"""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= PORT_MAX:
        raise argparse.ArgumentTypeError(f"port must be in 0..{PORT_MAX}, got {value}")
    return value


def add_background_options(parser: argparse.ArgumentParser) -> None:
    """The options of a long-running command (``maintain``, ``serve``): the metrics server's
    port and host, and the least severe log level written to stderr."""
    parser.add_argument(
        "--metrics-port",
        type=_port,
        default=DEFAULT_METRICS_PORT,
        metavar="PORT",
        help="port of the metrics HTTP server (default %(default)s; 0: a free port)",
    )
    parser.add_argument(
        "--metrics-host",
        default=DEFAULT_METRICS_HOST,
        metavar="HOST",
        help="address the metrics server listens on (default %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="INFO",
        help="least severe log lines written to stderr (default %(default)s)",
    )


def register(subparsers: Subparsers) -> None:
    """Add ``seglog maintain``."""
    parser = subparsers.add_parser(
        "maintain",
        parents=[command_options_parent()],
        help="run retention, the log cleaner, compaction and checkpoints until stopped; "
        "serve metrics over HTTP",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_background_options(parser)
    parser.set_defaults(handler=lambda args: run(args, parser))


def configure_logging(level: str) -> logging.Handler:
    """Log lines of the ``seglog`` loggers to stderr; returns the handler (removed at exit)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger = logging.getLogger("seglog")
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


class _StopSignals:
    """SIGTERM/SIGINT set an event instead of raising; the previous handlers come back."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        for signum in _STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, _frame: object) -> None:
        self.received.append(signum)
        self.event.set()

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)

    def wait(self) -> int:
        """Block until a stop signal arrives; returns it."""
        while not self.event.wait(STOP_POLL_S):
            pass
        return self.received[0]


def _describe(manager: LogManager) -> str:
    logs = manager.logs()
    topics = manager.topic_names()
    broker = manager.broker
    cleaner = (
        f"{broker.log_cleaner_threads} cleaner thread(s)"
        if broker.log_cleaner_enable
        else "log cleaner disabled"
    )
    return (
        f"maintaining {len(logs)} partition(s) of {len(topics)} topic(s) in "
        f"{', '.join(broker.log_dirs)}: retention every "
        f"{broker.log_retention_check_interval_ms} ms, {cleaner}, compaction check every "
        f"{broker.log_compaction_check_interval_ms} ms"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog maintain``."""
    if is_read_only(args):
        parser.print_usage(sys.stderr)
        print(
            f"{parser.prog}: error: maintain deletes, cleans and checkpoints, which a "
            "--read-only open cannot do (use 'seglog metrics' to read the metrics)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    handler = configure_logging(args.log_level)
    collector = ManagerCollector()
    try:
        with _StopSignals() as stop:
            # Bound first: a port in use fails before the data dirs are opened.
            server, thread = start_http_server(
                args.metrics_port, addr=args.metrics_host, registry=registry_for(collector)
            )
            try:
                with open_manager(args, writes=True, start_scheduler=True) as manager:
                    collector.attach(manager)
                    LOG.info("%s", _describe(manager))
                    host = args.metrics_host
                    shown = f"[{host}]" if ":" in host else host
                    print(
                        f"seglog maintain: serving metrics on "
                        f"http://{shown}:{server.server_port}/metrics",
                        flush=True,
                    )
                    signum = stop.wait()
                    LOG.info(
                        "%s received: stopping (closing logs, writing checkpoints)",
                        signal.Signals(signum).name,
                    )
                    collector.attach(None)  # waits for a scrape under way
            finally:
                server.shutdown()
                server.server_close()
                thread.join()
        LOG.info("stopped cleanly")
        return EXIT_OK
    finally:
        logging.getLogger("seglog").removeHandler(handler)
