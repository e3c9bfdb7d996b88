"""``seglog dump-log FILE...``: print segment files the way Kafka's ``kafka-dump-log.sh`` does.

Dispatch is by the text after the file name's **last** dot (spec §18): ``.log`` and KRaft
``.checkpoint`` snapshots are dumped batch by batch, ``.index``, ``.timeindex`` and
``.txnindex`` entry by entry; anything else prints ``Ignoring unknown file <path>`` on stderr
(so ``x.log.deleted`` is ignored, as in Kafka). The text output is Kafka's, byte for byte
(spec §18.1-18.5): ``Dumping <path>``, ``Log starting offset: <n>``, batch lines for v2 and
legacy v0/v1 entries, ``| offset: ...`` record lines with deep iteration, ``Found <n> invalid
bytes at the end of <name>``, ``offset: <o> position: <p>`` and ``timestamp: <t> offset: <o>``
index lines, and, after all files, the mismatch summaries on stderr.

Where seglog deliberately differs from Kafka's tool (which stops with a stack trace in each
of these cases):

* a file that cannot be read, an entry that is not a valid batch, or records that cannot be
  decoded are reported as ``seglog: error: <file> at position <p>: <reason>`` on stderr, and
  dumping goes on with the next batch or file; the exit status is then 1. A corrupt tail
  (a zero-filled preallocated region, an impossible size, ...) still prints Kafka's ``Found
  <n> invalid bytes`` line. A batch whose CRC does not match is printed like any other, with
  ``isvalid: false`` (as Kafka prints it), and does not change the exit status;
* an index whose ``.log`` is missing is dumped without checks (a warning says so); a
  ``.timeindex`` whose ``.index`` is missing is checked as if the offset index were empty
  (lookups start at position 0), as Kafka treats a never-materialized index;
* an index entry whose position holds no whole batch (within ``--max-message-size``) is
  reported as a mismatch with log offset -1;
* summaries list files in the order dumped and entries in the order found (Kafka uses hash
  maps and prepends);
* producer state ``.snapshot`` files are not decoded yet (skipped with a note on stderr).

``--json`` writes one JSON object per line instead (diagnostics stay text on stderr): per
batch ``{"file", "baseOffset", "lastOffset", "count", "baseSequence", "lastSequence",
"producerId", "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl",
"deleteHorizonMs", "position", "timestampType", "maxTimestamp", "size", "magic",
"compresscodec", "crc", "isvalid"}`` plus, with deep iteration, ``"records": [{"offset",
"timestamp", "key", "value", "headers": [[key, value], ...]}]`` where keys and values are
base64 strings or null (and ``"error"`` with an empty list when records cannot be decoded);
per ``.index`` entry ``{"file", "offset", "position"}``; per
``.timeindex`` entry ``{"file", "timestamp", "offset"}``; per ``.txnindex`` entry ``{"file",
"version", "producerId", "firstOffset", "lastOffset", "lastStableOffset"}``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from seglog.errors import (
    CorruptRecordError,
    InvalidFileNameError,
    SeglogError,
    UnsupportedCodecError,
)
from seglog.format.batch import RecordBatch
from seglog.format.control import (
    ControlRecordType,
    decode_control_key,
    decode_end_txn_marker,
)
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
from seglog.format.legacy import LegacyBatch
from seglog.format.names import (
    BOOTSTRAP_SNAPSHOT_NAME,
    INDEX_SUFFIX,
    KRAFT_SNAPSHOT_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_suffix,
    kraft_snapshot_id,
    name_prefix,
    offset_from_file_name,
)
from seglog.format.reader import Batch, BatchReader, EndKind
from seglog.format.records import NO_TIMESTAMP, Record
from seglog.storage.files import file_exists, map_file_readonly, read_file_bytes

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

INT32_MAX = (1 << 31) - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Kafka's --max-message-size default
RECORD_INDENT = "|"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

DESCRIPTION = """\
Print Kafka segment files the way Kafka's kafka-dump-log.sh does (same text, same checks).

  .log / .checkpoint  one line per batch; with --deep-iteration one '| offset: ...' line per
                      record; 'Found N invalid bytes at the end of NAME' for a torn tail
  .index              'offset: O position: P' per entry, each checked against the .log
  .timeindex          'timestamp: T offset: O' per entry, checked against the .log
  .txnindex           one line per aborted transaction
  .snapshot           not decoded yet (a note on stderr)
  anything else       'Ignoring unknown file PATH' on stderr

