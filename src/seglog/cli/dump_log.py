"""``seglog dump-log FILE...``: print segment files the way Kafka's ``kafka-dump-log.sh`` does.

This module is the command: its options (argparse), and the :class:`Dumper` that walks the
files given, dispatches each one, reports problems and ends with the summaries and the exit
status. The text and JSON it prints are rendered by :mod:`seglog.cli.dump_format`; index
files are dumped and checked by :mod:`seglog.cli.dump_index`; KRaft control values are
decoded by :mod:`seglog.format.kraft`.

Dispatch is by the text after the file name's **last** dot: ``.log`` and KRaft
``.checkpoint`` snapshots are dumped batch by batch, ``.index``, ``.timeindex`` and
``.txnindex`` entry by entry, producer state ``.snapshot`` files producer by producer;
anything else prints ``Ignoring unknown file <path>`` on stderr
(so ``x.log.deleted`` is ignored, as in Kafka). The text output is Kafka's, byte for byte:
``Dumping <path>``, ``Log starting offset: <n>``, batch lines for v2 and
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
* index files: see :mod:`seglog.cli.dump_index` (missing ``.log`` or ``.index``, entries
  holding no whole batch, the order of the summaries);
* a damaged producer state ``.snapshot`` (bad version, CRC or length) is an error (exit
  status 1) and none of its entries is printed; Kafka's tool prints the message and exits 0.

``--json`` writes one JSON object per line instead (diagnostics stay text on stderr), in the
shapes :mod:`seglog.cli.dump_format` lists; with deep iteration a batch object carries
``"records"``, and ``"error"`` with an empty ``"records"`` list when its records cannot be
decoded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from seglog.cli.dump_format import batch_json, batch_line, record_json, record_line
from seglog.cli.dump_index import Findings, IndexDumper
from seglog.errors import CorruptRecordError, InvalidFileNameError, SeglogError
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
    offset_from_file_name,
)
from seglog.format.reader import Batch, BatchReader, EndKind
from seglog.storage.files import map_file_readonly

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

INT32_MAX = (1 << 31) - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Kafka's --max-message-size default
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
  .snapshot           one line per producer (Kafka's producer state snapshot)
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
  .snapshot:   {"file", "producerId", "producerEpoch", "coordinatorEpoch",
                "currentTxnFirstOffset" (null: none), "lastTimestamp", "firstSequence",
                "lastSequence", "lastOffset", "offsetDelta", "timestamp"} (the last five
                null when the producer has no batch retained)

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
        help="print .log/.index/.timeindex/.txnindex/.snapshot files like Kafka's "
        "kafka-dump-log.sh",
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
        dumper.dump(local_copy_of(path), shown=path)
    return dumper.finish()


def local_copy_of(path: str) -> str:
    """``path``, or for a file in an object store (``s3://bucket/dir/0...0.log``) the same file
    in the read-only local mirror of its directory (its neighbours too: an index is checked
    against its ``.log``)."""
    from seglog.storage.log_dir_mirror import mirror
    from seglog.storage.object_store import ObjectLocation, is_remote

    if not is_remote(path):
        return path
    directory, _, name = path.rstrip("/").rpartition("/")
    return str(mirror(ObjectLocation(directory), lambda relative: "/" not in relative) / name)


# --- the dumper -----------------------------------------------------------------------------------


class Dumper:
    """Dumps files one by one to ``out``; diagnostics go to ``err``; :meth:`finish` ends it."""

    def __init__(self, options: DumpOptions, out: TextIO, err: TextIO) -> None:
        self.options = options
        self.findings = Findings()
        self.error_count = 0
        self._out = out
        self._err = err
        self._indexes = IndexDumper(options, self, self.findings)

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
    def dump(self, path: str, *, shown: str | None = None) -> None:
        """Dump one file, dispatching on the text after the last dot of its name; the
        heading names ``shown`` (the path the user gave) when given."""
        self.heading(f"Dumping {shown or path}")
        name = os.path.basename(path.rstrip(os.sep)) or path
        suffix = file_suffix(name)
        try:
            if suffix in (LOG_SUFFIX, KRAFT_SNAPSHOT_SUFFIX):
                self.dump_log(path, name, suffix)
            elif suffix == INDEX_SUFFIX:
                self._indexes.dump_offset_index(path, name)
            elif suffix == TIME_INDEX_SUFFIX:
                self._indexes.dump_time_index(path, name)
            elif suffix == TXN_INDEX_SUFFIX:
                self._indexes.dump_txn_index(path)
            elif suffix == SNAPSHOT_SUFFIX:
                self._indexes.dump_producer_snapshot(path)
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
