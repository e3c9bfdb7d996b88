"""Read-only access to whole files, for tools (``seglog dump-log``) and loaders.

Two ways to get a file's bytes:

* :func:`read_file_bytes`: a private copy (``bytes``); right for small files (indexes,
  checkpoints, snapshots) and for anything the caller keeps after the file may change.
* :func:`map_file_readonly`: a read-only ``mmap`` exposed as a ``memoryview``, for segments
  (up to 2 GiB) that are scanned once; nothing is copied and the OS pages data in on demand.

Invariants and limits:

* Every failure to open or read (missing file, a directory, no permission, I/O error) raises
  :class:`~seglog.errors.UnreadableFileError` naming the path and the OS reason; callers never
  see a bare ``OSError`` from here.
* An empty file reads as an empty buffer (``mmap`` cannot map zero bytes, so no map is made).
* Sizes are bounded by ``max_bytes`` (default 2 GiB - 1, Kafka's int32 positions); a larger
  file raises ``UnreadableFileError`` rather than allocating without limit.
* A mapping is of the size the file had when mapped. Kafka only appends to a live ``.log``,
  which cannot shrink a mapping under us; a file truncated while mapped may fault (SIGBUS),
  so map files of a running broker only for short scans.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seglog.errors import UnreadableFileError
from seglog.storage import fileops

StrPath = str | os.PathLike[str]

MAX_FILE_BYTES_DEFAULT = (1 << 31) - 1


def _unreadable(path: StrPath, exc: OSError) -> UnreadableFileError:
    reason = exc.strerror or str(exc)
    return UnreadableFileError(reason, path=os.fspath(path))


def file_exists(path: StrPath) -> bool:
    """True when ``path`` names an existing regular file (following symlinks)."""
    return Path(path).is_file()


def file_size(path: StrPath) -> int:
    """Size of a file in bytes; ``UnreadableFileError`` when it cannot be stat'ed."""
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise _unreadable(path, exc) from exc


def read_file_bytes(path: StrPath, *, max_bytes: int = MAX_FILE_BYTES_DEFAULT) -> bytes:
    """The whole content of a regular file, at most ``max_bytes`` long."""
    try:
        with fileops.open_read(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise UnreadableFileError(
                    f"file is {size} bytes, above the limit of {max_bytes}", path=os.fspath(path)
                )
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    if len(data) > max_bytes:  # the file grew while we read it
        raise UnreadableFileError(
            f"file grew above the limit of {max_bytes} bytes while being read",
            path=os.fspath(path),
        )
    return data


@contextmanager
def map_file_readonly(
    path: StrPath, *, max_bytes: int = MAX_FILE_BYTES_DEFAULT
) -> Iterator[memoryview]:
    """Map a regular file read-only for the ``with`` block; yields a ``memoryview`` of it.

    Views sliced from the yielded one must not outlive the block; if some still do when it
    ends, the map is left for the garbage collector to close instead of raising.
    """
    try:
        with fileops.open_read(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise UnreadableFileError(
                    f"file is {size} bytes, above the limit of {max_bytes}", path=os.fspath(path)
                )
            if size == 0:
                mapping = None
            else:
                # The map keeps its own duplicate of the descriptor, so closing ``handle`` is fine.
                mapping = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    if mapping is None:
        yield memoryview(b"")
        return
    view = memoryview(mapping)
    try:
        yield view
    finally:
        try:
            view.release()
            mapping.close()
        except BufferError:
            # A caller still holds a slice; the map closes when the last view is collected.
            pass
