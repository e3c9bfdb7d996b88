"""Every file operation of ``seglog.storage``: the one small interface faults are injected at.

No other module of :mod:`seglog.storage` calls ``open``, ``os.open``, ``os.pwrite[v]``,
``os.ftruncate``, ``os.fsync``, ``os.replace``, ``os.unlink``, ``os.mkdir``, ``shutil`` or the
``pathlib`` equivalents itself (``tests/crash/test_fault_interface.py`` checks the source): they
call the functions below, and each function tells :mod:`seglog.storage.fault_points` about the
operation twice:

1. ``reached(operation, path)`` right *before* it. A test hook may raise here (a crash *before*
   the n-th operation, or an ``OSError`` such as ENOSPC or EIO as if the call itself failed), or
   SIGKILL the process; the operation then never happens.
2. ``completed(operation, path, source)`` right *after* it succeeded (``source`` is the old name
   of a rename, else None). A hook may stop the process here: a crash *after* the n-th
   operation. A failed call reports nothing here: its ``OSError`` propagates to the caller.

The operations, by the name the hooks see:

============  ===========================================================================
``open``      open an existing file read-only (or a directory, for ``fsync-dir``)
``create``    open with ``O_CREAT`` (the file may already exist: then nothing is created)
``write``     ``pwritev``/``pwrite`` of bytes at a position (``path``: the file written)
``truncate``  ``ftruncate`` (cut or extend a file)
``fsync``     fsync of a file's descriptor
``fsync-dir`` fsync of a directory (makes creations, renames and unlinks in it durable)
``rename``    ``os.replace(source, path)``; hooks get the *destination*
``unlink``    remove one file
``mkdir``     create a directory
``rmtree``    remove a directory and everything in it
``utime``     set a file's modification time
============  ===========================================================================

A failed ``write``, ``truncate``, ``fsync`` or ``fsync-dir`` raises
:class:`~seglog.errors.StorageWriteError` (an ``OSError`` too) naming the file and carrying the
``errno``: a descriptor-based call alone would not say which file. The other operations raise
the ``OSError`` of their call, which names its path.

In production no hook is installed and each call costs two global reads beyond the system
call. Closing a descriptor and reading through a descriptor already open are not fault points
(neither changes a file).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from seglog.errors import StorageWriteError
from seglog.storage.fault_points import completed, reached

StrPath = str | os.PathLike[str]
Buffer = bytes | bytearray | memoryview
IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 1024


def open_fd(path: StrPath, flags: int, mode: int = 0o666) -> int:
    """``os.open``: operation ``create`` when ``flags`` has ``O_CREAT``, else ``open``.
    ``mode`` is filtered by the process umask, as every file seglog creates is."""
    operation = "create" if flags & os.O_CREAT else "open"
    reached(operation, path)
    fd = os.open(path, flags, mode)
    completed(operation, path)
    return fd


def open_read(path: StrPath) -> BinaryIO:
    """``open(path, "rb")`` (operation ``open``); the caller closes it."""
    reached("open", path)
    handle = open(path, "rb")  # noqa: SIM115 - the caller owns the handle
    completed("open", path)
    return handle


def read_bytes(path: StrPath) -> bytes:
    """The whole content of ``path`` (operation ``open``, then reads)."""
    with open_read(path) as handle:
        return handle.read()


def read_leading_data(path: StrPath) -> tuple[bytes, int]:
    """``path``'s bytes up to its first hole, and the file's length (operation ``open``).

    A preallocated index file (``ftruncate`` to ``segment.index.bytes``) is its entries then
    a hole, which reads as zeros: reading only up to ``SEEK_HOLE`` (a block boundary at or
    after the last written byte) gives the same entries without reading megabytes of zeros.
    Where the file system reports no holes, ``SEEK_HOLE`` is the end of the file and this
    reads everything, like :func:`read_bytes`.
    """
    with open_read(path) as handle:
        fd = handle.fileno()
        length = os.fstat(fd).st_size
        try:
            data_end = os.lseek(fd, 0, os.SEEK_HOLE)
        except OSError:
            data_end = length
        return os.pread(fd, min(data_end, length), 0) if data_end else b"", length


def _write_error(path: StrPath, exc: OSError) -> StorageWriteError:
    if isinstance(exc, StorageWriteError):
        return exc
    return StorageWriteError(exc.strerror or str(exc), path=os.fspath(path), errno_code=exc.errno)


def write_all(
    fd: int, path: StrPath, buffers: Sequence[Buffer], position: int, size: int | None = None
) -> int:
    """Write every buffer at ``position`` with ``pwritev`` (groups of at most ``IOV_MAX``);
    a short write is finished with ``pwrite``, so no gap is left. One ``write`` operation;
    returns the bytes written. ``size``, when the caller knows it, is the buffers' total
    (the append path: no per-buffer length sum for a single group)."""
    written = 0
    single = len(buffers) <= IOV_MAX
    try:
        reached("write", path)
        for start in range(0, len(buffers), IOV_MAX):
            group = buffers if single else buffers[start : start + IOV_MAX]
            at = position + written
            expected = size if single and size is not None else sum(len(b) for b in group)
            done = os.pwritev(fd, group, at)
            if done < expected:
                rest = memoryview(b"".join(group))
                while done < expected:
                    done += os.pwrite(fd, rest[done:], at + done)
            written += expected
    except OSError as exc:
        raise _write_error(path, exc) from exc
    completed("write", path)
    return written


def pwrite(fd: int, path: StrPath, data: Buffer, position: int) -> None:
    """Write all of ``data`` at ``position`` (operation ``write``)."""
    write_all(fd, path, (data,), position)


def write_new_file(path: StrPath, data: Buffer, mode: int | None = None) -> None:
    """Create or empty ``path``, write ``data`` and fsync it (``create``, ``write``,
    ``fsync``); the descriptor is closed even when a step fails. ``mode``: the file's
    permissions, set even on a file that existed (None: the process umask on creation)."""
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        write_all(fd, path, (data,), 0)
        fsync(fd, path)
    finally:
        os.close(fd)


def truncate(fd: int, path: StrPath, size: int) -> None:
    """``ftruncate(fd, size)`` (operation ``truncate``)."""
    try:
        reached("truncate", path)
        os.ftruncate(fd, size)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    completed("truncate", path)


def fsync(fd: int, path: StrPath) -> None:
    """fsync a file's descriptor (operation ``fsync``)."""
    try:
        reached("fsync", path)
        os.fsync(fd)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    completed("fsync", path)


