"""The swap record: which segments an in-flight ``replace_segments`` replaces (seglog only).

Why it exists. Kafka's loader finishes an interrupted swap from the ``.swap`` files alone: it
deletes every live segment whose base offset lies in ``[lowest .swap base, highest .swap next
offset)`` (``LogLoader``). A cleaner group whose *last*
segments lose every record cleans to a segment whose next offset is below those segments'
bases (Kafka keeps an emptied batch only at the round's upper bound or for an active
producer), so after a crash between the ``.cleaned`` -> ``.swap`` rename and the old
segments' ``.deleted`` renames, Kafka's rule keeps those replaced segments beside the cleaned
one (their records come back until the next round). Kafka has that gap; seglog closes it
without changing a byte of the segments it writes: before the swap point the replace writes
this small file naming the replaced bases, and recovery removes exactly those too.

File: ``swap-replaced-segments`` in the partition directory, written atomically
(:func:`~seglog.storage.atomic.write_file_atomically`: tmp, fsync, rename, directory fsync),
UTF-8 text, three lines, each ending in ``\\n``::

    0                       <- version
    new 0                   <- base offsets of the new (.swap) segments, ascending
    replaced 0 4200 8400    <- base offsets of the segments they replace, ascending

Invariants: at least one new base; every offset a decimal integer ``>= 0``; both lists
strictly increasing. The name has no offset prefix and none of Kafka's suffixes, so Kafka's
loader (and seglog's segment listing) ignores it.

Life cycle (see :meth:`seglog.engine.log.Log.replace_segments`): written before the first
``.cleaned`` -> ``.swap`` rename; removed after the last ``.swap`` suffix is gone and the
directory fsynced. Recovery uses it only while a ``.swap`` file of one of its new bases is
still there (otherwise the swap either never reached its swap point or completed), and
removes it once the swap is finished or rolled back. A record that does not parse is never
guessed at: :class:`~seglog.errors.CorruptCheckpointError` names the file and line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from seglog.errors import CorruptCheckpointError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically
from seglog.storage.files import file_exists, read_file_bytes

__all__ = [
    "SWAP_RECORD_NAME",
    "SwapRecord",
    "parse_swap_record",
    "read_swap_record",
    "remove_swap_record",
    "write_swap_record",
]

SWAP_RECORD_NAME = "swap-replaced-segments"
_VERSION = "0"
_MAX_BYTES = 1 << 20  # a record names a few segments; more is not a swap record


@dataclass(frozen=True, slots=True)
class SwapRecord:
    """The new segments' bases and the bases of the segments they replace."""

    new_bases: tuple[int, ...]
    replaced_bases: tuple[int, ...]

    def encode(self) -> bytes:
        """The file's bytes (module docstring)."""
        new = " ".join(["new", *(str(b) for b in self.new_bases)])
        replaced = " ".join(["replaced", *(str(b) for b in self.replaced_bases)])
        return f"{_VERSION}\n{new}\n{replaced}\n".encode()


def _bases(line: str, label: str, number: int, path: str) -> tuple[int, ...]:
    words = line.split(" ")
    if words[0] != label:
        raise CorruptCheckpointError(
            f"expected '{label} ...', got {line!r}", line=number, path=path
        )
    bases = []
    for word in words[1:]:
        if not word.isdigit() or not word.isascii():
            raise CorruptCheckpointError(
                f"base offset {word!r} is not a non-negative integer", line=number, path=path
            )
        bases.append(int(word))
    if any(a >= b for a, b in itertools.pairwise(bases)):
        raise CorruptCheckpointError(
            "base offsets are not strictly increasing", line=number, path=path
        )
    return tuple(bases)


def parse_swap_record(data: bytes, path: str) -> SwapRecord:
    """Decode a swap record's bytes; raises :class:`CorruptCheckpointError` naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"not UTF-8 text ({exc.reason})", path=path) from exc
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise CorruptCheckpointError(
            f"expected 3 lines each ending in a newline, got {text!r}", path=path
        )
    if lines[0] != _VERSION:
        raise CorruptCheckpointError(
            f"unknown version {lines[0]!r} (expected {_VERSION})", line=1, path=path
        )
    new = _bases(lines[1], "new", 2, path)
    if not new:
        raise CorruptCheckpointError("no new segment base offset", line=2, path=path)
    return SwapRecord(new, _bases(lines[2], "replaced", 3, path))


def write_swap_record(directory: Path, record: SwapRecord) -> None:
    """Write (atomically, durably) the record of the swap about to start in ``directory``."""
    write_file_atomically(directory / SWAP_RECORD_NAME, record.encode())


def read_swap_record(directory: Path) -> SwapRecord | None:
    """The record in ``directory``, or None when there is none."""
    path = directory / SWAP_RECORD_NAME
    if not file_exists(path):
        return None
    return parse_swap_record(read_file_bytes(path, max_bytes=_MAX_BYTES), str(path))


def remove_swap_record(directory: Path) -> bool:
    """Remove the record (durably: the directory is fsynced); True when there was one."""
    path = directory / SWAP_RECORD_NAME
    if not file_exists(path):
        return False
    fileops.unlink(path, missing_ok=True)
    fileops.fsync_directory(directory)
    return True
