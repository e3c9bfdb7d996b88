"""``seglog transactions``: list, describe, find and abort transactions (like
``kafka-transactions.sh``), offline on the data directories or online with
``--bootstrap-server``.

* ``--list``: TransactionalId, Coordinator, ProducerId, TransactionState of every
  transactional id in ``__transaction_state``.
* ``--describe --transactional-id ID``: CoordinatorId, TransactionalId, ProducerId,
  ProducerEpoch, TransactionState, TransactionTimeoutMs, CurrentTransactionStartTimeMs,
  TransactionDurationMs, TopicPartitions (the partitions of the open transaction).
* ``--describe-producers --topic T --partition P``: the partition's producer state: ProducerId,
  ProducerEpoch, LatestCoordinatorEpoch, LastSequence, LastTimestamp,
  CurrentTransactionStartOffset.
* ``--find-hanging [--topic T [--partition P]] [--max-transaction-timeout MINUTES]``: open
  transactions whose producer wrote nothing for longer than the maximum timeout (15 minutes,
  ``transaction.max.timeout.ms``'s default) and that no transactional id's transaction names:
  their coordinator will never end them, and they pin the partition's last stable offset
  (every ``read_committed`` consumer stalls there). Every partition without ``--topic``.
* ``--abort --topic T --partition P (--start-offset N | --producer-id ID --producer-epoch E
  --coordinator-epoch C)``: writes an ABORT marker for that transaction on that partition (the
  producer found by its open transaction's first offset, or named), as a coordinator's
  WriteTxnMarkers does; prints nothing when it worked, as Kafka's tool.

**Offline** (the default): reads open the data dirs read-only (no lock), so they work beside
a running ``seglog serve`` and on a copy of a Kafka broker's directory (its
``__transaction_state`` partitions load too). ``--abort`` takes the lock; when a server holds
it, it waits ``--lock-wait-ms`` then fails naming the holder: abort through the server then
(``--bootstrap-server``). The coordinator column is the directory's ``node.id``.

**Online** (``--bootstrap-server HOST:PORT``): the same tables from the server's answers to
ListTransactions (66), DescribeTransactions (65), DescribeProducers (61) and, for ``--abort``,
WriteTxnMarkers (27), through :mod:`seglog.cli.transactions_online`.

Exit status 1 when the id, partition or transaction asked for is not there, or the abort is
refused (a stale epoch); 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from seglog.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, open_manager, print_table
from seglog.cli.transactions_view import (
    DESCRIBE_HEADER,
    HANGING_HEADER,
    LIST_HEADER,
    MS_PER_MINUTE,
    PRODUCERS_HEADER,
    ProducerView,
    TxnDescription,
    TxnListing,
    abort_spec_text,
    describe_row,
    find_open_transaction,
    hanging,
    hanging_rows,
    list_rows,
    open_candidates,
    producer_rows,
)

if TYPE_CHECKING:
    from seglog.broker.txns.state_store import TransactionStateStore
    from seglog.cli.common import Subparsers
    from seglog.engine.log import Log
    from seglog.engine.log_manager import LogManager
    from seglog.format.topic_names import TopicPartition

HELP = "list, describe, find hanging and abort transactions (like kafka-transactions.sh)"
DEFAULT_MAX_TIMEOUT_MINUTES = 15
NOT_FOUND = "The transactionalId could not be found."
EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog transactions --list
  seglog --data-dir /var/lib/seglog transactions --describe --transactional-id my-app
  seglog --data-dir /var/lib/seglog transactions --describe-producers --topic orders --partition 0
  seglog --data-dir /var/lib/seglog transactions --find-hanging --max-transaction-timeout 5
  seglog --data-dir /var/lib/seglog transactions --abort --topic orders --partition 0 \\
      --start-offset 1234
  seglog transactions --bootstrap-server localhost:9092 --list
  seglog transactions --bootstrap-server broker:9093 --command-config ssl.properties --list
      (ssl.properties: security.protocol=SSL, ssl.truststore.location=ca.pem)"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog transactions``."""
    parser = subparsers.add_parser(
        "transactions",
        help=HELP,
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the transactional ids")
    action.add_argument("--describe", action="store_true", help="describe a transactional id")
    action.add_argument(
        "--describe-producers", action="store_true", help="a partition's producer state"
    )
    action.add_argument("--find-hanging", action="store_true", help="find hanging transactions")
    action.add_argument("--abort", action="store_true", help="abort a hanging transaction")
    parser.add_argument("--transactional-id", metavar="ID", help="--describe: the id")
    parser.add_argument("--topic", metavar="T", help="the topic")
    parser.add_argument("--partition", type=int, metavar="P", help="the partition")
    parser.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=DEFAULT_MAX_TIMEOUT_MINUTES,
        metavar="MINUTES",
        help="--find-hanging: only transactions idle longer than this (default 15)",
    )
    parser.add_argument("--start-offset", type=int, metavar="N", help="--abort: its first offset")
    parser.add_argument("--producer-id", type=int, metavar="ID", help="--abort: its producer")
    parser.add_argument("--producer-epoch", type=int, metavar="E", help="--abort: its epoch")
    parser.add_argument(
        "--coordinator-epoch", type=int, metavar="C", help="--abort: its coordinator epoch"
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="ask a running server instead of reading the data dirs",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="--bootstrap-server: a properties file with the connection's security.protocol, "
        "ssl.* and sasl.* settings (as kafka-transactions.sh)",
    )
    parser.set_defaults(handler=run, parser=parser)


