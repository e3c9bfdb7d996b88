"""Record-format benchmark: decode and encode of Kafka v2 batches, seglog against its peers.

What is measured, in one run, on the same in-memory segment (~``--size-mb`` MB of records
built by :mod:`bench.common`: 16 KiB producer batches, 16-byte keys, 100 B or 1 KiB values,
uncompressed or lz4):

Decode (records/s and MB/s of segment bytes; the segment is already in memory, no I/O):

* ``seglog columnar``: :func:`seglog.format.columnar.scan_columns`, the numba kernel that
  turns the whole buffer into numpy columns (offset, timestamp, key/value positions and
  lengths, header count, batch index). The columns *are* the decoded offsets, timestamps,
  keys and values (as spans of ``data``), so nothing more is charged to it.
* ``aiokafka``: aiokafka's Cython ``MemoryRecords`` -> ``DefaultRecordBatch`` -> records, the
  fastest Python Kafka decoder we know of.
* ``kafka-python``: kafka-python's pure-Python ``MemoryRecords``.
* ``seglog objects``: seglog's own pure-Python decoder (``read_batches`` +
  ``RecordBatch.records()``), for reference.

Two physical floors are timed beside them: reading the segment once (numpy sum of its
64-bit words) and ``crc32c`` of the whole segment in one call (the integrity check every
contender makes batch by batch); their records/s is what a decoder that cost nothing more
would reach.

Every object decoder must read ``offset``, ``timestamp``, ``key`` and ``value`` of every
record (what a consumer does), and checks each batch's CRC when the columnar scan does (so
the same integrity work is charged to everybody; say which in the output). Before timing,
every decoder's output is reduced to a digest (count, sums of offsets, timestamps and key and
value lengths, CRC of sampled values) and the digests must agree.

Encode (records/s): the same records, in order, built into 16 KiB batches as a producer does
(base offset 0 per batch) by seglog's ``BatchBuilder``, kafka-python's
``DefaultRecordBatchBuilder`` and aiokafka's Cython ``DefaultRecordBatchBuilder``. lz4 levels
differ by default (seglog and aiokafka 9 = Kafka's ``compression.lz4.level`` default;
kafka-python the lz4 library's fast level 0), so seglog is also timed at level 0.

Ratios are seglog's median records/s over each peer's, by CPU time (stable under the noisy
co-tenant) and by wall time. Goal of the issue: columnar decode >= 5x aiokafka on
uncompressed 100 B records.

Run: ``.venv/bin/python -m bench.bench_format [--size-mb 100] [--repeat 5] [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import crc32c
import numpy as np

if __package__ in (None, ""):  # run as a script: python bench/bench_format.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    CACHE_DIR,
    PRODUCER_BATCH_BYTES,
    Record3,
    Row,
    Segment,
    add_ratios,
    config_label,
    generate_records,
    load_segment,
    machine_info,
    markdown_table,
    measure_interleaved,
    record_count_for,
    rows_from_samples,
    write_results,
)
from seglog.format import BatchBuilder, CompressionType, read_batches

VALUE_SIZES = (100, 1024)
CODECS = (CompressionType.NONE, CompressionType.LZ4)
GOAL_RATIO = 5.0
SAMPLE_EVERY = 997  # digest: CRC of every 997th value

COLUMNAR = "seglog columnar"
AIOKAFKA = "aiokafka"
KAFKA_PYTHON = "kafka-python"
SEGLOG_OBJECTS = "seglog objects"
LIMIT_READ = "limit: read segment once"
LIMIT_CRC = "limit: crc32c of segment"
SEGLOG_BUILDER = "seglog BatchBuilder"
SEGLOG_BUILDER_L0 = "seglog BatchBuilder lz4 level 0"
KP_BUILDER = "kafka-python builder"
AIO_BUILDER = "aiokafka builder"


class Digest(NamedTuple):
    """What every decoder must agree on."""

    records: int
    offset_sum: int
    timestamp_sum: int
    key_bytes: int
    value_bytes: int
    sampled_values_crc: int


# --------------------------------------------------------------------------------------------
# decoders (timed)
# --------------------------------------------------------------------------------------------


def _columnar_module() -> Any:
    try:
        return importlib.import_module("seglog.format.columnar")
    except ImportError:
        return None


# Whether scan_columns checks batch CRCs; the object decoders then do the same.
VERIFY_CRC = True


def decode_columnar(buf: bytes) -> Any:
    """seglog's columnar scan of the whole buffer; returns the columns."""
    columnar = _columnar_module()
    return columnar.scan_columns(buf)