Mismatches between an index and its .log are summarized on stderr after all files."""

EPILOG = """\
JSON output (--json): one object per line on stdout; diagnostics stay on stderr;
--skip-record-metadata has no effect.
  batch:       {"file", "baseOffset", "lastOffset", "count", "baseSequence", "lastSequence",
                "producerId", "producerEpoch", "partitionLeaderEpoch", "isTransactional",
                "isControl", "deleteHorizonMs", "position", "timestampType", "maxTimestamp",
                "size", "magic", "compresscodec", "crc", "isvalid"}
               + with --deep-iteration "records": [{"offset", "timestamp", "key", "value",
                 "headers": [[KEY, VALUE], ...]}], KEY a string, key/value/VALUE base64 or null
                 (and "error": REASON, with "records": [], when they cannot be decoded)
  .index:      {"file", "offset", "position"}
  .timeindex:  {"file", "timestamp", "offset"}
  .txnindex:   {"file", "version", "producerId", "firstOffset", "lastOffset",
                "lastStableOffset"}

Exit status: 0 when every file was dumped; 1 when a file could not be read or held an
entry that is not a valid batch or records that cannot be decoded (each reported on stderr
as 'seglog: error: ...'; dumping continues). A torn tail and a CRC mismatch
('isvalid: false') are shown in the output, as Kafka shows them, and leave the status 0.

Example:
  seglog dump-log --print-data-log /var/lib/kafka/t-0/00000000000000000000.log
  seglog dump-log --deep-iteration --json 00000000000000000000.log | jq .isvalid
  seglog dump-log --files 00000000000000000000.index,00000000000000000000.timeindex"""


# --- command-line registration ------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def register(subparsers: Subparsers) -> None:
    """Add the ``dump-log`` subcommand to the ``seglog`` parser."""
    parser = subparsers.add_parser(
        "dump-log",
        help="print .log/.index/.timeindex files like Kafka's kafka-dump-log.sh",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="segment files to dump, in the order given"
    )
    parser.add_argument(
        "--files",
        dest="files_csv",
        action="append",
        default=[],
        metavar="FILE[,FILE...]",
        help="Kafka's form: a comma-separated list of files (may be repeated; dumped after "
        "the positional FILEs)",
    )
    parser.add_argument(
        "--deep-iteration",
        action="store_true",
        help="print one line per record (not only per batch)",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print keys and values (decoded as UTF-8); implies --deep-iteration",
    )
    parser.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="with deep iteration, print only keys and values on record lines",
    )
    parser.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=INT32_MAX,
        metavar="N",
        help="read at most the first N bytes of each .log (default %(default)s); when given, "
        "the 'Found N invalid bytes' line is not printed",
    )
    parser.add_argument(
        "--max-message-size",
        type=_positive_int,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        metavar="N",
        help="largest batch read when checking an .index entry (default %(default)s)",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="for .index/.timeindex, only run Kafka's sanity check and print whether it passed",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="for .index/.timeindex, check entries against the .log without printing them",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per batch or index entry per line (shapes below)",
    )
    parser.set_defaults(handler=run)


@dataclass(frozen=True, slots=True)
class DumpOptions:
    """What to print; built from the command line by :func:`options_from_args`."""

    deep_iteration: bool = False
    print_data: bool = False
    skip_record_metadata: bool = False
    max_bytes: int = INT32_MAX
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    index_sanity_check: bool = False
    verify_index_only: bool = False
    json: bool = False


def options_from_args(args: argparse.Namespace) -> DumpOptions:
    """The :class:`DumpOptions` of parsed ``dump-log`` arguments."""
    return DumpOptions(
        deep_iteration=args.deep_iteration or args.print_data_log,
        print_data=args.print_data_log,
        skip_record_metadata=args.skip_record_metadata,
        max_bytes=args.max_bytes,
        max_message_size=args.max_message_size,
        index_sanity_check=args.index_sanity_check,
        verify_index_only=args.verify_index_only,
        json=args.json,
    )


def files_from_args(args: argparse.Namespace) -> list[str]:
    """Positional FILEs then every ``--files a,b`` entry, in order (empty items dropped)."""
    files = list(args.files)
    for csv in args.files_csv:
        files.extend(item for item in csv.split(",") if item)
    return files


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog dump-log``: dump every file, then print the summaries."""
    files = files_from_args(args)
    if not files:
        print(
            "seglog dump-log: error: at least one FILE is needed (positional or --files a,b)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    dumper = Dumper(options_from_args(args), sys.stdout, sys.stderr)
    for path in files:
        dumper.dump(path)
    return dumper.finish()


# --- text formatting (pure) ---------------------------------------------------------------------


def _bool(value: bool) -> str:
    return "true" if value else "false"


def codec_name(batch: Batch) -> str:
    """Kafka's ``compresscodec`` name, or ``unknown(<id>)`` for an invalid codec id."""
    try:
        return batch.compression.name_in_kafka
    except (UnsupportedCodecError, CorruptRecordError):
        return f"unknown({batch.attributes & 0x07})"


def _delete_horizon(batch: RecordBatch) -> str:
    horizon = batch.delete_horizon_ms
    return "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"


def batch_line(batch: Batch) -> str:
    """Kafka's batch line (``printBatchLevel``), without the newline."""
    if isinstance(batch, RecordBatch):
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} "
            f"isControl: {_bool(batch.is_control)} deleteHorizonMs: {_delete_horizon(batch)}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {batch.position} {batch.timestamp_type.name_in_kafka}: "
        f"{batch.max_timestamp} size: {batch.size_in_bytes} magic: {batch.magic} "
        f"compresscodec: {codec_name(batch)} crc: {batch.crc} isvalid: {_bool(batch.is_valid())}"
    )


