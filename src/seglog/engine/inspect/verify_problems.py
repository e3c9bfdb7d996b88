"""What ``seglog verify`` reports: the problem kinds, a problem, a partition's report, and the
bounded list a run fills (at most ``limit`` problems kept; the rest only counted).

The ``kind`` codes are stable: scripts and ``seglog verify --json`` match on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog.format.batch import LOG_OVERHEAD, MAGIC_V2
from seglog.format.crc import crc32_ieee, crc32c
from seglog.format.reader import EndKind, ReadEnd
from seglog.format.topic_names import TopicPartition

KIND_CRC = "crc"
KIND_CORRUPT = "corrupt"
KIND_TORN_TAIL = "torn-tail"
KIND_OFFSET_ORDER = "offset-order"
KIND_EPOCH_ORDER = "epoch-order"
KIND_OFFSET_RANGE = "offset-range"
KIND_LOG_END_OFFSET = "log-end-offset"
KIND_INDEX_ENTRY = "index-entry"
KIND_TIME_INDEX_ENTRY = "time-index-entry"
KIND_DROPPED_SEGMENT = "dropped-segment"
KIND_OFFSET_GAP = "offset-gap"
KIND_RECORDS_LOST = "records-lost"
KIND_DUPLICATE_KEY = "duplicate-key"
KIND_TOMBSTONE_WITHOUT_HORIZON = "tombstone-without-horizon"
KIND_EXPIRED_TOMBSTONE = "expired-tombstone"
KIND_TXN_MARKER_MISSING = "txn-marker-missing"
KIND_ABORTED_DATA_RETAINED = "aborted-data-retained"
KIND_TXN_INDEX_ENTRY = "txn-index-entry"
KIND_TXN_INDEX_MISSING = "txn-index-missing"

# Bytes of an entry read to tell a checksum failure from other damage.
_V2_CRC_AT = 17
_V2_CRC_START = 21
_LEGACY_CRC_AT = 12
_LEGACY_CRC_START = 16
_MAGIC_AT = 16


@dataclass(frozen=True, slots=True)
class VerifyProblem:
    """One broken invariant: a stable ``kind`` code, the file, and where in it."""

    kind: str
    path: str
    position: int | None  # byte position in ``path`` (a batch start, or an index entry)
    offset: int | None
    message: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_log` checked in one partition and what it found."""

    topic_partition: TopicPartition
    segments_checked: int
    batches_checked: int
    records_checked: int
    bytes_checked: int
    problems: tuple[VerifyProblem, ...]
    problems_omitted: int = 0  # found beyond ``max_problems``: counted, not kept

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems and not self.problems_omitted


class Problems:
    """The problems found so far, at most ``limit`` kept (the rest counted)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: list[VerifyProblem] = []
        self.omitted = 0

    def room(self, wanted: int) -> int:
        """How many of ``wanted`` new problems to build; the rest are counted as omitted."""
        free = max(0, self.limit - len(self.kept))
        taken = min(free, wanted)
        self.omitted += wanted - taken
        return taken

    def add(
        self, kind: str, path: Path | str, position: int | None, offset: int | None, message: str
    ) -> None:
        """Keep one problem (or count it when the limit is reached)."""
        if self.room(1):
            self.kept.append(VerifyProblem(kind, str(path), position, offset, message))


def damage_kind(buf: bytes, at: int, end: ReadEnd) -> str:
    """``crc`` when the entry at ``buf[at:]`` is framed whole and its checksum is wrong."""
    if end.kind is EndKind.TORN_TAIL:
        return KIND_TORN_TAIL
    if len(buf) - at < LOG_OVERHEAD + 5:
        return KIND_CORRUPT
    size = int.from_bytes(buf[at + 8 : at + 12], "big", signed=True)
    stop = at + LOG_OVERHEAD + size
    if size <= 0 or stop > len(buf):
        return KIND_CORRUPT
    magic = buf[at + _MAGIC_AT]
    if magic == MAGIC_V2 and stop >= at + _V2_CRC_START:
        stored = int.from_bytes(buf[at + _V2_CRC_AT : at + _V2_CRC_AT + 4], "big")
        return KIND_CRC if crc32c(buf[at + _V2_CRC_START : stop]) != stored else KIND_CORRUPT
    if magic in (0, 1):
        stored = int.from_bytes(buf[at + _LEGACY_CRC_AT : at + _LEGACY_CRC_AT + 4], "big")
        return (
            KIND_CRC if crc32_ieee(buf[at + _LEGACY_CRC_START : stop]) != stored else KIND_CORRUPT
        )
    return KIND_CORRUPT


# --- per-segment index state ---------------------------------------------------------------------
