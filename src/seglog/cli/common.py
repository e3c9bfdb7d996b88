"""What the commands that open log directories share: global options and opening the manager.

Global options (``seglog --help`` lists them):

* ``--data-dir DIR``: a root of ``log.dirs``; repeat it for several roots;
* ``--config FILE``: a broker ``server.properties`` (Java properties, read as ISO-8859-1 as
  ``Properties.load(InputStream)`` does). Its ``log.dirs`` (or ``log.dir``) and its storage
  defaults (``log.segment.bytes``, ``log.retention.ms``, ...) apply; ``--data-dir`` given too
  replaces its ``log.dirs``;
* ``--read-only``: kept for scripts; commands that only read are read-only anyway (below),
  and a command that changes data refuses it (it cannot do its work without writing).

**Reads never write.** Commands that only read (``consume``, ``topics list|describe``,
``log-dirs describe``, ``report``, ``dump-log``, ``verify``, ``metrics``, ``cleaner status``,
``compaction-status`` and every ``--dry-run``) open read-only by default: no lock, no recovery
writes, no checkpoint, rebuilt index or clean-shutdown marker, nothing renamed or deleted. So
they work on a directory a running broker or ``seglog maintain`` holds, and on a read-only copy.
A directory that was not shut down cleanly is recovered in memory only; stderr says what a
writing open *would* truncate ("nothing written"). Only commands that change data
(``produce``, ``delete-records``, ``topics create|alter|delete``, ``retention --once``,
``clean --once``, ``compact``, ``maintain``) pass ``writes=True`` to :func:`open_manager` and
take the ``.lock``; when another process holds it they wait for it up to ``--lock-wait-ms``
(default 10 s, saying so on stderr) and then fail naming the holder
(:mod:`seglog.cli.lock_wait`).

Where they go: **before or after the command**, at any depth (``seglog --data-dir D topics
list``, ``seglog topics list --data-dir D``; :mod:`seglog.cli.parsing` adds them to every
command parser). Data dirs given in several places are all used, in command-line order. One
exception, as in ``kafka-topics.sh``: after ``topics create`` / ``topics alter``,
``--config KEY=VALUE`` is a topic config, so there a server.properties goes before the command.

Without ``--data-dir``, and without ``log.dirs``/``log.dir`` in ``--config``, there is no
default (Kafka's ``/tmp/kafka-logs`` would be a surprising place to write): the command fails.
Every command but ``topics create`` also fails when a data dir does not exist, so a typo does
not create an empty log directory. A data dir whose mode has no write bit (``dr-xr-xr-x``) is
refused by the commands that write: a read-write open writes the lock, checkpoints, rebuilt
indexes and the clean-shutdown marker, and as root nothing else would stop it.

:func:`open_manager` opens the :class:`~seglog.engine.log_manager.LogManager` for a command and
closes it cleanly at the end (flush, checkpoints, ``.kafka_cleanshutdown``), also when the
command fails with a :class:`~seglog.errors.SeglogError` or is interrupted. SIGINT/SIGTERM are
held back while the engine writes (:func:`deferred_interrupts`), so an interrupt never lands
half-way through an append and the clean-shutdown marker is only ever written over whole
writes. After an I/O error (any ``OSError`` but a closed stdout) or a bug, the manager is *not*
closed cleanly: no marker is written, so the next open recovers the logs, as Kafka does for a
log directory that went offline; the lock goes with the process.
"""

from __future__ import annotations

import argparse
import json
import signal
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from seglog.cli import parsing
from seglog.cli.arg_types import non_negative_int
from seglog.cli.lock_wait import lock_wait_ms_of, open_waiting_for_lock
from seglog.errors import InvalidConfigError, SeglogError

# The engine is imported where it is used, not here: main.py and every command's parser import
# this module, and a command's --help (or an argument error) must not pay for the engine.
if TYPE_CHECKING:
    from seglog.config import BrokerConfig
    from seglog.engine.log_manager import LogManager

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
MAX_SERVER_PROPERTIES_BYTES = 1024 * 1024  # a server.properties is a few KiB

_DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


# --- global options ---------------------------------------------------------------------------


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """The global options on the top-level parser (see :mod:`seglog.cli.parsing`)."""
    parsing.add_global_options(parser)


def command_options_parent() -> argparse.ArgumentParser:
    """An empty parent parser, kept for the commands that list it in ``parents=[...]``.

    Every command parser now gets the global options (``--data-dir``, ``--config``,
    ``--read-only``) from :mod:`seglog.cli.parsing`, after its own options, so a command needs
    nothing to accept them after its name.
    """
    return argparse.ArgumentParser(add_help=False)


def data_dirs_of(args: argparse.Namespace) -> list[str]:
    """Every ``--data-dir``, in command-line order (before the command, then after it)."""
    given: list[str] = getattr(args, "data_dirs", None) or []
    # A command may still define its own --data-dir into command_data_dirs (seglog spark).
    own: list[str] = getattr(args, "command_data_dirs", None) or []
    return [*given, *own]


