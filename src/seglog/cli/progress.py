"""Progress bars for long commands (``rich``), on stderr, and only where someone watches.

Usage, in a command::

    with ProgressBar("cleaning", unit=ITEMS, json_output=args.json) as bar:
        manager.clean_once(progress=bar.callback)   # engine: callback(completed, total)

    with ProgressBar("producing", total=size_or_none, unit=BYTES) as bar:
        for chunk in ...:
            bar.advance(len(chunk))

:attr:`ProgressBar.callback` is an engine :data:`~seglog.engine.progress.ProgressCallback`
(``callback(completed, total)``), so any engine operation that takes one (log open and
recovery, a cleaner pass; the export job later) gets a bar with one line. A bar that is off
costs a method call per update and imports nothing.

**When a bar shows** (``SEGLOG_PROGRESS`` in the environment, or the ``mode`` argument):

* ``auto`` (the default): only when **both** stdout and stderr are terminals, so anything
  piped, redirected or captured (scripts, CI, tests) gets no extra byte;
* ``always``: render even when not a terminal (rich's ``force_terminal``): for tests and for
  people who pipe stdout but watch stderr;
* ``never``: no bar.

With ``--json`` (``json_output=True``) there is never a bar: a script reads the output.
The bar is written to **stderr** only; stdout stays the command's output. It is drawn at
most ``REFRESH_PER_SECOND`` times a second by rich's refresh thread and ends with its final
state (100% when the operation said so); ``transient=True`` erases it instead.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from seglog.engine.progress import ProgressCallback

ENV_VAR = "SEGLOG_PROGRESS"
AUTO = "auto"
ALWAYS = "always"
NEVER = "never"
MODES = (AUTO, ALWAYS, NEVER)
ITEMS = "items"
BYTES = "bytes"
REFRESH_PER_SECOND = 8


def _isatty(stream: IO[str] | Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or a closed file
        return False


def progress_mode(mode: str | None = None) -> str:
    """``mode``, else ``$SEGLOG_PROGRESS``, else ``auto``; an unknown value reads ``auto``."""
    value = (mode if mode is not None else os.environ.get(ENV_VAR, AUTO)).strip().lower()
    return value if value in MODES else AUTO


def should_show(*, json_output: bool = False, mode: str | None = None) -> bool:
    """Whether a bar is drawn now (see the module docstring)."""
    chosen = progress_mode(mode)
    if json_output or chosen == NEVER:
        return False
    if chosen == ALWAYS:
        return True
    return _isatty(sys.stdout) and _isatty(sys.stderr)


class ProgressBar:
    """One progress bar, as a context manager; does nothing when it should not show.

    ``total`` None: unknown (rich draws a pulsing bar) until an update gives one. ``unit``:
    :data:`ITEMS` (``3/10``) or :data:`BYTES` (``1.2/4.0 MB``). ``stream``: where to draw
    (default stderr).
    """

    def __init__(
        self,
        description: str,
        *,
        total: int | None = None,
        unit: str = ITEMS,
        json_output: bool = False,
        mode: str | None = None,
        transient: bool = False,
        stream: IO[str] | None = None,
    ) -> None:
        self.description = description
        self.enabled = should_show(json_output=json_output, mode=mode)
        self._total = total
        self._unit = unit
        self._transient = transient
        self._force_terminal = progress_mode(mode) == ALWAYS
        self._stream = stream
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._completed = 0

    def __enter__(self) -> ProgressBar:
        if not self.enabled:
            return self
        # Imported here: a command without a bar (most runs) never loads rich.
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(
            file=self._stream if self._stream is not None else sys.stderr,
            force_terminal=True if self._force_terminal else None,
        )
        count: ProgressColumn = DownloadColumn() if self._unit == BYTES else MofNCompleteColumn()
        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            count,
            TimeElapsedColumn(),
            console=console,
            transient=self._transient,
            refresh_per_second=REFRESH_PER_SECOND,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=self._total)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()  # draws the final state (or erases it when transient)
            self._progress = None

    def update(self, completed: int, total: int | None = None) -> None:
        """Set how much is done (and, if given, the total)."""
        self._completed = completed
        if self._progress is None or self._task is None:
            return
        if total is not None:
            self._total = total
            self._progress.update(self._task, completed=completed, total=total)
        else:
            self._progress.update(self._task, completed=completed)

    def advance(self, amount: int = 1) -> None:
        """Add ``amount`` to what is done."""
        self.update(self._completed + amount)

    @property
    def completed(self) -> int:
        """What the last update said was done."""
        return self._completed

    @property
    def callback(self) -> ProgressCallback:
        """This bar as an engine progress callback: ``callback(completed, total)``."""
        return self.update
