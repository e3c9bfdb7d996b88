"""On every broker-written ``.log`` and fetched ``.records`` file: kernel == twin == decoder.

For each corpus file (``../shared/corpus``, never copied here; skipped with the reason when
absent), and for torn prefixes of it:

* the numba batch walk and its Python twin frame the same entries and stop identically;
* ``scan_columns`` with numba, with the twin, and the Python reader + ``batch.records()``
  give the same records (offset, written and reported timestamp, key, value, header count,
  batch) and the same ending (kind, position, reason).

Some files end badly on purpose: kafka-rust's ``*invalid_crc*`` must end CORRUPT at the bad
entry; kafkajs' ``*partial*`` and ``*index_out_of_range*`` must end in a torn tail. Records
are compared up to where the Python reader stops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from corpus_location import corpus_params
from seglog import kernels
from seglog.errors import CorruptRecordError
from seglog.format.columnar import scan_columns
from seglog.format.reader import EndKind, read_batches

pytestmark = pytest.mark.compat

SUFFIXES = (".log", ".records")
CORPUS = corpus_params(SUFFIXES)


def decoder_view(data: bytes) -> tuple[Any, ...]:
    """Records and ending as the Python reader and ``batch.records()`` see them."""
    batches, end = read_batches(data)
    rows = []
    for index, batch in enumerate(batches):
        if batch.is_control:
            continue
        for record in batch.records():
            rows.append(
                (
                    record.offset,
                    record.timestamp,
                    batch.reported_timestamp(record),
                    record.key,
                    record.value,
                    len(record.headers),
                    index,
                )
            )
    return rows, end, [batch.position for batch in batches]


def columns_view(data: bytes, *, use_numba: bool) -> tuple[Any, ...]:
    """The same facts from ``scan_columns``."""
    columns = scan_columns(data, use_numba=use_numba)
    stored = columns.data.tobytes()

    def spans(positions: Any, lengths: Any) -> list[bytes | None]:
        return [
            None if n < 0 else stored[p : p + n]
            for p, n in zip(positions.tolist(), lengths.tolist(), strict=True)
        ]

    rows = list(
        zip(
            columns.offset.tolist(),
            columns.timestamp.tolist(),
            columns.reported_timestamp().tolist(),
            spans(columns.key_position, columns.key_length),
            spans(columns.value_position, columns.value_length),
            columns.header_count.tolist(),
            columns.batch_index.tolist(),
            strict=True,
        )
    )
    return rows, columns.end, columns.batches.position.tolist()


def assert_all_agree(data: bytes) -> Any:
    """Kernel walk == twin walk, and numba columns == twin columns == the decoder."""
    array = np.frombuffer(data, dtype=np.uint8)
    compiled = kernels.walk_batches(array, use_numba=True)
    twin = kernels.walk_batches(array, use_numba=False)
    np.testing.assert_array_equal(compiled.frames, twin.frames)
    assert (compiled.end_code, compiled.end_position, compiled.detail_a) == (
        twin.end_code,
        twin.end_position,
        twin.detail_a,
    )
    expected = decoder_view(data)
    assert columns_view(data, use_numba=True) == expected
    assert columns_view(data, use_numba=False) == expected
    return expected


@pytest.mark.parametrize("path", CORPUS)
def test_kernel_twin_and_decoder_agree_on_corpus_file(path: Path) -> None:
    data = path.read_bytes()
    _, end, positions = assert_all_agree(data)
    if "invalid_crc" in path.name:
        assert end.kind is EndKind.CORRUPT
        assert "CRC" in end.reason
    elif "partial" in path.name or "index_out_of_range" in path.name:
        assert end.kind is EndKind.TORN_TAIL
    else:
        assert end.kind is EndKind.CLEAN, end
        assert len(positions) > 0


@pytest.mark.parametrize("path", CORPUS)
def test_torn_prefixes_of_corpus_file(path: Path) -> None:
    data = path.read_bytes()
    _, _, positions = decoder_view(data)
    # Cut inside the first two entries (every framing stage: offset, size, magic, header,
    # records), and one byte short of the end when that is not already one of them.
    cuts = {len(data) - 1} if len(positions) <= 2 else set()
    for position in positions[:2]:
        cuts.update({position + 5, position + 14, position + 20, position + 70})
    for cut in sorted(c for c in cuts if 0 < c < len(data)):
        _, end, _ = assert_all_agree(data[:cut])
        assert end.kind in (EndKind.TORN_TAIL, EndKind.CORRUPT), (cut, end)


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_file_with_a_flipped_record_byte_never_returns_it(path: Path) -> None:
    """A changed byte inside a batch's records is caught (CRC) and never returned as data."""
    batches, _ = read_batches(path.read_bytes())
    if not batches:
        pytest.skip("no whole entry to damage")
    victim = batches[min(len(batches) // 2, 3)]
    # The scan ends at the damaged entry: the bytes after the next entry add nothing.
    data = bytearray(path.read_bytes()[: victim.position + 2 * victim.size_in_bytes])
    data[victim.position + victim.size_in_bytes - 1] ^= 0x5A
    damaged = bytes(data)
    try:
        _, end, positions = assert_all_agree(damaged)
    except CorruptRecordError:  # pragma: no cover - the CRC catches it before the records
        pytest.fail("a CRC-checked scan raised instead of ending at the damaged batch")
    assert end.kind is EndKind.CORRUPT
    assert end.position == victim.position
    assert victim.position not in positions
