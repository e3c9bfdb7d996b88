"""Control records: transaction markers and KRaft control types (spec §3.5)."""

from __future__ import annotations

import struct

import pytest

from seglog.errors import CorruptRecordError
from seglog.format.batch import RecordBatch, encode_batch
from seglog.format.control import (
    ControlKey,
    ControlRecordType,
    EndTxnMarker,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
)
from seglog.format.reader import EndKind, read_batches
from seglog.format.records import Record

TS = 1_700_000_000_000


def test_type_ids_are_kafkas() -> None:
    assert {t.name: int(t) for t in ControlRecordType if t is not ControlRecordType.UNKNOWN} == {
        "ABORT": 0,
        "COMMIT": 1,
        "LEADER_CHANGE": 2,
        "SNAPSHOT_HEADER": 3,
        "SNAPSHOT_FOOTER": 4,
        "KRAFT_VERSION": 5,
        "KRAFT_VOTERS": 6,
    }


@pytest.mark.parametrize(
    ("control_type", "key"),
    [
        (ControlRecordType.ABORT, b"\x00\x00\x00\x00"),
        (ControlRecordType.COMMIT, b"\x00\x00\x00\x01"),
    ],
)
def test_marker_key_bytes(control_type: ControlRecordType, key: bytes) -> None:
    assert encode_control_key(control_type) == key
    decoded = decode_control_key(key)
    assert decoded == ControlKey(version=0, type_id=int(control_type))
    assert decoded.type is control_type


def test_marker_value_bytes() -> None:
    assert encode_end_txn_marker(3) == b"\x00\x00\x00\x00\x00\x03"
    assert decode_end_txn_marker(b"\x00\x00\x00\x00\x00\x03") == EndTxnMarker(0, 3)
    epoch = (1 << 31) - 1
    assert decode_end_txn_marker(encode_end_txn_marker(epoch)).coordinator_epoch == epoch
    assert decode_end_txn_marker(encode_end_txn_marker(-1)).coordinator_epoch == -1


@pytest.mark.parametrize("marker", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_marker_batch_round_trip(marker: ControlRecordType) -> None:
    record = Record(77, TS, encode_control_key(marker), encode_end_txn_marker(12))
    raw = encode_batch(
        [record],
        is_control=True,
        is_transactional=True,
        producer_id=9,
        producer_epoch=2,
        partition_leader_epoch=1,
    )
    assert len(raw) == 78  # 61 header + one 17-byte marker record
    batches, end = read_batches(raw)
    assert end.kind is EndKind.CLEAN
    (batch,) = batches
    assert isinstance(batch, RecordBatch)
    assert batch.is_control
    assert batch.is_transactional
    assert batch.base_sequence == -1
    (decoded,) = batch.records()
    assert decode_control_key(decoded.key).type is marker
    assert decode_end_txn_marker(decoded.value) == EndTxnMarker(0, 12)


@pytest.mark.parametrize("type_id", [7, 8, 100, 32767, -1, -32768])
def test_unknown_control_types_map_to_unknown(type_id: int) -> None:
    assert ControlRecordType.from_id(type_id) is ControlRecordType.UNKNOWN
    key = decode_control_key(struct.pack(">hh", 0, type_id))
    assert key.type is ControlRecordType.UNKNOWN
    assert key.type_id == type_id  # the raw id is kept


@pytest.mark.parametrize("type_id", range(7))
def test_known_control_types(type_id: int) -> None:
    assert int(ControlRecordType.from_id(type_id)) == type_id
    assert decode_control_key(struct.pack(">hh", 0, type_id)).type is ControlRecordType(type_id)


def test_higher_versions_are_read_like_version_0() -> None:
    key = decode_control_key(struct.pack(">hh", 3, 1) + b"future fields")
    assert key.version == 3
    assert key.type is ControlRecordType.COMMIT
    assert encode_control_key(ControlRecordType.ABORT, version=2) == b"\x00\x02\x00\x00"
    marker = decode_end_txn_marker(struct.pack(">hi", 5, 44) + b"more")
    assert marker == EndTxnMarker(5, 44)


@pytest.mark.parametrize("key", [None, b"", b"\x00", b"\x00\x00\x00"])
def test_short_or_null_keys_raise(key: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        decode_control_key(key)


@pytest.mark.parametrize("value", [None, b"", b"\x00\x00", b"\x00\x00\x00\x00\x00"])
def test_short_or_null_marker_values_raise(value: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        decode_end_txn_marker(value)


def test_negative_versions_raise() -> None:
    with pytest.raises(CorruptRecordError):
        decode_control_key(struct.pack(">hh", -1, 1))
    with pytest.raises(CorruptRecordError):
        decode_end_txn_marker(struct.pack(">hi", -1, 0))
