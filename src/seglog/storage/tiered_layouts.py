"""Layout adapters: the segments of a Kafka tiered-storage location, per topic-partition.

Two layouts, both read-only (nothing is ever written into them):

**Aiven** (``tiered-storage-for-apache-kafka``), under the location (bucket + ``key.prefix``;
a prefix is read as a folder, so give it up to its last ``/``)::

    <topic>-<topicId>/<partition>/<20-digit startOffset>-<segmentUuid>.{log,indexes,rsm-manifest}

A segment is listed only when its ``.rsm-manifest`` exists (the plugin writes it last: an
upload without one never finished). Pre-v1.0 buckets have one object per index instead of
``.indexes`` (suffixes ``index``, ``timeindex``, ``snapshot``, ``txnindex``,
``leader-epoch-checkpoint``); both forms are read. Start offset, end offset, leader epochs
and event time come from the manifest's ``remoteLogSegmentMetadata`` when it has one, else
the start offset from the name and the end is unknown (``None``: the next segment's start,
or the end of the bytes).

**Kafka's ``LocalTieredStorage``** (the test plugin of the docs' quick start), under the
location or its ``kafka-tiered-storage/`` folder::

    <topic>-<partition>-<topicId>/<20-digit startOffset>-<segmentUuid>.{log,index,timeindex,
        txnindex,snapshot,leader_epoch_checkpoint}

Names carry no end offset: it is read from the segment's tail (the last offset index entry
points near it; one small read). Leader epochs come from the ``.leader_epoch_checkpoint``
(the whole lineage up to the segment's end), clipped to the segment.

Uuids are Kafka's 22-character text form in both. Files that match neither pattern are
ignored (a bucket may hold other things).
"""

from __future__ import annotations

import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from seglog.errors import CorruptRemoteObjectError, UnsupportedRemoteSegmentError
from seglog.format.checkpoint import parse_leader_epoch_checkpoint
from seglog.format.reader import read_batches
from seglog.format.rsm_manifest import ChunkIndex, parse_manifest, split_indexes
from seglog.storage.remote_files import RemoteFile, RemoteFiles

AIVEN = "aiven"
LOCAL_TIERED_STORAGE = "local-tiered-storage"
LAYOUTS = (AIVEN, LOCAL_TIERED_STORAGE)
_UUID = r"[A-Za-z0-9_-]{22}"
_AIVEN_KEY = re.compile(rf"(?:.*/)?(.+)-({_UUID})/(\d+)/(\d{{20}})-({_UUID})\.([a-z-]+)")
_LOCAL_KEY = re.compile(rf"(?:.*/)?(.+)-(\d+)-({_UUID})/(\d{{20}})-({_UUID})(\.[a-z_]+)")
_AIVEN_LEGACY_INDEX = {
    "offset": "index",
    "timestamp": "timeindex",
    "producerSnapshot": "snapshot",
    "leaderEpoch": "leader-epoch-checkpoint",
    "transaction": "txnindex",
}
_LOCAL_INDEX = {
    "offset": ".index",
    "timestamp": ".timeindex",
    "producerSnapshot": ".snapshot",
    "leaderEpoch": ".leader_epoch_checkpoint",
    "transaction": ".txnindex",
}
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class RemoteSegment:
    """One uploaded segment: where its bytes are and what it holds (picklable)."""

    layout: str
    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int | None  # None: unknown (up to the next segment, or the bytes' end)
    log_path: str
    stored_size: int  # bytes of the stored .log object
    chunk_index: ChunkIndex | None  # None: the stored object is the segment as is
    compression: bool
    leader_epochs: tuple[tuple[int, int], ...] | None  # (epoch, start offset), in the segment
    event_timestamp_ms: int  # -1: unknown
    indexes_path: str | None  # Aiven's .indexes object (v1.0+)
    index_spans: tuple[tuple[str, int, int], ...]  # (name, position, size) in indexes_path
    index_paths: tuple[tuple[str, str], ...]  # (name, path): one object per index

    @property
    def original_size(self) -> int:
        """Size of the Kafka segment the object holds."""
        return self.stored_size if self.chunk_index is None else self.chunk_index.original_file_size


