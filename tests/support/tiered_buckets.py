"""Build Kafka tiered-storage locations from a partition directory's closed segments.

The bytes uploaded are the segment files themselves (as the broker hands them to its remote
storage plugin); the layouts follow the Aiven plugin (manifest, ``.indexes`` object,
identity or zstd chunks, or the pre-v1.0 one-object-per-index form) and Kafka's
``LocalTieredStorage``. ``__remote_log_metadata`` records are written as a real Kafka log by
seglog. Everything here writes into the test's own tmp directories only.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import zstandard

from seglog.engine.log_manager import open_log_dirs
from seglog.format.checkpoint import kafka_uuid_from_bytes
from seglog.format.reader import read_batches
from seglog.format.remote_log_metadata import (
    RemoteLogMetadata,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadataRecord,
    RemoteLogSegmentMetadataUpdateRecord,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from seglog.format.rsm_manifest import encode_chunk_sizes


def new_uuid() -> str:
    return kafka_uuid_from_bytes(secrets.token_bytes(16))


@dataclass(frozen=True)
class Closed:
    """One closed segment of a partition directory."""

    base: int
    end: int
    files: dict[str, Path]  # suffix (".log", ".index", ...) -> file
    max_ts: int


def closed_segments(partition_dir: Path) -> list[Closed]:
    """The partition's segments except the last (the active one), with their end offsets."""
    bases = sorted(int(p.stem) for p in partition_dir.glob("*.log"))
    out = []
    for base, following in itertools.pairwise(bases):
        stem = f"{base:020d}"
        files = {
            suffix: partition_dir / (stem + suffix)
            for suffix in (".log", ".index", ".timeindex", ".txnindex")
            if (partition_dir / (stem + suffix)).exists()
        }
        batches, _ = read_batches(files[".log"].read_bytes())
        if not batches:
            continue
        end = int(batches[-1].last_offset)
        assert end < following
        out.append(Closed(base, end, files, max(int(b.max_timestamp) for b in batches)))
    return out


def _read(path: Path | None) -> bytes:
    return b"" if path is None else path.read_bytes()


def _epoch_checkpoint(start: int) -> bytes:
    return f"0\n1\n0 {start}\n".encode()


def write_aiven(
    root: Path,
    topic: str,
    topic_id: str,
    partition: int,
    segments: list[Closed],
    *,
    compression: bool = False,
    chunk_size: int = 4096,
    legacy: bool = False,
    with_metadata: bool = True,
    ids: list[str] | None = None,
    extra: dict[str, object] | None = None,
) -> list[str]:
    """The Aiven layout of ``segments`` under ``root``; returns the segment ids."""
    folder = root / f"{topic}-{topic_id}" / str(partition)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, seg in enumerate(segments):
        uuid = ids[i] if ids else new_uuid()
        out.append(uuid)
        stem = folder / f"{seg.base:020d}-{uuid}"
        data = seg.files[".log"].read_bytes()
        chunks = [data[p : p + chunk_size] for p in range(0, len(data), chunk_size)]
        if compression:
            stored = [zstandard.ZstdCompressor(write_content_size=True).compress(c) for c in chunks]
            index: dict[str, object] = {
                "type": "variable",
                "originalChunkSize": chunk_size,
                "originalFileSize": len(data),
                "transformedChunks": base64.b64encode(
                    encode_chunk_sizes([len(c) for c in stored])
                ).decode(),
            }
        else:
            stored = chunks
            index = {
                "type": "fixed",
                "originalChunkSize": chunk_size,
                "originalFileSize": len(data),
                "transformedChunkSize": chunk_size,
                "finalTransformedChunkSize": len(chunks[-1]),
            }
        Path(f"{stem}.log").write_bytes(b"".join(stored))
        parts = [
            ("offset", _read(seg.files.get(".index"))),
            ("timestamp", _read(seg.files.get(".timeindex"))),
            ("producerSnapshot", b""),
            ("leaderEpoch", _epoch_checkpoint(seg.base)),
        ]
        if ".txnindex" in seg.files:  # the plugin stores it only when the segment has one
            parts.append(("transaction", _read(seg.files[".txnindex"])))
        manifest: dict[str, object] = {
            "version": "1",
            "chunkIndex": index,
            "compression": compression,
        }
        if legacy:
            suffixes = {"offset": "index", "timestamp": "timeindex", "producerSnapshot": "snapshot",
                        "leaderEpoch": "leader-epoch-checkpoint",
                        "transaction": "txnindex"}  # fmt: skip
            for name, raw in parts:
                Path(f"{stem}.{suffixes[name]}").write_bytes(raw)
        else:
            spans, position = {}, 0
            for name, raw in parts:
                spans[name] = {"position": position, "size": len(raw)}
                position += len(raw)
            spans.setdefault("transaction", None)  # type: ignore[arg-type]
            Path(f"{stem}.indexes").write_bytes(b"".join(raw for _, raw in parts))
            manifest["segmentIndexes"] = spans
        if with_metadata:
            manifest["remoteLogSegmentMetadata"] = {
                "remoteLogSegmentId": {
                    "topicIdPartition": {
                        "topicId": topic_id,
                        "topicPartition": {"topic": topic, "partition": partition},
                    },
                    "id": uuid,
                },
                "startOffset": seg.base,
                "endOffset": seg.end,
                "maxTimestampMs": seg.max_ts,
                "brokerId": 1,
                "eventTimestampMs": 1_700_000_000_000 + i,
                "segmentLeaderEpochs": {"0": seg.base},
            }
        manifest.update(extra or {})
        Path(f"{stem}.rsm-manifest").write_text(json.dumps(manifest))  # written last
    return out


