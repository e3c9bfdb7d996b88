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

from pathlib import Path

from seglog.storage import fileops
from seglog.storage.fileops import fsync_directory

__all__ = ["TMP_SUFFIX", "fsync_directory", "write_file_atomically"]

TMP_SUFFIX = ".tmp"


def write_file_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably: tmp file, fsync, rename, directory fsync."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fileops.write_new_file(tmp, data)
    fileops.replace(tmp, path)
    fsync_directory(path.parent)
