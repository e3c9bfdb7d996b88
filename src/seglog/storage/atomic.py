"""Atomic, durable file replacement: the one way seglog writes a small whole file.

Procedure (each step says what recovery finds if the process dies right there):

1. Write the new content to ``<name>.tmp`` in the same directory and fsync it.
   Crash: ``<name>`` is untouched; a stray ``<name>.tmp`` is left for startup to remove.
2. Rename ``<name>.tmp`` over ``<name>`` (atomic on POSIX file systems).
   Crash before: as step 1. Crash after: ``<name>`` holds the complete new content.
3. fsync the directory, so the rename itself survives a power loss.

Readers therefore see either the whole old file or the whole new one, never a mix. Files are
created with the process umask (no explicit mode).
"""

from __future__ import annotations

import os
from pathlib import Path

from seglog.storage.fault_points import reached

TMP_SUFFIX = ".tmp"


def fsync_directory(directory: Path) -> None:
    """fsync a directory so renames and creations inside it are durable."""
    reached("fsync-dir", directory)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably: tmp file, fsync, rename, directory fsync."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    reached("write", tmp)
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        reached("fsync", tmp)
        os.fsync(handle.fileno())
    reached("rename", path)
    os.replace(tmp, path)
    fsync_directory(path.parent)
