"""Disk-full and I/O-error injection for seglog's storage layer, and what a test checks after.

The storage layer's one file interface (:mod:`seglog.storage.fileops`) calls
:func:`seglog.storage.fault_points.reached` right *before* each file operation (``open``,
``create``, ``write``, ``truncate``, ``fsync``, ``fsync-dir``, ``rename``, ``unlink``,
``mkdir``, ``rmtree``, ``utime``). :class:`DiskFault` is a hook for it that raises an
:class:`OSError` at the n-th operation (1-based), as the operation itself would have failed:

* ``sticky=True`` (a full disk): from the n-th operation on, every operation that needs
  space (``write``, ``fsync``, ``mkdir``) fails too, until the hook is removed ("space
  returns"). Renames, unlinks, ``utime`` and directory fsyncs still work, as they do on a
  full ext4 or tmpfs.
* ``sticky=False`` (a transient error, EIO): only the n-th operation fails.
* ``torn=True``: when the n-th operation is a ``write`` of a segment's ``.log``, a prefix of
  a batch is appended to the file first, as a short ``pwritev`` leaves it when the disk
  fills in the middle of a batch (what a real tmpfs does, see ``test_disk_full.py``).

The error looks like the one the real call raises: path-based calls (``os.open``,
``os.replace``, ``os.unlink``, ``os.mkdir``, ``os.utime``, ``rmtree``) name the path
(``OSError.filename``); ``os.pwritev``/``os.ftruncate``/``os.fsync`` on a descriptor do not
(``fileops`` then raises ``StorageWriteError`` naming the file).

Also here: :func:`leftovers` (transient files a reopened directory must not hold),
:func:`drain_flushes` (wait for the background flush that follows a roll), and
:func:`tmpfs` (a small real file system, when this process may mount one).
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seglog.engine.log_manager import LogManager
from seglog.errors import SeglogError
from seglog.storage.compacted_copy import COMPACTION_DIR, COPY_PREFIX, CompactedCopyStore

SPACE_OPERATIONS = frozenset({"write", "fsync", "mkdir"})
PATH_OPERATIONS = frozenset({"open", "create", "rename", "unlink", "utime", "mkdir", "rmtree"})
LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted", ".tmp")
# What a short write leaves: the first 30 bytes of a v2 batch of 1012 bytes (offset, length,
# then zeros): a torn entry at the end of the .log.
TORN_PREFIX = struct.pack(">qi", 0, 1000) + bytes(18)


def disk_error(code: int, operation: str, path: str) -> OSError:
    """The OSError the real call raises (with the path only for path-based calls)."""
    if operation in PATH_OPERATIONS:
        return OSError(code, os.strerror(code), path)
    return OSError(code, os.strerror(code))


class DiskFault:
    """A fault-point hook failing at operation ``n`` (module docstring)."""

    def __init__(
        self, n: int, code: int = errno.ENOSPC, *, sticky: bool = False, torn: bool = False
    ) -> None:
        if n < 1:
            raise ValueError(f"the fault point is 1-based, got {n}")
        self.n = n
        self.code = code
        self.sticky = sticky
        self.torn = torn
        self.count = 0
        self.point: tuple[str, str] | None = None  # the n-th operation, once reached
        self.failed_after: list[tuple[str, str]] = []  # later operations failed (sticky)
        self.torn_written = False
        self._lock = threading.Lock()

    @property
    def fired(self) -> bool:
        return self.point is not None

    def __call__(self, operation: str, path: str) -> None:
        with self._lock:
            if self.point is not None:
                if self.sticky and operation in SPACE_OPERATIONS:
                    self.failed_after.append((operation, path))
                    raise disk_error(self.code, operation, path)
                return
            self.count += 1
            if self.count < self.n:
                return
            self.point = (operation, path)
        if self.torn and operation == "write" and path.endswith(".log"):
            with open(path, "ab") as handle:
                handle.write(TORN_PREFIX)
            self.torn_written = True
        raise disk_error(self.code, operation, path)


def error_names_path(exc: BaseException) -> bool:
    """Whether an error says which file: ``OSError.filename`` or a seglog error's ``path``,
    or a path (``/`` and a file name) in its message."""
    if isinstance(exc, OSError) and exc.filename:
        return True
    if isinstance(exc, SeglogError) and getattr(exc, "path", None):
        return True
    return "/" in str(exc)


def is_typed_disk_error(exc: BaseException) -> bool:
    """An OSError (what the operating system said) or one of seglog's typed errors."""
    return isinstance(exc, (OSError, SeglogError))


def leftovers(data_dir: Path) -> list[str]:
    """Transient files under ``data_dir`` (relative paths): ``.cleaned``, ``.swap``,
    ``.deleted``, ``.tmp`` anywhere, and ``copy-*`` directories of a partition's
    ``compaction/`` that are not the published copy."""
    found = []
    for root, dirs, files in os.walk(data_dir):
        for name in files + dirs:
            if name.endswith(LEFTOVER_SUFFIXES):
                found.append(os.path.relpath(os.path.join(root, name), data_dir))
        if os.path.basename(root) == COMPACTION_DIR:
            publication = CompactedCopyStore(Path(root).parent, writable=False).published()
            keep = publication.copy if publication else None
            for name in dirs:
                if name.startswith(COPY_PREFIX) and name != keep:
                    found.append(os.path.relpath(os.path.join(root, name), data_dir) + "/")
    return sorted(found)


def drain_flushes(manager: LogManager) -> None:
    """Wait until the background flushes submitted so far (after rolls) have run."""
    manager._flush_executor.submit(int).result()


def close_or_abort(manager: LogManager) -> str | None:
    """``close()``; when it fails, ``abort()``. Returns why close failed (None if it did not)."""
    try:
        manager.close()
    except Exception as exc:
        manager.abort()
        return f"{type(exc).__name__}: {exc}"
    return None


# --- a small real file system ----------------------------------------------------------------
def mount_tmpfs(target: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` on ``target``; None when done, else why it cannot be."""
    if os.name != "posix" or shutil.which("mount") is None:
        return "no mount(8) here"
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return f"mount -t tmpfs refused (exit {result.returncode}): {result.stderr.strip()}"
    return None


def unmount(target: Path) -> None:
    """Unmount ``target`` (lazily when something still holds it)."""
    result = subprocess.run(["umount", str(target)], capture_output=True, check=False)
    if result.returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def tmpfs_unavailable_reason() -> str | None:
    """None when this process can mount a tmpfs, else the reason (probed once, 64 KiB)."""
    probe = Path(tempfile.mkdtemp(prefix="seglog-tmpfs-probe-"))
    try:
        reason = mount_tmpfs(probe, "64k")
        if reason is None:
            unmount(probe)
        return reason
    finally:
        shutil.rmtree(probe, ignore_errors=True)


@contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    """A freshly mounted tmpfs of ``size`` (unmounted after); the caller checks
    :func:`tmpfs_unavailable_reason` first."""
    target = Path(tempfile.mkdtemp(prefix="seglog-tmpfs-"))
    reason = mount_tmpfs(target, size)
    if reason is not None:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(reason)
    try:
        yield target
    finally:
        unmount(target)
        shutil.rmtree(target, ignore_errors=True)