def _columns_count(columns: Any) -> int:
    return len(columns.offset)


def _decode_peer(memory_records: Any, name: str, buf: bytes, verify_crc: bool) -> int:
    """Walk a peer's ``MemoryRecords``: check each batch's CRC, read every record's fields."""
    count = 0
    next_batch = memory_records(buf).next_batch
    while (batch := next_batch()) is not None:
        if verify_crc and not batch.validate_crc():
            raise AssertionError(f"{name}: CRC mismatch")
        for record in batch:
            offset = record.offset
            timestamp = record.timestamp
            key = record.key
            value = record.value
            count += 1
    del offset, timestamp, key, value
    return count


def decode_aiokafka(buf: bytes, verify_crc: bool = VERIFY_CRC) -> int:
    """aiokafka (Cython): read offset, timestamp, key, value of every record; the count."""
    from aiokafka.record.memory_records import MemoryRecords

    return _decode_peer(MemoryRecords, "aiokafka", buf, verify_crc)


def decode_kafka_python(buf: bytes, verify_crc: bool = VERIFY_CRC) -> int:
    """kafka-python (pure Python): read offset, timestamp, key, value of every record."""
    from kafka.record.memory_records import MemoryRecords

    return _decode_peer(MemoryRecords, "kafka-python", buf, verify_crc)


def decode_seglog_objects(buf: bytes, verify_crc: bool = VERIFY_CRC) -> int:
    """seglog's pure-Python decoder: batches, then ``Record`` objects."""
    count = 0
    batches, _end = read_batches(buf, verify_crc=verify_crc)
    for batch in batches:
        for record in batch.records():
            offset = record.offset
            timestamp = record.timestamp
            key = record.key
            value = record.value
            count += 1
    del offset, timestamp, key, value
    return count


# --------------------------------------------------------------------------------------------
# digests (untimed): every decoder must see the same records
# --------------------------------------------------------------------------------------------


def _digest_tuples(rows: Any) -> Digest:
    count = offset_sum = timestamp_sum = key_bytes = value_bytes = 0
    crc = 0
    for offset, timestamp, key, value in rows:
        if count % SAMPLE_EVERY == 0 and value is not None:
            crc = zlib.crc32(value, crc)
        count += 1
        offset_sum += offset
        timestamp_sum += timestamp
        key_bytes += len(key) if key is not None else 0
        value_bytes += len(value) if value is not None else 0
    return Digest(count, offset_sum, timestamp_sum, key_bytes, value_bytes, crc)


def digest_aiokafka(buf: bytes) -> Digest:
    """Digest of aiokafka's decode."""
    from aiokafka.record.memory_records import MemoryRecords

    def rows() -> Any:
        records = MemoryRecords(buf)
        while (batch := records.next_batch()) is not None:
            for r in batch:
                yield r.offset, r.timestamp, r.key, r.value

    return _digest_tuples(rows())


def digest_kafka_python(buf: bytes) -> Digest:
    """Digest of kafka-python's decode."""
    from bench.common import iter_kafka_python

    return _digest_tuples(iter_kafka_python(buf))


def digest_seglog_objects(buf: bytes) -> Digest:
    """Digest of seglog's object decoder."""

    def rows() -> Any:
        for batch in read_batches(buf)[0]:
            for r in batch.records():
                yield r.offset, r.timestamp, r.key, r.value

    return _digest_tuples(rows())


def digest_columns(columns: Any) -> Digest:
    """Digest of the columnar scan (values sliced out of ``columns.data``)."""
    data = memoryview(columns.data)
    key_length = np.asarray(columns.key_length, dtype=np.int64)
    value_length = np.asarray(columns.value_length, dtype=np.int64)
    value_position = np.asarray(columns.value_position, dtype=np.int64)
    crc = 0
    for i in range(0, len(value_length), SAMPLE_EVERY):
        if value_length[i] >= 0:
            start = int(value_position[i])
            crc = zlib.crc32(data[start : start + int(value_length[i])], crc)
    return Digest(
        len(columns.offset),
        int(np.asarray(columns.offset, dtype=np.int64).sum()),
        int(np.asarray(columns.timestamp, dtype=np.int64).sum()),
        int(key_length[key_length > 0].sum()),
        int(value_length[value_length > 0].sum()),
        crc,
    )