def decode_text(data: bytes) -> str:
    """Bytes as Kafka's default (String) decoder shows them: UTF-8, bad bytes replaced."""
    return data.decode("utf-8", "replace")


def control_record_text(record: Record) -> str:
    """The control part of a record line (`` endTxnMarker: COMMIT coordinatorEpoch: 3``, ...).

    Raises ``CorruptRecordError`` when the key or value is too short or malformed.
    """
    key = decode_control_key(record.key)
    control_type = key.type
    if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = decode_end_txn_marker(record.value)
        return f" endTxnMarker: {control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"
    renderer = _KRAFT_RENDERERS.get(control_type)
    if renderer is not None:
        label, decode = renderer
        return f" {label} {_compact_json(decode(record.value or b''))}"
    return f" controlType: {control_type.name}({key.type_id})"


def record_line(
    batch: Batch,
    record: Record,
    *,
    checksum: tuple[int, bool] | None = None,
    skip_record_metadata: bool = False,
    print_data: bool = False,
) -> str:
    """Kafka's record line (deep iteration), without the newline.

    ``checksum`` is the record's ``(crc, is valid)`` for legacy entries. Raises
    ``CorruptRecordError`` for a malformed control record.
    """
    parts: list[str] = []
    prefix = f"{RECORD_INDENT} "
    if not skip_record_metadata:
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        parts.append(
            f"{prefix}offset: {record.offset} {batch.timestamp_type.name_in_kafka}: "
            f"{batch.reported_timestamp(record)} keySize: {key_size} valueSize: {value_size}"
        )
        prefix = " "
        if isinstance(batch, RecordBatch):
            header_keys = ",".join(decode_text(h.key_bytes()) for h in record.headers)
            parts.append(
                f" sequence: {batch.record_sequence(record.offset)} headerKeys: [{header_keys}]"
            )
        elif checksum is not None:
            crc, is_valid = checksum
            parts.append(f" isValid: {_bool(is_valid)} crc: {crc}}}")
        if batch.is_control:
            parts.append(control_record_text(record))
    if print_data and not batch.is_control:
        if record.key is not None:
            parts.append(f"{prefix}key: {decode_text(record.key)}")
        if record.value is not None:
            parts.append(f" payload: {decode_text(record.value)}")
    return "".join(parts)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def batch_json(batch: Batch, path: str) -> dict[str, Any]:
    """The ``--json`` object of a batch (without ``records``)."""
    if isinstance(batch, RecordBatch):
        base_offset: int | None = batch.base_offset
        count: int | None = batch.records_count
        last_sequence = batch.last_sequence
    else:
        try:
            base_offset = batch.base_offset  # decompresses a legacy wrapper
        except CorruptRecordError:
            base_offset = None
        count = None  # Kafka's countOrNull is null for legacy entries
        last_sequence = -1
    return {
        "file": path,
        "baseOffset": base_offset,
        "lastOffset": batch.last_offset,
        "count": count,
        "baseSequence": batch.base_sequence,
        "lastSequence": last_sequence,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": batch.delete_horizon_ms,
        "position": batch.position,
        "timestampType": batch.timestamp_type.name_in_kafka,
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size_in_bytes,
        "magic": batch.magic,
        "compresscodec": codec_name(batch),
        "crc": batch.crc,
        "isvalid": batch.is_valid(),
    }


