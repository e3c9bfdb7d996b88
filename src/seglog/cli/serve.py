"""``seglog serve``: a single-node Kafka broker on the data directories.

Kafka clients (kcat, confluent-kafka / librdkafka, kafka-python, aiokafka, Kafka's own tools)
connect unchanged: they produce, consume, commit offsets in consumer groups and administer
topics over Kafka's protocol, and the data lands in Kafka's on-disk format, so the directory
moves to and from a real Kafka broker as it is.

The server listens on ``listeners`` (``--listeners`` overrides it; default
``PLAINTEXT://127.0.0.1:9092``, loopback only; port 0 picks a free port) and tells clients the
``advertised.listeners`` address (default: the bound one). It runs everything ``seglog
maintain`` runs: retention, the log cleaner, compaction triggers, flushes, checkpoints and the
metrics endpoint (``--metrics-port``, 0 for a free port). On a ``SASL_PLAINTEXT`` listener
clients log in with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (``sasl.enabled.mechanisms``;
users from ``seglog scram-credentials`` and the listener's PLAIN JAAS text). Broker settings
come from ``--config server.properties`` (Kafka's keys: ``node.id``, ``num.partitions``,
``auto.create.topics.enable``, ``socket.request.max.bytes``, ``max.connections``,
``connections.max.idle.ms``, ...).

**Listeners.** Several at once, with Kafka's names and settings: ``listeners``,
``listener.security.protocol.map`` (``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``),
TLS from PEM (``ssl.keystore.location`` or the inline ``ssl.keystore.key`` /
``ssl.keystore.certificate.chain``, ``ssl.truststore.*``, ``ssl.client.auth``), per listener as
``listener.name.<name>.ssl.*``; a client certificate names the principal ``User:<its DN>``. A
listener reachable from other hosts without encryption needs an authorizer or
``seglog.allow.insecure.listeners=true``.
PEM files replaced on disk are used by new connections without a restart (checked at most
every ``seglog.ssl.reload.check.ms``, default 5000, 0: never).

**Output.** Once the listeners are bound and the data dirs open, one line per listener on
stdout, in the order of ``listeners``::

    seglog serve: listening on PLAINTEXT://127.0.0.1:9092

then log lines on stderr (``--log-level``). **Stopping.** SIGTERM or SIGINT: the listeners
close, requests in flight are answered, every log is flushed and closed, the checkpoints and
the clean-shutdown marker are written, the lock is released, and the exit status is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING

from seglog.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    broker_properties,
    command_options_parent,
    is_read_only,
    open_manager,
)
from seglog.cli.maintain import add_background_options, configure_logging

if TYPE_CHECKING:
    from seglog.broker.server_config import Listener
    from seglog.cli.common import Subparsers
    from seglog.engine.log_manager import LogManager

LOG = logging.getLogger("seglog.serve")

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog serve
  seglog --data-dir data serve --listeners PLAINTEXT://127.0.0.1:0 --metrics-port 0
  seglog --data-dir data --config tls.properties serve \
      --listeners PLAINTEXT://127.0.0.1:9092,SSL://0.0.0.0:9093
  kcat -b 127.0.0.1:9092 -L"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog serve``."""
    parser = subparsers.add_parser(
        "serve",
        parents=[command_options_parent()],
        help="serve the data dirs to Kafka clients over Kafka's protocol (a one-node broker)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--listeners",
        metavar="LISTENERS",
        help="where to listen, Kafka's syntax (default: the config's listeners, else "
        "PLAINTEXT://127.0.0.1:9092; port 0: a free port)",
    )
    add_background_options(parser)
    parser.set_defaults(handler=lambda args: run(args, parser))


async def _serve(manager: LogManager, args: argparse.Namespace) -> int:
    from seglog.broker.app import run_server
    from seglog.broker.server_config import ServerConfig

    config = ServerConfig.from_properties(
        broker_properties(args), listeners_override=args.listeners
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)

    def ready(bound: list[Listener]) -> None:
        for listener in bound:
            print(f"seglog serve: listening on {listener}", flush=True)
        LOG.info(
            "serving %d partition(s) of %d topic(s) from %s",
            len(manager.logs()),
            len(manager.topic_names()),
            ", ".join(manager.broker.log_dirs),
        )

    try:
        await run_server(manager, config, stop=stop, on_ready=ready)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    if received:
        LOG.info("%s received: stopped serving", signal.Signals(received[0]).name)
    return EXIT_OK


def _raise_open_files_limit() -> None:
    """Raise the soft limit of open files to the hard limit: every client connection and every
    segment file is a descriptor, and a broker with a thousand clients needs more than the
    usual soft limit of 1024 (Kafka's documentation asks for 100000)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as error:
            LOG.warning("cannot raise the open-files limit from %d: %s", soft, error)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog serve``."""
    from prometheus_client import start_http_server

    from seglog.cli.metrics import ManagerCollector, registry_for

    if is_read_only(args):
        parser.print_usage(sys.stderr)
        print(
            f"{parser.prog}: error: serve writes (produce, commits), so it cannot run --read-only",
            file=sys.stderr,
        )
        return EXIT_USAGE
    handler = configure_logging(args.log_level)
    _raise_open_files_limit()
    collector = ManagerCollector()
    try:
        server, thread = start_http_server(
            args.metrics_port, addr=args.metrics_host, registry=registry_for(collector)
        )
        try:
            with open_manager(args, writes=True, create_dirs=True, start_scheduler=True) as manager:
                collector.attach(manager)
                try:
                    return asyncio.run(_serve(manager, args))
                finally:
                    collector.attach(None)
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
    finally:
        logging.getLogger("seglog").removeHandler(handler)
