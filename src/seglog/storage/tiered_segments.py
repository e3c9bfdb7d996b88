"""The original Kafka segment bytes of a tiered-storage segment, read in large windows.

:func:`iter_segment_bytes` yields the segment's bytes in order, in pieces of at least
``window`` bytes (the last may be shorter), each from one ranged read:

* a stored object that *is* the segment (LocalTieredStorage; Aiven with no compression):
  ``[0, window)``, ``[window, 2*window)``, ... of the object;
* Aiven zstd chunks: consecutive chunks are grouped until their stored bytes reach
  ``window``, the group is fetched in one read, and each chunk is decompressed on its own.
  Every chunk must decompress to exactly its original size (the chunk index says which),
  else :class:`~seglog.errors.CorruptRemoteObjectError` names the object and the chunk's
  stored position.

Nothing is cached between windows: memory is one window plus its decompressed chunks.
"""

from __future__ import annotations

from collections.abc import Iterator

import zstandard

from seglog.errors import CorruptRemoteObjectError
from seglog.format.rsm_manifest import Chunk
from seglog.storage.remote_files import READ_WINDOW_BYTES, RemoteFiles
from seglog.storage.tiered_layouts import RemoteSegment


def iter_segment_bytes(
    files: RemoteFiles, segment: RemoteSegment, window: int = READ_WINDOW_BYTES
) -> Iterator[bytes]:
    """The segment's original bytes, window by window (module docstring)."""
    window = max(1, window)
    if segment.chunk_index is None:
        for position in range(0, segment.stored_size, window):
            yield files.read_range(
                segment.log_path, position, min(window, segment.stored_size - position)
            )
        return
    group: list[Chunk] = []
    for chunk in segment.chunk_index.chunks():
        group.append(chunk)
        if sum(c.transformed_size for c in group) >= window:
            yield _read_group(files, segment, group)
            group = []
    if group:
        yield _read_group(files, segment, group)


def _read_group(files: RemoteFiles, segment: RemoteSegment, group: list[Chunk]) -> bytes:
    first = group[0].transformed_position
    size = sum(c.transformed_size for c in group)
    stored = files.read_range(segment.log_path, first, size)
    out = bytearray()
    for chunk in group:
        raw = stored[chunk.transformed_position - first :][: chunk.transformed_size]
        if segment.compression:
            try:
                data = zstandard.ZstdDecompressor().decompress(
                    raw, max_output_size=chunk.original_size
                )
            except zstandard.ZstdError as exc:
                raise _bad(files, segment, chunk, f"does not decompress as zstd: {exc}") from exc
        else:
            data = raw
        if len(data) != chunk.original_size:
            raise _bad(
                files, segment, chunk, f"holds {len(data)} bytes, expected {chunk.original_size}"
            )
        out += data
    return bytes(out)


def _bad(files: RemoteFiles, segment: RemoteSegment, chunk: Chunk, what: str) -> Exception:
    return CorruptRemoteObjectError(
        f"the chunk of original bytes {chunk.original_position}-"
        f"{chunk.original_position + chunk.original_size} {what}",
        position=chunk.transformed_position,
        path=files.describe(segment.log_path),
    )
