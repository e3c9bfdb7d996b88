"""The transaction formats: ``.txnindex`` entries, producer ``.snapshot`` files, markers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from corpus_location import corpus_params
from seglog.errors import CorruptIndexError, CorruptSnapshotError
from seglog.format.batch import decode_records, parse_batch_header
from seglog.format.control import (
    ControlRecordType,
    build_end_txn_marker_batch,
    decode_control_key,
    decode_end_txn_marker,
)
from seglog.format.crc import crc32c
from seglog.format.producer_snapshot import (
    ProducerSnapshotEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from seglog.format.txn_index import AbortedTxn, decode_txn_index, encode_aborted_txn

ENTRY = ProducerSnapshotEntry(
    producer_id=1000,
    producer_epoch=3,
    last_sequence=41,
    last_offset=977,
    offset_delta=9,
    timestamp=1_700_000_000_000,
    coordinator_epoch=7,
    current_txn_first_offset=968,
)


def test_txn_index_entry_is_kafkas_34_byte_layout() -> None:
    txn = AbortedTxn(producer_id=5, first_offset=10, last_offset=20, last_stable_offset=21)
    data = encode_aborted_txn(txn)
    assert data == struct.pack(">hqqqq", 0, 5, 10, 20, 21)
    assert decode_txn_index(data * 3, path="x.txnindex") == [txn] * 3


def test_txn_index_rejects_torn_entries_and_unknown_versions() -> None:
    good = encode_aborted_txn(AbortedTxn(1, 2, 3, 4))
    with pytest.raises(CorruptIndexError, match="not a multiple of 34") as torn:
        decode_txn_index(good + good[:10], path="7.txnindex")
    assert torn.value.path == "7.txnindex" and torn.value.position == 34
    with pytest.raises(CorruptIndexError, match="version 1") as versioned:
        decode_txn_index(good + b"\x00\x01" + good[2:], path="7.txnindex")
    assert versioned.value.position == 34


def test_snapshot_layout_version_crc_and_entries() -> None:
    data = encode_producer_snapshot([ENTRY])
    assert len(data) == 10 + 46
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1) and crc == crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (
        1000,
        3,
        41,
        977,
        9,
        1_700_000_000_000,
        7,
        968,
    )
    assert decode_producer_snapshot(data, path="s") == [ENTRY]
    assert decode_producer_snapshot(encode_producer_snapshot([]), path="s") == []


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:8], "shorter than its 10-byte header"),
        (lambda d: b"\x00\x02" + d[2:], "version 2"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "CRC mismatch"),
    ],
)
def test_damaged_snapshots_are_typed_errors(damage, message) -> None:  # type: ignore[no-untyped-def]
    data = damage(encode_producer_snapshot([ENTRY, ENTRY]))
    with pytest.raises(CorruptSnapshotError, match=message) as error:
        decode_producer_snapshot(data, path="00000000000000000042.snapshot")
    assert error.value.path == "00000000000000000042.snapshot"


def test_snapshot_count_must_match_length() -> None:
    body = struct.pack(">i", 2) + encode_producer_snapshot([ENTRY])[10:]
    data = struct.pack(">hI", 1, crc32c(body)) + body
    with pytest.raises(CorruptSnapshotError, match="for 2 entries"):
        decode_producer_snapshot(data, path="s")


@pytest.mark.parametrize("path", corpus_params((".snapshot",)))
def test_broker_written_snapshots_decode_and_reencode_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    entries = decode_producer_snapshot(data, path=str(path))
    assert encode_producer_snapshot(entries) == data
    for entry in entries:
        assert entry.producer_id >= 0 and entry.producer_epoch >= 0


@pytest.mark.parametrize("commit", [True, False])
def test_marker_batch_is_78_bytes_and_decodes(commit: bool) -> None:
    data = build_end_txn_marker_batch(
        42, 2, commit=commit, coordinator_epoch=5, timestamp_ms=1234, base_offset=100
    )
    assert len(data) == 78
    batch = parse_batch_header(data, 0)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 2, -1)
    (record,) = decode_records(data[61:], 1, batch.base_offset, batch.base_timestamp)
    assert record.offset == 100
    key = decode_control_key(record.key)
    assert key.type is (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    assert decode_end_txn_marker(record.value).coordinator_epoch == 5
