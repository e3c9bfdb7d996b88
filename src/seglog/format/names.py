"""Segment file names and suffixes, as Kafka's ``LogFileUtils`` and ``Snapshots`` spell them.

Segment files::

    <base offset, decimal, zero-padded to 20 digits><suffix>
    00000000000000368769.log   .index   .timeindex   .txnindex
    00000000000000368769.snapshot          producer state snapshot (offset = exclusive end)
    00000000000000368769.log.deleted       a suffix is appended to the full name while a file
    00000000000000368769.log.cleaned       is being deleted, cleaned or swapped in
    00000000000000368769.log.swap

KRaft snapshots (``__cluster_metadata``) are named
``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``; ``bootstrap.checkpoint`` is the
binary bootstrap snapshot of a log directory.

Invariants:

* Every base offset is in ``[0, 2**63 - 1]``; Long.MAX_VALUE has 19 digits, so every name made
  here has exactly 20 digits before its first dot.
* Parsing follows Kafka: the offset is ``Long.parseLong`` of everything before the **first**
  dot (so ``…368769.log.deleted`` parses to 368769). A prefix that is not a (signed) decimal
  integer within int64 raises :class:`~seglog.errors.InvalidFileNameError`.
* A file's kind is the text from its **last** dot (``x.log.deleted`` is a ``.deleted`` file),
  which is how ``kafka-dump-log`` dispatches.
"""

from __future__ import annotations

import re

from seglog.errors import InvalidFileNameError

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"  # producer state snapshot
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
KRAFT_SNAPSHOT_SUFFIX = ".checkpoint"  # KRaft metadata snapshot (not a checkpoint text file)

SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
TRANSIENT_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

BOOTSTRAP_SNAPSHOT_NAME = "bootstrap.checkpoint"

BASE_OFFSET_DIGITS = 20
KRAFT_EPOCH_DIGITS = 10
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
INT32_MAX = (1 << 31) - 1

_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_KRAFT_SNAPSHOT = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint")


def filename_prefix_from_offset(offset: int) -> str:
    """The 20-digit zero-padded prefix of a segment's files (``00000000000000368769``)."""
    if not 0 <= offset <= INT64_MAX:
        raise ValueError(f"offset {offset} is outside [0, 2**63 - 1]")
    return f"{offset:0{BASE_OFFSET_DIGITS}d}"


def segment_file_name(base_offset: int, suffix: str) -> str:
    """A segment file's name: the 20-digit base offset followed by ``suffix`` (e.g. ``.log``)."""
    return filename_prefix_from_offset(base_offset) + suffix


def log_file_name(base_offset: int) -> str:
    """``<base>.log``."""
    return segment_file_name(base_offset, LOG_SUFFIX)


def index_file_name(base_offset: int) -> str:
    """``<base>.index``."""
    return segment_file_name(base_offset, INDEX_SUFFIX)


def time_index_file_name(base_offset: int) -> str:
    """``<base>.timeindex``."""
    return segment_file_name(base_offset, TIME_INDEX_SUFFIX)


def txn_index_file_name(base_offset: int) -> str:
    """``<base>.txnindex``."""
    return segment_file_name(base_offset, TXN_INDEX_SUFFIX)


def snapshot_file_name(offset: int) -> str:
    """``<offset>.snapshot`` (a producer state snapshot covering offsets below ``offset``)."""
    return segment_file_name(offset, SNAPSHOT_SUFFIX)


def name_prefix(name: str) -> str:
    """Everything before the first dot of a file name (the whole name if it has no dot)."""
    return name.split(".", 1)[0]


def offset_from_file_name(name: str) -> int:
    """Kafka's ``offsetFromFileName``: parse everything before the first dot as an int64."""
    prefix = name_prefix(name)
    if not _JAVA_LONG.fullmatch(prefix):
        raise InvalidFileNameError(f"file name {name!r} does not start with a decimal offset")
    offset = int(prefix)
    if not INT64_MIN <= offset <= INT64_MAX:
        raise InvalidFileNameError(f"offset prefix of file name {name!r} is outside int64")
    return offset


def file_suffix(name: str) -> str:
    """The text from the last dot (``.log``, ``.deleted``, ...), or ``""`` without a dot."""
    dot = name.rfind(".")
    return "" if dot < 0 else name[dot:]


def kraft_snapshot_id(name: str) -> tuple[int, int] | None:
    """``(end offset, epoch)`` of a KRaft snapshot file name, or None for any other name."""
    match = _KRAFT_SNAPSHOT.fullmatch(name)
    if match is None:
        return None
    offset, epoch = int(match.group(1)), int(match.group(2))
    if offset > INT64_MAX or epoch > INT32_MAX:
        return None
    return offset, epoch