def is_read_only(args: argparse.Namespace) -> bool:
    """``--read-only`` given before or after the command."""
    return bool(getattr(args, "read_only", False) or getattr(args, "command_read_only", False))


def broker_properties(args: argparse.Namespace) -> dict[str, str]:
    """The broker properties of the command line: ``--config`` file, then ``--data-dir``."""
    from seglog.format.properties import parse_properties
    from seglog.storage.files import read_file_bytes

    properties: dict[str, str] = {}
    config_path: str | None = getattr(args, "server_config", None)
    if config_path is not None:
        data = read_file_bytes(config_path, max_bytes=MAX_SERVER_PROPERTIES_BYTES)
        # Properties.load(InputStream) reads ISO-8859-1; non-ASCII text comes as \uXXXX.
        properties = parse_properties(data.decode("iso-8859-1"), path=config_path)
    data_dirs = data_dirs_of(args)
    for directory in data_dirs:
        if not directory:
            raise InvalidConfigError("--data-dir: the directory name is empty")
        if "," in directory:
            raise InvalidConfigError(
                f"--data-dir {directory!r}: a comma would split it in log.dirs; give each "
                "directory with its own --data-dir"
            )
    if data_dirs:
        properties.pop("log.dir", None)
        properties["log.dirs"] = ",".join(data_dirs)
    elif not (properties.get("log.dirs", "").strip() or properties.get("log.dir", "").strip()):
        where = "no log directory given"
        if config_path is not None:
            where = f"{config_path} sets neither log.dirs nor log.dir"
        raise InvalidConfigError(
            f"{where}: give --data-dir DIR (or --config server.properties), e.g. "
            "'seglog --data-dir DIR topics list'"
        )
    return properties


def broker_config(args: argparse.Namespace, *, writes: bool = False) -> BrokerConfig:
    """The :class:`BrokerConfig` of the command line (see :func:`broker_properties`).

    A log directory in an object store (``--data-dir s3://bucket/prefix``; credentials and
    endpoint from the AWS environment) is read through its local read-only mirror
    (:mod:`seglog.storage.log_dir_mirror`), so a read command gives exactly what it gives on a
    local copy of the directory; a command that writes refuses it.
    """
    from seglog.config import BrokerConfig
    from seglog.storage.object_store import is_remote

    properties = broker_properties(args)
    roots = [d for d in properties.get("log.dirs", properties.get("log.dir", "")).split(",") if d]
    if any(is_remote(d) for d in roots):
        if writes:
            remote = next(d for d in roots if is_remote(d))
            raise InvalidConfigError(
                f"log directory {remote} is in object storage, which seglog only reads: this "
                "command changes data; run it on a local log directory (read commands such as "
                "consume, topics describe, verify and report work on object storage)"
            )
        properties.pop("log.dir", None)
        properties["log.dirs"] = ",".join(_local_root(d) for d in roots)
    return BrokerConfig.from_properties(properties)


def _local_root(directory: str) -> str:
    """``directory``, or its read-only local mirror when it is in an object store."""
    from seglog.storage.log_dir_mirror import mirror
    from seglog.storage.object_store import ObjectLocation, is_remote

    if not is_remote(directory):
        return directory
    location = ObjectLocation(directory)
    if not location.exists():
        raise InvalidConfigError(f"log directory {directory} does not exist (no object there)")
    return str(mirror(location))


