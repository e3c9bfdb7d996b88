"""Reading the KRaft metadata image of a log directory, read-only.

A KRaft node keeps its metadata in ``<root>/__cluster_metadata-0``: ``.log`` segments of
record batches and snapshots named ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``
(the same batch format; a snapshot holds every record below its end offset, folded). The
image is built as the broker builds it at startup: the newest snapshot (highest end offset),
then every data record of the log at or above that end offset, in offset order (see
:class:`seglog.format.kraft_metadata.MetadataImage` for the fold). Control batches (leader
changes, snapshot header/footer, voters) carry no metadata and are skipped.

Nothing here writes: the directory belongs to the KRaft quorum, never to seglog. A batch or
record that cannot be decoded raises :class:`~seglog.errors.CorruptRecordError` naming the
file and the position (batch) or offset (record); a torn last batch of the newest segment
(a node that died mid-write) ends the log there, as the broker's recovery would.
"""

from __future__ import annotations

import re
from pathlib import Path

from seglog.errors import CorruptRecordError
from seglog.format.batch import RecordBatch
from seglog.format.kraft_metadata import MetadataImage, decode_metadata_record
from seglog.format.reader import BatchReader, EndKind
from seglog.storage.files import read_file_bytes

METADATA_PARTITION_DIR = "__cluster_metadata-0"
_CHECKPOINT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
METADATA_FILE_MAX_BYTES = 1 << 30  # one snapshot or segment; a limit, not a Kafka rule


def has_kraft_metadata(root: Path) -> bool:
    """Whether ``root`` holds a KRaft metadata log or snapshot."""
    directory = root / METADATA_PARTITION_DIR
    if not directory.is_dir():
        return False
    return any(
        _CHECKPOINT_NAME.match(p.name) or _SEGMENT_NAME.match(p.name) for p in directory.iterdir()
    )


def _fold_file(image: MetadataImage, path: Path, min_offset: int, *, is_log: bool) -> None:
    data = read_file_bytes(path, max_bytes=METADATA_FILE_MAX_BYTES)
    reader = BatchReader(data)
    for batch in reader:
        if not isinstance(batch, RecordBatch):
            raise CorruptRecordError(
                "a legacy (v0/v1) message in the KRaft metadata",
                position=batch.position,
                path=str(path),
            )
        if batch.is_control or batch.base_offset + batch.last_offset_delta < min_offset:
            continue
        try:
            records = batch.records()
        except CorruptRecordError as exc:
            raise exc.at(path=str(path)) from exc
        for record in records:
            if record.offset < min_offset or record.value is None:
                continue
            try:
                decoded = decode_metadata_record(record.value)
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    f"metadata record at offset {record.offset}: {exc.reason}",
                    position=batch.position,
                    path=str(path),
                ) from exc
            if decoded is not None:
                image.apply(decoded)
    end = reader.end
    assert end is not None
    if end.kind is EndKind.CORRUPT or (end.kind is EndKind.TORN_TAIL and not is_log):
        raise end.to_error(str(path))


def read_metadata_image(root: Path) -> MetadataImage | None:
    """The metadata image of ``root`` (None when it holds no KRaft metadata)."""
    if not has_kraft_metadata(root):
        return None
    directory = root / METADATA_PARTITION_DIR
    snapshots = sorted(
        (int(m.group(1)), p)
        for p in directory.iterdir()
        if (m := _CHECKPOINT_NAME.match(p.name)) is not None
    )
    segments = sorted(
        (int(m.group(1)), p)
        for p in directory.iterdir()
        if (m := _SEGMENT_NAME.match(p.name)) is not None
    )
    image = MetadataImage()
    start = 0
    if snapshots:
        start, newest = snapshots[-1]
        _fold_file(image, newest, 0, is_log=False)
    for index, (base, path) in enumerate(segments):
        next_base = segments[index + 1][0] if index + 1 < len(segments) else None
        if next_base is not None and next_base <= start:
            continue  # wholly inside the snapshot
        del base
        _fold_file(image, path, start, is_log=True)
    return image
