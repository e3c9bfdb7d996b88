"""The Aiven tiered-storage plugin's ``.rsm-manifest`` JSON, its chunk index and ``.indexes``.

The plugin (Aiven-Open ``tiered-storage-for-apache-kafka``) writes three objects per uploaded
segment, in this order: ``.log`` (the segment, cut into chunks, each optionally
zstd-compressed then AES-GCM-encrypted), ``.indexes`` (the segment's indexes concatenated)
and ``.rsm-manifest`` last, so a manifest means the upload finished (not that Kafka
committed it). The manifest (``SegmentManifestV1``)::

    {"version": "1",
     "chunkIndex": {"type": "fixed", "originalChunkSize": C, "originalFileSize": N,
                    "transformedChunkSize": T, "finalTransformedChunkSize": F}
                 | {"type": "variable", "originalChunkSize": C, "originalFileSize": N,
                    "transformedChunks": "<base64 of a zstd frame holding the chunk sizes>"},
     "segmentIndexes": {"offset": {"position": p, "size": s}, "timestamp": ...,
                        "producerSnapshot": ..., "leaderEpoch": ..., "transaction": ... | null},
     "compression": bool,
     "encryption": {"dataKey": ..., "aad": ...}        (only when encrypted),
     "remoteLogSegmentMetadata": {...}                 (since 2023-09; optional)}

Before 2023-10 (pre-v1.0) each index was its own object (suffixes ``index``, ``timeindex``,
``snapshot``, ``txnindex``, ``leader-epoch-checkpoint``) and the manifest had no
``segmentIndexes``: :attr:`SegmentManifest.segment_indexes` is then None.

**Chunks.** Original chunk ``i`` covers bytes ``[i*C, min(N, (i+1)*C))`` of the segment. In a
``fixed`` index every transformed chunk has ``T`` bytes except the last (``F``); in a
``variable`` index (compression on) the sizes are listed. A chunk's transformed position
is the sum of the sizes before it. The variable index's sizes are encoded by the plugin's
``ChunkSizesBinaryCodec``, all big-endian, inside one zstd frame that declares its content
size: ``int32 count``; then for ``count == 1`` ``int32 value``; for ``count >= 2``
``int32 base, u8 bytesPerValue, (count-1) x bytesPerValue (value - base), int32 last``.

**``.indexes``.** OFFSET, TIMESTAMP, PRODUCER_SNAPSHOT, LEADER_EPOCH and (optional)
TRANSACTION, concatenated, each never compressed; ``segmentIndexes`` gives each one's range.

**Refused, never read as garbage**: a manifest with ``encryption``
(:class:`~seglog.errors.EncryptedRemoteSegmentError`) and a manifest that describes no Kafka
segment bytes, the plugin's Iceberg mode (:class:`~seglog.errors.IcebergRemoteSegmentError`):
decided from a ``"segmentFormat"``/``"format"`` field naming iceberg, or from a manifest
without a ``chunkIndex`` (an Iceberg-mode segment has no ``.log`` to index). A version other
than ``"1"`` is refused too (:class:`~seglog.errors.CorruptRemoteObjectError`). Every other
problem raises :class:`~seglog.errors.CorruptRemoteObjectError` naming the object and the
field (JSON path) or byte position.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any

import zstandard

from seglog.errors import (
    CorruptRemoteObjectError,
    EncryptedRemoteSegmentError,
    IcebergRemoteSegmentError,
)

INDEX_NAMES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
_MAX_CHUNK_SIZES_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: its original byte range and its transformed (stored) byte range."""

    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True, slots=True)
class ChunkIndex:
    """Either kind of chunk index, expanded to the transformed size of every chunk."""

    original_chunk_size: int
    original_file_size: int
    transformed_sizes: tuple[int, ...]

    def chunks(self) -> list[Chunk]:
        """Every chunk in order."""
        out = []
        transformed = 0
        for i, size in enumerate(self.transformed_sizes):
            original = i * self.original_chunk_size
            length = min(self.original_chunk_size, self.original_file_size - original)
            out.append(Chunk(original, length, transformed, size))
            transformed += size
        return out

    @property
    def transformed_file_size(self) -> int:
        """The size of the stored ``.log`` object."""
        return sum(self.transformed_sizes)


