"""A segment's ``.txnindex`` file (layout: :mod:`seglog.format.txn_index`).

The file exists only once the segment holds an ABORT marker of a transaction with data; an
entry is appended after its marker is written (a crash between the two leaves the marker in
the unflushed tail, and recovery rebuilds the file from the log). Entries are kept in memory
once read (a segment has few aborted transactions), and the file is fsynced with the segment.

Invariants: entries' ``lastOffset`` strictly increase, and each lies at or above the
segment's base offset (the load-time sanity check; a file breaking it is rebuilt).
"""

from __future__ import annotations

import os
from pathlib import Path

from seglog.errors import CorruptIndexError, StorageWriteError
from seglog.format.txn_index import (
    TXN_INDEX_ENTRY_SIZE,
    AbortedTxn,
    decode_txn_index,
    encode_aborted_txn,
)
from seglog.storage import fileops


class TxnIndexFile:
    """The aborted transactions of one segment, backed by its ``.txnindex`` file."""

    def __init__(self, path: Path, base_offset: int, *, writable: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        self.writable = writable
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    def entries(self) -> list[AbortedTxn]:
        """Every entry, oldest first (``CorruptIndexError`` for a damaged file)."""
        if self._entries is None:
            try:
                data = fileops.read_bytes(self.path)
            except FileNotFoundError:
                data = b""
            self._entries = decode_txn_index(data, path=str(self.path))
        return list(self._entries)

    def sanity_problem(self) -> str | None:
        """Why the file cannot be trusted (unreadable, torn, an entry below the base offset,
        entries out of order), or None."""
        try:
            entries = self.entries()
        except (CorruptIndexError, OSError) as exc:
            return str(exc)
        previous = -1
        for i, txn in enumerate(entries):
            if txn.last_offset < self.base_offset:
                return (
                    f"{self.path.name}: entry {i} ends at offset {txn.last_offset}, below the "
                    f"segment's base offset {self.base_offset}"
                )
            if txn.last_offset <= previous or txn.first_offset > txn.last_offset:
                return f"{self.path.name}: entry {i} is out of order"
            previous = txn.last_offset
        return None

    def append(self, txn: AbortedTxn) -> None:
        """Append one entry (its marker is already in the segment)."""
        entries = self.entries()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise CorruptIndexError(
                f"transaction index entry ending at {txn.last_offset} does not follow the last "
                f"one ending at {entries[-1].last_offset}",
                path=str(self.path),
            )
        self._write_at(len(entries) * TXN_INDEX_ENTRY_SIZE, encode_aborted_txn(txn))
        assert self._entries is not None
        self._entries.append(txn)
        self._dirty = True

    def _write_at(self, position: int, data: bytes) -> None:
        fd = fileops.open_fd(self.path, os.O_WRONLY | os.O_CREAT)
        try:
            fileops.pwrite(fd, self.path, data, position)
        finally:
            os.close(fd)

    def replace_all(self, entries: list[AbortedTxn]) -> None:
        """Rewrite the file with ``entries`` (recovery's rebuild); no file when empty."""
        if entries:
            fd = fileops.open_fd(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                fileops.pwrite(fd, self.path, b"".join(map(encode_aborted_txn, entries)), 0)
            finally:
                os.close(fd)
            self._dirty = True
        else:
            fileops.unlink(self.path, missing_ok=True)
        self._entries = list(entries)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose ``lastOffset`` is >= ``offset`` (tail truncation)."""
        entries = self.entries()
        keep = [txn for txn in entries if txn.last_offset < offset]
        if len(keep) == len(entries):
            return
        if not keep:
            fileops.unlink(self.path, missing_ok=True)
        else:
            fd = fileops.open_fd(self.path, os.O_WRONLY)
            try:
                fileops.truncate(fd, self.path, len(keep) * TXN_INDEX_ENTRY_SIZE)
            finally:
                os.close(fd)
            self._dirty = True
        self._entries = keep

    def rename_to(self, path: Path) -> None:
        """Follow the segment's rename (the file, if any, was renamed by the segment)."""
        self.path = path

    def flush(self) -> None:
        """fsync the file if it changed since the last flush."""
        if not self._dirty or not self.writable:
            return
        try:
            fd = fileops.open_fd(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        except OSError as exc:
            raise StorageWriteError(str(exc), path=str(self.path), errno_code=exc.errno) from exc
        try:
            fileops.fsync(fd, self.path)
        finally:
            os.close(fd)
        self._dirty = False
