"""Splitting an overflowed segment on disk, crash-safely (Kafka's ``splitOverflowedSegment``).

The plan (which bytes go to which new base offset) is :func:`seglog.core.overflow_split.
plan_overflow_split`; this module reads the entry headers of the ``.log`` and performs the
plan with the same ``.cleaned`` -> ``.swap`` -> live protocol as the cleaner's replace
(``Log.replace_segments``), so the loader's file pass and swap completion
(:mod:`seglog.storage.loader` steps 1-2) finish or undo it after a crash. The loader calls
it while no segment of the directory is open. Steps, with what the next load does after a
crash right there:

1. Each piece's bytes are copied to ``{piece base}.log.cleaned`` (bounded buffer), fsynced,
   and given the original's modification time. Only ``.log`` files are written: the pieces'
   indexes are rebuilt by recovery (a segment without ``.index`` is always recovered).
   *Crash*: ``.cleaned`` files are removed; the original is untouched; the split runs again.
2. The ``.cleaned`` files are renamed ``.swap``, highest base offset first. *Crash*: a
   ``.swap`` at or above the lowest ``.cleaned`` is removed with it -> the original, as in 1.
3. The original's files (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) are renamed
   ``.deleted``. *Crash*: every piece is a ``.swap``; the first piece keeps the original's
   base offset, so swap completion removes the original's files (their offset prefix is in
   the swaps' range) and renames the swaps -> the split log.
4. The ``.swap`` suffixes are removed, lowest first, and the directory is fsynced. *Crash*:
   swap completion renames the rest.
5. The ``.deleted`` files are unlinked and the directory fsynced. *Crash*: the file pass
   removes what is left.

The sizes of the pieces add up to the original's (checked before step 2), so no byte is lost
or made up; a torn tail stays at the end of the last piece for its recovery to cut.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seglog.core.overflow_split import EntryHeader, SplitPiece, plan_overflow_split
from seglog.errors import InvalidRecordError, StorageWriteError, UnreadableFileError
from seglog.format.batch import LOG_OVERHEAD, MAGIC_V2
from seglog.format.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from seglog.storage import fileops
from seglog.storage.atomic import fsync_directory
from seglog.storage.segment import LogSegment, segment_path

COPY_CHUNK_BYTES = 8 * 1024 * 1024
_OFFSET_SIZE = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_HEADER_PEEK_BYTES = 27  # offset, size, leader epoch, magic, crc, attributes, lastOffsetDelta
_MIN_ENTRY_SIZE = 14  # the smallest legacy v0 message after its offset and size fields
_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class NoOffsetOverflowError(InvalidRecordError):
    """A split was asked for a segment that has no offset overflow, or whose offsets are not a
    plausible log (Kafka's ``splitOverflowedSegment`` refuses it too); nothing was changed."""


@dataclass(frozen=True, slots=True)
class SplitResult:
    """What a split did: the original segment's base offset and the new pieces."""

    base_offset: int
    pieces: list[SplitPiece]

    def __str__(self) -> str:
        bases = ", ".join(str(p.base_offset) for p in self.pieces)
        return f"segment {self.base_offset} overflowed its int32 relative offsets: split at {bases}"


def _entry_headers(fd: int, size: int) -> Iterator[EntryHeader]:
    """Every whole entry from position 0 (headers only; stops at a torn or impossible one)."""
    position = 0
    while position + LOG_OVERHEAD <= size:
        peek = os.pread(fd, _HEADER_PEEK_BYTES, position)
        if len(peek) < LOG_OVERHEAD:
            return
        offset, entry_size = _OFFSET_SIZE.unpack_from(peek, 0)
        total = LOG_OVERHEAD + entry_size
        if entry_size < _MIN_ENTRY_SIZE or position + total > size:
            return
        last = offset
        if len(peek) == _HEADER_PEEK_BYTES and peek[16] == MAGIC_V2:
            last = offset + _LAST_OFFSET_DELTA.unpack_from(peek, 23)[0]
        yield EntryHeader(position, total, offset, last)
        position += total


def plan_split(
    directory: Path, base_offset: int, next_segment_base: int | None
) -> list[SplitPiece] | None:
    """Read ``{base}.log``'s entry headers and plan its split (None: no split, see the plan)."""
    path = segment_path(directory, base_offset, LOG_SUFFIX)
    try:
        fd = fileops.open_fd(path, os.O_RDONLY)
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc), path=str(path)) from exc
    try:
        size = os.fstat(fd).st_size
        return plan_overflow_split(base_offset, _entry_headers(fd, size), size, next_segment_base)
    finally:
        os.close(fd)


