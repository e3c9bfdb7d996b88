"""``seglog dump-log`` on transaction files: producer ``.snapshot``s, ``.txnindex``, markers.

The oracle for a broker's snapshot is its own log: every producer entry a broker wrote names
the last data batch that producer appended (that batch is in the partition's ``.log``), and
its timestamp is that of the producer's latest batch below the snapshot's offset.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from corpus_location import corpus_files, corpus_params
from seglog.cli.main import main
from seglog.format.batch import RecordBatch
from seglog.format.control import build_end_txn_marker_batch
from seglog.format.crc import crc32c
from seglog.format.producer_snapshot import (
    ProducerSnapshotEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from seglog.format.reader import BatchReader
from seglog.format.txn_index import AbortedTxn, encode_aborted_txn

TS = 1_700_000_000_000
SNAPSHOT_LINE = re.compile(
    r"producerId: -?\d+ producerEpoch: -?\d+ coordinatorEpoch: -?\d+ "
    r"currentTxnFirstOffset: (OptionalLong\.empty|OptionalLong\[\d+\]) lastTimestamp: -?\d+ "
    r"(firstSequence: -?\d+ lastSequence: -?\d+ lastOffset: \d+ offsetDelta: -?\d+ "
    r"timestamp: -?\d+)?$"
)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _batches_of(directory: Path) -> dict[int, RecordBatch]:
    """Every v2 batch of the partition's ``.log`` files, by last offset."""
    out: dict[int, RecordBatch] = {}
    for log in sorted(directory.glob("*.log")):
        for batch in BatchReader(log.read_bytes(), verify_crc=False):
            if isinstance(batch, RecordBatch):
                out[batch.last_offset] = batch
    return out


@pytest.mark.parametrize("path", corpus_params((".snapshot",)))
def test_broker_snapshot_prints_kafka_lines_that_agree_with_its_log(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_cli(capsys, "dump-log", path)
    lines = out.splitlines()
    entries = decode_producer_snapshot(path.read_bytes(), path=str(path))
    assert (status, err) == (0, "")
    assert lines[0] == f"Dumping {path}"
    assert len(lines) == 1 + len(entries)
    batches = _batches_of(path.parent)
    for line, entry in zip(lines[1:], entries, strict=True):
        assert SNAPSHOT_LINE.match(line), line
        assert line.startswith(f"producerId: {entry.producer_id} ")
        if entry.last_offset < 0:
            continue
        batch = batches[entry.last_offset]  # the producer's last batch is in the log
        assert batch.producer_id == entry.producer_id
        assert batch.producer_epoch == entry.producer_epoch
        assert batch.last_sequence == entry.last_sequence
        # lastTimestamp is that of the producer's latest batch, a marker ending its
        # transaction included (Kafka's appendEndTxnMarker moves it on)
        snapshot_end = int(path.name.split(".")[0])
        latest = max(
            (b for b in batches.values() if b.producer_id == entry.producer_id),
            key=lambda b: b.last_offset if b.last_offset < snapshot_end else -1,
        )
        assert latest.max_timestamp == entry.timestamp
        assert f"firstSequence: {batch.base_sequence} " in line
        assert f"offsetDelta: {batch.last_offset - batch.base_offset} " in line


def test_the_corpus_holds_snapshots_with_producers() -> None:
    files = corpus_files((".snapshot",))
    if not files:
        pytest.skip("Kafka corpus not found (../shared/corpus or SEGLOG_CORPUS)")
    with_entries = [p for p in files if decode_producer_snapshot(p.read_bytes(), path=str(p))]
    assert with_entries, "expected at least one broker snapshot holding a producer"


def test_seglog_snapshot_exact_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = [
        # an open transaction since offset 5, last batch offsets 5..7, sequences 0..2
        ProducerSnapshotEntry(1000, 0, 2, 7, 2, TS, -1, 5),
        # no retained batch (marker-only after an epoch bump): the line ends after a space
        ProducerSnapshotEntry(1001, 3, -1, -1, 0, TS + 1, 4, -1),
        # a sequence range wrapping past Integer.MAX_VALUE: firstSequence 2147483646
        ProducerSnapshotEntry(1002, 1, 1, 20, 3, TS + 2, 0, -1),
    ]
    path = tmp_path / "00000000000000000021.snapshot"
    path.write_bytes(encode_producer_snapshot(entries))
    status, out, err = run_cli(capsys, "dump-log", path)
    assert out.splitlines() == [
        f"Dumping {path}",
        "producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong[5] lastTimestamp: {TS} firstSequence: 0 lastSequence: 2 lastOffset: 7 "
        f"offsetDelta: 2 timestamp: {TS}",
        "producerId: 1001 producerEpoch: 3 coordinatorEpoch: 4 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {TS + 1} ",
        "producerId: 1002 producerEpoch: 1 coordinatorEpoch: 0 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {TS + 2} firstSequence: 2147483646 lastSequence: 1 "
        f"lastOffset: 20 offsetDelta: 3 timestamp: {TS + 2}",
    ]
    assert (status, err) == (0, "")

    status, out, err = run_cli(capsys, "dump-log", "--json", path)
    objects = [json.loads(line) for line in out.splitlines()]
    assert objects[0] == {
        "file": str(path),
        "producerId": 1000,
        "producerEpoch": 0,
        "coordinatorEpoch": -1,
        "currentTxnFirstOffset": 5,
        "lastTimestamp": TS,
        "firstSequence": 0,
        "lastSequence": 2,
        "lastOffset": 7,
        "offsetDelta": 2,
        "timestamp": TS,
    }
    assert objects[1]["currentTxnFirstOffset"] is None
    assert [objects[1][k] for k in ("firstSequence", "lastSequence", "lastOffset")] == [None] * 3
    assert objects[2]["firstSequence"] == 2147483646
    assert (status, err) == (0, "")


def test_empty_snapshot_prints_only_its_heading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "00000000000000000000.snapshot"
    path.write_bytes(encode_producer_snapshot([]))
    assert run_cli(capsys, "dump-log", path) == (0, f"Dumping {path}\n", "")


def _with_crc(data: bytes) -> bytes:
    """``data`` with its CRC field recomputed (damage the CRC alone would not catch)."""
    return data[:2] + struct.pack(">I", crc32c(data[6:])) + data[6:]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: data[:-1], "CRC mismatch"),
        (lambda data: _with_crc(data[:-1]), "bytes for 1 entries"),
        (lambda data: data[:20] + bytes([data[20] ^ 1]) + data[21:], "CRC mismatch"),
        (lambda data: b"\x00\x02" + data[2:], "version 2"),
    ],
    ids=["truncated", "short-with-valid-crc", "flipped-bit", "unknown-version"],
)
def test_damaged_snapshot_is_an_error_and_the_next_file_is_still_dumped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: object, reason: str
) -> None:
    good = encode_producer_snapshot([ProducerSnapshotEntry(7, 0, 0, 0, 0, TS, -1, -1)])
    assert callable(damage)
    bad_path = tmp_path / "00000000000000000001.snapshot"
    bad_path.write_bytes(damage(good))
    good_path = tmp_path / "00000000000000000002.snapshot"
    good_path.write_bytes(good)
    status, out, err = run_cli(capsys, "dump-log", bad_path, good_path)
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {bad_path}", f"Dumping {good_path}"]  # no bad entry shown
    assert lines[2].startswith("producerId: 7 ")
    assert err.startswith(f"seglog: error: {bad_path}") and reason in err
    assert status == 1


