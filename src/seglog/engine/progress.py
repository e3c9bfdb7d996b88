"""Progress callbacks: how a long engine operation says how far it has come.

A :data:`ProgressCallback` is a plain callable ``callback(completed, total)``:

* ``completed`` counts units done so far (partitions opened, partitions cleaned, bytes read,
  ...: the operation's docstring names the unit); it never decreases;
* ``total`` is the number of units the operation expects; it may grow while the operation
  runs (a log that became cleanable mid-pass), and ``completed <= total`` always holds.

The engine calls it on the thread doing the work, after each unit, and never holds a lock of
its own while calling. It must be cheap and must not raise (an exception would escape the
operation). The engine never renders anything: the command line turns these calls into
progress bars (:mod:`seglog.cli.progress`), and other callers may ignore them (None).
"""

from __future__ import annotations

from collections.abc import Callable

ProgressCallback = Callable[[int, int], None]


def no_progress(_completed: int, _total: int) -> None:
    """A :data:`ProgressCallback` that does nothing."""
