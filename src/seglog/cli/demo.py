"""``seglog demo``: the main job on an embedded default (what ``make run`` runs).

Today it exercises the record format end to end on real files: it produces seed 001's
workload (stock prices keyed by ticker, every update a new record) into a Kafka-format
segment of one partition, one codec per batch group (none, gzip, snappy, lz4, zstd), with
Kafka's sparse ``.index`` and ``.timeindex`` beside it; then it reads the segment back with
the columnar kernel, verifies every CRC, dumps the first batches as ``kafka-dump-log.sh``
would, and prints a summary: sizes per codec, records, distinct keys, and how much a
compacted topic would keep (the latest price per ticker). Later issues grow it with
retention, the cleaner, the Pulsar-style compactor and the Spark pipeline.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from seglog.cli import dump_log
from seglog.format.builder import BatchBuilder
from seglog.format.columnar import scan_columns
from seglog.format.compression import CompressionType
from seglog.format.index import (
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_index,
    encode_time_index,
)
from seglog.format.names import index_file_name, log_file_name, time_index_file_name
from seglog.format.reader import read_batches
from seglog.storage.atomic import write_file_atomically
from seglog.storage.files import read_file_bytes

TOPIC = "stock-prices"
TICKERS = (
    "AAPL", "MSFT", "GOOG", "AMZN", "NVDA", "META", "TSLA", "BRK.B", "JPM", "V",
    "UNH", "XOM", "JNJ", "WMT", "MA", "PG", "HD", "CVX", "KO", "PEP",
)  # fmt: skip
INDEX_INTERVAL_BYTES = 4096  # Kafka's index.interval.bytes default
BATCH_BYTES = 16 * 1024  # a producer's batch.size default


def register(subparsers: Any) -> None:
    """Add ``seglog demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="run the main job: write a Kafka-format log, read it back, verify and summarise",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data-dir", default="data", help="directory to create the demo log in (default: data)"
    )
    parser.add_argument(
        "--updates", type=int, default=50_000, help="price updates to produce (default: 50000)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


def produce_prices(updates: int, seed: int, start_ms: int) -> list[tuple[bytes, CompressionType]]:
    """Seed 001's workload as batches: one codec per fifth of the updates."""
    rng = random.Random(seed)
    prices = {ticker: rng.uniform(20, 900) for ticker in TICKERS}
    codecs = list(CompressionType)
    batches: list[tuple[bytes, CompressionType]] = []
    offset = 0
    builder: BatchBuilder | None = None
    for i in range(updates):
        codec = codecs[min(i * len(codecs) // max(updates, 1), len(codecs) - 1)]
        if builder is not None and builder.compression is not codec:
            batches.append((builder.build(), builder.compression))
            offset, builder = builder.next_offset, None
        if builder is None:
            builder = BatchBuilder(
                base_offset=offset,
                max_batch_bytes=BATCH_BYTES,
                compression=codec,
                partition_leader_epoch=0,  # brokers stamp an epoch >= 0 (spec §19)
            )
        ticker = rng.choice(TICKERS)
        prices[ticker] *= 1 + rng.gauss(0, 0.002)
        value = json.dumps({"ticker": ticker, "price": round(prices[ticker], 2), "seq": i})
        timestamp = start_ms + i * 10
        if not builder.try_append(timestamp, ticker.encode(), value.encode()):
            batches.append((builder.build(), codec))
            builder = BatchBuilder(
                base_offset=builder.next_offset,
                max_batch_bytes=BATCH_BYTES,
                compression=codec,
                partition_leader_epoch=0,
            )
            builder.append(timestamp, ticker.encode(), value.encode())
    if builder is not None and len(builder):
        batches.append((builder.build(), builder.compression))
    return batches


def sparse_indexes(segment: bytes) -> tuple[list[OffsetIndexEntry], list[TimeIndexEntry]]:
    """Kafka's append-time index entries for a segment's batches (spec §5.1, §7, §8)."""
    offsets: list[OffsetIndexEntry] = []
    times: list[TimeIndexEntry] = []
    batches, _ = read_batches(segment)
    bytes_since_entry = 0
    max_timestamp = -1
    max_timestamp_offset = -1
    for batch in batches:
        if batch.max_timestamp > max_timestamp:
            max_timestamp, max_timestamp_offset = batch.max_timestamp, batch.last_offset
        if bytes_since_entry > INDEX_INTERVAL_BYTES:
            offsets.append(OffsetIndexEntry(batch.last_offset, batch.position))
            if not times or max_timestamp > times[-1].timestamp:
                times.append(TimeIndexEntry(max_timestamp, max_timestamp_offset))
            bytes_since_entry = 0
        bytes_since_entry += batch.size_in_bytes
    if max_timestamp >= 0 and (not times or max_timestamp > times[-1].timestamp):
        times.append(TimeIndexEntry(max_timestamp, max_timestamp_offset))  # the roll entry
    return offsets, times


def run(args: argparse.Namespace) -> int:
    """Write, read back, verify and summarise the demo log."""
    partition_dir = Path(args.data_dir) / f"{TOPIC}-0"
    partition_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    batches = produce_prices(args.updates, args.seed, start_ms=int(time.time() * 1000))
    segment = b"".join(data for data, _ in batches)
    log_path = partition_dir / log_file_name(0)
    write_file_atomically(log_path, segment)
    offsets, times = sparse_indexes(segment)
    write_file_atomically(partition_dir / index_file_name(0), encode_offset_index(offsets, 0))
    write_file_atomically(partition_dir / time_index_file_name(0), encode_time_index(times, 0))
    written_s = time.perf_counter() - started

    on_disk = read_file_bytes(log_path)
    started = time.perf_counter()
    columns = scan_columns(on_disk)
    scan_s = time.perf_counter() - started
    if not columns.end.is_clean:
        raise columns.end.to_error(str(log_path))

    keys = [columns.key(i) for i in range(len(columns))]
    latest = {key: row for row, key in enumerate(keys)}
    per_codec: dict[str, dict[str, int]] = {}
    for data, codec in batches:
        entry = per_codec.setdefault(codec.name_in_kafka, {"batches": 0, "bytes": 0})
        entry["batches"] += 1
        entry["bytes"] += len(data)
    last_prices = {
        (key or b"").decode(): json.loads(columns.value(row) or b"{}")["price"]
        for key, row in sorted(latest.items())
    }
    summary = {
        "log": str(log_path),
        "records": len(columns),
        "batches": len(batches),
        "segment_bytes": len(segment),
        "index_entries": len(offsets),
        "time_index_entries": len(times),
        "per_codec": per_codec,
        "distinct_keys": len(latest),
        "records_a_compacted_topic_keeps": len(latest),
        "duplicate_ratio": round(1 - len(latest) / max(len(columns), 1), 4),
        "offsets_strictly_increasing": bool(np.all(np.diff(columns.offset) > 0)),
        "crc_verified_batches": len(columns.batches),
        "write_seconds": round(written_s, 3),
        "scan_records_per_second": round(len(columns) / scan_s) if scan_s > 0 else None,
        "latest_prices": last_prices,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"seglog demo: wrote {len(columns)} price updates for {len(latest)} tickers")
    print(f"  segment   {log_path}  ({len(segment):,} bytes, {len(batches)} batches)")
    print(f"  indexes   {len(offsets)} offset-index and {len(times)} time-index entries")
    for name, entry in per_codec.items():
        print(f"  codec     {name:<6} {entry['batches']:>4} batches {entry['bytes']:>10,} bytes")
    print(
        f"  read back {len(columns)} records, every CRC valid, offsets strictly increasing: "
        f"{summary['offsets_strictly_increasing']}"
    )
    print(
        f"  compaction preview: {len(latest)} of {len(columns)} records are a key's latest "
        f"value ({summary['duplicate_ratio']:.2%} would be cleaned)"
    )
    print("\nFirst batches, as kafka-dump-log.sh --print-data-log prints them:")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        dump_log.run(dump_log_args(["--max-bytes", str(BATCH_BYTES), str(log_path)]))
    lines = text.getvalue().splitlines()
    print("\n".join(lines[:6]))
    print(f"  ... (the whole segment: seglog dump-log --print-data-log {log_path})")
    return 0


def dump_log_args(files: list[str]) -> argparse.Namespace:
    """Parsed ``dump-log --print-data-log FILES`` arguments."""
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    dump_log.register(subparsers)
    return parser.parse_args(["dump-log", "--print-data-log", *files])