def _usage_error(args: argparse.Namespace, message: str) -> int:
    parser: argparse.ArgumentParser = args.parser
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.describe and args.transactional_id is None:
        return "--describe needs --transactional-id"
    if (args.describe_producers or args.abort) and (args.topic is None or args.partition is None):
        return "--describe-producers and --abort need --topic and --partition"
    if args.command_config is not None and args.bootstrap_server is None:
        return "--command-config needs --bootstrap-server"
    if args.partition is not None and args.topic is None:
        return "--partition needs --topic"
    if args.max_transaction_timeout < 0:
        return "--max-transaction-timeout must not be negative"
    if args.abort:
        named = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
        if args.start_offset is None and args.producer_id is None:
            return (
                "the transaction to abort must be identified either with --start-offset or "
                "with --producer-id, --producer-epoch and --coordinator-epoch"
            )
        if args.start_offset is None and None in named:
            return "--producer-id needs --producer-epoch and --coordinator-epoch"
        if args.start_offset is not None and args.producer_id is not None:
            return "give --start-offset or --producer-id, not both"
    return None


def now_ms() -> int:
    """The wall clock, in ms (durations are measured against it, as Kafka's tool does)."""
    return int(time.time() * 1000)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog transactions``."""
    problem = _usage_problem(args)
    if problem is not None:
        return _usage_error(args, problem)
    if args.bootstrap_server is not None:
        from seglog.cli.transactions_online import run_online

        return run_online(args, clock=now_ms)
    from seglog.broker.txns.state_store import TransactionStateStore

    with open_manager(args, writes=bool(args.abort)) as manager:
        if args.abort:
            return _abort(manager, args)
        if args.describe_producers:
            return _describe_producers(manager, args.topic, args.partition)
        store = TransactionStateStore.open(manager)
        node = manager.broker.node_id
        if args.list:
            listings = [
                TxnListing(txn_id, e.producer_id, str(e.state))
                for txn_id, e in store.entries().items()
            ]
            print_table(list_rows(node, listings), LIST_HEADER, sys.stdout)
            return EXIT_OK
        if args.describe:
            found = descriptions_of(store).get(args.transactional_id)
            if found is None:
                print(_describe_failure(args.transactional_id), file=sys.stderr)
                return EXIT_FAILURE
            row = describe_row(node, found, now_ms=now_ms())
            print_table([row], DESCRIBE_HEADER, sys.stdout)
            return EXIT_OK
        return _find_hanging(manager, store, args)


def _describe_failure(transactional_id: str) -> str:
    return (
        f"Failed to describe transaction state of transactional-id `{transactional_id}`: "
        f"{NOT_FOUND}"
    )


def descriptions_of(store: TransactionStateStore) -> dict[str, TxnDescription]:
    """Every stored id as DescribeTransactions describes it."""
    return {
        txn_id: TxnDescription(
            txn_id,
            e.producer_id,
            e.producer_epoch,
            str(e.state),
            e.transaction_timeout_ms,
            e.start_timestamp_ms,
            e.partitions,
        )
        for txn_id, e in store.entries().items()
    }


def producer_views(log: Log) -> list[ProducerView]:
    """The producers of a partition's producer state, as DescribeProducers gives them."""
    views = []
    for pid, entry in log.producer_state.producers().items():
        start = entry.current_txn_first_offset
        views.append(
            ProducerView(
                pid,
                entry.producer_epoch,
                entry.coordinator_epoch,
                entry.last_sequence,
                entry.last_timestamp,
                -1 if start is None else start,
            )
        )
    return views