def record_json(batch: Batch, record: Record) -> dict[str, Any]:
    """The ``--json`` object of a record (inside its batch's ``records`` list)."""
    return {
        "offset": record.offset,
        "timestamp": batch.reported_timestamp(record),
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [[decode_text(h.key_bytes()), _b64(h.value)] for h in record.headers],
    }


# --- KRaft control records (SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters) ----------
#
# Their values are Kafka "flexible version" messages (version 0): fixed-width big-endian
# integers, unsigned-varint lengths (+1, 0 = null) for strings and arrays, a 16-byte UUID, and
# a tagged-field section (unsigned varint count, then tag, size, bytes) after every struct.
# Kafka's dump tool prints them with the generated JSON converters: compact JSON, fields in
# schema order, camelCase names, UUIDs as URL-safe base64 without padding.


class _Cursor:
    """Sequential reader of a control record value; overruns raise ``CorruptRecordError``."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise CorruptRecordError(
                f"control record value ends at {len(self._data)} bytes, needs {end}"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def uint16(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise CorruptRecordError("malformed unsigned varint in a control record value")

    def compact_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._take(length).decode("utf-8", "replace")

    def compact_array_length(self) -> int:
        length = self.uvarint() - 1
        if length < 0:
            raise CorruptRecordError("null array in a control record value")
        return length

    def uuid(self) -> str:
        return base64.urlsafe_b64encode(self._take(16)).decode("ascii").rstrip("=")

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def _snapshot_header(value: bytes) -> dict[str, Any]:
    cursor = _Cursor(value)
    out = {"version": cursor.int16(), "lastContainedLogTimestamp": cursor.int64()}
    cursor.tagged_fields()
    return out


def _snapshot_footer(value: bytes) -> dict[str, Any]:
    cursor = _Cursor(value)
    out = {"version": cursor.int16()}
    cursor.tagged_fields()
    return out


def _kraft_version(value: bytes) -> dict[str, Any]:
    cursor = _Cursor(value)
    out = {"version": cursor.int16(), "kRaftVersion": cursor.int16()}
    cursor.tagged_fields()
    return out


def _voters(value: bytes) -> dict[str, Any]:
    cursor = _Cursor(value)
    version = cursor.int16()
    voters = []
    for _ in range(cursor.compact_array_length()):
        voter: dict[str, Any] = {"voterId": cursor.int32(), "voterDirectoryId": cursor.uuid()}
        endpoints = []
        for _ in range(cursor.compact_array_length()):
            endpoint = {
                "name": cursor.compact_string(),
                "host": cursor.compact_string(),
                "port": cursor.uint16(),
            }
            cursor.tagged_fields()
            endpoints.append(endpoint)
        voter["endpoints"] = endpoints
        feature = {
            "minSupportedVersion": cursor.int16(),
            "maxSupportedVersion": cursor.int16(),
        }
        cursor.tagged_fields()
        voter["kRaftVersionFeature"] = feature
        cursor.tagged_fields()
        voters.append(voter)
    cursor.tagged_fields()
    return {"version": version, "voters": voters}


_KRAFT_RENDERERS = {
    ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeader", _snapshot_header),
    ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooter", _snapshot_footer),
    ControlRecordType.KRAFT_VERSION: ("KRaftVersion", _kraft_version),
    ControlRecordType.KRAFT_VOTERS: ("KRaftVoters", _voters),
}


def _compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- the dumper -----------------------------------------------------------------------------------


def absolute_path(path: str) -> str:
    """Java's ``File.getAbsolutePath``: joined to the working directory, not normalized."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