# --------------------------------------------------------------------------------------------
# encoders (timed)
# --------------------------------------------------------------------------------------------


def encode_seglog(
    records: Sequence[Record3], codec: CompressionType, level: int | None = None
) -> list[bytes]:
    """seglog ``BatchBuilder``, producer style (base offset 0 in every batch)."""
    batches: list[bytes] = []
    builder = BatchBuilder(
        max_batch_bytes=PRODUCER_BATCH_BYTES, compression=codec, compression_level=level
    )
    try_append = builder.try_append
    for timestamp, key, value in records:
        if not try_append(timestamp, key, value):
            batches.append(builder.build())
            builder = BatchBuilder(
                max_batch_bytes=PRODUCER_BATCH_BYTES, compression=codec, compression_level=level
            )
            try_append = builder.try_append
            try_append(timestamp, key, value)
    batches.append(builder.build())
    return batches


def _encode_peer(
    builder_class: Any, records: Sequence[Record3], codec: CompressionType
) -> list[Any]:
    def new_builder() -> Any:
        return builder_class(
            magic=2,
            compression_type=int(codec),
            is_transactional=0,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=PRODUCER_BATCH_BYTES,
        )

    batches: list[Any] = []
    builder = new_builder()
    append = builder.append
    offset_delta = 0
    headers: list[tuple[str, bytes | None]] = []
    for timestamp, key, value in records:
        if append(offset_delta, timestamp, key, value, headers) is None:
            batches.append(builder.build())
            builder = new_builder()
            append = builder.append
            offset_delta = 0
            append(offset_delta, timestamp, key, value, headers)
        offset_delta += 1
    batches.append(builder.build())
    return batches


def encode_kafka_python(records: Sequence[Record3], codec: CompressionType) -> list[Any]:
    """kafka-python ``DefaultRecordBatchBuilder`` (pure Python)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    return _encode_peer(DefaultRecordBatchBuilder, records, codec)


def encode_aiokafka(records: Sequence[Record3], codec: CompressionType) -> list[Any]:
    """aiokafka ``DefaultRecordBatchBuilder`` (Cython)."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    return _encode_peer(DefaultRecordBatchBuilder, records, codec)


def check_encoded(batches: Sequence[Any], expected_records: int) -> tuple[int, int]:
    """Every batch parses with a valid CRC and they hold ``expected_records``; (count, bytes)."""
    data = b"".join(bytes(b) for b in batches)
    # The producer leaves base offset 0 in every batch; the reader insists offsets increase.
    parsed, end = read_batches(data, check_offsets=False)
    if not end.is_clean:
        raise AssertionError(f"encoded batches do not parse cleanly: {end}")
    total = sum(b.records_count for b in parsed)
    if total != expected_records:
        raise AssertionError(f"encoded {total} records, expected {expected_records}")
    return len(parsed), len(data)


# --------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------


