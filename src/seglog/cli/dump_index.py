"""``seglog dump-log`` for index files: dump their entries and check them against the ``.log``.

``.index``, ``.timeindex`` and ``.txnindex`` files, and producer state ``.snapshot`` files,
are printed entry by entry (lines rendered by :mod:`seglog.cli.dump_format`) as Kafka's
``kafka-dump-log.sh`` does.

Checks, each recorded in :class:`Findings` and summarized on stderr after all files:

* ``.index``: the first whole batch at each entry's position (read within
  ``--max-message-size``) must have the entry's offset as its last offset ("Mismatches in");
* ``.timeindex``: the batch found through the offset index whose last offset is >= the
  entry's offset must end exactly at it ("indexed offsets are not found"), its largest record
  timestamp must equal the entry's ("timestamp mismatch"), and entry timestamps must strictly
  increase ("out of order timestamp").

Where seglog deliberately differs from Kafka's tool (which stops with a stack trace):

* an index whose ``.log`` is missing is dumped without checks (a warning says so); a
  ``.timeindex`` whose ``.index`` is missing is checked as if the offset index were empty
  (lookups start at position 0), as Kafka treats a never-materialized index;
* an index entry whose position holds no whole batch (within ``--max-message-size``) is
  reported as a mismatch with log offset -1;
* an index whose size is not a multiple of its entry size is reported as an error and its
  whole entries are dumped (Kafka reads ``floor(size / entry)`` entries silently);
* summaries list files in the order dumped and entries in the order found (Kafka uses hash
  maps and prepends).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from seglog.cli.dump_format import (
    offset_index_json,
    offset_index_line,
    producer_snapshot_json,
    producer_snapshot_line,
    time_index_json,
    time_index_line,
    txn_index_json,
    txn_index_line,
)
from seglog.errors import CorruptRecordError
from seglog.format.index import (
    OFFSET_INDEX_ENTRY_BYTES,
    TIME_INDEX_ENTRY_BYTES,
    TXN_INDEX_ENTRY_BYTES,
    OffsetIndexEntry,
    entry_count,
    lookup_offset,
    parse_offset_index,
    parse_time_index,
    parse_txn_index,
    sanity_check_offset_index,
    sanity_check_time_index,
)
from seglog.format.names import INDEX_SUFFIX, LOG_SUFFIX, name_prefix, offset_from_file_name
from seglog.format.producer_snapshot import decode_producer_snapshot
from seglog.format.reader import Batch, BatchReader
from seglog.format.records import NO_TIMESTAMP
from seglog.storage.files import file_exists, map_file_readonly, read_file_bytes


def absolute_path(path: str) -> str:
    """Java's ``File.getAbsolutePath``: joined to the working directory, not normalized."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


@dataclass
class Findings:
    """What the checks found, printed on stderr after all files."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    timestamp_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order_timestamps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    offsets_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive_offsets: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @staticmethod
    def add(table: dict[str, list[tuple[int, int]]], path: str, pair: tuple[int, int]) -> None:
        """Record ``pair`` for ``path`` (kept in the order found)."""
        table.setdefault(absolute_path(path), []).append(pair)

    def lines(self) -> list[str]:
        """Kafka's summary lines, in Kafka's order of sections."""
        out: list[str] = []
        for name, pairs in self.index_mismatches.items():
            out.append(f"Mismatches in :{name}")
            out.extend(f"  Index offset: {i}, log offset: {o}" for i, o in pairs)
        for name, pairs in self.timestamp_mismatches.items():
            out.append(f"Found timestamp mismatch in :{name}")
            out.extend(f"  Index timestamp: {i}, log timestamp: {t}" for i, t in pairs)
        for name, pairs in self.out_of_order_timestamps.items():
            out.append(f"Found out of order timestamp in :{name}")
            out.extend(
                f"  Index timestamp: {i}, Previously indexed timestamp: {p}" for i, p in pairs
            )
        for pairs in self.offsets_not_found.values():
            out.append("The following indexed offsets are not found in the log.")
            out.extend(f"Indexed offset: {i}, found log offset: {o}" for i, o in pairs)
        for name, pairs in self.non_consecutive_offsets.items():
            out.append(f"Non-consecutive offsets in {name}")
            out.extend(f"  {a} is followed by {b}" for a, b in pairs)
        return out


class IndexOptions(Protocol):
    """The options an index dump reads (``dump_log.DumpOptions`` has them)."""

    @property
    def max_message_size(self) -> int:
        """Largest batch read when checking an ``.index`` entry."""

    @property
    def index_sanity_check(self) -> bool:
        """Only run Kafka's sanity check and say whether it passed."""

    @property
    def verify_index_only(self) -> bool:
        """Check entries without printing them."""

    @property
    def json(self) -> bool:
        """One JSON object per entry instead of Kafka's line."""