@dataclass
class Findings:
    """What the checks found, printed on stderr after all files (spec §18.5)."""

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


class Dumper:
    """Dumps files one by one to ``out``; diagnostics go to ``err``; :meth:`finish` ends it."""

    def __init__(self, options: DumpOptions, out: TextIO, err: TextIO) -> None:
        self.options = options
        self.findings = Findings()
        self.error_count = 0
        self._out = out
        self._err = err

    # -- output ----------------------------------------------------------------------------------
    def _write(self, stream: TextIO, line: str) -> None:
        try:
            stream.write(line + "\n")
        except UnicodeEncodeError:  # a terminal that cannot show some character
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(line.encode(encoding, "backslashreplace").decode(encoding) + "\n")

    def emit(self, line: str) -> None:
        """A line of the dump (stdout)."""
        self._write(self._out, line)

    def emit_json(self, obj: dict[str, Any]) -> None:
        """One JSON object on its own line (stdout)."""
        self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def note(self, line: str) -> None:
        """A diagnostic line on stderr (after flushing stdout, so the two interleave sanely)."""
        self._out.flush()
        self._write(self._err, line)

    def info(self, line: str) -> None:
        """Kafka's informational lines: stdout in text mode, stderr with ``--json``."""
        if self.options.json:
            self.note(line)
        else:
            self.emit(line)

    def heading(self, line: str) -> None:
        """A line introducing a file's dump (text mode only: JSON objects name their file)."""
        if not self.options.json:
            self.emit(line)

    def error(self, message: str) -> None:
        """Report a problem that makes the exit status 1."""
        self.error_count += 1
        self.note(f"seglog: error: {message}")

    def warning(self, message: str) -> None:
        """Report something the user should know that does not change the exit status."""
        self.note(f"seglog: warning: {message}")

    # -- dispatch --------------------------------------------------------------------------------
    def dump(self, path: str) -> None:
        """Dump one file, dispatching on the text after the last dot of its name."""
        self.heading(f"Dumping {path}")
        name = os.path.basename(path.rstrip(os.sep)) or path
        suffix = file_suffix(name)
        try:
            if suffix in (LOG_SUFFIX, KRAFT_SNAPSHOT_SUFFIX):
                self.dump_log(path, name, suffix)
            elif suffix == INDEX_SUFFIX:
                self.dump_offset_index(path, name)
            elif suffix == TIME_INDEX_SUFFIX:
                self.dump_time_index(path, name)
            elif suffix == TXN_INDEX_SUFFIX:
                self.dump_txn_index(path)
            elif suffix == SNAPSHOT_SUFFIX:
                self.note(
                    f"Ignoring unsupported file {path} (producer state snapshots are not "
                    "decoded by seglog yet)"
                )
            else:
                self.note(f"Ignoring unknown file {path}")
        except BrokenPipeError:
            raise  # the reader of stdout went away: stop (main handles it)
        except (SeglogError, OSError) as exc:
            self.error(str(exc) if isinstance(exc, SeglogError) else f"{path}: {exc}")

    def finish(self) -> int:
        """Print the summaries (stderr) and return the exit status."""
        for line in self.findings.lines():
            self.note(line)
        self._out.flush()
        return EXIT_FAILURE if self.error_count else EXIT_OK

    # -- .log and KRaft snapshots ----------------------------------------------------------------
    def dump_log(self, path: str, name: str, suffix: str) -> None:
        """Dump a ``.log`` (or ``.checkpoint``) file batch by batch."""
        # Mapped first, so an unreadable file is one clear error rather than two.
        with map_file_readonly(path) as buf:
            self._log_heading(path, name, suffix)
            max_bytes = self.options.max_bytes
            end = min(len(buf), max_bytes)
            reader = BatchReader(buf, end=end, verify_crc=False, check_offsets=False)
            last_offset = -1
            for batch in reader:
                last_offset = self._dump_batch(path, batch, last_offset)
            read_end = reader.end
            assert read_end is not None
            trailing = end - reader.valid_bytes
            if trailing > 0 and max_bytes == INT32_MAX:
                self.info(f"Found {trailing} invalid bytes at the end of {name}")
            if read_end.kind is EndKind.CORRUPT:
                self.error(str(read_end.to_error(path)))

    def _log_heading(self, path: str, name: str, suffix: str) -> None:
        """``Log starting offset: <n>`` or the KRaft snapshot line, from the file name."""
        if suffix == LOG_SUFFIX:
            try:
                self.heading(f"Log starting offset: {offset_from_file_name(name)}")
            except InvalidFileNameError as exc:
                self.error(f"{path}: {exc}")
        elif name == BOOTSTRAP_SNAPSHOT_NAME:
            self.heading("KRaft bootstrap snapshot")
        else:
            snapshot_id = kraft_snapshot_id(name)
            if snapshot_id is None:
                self.error(
                    f"{path}: not a KRaft snapshot name (<20-digit offset>-<10-digit epoch>)"
                )
            else:
                self.heading(f"Snapshot end offset: {snapshot_id[0]}, epoch: {snapshot_id[1]}")

    def _dump_batch(self, path: str, batch: Batch, last_offset: int) -> int:
        """Print one batch (and its records when deep); return the last record offset seen."""
        options = self.options
        obj = batch_json(batch, path) if options.json else None
        if obj is None:
            self.emit(batch_line(batch))
        if options.deep_iteration:
            try:
                records = batch.records()
                checksums = batch.record_checksums() if isinstance(batch, LegacyBatch) else None
            except CorruptRecordError as exc:
                self.error(str(exc.at(path=path)))
                records, checksums = [], None
                if obj is not None:
                    obj["error"] = exc.reason
            json_records = []
            for i, record in enumerate(records):
                if last_offset != -1 and record.offset != last_offset + 1:
                    self.findings.add(
                        self.findings.non_consecutive_offsets, path, (last_offset, record.offset)
                    )
                last_offset = record.offset
                if obj is not None:
                    json_records.append(record_json(batch, record))
                    continue
                try:
                    line = record_line(
                        batch,
                        record,
                        checksum=None if checksums is None else checksums[i],
                        skip_record_metadata=options.skip_record_metadata,
                        print_data=options.print_data,
                    )
                except CorruptRecordError as exc:
                    self.error(
                        f"{path} at position {batch.position}: record at offset "
                        f"{record.offset}: {exc.reason}"
                    )
                    continue
                self.emit(line)
            if obj is not None:
                obj["records"] = json_records
        if obj is not None:
            self.emit_json(obj)
        return last_offset

    # -- indexes ---------------------------------------------------------------------------------
    def _sibling(self, path: str, name: str, suffix: str) -> str:
        """The file of the same segment with ``suffix`` (Kafka: same dir, prefix + suffix)."""
        return os.path.join(os.path.dirname(absolute_path(path)), name_prefix(name) + suffix)

    def _whole_entries(self, path: str, data: bytes, entry_bytes: int, kind: str) -> bytes:
        """``data`` cut to whole entries (Kafka reads ``floor(size / entry)``), extra reported."""
        extra = len(data) % entry_bytes
        if extra:
            self.error(
                f"{path}: {kind} size {len(data)} is not a multiple of {entry_bytes} bytes; "
                f"the last {extra} bytes are ignored"
            )
            return data[: len(data) - extra]
        return data

    @contextmanager
    def _log_for_checks(self, path: str, log_path: str) -> Iterator[memoryview | None]:
        """The segment's ``.log`` mapped for index checks, or None (with a warning) if absent."""
        if not file_exists(log_path):
            self.warning(f"{log_path} not found; entries of {path} are not checked against it")
            yield None
            return
        with map_file_readonly(log_path) as log:
            yield log

    def dump_offset_index(self, path: str, name: str) -> None:
        """Dump an ``.index`` file and check each entry against the ``.log``."""
        data = read_file_bytes(path)
        base_offset = offset_from_file_name(name)
        options = self.options
        if entry_count(len(data), OFFSET_INDEX_ENTRY_BYTES) == 0:
            self.info(f"{path} is empty.")
            if len(data):
                self._whole_entries(path, data, OFFSET_INDEX_ENTRY_BYTES, "offset index")
            return
        if options.index_sanity_check:
            sanity_check_offset_index(data, base_offset, path=path)
            self.info(f"{path} passed sanity check.")
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
                    self.emit_json(
                        {"file": path, "offset": entry.offset, "position": entry.position}
                    )
                else:
                    self.emit(f"offset: {entry.offset} position: {entry.position}")

    def _first_batch_last_offset(self, log: memoryview, position: int) -> int:
        """Last offset of the whole batch at ``position`` (within --max-message-size), or -1."""
        if position > len(log):
            return -1
        end = min(len(log), position + self.options.max_message_size)
        reader = BatchReader(log, start=position, end=end, verify_crc=False, check_offsets=False)
        for batch in reader:
            return batch.last_offset
        return -1

    def _offset_index_for_lookups(
        self, index_path: str, base_offset: int
    ) -> list[OffsetIndexEntry]:
        """The segment's offset index entries for lookups (empty when the file is missing)."""
        if not file_exists(index_path):
            return []
        data = read_file_bytes(index_path)
        whole = entry_count(len(data), OFFSET_INDEX_ENTRY_BYTES) * OFFSET_INDEX_ENTRY_BYTES
        return parse_offset_index(data[:whole], base_offset, path=index_path)

    def dump_time_index(self, path: str, name: str) -> None:
        """Dump a ``.timeindex`` file and check each entry against the ``.log``."""
        data = read_file_bytes(path)
        base_offset = offset_from_file_name(name)
        options = self.options
        if options.index_sanity_check:
            sanity_check_time_index(data, base_offset, path=path)
            self.info(f"{path} passed sanity check.")
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
                        self.emit_json(
                            {"file": path, "timestamp": entry.timestamp, "offset": entry.offset}
                        )
                    else:
                        self.emit(f"timestamp: {entry.timestamp} offset: {entry.offset}")
                previous_timestamp = entry.timestamp

    def _check_time_entry(
        self, path: str, batch: Batch, index_timestamp: int, previous_timestamp: int
    ) -> None:
        findings = self.findings
        try:
            records = batch.records()
        except CorruptRecordError as exc:
            self.error(str(exc.at(path=path)))
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

    def dump_txn_index(self, path: str) -> None:
        """Dump a ``.txnindex`` file, one aborted transaction per line."""
        data = read_file_bytes(path)
        usable = self._whole_entries(path, data, TXN_INDEX_ENTRY_BYTES, "transaction index")
        for e in parse_txn_index(usable, path=path):
            if self.options.json:
                self.emit_json(
                    {
                        "file": path,
                        "version": e.version,
                        "producerId": e.producer_id,
                        "firstOffset": e.first_offset,
                        "lastOffset": e.last_offset,
                        "lastStableOffset": e.last_stable_offset,
                    }
                )
            else:
                self.emit(
                    f"version: {e.version} producerId: {e.producer_id} "
                    f"firstOffset: {e.first_offset} lastOffset: {e.last_offset} "
                    f"lastStableOffset: {e.last_stable_offset}"
                )
