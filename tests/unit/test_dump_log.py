"""``seglog dump-log``: Kafka's kafka-dump-log.sh text (spec §18), JSON, checks and errors."""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from seglog import __version__
from seglog.cli.main import main
from seglog.format.batch import assemble_batch, encode_batch, encode_record
from seglog.format.index import (
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_entry,
    encode_offset_index,
    encode_time_entry,
    encode_time_index,
)
from seglog.format.names import index_file_name, log_file_name, time_index_file_name
from seglog.format.records import Header, Record

TS = 1_700_000_000_000

# Spec §3.8 Example A (83 bytes) and Example B (COMMIT marker, 78 bytes), verbatim.
EXAMPLE_A = bytes.fromhex(
    "0000000000000000 00000047 00000000 02 00be233d 0000 00000001"
    "0000018bcfe56800 0000018bcfe56805 ffffffffffffffff ffff ffffffff 00000002"
    "10 00 00 00 02 6b 02 76 00"
    "18 00 0a 02 04 6b32 01 02 02 68 02 78"
)
EXAMPLE_B = bytes.fromhex(
    "000000000000000a 00000042 00000000 02 0e5f7535 0030 00000000"
    "0000018bcfe56800 0000018bcfe56800 00000000000003e8 0005 ffffffff 00000001"
    "20 00 00 00 08 0000 0001 0c 0000 00000003 00"
)