def fsync_directory(directory: StrPath) -> None:
    """fsync a directory so creations, renames and unlinks in it are durable (``fsync-dir``)."""
    try:
        reached("fsync-dir", directory)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _write_error(directory, exc) from exc
    completed("fsync-dir", directory)


def replace(source: StrPath, destination: StrPath) -> None:
    """``os.replace(source, destination)`` (operation ``rename``, reported on the destination)."""
    reached("rename", destination)
    os.replace(source, destination)
    completed("rename", destination, source)


def unlink(path: StrPath, *, missing_ok: bool = False) -> None:
    """Remove a file (operation ``unlink``); a missing file is fine with ``missing_ok``."""
    reached("unlink", path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise
        return
    completed("unlink", path)


def mkdir(path: StrPath, *, parents: bool = False, exist_ok: bool = False) -> None:
    """Create a directory (operation ``mkdir`` for each one created, parents first)."""
    target = Path(path)
    if exist_ok and target.is_dir():
        return
    if parents and not target.parent.is_dir() and target.parent != target:
        mkdir(target.parent, parents=True, exist_ok=True)
    reached("mkdir", target)
    try:
        os.mkdir(target)
    except FileExistsError:
        if not (exist_ok and target.is_dir()):
            raise
        return
    completed("mkdir", target)


def rmtree(path: StrPath) -> None:
    """Remove a directory and everything in it (operation ``rmtree``); missing is fine and
    errors while removing are ignored (what is left is removed at the next start)."""
    if not os.path.lexists(path):
        return
    reached("rmtree", path)
    shutil.rmtree(path, ignore_errors=True)
    completed("rmtree", path)


def set_mtime_ms(path: StrPath, mtime_ms: int) -> None:
    """Set a file's access and modification time to ``mtime_ms`` (operation ``utime``)."""
    reached("utime", path)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    completed("utime", path)