def bench_decode(segment: Segment, repeat: int, have_columnar: bool) -> list[Row]:
    """Time every decoder on ``segment`` and return one row each."""
    buf = segment.data
    expected = digest_kafka_python(buf)
    if expected.records != segment.record_count:
        raise AssertionError("kafka-python does not see every record of the segment")
    digests = {
        AIOKAFKA: digest_aiokafka(buf),
        SEGLOG_OBJECTS: digest_seglog_objects(buf),
    }
    contenders: dict[str, Callable[[], object]] = {}
    if have_columnar:
        digests[COLUMNAR] = digest_columns(decode_columnar(buf))
        contenders[COLUMNAR] = lambda: decode_columnar(buf)
    for name, digest in digests.items():
        if digest != expected:
            raise AssertionError(
                f"{name} decodes {segment.label} differently: {digest} != {expected}"
            )
    contenders[AIOKAFKA] = lambda: decode_aiokafka(buf)
    contenders[KAFKA_PYTHON] = lambda: decode_kafka_python(buf)
    contenders[SEGLOG_OBJECTS] = lambda: decode_seglog_objects(buf)
    # Physical floors, not decoders: one pass over the input bytes, and the CRC-32C (hardware,
    # one C call) that every contender computes batch by batch. records/s = records / time.
    words = np.frombuffer(buf, dtype=np.uint8, count=len(buf) // 8 * 8).view(np.uint64)
    contenders[LIMIT_READ] = lambda: int(words.sum())
    contenders[LIMIT_CRC] = lambda: crc32c.crc32c(buf)

    def check(name: str, result: object) -> None:
        if name in (LIMIT_READ, LIMIT_CRC):
            return
        count = _columns_count(result) if name == COLUMNAR else result
        if count != segment.record_count:
            raise AssertionError(
                f"{name} returned {count} records, expected {segment.record_count}"
            )

    samples = measure_interleaved(contenders, repeat=repeat, warmup=1, check=check)
    rows = rows_from_samples(
        "decode",
        segment.label,
        samples,
        records=segment.record_count,
        nbytes=segment.uncompressed_bytes,
    )
    for row in rows:
        if row.contender in (LIMIT_READ, LIMIT_CRC):
            # A floor reads the segment as stored: its MB/s counts those bytes, not the
            # uncompressed batches the decoders produce.
            row.bytes = len(buf)
            row.note = f"{len(buf) / 1e6:.1f} MB as stored"
    add_ratios(rows, COLUMNAR, [AIOKAFKA, KAFKA_PYTHON, SEGLOG_OBJECTS, LIMIT_READ, LIMIT_CRC])
    return rows


def bench_encode(
    records: Sequence[Record3],
    value_bytes: int,
    codec: CompressionType,
    repeat: int,
    uncompressed_bytes: int,
) -> list[Row]:
    """Time every builder on ``records`` and return one row each."""
    label = config_label(value_bytes, codec)
    contenders: dict[str, Callable[[], object]] = {
        SEGLOG_BUILDER: lambda: encode_seglog(records, codec),
    }
    notes = {}
    if codec is CompressionType.LZ4:
        contenders[SEGLOG_BUILDER_L0] = lambda: encode_seglog(records, codec, 0)
        notes[SEGLOG_BUILDER] = "lz4 level 9"
        notes[KP_BUILDER] = "lz4 level 0"
        notes[AIO_BUILDER] = "lz4 level 9"
    contenders[KP_BUILDER] = lambda: encode_kafka_python(records, codec)
    contenders[AIO_BUILDER] = lambda: encode_aiokafka(records, codec)

    shapes = {name: check_encoded(func(), len(records)) for name, func in contenders.items()}  # type: ignore[arg-type]
    batch_counts = {name: shape[0] for name, shape in shapes.items()}
    if len(set(batch_counts.values())) != 1:
        print(f"  note: builders cut different batch counts: {batch_counts}", file=sys.stderr)

    def check(name: str, result: object) -> None:
        if not isinstance(result, list) or len(result) != batch_counts[name]:
            raise AssertionError(f"{name} built an unexpected number of batches")

    samples = measure_interleaved(contenders, repeat=repeat, warmup=1, check=check)
    rows = rows_from_samples(
        "encode", label, samples, records=len(records), nbytes=uncompressed_bytes, notes=notes
    )
    add_ratios(rows, SEGLOG_BUILDER, [KP_BUILDER, AIO_BUILDER])
    if codec is CompressionType.LZ4:
        add_ratios(rows, SEGLOG_BUILDER_L0, [KP_BUILDER])
    return rows


_STARTUP_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from seglog.format.columnar import scan_columns
t1 = time.perf_counter()
buf = open(sys.argv[1], "rb").read()
t2 = time.perf_counter()
scan_columns(buf)
t3 = time.perf_counter()
scan_columns(buf)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t3 - t2, "second_call_s": t4 - t3}))
"""


def measure_startup(segment: Segment) -> dict[str, Any]:
    """Import and first-call (compile) cost of the columnar scan, cold and with numba's cache.

    Two fresh processes share an empty ``NUMBA_CACHE_DIR``: the first compiles (and writes the
    cache if the kernels use ``cache=True``), the second shows what a later process pays.
    """
    small = CACHE_DIR / "startup-sample.log"
    batches, _ = read_batches(segment.data)
    small.write_bytes(b"".join(bytes(b.raw) for b in batches[:4]))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="seglog-numba-cache-") as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
        for run in ("cold", "cached"):
            proc = subprocess.run(
                [sys.executable, "-c", _STARTUP_SCRIPT, str(small)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                out[run] = {"error": proc.stderr.strip().splitlines()[-1:]}
                continue
            out[run] = json.loads(proc.stdout.strip().splitlines()[-1])
        out["cache_files"] = sum(len(files) for _, _, files in os.walk(cache_dir))
    cold = out.get("cold", {}).get("first_call_s")
    cached = out.get("cached", {}).get("first_call_s")
    out["is_compile_cached"] = bool(
        out["cache_files"] and cold is not None and cached is not None and cached < cold / 2
    )
    return out


def goal_summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Whether columnar decode reaches GOAL_RATIO x aiokafka on uncompressed 100 B records."""
    for row in rows:
        if row.contender == COLUMNAR and row.config == "100B/none" and AIOKAFKA in row.ratios:
            ratio = row.ratios[AIOKAFKA]
            return {
                "goal": f">= {GOAL_RATIO}x aiokafka records/s on 100B/none",
                "ratio_cpu": ratio["cpu"],
                "ratio_wall": ratio["wall"],
                "is_met": ratio["cpu"] >= GOAL_RATIO and ratio["wall"] >= GOAL_RATIO,
            }
    return {"goal": f">= {GOAL_RATIO}x aiokafka on 100B/none", "is_met": None}


