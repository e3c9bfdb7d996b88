"""Shared machinery of the benchmark suite: timing, tables, JSON results, test segments.

Timing. Every contender of one comparison is timed in the same process and the same run,
interleaved round-robin (round ``r`` starts with contender ``r mod n``), so a burst of noise
from the co-tenant on this 2-vCPU machine hits every contender alike instead of one of them.
Each call is timed with ``time.perf_counter`` (wall) and ``time.process_time`` (CPU of this
process, all threads): the CPU figure is the stable estimate of the uncontended speed, the
wall figure is what a user waits. We report median [min..max] of both
(see ``../shared/spec/limits.md``). A contender faster than 0.25 s per call is called several
times back to back per sample (the count is fixed in the warm-up round), so its samples span
as much time, and as much noise, as a slow contender's. A ``gc.collect()`` runs before each
sample, outside the timed region, so garbage left by one contender is never collected on
another's clock.

Segments. :func:`load_segment` returns the bytes of a ``.log`` segment of v2 batches built by
seglog's :class:`~seglog.format.BatchBuilder` the way a producer with default settings builds
them (``batch.size`` = 16 KiB), from deterministic pseudo-random records: 16-byte keys, values
of a fixed size that look like small JSON events (so lz4 finds realistic redundancy), and
millisecond timestamps that advance slowly. Offsets run from 0 as a broker would assign them.
A segment is built once per configuration, checked with kafka-python (every record decoded and
compared), and cached outside the repository in ``$TMPDIR/seglog-bench/``.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seglog.format import BatchBuilder, CompressionType

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
CACHE_DIR = Path(tempfile.gettempdir()) / "seglog-bench"

# Bump when the record generator or segment layout changes: old cache files are then ignored.
GENERATOR_VERSION = 1
PRODUCER_BATCH_BYTES = 16 * 1024  # the producer's batch.size default
KEY_BYTES = 16
BASE_TIMESTAMP_MS = 1_763_700_000_000  # 2025-11-21, any fixed instant will do
MB = 1_000_000

# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


@dataclass
class Samples:
    """Wall and CPU seconds per call of one contender (each sample averages ``calls`` calls)."""

    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    calls: int = 1


@dataclass(frozen=True)
class Spread:
    """Median, minimum and maximum of a list of figures."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of ``values`` (at least one)."""
        return cls(statistics.median(values), min(values), max(values))

    def rate(self, units: float) -> Spread:
        """``units / seconds`` for each figure (the slowest time gives the minimum rate)."""
        return Spread(
            units / self.median if self.median > 0 else float("inf"),
            units / self.max if self.max > 0 else float("inf"),
            units / self.min if self.min > 0 else float("inf"),
        )


def _time_calls(func: Callable[[], object], calls: int) -> tuple[float, float, object]:
    """Seconds per call (wall, cpu) over ``calls`` back-to-back calls, and the last result."""
    gc.collect()
    result: object = None
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for _ in range(calls):
        result = None  # drop the previous result first, as a caller in a loop would
        result = func()
    wall1 = time.perf_counter()
    cpu1 = time.process_time()
    return (wall1 - wall0) / calls, (cpu1 - cpu0) / calls, result


def measure_interleaved(
    contenders: Mapping[str, Callable[[], object]],
    *,
    repeat: int,
    warmup: int = 1,
    min_sample_s: float = 0.25,
    max_calls: int = 1000,
    check: Callable[[str, object], None] | None = None,
) -> dict[str, Samples]:
    """Time each contender ``repeat`` times, round-robin, after ``warmup`` untimed rounds.

    A contender faster than ``min_sample_s`` per call is called several times back to back
    per sample (the count is fixed from the last warm-up call), so every sample spans a
    similar stretch of time and one burst of co-tenant noise cannot decide a fast
    contender's figure alone. ``check(name, result)`` is called on every sample's last
    result, so a contender that returns the wrong answer fails the benchmark instead of
    winning it.
    """
    names = list(contenders)
    samples = {name: Samples() for name in names}
    for round_index in range(max(1, warmup) + repeat):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            entry = samples[name]
            wall_s, cpu_s, result = _time_calls(contenders[name], entry.calls)
            if check is not None:
                check(name, result)
            if round_index < max(1, warmup):
                entry.calls = max(1, min(max_calls, math.ceil(min_sample_s / max(wall_s, 1e-9))))
            else:
                entry.wall_s.append(wall_s)
                entry.cpu_s.append(cpu_s)
    return samples


