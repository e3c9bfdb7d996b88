"""The Pulsar-style compacted copy of a partition, built for and published to object storage.

A build (what a Spark executor runs for one partition, :mod:`seglog.spark.copy_job`):

1. Read the bucket's manifest and its ETag (:class:`~seglog.storage.remote_copy_store.
   RemoteCopyStore`). A manifest whose horizon is at or past the log end offset is refused:
   the log lost its tail since, and folding the copy in would resurrect records.
2. Download the published copy (if any) into a scratch partition directory, where it is an
   ordinary local copy, so the run is incremental exactly as a local run is.
3. Run the compactor (:class:`~seglog.engine.compaction.compactor.Compactor`) on the log,
   opened read-only, with the scratch directory as its store: the same rules and bytes as a
   local run; the source log is never written.
4. Upload the new copy under its unique name.

The publish (the driver, :func:`publish_remote_copy`) is one conditional PUT of the manifest
against the ETag read in step 1; a conflict removes this build's copy and raises
:class:`~seglog.storage.remote_copy_store.PublicationConflictError`. Readers download the
copy a manifest names (:func:`open_remote_copy`) and read it with
:func:`~seglog.engine.compaction.compactor.iter_compacted_records`.
"""

from __future__ import annotations

import atexit
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.engine.compaction.compactor import CompactionError, Compactor, copy_store
from seglog.engine.log import Log
from seglog.storage import fileops
from seglog.storage.compacted_copy import CompactedCopyStore, Publication
from seglog.storage.remote_copy_store import (
    CopyTarget,
    PublicationConflictError,
    RemoteCopyStore,
    RemotePublication,
)


@dataclass(frozen=True, slots=True)
class RemoteCopyBuild:
    """What a build hands the publisher: the manifest it started from, and the new copy
    (``publication`` None: nothing new to compact, the published copy stays)."""

    partition_dir: str
    started_from: RemotePublication | None
    publication: Publication | None
    files: tuple[tuple[str, int], ...] = ()
    figures: dict[str, Any] = field(default_factory=dict)


def _check_horizon(remote: RemotePublication, log: Log, store: RemoteCopyStore) -> None:
    horizon = remote.publication.horizon
    if horizon >= log.log_end_offset:
        raise CompactionError(
            f"{log.topic_partition}: the copy published at {store.uri} has horizon {horizon}, "
            f"at or past the log end offset {log.log_end_offset}: the log lost records since "
            "(or this is another log); remove the manifest to build a new copy"
        )


def build_remote_copy(
    log: Log,
    remote: RemoteCopyStore,
    compactor: Compactor,
    scratch: Path,
    *,
    now_ms: int | None = None,
    cleaner_checkpoint: int | None = None,
) -> RemoteCopyBuild:
    """Steps 1-4 for ``log`` into ``remote``; ``scratch`` is an empty local directory."""
    started_from = remote.published()
    partition_dir = scratch / log.directory.name
    fileops.mkdir(partition_dir, parents=True, exist_ok=True)
    if started_from is not None:
        _check_horizon(started_from, log, remote)
        remote.download_copy(started_from, partition_dir)
    store = CompactedCopyStore(partition_dir)
    run = compactor.compact(log, now_ms=now_ms, cleaner_checkpoint=cleaner_checkpoint, store=store)
    if run.is_noop:
        return RemoteCopyBuild(log.directory.name, started_from, None, (), run.to_json())
    publication = store.published()
    assert publication is not None and publication.copy == run.copy
    files = remote.upload_copy(store.path / run.copy)
    return RemoteCopyBuild(log.directory.name, started_from, publication, files, run.to_json())


def publish_remote_copy(remote: RemoteCopyStore, build: RemoteCopyBuild) -> str | None:
    """Publish a build (the conditional PUT); returns the manifest's new ETag, or None when
    the build had nothing to publish. On a conflict the build's copy is removed and
    :class:`PublicationConflictError` raised."""
    if build.publication is None:
        return None
    try:
        return remote.publish(build.publication, build.files, expected=build.started_from)
    except PublicationConflictError:
        remote.remove_copy(build.publication.copy)
        raise


def open_remote_copy(remote: RemoteCopyStore, log: Log, scratch: Path) -> CompactedCopyStore:
    """Download the published copy of ``log``'s partition into ``scratch`` and return it as a
    local store for :func:`~seglog.engine.compaction.compactor.iter_compacted_records`
    (an empty store when nothing is published)."""
    return _download_published(remote, log, scratch / log.directory.name, remote.published())


def _download_published(
    remote: RemoteCopyStore,
    log: Log,
    partition_dir: Path,
    published: RemotePublication | None,
) -> CompactedCopyStore:
    """``published`` (checked against ``log``) as a read-only local store in
    ``partition_dir`` (an empty store when None)."""
    fileops.mkdir(partition_dir, parents=True, exist_ok=True)
    if published is not None:
        _check_horizon(published, log, remote)
        remote.download_copy(published, partition_dir)
    return CompactedCopyStore(partition_dir, writable=False)


_CACHE_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str, str], CompactedCopyStore] = {}
_CACHE_ROOT: list[Path] = []


def _cache_root() -> Path:
    if not _CACHE_ROOT:
        root = Path(tempfile.mkdtemp(prefix="seglog-remote-copies-"))
        _CACHE_ROOT.append(root)
        atexit.register(fileops.rmtree, root)
    return _CACHE_ROOT[0]


def copy_store_for(log: Log, target: CopyTarget | None) -> CompactedCopyStore:
    """Where a read-compacted reader of ``log`` finds its copy: the log's own ``compaction/``
    directory, or (``target`` given) the copy published in the bucket, downloaded once per
    process and published copy into a temporary directory removed at exit (a copy never
    changes under its name, so a cached one is reused until a newer one is published)."""
    if target is None:
        return copy_store(log)
    remote = target.store_for(log.directory.name)
    published = remote.published()
    copy = published.publication.copy if published else ""
    key = (target.uri, log.directory.name, copy)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        partition_dir = _cache_root() / uuid.uuid4().hex / log.directory.name
        store = _download_published(remote, log, partition_dir, published)
        _CACHE[key] = store
        return store