EXAMPLE_A_BATCH_LINE = (
    "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: 83 "
    "magic: 2 compresscodec: none crc: 12460861 isvalid: true"
)
EXAMPLE_B_BATCH_LINE = (
    "baseOffset: 10 lastOffset: 10 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 "
    "producerEpoch: 5 partitionLeaderEpoch: 0 isTransactional: true isControl: true "
    "deleteHorizonMs: OptionalLong.empty position: 83 CreateTime: 1700000000000 size: 78 "
    "magic: 2 compresscodec: none crc: 241136949 isvalid: true"
)
MARKER_LINE = (
    "| offset: 10 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
    "endTxnMarker: COMMIT coordinatorEpoch: 3"
)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run ``seglog`` in process; return (status, stdout, stderr)."""
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def test_examples_match_our_encoder() -> None:
    records = [
        Record(0, TS, b"k", b"v"),
        Record(1, TS + 5, b"k2", None, (Header("h", b"x"),)),
    ]
    assert encode_batch(records, partition_leader_epoch=0) == EXAMPLE_A


# --- the spec §18.1 example, byte for byte ------------------------------------------------------


# Spec §18.1 example, verbatim (Example A of §3.8 dumped with --print-data-log).
SPEC_EXAMPLE_PATH = "/data/t-0/00000000000000000000.log"
SPEC_EXAMPLE_OUTPUT = """\
Dumping /data/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: 83 magic: 2 compresscodec: none crc: 12460861 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: v
| offset: 1 CreateTime: 1700000000005 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [h] key: k2
"""  # noqa: E501


def test_spec_example_print_data_log_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A)
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", log)
    # Byte for byte; only the path differs (the spec's /data/t-0 is not writable here).
    assert out == SPEC_EXAMPLE_OUTPUT.replace(SPEC_EXAMPLE_PATH, str(log))
    assert err == ""
    assert status == 0


def test_batch_lines_only_without_deep_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B)
    status, out, err = run_cli(capsys, "dump-log", log)
    assert out.splitlines() == [
        f"Dumping {log}",
        "Log starting offset: 0",
        EXAMPLE_A_BATCH_LINE,
        EXAMPLE_B_BATCH_LINE,
    ]
    assert (status, err) == (0, "")


def test_marker_line_and_non_consecutive_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B)
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", log)
    lines = out.splitlines()
    assert lines[-2:] == [EXAMPLE_B_BATCH_LINE, MARKER_LINE]  # control: no key/payload
    assert err == (f"Non-consecutive offsets in {log}\n  1 is followed by 10\n")
    assert status == 0


def test_skip_record_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [Record(0, TS, None, b"only-value"), Record(1, TS, b"k", b"v")]
    log = write(tmp_path, "00000000000000000000.log", encode_batch(records))
    _, out, _ = run_cli(capsys, "dump-log", "--print-data-log", "--skip-record-metadata", log)
    assert out.splitlines()[3:] == [" payload: only-value", "| key: k payload: v"]


def test_non_utf8_data_is_replaced_and_sequences_and_headers_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        Record(50, TS, b"\xff\xfek", b"caf\xc3\xa9", (Header("a", None), Header("b", b""))),
        Record(51, TS + 1, b"k", b"v"),
    ]
    batch = encode_batch(records, producer_id=7, producer_epoch=1, base_sequence=41)
    log = write(tmp_path, "00000000000000000050.log", batch)
    status, out, _ = run_cli(capsys, "dump-log", "--print-data-log", log)
    lines = out.splitlines()
    assert lines[1] == "Log starting offset: 50"
    assert "baseSequence: 41 lastSequence: 42 producerId: 7 producerEpoch: 1" in lines[2]
    assert lines[3] == (
        "| offset: 50 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 41 "
        "headerKeys: [a,b] key: \ufffd\ufffdk payload: café"
    )
    assert " sequence: 42 " in lines[4]
    assert status == 0


def test_log_append_time_batch_reports_max_timestamp_for_every_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from seglog.format.records import TimestampType

    batch = encode_batch(
        [Record(0, TS, b"a", b"1"), Record(1, TS + 1, b"b", b"2")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        max_timestamp=TS + 999,
    )
    log = write(tmp_path, "00000000000000000000.log", batch)
    _, out, _ = run_cli(capsys, "dump-log", "--deep-iteration", log)
    lines = out.splitlines()
    assert " LogAppendTime: 1700000000999 " in lines[2]
    assert lines[3].startswith("| offset: 0 LogAppendTime: 1700000000999 keySize: 1")
    assert lines[4].startswith("| offset: 1 LogAppendTime: 1700000000999 keySize: 1")


def test_delete_horizon_and_compression_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from seglog.format.compression import CompressionType

    batch = encode_batch(
        [Record(0, TS, b"a", None)],
        compression=CompressionType.ZSTD,
        delete_horizon_ms=TS + 86_400_000,
    )
    log = write(tmp_path, "00000000000000000000.log", batch)
    status, out, _ = run_cli(capsys, "dump-log", "--deep-iteration", log)
    lines = out.splitlines()
    assert "deleteHorizonMs: OptionalLong[1700086400000]" in lines[2]
    assert "compresscodec: zstd" in lines[2]
    assert lines[3] == (
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: -1 sequence: -1 headerKeys: []"
    )
    assert status == 0


# --- legacy v0 / v1 -----------------------------------------------------------------------------


def legacy_entry(
    offset: int,
    magic: int,
    value: bytes | None,
    *,
    key: bytes | None = None,
    timestamp: int = -1,
    attributes: int = 0,
) -> tuple[bytes, int]:
    """A framed v0/v1 message and its CRC-32."""
    body = bytes([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    crc = zlib.crc32(body) & 0xFFFFFFFF
    message = struct.pack(">I", crc) + body
    return struct.pack(">qi", offset, len(message)) + message, crc


def test_legacy_batch_and_record_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v0, crc0 = legacy_entry(4, 0, b"zero")
    v1, crc1 = legacy_entry(5, 1, b"one", key=b"k", timestamp=1000)
    inner_a, crc_a = legacy_entry(0, 1, b"a", timestamp=1001)
    inner_b, crc_b = legacy_entry(1, 1, b"b", timestamp=1002)
    wrapper, crc_w = legacy_entry(
        7, 1, gzip.compress(inner_a + inner_b, mtime=0), timestamp=1002, attributes=1
    )
    log = write(tmp_path, "00000000000000000004.log", v0 + v1 + wrapper)
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", log)
    p1, p2 = len(v0), len(v0) + len(v1)
    assert out.splitlines() == [
        f"Dumping {log}",
        "Log starting offset: 4",
        f"offset: 4 position: 0 NoTimestampType: -1 size: {len(v0)} magic: 0 "
        f"compresscodec: none crc: {crc0} isvalid: true",
        f"| offset: 4 NoTimestampType: -1 keySize: -1 valueSize: 4 isValid: true crc: {crc0}}}"
        " payload: zero",
        f"offset: 5 position: {p1} CreateTime: 1000 size: {len(v1)} magic: 1 "
        f"compresscodec: none crc: {crc1} isvalid: true",
        f"| offset: 5 CreateTime: 1000 keySize: 1 valueSize: 3 isValid: true crc: {crc1}}}"
        " key: k payload: one",
        f"offset: 7 position: {p2} CreateTime: 1002 size: {len(wrapper)} magic: 1 "
        f"compresscodec: gzip crc: {crc_w} isvalid: true",
        f"| offset: 6 CreateTime: 1001 keySize: -1 valueSize: 1 isValid: true crc: {crc_a}}}"
        " payload: a",
        f"| offset: 7 CreateTime: 1002 keySize: -1 valueSize: 1 isValid: true crc: {crc_b}}}"
        " payload: b",
    ]
    assert (status, err) == (0, "")


def test_legacy_bad_crc_is_shown_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry, crc = legacy_entry(0, 0, b"payload")
    broken = bytearray(entry)
    broken[-1] ^= 0xFF
    log = write(tmp_path, "00000000000000000000.log", bytes(broken))
    status, out, _ = run_cli(capsys, "dump-log", "--deep-iteration", log)
    lines = out.splitlines()
    assert lines[2].endswith(f"crc: {crc} isvalid: false")
    assert lines[3].endswith(f"isValid: false crc: {crc}}}")
    assert status == 0


# --- JSON ---------------------------------------------------------------------------------------


def test_json_batches_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B)
    status, out, err = run_cli(capsys, "dump-log", "--json", "--deep-iteration", log)
    first, second = (json.loads(line) for line in out.splitlines())
    assert first == {
        "file": str(log),
        "baseOffset": 0,
        "lastOffset": 1,
        "count": 2,
        "baseSequence": -1,
        "lastSequence": -1,
        "producerId": -1,
        "producerEpoch": -1,
        "partitionLeaderEpoch": 0,
        "isTransactional": False,
        "isControl": False,
        "deleteHorizonMs": None,
        "position": 0,
        "timestampType": "CreateTime",
        "maxTimestamp": TS + 5,
        "size": 83,
        "magic": 2,
        "compresscodec": "none",
        "crc": 12460861,
        "isvalid": True,
        "records": [
            {"offset": 0, "timestamp": TS, "key": "aw==", "value": "dg==", "headers": []},
            {
                "offset": 1,
                "timestamp": TS + 5,
                "key": base64.b64encode(b"k2").decode(),
                "value": None,
                "headers": [["h", "eA=="]],
            },
        ],
    }
    assert second["isControl"] is True and second["isTransactional"] is True
    assert second["producerId"] == 1000 and second["position"] == 83
    (marker,) = second["records"]
    assert base64.b64decode(marker["key"]) == b"\x00\x00\x00\x01"
    assert base64.b64decode(marker["value"]) == b"\x00\x00\x00\x00\x00\x03"
    assert "Non-consecutive offsets" in err
    assert status == 0


def test_json_without_deep_iteration_has_no_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A)
    _, out, _ = run_cli(capsys, "dump-log", "--json", log)
    (obj,) = (json.loads(line) for line in out.splitlines())
    assert "records" not in obj and obj["crc"] == 12460861


def test_json_keeps_diagnostics_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B[:30])
    empty = write(tmp_path, "00000000000000000000.index", b"")
    status, out, err = run_cli(capsys, "dump-log", "--json", log, empty)
    assert [json.loads(line)["baseOffset"] for line in out.splitlines()] == [0]
    assert err.splitlines() == [
        "Found 30 invalid bytes at the end of 00000000000000000000.log",
        f"{empty} is empty.",
    ]
    assert status == 0


# --- torn tails, corruption, CRC mismatches -----------------------------------------------------


def test_torn_tail_reports_invalid_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B[:30])
    status, out, err = run_cli(capsys, "dump-log", log)
    assert out.splitlines()[-2:] == [
        EXAMPLE_A_BATCH_LINE,
        "Found 30 invalid bytes at the end of 00000000000000000000.log",
    ]
    assert (status, err) == (0, "")


def test_max_bytes_suppresses_the_invalid_bytes_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + EXAMPLE_B)
    status, out, _ = run_cli(capsys, "dump-log", "--max-bytes", "100", log)
    assert out.splitlines()[2:] == [EXAMPLE_A_BATCH_LINE]
    assert status == 0


def test_zero_filled_tail_is_invalid_bytes_and_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A + bytes(100))
    status, out, err = run_cli(capsys, "dump-log", log)
    assert out.splitlines()[-1] == "Found 100 invalid bytes at the end of 00000000000000000000.log"
    assert err == f"seglog: error: {log} at position 83: zero-filled tail of 100 bytes\n"
    assert status == 1


def test_crc_mismatch_is_printed_with_isvalid_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = bytearray(EXAMPLE_A)
    broken[68] = ord("w")  # the value "v" of record 0
    log = write(tmp_path, "00000000000000000000.log", bytes(broken) + EXAMPLE_B)
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", log)
    assert "error" not in err
    lines = out.splitlines()
    assert lines[2] == EXAMPLE_A_BATCH_LINE.replace("isvalid: true", "isvalid: false")
    assert lines[3].endswith("key: k payload: w")
    assert lines[-1] == MARKER_LINE  # dumping goes on past the bad batch
    assert status == 0


def test_undecodable_records_are_an_error_and_dumping_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    section = encode_record(0, 0, b"k", b"v")
    bad = assemble_batch(
        section,
        base_offset=0,
        partition_leader_epoch=0,
        attributes=0,
        last_offset_delta=1,
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=2,  # only one record is there
    )
    marker = bytearray(EXAMPLE_B)
    log = write(tmp_path, "00000000000000000000.log", bad + bytes(marker))
    status, out, err = run_cli(capsys, "dump-log", "--deep-iteration", log)
    lines = out.splitlines()
    assert lines[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 ")
    assert lines[3].startswith("baseOffset: 10 ")  # no record line for the bad batch
    assert err.startswith(f"seglog: error: {log} at position 0: ")
    assert status == 1


# --- .index and .timeindex ----------------------------------------------------------------------


def build_segment(directory: Path, base: int = 100) -> tuple[Path, list[int], list[bytes]]:
    """Three batches at ``base``: max timestamps 1003, 1005, 1004; returns positions too."""
    batches = [
        encode_batch(
            [
                Record(base, 1000, b"a", b"1"),
                Record(base + 1, 1003, b"b", b"2"),
                Record(base + 2, 1002, b"c", b"3"),
            ]
        ),
        encode_batch([Record(base + 3, 1001, b"d", b"4"), Record(base + 4, 1005, b"e", b"5")]),
        encode_batch([Record(base + 5, 1004, b"f", b"6")]),
    ]
    positions = [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    log = write(directory, log_file_name(base), b"".join(batches))
    return log, positions, batches


def test_index_and_timeindex_dump_and_check_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, positions, _ = build_segment(tmp_path)
    index = write(
        tmp_path,
        index_file_name(100),
        encode_offset_index(
            [
                OffsetIndexEntry(102, 0),
                OffsetIndexEntry(104, positions[1]),
                OffsetIndexEntry(105, positions[2]),
            ],
            100,
        )
        + bytes(8 * 20),  # a preallocated zero tail: Kafka stops at it
    )
    time_index = write(
        tmp_path,
        time_index_file_name(100),
        encode_time_index([TimeIndexEntry(1003, 102), TimeIndexEntry(1005, 104)], 100),
    )
    status, out, err = run_cli(capsys, "dump-log", index, time_index)
    assert out.splitlines() == [
        f"Dumping {index}",
        "offset: 102 position: 0",
        f"offset: 104 position: {positions[1]}",
        f"offset: 105 position: {positions[2]}",
        f"Dumping {time_index}",
        "timestamp: 1003 offset: 102",
        "timestamp: 1005 offset: 104",
    ]
    assert (status, err) == (0, "")


def test_index_and_timeindex_mismatches_summarized_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, positions, _ = build_segment(tmp_path)
    index = write(
        tmp_path,
        index_file_name(100),
        encode_offset_entry(2, 0) + encode_offset_entry(3, positions[1]),
    )
    time_index = write(
        tmp_path,
        time_index_file_name(100),
        encode_time_entry(1003, 2)
        + encode_time_entry(1006, 4)  # the batch's max is 1005
        + encode_time_entry(1004, 5)  # out of order after 1006
        + encode_time_entry(2000, 3)  # 103 is not a batch's last offset
        + encode_time_entry(3000, 100),  # beyond the log
    )
    status, out, err = run_cli(capsys, "dump-log", "--files", f"{index},{time_index}")
    assert out.splitlines() == [
        f"Dumping {index}",
        "offset: 102 position: 0",
        f"offset: 103 position: {positions[1]}",
        f"Dumping {time_index}",
        "timestamp: 1003 offset: 102",
        "timestamp: 1006 offset: 104",
        "timestamp: 1004 offset: 105",
        "timestamp: 2000 offset: 103",
        "timestamp: 3000 offset: 200",
    ]
    assert err == (
        f"Mismatches in :{index}\n"
        "  Index offset: 103, log offset: 104\n"
        f"Found timestamp mismatch in :{time_index}\n"
        "  Index timestamp: 1006, log timestamp: 1005\n"
        f"Found out of order timestamp in :{time_index}\n"
        "  Index timestamp: 1004, Previously indexed timestamp: 1006\n"
        "The following indexed offsets are not found in the log.\n"
        "Indexed offset: 103, found log offset: 104\n"
        "Indexed offset: 200, found log offset: -1\n"
    )
    assert status == 0  # Kafka reports these and exits normally


def test_verify_index_only_and_sanity_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_segment(tmp_path)
    index = write(tmp_path, index_file_name(100), encode_offset_entry(2, 0))
    status, out, err = run_cli(capsys, "dump-log", "--verify-index-only", index)
    assert (status, out, err) == (0, f"Dumping {index}\n", "")
    status, out, _ = run_cli(capsys, "dump-log", "--index-sanity-check", index)
    assert out.splitlines()[1] == f"{index} passed sanity check."
    assert status == 0


def test_empty_index_and_empty_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write(tmp_path, log_file_name(0), b"")
    index = write(tmp_path, index_file_name(0), b"")
    time_index = write(tmp_path, time_index_file_name(0), b"")
    status, out, err = run_cli(capsys, "dump-log", log, index, time_index)
    assert out.splitlines() == [
        f"Dumping {log}",
        "Log starting offset: 0",
        f"Dumping {index}",
        f"{index} is empty.",
        f"Dumping {time_index}",
    ]
    assert (status, err) == (0, "")


def test_index_without_its_log_is_dumped_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = write(tmp_path, index_file_name(7), encode_offset_entry(3, 0))
    status, out, err = run_cli(capsys, "dump-log", index)
    assert out.splitlines()[1] == "offset: 10 position: 0"
    assert err.startswith("seglog: warning: ") and "not found" in err
    assert status == 0


def test_index_with_a_partial_entry_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_segment(tmp_path)
    index = write(tmp_path, index_file_name(100), encode_offset_entry(2, 0) + b"\x00\x01")
    status, out, err = run_cli(capsys, "dump-log", index)
    assert out.splitlines()[1] == "offset: 102 position: 0"
    assert "not a multiple of 8" in err
    assert status == 1


def test_json_index_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_segment(tmp_path)
    index = write(tmp_path, index_file_name(100), encode_offset_entry(2, 0))
    time_index = write(tmp_path, time_index_file_name(100), encode_time_entry(1003, 2))
    status, out, _ = run_cli(capsys, "dump-log", "--json", index, time_index)
    assert [json.loads(line) for line in out.splitlines()] == [
        {"file": str(index), "offset": 102, "position": 0},
        {"file": str(time_index), "timestamp": 1003, "offset": 102},
    ]
    assert status == 0


# --- other files, errors, the command itself ----------------------------------------------------


def test_unknown_files_are_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = write(tmp_path, "notes.txt", b"hello")
    deleted = write(tmp_path, "00000000000000000000.log.deleted", EXAMPLE_A)
    status, out, err = run_cli(capsys, "dump-log", notes, deleted)
    assert out == f"Dumping {notes}\nDumping {deleted}\n"
    assert err == f"Ignoring unknown file {notes}\nIgnoring unknown file {deleted}\n"
    assert status == 0


def test_missing_file_is_a_clear_error_and_other_files_still_dumped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "00000000000000000000.log"
    log = write(tmp_path, "00000000000000000009.log", EXAMPLE_A)
    status, out, err = run_cli(capsys, "dump-log", missing, log)
    assert err == f"seglog: error: cannot read {missing}: No such file or directory\n"
    assert EXAMPLE_A_BATCH_LINE in out
    assert "Traceback" not in err
    assert status == 1


def test_version_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "--version") == (0, f"seglog {__version__}\n", "")
    status, out, _ = run_cli(capsys, "--help")
    assert status == 0 and "dump-log" in out
    status, out, _ = run_cli(capsys, "dump-log", "--help")
    assert status == 0 and "--deep-iteration" in out and "--json" in out
    status, _, err = run_cli(capsys)
    assert status == 2 and "seglog: error: a command is required" in err
    status, _, err = run_cli(capsys, "dump-log")
    assert status == 2 and "at least one FILE" in err
    status, _, err = run_cli(capsys, "dump-log", "--max-bytes", "0", "x.log")
    assert status == 2 and "must be a positive integer" in err


def test_console_script_subprocess(tmp_path: Path) -> None:
    log = write(tmp_path, "00000000000000000000.log", EXAMPLE_A)
    script = Path(sys.executable).parent / "seglog"
    if not script.exists():
        pytest.skip(f"console script not installed beside {sys.executable}")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    result = subprocess.run(
        [str(script), "dump-log", "--print-data-log", str(log)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2:] == [
        EXAMPLE_A_BATCH_LINE,
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 "
        "headerKeys: [] key: k payload: v",
        "| offset: 1 CreateTime: 1700000000005 keySize: 2 valueSize: -1 sequence: -1 "
        "headerKeys: [h] key: k2",
    ]
    missing_log = tmp_path / "00000000000000000001.log"
    missing = subprocess.run(
        [sys.executable, "-m", "seglog.cli", "dump-log", str(missing_log)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        f"seglog: error: cannot read {missing_log}: No such file or directory"
    )


# --- control records, KRaft snapshots, .txnindex ------------------------------------------------


def control_batch(base_offset: int, records: list[tuple[int, bytes]]) -> bytes:
    """A control batch whose records have keys (version 0, type) and the given values."""
    return encode_batch(
        [
            Record(base_offset + i, TS, struct.pack(">hh", 0, type_id), value)
            for i, (type_id, value) in enumerate(records)
        ],
        is_control=True,
        partition_leader_epoch=1,
    )


def test_control_record_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    voters = (
        struct.pack(">h", 0)
        + b"\x02"  # one voter
        + struct.pack(">i", 1)
        + bytes(range(16))
        + b"\x02"  # one endpoint
        + b"\x0bCONTROLLER"
        + b"\x0alocalhost"
        + struct.pack(">H", 9093)
        + b"\x00"  # endpoint tagged fields
        + struct.pack(">hh", 0, 1)
        + b"\x00"  # feature tagged fields
        + b"\x00"  # voter tagged fields
        + b"\x00"  # record tagged fields
    )
    batch = control_batch(
        0,
        [
            (3, struct.pack(">hq", 0, 1234) + b"\x00"),
            (5, struct.pack(">hh", 0, 1) + b"\x00"),
            (6, voters),
            (2, b"\x00\x00"),
            (99, b""),
            (4, struct.pack(">h", 0) + b"\x00"),
            (0, struct.pack(">hi", 0, 7)),
        ],
    )
    snapshot = write(tmp_path, "00000000000000000007-0000000002.checkpoint", batch)
    status, out, err = run_cli(capsys, "dump-log", "--print-data-log", snapshot)
    lines = out.splitlines()
    assert lines[1] == "Snapshot end offset: 7, epoch: 2"
    suffixes = [line.split("headerKeys: [] ", 1)[1] for line in lines[3:]]
    assert suffixes == [
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1234}',
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":'
        '"AAECAwQFBgcICQoLDA0ODw","endpoints":[{"name":"CONTROLLER","host":"localhost",'
        '"port":9093}],"kRaftVersionFeature":{"minSupportedVersion":0,'
        '"maxSupportedVersion":1}}]}',
        "controlType: LEADER_CHANGE(2)",
        "controlType: UNKNOWN(99)",
        'SnapshotFooter {"version":0}',
        "endTxnMarker: ABORT coordinatorEpoch: 7",
    ]
    assert (status, err) == (0, "")


def test_malformed_control_record_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = control_batch(0, [(1, b"\x00")])  # COMMIT value shorter than 6 bytes
    log = write(tmp_path, "00000000000000000000.log", batch)
    status, out, err = run_cli(capsys, "dump-log", "--deep-iteration", log)
    assert len(out.splitlines()) == 3  # no record line
    assert "record at offset 0" in err and "at least 6 bytes" in err
    assert status == 1


def test_txn_index_and_producer_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from seglog.format.index import AbortedTxn, encode_txn_index

    txn = write(
        tmp_path,
        "00000000000000000000.txnindex",
        encode_txn_index([AbortedTxn(0, 1000, 5, 9, 10)]),
    )
    snapshot = write(tmp_path, "00000000000000000010.snapshot", b"\x00\x01")
    status, out, err = run_cli(capsys, "dump-log", txn, snapshot)
    assert out.splitlines() == [
        f"Dumping {txn}",
        "version: 0 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 10",
        f"Dumping {snapshot}",
    ]
    # A 2-byte snapshot is damaged: an error naming the file, nothing printed for it.
    assert err.startswith("seglog: error: ") and str(snapshot) in err
    assert "shorter than its 10-byte header" in err
    assert status == 1