# --------------------------------------------------------------------------------------------
# results: rows, tables, JSON
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One contender's figures in one configuration."""

    benchmark: str
    config: str
    contender: str
    records: int
    bytes: int
    wall_s: list[float]
    cpu_s: list[float]
    calls_per_sample: int = 1
    note: str = ""
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def wall(self) -> Spread:
        """Spread of wall seconds."""
        return Spread.of(self.wall_s)

    @property
    def cpu(self) -> Spread:
        """Spread of CPU seconds."""
        return Spread.of(self.cpu_s)

    def records_per_s(self, clock: str) -> Spread:
        """Records per second by ``"wall"`` or ``"cpu"`` time."""
        return (self.wall if clock == "wall" else self.cpu).rate(self.records)

    def mb_per_s(self, clock: str) -> Spread:
        """Megabytes (10^6) of input per second by ``"wall"`` or ``"cpu"`` time."""
        return (self.wall if clock == "wall" else self.cpu).rate(self.bytes / MB)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        """The row written by :meth:`to_json` (derived figures are recomputed)."""
        names = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with the raw samples and the derived figures."""
        out = asdict(self)
        for clock in ("wall", "cpu"):
            out[f"records_per_s_{clock}"] = asdict(self.records_per_s(clock))
            out[f"mb_per_s_{clock}"] = asdict(self.mb_per_s(clock))
        return out


def rows_from_samples(
    benchmark: str,
    config: str,
    samples: Mapping[str, Samples],
    *,
    records: int,
    nbytes: int,
    notes: Mapping[str, str] | None = None,
) -> list[Row]:
    """One :class:`Row` per contender."""
    notes = notes or {}
    return [
        Row(
            benchmark,
            config,
            name,
            records,
            nbytes,
            s.wall_s,
            s.cpu_s,
            calls_per_sample=s.calls,
            note=notes.get(name, ""),
        )
        for name, s in samples.items()
    ]


def add_ratios(rows: Sequence[Row], subject: str, peers: Sequence[str]) -> None:
    """Store ``subject``'s speed over each peer's (ratio of median records/s, wall and cpu)."""
    by_name = {row.contender: row for row in rows}
    if subject not in by_name:
        return
    mine = by_name[subject]
    for peer in peers:
        if peer not in by_name:
            continue
        theirs = by_name[peer]
        mine.ratios[peer] = {
            clock: mine.records_per_s(clock).median / theirs.records_per_s(clock).median
            for clock in ("wall", "cpu")
        }


def _si(value: float) -> str:
    if value >= 1e9:
        return f"{value / 1e9:.2f}G"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def format_ratio(ratio: float) -> str:
    """``6.06x``, ``83x``, ``0.0071x``: enough digits to read a ratio of any size."""
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio >= 0.1:
        return f"{ratio:.2f}x"
    return f"{ratio:.2g}x"


def format_spread(spread: Spread, fmt: Callable[[float], str] = _si) -> str:
    """``median [min..max]`` with compact numbers."""
    return f"{fmt(spread.median)} [{fmt(spread.min)}..{fmt(spread.max)}]"


def markdown_table(rows: Sequence[Row]) -> str:
    """A Markdown table of records/s and MB/s (cpu and wall) with the ratios of each row."""
    header = (
        "| config | contender | records/s cpu | records/s wall | MB/s cpu | MB/s wall "
        "| ratio, cpu (wall) |\n"
        "|---|---|---|---|---|---|---|"
    )
    lines = [header]
    for row in rows:
        ratios = "; ".join(
            f"vs {peer}: **{format_ratio(r['cpu'])}** ({format_ratio(r['wall'])})"
            for peer, r in row.ratios.items()
        )
        name = row.contender + (f" ({row.note})" if row.note else "")
        lines.append(
            f"| {row.config} | {name} | {format_spread(row.records_per_s('cpu'))} "
            f"| {format_spread(row.records_per_s('wall'))} "
            f"| {format_spread(row.mb_per_s('cpu'), lambda v: f'{v:.0f}')} "
            f"| {format_spread(row.mb_per_s('wall'), lambda v: f'{v:.0f}')} | {ratios} |"
        )
    return "\n".join(lines)


def machine_info() -> dict[str, Any]:
    """What ran the benchmark: CPU count, load, interpreter and library versions."""
    import numba
    import numpy

    info: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "source": source_state(),
    }
    for module in ("aiokafka", "kafka", "lz4"):
        try:
            info[module] = __import__(module).__version__
        except Exception:  # a missing peer is reported by the benchmark itself
            info[module] = None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def source_state(
    paths: Sequence[str] = ("src/seglog/format", "src/seglog/kernels"),
) -> dict[str, Any]:
    """Git HEAD plus a short SHA-256 of each measured source file (the tree may be uncommitted)."""
    import hashlib

    root = BENCH_DIR.parent
    state: dict[str, Any] = {}
    try:
        state["git_head"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        state["git_head"] = None
    files: dict[str, str] = {}
    for folder in paths:
        for path in sorted((root / folder).glob("*.py")):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            files[str(path.relative_to(root))] = digest
    state["files_sha256"] = files
    return state


def write_results(name: str, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as ``bench/results/<name>-<UTC time>.json`` and return the path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"{name}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# test data: records and segments
# --------------------------------------------------------------------------------------------

_EVENTS = ("page_view", "click", "add_to_cart", "checkout", "login", "logout", "search")
_COUNTRIES = ("DE", "FR", "US", "GB", "JP", "BR", "IN", "NL", "SE", "ES")
_LOREM_TEXT = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris "
    "nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse "
    "cillum eu fugiat nulla pariatur"
)
_WORDS = _LOREM_TEXT.split()
# Free text: 85 % dictionary words, 15 % random-looking hex tokens. lz4 compresses 16 KiB
# batches of it about 2.2x, close to the 2.4x measured on pseudo-JSON in limits.md section 4.
_TOKENS = _WORDS * 40 + [f"{random.Random(i).getrandbits(32):08x}" for i in range(420)]

Record3 = tuple[int, bytes, bytes]  # (timestamp_ms, key, value)


def _value(rng: random.Random, index: int, timestamp: int, value_bytes: int) -> bytes:
    """A JSON-looking event of exactly ``value_bytes`` bytes (random ids, repeated field names)."""
    if value_bytes < 256:  # a small event: fewer fields, still room for some free text
        head = (
            f'{{"seq":{index},"user":"u{rng.randrange(1_000_000):06d}",'
            f'"event":"{rng.choice(_EVENTS)}","amount":{rng.random() * 1000:.2f},"note":"'
        ).encode()
    else:
        head = (
            f'{{"seq":{index},"ts":{timestamp},"user":"u{rng.randrange(1_000_000):06d}",'
            f'"event":"{rng.choice(_EVENTS)}","country":"{rng.choice(_COUNTRIES)}",'
            f'"amount":{rng.random() * 1000:.2f},"session":"{rng.getrandbits(64):016x}",'
            f'"note":"'
        ).encode()
    room = value_bytes - len(head) - 2
    if room < 0:
        return head[:value_bytes]
    text = " ".join(rng.choices(_TOKENS, k=room // 5 + 2))
    while len(text) < room:
        text += " " + rng.choice(_TOKENS)
    return head + text[:room].encode() + b'"}'


def generate_records(count: int, value_bytes: int, seed: int = 7) -> list[Record3]:
    """``count`` deterministic records: 16-byte keys over 100k distinct users, slow clock."""
    rng = random.Random(seed * 1_000_003 + value_bytes)
    records: list[Record3] = []
    timestamp = BASE_TIMESTAMP_MS
    for index in range(count):
        timestamp += rng.randrange(3)
        key = b"user-%011d" % rng.randrange(100_000)
        records.append((timestamp, key, _value(rng, index, timestamp, value_bytes)))
    return records


def record_count_for(size_mb: float, value_bytes: int) -> int:
    """How many records make about ``size_mb`` MB of uncompressed 16 KiB batches."""
    # record = length(1-2) + attrs(1) + tsDelta(1) + offDelta(1-2) + key 1+16 + value 2+N + 1
    record_bytes = value_bytes + KEY_BYTES + 11
    per_batch = max(1, PRODUCER_BATCH_BYTES // record_bytes)
    return max(1, int(size_mb * MB / (record_bytes + 61 / per_batch)))


def build_segment(
    records: Sequence[Record3],
    compression: CompressionType,
    *,
    batch_bytes: int = PRODUCER_BATCH_BYTES,
    compression_level: int | None = None,
) -> list[bytes]:
    """Batches of ``records`` as seglog's producer-style builder makes them (offsets from 0)."""
    batches: list[bytes] = []
    builder = BatchBuilder(
        base_offset=0,
        max_batch_bytes=batch_bytes,
        compression=compression,
        compression_level=compression_level,
    )
    for timestamp, key, value in records:
        if not builder.try_append(timestamp, key, value):
            batches.append(builder.build())
            builder = BatchBuilder(
                base_offset=builder.next_offset,
                max_batch_bytes=batch_bytes,
                compression=compression,
                compression_level=compression_level,
            )
            builder.append(timestamp, key, value)
    if len(builder):
        batches.append(builder.build())
    return batches