def invocation(argv: Sequence[str] | None) -> str:
    """The command line that ran this process, as one would type it in the repository root."""
    root = Path(__file__).resolve().parent.parent
    python = Path(sys.executable)
    if python.is_relative_to(root):
        python = python.relative_to(root)
    entry = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "bench_format"
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join([str(python), "-m", f"bench.{entry}", *args])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the format benchmark, print Markdown tables and write JSON to bench/results/."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=100.0, help="MB of records per segment")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per comparison")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 MB, 2 rounds")
    parser.add_argument("--skip-encode", action="store_true")
    parser.add_argument("--skip-decode", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.size_mb, args.repeat = 4.0, 2

    columnar = _columnar_module()
    have_columnar = columnar is not None and hasattr(columnar, "scan_columns")
    info = machine_info()
    command = invocation(argv)
    print(
        f"# seglog format benchmark: {info['date_utc']} UTC, {info['cpu_count']} CPUs, "
        f"load {info['loadavg']}"
    )
    print(f"size {args.size_mb} MB per segment, {args.repeat} timed rounds, medians [min..max]")
    if not have_columnar:
        print("seglog.format.columnar.scan_columns not found: columnar rows skipped")

    decode_rows: list[Row] = []
    startup: dict[str, Any] = {}
    if not args.skip_decode:
        for value_bytes in VALUE_SIZES:
            for codec in CODECS:
                segment = load_segment(args.size_mb, value_bytes, codec)
                print(
                    f"decode {segment.label}: {segment.record_count} records, "
                    f"{segment.batch_count} batches, {len(segment.data) / 1e6:.1f} MB "
                    f"({segment.uncompressed_bytes / 1e6:.1f} MB uncompressed)",
                    flush=True,
                )
                if have_columnar and not startup:
                    startup = measure_startup(segment)
                decode_rows += bench_decode(segment, args.repeat, have_columnar)
        print("\n## decode\n")
        print(markdown_table(decode_rows))

    encode_rows: list[Row] = []
    if not args.skip_encode:
        for value_bytes in VALUE_SIZES:
            records = generate_records(record_count_for(args.size_mb, value_bytes), value_bytes)
            uncompressed_bytes = sum(map(len, encode_seglog(records, CompressionType.NONE)))
            for codec in CODECS:
                print(
                    f"encode {value_bytes}B/{codec.name_in_kafka}: {len(records)} records",
                    flush=True,
                )
                encode_rows += bench_encode(
                    records, value_bytes, codec, args.repeat, uncompressed_bytes
                )
            del records
        print("\n## encode\n")
        print(markdown_table(encode_rows))

    goal = goal_summary(decode_rows)
    if startup:
        print(f"\ncolumnar startup: {json.dumps(startup)}")
    print(f"\ngoal: {json.dumps(goal)}")
    info["loadavg_end"] = list(os.getloadavg())
    path = write_results(
        "format",
        {
            "command": command,
            "args": vars(args),
            "machine": info,
            "verify_crc": VERIFY_CRC,
            "goal": goal,
            "columnar_startup": startup,
            "rows": [row.to_json() for row in decode_rows + encode_rows],
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
