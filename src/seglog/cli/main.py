"""The ``seglog`` command line: one argparse subcommand per module of ``seglog.cli``.

Adding a subcommand:

1. write ``seglog/cli/<name>.py`` exposing ``register(subparsers) -> None``, which adds its
   parser with ``subparsers.add_parser(...)`` and sets its entry point with
   ``parser.set_defaults(handler=run)``, where ``run(args: argparse.Namespace) -> int``
   returns the exit status;
2. add the module to :data:`SUBCOMMANDS` below.

Global options (``--data-dir DIR``..., ``--config server.properties``, ``--read-only``) belong
to the top-level parser, so they go before the command: ``seglog --data-dir D topics list``.
Commands that open log directories also accept ``--data-dir`` and ``--read-only`` after the
command (see :mod:`seglog.cli.common`, which opens the log manager for them).

Exit status: what the handler returns (0 success, 1 failure); 2 for usage errors (argparse).
A :class:`~seglog.errors.SeglogError` or ``OSError`` escaping a handler is printed as
``seglog: error: <message>`` on stderr with status 1, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from seglog import __version__
from seglog.cli import (
    clean,
    compact,
    consume,
    delete_records,
    demo,
    dump_log,
    log_dirs,
    maintain,
    metrics,
    produce,
    report,
    retention,
    topics,
    verify,
)
from seglog.cli.common import add_global_options
from seglog.cli.help_text import use_terminal_help
from seglog.errors import LogDirectoryLockedError, SeglogError, UnknownTopicError

PROG = "seglog"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]

#: Modules providing ``register(subparsers)``, in the order ``seglog --help`` lists them.
SUBCOMMANDS: tuple[ModuleType, ...] = (
    topics,
    produce,
    consume,
    delete_records,
    retention,
    clean,
    compact,
    log_dirs,
    dump_log,
    verify,
    report,
    metrics,
    maintain,
    demo,
)


#: Modules of other layers adding commands, loaded by name: ``seglog.spark.cli`` adds
#: ``seglog spark ...`` without ``seglog.cli`` importing ``seglog.spark`` (two independent
#: layers, see docs/architecture.md); neither import loads pyspark until a ``spark`` command runs.
PLUGINS: tuple[str, ...] = ("seglog.spark.cli",)


def build_parser() -> argparse.ArgumentParser:
    """The ``seglog`` parser with every subcommand of :data:`SUBCOMMANDS` registered."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "seglog: partitioned append-only logs in Apache Kafka's exact on-disk format."
        ),
        epilog="Run 'seglog COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    for name in PLUGINS:
        importlib.import_module(name).register(subparsers)
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
    parser = build_parser()
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
        return handler(args)
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


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured)
        pass


if __name__ == "__main__":
    sys.exit(main())
