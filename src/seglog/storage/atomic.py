"""Atomic, durable file replacement: the one way seglog writes a small whole file.

Procedure (each step says what recovery finds if the process dies right there):

1. Write the new content to ``<name>.tmp`` in the same directory and fsync it.
   Crash: ``<name>`` is untouched; a stray ``<name>.tmp`` is left for startup to remove.
2. Rename ``<name>.tmp`` over ``<name>`` (atomic on POSIX file systems).
   Crash before: as step 1. Crash after: ``<name>`` holds the complete new content.
3. fsync the directory, so the rename itself survives a power loss.

Readers therefore see either the whole old file or the whole new one, never a mix. Files are
created with the process umask unless a mode is given (a file holding secrets: 0o600, set on
the ``.tmp`` before any byte is written, so no reader ever sees them with a wider mode).

A file a user names on the command line (``report --out FILE``) is written the same way by
:func:`write_output_file`, after :func:`check_output_path`: errors name the path the user
gave (never the ``.tmp`` file: a directory, a missing parent, no permission, a full disk)
and a failed write leaves no ``.tmp`` behind.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from seglog.errors import InvalidConfigError, StorageWriteError
from seglog.storage import fileops
from seglog.storage.fileops import fsync_directory

__all__ = [
    "TMP_SUFFIX",
    "check_output_path",
    "fsync_directory",
    "write_file_atomically",
    "write_output_file",
]

TMP_SUFFIX = ".tmp"


def write_file_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` durably: tmp file, fsync, rename, directory fsync.
    ``mode``: the new file's permissions (e.g. 0o600 for secrets; None: the umask's)."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fileops.write_new_file(tmp, data, mode)
    fileops.replace(tmp, path)
    fsync_directory(path.parent)


def check_output_path(path: Path, option: str, example_name: str) -> None:
    """Raise :class:`InvalidConfigError` when ``path`` (given as ``option``) cannot be written
    as a file: it is a directory (``example_name`` shows a file name in it), or its parent is
    missing or not a directory."""
    if path.is_dir():
        raise InvalidConfigError(
            f"{option} {path}: is a directory; give a file name, e.g. {path / example_name}"
        )
    parent = path.parent
    if not parent.exists():
        raise InvalidConfigError(f"{option} {path}: the directory {parent} does not exist")
    if not parent.is_dir():
        raise InvalidConfigError(f"{option} {path}: {parent} is not a directory")


def write_output_file(path: Path, data: bytes) -> None:
    """:func:`write_file_atomically` for a file the user named: a failure raises
    :class:`StorageWriteError` naming ``path`` and removes the ``.tmp`` file."""
    try:
        write_file_atomically(path, data)
    except OSError as exc:
        with suppress(OSError):  # the error below is the one to report
            fileops.unlink(path.with_name(path.name + TMP_SUFFIX), missing_ok=True)
        reason = exc.strerror or str(exc)
        if isinstance(exc, StorageWriteError):
            reason = exc.reason
        raise StorageWriteError(reason, path=str(path), errno_code=exc.errno) from None
