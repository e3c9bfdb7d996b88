"""Verify's compaction checks (a compacted log below its cleaner checkpoint): duplicate keys,
tombstones without a delete horizon, tombstones a round should have removed.

Duplicate keys are found from the keys' 128-bit SipHash (the cleaner's own key hash,
:meth:`seglog.core.offset_map.OffsetMap.hash_columns`, one numba call per chunk), kept in
numpy arrays (two uint64 columns plus the int64 offset: 24 bytes per keyed record below the
checkpoint, rather than about 100 for a Python set of ``bytes``) and sorted once at the end
(``np.lexsort``). A collision of 128-bit hashes is not a practical concern. Control batches
are never judged by key.
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

from seglog.core.offset_map import OffsetMap
from seglog.engine.inspect.verify_problems import (
    KIND_DUPLICATE_KEY,
    KIND_EXPIRED_TOMBSTONE,
    KIND_TOMBSTONE_WITHOUT_HORIZON,
    Problems,
)
from seglog.errors import SeglogError
from seglog.format.batch import DELETE_HORIZON_FLAG_MASK, MAGIC_V2
from seglog.format.columnar import BatchColumns, RecordColumns
from seglog.storage.segment import LogSegment


class KeyCheck:
    """The compaction checks of one verify run, fed every chunk below the checkpoint."""

    def __init__(
        self,
        problems: Problems,
        *,
        cleaner_checkpoint: int,
        last_clean_ms: int | None,
        delete_retention_ms: int,
    ) -> None:
        self.problems = problems
        self.key_checkpoint = cleaner_checkpoint
        self.last_clean_ms = last_clean_ms
        self.delete_retention_ms = delete_retention_ms
        self.key_hashes: list[npt.NDArray[np.uint64]] = []  # (n, 2) hashes below the checkpoint
        self.key_offsets: list[npt.NDArray[np.int64]] = []
        # The smallest offset map: only its key hash is used (one random key per verify run).
        self.hasher = OffsetMap(2 * 24, 1.0)

    def feed(self, segment: LogSegment, columns: RecordColumns, batches: BatchColumns) -> None:
        """Collect hashes of keys below the checkpoint; judge tombstones there."""
        checkpoint = self.key_checkpoint
        batch_of = columns.batch_index
        data_row = ~batches.is_control[batch_of]
        keyed = data_row & (columns.offset < checkpoint) & (columns.key_length >= 0)
        rows = np.flatnonzero(keyed)
        if not len(rows):
            return
        h0, h1 = self.hasher.hash_columns(
            columns.data, columns.key_position[rows], columns.key_length[rows]
        )
        self.key_hashes.append(np.stack((h0, h1), axis=1))
        self.key_offsets.append(columns.offset[rows].astype(np.int64))
        tombstones = rows[
            (columns.value_length[rows] < 0) & (batches.magic[batch_of[rows]] == MAGIC_V2)
        ]
        if not len(tombstones):
            return
        batch = batch_of[tombstones]
        has_horizon = (batches.attributes[batch] & DELETE_HORIZON_FLAG_MASK) != 0
        path = segment.log_path
        missing = np.flatnonzero(~has_horizon)
        for i in missing[: self.problems.room(len(missing))].tolist():
            offset = int(columns.offset[tombstones[i]])
            self.problems.add(
                KIND_TOMBSTONE_WITHOUT_HORIZON,
                path,
                int(batches.position[batch[i]]),
                offset,
                f"tombstone at offset {offset} is below the cleaner checkpoint {checkpoint} but "
                "its batch has no delete horizon (attribute bit 0x40): the cleaning round that "
                "kept it stamps one (KIP-534)",
            )
        if self.last_clean_ms is None:
            return
        horizon = batches.base_timestamp[batch]
        stamped_last_round = self.last_clean_ms + self.delete_retention_ms
        expired = has_horizon & (horizon <= self.last_clean_ms) & (horizon != stamped_last_round)
        late = np.flatnonzero(expired)
        for i in late[: self.problems.room(len(late))].tolist():
            offset = int(columns.offset[tombstones[i]])
            self.problems.add(
                KIND_EXPIRED_TOMBSTONE,
                path,
                int(batches.position[batch[i]]),
                offset,
                f"tombstone at offset {offset} has delete horizon {int(horizon[i])} <= the last "
                f"cleaning at {self.last_clean_ms}: that round should have removed it",
            )

    def finish(self, segments: tuple[LogSegment, ...]) -> None:
        """Sort the key hashes once; report each later occurrence of a key."""
        if not self.key_hashes:
            return
        hashes = np.concatenate(self.key_hashes)
        offsets = np.concatenate(self.key_offsets)
        self.key_hashes.clear()
        self.key_offsets.clear()
        order = np.lexsort((offsets, hashes[:, 1], hashes[:, 0]))
        high, low = hashes[order, 0], hashes[order, 1]
        repeats = np.flatnonzero((high[1:] == high[:-1]) & (low[1:] == low[:-1])) + 1
        if not len(repeats):
            return
        later = offsets[order[repeats]]
        earlier = offsets[order[repeats - 1]]
        by_offset = np.argsort(later, kind="stable")
        bases = [s.base_offset for s in segments]
        checkpoint = self.key_checkpoint
        for i in by_offset[: self.problems.room(len(by_offset))].tolist():
            offset = int(later[i])
            segment = segments[max(0, bisect.bisect_right(bases, offset) - 1)]
            try:
                location = segment.translate_offset(offset)
            except SeglogError:
                location = None
            self.problems.add(
                KIND_DUPLICATE_KEY,
                segment.log_path,
                None if location is None else location.position,
                offset,
                f"the key of the record at offset {offset} is also at offset {int(earlier[i])}, "
                f"both below the cleaner checkpoint {checkpoint} (same 128-bit key hash)",
            )
