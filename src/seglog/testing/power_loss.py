"""Power loss, simulated: crash at an operation, then drop what was not made durable.

:class:`~seglog.testing.crash.CrashAt` stops a procedure as a killed process stops: what the
process wrote is in the page cache and survives. A power cut also loses the page cache.
:class:`PowerLoss` is a pair of fault-point hooks (see :mod:`seglog.storage.fault_points`;
every file operation of ``seglog.storage`` goes through :mod:`seglog.storage.fileops`) that
models this for the files and directories seglog changes:

* it counts operations like ``CrashAt`` and raises
  :class:`~seglog.testing.crash.SimulatedCrash` right before the ``n``-th (and at every later
  one);
* **file data**: it remembers each file's **durable size**, per inode (so renames do not lose
  track): the size it had when first written in the trial (files that existed before were
  closed cleanly, so they are durable; a file the trial created starts at 0), raised to the
  file's size after every ``fsync`` of it that completed;
* **directory entries** (``undo_directory_operations=True``, the default): every creation,
  rename, unlink, ``mkdir`` and ``rmtree`` is journalled, and is durable only once every
  directory it changed was fsynced (``fsync-dir``) after it. POSIX promises no more: an
  ``fsync`` of a file does not make its name durable. A removed file (an unlink, a rename's
  replaced target, an ``rmtree``) is kept alive by a hard link in a stash directory beside
  the data directory, so it can come back;
* :meth:`PowerLoss.cut_power` (call it after the crashed objects are gone and their
  descriptors closed) undoes, newest first, the not-yet-durable directory operations among
  the last ``k`` journalled ones (``k`` drawn from ``seed``: a power cut keeps a prefix of
  what the file system had not yet committed; ``k`` is everything with probability 1/2), then
  truncates every file written in the trial to its durable size (a created file never
  fsynced is emptied).

Model limits (documented, deliberate): writes are treated as appends (seglog's segments and
preallocated index files only grow or are truncated; checkpoint files are written whole to a
temporary file, fsynced, then renamed); a truncation that shrank a file is kept (the file
does not grow back); ``utime`` is not undone; the order in which an operating system commits
directory operations of different directories is not modelled beyond "a suffix of the
undurable ones is lost".
"""

from __future__ import annotations

import os
import random
import shutil
import threading
from dataclasses import dataclass, field

from seglog.testing.crash import SimulatedCrash

Inode = tuple[int, int]


def _inode(path: str) -> Inode | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@dataclass
class DirectoryOperation:
    """One journalled directory change; durable once every directory in ``pending`` was
    fsynced after it."""

    kind: str  # create, mkdir, rename, unlink, rmtree
    path: str  # the entry created / removed, or a rename's destination
    source: str | None = None  # a rename's old name
    stash: str | None = None  # hard link (or tree of links) of what the operation removed
    pending: set[str] = field(default_factory=set)