def _log_or_none(manager: LogManager, topic: str, partition: int) -> Log | None:
    from seglog.errors import InvalidTopicError, UnknownTopicError

    try:
        return manager.get_log(topic, partition)
    except (UnknownTopicError, InvalidTopicError):
        return None


def _no_partition(topic: str, partition: int, doing: str) -> int:
    print(
        f"Failed to {doing} for partition {topic}-{partition}: This server does not host this "
        "topic-partition.",
        file=sys.stderr,
    )
    return EXIT_FAILURE


def _describe_producers(manager: LogManager, topic: str, partition: int) -> int:
    log = _log_or_none(manager, topic, partition)
    if log is None:
        return _no_partition(topic, partition, "describe producers")
    print_table(producer_rows(producer_views(log)), PRODUCERS_HEADER, sys.stdout)
    return EXIT_OK


def _find_hanging(
    manager: LogManager, store: TransactionStateStore, args: argparse.Namespace
) -> int:
    from seglog.format.topic_names import TopicPartition

    if args.topic is not None and args.partition is not None:
        wanted = [TopicPartition(args.topic, args.partition)]
    elif args.topic is not None:
        wanted = [TopicPartition(args.topic, p) for p in manager.partitions_of(args.topic)]
    else:
        wanted = sorted(manager.logs())
    producers: dict[TopicPartition, list[ProducerView]] = {}
    for tp in wanted:
        log = _log_or_none(manager, tp.topic, tp.partition)
        if log is None:
            return _no_partition(tp.topic, tp.partition, "describe producers")
        producers[tp] = producer_views(log)
    now = now_ms()
    candidates = open_candidates(
        producers, max_timeout_ms=args.max_transaction_timeout * MS_PER_MINUTE, now_ms=now
    )
    by_producer = {d.producer_id: d for d in descriptions_of(store).values()}
    rows = hanging_rows(hanging(candidates, by_producer), now_ms=now)
    print_table(rows, HANGING_HEADER, sys.stdout)
    return EXIT_OK


def _abort(manager: LogManager, args: argparse.Namespace) -> int:
    from seglog.errors import ProducerStateError
    from seglog.format.topic_names import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    log = _log_or_none(manager, tp.topic, tp.partition)
    if log is None:
        return _no_partition(tp.topic, tp.partition, "abort a transaction")
    if args.start_offset is not None:
        found = find_open_transaction(producer_views(log), args.start_offset)
        if found is None:
            print(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {tp}",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        pid, epoch, coordinator_epoch = found
    else:
        pid, epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = max(args.coordinator_epoch, 0)
    try:
        log.append_marker(pid, epoch, commit=False, coordinator_epoch=coordinator_epoch)
    except ProducerStateError as exc:
        spec = abort_spec_text(tp, pid, epoch, coordinator_epoch)
        print(f"Failed to abort transaction {spec}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
