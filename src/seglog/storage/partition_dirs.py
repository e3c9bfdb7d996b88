"""Partition directories inside a log directory root: list, create, rename, remove.

File operations the engine needs on whole partitions, kept here so that ``seglog.storage``
stays the only code that touches the file system (docs/architecture.md):

* :func:`list_partition_dirs`: the sub-directories of a root whose names parse as partition
  directories (live ``{topic}-{partition}`` and the ``-delete``/``-future``/``-stray`` forms,
  as Kafka names them); anything else (files, other directories) is not a partition and is
  skipped.
* :func:`create_partition_dir`: 1. ``mkdir``; 2. write ``partition.metadata`` atomically
  (topic id) before any log data; 3. fsync the root. *Crash after 1*: an empty
  directory, which opens as an empty log and gets its metadata when the topic is re-created.
* :func:`rename_partition_dir`: one ``rename`` (atomic) plus an fsync of the root.
* :func:`remove_partition_dir`: ``rmtree``; a directory already gone is fine.
* :func:`read_leader_epochs` / :func:`write_leader_epochs`: the partition's
  ``leader-epoch-checkpoint``; Kafka creates it empty when the log opens, and a
  damaged one reads as empty (a single node only ever has epoch 0).
"""

from __future__ import annotations

from pathlib import Path

from seglog.errors import SeglogError
from seglog.format.checkpoint import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
)
from seglog.format.topic_names import ParsedPartitionDir, parse_partition_dir_name
from seglog.storage import fileops
from seglog.storage.atomic import fsync_directory, write_file_atomically

PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


def list_partition_dirs(root: Path) -> list[tuple[Path, ParsedPartitionDir]]:
    """Every partition directory of a root with its parsed name, sorted by name."""
    found = []
    for path in sorted(root.iterdir()):
        parsed = parse_partition_dir_name(path.name)
        if parsed is not None and path.is_dir():
            found.append((path, parsed))
    return found


def create_partition_dir(root: Path, name: str, topic_id: str) -> Path:
    """Create ``root/name`` with its ``partition.metadata`` (see the module docstring)."""
    path = root / name
    fileops.mkdir(path, exist_ok=True)
    write_file_atomically(path / PARTITION_METADATA, encode_partition_metadata(topic_id))
    fsync_directory(root)
    return path


def read_partition_topic_id(directory: Path) -> str | None:
    """The topic id in ``directory/partition.metadata`` (None when the file is absent; a
    damaged file raises ``CorruptCheckpointError`` naming it)."""
    path = directory / PARTITION_METADATA
    try:
        data = fileops.read_bytes(path)
    except FileNotFoundError:
        return None
    return parse_partition_metadata(data, path=str(path))


def ensure_partition_dir(path: Path) -> None:
    """Create a partition directory (and its parents) if missing."""
    fileops.mkdir(path, parents=True, exist_ok=True)


def rename_partition_dir(path: Path, new_name: str) -> Path:
    """Rename a partition directory inside its root, durably; returns the new path."""
    target = path.with_name(new_name)
    fileops.replace(path, target)
    fsync_directory(target.parent)
    return target


def remove_partition_dir(path: Path) -> None:
    """Remove a directory and everything in it (missing is fine)."""
    fileops.rmtree(path)


def read_leader_epochs(directory: Path, *, create: bool) -> list[EpochEntry]:
    """The partition's leader epochs; a missing file is created empty when ``create``."""
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.exists():
        if create:
            write_file_atomically(path, b"")
        return []
    try:
        return parse_leader_epoch_checkpoint(fileops.read_bytes(path), path=str(path))
    except (OSError, SeglogError):
        return []


def write_leader_epochs(directory: Path, entries: list[EpochEntry]) -> None:
    """Replace the partition's ``leader-epoch-checkpoint`` atomically."""
    write_file_atomically(
        directory / LEADER_EPOCH_CHECKPOINT, encode_leader_epoch_checkpoint(entries)
    )