# --- opening the manager ----------------------------------------------------------------------


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block; they are delivered when it ends.

    Used around engine writes, so an interrupt lands between whole appends, never inside one.
    The signals are recorded by a temporary handler and raised again afterwards (blocking
    them with ``pthread_sigmask`` would not do: the kernel hands a process-wide signal to any
    thread that has not blocked it, and Python then interrupts the main thread anyway).
    Outside the main thread, where handlers cannot be set, it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, _frame: object) -> None:
        pending.append(signum)

    previous = {signum: signal.signal(signum, record) for signum in _DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if pending:
            signal.raise_signal(pending[0])  # to the handler it was meant for


def _check_roots(broker: BrokerConfig, *, must_exist: bool, read_only: bool) -> None:
    """Missing roots (unless they may be created) and read-only roots opened for writing."""
    for root in broker.log_dirs:
        path = Path(root)
        if not path.is_dir():
            if path.exists():  # a file (or a link to one): "does not exist" would mislead
                raise InvalidConfigError(
                    f"log directory {root} is a file, not a directory: --data-dir (and "
                    "log.dirs) must name a directory"
                )
            if must_exist:
                raise InvalidConfigError(
                    f"log directory {root} does not exist: check the --data-dir path (only "
                    "'topics create' makes a new log directory)"
                )
            continue
        # The mode bits, not access(): root may write anywhere, and a directory someone made
        # read-only (a broker's copy, a corpus) must not be rewritten by a read-write open.
        if not read_only and stat.S_IMODE(path.stat().st_mode) & 0o222 == 0:
            raise InvalidConfigError(
                f"log directory {root} is read-only (mode "
                f"{stat.filemode(path.stat().st_mode)}): this command changes data and "
                "cannot run on it; commands that only read (consume, topics list, ...) can"
            )


def _opening_description(broker: BrokerConfig) -> str:
    """``recovering logs`` when a root lacks the clean-shutdown marker, else ``opening logs``."""
    from seglog.storage.log_dir import CLEAN_SHUTDOWN_FILE

    for root in broker.log_dirs:
        path = Path(root)
        if path.is_dir() and not (path / CLEAN_SHUTDOWN_FILE).exists():
            return "recovering logs"
    return "opening logs"


@contextmanager
def open_manager(
    args: argparse.Namespace,
    *,
    writes: bool = False,
    create_dirs: bool = False,
    start_scheduler: bool = False,
) -> Iterator[LogManager]:
    """The log manager of the command line, closed cleanly when the block ends.

    ``writes``: the command changes data, so the manager is opened read-write (lock, recovery
    on disk, checkpoints and the clean-shutdown marker at close); ``--read-only`` is then
    refused with :class:`InvalidConfigError` (the command could not do its work). Without it
    the manager is read-only whatever the options say: a command that only reads never writes.
    ``create_dirs`` (only with ``writes``): missing data dirs are created (``topics create``);
    otherwise a missing one is an error. ``start_scheduler``: the scheduler and cleaner
    threads run while the block does (``seglog maintain``). Opening shows a transient
    progress bar of the partitions opened (recovered) on a terminal, never with ``--json``
    (:mod:`seglog.cli.progress`). See the module docstring for what happens when the block
    fails.
    """
    from seglog.cli.progress import ProgressBar
    from seglog.engine.log_manager import LogManager

    broker = broker_config(args, writes=writes)
    if writes and is_read_only(args):
        raise InvalidConfigError(
            "--read-only: this command changes data, so it must open the log directories "
            "read-write (and take their lock); drop --read-only. Commands that only read "
            "(consume, topics list|describe, log-dirs describe, report, verify, metrics, "
            "--dry-run) never write, with or without it"
        )
    read_only = not writes
    create_dirs = create_dirs and writes
    _check_roots(broker, must_exist=not create_dirs or read_only, read_only=read_only)

    def open_once() -> LogManager:
        bar = ProgressBar(
            _opening_description(broker),
            json_output=bool(getattr(args, "json", False)),
            transient=True,
        )
        with deferred_interrupts(), bar:
            return LogManager.open(
                broker, read_only=read_only, start_scheduler=start_scheduler, progress=bar.callback
            )

    # Interrupts are held back during each try only, so Ctrl-C stops a wait for the lock.
    manager = open_waiting_for_lock(open_once, lock_wait_ms_of(args) if writes else 0)
    report_recovery(manager)
    is_clean = True
    try:
        yield manager
    except (SeglogError, BrokenPipeError):
        raise
    except Exception:
        # An I/O error or a bug may have stopped the engine half-way through a write: leave
        # the marker unwritten so the next open recovers (the lock goes with the process).
        is_clean = False
        raise
    finally:
        if is_clean:
            with deferred_interrupts():
                manager.close()
        else:
            manager.abort()


def report_recovery(manager: LogManager) -> None:
    """Say on stderr what opening the directories repaired (nothing after a clean shutdown);
    for a read-only manager what a writing open *would* repair, and that nothing was written
    (see :meth:`~seglog.storage.loader.LoadReport.summary`)."""
    for report in manager.load_reports:
        if manager.read_only:
            # A directory a running broker (or maintain) holds always looks unclean: say only
            # what a writing open would change, not that each partition was checked.
            wanted = bool(
                report.truncated_bytes
                or report.rebuilt_indexes
                or report.dropped_segments
                or report.lost_ranges
            )
        else:
            wanted = bool(
                report.recovered
                or report.removed_files
                or report.completed_swaps
                or report.rebuilt_indexes
                or report.snapshot_problems
            )
        if wanted:
            print(f"seglog: recovery: {report.summary()}", file=sys.stderr)


# --- arguments and output ---------------------------------------------------------------------


def topic_name(text: str) -> str:
    """argparse type: a topic name Kafka accepts (so it is a safe directory name)."""
    from seglog.format.topic_names import validate_topic_name

    try:
        validate_topic_name(text)
    except SeglogError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be >= 1, got 0")
    return value


def key_value(text: str) -> tuple[str, str]:
    """argparse type: ``KEY=VALUE`` (split at the first ``=``; the value may hold more)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def missing_action(parser: argparse.ArgumentParser, actions: str) -> int:
    """Handler of a command given without its action (``seglog topics``): usage, status 2."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: an action is required ({actions})", file=sys.stderr)
    return EXIT_USAGE


def json_line(obj: Any) -> str:
    """Compact JSON on one line (non-ASCII kept as is)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def print_table(rows: Sequence[Sequence[object]], header: Sequence[str], out: IO[str]) -> None:
    """Left-aligned columns separated by two spaces (the last column is not padded)."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        out.write("  ".join([*padded, row[-1]]) + "\n")
