"""The storage seam for object stores: a location named by URI, listed and read through
``pyarrow.fs``.

A location is ``s3://bucket/prefix`` (S3 and S3 APIs such as MinIO), or any other scheme
``pyarrow.fs.FileSystem.from_uri`` understands where pyarrow was built with it (``gs://``,
``abfs://``, ``hdfs://``); ``file://`` and plain paths are the local file system, which seglog
reads through :mod:`seglog.storage.fileops` as always (never through pyarrow).

Configuration, the way users already configure these clients: for S3 the explicit settings
(:class:`~seglog.storage.remote_copy_store.S3Settings`: ``s3.endpoint``, ``s3.region``,
``s3.access.key``, ...) first, then the AWS environment and files (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_PROFILE``), resolved where the location is made, so a pickled location (a Spark task)
reaches the same account from an executor without that environment.

Reads: :meth:`ObjectLocation.fetch` copies one object to a local file with ranged reads of
:data:`READ_BYTES` (64 MiB: never a request per small read), checking the object's size
against the listing's, so an object that changed or vanished mid-read is a typed error
(:class:`~seglog.storage.remote_copy_store.ObjectStoreError`), never wrong bytes. Listings go
through ``pyarrow.fs`` selectors (paged by pyarrow). Nothing here writes to a location except
:meth:`ObjectLocation.upload` (used only for outputs seglog owns, e.g. a Parquet export).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.storage import fileops
from seglog.storage.remote_copy_store import ObjectStoreError, S3Settings

# Per ranged read: at least 8 MiB (never a request per small read); 64 MiB makes one request of
# a whole default-size segment, where request count decides the cost (S3 bills and limits per
# request; moto copies the whole object for every ranged GET).
READ_BYTES = 64 * 1024 * 1024
REMOTE_SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss", "az", "hdfs", "viewfs")

_FILESYSTEMS: dict[tuple[str, S3Settings], Any] = {}
_FILESYSTEMS_LOCK = threading.Lock()


def is_remote(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an object store (``s3://...``), not a local path."""
    text = str(path)
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in REMOTE_SCHEMES


def local_path_of(path: str) -> str:
    """A ``file://`` URI as a plain path; any other path unchanged."""
    return path[len("file://") :] if path.startswith("file://") else path


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One object under a location: its path relative to the location, and its size."""

    relative: str
    size: int


@dataclass(frozen=True)
class ObjectLocation:
    """A directory-like prefix in an object store (picklable: the URI and settings only)."""

    uri: str
    settings: S3Settings = field(default_factory=S3Settings)

    def __post_init__(self) -> None:
        if not is_remote(self.uri):
            raise ValueError(f"not an object-store URI: {self.uri!r}")

    @property
    def scheme(self) -> str:
        """``s3``, ``gs``, ..."""
        return self.uri.partition("://")[0].lower()

    @property
    def root(self) -> str:
        """The location in pyarrow's form (``bucket/prefix``, no trailing slash)."""
        return self.uri.partition("://")[2].rstrip("/")

    def filesystem(self) -> Any:
        """This process's ``pyarrow.fs`` filesystem for the location (made once)."""
        key = (self.scheme + "://" + self.root.partition("/")[0], self.settings)
        with _FILESYSTEMS_LOCK:
            found = _FILESYSTEMS.get(key)
            if found is None:
                found = _make_filesystem(self.scheme, self.uri, self.settings)
                _FILESYSTEMS[key] = found
            return found

    def child(self, relative: str) -> ObjectLocation:
        """The location ``relative`` below this one."""
        return ObjectLocation(f"{self.uri.rstrip('/')}/{relative.strip('/')}", self.settings)

    def list_files(self, relative: str = "") -> list[RemoteFile]:
        """Every object below ``relative`` (recursively), sorted by path."""
        import pyarrow.fs as pafs

        base = "/".join(p for p in (self.root, relative.strip("/")) if p)
        try:
            infos = self.filesystem().get_file_info(
                pafs.FileSelector(base, recursive=True, allow_not_found=True)
            )
        except OSError as exc:
            raise ObjectStoreError(f"listing {self.uri}/{relative} failed: {exc}") from exc
        out = [
            RemoteFile(info.path[len(self.root) + 1 :], int(info.size or 0))
            for info in infos
            if info.type == pafs.FileType.File
        ]
        return sorted(out, key=lambda f: f.relative)

    def exists(self) -> bool:
        """Whether anything is stored below the location (a prefix with no objects is absent)."""
        import pyarrow.fs as pafs

        try:
            info = self.filesystem().get_file_info(self.root)
        except OSError as exc:
            raise ObjectStoreError(f"reading {self.uri} failed: {exc}") from exc
        return bool(info.type != pafs.FileType.NotFound)

    def fetch(self, item: RemoteFile, target: Path) -> None:
        """Copy one object to ``target`` (created or replaced) with ranged reads of
        :data:`READ_BYTES`; the object must still be ``item.size`` bytes."""
        where = f"{self.uri.rstrip('/')}/{item.relative}"
        try:
            source = self.filesystem().open_input_file(f"{self.root}/{item.relative}")
        except FileNotFoundError as exc:
            raise ObjectStoreError(f"{where} vanished while it was being read") from exc
        except OSError as exc:
            raise ObjectStoreError(f"reading {where} failed: {exc}") from exc
        fd = fileops.open_fd(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with source:
                size = source.size()
                if size != item.size:
                    raise ObjectStoreError(
                        f"{where} changed while it was being read: {size} bytes, the listing "
                        f"said {item.size}"
                    )
                position = 0
                while position < size:
                    try:
                        data = source.read_at(min(READ_BYTES, size - position), position)
                    except OSError as exc:
                        raise ObjectStoreError(
                            f"reading {where} at byte {position} failed: {exc}"
                        ) from exc
                    if not data:
                        raise ObjectStoreError(f"{where} ended at byte {position} of {size}")
                    fileops.pwrite(fd, target, data, position)
                    position += len(data)
        finally:
            os.close(fd)

    def upload(self, source: Path, relative: str) -> None:
        """Write one local file to ``relative`` below the location (outputs seglog owns)."""
        where = f"{self.uri.rstrip('/')}/{relative}"
        try:
            with (
                fileops.open_read(source) as reader,
                self.filesystem().open_output_stream(f"{self.root}/{relative}") as sink,
            ):
                while chunk := reader.read(READ_BYTES):
                    sink.write(chunk)
        except OSError as exc:
            raise ObjectStoreError(f"writing {where} failed: {exc}") from exc


def _make_filesystem(scheme: str, uri: str, settings: S3Settings) -> Any:
    import pyarrow.fs as pafs

    try:
        if scheme != "s3":
            filesystem, _ = pafs.FileSystem.from_uri(uri)
            return filesystem
        resolved = settings.resolved()
        endpoint = resolved.endpoint_url
        options: dict[str, Any] = {
            "region": resolved.region or "us-east-1",
            "access_key": resolved.access_key,
            "secret_key": resolved.secret_key,
            "session_token": resolved.session_token,
        }
        if endpoint:
            scheme_part, _, host = endpoint.partition("://")
            options["endpoint_override"] = host or scheme_part
            options["scheme"] = scheme_part if host else "https"
        return pafs.S3FileSystem(**{k: v for k, v in options.items() if v is not None})
    except (OSError, ValueError) as exc:
        raise ObjectStoreError(f"cannot reach {uri}: {exc}") from exc