class Report(Protocol):
    """Where an index dump writes (``dump_log.Dumper`` is one)."""

    def emit(self, line: str) -> None:
        """A line of the dump (stdout)."""

    def emit_json(self, obj: dict[str, Any]) -> None:
        """One JSON object on its own line (stdout)."""

    def info(self, line: str) -> None:
        """Kafka's informational lines: stdout in text mode, stderr with ``--json``."""

    def error(self, message: str) -> None:
        """Report a problem that makes the exit status 1."""

    def warning(self, message: str) -> None:
        """Report something that does not change the exit status."""


class IndexDumper:
    """Dumps and checks index files, writing to ``report`` and recording in ``findings``."""

    def __init__(self, options: IndexOptions, report: Report, findings: Findings) -> None:
        self.options = options
        self.findings = findings
        self._report = report

    # -- shared ----------------------------------------------------------------------------------
    @staticmethod
    def _sibling(path: str, name: str, suffix: str) -> str:
        """The file of the same segment with ``suffix`` (Kafka: same dir, prefix + suffix)."""
        return os.path.join(os.path.dirname(absolute_path(path)), name_prefix(name) + suffix)

    def _whole_entries(self, path: str, data: bytes, entry_bytes: int, kind: str) -> bytes:
        """``data`` cut to whole entries (Kafka reads ``floor(size / entry)``), extra reported."""
        extra = len(data) % entry_bytes
        if extra:
            self._report.error(
                f"{path}: {kind} size {len(data)} is not a multiple of {entry_bytes} bytes; "
                f"the last {extra} bytes are ignored"
            )
            return data[: len(data) - extra]
        return data

    @contextmanager
    def _log_for_checks(self, path: str, log_path: str) -> Iterator[memoryview | None]:
        """The segment's ``.log`` mapped for index checks, or None (with a warning) if absent."""
        if not file_exists(log_path):
            self._report.warning(
                f"{log_path} not found; entries of {path} are not checked against it"
            )
            yield None
            return
        with map_file_readonly(log_path) as log:
            yield log

    # -- .index ----------------------------------------------------------------------------------
    def dump_offset_index(self, path: str, name: str) -> None:
        """Dump an ``.index`` file and check each entry against the ``.log``."""
        report = self._report
        data = read_file_bytes(path)
        base_offset = offset_from_file_name(name)
        options = self.options
        if entry_count(len(data), OFFSET_INDEX_ENTRY_BYTES) == 0:
            report.info(f"{path} is empty.")
            if len(data):
                self._whole_entries(path, data, OFFSET_INDEX_ENTRY_BYTES, "offset index")
            return
        if options.index_sanity_check:
            sanity_check_offset_index(data, base_offset, path=path)
            report.info(f"{path} passed sanity check.")
            return
        usable = self._whole_entries(path, data, OFFSET_INDEX_ENTRY_BYTES, "offset index")
        entries = parse_offset_index(usable, base_offset, path=path)
        with self._log_for_checks(path, self._sibling(path, name, LOG_SUFFIX)) as log:
            for entry in entries:
                if log is not None:
                    log_offset = self._first_batch_last_offset(log, entry.position)
                    if log_offset != entry.offset:
                        self.findings.add(
                            self.findings.index_mismatches, path, (entry.offset, log_offset)
                        )
                if options.verify_index_only:
                    continue
                if options.json:
                    report.emit_json(offset_index_json(entry, path))
                else:
                    report.emit(offset_index_line(entry))

    def _first_batch_last_offset(self, log: memoryview, position: int) -> int:
        """Last offset of the whole batch at ``position`` (within --max-message-size), or -1."""
        if position > len(log):
            return -1
        end = min(len(log), position + self.options.max_message_size)
        reader = BatchReader(log, start=position, end=end, verify_crc=False, check_offsets=False)
        for batch in reader:
            return batch.last_offset
        return -1

    # -- .timeindex ------------------------------------------------------------------------------
    @staticmethod
    def _offset_index_for_lookups(index_path: str, base_offset: int) -> list[OffsetIndexEntry]:
        """The segment's offset index entries for lookups (empty when the file is missing)."""
        if not file_exists(index_path):
            return []
        data = read_file_bytes(index_path)
        whole = entry_count(len(data), OFFSET_INDEX_ENTRY_BYTES) * OFFSET_INDEX_ENTRY_BYTES
        return parse_offset_index(data[:whole], base_offset, path=index_path)

    def dump_time_index(self, path: str, name: str) -> None:
        """Dump a ``.timeindex`` file and check each entry against the ``.log``."""
        report = self._report
        data = read_file_bytes(path)
        base_offset = offset_from_file_name(name)
        options = self.options
        if options.index_sanity_check:
            sanity_check_time_index(data, base_offset, path=path)
            report.info(f"{path} passed sanity check.")
            return
        usable = self._whole_entries(path, data, TIME_INDEX_ENTRY_BYTES, "time index")
        entries = parse_time_index(usable, base_offset, path=path)
        if not entries:
            return
        offset_entries = self._offset_index_for_lookups(
            self._sibling(path, name, INDEX_SUFFIX), base_offset
        )
        findings = self.findings
        previous_timestamp = NO_TIMESTAMP
        with self._log_for_checks(path, self._sibling(path, name, LOG_SUFFIX)) as log:
            for entry in entries:
                if log is not None:
                    position = lookup_offset(offset_entries, base_offset, entry.offset).position
                    batch = self._batch_ending_at_or_after(log, position, entry.offset)
                    if batch is None:
                        findings.add(findings.offsets_not_found, path, (entry.offset, -1))
                    elif batch.last_offset != entry.offset:
                        findings.add(
                            findings.offsets_not_found, path, (entry.offset, batch.last_offset)
                        )
                    else:
                        self._check_time_entry(path, batch, entry.timestamp, previous_timestamp)
                elif previous_timestamp >= entry.timestamp:
                    findings.add(
                        findings.out_of_order_timestamps,
                        path,
                        (entry.timestamp, previous_timestamp),
                    )
                if not options.verify_index_only:
                    if options.json:
                        report.emit_json(time_index_json(entry, path))
                    else:
                        report.emit(time_index_line(entry))
                previous_timestamp = entry.timestamp

    def _check_time_entry(
        self, path: str, batch: Batch, index_timestamp: int, previous_timestamp: int
    ) -> None:
        findings = self.findings
        try:
            records = batch.records()
        except CorruptRecordError as exc:
            self._report.error(str(exc.at(path=path)))
            return
        max_timestamp = max((batch.reported_timestamp(r) for r in records), default=NO_TIMESTAMP)
        max_timestamp = max(max_timestamp, NO_TIMESTAMP)
        if max_timestamp != index_timestamp:
            findings.add(findings.timestamp_mismatches, path, (index_timestamp, max_timestamp))
        if previous_timestamp >= index_timestamp:
            findings.add(
                findings.out_of_order_timestamps, path, (index_timestamp, previous_timestamp)
            )

    @staticmethod
    def _batch_ending_at_or_after(log: memoryview, position: int, offset: int) -> Batch | None:
        """The first batch from ``position`` whose last offset is >= ``offset``."""
        if position > len(log):
            return None
        for batch in BatchReader(log, start=position, verify_crc=False, check_offsets=False):
            if batch.last_offset >= offset:
                return batch
        return None

    # -- .txnindex -------------------------------------------------------------------------------
    def dump_txn_index(self, path: str) -> None:
        """Dump a ``.txnindex`` file, one aborted transaction per line."""
        data = read_file_bytes(path)
        usable = self._whole_entries(path, data, TXN_INDEX_ENTRY_BYTES, "transaction index")
        for entry in parse_txn_index(usable, path=path):
            if self.options.json:
                self._report.emit_json(txn_index_json(entry, path))
            else:
                self._report.emit(txn_index_line(entry))

    def dump_producer_snapshot(self, path: str) -> None:
        """Dump a producer state ``.snapshot`` file, one producer entry per line.

        The whole file is checked (version, CRC-32C, length) before any entry is printed,
        as Kafka's ``readSnapshot`` does; a damaged snapshot raises ``CorruptSnapshotError``,
        which the dumper reports as an error (Kafka's tool prints the message and exits 0:
        seglog's exit status says a file could not be read).
        """
        entries = decode_producer_snapshot(read_file_bytes(path), path=path)
        for entry in entries:
            if self.options.json:
                self._report.emit_json(producer_snapshot_json(entry, path))
            else:
                self._report.emit(producer_snapshot_line(entry))
