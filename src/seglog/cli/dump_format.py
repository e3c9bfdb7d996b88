"""The lines and JSON objects of ``seglog dump-log``: Kafka's ``kafka-dump-log.sh`` text, pure.

Every function here turns decoded values into one line (without the newline) or one JSON
object; nothing reads a file or writes a stream. The text is Kafka's ``DumpLogSegments``
output as Kafka's ``kafka-dump-log.sh`` prints it, single spaces throughout:

Batch line, magic 2 (``printBatchLevel``)::

    baseOffset: <b> lastOffset: <l> count: <n> baseSequence: <bs> lastSequence: <ls>
    producerId: <pid> producerEpoch: <pe> partitionLeaderEpoch: <ple>
    isTransactional: <true|false> isControl: <true|false>
    deleteHorizonMs: <OptionalLong.empty|OptionalLong[<ms>]> position: <pos>
    <CreateTime|LogAppendTime>: <maxTimestamp> size: <sizeInBytes> magic: 2
    compresscodec: <none|gzip|snappy|lz4|zstd> crc: <unsigned crc> isvalid: <true|false>

(one line, wrapped here). Batch line, magic 0/1::

    offset: <lastOffset> position: <pos> <NoTimestampType|CreateTime|LogAppendTime>: <ts>
    size: <size> magic: <0|1> compresscodec: <name> crc: <crc> isvalid: <bool>

An invalid codec id shows as ``compresscodec: unknown(<id>)`` (Kafka would throw).

Record line (deep iteration), built by concatenation::

    | offset: <o> <tsType>: <recordTs> keySize: <ks|-1> valueSize: <vs|-1>

then for magic 2 `` sequence: <seq> headerKeys: [<k1>,<k2>,...]``; for a legacy record
`` isValid: <bool> crc: <crc>}`` (the stray ``}`` is Kafka's); for a control batch
`` endTxnMarker: <COMMIT|ABORT> coordinatorEpoch: <e>``, `` SnapshotHeader {json}``,
`` SnapshotFooter {json}``, `` KRaftVersion {json}``, `` KRaftVoters {json}`` or
`` controlType: <NAME>(<id>)`` (LEADER_CHANGE and unknown types); then, when printing data
and not a control batch, `` key: <decoded>`` (key not null) and `` payload: <decoded>``
(value not null). With ``--skip-record-metadata`` the metadata part is left out, so the line
starts ``| key: ...`` when there is a key, else `` payload: ...``. Keys, values and header
keys are decoded as UTF-8 with bad bytes replaced (Kafka's default String decoder). The
KRaft ``{json}`` is what Kafka's generated JSON converters print: compact, fields in schema
order, camelCase names, UUIDs as URL-safe base64 without padding.

Index entry lines::

    offset: <absoluteOffset> position: <position>                       (.index)
    timestamp: <ts> offset: <absoluteOffset>                            (.timeindex)
    version: <v> producerId: <pid> firstOffset: <f> lastOffset: <l> lastStableOffset: <lso>
                                                                        (.txnindex)

Producer state snapshot line (``.snapshot``, one per producer entry)::

    producerId: <pid> producerEpoch: <e> coordinatorEpoch: <ce>
    currentTxnFirstOffset: <OptionalLong.empty|OptionalLong[<o>]> lastTimestamp: <ts>

(one line, wrapped here, ending with a space) followed, when the entry holds a batch
(``lastOffset >= 0``), by ``firstSequence: <fs> lastSequence: <ls> lastOffset: <lo>
offsetDelta: <d> timestamp: <ts>``, where ``firstSequence`` is ``lastSequence - offsetDelta``
wrapped past ``Integer.MAX_VALUE`` as Kafka's ``decrementSequence`` does.

JSON objects (``--json``; seglog's own, Kafka's tool has none): per batch ``{"file",
"baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
"producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs",
"position", "timestampType", "maxTimestamp", "size", "magic", "compresscodec", "crc",
"isvalid"}`` (``baseOffset`` null when a legacy wrapper cannot be decompressed, ``count``
null for legacy entries); per record ``{"offset", "timestamp", "key", "value", "headers":
[[key, value], ...]}`` with keys and values as base64 or null; per ``.index`` entry
``{"file", "offset", "position"}``; per ``.timeindex`` entry ``{"file", "timestamp",
"offset"}``; per ``.txnindex`` entry ``{"file", "version", "producerId", "firstOffset",
"lastOffset", "lastStableOffset"}``; per ``.snapshot`` entry ``{"file", "producerId",
"producerEpoch", "coordinatorEpoch", "currentTxnFirstOffset", "lastTimestamp",
"firstSequence", "lastSequence", "lastOffset", "offsetDelta", "timestamp"}``
(``currentTxnFirstOffset`` null without an open transaction; the five batch fields null when
the entry holds no batch).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from seglog.core.producer_state import first_sequence as batch_first_sequence
from seglog.errors import CorruptRecordError, UnsupportedCodecError
from seglog.format.batch import RecordBatch
from seglog.format.control import (
    ControlRecordType,
    decode_control_key,
    decode_end_txn_marker,
)
from seglog.format.index import AbortedTxn, OffsetIndexEntry, TimeIndexEntry
from seglog.format.kraft import (
    KRaftRecord,
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    decode_kraft_version,
    decode_snapshot_footer,
    decode_snapshot_header,
    decode_voters,
)
from seglog.format.producer_snapshot import ProducerSnapshotEntry
from seglog.format.reader import Batch
from seglog.format.records import Record

RECORD_INDENT = "|"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def decode_text(data: bytes) -> str:
    """Bytes as Kafka's default (String) decoder shows them: UTF-8, bad bytes replaced."""
    return data.decode("utf-8", "replace")