@dataclass(frozen=True, slots=True)
class ManifestSegmentMetadata:
    """The manifest's ``remoteLogSegmentMetadata`` (what Kafka handed the plugin)."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    """A parsed ``.rsm-manifest`` (module docstring)."""

    chunk_index: ChunkIndex
    segment_indexes: dict[str, tuple[int, int] | None] | None  # None: pre-v1.0 per-index objects
    compression: bool
    metadata: ManifestSegmentMetadata | None


def _fail(name: str, reason: str, position: int | None = None) -> CorruptRemoteObjectError:
    return CorruptRemoteObjectError(reason, position=position, path=name)


def _field(name: str, obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _fail(name, f"manifest field {where}.{key} is missing")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _fail(name, f"manifest field {where}.{key} is {value!r}, of the wrong type")
    return value


def _non_negative(name: str, obj: Any, key: str, where: str) -> int:
    value: int = _field(name, obj, key, int, where)
    if value < 0:
        raise _fail(name, f"manifest field {where}.{key} is negative ({value})")
    return value


def decode_chunk_sizes(raw: bytes, *, name: str) -> list[int]:
    """The chunk sizes of a ``variable`` chunk index (``raw``: the zstd frame)."""
    try:
        body = zstandard.ZstdDecompressor().decompress(raw, max_output_size=_MAX_CHUNK_SIZES_BYTES)
    except zstandard.ZstdError as exc:
        raise _fail(
            name, f"transformedChunks is not a zstd frame with content size: {exc}"
        ) from exc
    if len(body) < 4:
        raise _fail(name, f"chunk sizes end at byte {len(body)}, needs 4", len(body))
    (count,) = struct.unpack_from(">i", body, 0)
    if count < 0:
        raise _fail(name, f"chunk size count {count} is negative", 0)
    if count == 0:
        values: list[int] = []
        end = 4
    elif count == 1:
        if len(body) < 8:
            raise _fail(name, f"chunk sizes end at byte {len(body)}, needs 8", len(body))
        values, end = [struct.unpack_from(">i", body, 4)[0]], 8
    else:
        if len(body) < 9:
            raise _fail(name, f"chunk sizes end at byte {len(body)}, needs 9", len(body))
        base, width = struct.unpack_from(">iB", body, 4)
        if width > 4:
            raise _fail(name, f"chunk sizes use {width} bytes per value, at most 4", 8)
        end = 9 + (count - 1) * width + 4
        if len(body) < end:
            raise _fail(name, f"chunk sizes end at byte {len(body)}, needs {end}", len(body))
        values = [
            base + int.from_bytes(body[9 + i * width : 9 + (i + 1) * width], "big")
            for i in range(count - 1)
        ]
        values.append(struct.unpack_from(">i", body, end - 4)[0])
    if end != len(body):
        raise _fail(name, f"{len(body) - end} bytes left after the chunk sizes", end)
    if any(v < 0 for v in values):
        raise _fail(name, "a chunk size is negative")
    return values


def encode_chunk_sizes(sizes: list[int]) -> bytes:
    """The zstd frame :func:`decode_chunk_sizes` reads (tests build variable indexes with it)."""
    body = struct.pack(">i", len(sizes))
    if len(sizes) == 1:
        body += struct.pack(">i", sizes[0])
    elif len(sizes) >= 2:
        base = min(sizes[:-1])
        span = max(sizes[:-1]) - base
        width = max(1, (span.bit_length() + 7) // 8)
        body += struct.pack(">iB", base, width)
        body += b"".join((v - base).to_bytes(width, "big") for v in sizes[:-1])
        body += struct.pack(">i", sizes[-1])
    return zstandard.ZstdCompressor(write_content_size=True).compress(body)


def _chunk_index(name: str, obj: Any) -> ChunkIndex:
    where = "chunkIndex"
    kind = _field(name, obj, "type", str, where)
    chunk = _non_negative(name, obj, "originalChunkSize", where)
    size = _non_negative(name, obj, "originalFileSize", where)
    if chunk == 0 and size:
        raise _fail(name, "manifest field chunkIndex.originalChunkSize is 0")
    count = -(-size // chunk) if size else 0
    if kind == "fixed":
        transformed = _non_negative(name, obj, "transformedChunkSize", where)
        final = _non_negative(name, obj, "finalTransformedChunkSize", where)
        sizes = [transformed] * max(0, count - 1) + ([final] if count else [])
    elif kind == "variable":
        text = _field(name, obj, "transformedChunks", str, where)
        try:
            raw = base64.b64decode(text, validate=True)
        except binascii.Error as exc:
            raise _fail(name, f"chunkIndex.transformedChunks is not base64: {exc}") from exc
        sizes = decode_chunk_sizes(raw, name=f"{name} (chunkIndex.transformedChunks)")
        if len(sizes) != count:
            raise _fail(
                name,
                f"chunkIndex lists {len(sizes)} chunks; originalFileSize {size} in chunks of "
                f"{chunk} needs {count}",
            )
    else:
        raise _fail(name, f"manifest field chunkIndex.type is {kind!r}; expected fixed or variable")
    return ChunkIndex(chunk, size, tuple(sizes))


def _segment_indexes(name: str, obj: Any) -> dict[str, tuple[int, int] | None]:
    if not isinstance(obj, dict):
        raise _fail(name, "manifest field segmentIndexes is not an object")
    out: dict[str, tuple[int, int] | None] = {}
    for index in INDEX_NAMES:
        entry = obj.get(index)
        if entry is None:
            if index != "transaction":
                raise _fail(name, f"manifest field segmentIndexes.{index} is missing")
            out[index] = None
            continue
        where = f"segmentIndexes.{index}"
        out[index] = (
            _non_negative(name, entry, "position", where),
            _non_negative(name, entry, "size", where),
        )
    return out


def _metadata(name: str, obj: Any) -> ManifestSegmentMetadata | None:
    if obj is None:
        return None
    w = "remoteLogSegmentMetadata"
    sid = _field(name, obj, "remoteLogSegmentId", dict, w)
    tip = _field(name, sid, "topicIdPartition", dict, f"{w}.remoteLogSegmentId")
    tp = _field(name, tip, "topicPartition", dict, f"{w}.remoteLogSegmentId.topicIdPartition")
    epochs_obj = _field(name, obj, "segmentLeaderEpochs", dict, w)
    try:
        epochs = tuple(sorted((int(k), int(v)) for k, v in epochs_obj.items()))
    except (TypeError, ValueError) as exc:
        raise _fail(name, f"manifest field {w}.segmentLeaderEpochs is not epoch -> offset") from exc
    return ManifestSegmentMetadata(
        topic=_field(name, tp, "topic", str, "topicPartition"),
        topic_id=_field(name, tip, "topicId", str, "topicIdPartition"),
        partition=_non_negative(name, tp, "partition", "topicPartition"),
        segment_id=_field(name, sid, "id", str, "remoteLogSegmentId"),
        start_offset=_non_negative(name, obj, "startOffset", w),
        end_offset=_field(name, obj, "endOffset", int, w),
        max_timestamp_ms=_field(name, obj, "maxTimestampMs", int, w),
        broker_id=_field(name, obj, "brokerId", int, w),
        event_timestamp_ms=_field(name, obj, "eventTimestampMs", int, w),
        segment_leader_epochs=epochs,
    )


def parse_manifest(data: bytes, *, name: str) -> SegmentManifest:
    """Parse one ``.rsm-manifest`` (``name``: its object key, for errors)."""
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        position = getattr(exc, "pos", None)
        raise _fail(name, f"manifest is not JSON: {exc}", position) from exc
    if not isinstance(obj, dict):
        raise _fail(name, "manifest is not a JSON object")
    for key in ("segmentFormat", "format"):
        value = obj.get(key)
        if isinstance(value, str) and value.lower() == "iceberg":
            raise IcebergRemoteSegmentError(
                f"manifest field {key} is {value!r}: an Iceberg-mode segment holds Parquet "
                "rows in an Iceberg table, not a Kafka segment; read it as that table",
                path=name,
            )
    version = obj.get("version")
    if version != "1":
        raise _fail(name, f"manifest version is {version!r}; only '1' is known")
    if obj.get("encryption") is not None:
        raise EncryptedRemoteSegmentError(
            "the segment is encrypted (manifest field 'encryption'): its chunks are "
            "AES-GCM ciphertext under a per-segment key; seglog does not decrypt them",
            path=name,
        )
    if "chunkIndex" not in obj or obj["chunkIndex"] is None:
        raise IcebergRemoteSegmentError(
            "manifest has no chunkIndex, so it describes no Kafka segment bytes (the "
            "plugin's Iceberg mode writes such manifests)",
            path=name,
        )
    compression = _field(name, obj, "compression", bool, "manifest")
    return SegmentManifest(
        chunk_index=_chunk_index(name, obj["chunkIndex"]),
        segment_indexes=(
            None
            if obj.get("segmentIndexes") is None
            else _segment_indexes(name, obj["segmentIndexes"])
        ),
        compression=compression,
        metadata=_metadata(name, obj.get("remoteLogSegmentMetadata")),
    )


def split_indexes(data: bytes, manifest: SegmentManifest, *, name: str) -> dict[str, bytes]:
    """Each index's bytes out of an ``.indexes`` object (absent transaction index: left out)."""
    out: dict[str, bytes] = {}
    if manifest.segment_indexes is None:
        raise _fail(name, "the manifest lists no segmentIndexes (a pre-v1.0 upload)")
    for index, span in manifest.segment_indexes.items():
        if span is None:
            continue
        position, size = span
        if position + size > len(data):
            raise _fail(
                name,
                f"index {index} spans bytes {position}-{position + size} of a "
                f"{len(data)}-byte .indexes object",
                position,
            )
        out[index] = data[position : position + size]
    return out