def write_local_tiered(
    root: Path, topic: str, topic_id: str, partition: int, segments: list[Closed]
) -> list[str]:
    """Kafka's LocalTieredStorage layout of ``segments`` under ``root/kafka-tiered-storage``."""
    folder = root / "kafka-tiered-storage" / f"{topic}-{partition}-{topic_id}"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for seg in segments:
        uuid = new_uuid()
        out.append(uuid)
        stem = f"{seg.base:020d}-{uuid}"
        for suffix, path in seg.files.items():
            (folder / (stem + suffix)).write_bytes(path.read_bytes())
        (folder / f"{stem}.snapshot").write_bytes(b"")
        (folder / f"{stem}.leader_epoch_checkpoint").write_bytes(_epoch_checkpoint(0))
    return out


def segment_record(
    topic: str, topic_id: str, partition: int, uuid: str, seg: Closed, state: int
) -> RemoteLogSegmentMetadataRecord:
    tip = TopicIdPartition(topic, topic_id, partition)
    return RemoteLogSegmentMetadataRecord(
        0,
        RemoteLogSegmentId(tip, uuid),
        seg.base,
        seg.end,
        1,
        seg.max_ts,
        1_700_000_000_000,
        ((0, seg.base),),
        os.path.getsize(seg.files[".log"]),
        None,
        state,
    )


def update_record(
    topic: str, topic_id: str, partition: int, uuid: str, state: int
) -> RemoteLogSegmentMetadataUpdateRecord:
    tip = TopicIdPartition(topic, topic_id, partition)
    return RemoteLogSegmentMetadataUpdateRecord(
        1, RemoteLogSegmentId(tip, uuid), 1, 1_700_000_000_001, None, state
    )


def write_metadata_log(
    log_dir: Path, records: list[RemoteLogMetadata], partitions: int = 3
) -> None:
    """``__remote_log_metadata`` as a real Kafka log (all records in partition 1)."""
    with open_log_dirs([log_dir]) as manager:
        manager.create_topic("__remote_log_metadata", partitions, {"segment.bytes": "1024"})
        log = manager.get_log("__remote_log_metadata", 1)
        for record in records:
            log.append_records([(None, encode_remote_log_metadata(record), (), 1_700_000_000_000)])