# --- batch and record lines --------------------------------------------------------------


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


def control_record_text(record: Record) -> str:
    """The control part of a record line (`` endTxnMarker: COMMIT coordinatorEpoch: 3``, ...).

    Raises ``CorruptRecordError`` when the key or value is too short or malformed.
    """
    key = decode_control_key(record.key)
    control_type = key.type
    if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = decode_end_txn_marker(record.value)
        return f" endTxnMarker: {control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"
    kraft = _KRAFT_DECODERS.get(control_type)
    if kraft is not None:
        label, decode = kraft
        return f" {label} {_compact_json(kraft_record_json(decode(record.value or b'')))}"
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


# --- KRaft control record values as Kafka's JSON converters print them ---------------------------

_KRAFT_DECODERS: dict[ControlRecordType, tuple[str, Callable[[bytes], KRaftRecord]]] = {
    ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeader", decode_snapshot_header),
    ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooter", decode_snapshot_footer),
    ControlRecordType.KRAFT_VERSION: ("KRaftVersion", decode_kraft_version),
    ControlRecordType.KRAFT_VOTERS: ("KRaftVoters", decode_voters),
}


def _uuid_text(value: bytes) -> str:
    """A UUID as Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value).decode("ascii").rstrip("=")


def kraft_record_json(record: KRaftRecord) -> dict[str, Any]:
    """A decoded KRaft control value as Kafka's generated JSON converter shapes it."""
    if isinstance(record, SnapshotHeaderRecord):
        return {
            "version": record.version,
            "lastContainedLogTimestamp": record.last_contained_log_timestamp,
        }
    if isinstance(record, SnapshotFooterRecord):
        return {"version": record.version}
    if isinstance(record, KRaftVersionRecord):
        return {"version": record.version, "kRaftVersion": record.kraft_version}
    assert isinstance(record, VotersRecord)
    voters = [
        {
            "voterId": voter.voter_id,
            "voterDirectoryId": _uuid_text(voter.voter_directory_id.bytes),
            "endpoints": [
                {"name": e.name, "host": e.host, "port": e.port} for e in voter.endpoints
            ],
            "kRaftVersionFeature": {
                "minSupportedVersion": voter.kraft_version_feature.min_supported_version,
                "maxSupportedVersion": voter.kraft_version_feature.max_supported_version,
            },
        }
        for voter in record.voters
    ]
    return {"version": record.version, "voters": voters}


