"""Read-only access to the objects of a Kafka tiered-storage location, over ``pyarrow.fs``.

This is the one I/O interface the tiered-storage readers use (:class:`RemoteFiles`): a
``pyarrow.fs.FileSystem`` (``LocalFileSystem`` for a directory, ``S3FileSystem`` for
``s3://``, or whatever ``pyarrow.fs`` gives for a URI) plus a base path. It **never writes**:
a Kafka bucket belongs to its brokers, so there is no write method at all.

Reads are shaped for object stores, where the request count decides the cost:

* :meth:`RemoteFiles.read_all` reads a small object (a manifest, an ``.indexes`` object, a
  checkpoint) in one ranged GET (``read_at`` of its whole size; no unbuffered stream, which
  would issue a GET per 256 KiB);
* :meth:`RemoteFiles.read_range` is one ``read_at`` (one GET) of an exact range; callers ask
  for at least :data:`READ_WINDOW_BYTES` (8 MiB) at a time when they read a segment
  (:mod:`seglog.storage.tiered_segments`), never a GET per record batch;
* :meth:`RemoteFiles.list_files` is one recursive listing (paged by the store: S3 lists
  1,000 keys per request).

The object pickles (``pyarrow.fs`` file systems pickle, S3 included) so a Spark executor
gets the same view as the driver. :func:`open_remote` builds one from a location string.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from seglog.errors import UnreadableFileError
from seglog.storage.object_store import ObjectLocation, is_remote
from seglog.storage.remote_copy_store import S3Settings

READ_WINDOW_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One object (or file): its path relative to the base, and its size in bytes."""

    path: str
    size: int


class RemoteFiles:
    """A read-only view of ``base`` on ``fs`` (module docstring)."""

    def __init__(self, fs: pafs.FileSystem, base: str) -> None:
        self.fs = fs
        self.base = base.rstrip("/")

    def __repr__(self) -> str:
        return f"RemoteFiles({self.fs.type_name}:{self.base})"

    def full(self, path: str) -> str:
        """The file system path of ``path`` (relative to the base)."""
        return f"{self.base}/{path}" if path else self.base

    def describe(self, path: str) -> str:
        """``path`` as users name it in messages (scheme and full path)."""
        scheme = "" if self.fs.type_name == "local" else f"{self.fs.type_name}://"
        return scheme + self.full(path)

    def is_dir(self, path: str = "") -> bool:
        """Whether ``path`` is a directory (or an S3 prefix with objects below it)."""
        info = self.fs.get_file_info(self.full(path))
        return bool(info.type == pafs.FileType.Directory)

    def list_files(self, path: str = "") -> list[RemoteFile]:
        """Every file below ``path``, recursively, sorted by path (empty when none)."""
        selector = pafs.FileSelector(self.full(path), recursive=True, allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise UnreadableFileError(f"cannot list: {exc}", path=self.describe(path)) from exc
        prefix = self.base + "/"
        out = [
            RemoteFile(info.path[len(prefix) :] if info.path.startswith(prefix) else info.path,
                       int(info.size or 0))
            for info in infos
            if info.type == pafs.FileType.File
        ]  # fmt: skip
        return sorted(out, key=lambda f: f.path)

    def read_range(self, path: str, position: int, length: int) -> bytes:
        """Bytes ``[position, position+length)`` of ``path`` in one request; short only at
        the end of the object, where a short read raises (the object changed)."""
        try:
            with self.fs.open_input_file(self.full(path)) as handle:
                data = handle.read_at(length, position)
        except (OSError, ValueError) as exc:
            raise UnreadableFileError(
                f"cannot read bytes {position}-{position + length}: {exc}", path=self.describe(path)
            ) from exc
        if len(data) != length:
            raise UnreadableFileError(
                f"read {len(data)} bytes at position {position}, expected {length} (the "
                "object is shorter than listed: it changed during the read)",
                path=self.describe(path),
            )
        return bytes(data)

    def read_all(self, path: str, size: int | None = None) -> bytes:
        """The whole of a small object, in one request (``size``: when already listed)."""
        if size is None:
            try:
                info = self.fs.get_file_info(self.full(path))
            except OSError as exc:
                raise UnreadableFileError(f"cannot stat: {exc}", path=self.describe(path)) from exc
            if info.type != pafs.FileType.File:
                raise UnreadableFileError("no such object", path=self.describe(path))
            size = int(info.size or 0)
        return self.read_range(path, 0, size) if size else b""


def open_remote(location: str, options: dict[str, str] | None = None) -> RemoteFiles:
    """A :class:`RemoteFiles` for ``location``: a local directory (plain path or
    ``file://``) or a URI ``pyarrow.fs`` knows (``s3://bucket/prefix``, ``gs://``, ...).

    Object stores are reached through :class:`~seglog.storage.object_store.ObjectLocation`,
    configured by :class:`~seglog.storage.remote_copy_store.S3Settings` (the ``s3.*``
    options, then the AWS environment and files): one configuration for every object-store
    path of seglog.
    """
    if "://" not in location or location.startswith("file://"):
        path = location[len("file://") :] if location.startswith("file://") else location
        return RemoteFiles(pafs.LocalFileSystem(), str(Path(path).resolve()))
    if is_remote(location):
        found = ObjectLocation(location, S3Settings.from_options(options or {}))
        return RemoteFiles(found.filesystem(), found.root)
    fs, base = pafs.FileSystem.from_uri(location)
    return RemoteFiles(fs, base)