def _copy_range(source_fd: int, path: Path, piece: SplitPiece, mtime_ms: int) -> None:
    """Step 1 for one piece: ``path`` gets the piece's bytes, fsynced, with ``mtime_ms``."""
    fd = fileops.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        position = piece.start_position
        while position < piece.end_position:
            want = min(COPY_CHUNK_BYTES, piece.end_position - position)
            data = os.pread(source_fd, want, position)
            if len(data) != want:
                raise StorageWriteError(
                    f"the .log ended at {position + len(data)} while splitting it",
                    path=str(path),
                )
            fileops.pwrite(fd, path, data, position - piece.start_position)
            position += want
        fileops.fsync(fd, path)
    finally:
        os.close(fd)
    fileops.set_mtime_ms(path, mtime_ms)


def split_overflowed_segment(
    directory: Path, base_offset: int, next_segment_base: int | None
) -> SplitResult:
    """Split ``{base}.log`` into segments whose offsets fit int32 (module steps 1-5).

    ``next_segment_base`` (None: the last segment) bounds the offsets the split may keep.
    Raises :class:`NoOffsetOverflowError` (changing nothing) when the segment has no overflow
    or its offsets are not a plausible log.
    """
    pieces = plan_split(directory, base_offset, next_segment_base)
    original = segment_path(directory, base_offset, LOG_SUFFIX)
    if pieces is None:
        raise NoOffsetOverflowError(
            f"{original} has no offset overflow to split (or its offsets are not increasing "
            "within the segment)"
        )
    source_fd = fileops.open_fd(original, os.O_RDONLY)
    try:
        size = os.fstat(source_fd).st_size
        if sum(p.end_position - p.start_position for p in pieces) != size:
            raise InvalidRecordError(f"split of {original} does not cover its {size} bytes")
        mtime_ms = os.fstat(source_fd).st_mtime_ns // 1_000_000
        written: list[Path] = []
        try:
            for piece in pieces:  # step 1
                LogSegment.remove_files_for(directory, piece.base_offset, CLEANED_SUFFIX)
                cleaned = segment_path(directory, piece.base_offset, LOG_SUFFIX + CLEANED_SUFFIX)
                written.append(cleaned)
                _copy_range(source_fd, cleaned, piece, mtime_ms)
        except BaseException:
            for path in written:  # the original is whole: leave no half-written piece
                with contextlib.suppress(OSError):  # else the next load removes them
                    fileops.unlink(path, missing_ok=True)
            raise
    finally:
        os.close(source_fd)
    for piece in sorted(pieces, key=lambda p: p.base_offset, reverse=True):  # step 2
        cleaned = segment_path(directory, piece.base_offset, LOG_SUFFIX + CLEANED_SUFFIX)
        fileops.replace(
            cleaned, cleaned.with_name(cleaned.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
        )
    deleted: list[Path] = []
    for suffix in _SEGMENT_SUFFIXES:  # step 3
        path = segment_path(directory, base_offset, suffix)
        if path.exists():
            target = path.with_name(path.name + DELETED_SUFFIX)
            fileops.replace(path, target)
            deleted.append(target)
    for piece in sorted(pieces, key=lambda p: p.base_offset):  # step 4
        swap = segment_path(directory, piece.base_offset, LOG_SUFFIX + SWAP_SUFFIX)
        fileops.replace(swap, swap.with_name(swap.name[: -len(SWAP_SUFFIX)]))
    fsync_directory(directory)
    for path in deleted:  # step 5
        fileops.unlink(path, missing_ok=True)
    fsync_directory(directory)
    return SplitResult(base_offset, pieces)
