"""The producer id high-water mark: ``producer-id-block`` in a data directory.

A Kafka cluster hands out producer ids (InitProducerId) in blocks of 1000 from a counter kept
in its metadata (``ProducerIdsRecord``), so an id is never handed out twice, not even across
restarts. A single seglog node keeps that counter in this file:

* **format** (text, like Kafka's checkpoint files): line 1 the version ``0``; line 2 the
  first producer id no block has claimed yet (the next block's start), a decimal ``int64``
  ``>= 0``; a final newline. A missing file reads as 0 (no id handed out yet);
* **claiming** a block (:func:`claim_block`): read the mark ``m``; the block starts at
  ``max(m, floor)`` (``floor``: one above every producer id already in the data, e.g. a
  copied broker's directory); write ``start + size`` durably with
  :func:`~seglog.storage.atomic.write_file_atomically` (tmp file, fsync, rename, directory
  fsync); only then is the block returned, so no id of it can be handed out before the
  mark past it is on disk;
* **invariant**: every producer id ever handed out is below the mark on disk. A crash before
  the rename leaves the old mark and no id of the new block was handed out; a crash after it
  loses the block's unused ids (they are skipped, never repeated), as in Kafka.

A damaged file (a bad version, not a number, a negative mark) raises
``CorruptCheckpointError`` naming the file and line: it is never silently taken as 0, which
could hand out ids again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog.errors import CorruptCheckpointError, ProducerIdsExhaustedError, UnreadableFileError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically

PRODUCER_ID_BLOCK_FILE = "producer-id-block"
VERSION = 0
PRODUCER_ID_MAX = (1 << 63) - 1  # producer ids are int64 >= 0


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """Producer ids ``first`` .. ``first + size - 1``, claimed for this process."""

    first: int
    size: int

    @property
    def last(self) -> int:
        """The block's last producer id."""
        return self.first + self.size - 1


def encode_mark(next_block_start: int) -> bytes:
    """The file's bytes for a mark."""
    return f"{VERSION}\n{next_block_start}\n".encode("ascii")


def decode_mark(data: bytes, path: str) -> int:
    """The mark in ``data`` (the file at ``path``); ``CorruptCheckpointError`` if damaged."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise CorruptCheckpointError("not ASCII text", path=path) from None
    lines = text.split("\n")
    if len(lines) != 3 or lines[2] != "":
        raise CorruptCheckpointError(
            f"expected 2 lines ending with a newline, found {text!r}", path=path
        )
    if lines[0] != str(VERSION):
        raise CorruptCheckpointError(f"unknown version {lines[0]!r}", line=1, path=path)
    if not lines[1].isdigit() or int(lines[1]) > PRODUCER_ID_MAX:
        raise CorruptCheckpointError(
            f"the next producer id block start {lines[1]!r} is not an int64 >= 0",
            line=2,
            path=path,
        )
    return int(lines[1])


def read_next_block_start(directory: Path) -> int:
    """The mark in ``directory`` (0 when the file is missing)."""
    path = directory / PRODUCER_ID_BLOCK_FILE
    try:
        data = fileops.read_bytes(path)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc), path=str(path)) from exc
    return decode_mark(data, str(path))


def claim_block(directory: Path, *, floor: int, size: int) -> ProducerIdBlock:
    """Claim the next block of ``size`` ids at or above ``floor`` (see the module docstring);
    the new mark is durable when this returns. ``ProducerIdsExhaustedError`` past int64."""
    if size <= 0:
        raise ValueError(f"producer id block size {size} is not positive")
    first = max(read_next_block_start(directory), floor, 0)
    if first > PRODUCER_ID_MAX - size + 1:
        raise ProducerIdsExhaustedError(
            f"no block of {size} producer ids is left above {first} (ids are int64) in "
            f"{directory / PRODUCER_ID_BLOCK_FILE}"
        )
    write_file_atomically(directory / PRODUCER_ID_BLOCK_FILE, encode_mark(first + size))
    return ProducerIdBlock(first, size)
