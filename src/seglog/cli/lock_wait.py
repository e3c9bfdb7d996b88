"""Waiting for a log directory's lock held by another process (``--lock-wait-ms``).

A command that changes data takes each data dir's ``.lock``. When another process holds it
(``seglog maintain``, a second ``produce``, a Kafka broker), the command does not fail at
once: it prints one line on stderr::

    seglog: waiting up to 10.0 s for the lock of DIR held by process 1234 (seglog maintain)

and tries again every :data:`POLL_INTERVAL_S` until the lock is free (then it runs as if it
had never waited) or ``--lock-wait-ms`` has passed since the first try; then it fails with
the lock error, which names the holder, and says how long it waited.

Decision: the default wait is :data:`DEFAULT_LOCK_WAIT_MS` (10 s). A one-shot command
holding the lock (``retention --once``, ``topics create``, another ``produce`` of a file)
is usually done within that, so scripts just queue behind each other; a long-running holder
(``seglog maintain`` runs until stopped, a broker never lets go) still gets a clear error
soon enough, rather than a command that hangs without a word. ``--lock-wait-ms 0`` fails at
once (and prints no waiting line). Kafka has no such option: a broker simply refuses to start
on a locked directory.

The wait polls (:func:`fcntl.lockf` has no timeout, and a blocking lock in a helper thread
could not be cancelled): a lock released between two tries is taken at the next one, at most
:data:`POLL_INTERVAL_S` later. Opening is retried whole, so whatever the failed try did is
undone first (:meth:`LogManager.open` releases what it took when it fails).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from seglog.cli.arg_types import non_negative_int
from seglog.errors import LockHeldElsewhereError

T = TypeVar("T")

DEFAULT_LOCK_WAIT_MS = 10_000
POLL_INTERVAL_S = 0.1
LOCK_WAIT_HELP = (
    "commands that change data: when another process holds a data dir's lock, wait up to "
    f"this many ms for it, then fail naming the holder (default {DEFAULT_LOCK_WAIT_MS}; "
    "0: fail at once)"
)


non_negative_ms = non_negative_int  # the argparse type of ``--lock-wait-ms``


def add_lock_wait_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, dest: str = "lock_wait_ms"
) -> None:
    """Add ``--lock-wait-ms MS`` (``dest`` lets a command's copy be stored apart)."""
    if dest == "lock_wait_ms":
        parser.add_argument(
            "--lock-wait-ms",
            dest=dest,
            type=non_negative_ms,
            default=DEFAULT_LOCK_WAIT_MS,
            metavar="MS",
            help=LOCK_WAIT_HELP,
        )
    else:
        parser.add_argument(
            "--lock-wait-ms",
            dest=dest,
            type=non_negative_ms,
            default=argparse.SUPPRESS,
            metavar="MS",
            help=LOCK_WAIT_HELP.replace("%(default)s", str(DEFAULT_LOCK_WAIT_MS)),
        )


def lock_wait_ms_of(args: argparse.Namespace) -> int:
    """``--lock-wait-ms`` given after the command, else before it, else the default."""
    after = getattr(args, "command_lock_wait_ms", None)
    if after is not None:
        return int(after)
    before = getattr(args, "lock_wait_ms", None)
    return DEFAULT_LOCK_WAIT_MS if before is None else int(before)


def open_waiting_for_lock(
    open_once: Callable[[], T],
    wait_ms: int,
    *,
    say: Callable[[str], None] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``open_once()``, tried again while it fails with :class:`LockHeldElsewhereError`,
    for at most ``wait_ms`` (see the module docstring). ``say`` prints the waiting line
    (default: stderr)."""
    deadline = monotonic() + wait_ms / 1000
    announced = False
    while True:
        try:
            return open_once()
        except LockHeldElsewhereError as exc:
            if monotonic() >= deadline:
                if announced:
                    raise LockHeldElsewhereError(
                        f"{exc.reason} (waited {wait_ms / 1000:.1f} s for it, --lock-wait-ms)",
                        path=exc.path,
                        holder=exc.holder,
                    ) from exc
                raise
            if not announced:
                announced = True
                where = exc.path.removesuffix("/.lock")
                who = exc.holder or "another process"
                message = (
                    f"seglog: waiting up to {wait_ms / 1000:.1f} s for the lock of {where} "
                    f"held by {who} ..."
                )
                if say is None:
                    print(message, file=sys.stderr, flush=True)
                else:
                    say(message)
            sleep(min(POLL_INTERVAL_S, max(deadline - monotonic(), 0.0)))