def iter_kafka_python(buf: bytes) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, decoded by kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(buf)
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise AssertionError(f"kafka-python: CRC mismatch at offset {batch.base_offset}")
        for record in batch:
            yield record.offset, record.timestamp, record.key, record.value


def check_with_kafka_python(buf: bytes, records: Sequence[Record3]) -> None:
    """Fail unless kafka-python decodes ``buf`` to exactly ``records`` with offsets 0..n-1."""
    for index, (decoded, expected) in enumerate(zip(iter_kafka_python(buf), records, strict=True)):
        if decoded != (index, *expected):
            raise AssertionError(f"kafka-python decodes record {index} differently")


def config_label(value_bytes: int, compression: CompressionType) -> str:
    """``100B/none``, ``1KiB/lz4``: value size and codec of a configuration."""
    size = f"{value_bytes}B" if value_bytes < 1024 else f"{value_bytes // 1024}KiB"
    return f"{size}/{compression.name_in_kafka}"


@dataclass(frozen=True)
class Segment:
    """A cached benchmark segment and what it holds."""

    path: Path
    data: bytes
    value_bytes: int
    compression: CompressionType
    record_count: int
    batch_count: int
    uncompressed_bytes: int  # sum of batch sizes had the same batches been uncompressed

    @property
    def label(self) -> str:
        """Short name, e.g. ``100B/lz4``."""
        return config_label(self.value_bytes, self.compression)