class PowerLoss:
    """Fault-point hooks: crash before operation ``n``, then :meth:`cut_power`."""

    def __init__(
        self,
        n: int,
        *,
        stash_dir: str | os.PathLike[str] | None = None,
        undo_directory_operations: bool = True,
        seed: int = 0,
    ) -> None:
        if n < 1:
            raise ValueError(f"the crash point is 1-based, got {n}")
        if undo_directory_operations and stash_dir is None:
            raise ValueError("undoing directory operations needs a stash_dir (same file system)")
        self.n = n
        self.count = 0
        self.crashed = False
        self.undo = undo_directory_operations
        self.stash_dir = None if stash_dir is None else os.fspath(stash_dir)
        self.rng = random.Random(seed)
        self.durable: dict[Inode, int] = {}  # inode -> bytes that survive a power cut
        self.paths: dict[Inode, str] = {}  # inode -> a name it had (to find it again)
        self.journal: list[DirectoryOperation] = []
        self.undone: list[DirectoryOperation] = []  # filled by cut_power
        self._pending: dict[int, tuple[str, str, str | None, bool]] = {}  # thread -> op
        self._stashed = 0
        self._lock = threading.Lock()

    # --- the hooks -------------------------------------------------------------------------
    def __call__(self, operation: str, path: str) -> None:
        """Before-operation hook: count, crash at ``n``, and prepare the undo of the operation."""
        with self._lock:
            if self.crashed:
                raise SimulatedCrash(self.n, operation, path)
            self.count += 1
            if self.count >= self.n:
                self.crashed = True
                raise SimulatedCrash(self.n, operation, path)
            if operation in ("write", "truncate"):
                inode = _inode(path)
                if inode is not None and inode not in self.durable:
                    self.durable[inode] = _size(path)
                    self.paths[inode] = path
            if not self.undo:
                return
            stash = None
            existed = os.path.lexists(path)
            if operation in ("rename", "unlink") and existed and os.path.isfile(path):
                stash = self._stash(path)
            elif operation == "rmtree" and existed:
                stash = self._stash_tree(path)
            self._pending[threading.get_ident()] = (operation, path, stash, existed)

    def completed(self, operation: str, path: str, source: str | None = None) -> None:
        """After-operation hook: record what became durable and journal directory changes."""
        with self._lock:
            pending = self._pending.pop(threading.get_ident(), None)
            if operation == "fsync":
                inode = _inode(path)
                if inode is not None:
                    self.durable[inode] = _size(path)
                    self.paths[inode] = path
                return
            if not self.undo:
                return
            if operation == "fsync-dir":
                directory = os.path.normpath(path)
                for entry in self.journal:
                    entry.pending.discard(directory)
                return
            if pending is None or pending[0] != operation or pending[1] != path:
                return
            _, _, stash, existed = pending
            parent = os.path.dirname(os.path.normpath(path))
            if operation in ("create", "mkdir"):
                if existed:
                    return
                if operation == "create":
                    inode = _inode(path)
                    if inode is not None:
                        self.durable[inode] = 0
                        self.paths[inode] = path
                self.journal.append(DirectoryOperation(operation, path, pending={parent}))
            elif operation == "rename":
                assert source is not None
                dirs = {parent, os.path.dirname(os.path.normpath(source))}
                self.journal.append(
                    DirectoryOperation("rename", path, source=source, stash=stash, pending=dirs)
                )
            elif operation in ("unlink", "rmtree") and stash is not None:
                self.journal.append(
                    DirectoryOperation(operation, path, stash=stash, pending={parent})
                )

    # --- stashing what an operation removes ----------------------------------------------
    def _stash_name(self) -> str:
        assert self.stash_dir is not None
        os.makedirs(self.stash_dir, exist_ok=True)
        self._stashed += 1
        return os.path.join(self.stash_dir, f"{self._stashed:06d}")

    def _stash(self, path: str) -> str:
        target = self._stash_name()
        os.link(path, target)
        return target

    def _stash_tree(self, path: str) -> str:
        target = self._stash_name()
        shutil.copytree(path, target, copy_function=os.link)
        return target

    # --- the power cut ---------------------------------------------------------------------
    @property
    def undurable(self) -> list[DirectoryOperation]:
        """Journalled directory operations no directory fsync has made durable yet."""
        return [entry for entry in self.journal if entry.pending]

    def cut_power(self, root: str | os.PathLike[str]) -> list[tuple[str, int, int]]:
        """Undo lost directory operations, then truncate every file written in the trial under
        ``root`` to its durable size; returns (path, before, after) for each file cut back
        (:attr:`undone` lists the directory operations undone)."""
        if self.undo and self.journal:
            # where the lost suffix starts: anywhere, or (half the time) at the beginning
            keep = self.rng.randrange(len(self.journal)) if self.rng.random() < 0.5 else 0
            for entry in reversed(self.journal[keep:]):
                if entry.pending:
                    self._undo(entry)
                    self.undone.append(entry)
        lost = []
        for directory, _, files in os.walk(root):
            for name in files:
                path = os.path.join(directory, name)
                inode = _inode(path)
                if inode is None or inode not in self.durable:
                    continue
                size, keep_bytes = _size(path), self.durable[inode]
                if size > keep_bytes:
                    os.truncate(path, keep_bytes)
                    lost.append((path, size, keep_bytes))
        return lost

    @staticmethod
    def _undo(entry: DirectoryOperation) -> None:
        path = entry.path
        if entry.kind == "create":
            if os.path.isfile(path):
                os.unlink(path)
        elif entry.kind == "mkdir":
            shutil.rmtree(path, ignore_errors=True)
        elif entry.kind == "rename":
            assert entry.source is not None
            if os.path.lexists(path) and not os.path.lexists(entry.source):
                os.rename(path, entry.source)
            if entry.stash is not None and not os.path.lexists(path):
                os.link(entry.stash, path)
        elif entry.kind == "unlink":
            if entry.stash is not None and not os.path.lexists(path):
                os.link(entry.stash, path)
        elif entry.kind == "rmtree" and entry.stash is not None and not os.path.lexists(path):
            shutil.copytree(entry.stash, path, copy_function=os.link)
