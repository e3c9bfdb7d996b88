"""Power loss, simulated: crash at an operation, then drop every write that was not fsynced.

:class:`~seglog.testing.crash.CrashAt` stops a procedure as a killed process stops: what the
process wrote is in the page cache and survives. A power cut also loses the page cache:
whatever was written to a file after its last ``fsync`` is gone. :class:`PowerLoss` is a
fault-point hook (see :mod:`seglog.storage.fault_points`) that models this for the files
seglog writes:

* it counts operations like ``CrashAt`` and raises
  :class:`~seglog.testing.crash.SimulatedCrash` right before the ``n``-th (and at every later
  one);
* it remembers each file's **durable size**: the size it had when first seen (files that
  existed before the trial were closed cleanly, so they are durable), raised to the file's
  size at every ``fsync`` of it that completed (the hook runs *before* the operation, so an
  fsync at the crash point itself does not count);
* :meth:`PowerLoss.cut_power` (call it after the crashed objects are gone and their
  descriptors closed) truncates every file written since the trial began back to its durable
  size, and empties one that was created and never fsynced.

Model limits (documented, deliberate): writes are treated as appends (seglog's segments and
preallocated index files only grow or are truncated; checkpoint files are written whole to a
temporary file, fsynced, then renamed); directory operations (create, rename, unlink) are
durable when they happen (seglog fsyncs the directory after each multi-file change, and the
loader resolves every leftover of a half-done one); memory-mapped index writes are not
tracked (the loader rebuilds an index that disagrees with its log).
"""

from __future__ import annotations

import os
import threading

from seglog.testing.crash import SimulatedCrash


class PowerLoss:
    """A fault-point hook: crash before operation ``n``, then :meth:`cut_power`."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"the crash point is 1-based, got {n}")
        self.n = n
        self.count = 0
        self.crashed = False
        self.durable: dict[str, int] = {}  # path -> bytes that survive a power cut
        self.written: set[str] = set()  # paths written since the trial began
        self._lock = threading.Lock()

    @staticmethod
    def _size(path: str) -> int:
        try:
            return os.path.getsize(path)
        except OSError:
            return 0

    def __call__(self, operation: str, path: str) -> None:
        with self._lock:
            if self.crashed:
                raise SimulatedCrash(self.n, operation, path)
            self.count += 1
            if self.count >= self.n:
                self.crashed = True
                raise SimulatedCrash(self.n, operation, path)
            if operation == "write":
                self.durable.setdefault(path, self._size(path))
                self.written.add(path)
            elif operation == "fsync":
                # Everything written to the file so far becomes durable once this returns
                # (it will: the crash is at a later operation).
                self.durable[path] = self._size(path)

    def cut_power(self) -> list[tuple[str, int, int]]:
        """Truncate every written file to its durable size; returns (path, before, after)
        for each file that lost bytes."""
        lost = []
        for path in sorted(self.written):
            size = self._size(path)
            keep = self.durable.get(path, 0)
            if os.path.exists(path) and size > keep:
                os.truncate(path, keep)
                lost.append((path, size, keep))
        return lost
