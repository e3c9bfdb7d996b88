"""``__transaction_state`` record formats: a real broker's records byte for byte, hand-laid v0
and v1 bytes, Java's hashCode partitioning, round trips and damaged bytes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.errors import CorruptTxnRecordError, InvalidRecordError
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import (
    TransactionLogEntry,
    TxnState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    transaction_partition,
    value_version,
)
from support.kafka_oracle import read_partition_dir_with_kafka_python

CORPUS_PARTITION = "broker/itumelengmogase-cp-kraft/__transaction_state-44"
TS = 1_700_000_000_000
TOPIC = "_confluent-ksql-default__command_topic"


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def _corpus_partition() -> Path:
    root = corpus_root()
    if root is None or not (root / CORPUS_PARTITION).is_dir():
        pytest.skip(NO_CORPUS_REASON)
    return root / CORPUS_PARTITION


def test_every_record_of_a_brokers_partition_round_trips_byte_for_byte() -> None:
    records = read_partition_dir_with_kafka_python(_corpus_partition())
    assert len(records) == 4
    states = []
    for _, _, key, value, _ in records:
        assert key is not None and value is not None
        txn_id = decode_key(key)
        entry = decode_value(value)
        assert encode_key(txn_id) == key
        assert encode_value(entry, value_version(value)) == value
        assert encode_value(entry) == value  # seglog's default version is the broker's here
        assert transaction_partition(txn_id) == 44  # the partition the broker put it in
        states.append(entry.state)
        assert (entry.producer_id, entry.producer_epoch) == (0, 0)
        assert entry.transaction_timeout_ms == 60_000
    assert states == [
        TxnState.EMPTY,
        TxnState.ONGOING,
        TxnState.PREPARE_COMMIT,
        TxnState.COMPLETE_COMMIT,
    ]
    ongoing = decode_value(records[1][3])  # type: ignore[arg-type]
    assert ongoing.partitions == (TopicPartition(TOPIC, 0),)
    assert ongoing.start_timestamp_ms == ongoing.last_update_timestamp_ms == 1728561475379
    assert decode_value(records[0][3]).start_timestamp_ms == -1  # type: ignore[arg-type]
    assert decode_value(records[3][3]).partitions == ()  # type: ignore[arg-type]


ONGOING = TransactionLogEntry(
    7, 3, 60000, TxnState.ONGOING, (TopicPartition("a", 1), TopicPartition("b", 0)), TS, TS - 5
)


def _v0_hex(status: str, partitions: str) -> bytes:
    return h(
        f"0000 0000000000000007 0003 0000ea60 {status} {partitions} "
        "0000018bcfe56800 0000018bcfe567fb"
    )


def test_v0_layout() -> None:
    parts = "00000002 0001 61 00000001 00000001 0001 62 00000001 00000000"
    assert encode_value(ONGOING) == _v0_hex("01", parts)
    assert decode_value(_v0_hex("01", parts)) == ONGOING
    empty = TransactionLogEntry(7, 3, 60000, TxnState.EMPTY, (), TS, TS - 5)
    assert encode_value(empty) == _v0_hex("00", "ffffffff")  # Empty: a null array
    done = TransactionLogEntry(7, 3, 60000, TxnState.COMPLETE_ABORT, (), TS, TS - 5)
    assert encode_value(done) == _v0_hex("05", "00000000")  # Complete*: an empty array
    assert encode_key("tx") == h("0000 0002 7478")


def test_v1_layout_with_tagged_fields() -> None:
    entry = TransactionLogEntry(
        7,
        3,
        60000,
        TxnState.PREPARE_COMMIT,
        (TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("a", 2)),
        TS,
        TS - 5,
        previous_producer_id=6,
        next_producer_id=-1,
        client_transaction_version=2,
    )
    expected = h(
        "0001 0000000000000007 0003 0000ea60 02 "
        "03 02 61 03 00000001 00000002 00 02 62 02 00000000 00 "
        "0000018bcfe56800 0000018bcfe567fb "
        "02 00 08 0000000000000006 02 02 0002"
    )
    assert encode_value(entry) == expected  # a v1-only field set: version 1
    decoded = decode_value(expected)
    # Partitions come back grouped by topic, as Kafka writes them.
    assert decoded.partitions == (
        TopicPartition("a", 1),
        TopicPartition("a", 2),
        TopicPartition("b", 0),
    )
    assert (decoded.previous_producer_id, decoded.client_transaction_version) == (6, 2)
    assert encode_value(decoded) == expected
    # v1 of an entry at the defaults: an empty tag buffer; v0 of a v1 entry drops the tags.
    assert encode_value(ONGOING, 1)[-1:] == b"\x00"
    assert decode_value(encode_value(ONGOING, 1)) == ONGOING
    assert value_version(encode_value(entry, 0)) == 0


def test_unknown_tags_are_skipped() -> None:
    base = encode_value(ONGOING, 1)[:-1]
    assert decode_value(base + h("01 09 02 abcd")) == ONGOING


def test_state_names_are_kafkas() -> None:
    assert [str(s) for s in TxnState] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]


def test_partition_is_javas_hash() -> None:
    # Java: Utils.abs("my-txn".hashCode()) % 50; hashCode computed by hand over UTF-16 units.
    h32 = 0
    for ch in "my-txn":
        h32 = (31 * h32 + ord(ch)) & 0xFFFFFFFF
    signed = h32 - (1 << 32) if h32 & 0x80000000 else h32
    assert transaction_partition("my-txn") == abs(signed) % 50
    assert transaction_partition("default_", 50) == 44
    assert transaction_partition("default_", 1) == 0


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (h("0001 0002 7478"), "version 1"),
        (h("0000 0005 7478"), "transactionalId"),
        (h("00"), "version"),
    ],
)
def test_damaged_keys(data: bytes, fragment: str) -> None:
    with pytest.raises(CorruptTxnRecordError, match=fragment):
        decode_key(data)


def test_null_key() -> None:
    with pytest.raises(CorruptTxnRecordError, match="null"):
        decode_key(None)


def test_damaged_values() -> None:
    good = encode_value(ONGOING)
    with pytest.raises(CorruptTxnRecordError, match="version 2") as info:
        decode_value(b"\x00\x02" + good[2:])
    assert info.value.position == 0
    with pytest.raises(CorruptTxnRecordError, match="transactionStatus 9") as info:
        decode_value(good[:16] + b"\x09" + good[17:])
    assert info.value.position == 16
    with pytest.raises(CorruptTxnRecordError, match="transactionStartTimestampMs"):
        decode_value(good[:-3])
    with pytest.raises(CorruptTxnRecordError, match="partitionIds"):
        decode_value(good[:17] + h("00000001 0001 61 7fffffff"))
    tagged = encode_value(ONGOING, 1)[:-1] + h("01 00 02 0001")
    with pytest.raises(CorruptTxnRecordError, match="previousProducerId has 2 bytes"):
        decode_value(tagged)


def test_refused_writes() -> None:
    with pytest.raises(InvalidRecordError, match="Empty transaction has no partitions"):
        encode_value(
            TransactionLogEntry(1, 0, 1, TxnState.EMPTY, (TopicPartition("a", 0),), TS, TS)
        )
    with pytest.raises(InvalidRecordError, match="version 2"):
        encode_value(ONGOING, 2)
    with pytest.raises(InvalidRecordError, match="out of range"):
        encode_value(TransactionLogEntry(1, 1 << 20, 1, TxnState.ONGOING, (), TS, TS))


_TP = st.builds(
    TopicPartition, st.text("abc._-", min_size=1, max_size=5), st.integers(0, 2**31 - 1)
)


@given(
    pid=st.integers(-(2**63), 2**63 - 1),
    epoch=st.integers(-(2**15), 2**15 - 1),
    state=st.sampled_from(list(TxnState)),
    tps=st.lists(_TP, max_size=6, unique=True),
    prev=st.integers(-1, 2**40),
    client=st.integers(0, 2),
    version=st.sampled_from([None, 0, 1]),
)
def test_round_trip(
    pid: int,
    epoch: int,
    state: TxnState,
    tps: list[TopicPartition],
    prev: int,
    client: int,
    version: int | None,
) -> None:
    partitions = () if state == TxnState.EMPTY else tuple(sorted(tps, key=lambda tp: tp.topic))
    entry = TransactionLogEntry(pid, epoch, 900000, state, partitions, TS, -1, prev, -1, client)
    data = encode_value(entry, version)
    decoded = decode_value(data)
    if value_version(data) == 1 or version is None:
        assert decoded == entry
        assert encode_value(decoded, value_version(data)) == data
    else:
        assert decoded.partitions == entry.partitions and decoded.state == entry.state
    assert decode_key(encode_key("t")) == "t"
    assert struct.unpack(">h", data[:2])[0] == value_version(data)
