"""Read the records of a broker's ``__remote_log_metadata`` partitions (read-only).

The location (local directory or object store, through :class:`RemoteFiles`) is a broker
log directory, or a copy of one, holding ``__remote_log_metadata-<n>/`` partition
directories: ordinary Kafka logs. Each partition's ``.log`` segments are read in base-offset
order, every batch whose CRC holds is decoded, control batches (transaction markers) are
skipped, and each non-null value is decoded by
:func:`seglog.format.remote_log_metadata.decode_remote_log_metadata`. A torn tail of the
*last* segment (a broker that died mid-append) ends that partition, as Kafka's recovery
would truncate it; damage anywhere else raises (a committed record could be hidden by it).

Records of one topic-partition all go to one metadata partition, so per-partition order
is the order the broker applied them; the partitions are returned in number order.
"""

from __future__ import annotations

import re
from collections import defaultdict

from seglog.errors import CorruptRecordError
from seglog.format.reader import EndKind, read_batches
from seglog.format.remote_log_metadata import RemoteLogMetadata, decode_remote_log_metadata
from seglog.storage.remote_files import RemoteFile, RemoteFiles

TOPIC = "__remote_log_metadata"
_SEGMENT = re.compile(rf"(?:.*/)?{TOPIC}-(\d+)/(\d{{20}})\.log")


def read_remote_log_metadata(files: RemoteFiles) -> list[RemoteLogMetadata]:
    """Every metadata record under ``files``, partition by partition, in offset order."""
    partitions: dict[int, list[RemoteFile]] = defaultdict(list)
    for item in files.list_files():
        match = _SEGMENT.fullmatch(item.path)
        if match is not None:
            partitions[int(match.group(1))].append(item)
    if not partitions:
        raise CorruptRecordError(
            f"no {TOPIC}-<n> partition directory with a .log segment here",
            path=files.describe(""),
        )
    out: list[RemoteLogMetadata] = []
    for number in sorted(partitions):
        segments = sorted(partitions[number], key=lambda f: f.path)
        for i, segment in enumerate(segments):
            name = files.describe(segment.path)
            data = files.read_all(segment.path, segment.size)
            batches, end = read_batches(data)
            if not end.is_clean and not (i == len(segments) - 1 and end.kind is EndKind.TORN_TAIL):
                raise end.to_error(name)
            for batch in batches:
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.value is None:
                        continue
                    where = f"{name} offset {record.offset}"
                    out.append(decode_remote_log_metadata(bytes(record.value), where=where))
    return out