def list_segments(files: RemoteFiles, layout: str) -> dict[TP, list[RemoteSegment]]:
    """Every readable segment of the location, per topic-partition, sorted by start offset."""
    if layout == AIVEN:
        return _aiven(files)
    if layout == LOCAL_TIERED_STORAGE:
        return _local_tiered(files)
    raise ValueError(f"unknown tiered-storage layout {layout!r}; expected one of {LAYOUTS}")


def read_index(files: RemoteFiles, segment: RemoteSegment, name: str) -> bytes | None:
    """One of the segment's indexes (``offset``, ``timestamp``, ``producerSnapshot``,
    ``leaderEpoch``, ``transaction``) from either form; None when the segment has none."""
    for index, path in segment.index_paths:
        if index == name:
            return files.read_all(path)
    for index, position, size in segment.index_spans:
        if index == name:
            assert segment.indexes_path is not None
            return files.read_range(segment.indexes_path, position, size) if size else b""
    return None


def _aiven(files: RemoteFiles) -> dict[TP, list[RemoteSegment]]:
    groups: dict[tuple[str, str, int, int, str], dict[str, RemoteFile]] = defaultdict(dict)
    for item in files.list_files():
        match = _AIVEN_KEY.fullmatch(item.path)
        if match is None:
            continue
        topic, topic_id, partition, start, uuid, suffix = match.groups()
        groups[(topic, topic_id, int(partition), int(start), uuid)][suffix] = item
    wanted = [(key, objects) for key, objects in groups.items() if "rsm-manifest" in objects]
    manifest_files = [objects["rsm-manifest"] for _, objects in wanted]
    with ThreadPoolExecutor(max_workers=8) as pool:  # one small GET each, in parallel
        manifests = list(pool.map(lambda f: files.read_all(f.path, f.size), manifest_files))
    out: dict[TP, list[RemoteSegment]] = defaultdict(list)
    for ((topic, topic_id, partition, start, uuid), objects), raw in zip(
        wanted, manifests, strict=True
    ):
        name = files.describe(objects["rsm-manifest"].path)
        manifest = parse_manifest(raw, name=name)
        log = objects.get("log")
        if log is None:
            raise UnsupportedRemoteSegmentError(
                "the manifest has no .log object beside it (deleted while listing?)", path=name
            )
        if log.size != manifest.chunk_index.transformed_file_size:
            raise CorruptRemoteObjectError(
                f"the .log object has {log.size} bytes; the manifest's chunk index says "
                f"{manifest.chunk_index.transformed_file_size}",
                path=files.describe(log.path),
            )
        meta = manifest.metadata
        spans: tuple[tuple[str, int, int], ...] = ()
        paths: tuple[tuple[str, str], ...] = ()
        indexes = objects.get("indexes")
        if manifest.segment_indexes is not None:
            if indexes is None:
                raise UnsupportedRemoteSegmentError("the .indexes object is missing", path=name)
            spans = tuple((k, v[0], v[1]) for k, v in manifest.segment_indexes.items() if v)
        else:
            paths = tuple(
                (k, objects[s].path) for k, s in _AIVEN_LEGACY_INDEX.items() if s in objects
            )
        identity = not manifest.compression and all(
            c.transformed_size == c.original_size for c in manifest.chunk_index.chunks()
        )
        out[(topic, partition)].append(
            RemoteSegment(
                layout=AIVEN,
                topic=topic,
                topic_id=topic_id,
                partition=partition,
                segment_id=uuid,
                start_offset=start if meta is None else meta.start_offset,
                end_offset=None if meta is None else meta.end_offset,
                log_path=log.path,
                stored_size=log.size,
                chunk_index=None if identity else manifest.chunk_index,
                compression=manifest.compression,
                leader_epochs=None if meta is None else meta.segment_leader_epochs,
                event_timestamp_ms=-1 if meta is None else meta.event_timestamp_ms,
                indexes_path=None if indexes is None else indexes.path,
                index_spans=spans,
                index_paths=paths,
            )
        )
    return {tp: sorted(segs, key=lambda s: s.start_offset) for tp, segs in out.items()}


