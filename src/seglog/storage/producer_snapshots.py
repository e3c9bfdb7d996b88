"""A partition's producer state snapshot files (``<offset>.snapshot``; format:
:mod:`seglog.format.producer_snapshot`).

A snapshot named ``N`` holds the producer state of every offset below ``N``. Files are written
whole and atomically (temp file, fsync, rename, directory fsync), so a crash never leaves a
half-written snapshot under a live name; a damaged one (CRC) is skipped by the reader and
removed, and the state rebuilt from the log, never trusted.

Which snapshots exist (Kafka's rules): one at each roll (the new segment's base offset), one
at a clean close (the log end offset); those of deleted segments go with them; on load those
above the log end offset or below the log start offset are deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

from seglog.errors import CorruptSnapshotError
from seglog.format.names import SNAPSHOT_SUFFIX, snapshot_file_name
from seglog.format.producer_snapshot import (
    ProducerSnapshotEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from seglog.storage import fileops
from seglog.storage.atomic import TMP_SUFFIX, write_file_atomically


def snapshot_path(directory: Path, offset: int) -> Path:
    """``<directory>/<offset, 20 digits>.snapshot``."""
    return directory / snapshot_file_name(offset)


def list_snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the live snapshot files, ascending."""
    offsets = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        if name.endswith(SNAPSHOT_SUFFIX) and len(name) == 20 + len(SNAPSHOT_SUFFIX):
            stem = name[:20]
            if stem.isdigit():
                offsets.append(int(stem))
    return sorted(offsets)


def read_snapshot(path: Path) -> list[ProducerSnapshotEntry]:
    """A snapshot's entries (``CorruptSnapshotError`` if damaged)."""
    return decode_producer_snapshot(fileops.read_bytes(path), path=str(path))


def write_snapshot(
    directory: Path, offset: int, entries: list[ProducerSnapshotEntry], *, durable: bool = True
) -> Path:
    """Write the snapshot for ``offset`` (temp file, then rename); returns its path.

    ``durable`` also fsyncs the file and the directory (a clean close). A roll's snapshot is
    not fsynced here (Kafka writes it asynchronously): the roll's flush fsyncs the directory
    after it, and a snapshot a power loss damaged fails its CRC and is skipped on load.
    """
    path = snapshot_path(directory, offset)
    data = encode_producer_snapshot(entries)
    if durable:
        write_file_atomically(path, data)
        return path
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = fileops.open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        fileops.write_all(fd, tmp, (data,), 0)
    finally:
        os.close(fd)
    fileops.replace(tmp, path)
    return path


def delete_snapshot(directory: Path, offset: int) -> None:
    """Remove the snapshot for ``offset`` if there is one."""
    fileops.unlink(snapshot_path(directory, offset), missing_ok=True)


def delete_snapshots_outside(directory: Path, low: int, high: int) -> list[int]:
    """Remove snapshots below ``low`` or above ``high``; the offsets removed."""
    removed = [o for o in list_snapshot_offsets(directory) if o < low or o > high]
    for offset in removed:
        delete_snapshot(directory, offset)
    return removed


def newest_valid_snapshot(
    directory: Path, at_most: int, *, remove_damaged: bool, problems: list[str]
) -> tuple[int, list[ProducerSnapshotEntry]] | None:
    """The newest snapshot at or below ``at_most`` that decodes, with its entries.

    A damaged one is reported in ``problems`` (and removed with ``remove_damaged``), then
    the next older one is tried.
    """
    for offset in reversed(list_snapshot_offsets(directory)):
        if offset > at_most:
            continue
        path = snapshot_path(directory, offset)
        try:
            return offset, read_snapshot(path)
        except (CorruptSnapshotError, OSError) as exc:
            problems.append(f"{path.name}: skipped, state rebuilt from the log ({exc})")
            if remove_damaged:
                fileops.unlink(path, missing_ok=True)
    return None