def test_txn_index_lines_and_abort_marker_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    txns = [AbortedTxn(1000, 5, 9, 10), AbortedTxn(1001, 11, 14, 12)]
    index = tmp_path / "00000000000000000000.txnindex"
    index.write_bytes(b"".join(encode_aborted_txn(t) for t in txns))
    log = tmp_path / "00000000000000000009.log"
    log.write_bytes(
        build_end_txn_marker_batch(
            1000, 2, commit=False, coordinator_epoch=7, timestamp_ms=TS, base_offset=9
        )
        + build_end_txn_marker_batch(
            1001, 0, commit=True, coordinator_epoch=0, timestamp_ms=TS, base_offset=10
        )
    )
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", index, log)
    lines = out.splitlines()
    assert lines[:3] == [
        f"Dumping {index}",
        "version: 0 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 10",
        "version: 0 producerId: 1001 firstOffset: 11 lastOffset: 14 lastStableOffset: 12",
    ]
    records = [line for line in lines if line.startswith("| ")]
    assert records == [
        f"| offset: 9 CreateTime: {TS} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 7",
        f"| offset: 10 CreateTime: {TS} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 0",
    ]
    batch_lines = [line for line in lines if line.startswith("baseOffset: ")]
    assert all("isTransactional: true isControl: true" in line for line in batch_lines)
    assert "producerId: 1000 producerEpoch: 2 " in batch_lines[0]
    assert (status, err) == (0, "")


def test_snapshots_seglog_writes_print_its_producer_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``.snapshot`` a roll and a clean close write: one line per producer, as the
    producer state holds it (producer 7's transaction open since offset 3)."""
    from seglog.clock import ManualClock
    from seglog.config import LogConfig
    from seglog.engine.log import Log
    from seglog.format.topic_names import TopicPartition
    from seglog.testing.transactions import append_idempotent, append_transactional

    log = Log.open(tmp_path / "t-0", TopicPartition("t", 0), LogConfig(), clock=ManualClock(TS))
    append_idempotent(log, 5, 2, 0, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])  # 0-2
    append_transactional(log, 7, 0, 0, [(b"d", b"4")])  # 3
    log.roll()
    append_idempotent(log, 5, 2, 3, [(b"e", b"5")])  # 4
    log.close()
    at_roll = tmp_path / "t-0" / "00000000000000000004.snapshot"
    at_close = tmp_path / "t-0" / "00000000000000000005.snapshot"
    status, out, err = run_cli(capsys, "dump-log", at_roll, at_close)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"Dumping {at_roll}",
        f"producerId: 5 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {TS} firstSequence: 0 lastSequence: 2 "
        f"lastOffset: 2 offsetDelta: 2 timestamp: {TS}",
        f"producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong[3] lastTimestamp: {TS} firstSequence: 0 lastSequence: 0 "
        f"lastOffset: 3 offsetDelta: 0 timestamp: {TS}",
        f"Dumping {at_close}",
        f"producerId: 5 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {TS} firstSequence: 3 lastSequence: 3 "
        f"lastOffset: 4 offsetDelta: 0 timestamp: {TS}",
        f"producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong[3] lastTimestamp: {TS} firstSequence: 0 lastSequence: 0 "
        f"lastOffset: 3 offsetDelta: 0 timestamp: {TS}",
    ]