def check_indexes_object(files: RemoteFiles, segment: RemoteSegment) -> dict[str, bytes]:
    """All indexes of an Aiven v1.0+ segment, split from its ``.indexes`` object."""
    from seglog.format.rsm_manifest import SegmentManifest

    assert segment.indexes_path is not None
    data = files.read_all(segment.indexes_path)
    spans: dict[str, tuple[int, int] | None] = {k: (p, s) for k, p, s in segment.index_spans}
    manifest = SegmentManifest(ChunkIndex(1, 0, ()), spans, segment.compression, None)
    return split_indexes(data, manifest, name=files.describe(segment.indexes_path))


def _local_tiered(files: RemoteFiles) -> dict[TP, list[RemoteSegment]]:
    root = "kafka-tiered-storage" if files.is_dir("kafka-tiered-storage") else ""
    groups: dict[tuple[str, int, str, int, str], dict[str, RemoteFile]] = defaultdict(dict)
    for item in files.list_files(root):
        match = _LOCAL_KEY.fullmatch(item.path)
        if match is None:
            continue
        topic, partition, topic_id, start, uuid, suffix = match.groups()
        groups[(topic, int(partition), topic_id, int(start), uuid)][suffix] = item
    out: dict[TP, list[RemoteSegment]] = defaultdict(list)
    for (topic, partition, topic_id, start, uuid), objects in groups.items():
        log = objects.get(".log")
        if log is None:
            continue
        paths = tuple((k, objects[s].path) for k, s in _LOCAL_INDEX.items() if s in objects)
        epochs = None
        checkpoint = objects.get(".leader_epoch_checkpoint")
        if checkpoint is not None:
            name = files.describe(checkpoint.path)
            lineage = parse_leader_epoch_checkpoint(files.read_all(checkpoint.path), path=name)
            epochs = _clip_lineage([(e.epoch, e.start_offset) for e in lineage], start)
        out[(topic, partition)].append(
            RemoteSegment(
                layout=LOCAL_TIERED_STORAGE,
                topic=topic,
                topic_id=topic_id,
                partition=partition,
                segment_id=uuid,
                start_offset=start,
                end_offset=_tail_end_offset(files, log, objects.get(".index"), start),
                log_path=log.path,
                stored_size=log.size,
                chunk_index=None,
                compression=False,
                leader_epochs=epochs,
                event_timestamp_ms=-1,
                indexes_path=None,
                index_spans=(),
                index_paths=paths,
            )
        )
    return {tp: sorted(segs, key=lambda s: s.start_offset) for tp, segs in out.items()}


def _clip_lineage(lineage: list[tuple[int, int]], start: int) -> tuple[tuple[int, int], ...]:
    """The lineage's entries inside a segment starting at ``start`` (the first one moved up
    to ``start``), as Kafka's ``segmentLeaderEpochs``."""
    out: list[tuple[int, int]] = []
    for epoch, offset in lineage:
        if offset <= start:
            out = [(epoch, start)]
        else:
            out.append((epoch, offset))
    return tuple(out)


def _tail_end_offset(
    files: RemoteFiles, log: RemoteFile, index: RemoteFile | None, start: int
) -> int | None:
    """The last offset of a segment: scan from its last offset index entry to its end."""
    if log.size == 0:
        return None
    position = 0
    if index is not None and index.size >= 8:
        last = files.read_range(index.path, index.size - (index.size % 8) - 8, 8)
        position = int.from_bytes(last[4:8], "big")
        if not 0 <= position < log.size:
            position = 0
    data = files.read_range(log.path, position, log.size - position)
    batches, _end = read_batches(data)
    if not batches:
        return None
    return int(batches[-1].last_offset)
