"""A log directory in an object store, made readable by seglog's own (local) readers: a
read-through mirror of the files a read needs.

seglog's readers (the loader, segments, indexes, checkpoints) work on local files with
positional reads and Kafka's recovery rules. A log directory copied to an object store is read
by fetching, for the partitions a read names, every file of their directories, plus the small
files of the root (checkpoints, ``meta.properties``, ``seglog-topics.json``, the KRaft
metadata log), into a local cache, then opening that as a **read-only** log directory: the
same code, so the same results as a local copy of the directory, by construction.

The cache (``$SEGLOG_MIRROR_DIR``, default ``<tmp>/seglog-mirror``) holds one directory per
location (a hash of its URI). A file is fetched again when its size in the listing differs
from the cached copy's (an object store's log directory is a copy: files are replaced, not
edited in place); files no longer listed are removed. Fetches write a temporary file and
rename it, so a reader in another process (a Spark executor on the same machine) sees a
file whole or not at all. Deleting the cache at any time is safe.

Invariant: nothing is ever written to the object store; a mirror is only ever opened
read-only.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from seglog.format.topic_names import PartitionDirKind, parse_partition_dir_name
from seglog.storage import fileops
from seglog.storage.object_store import ObjectLocation, RemoteFile

MIRROR_DIR_ENV = "SEGLOG_MIRROR_DIR"


def mirror_root(location: ObjectLocation) -> Path:
    """The local directory mirroring ``location``."""
    base = Path(os.environ.get(MIRROR_DIR_ENV) or Path(tempfile.gettempdir()) / "seglog-mirror")
    digest = hashlib.sha256(location.uri.rstrip("/").encode()).hexdigest()[:16]
    return base / digest


def partition_filter(
    wanted: Callable[[str, int], bool],
) -> Callable[[str], bool]:
    """A filter of relative paths: root files always, a partition directory's files when
    ``wanted(topic, partition)``, other directories' (future, ``-delete``) never."""

    def keep(relative: str) -> bool:
        directory, slash, _ = relative.partition("/")
        if not slash:
            return True  # a root file
        parsed = parse_partition_dir_name(directory)
        if parsed is None or parsed.kind is not PartitionDirKind.LIVE:
            return False
        if parsed.topic == "__cluster_metadata":
            return True  # the KRaft metadata image: the topics' configs
        return wanted(parsed.topic, parsed.partition)

    return keep


def mirror(location: ObjectLocation, keep: Callable[[str], bool] | None = None) -> Path:
    """Bring the files of ``location`` that ``keep`` (a relative path) selects into the local
    mirror; returns the mirror's root, ready for a read-only open."""
    root = mirror_root(location)
    fileops.mkdir(root, parents=True, exist_ok=True)
    listed = [f for f in location.list_files() if keep is None or keep(f.relative)]
    wanted_dirs = {f.relative.rpartition("/")[0] for f in listed}
    # Two fetches at a time: pyarrow releases the GIL, and one request's latency hides the
    # other's (more would only queue on a two-core machine).
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="seglog-fetch") as pool:
        for done in [pool.submit(_bring, location, item, root) for item in listed]:
            done.result()
    _remove_unlisted(root, {f.relative for f in listed}, wanted_dirs)
    return root


def _bring(location: ObjectLocation, item: RemoteFile, root: Path) -> None:
    target = root / item.relative
    try:
        if target.stat().st_size == item.size:
            return  # cached
    except FileNotFoundError:
        pass
    fileops.mkdir(target.parent, parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.fetching")
    try:
        location.fetch(item, partial)
        fileops.replace(partial, target)
    finally:
        fileops.unlink(partial, missing_ok=True)


def _remove_unlisted(root: Path, listed: set[str], wanted_dirs: set[str]) -> None:
    """Files of the mirrored directories the listing no longer has (a segment deleted by
    retention in the copy) go, so the mirror never shows a file the location lost."""
    for directory in wanted_dirs:
        local = root / directory if directory else root
        if not local.is_dir():
            continue
        for entry in local.iterdir():
            relative = f"{directory}/{entry.name}" if directory else entry.name
            if entry.is_file() and relative not in listed and not entry.name.startswith("."):
                fileops.unlink(entry, missing_ok=True)
