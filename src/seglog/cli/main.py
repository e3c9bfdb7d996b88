"""The ``seglog`` command line: one argparse subcommand per module of ``seglog.cli``.

Adding a subcommand:

1. write ``seglog/cli/<name>.py`` exposing ``register(subparsers) -> None``, which adds its
   parser with ``subparsers.add_parser(...)`` and sets its entry point with
   ``parser.set_defaults(handler=run)``, where ``run(args: argparse.Namespace) -> int``
   returns the exit status;
2. add its name, module and one-line help to ``COMMANDS`` below (the same help as its
   ``add_parser(help=...)``; a test checks they agree).

**Startup.** The parser is built from this table only: a command's module is imported when
that command runs (or shows its ``--help``), so ``seglog --version`` and ``seglog --help``
import nothing of the engine, numpy or numba, and ``seglog consume`` imports neither
prometheus_client nor pyspark (see :mod:`seglog.cli.parsing`).

Global options (``--data-dir DIR``..., ``--config server.properties``, ``--read-only``) are
accepted before the command and after it, at any depth (``seglog topics create T --data-dir
D``); see :mod:`seglog.cli.parsing` for how values given in both places combine. After
``topics create``/``topics alter``, ``--config KEY=VALUE`` is a topic config, as in
``kafka-topics.sh``. An unknown option prints the command's usage and the closest options.

Exit status: what the handler returns (0 success, 1 failure); 2 for usage errors (argparse).
A ``SeglogError`` or ``OSError`` escaping a handler is printed as ``seglog: error: <message>``
on stderr with status 1, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from seglog import __version__
from seglog.cli.help_text import use_terminal_help
from seglog.cli.parsing import CommandParser, Subcommands, add_global_options
from seglog.errors import LogDirectoryLockedError, SeglogError, UnknownTopicError

PROG = "seglog"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]

#: seglog never calls BLAS, but OpenBLAS starts a thread pool when numpy is first imported,
#: which costs about 50 ms of start-up (more on a busy machine): :func:`main` asks for one
#: thread unless the environment already says otherwise (processes it starts inherit it).
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"

#: A command whose parser sets this default to True, run as a process (``main()`` without
#: ``argv``), ends with ``os._exit`` once it returned and its output is flushed: tearing
#: down numba and thousands of modules takes 0.1-0.4 s after the work is done. Only for
#: commands with nothing left to do at exit (no open files, no atexit work): ``consume``.
EXIT_AT_ONCE = "exit_at_once"

#: Every command: name, module providing ``register(subparsers)``, one-line help; in the
#: order ``seglog --help`` lists them. ``seglog.spark.cli`` belongs to another layer and is
#: only named here (``seglog.cli`` never imports ``seglog.spark``; see docs/architecture.md).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("topics", "seglog.cli.topics", "create, list, describe, alter and delete topics"),
    ("produce", "seglog.cli.produce", "append the lines of stdin to a topic, as they arrive"),
    ("consume", "seglog.cli.consume", "print the records of a topic"),
    (
        "delete-records",
        "seglog.cli.delete_records",
        "delete records below an offset (like kafka-delete-records.sh)",
    ),
    (
        "consumer-groups",
        "seglog.cli.consumer_groups",
        "list, describe, reset and delete consumer groups (like kafka-consumer-groups.sh)",
    ),
    (
        "transactions",
        "seglog.cli.transactions",
        "list, describe, find hanging and abort transactions (like kafka-transactions.sh)",
    ),
    (
        "retention",
        "seglog.cli.retention",
        "delete old segments now (retention.ms, retention.bytes, log start offset)",
    ),
    (
        "clean",
        "seglog.cli.clean",
        "compact the compacted topics now (one log cleaner pass), or say what it would do",
    ),
    (
        "cleaner",
        "seglog.cli.clean",
        "the log cleaner's view of the compacted partitions (read-only)",
    ),
    (
        "compact",
        "seglog.cli.compact",
        "build the compacted copy of a topic's partitions now (Pulsar-style compaction)",
    ),
    (
        "compaction-status",
        "seglog.cli.compact",
        "per partition: the compacted copy's state and last run's figures (read-only)",
    ),
    (
        "log-dirs",
        "seglog.cli.log_dirs",
        "describe the log directories (like kafka-log-dirs.sh --describe)",
    ),
    (
        "dump-log",
        "seglog.cli.dump_log",
        "print .log/.index/.timeindex/.txnindex/.snapshot files like Kafka's kafka-dump-log.sh",
    ),
    (
        "verify",
        "seglog.cli.verify",
        "check a topic's segments, indexes, compaction and transaction invariants (read-only)",
    ),
    (
        "report",
        "seglog.cli.report",
        "write a self-contained HTML report with pictures of segments and histories",
    ),
    (
        "metrics",
        "seglog.cli.metrics",
        "print the metrics (Prometheus text, Kafka's names) once; read-only",
    ),
    (
        "maintain",
        "seglog.cli.maintain",
        "run retention, the log cleaner, compaction and checkpoints until stopped; "
        "serve metrics over HTTP",
    ),
    (
        "serve",
        "seglog.cli.serve",
        "serve the data dirs to Kafka clients over Kafka's protocol (a one-node broker)",
    ),
    (
        "demo",
        "seglog.cli.demo",
        "run the main job: produce, roll, retain, clean, compact, Spark, verify, summarise",
    ),
    (
        "spark",
        "seglog.spark.cli",
        "run the Spark pipeline: distributed compaction, Parquet export, statistics",
    ),
)


def build_parser(*, lazy: bool = False) -> CommandParser:
    """The ``seglog`` parser with every command of ``COMMANDS``.

    ``lazy``: a command's module is imported only when the command is parsed (what
    :func:`main` uses); otherwise the whole tree is built now, every command parser with its
    global options (tests and tools walking the parsers).
    """
    parser = CommandParser(
        prog=PROG,
        description=(
            "seglog: partitioned append-only logs in Apache Kafka's exact on-disk format."
        ),
        epilog="Run 'seglog COMMAND --help' for the options of a command; the log directory "
        "options go before or after the command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    assert isinstance(subparsers, Subcommands)
    subparsers.on_load.append(use_terminal_help)
    for name, module, help_line in COMMANDS:
        subparsers.add_lazy(name, module, help_line)
    if not lazy:
        subparsers.load_all()
    use_terminal_help(parser)  # docstrings as descriptions: no reStructuredText markup shown
    return parser


def error_message(exc: BaseException) -> str:
    """One line describing ``exc`` for ``seglog: error: ...``."""
    if isinstance(exc, OSError) and not isinstance(exc, SeglogError):
        if exc.filename is not None and exc.strerror:
            return f"{os.fsdecode(exc.filename)}: {exc.strerror}"
        if exc.strerror:
            return exc.strerror
    return str(exc) or type(exc).__name__


def hint(exc: BaseException) -> str:
    """What to do about ``exc``, appended to its message, or "" when the message says it."""
    if isinstance(exc, UnknownTopicError) and str(exc).endswith("does not exist"):
        return (
            "; 'seglog topics list' shows the topics of the data dirs, "
            "'seglog topics create NAME --partitions N' creates one"
        )
    if isinstance(exc, LogDirectoryLockedError) and "is locked by" in str(exc):
        return (
            "; this command changes data and needs the directory's lock: stop that process "
            "first. Commands that only read (consume, topics list|describe, log-dirs "
            "describe, report, dump-log, verify, metrics, cleaner status, --dry-run) take no "
            "lock and work while it runs"
        )
    return ""


def print_error(message: str) -> None:
    """Write ``seglog: error: <message>`` to stderr."""
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _exit_status(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seglog`` command with ``argv`` (default: ``sys.argv[1:]``); return the status."""
    os.environ.setdefault(BLAS_THREADS_ENV, "1")  # before any command imports numpy
    parser = build_parser(lazy=True)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return _exit_status(exc.code)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_usage(sys.stderr)
        print_error("a command is required")
        return EXIT_USAGE
    try:
        status = handler(args)
    except BrokenPipeError:
        # The reader went away (``seglog dump-log x | head``): stop quietly, and make sure the
        # interpreter's final flush of stdout does not raise again.
        _silence_stdout()
        return EXIT_FAILURE
    except (SeglogError, OSError) as exc:
        print_error(error_message(exc) + hint(exc))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    if argv is None and getattr(args, EXIT_AT_ONCE, False):
        _exit_at_once(status)
    return status


def _exit_at_once(status: int) -> None:
    """End the process now with ``status``, once stdout and stderr are flushed: skip the
    interpreter's teardown (see ``EXIT_AT_ONCE``). Returns when a flush fails."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured)
        pass


if __name__ == "__main__":
    sys.exit(main())