def load_segment(
    size_mb: float, value_bytes: int, compression: CompressionType, *, log: bool = True
) -> Segment:
    """The cached segment for this configuration, built (and checked) on first use."""
    count = record_count_for(size_mb, value_bytes)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    stem = (
        f"g{GENERATOR_VERSION}-v{value_bytes}-n{count}-{compression.name_in_kafka}"
        f"-b{PRODUCER_BATCH_BYTES}"
    )
    path = CACHE_DIR / f"{stem}.log"
    meta_path = CACHE_DIR / f"{stem}.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        data = path.read_bytes()
        if len(data) == meta["bytes"]:
            return Segment(
                path,
                data,
                value_bytes,
                compression,
                meta["record_count"],
                meta["batch_count"],
                meta["uncompressed_bytes"],
            )
    if log:
        print(f"  building {path.name} ({count} records) ...", file=sys.stderr, flush=True)
    records = generate_records(count, value_bytes)
    batches = build_segment(records, compression)
    data = b"".join(batches)
    if compression is CompressionType.NONE:
        uncompressed = len(data)
    else:
        uncompressed = sum(len(b) for b in build_segment(records, CompressionType.NONE))
    check_with_kafka_python(data, records)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    meta = {
        "record_count": count,
        "batch_count": len(batches),
        "bytes": len(data),
        "uncompressed_bytes": uncompressed,
        "generator_version": GENERATOR_VERSION,
    }
    meta_path.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return Segment(path, data, value_bytes, compression, count, len(batches), uncompressed)
