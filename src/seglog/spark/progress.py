"""A progress bar for Spark work started by ``seglog spark ...`` (and the demo), on stderr.

Spark knows how far a job is: :func:`spark_progress` polls the session's status tracker
(``sparkContext.statusTracker()``: the active stages' completed and total task counts) a few
times a second on a background thread and draws them with ``rich``, one bar for the whole
operation (tasks done / tasks known so far, across the jobs it runs).

It follows the same rule as the core CLI's bars (:mod:`seglog.cli.progress`, which this layer
may not import): ``SEGLOG_PROGRESS`` = ``auto`` (default: only when stdout and stderr are both
terminals), ``always`` or ``never``; never with ``--json``. Nothing is drawn, and no thread
started, when it is off.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ENV_VAR = "SEGLOG_PROGRESS"
POLL_SECONDS = 0.25


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_enabled(*, json_output: bool = False) -> bool:
    """Whether a bar is drawn (see the module docstring)."""
    if json_output:
        return False
    mode = os.environ.get(ENV_VAR, "auto").strip().lower()
    if mode == "never":
        return False
    if mode == "always":
        return True
    return _isatty(sys.stdout) and _isatty(sys.stderr)


@contextmanager
def spark_progress(spark: Any, description: str, *, json_output: bool = False) -> Iterator[None]:
    """Draw the progress of the Spark jobs run inside the ``with`` block."""
    if not progress_enabled(json_output=json_output):
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    forced = os.environ.get(ENV_VAR, "").strip().lower() == "always"
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("tasks"),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr, force_terminal=forced or None),
        transient=False,
    )
    stop = threading.Event()
    finished = [0, 0]  # tasks of stages that are no longer active

    with progress:
        bar = progress.add_task(description, total=None)

        def poll() -> None:
            seen: dict[int, tuple[int, int]] = {}
            while not stop.wait(POLL_SECONDS):
                try:
                    tracker = spark.sparkContext.statusTracker()
                    active = set(tracker.getActiveStageIds())
                    for stage_id in list(seen):
                        if stage_id not in active:  # stage ended: count it as complete
                            _, total = seen.pop(stage_id)
                            finished[0] += total
                            finished[1] += total
                    for stage_id in active:
                        info = tracker.getStageInfo(stage_id)
                        if info is not None:
                            seen[stage_id] = (info.numCompletedTasks, info.numTasks)
                    done = finished[0] + sum(d for d, _ in seen.values())
                    total = finished[1] + sum(t for _, t in seen.values())
                    progress.update(bar, completed=done, total=total or None)
                except Exception:  # a stopping session: the bar is cosmetic
                    return

        thread = threading.Thread(target=poll, name="seglog-spark-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            total = progress.tasks[0].total
            if total:
                progress.update(bar, completed=total)