def _compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- index entry lines --------------------------------------------------------------


def offset_index_line(entry: OffsetIndexEntry) -> str:
    """Kafka's ``.index`` entry line."""
    return f"offset: {entry.offset} position: {entry.position}"


def time_index_line(entry: TimeIndexEntry) -> str:
    """Kafka's ``.timeindex`` entry line."""
    return f"timestamp: {entry.timestamp} offset: {entry.offset}"


def txn_index_line(entry: AbortedTxn) -> str:
    """Kafka's ``.txnindex`` entry line (one aborted transaction)."""
    return (
        f"version: {entry.version} producerId: {entry.producer_id} "
        f"firstOffset: {entry.first_offset} lastOffset: {entry.last_offset} "
        f"lastStableOffset: {entry.last_stable_offset}"
    )


def first_sequence(entry: ProducerSnapshotEntry) -> int:
    """The first sequence of an entry's batch (sequences wrap from int32 max to 0)."""
    return batch_first_sequence(entry.last_sequence, entry.offset_delta)


def _optional_long(value: int) -> str:
    return "OptionalLong.empty" if value < 0 else f"OptionalLong[{value}]"


def producer_snapshot_line(entry: ProducerSnapshotEntry) -> str:
    """Kafka's ``.snapshot`` entry line (``dumpProducerIdSnapshot``), without the newline."""
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} "
        f"currentTxnFirstOffset: {_optional_long(entry.current_txn_first_offset)} "
        f"lastTimestamp: {entry.timestamp} "
    )
    if entry.last_offset >= 0:
        line += (
            f"firstSequence: {first_sequence(entry)} lastSequence: {entry.last_sequence} "
            f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
            f"timestamp: {entry.timestamp}"
        )
    return line


# --- JSON objects (--json) -----------------------------------------------------------------------


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


def offset_index_json(entry: OffsetIndexEntry, path: str) -> dict[str, Any]:
    """The ``--json`` object of an ``.index`` entry."""
    return {"file": path, "offset": entry.offset, "position": entry.position}


def time_index_json(entry: TimeIndexEntry, path: str) -> dict[str, Any]:
    """The ``--json`` object of a ``.timeindex`` entry."""
    return {"file": path, "timestamp": entry.timestamp, "offset": entry.offset}


def txn_index_json(entry: AbortedTxn, path: str) -> dict[str, Any]:
    """The ``--json`` object of a ``.txnindex`` entry."""
    return {
        "file": path,
        "version": entry.version,
        "producerId": entry.producer_id,
        "firstOffset": entry.first_offset,
        "lastOffset": entry.last_offset,
        "lastStableOffset": entry.last_stable_offset,
    }


def producer_snapshot_json(entry: ProducerSnapshotEntry, path: str) -> dict[str, Any]:
    """The ``--json`` object of a ``.snapshot`` producer entry."""
    has_batch = entry.last_offset >= 0
    return {
        "file": path,
        "producerId": entry.producer_id,
        "producerEpoch": entry.producer_epoch,
        "coordinatorEpoch": entry.coordinator_epoch,
        "currentTxnFirstOffset": (
            entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None
        ),
        "lastTimestamp": entry.timestamp,
        "firstSequence": first_sequence(entry) if has_batch else None,
        "lastSequence": entry.last_sequence if has_batch else None,
        "lastOffset": entry.last_offset if has_batch else None,
        "offsetDelta": entry.offset_delta if has_batch else None,
        "timestamp": entry.timestamp if has_batch else None,
    }
