"""``produce --format json``'s fast path gives the bytes of the reference path; a full disk.

* the fast parsers (one orjson call per chunk, or per line) accept only lines on which they
  agree with the reference parser (Python's json, duplicate keys refused), and give the same
  record;
* :class:`OpenBatch` (``add`` and ``add_many``) builds the bytes :class:`BatchBuilder` builds
  for the same records;
* a real ``seglog produce --format json`` subprocess writes a ``.log`` byte-identical to the
  reference: the same lines parsed by the reference parser, packed by ``BatchBuilder`` with
  the same ``batch.size`` and appended in process;
* a disk that fills up says which records are safe and what failed, never a ``.tmp`` name.
"""

from __future__ import annotations

import base64
import errno
import json
import random
import subprocess
import sys
from pathlib import Path

from cli_support import Cli

from seglog.cli.produce_input import (
    InputLineError,
    parse_json_chunk,
    parse_json_fast,
    parse_json_line,
)
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.builder import BatchBuilder
from seglog.format.bulk_builder import OpenBatch, largest_uncompressed_batch
from seglog.format.compression import CompressionType
from seglog.format.records import Header
from seglog.testing.crash import installed

PARTITIONS = frozenset({0, 1, 2})
TIMEOUT_S = 300


def random_line(rng: random.Random) -> bytes:
    """A JSON line: mostly valid, sometimes unusual or wrong in ways the parsers must agree on."""
    obj: dict[str, object] = {}
    if rng.random() < 0.9:
        obj["value"] = rng.choice(["v", "", "x" * 100, "é€😀", 'a"b', "a\\b", None, 5])
    if rng.random() < 0.4:
        obj["key"] = rng.choice(["k", "", "ключ", None, 7, ["a"]])
    if rng.random() < 0.3:
        obj["timestamp"] = rng.choice([0, 1_700_000_000_000, -1, 2**63, 1.5, None, True])
    if rng.random() < 0.2:
        obj["partition"] = rng.choice([0, 2, 3, None, "0"])
    if rng.random() < 0.1:
        obj["headers"] = {"h": "x"}
    if rng.random() < 0.05:
        obj["value_base64"] = base64.b64encode(b"\xff").decode()
    if rng.random() < 0.05:
        obj["extra"] = 1
    text = json.dumps(
        obj, ensure_ascii=rng.random() < 0.3, separators=rng.choice([(",", ":"), (", ", ": ")])
    )
    roll = rng.random()
    if roll < 0.03:
        text = text[:-1] + ', "value": "again"}'  # a duplicate key
    elif roll < 0.05:
        text = text[:-1]  # not JSON
    elif roll < 0.06:
        text = "[1]"
    elif roll < 0.07:
        text = '{"value": NaN}'
    return text.encode()


def reference(line: bytes) -> object:
    """What the reference parser makes of a line: the record's fields, or the error text."""
    try:
        record = parse_json_line(1, line, PARTITIONS)
    except InputLineError as exc:
        return ("error", exc.reason)
    return (record.key, record.value, record.timestamp_ms, record.partition, record.headers)


def test_fast_parsers_agree_with_the_reference() -> None:
    rng = random.Random(18)
    lines = [random_line(rng) for _ in range(3000)]
    accepted = 0
    for line in lines:
        fast = parse_json_fast(line, PARTITIONS) if b"\\" not in line else None
        if fast is not None:
            accepted += 1
            key, value, timestamp, partition = fast
            assert reference(line) == (key, value, timestamp, partition, ()), line
    assert accepted > 500  # the fast path does take the common lines
    # Whole chunks: either refused (the caller goes line by line) or the same records.
    taken = 0
    good = [line for line in lines if b"\\" not in line and parse_json_fast(line, PARTITIONS)]
    mixed = [line for line in lines if b"\\" not in line]
    groups = [good[i : i + 7] for i in range(0, len(good), 7)]
    groups += [mixed[i : i + 2] for i in range(0, len(mixed), 2)]
    for chunk_lines in groups:
        chunk = parse_json_chunk(chunk_lines, PARTITIONS)
        if chunk is None:
            continue
        taken += 1
        for index, line in enumerate(chunk_lines):
            key = None if chunk.keys is None else chunk.keys[index]
            timestamp = None if chunk.timestamps is None else chunk.timestamps[index]
            partition = None if chunk.partitions is None else chunk.partitions[index]
            assert reference(line) == (key, chunk.values[index], timestamp, partition, ()), line
    assert taken > 10
    # Lines that would hide a duplicate key or two objects are never taken whole.
    assert parse_json_chunk([b'{"value":"a","value":"b"}'], PARTITIONS) is None
    assert parse_json_chunk([b'{"value":"a"},{"value":"b"}', b" "], PARTITIONS) is None
    assert parse_json_chunk([b'[{"value":"a"}', b'{"value":"b"}]'], PARTITIONS) is None


def test_open_batch_builds_the_bytes_of_batch_builder() -> None:
    rng = random.Random(7)
    for _ in range(150):
        codec = rng.choice([CompressionType.NONE, CompressionType.GZIP, CompressionType.ZSTD])
        batch_size = rng.choice([100, 1000, 16384, 1 << 20])
        hard = largest_uncompressed_batch(codec, 1048588)
        timestamp = 1_700_000_000_000
        keys = None
        if rng.random() < 0.5:
            keys = [rng.choice([None, b"", b"k", rng.randbytes(9000)]) for _ in range(300)]
        values = [rng.choice([None, b"", b"v" * 100, rng.randbytes(9000)]) for _ in range(300)]
        headers = [(Header("h", b"x"),) if rng.random() < 0.1 else () for _ in range(300)]
        one, many = [], []
        batch = OpenBatch(batch_size, hard, codec, 0.0)
        groups: list[list[int]] = [[]]
        for i, value in enumerate(values):
            key = None if keys is None else keys[i]
            ts = timestamp + rng.randint(-3, 3)
            if not batch.add(ts, key, value, headers[i]):
                one.append(batch.build())
                batch = OpenBatch(batch_size, hard, codec, 0.0)
                assert batch.add(ts, key, value, headers[i])
                groups.append([])
            groups[-1].append(i)
            # The reference: BatchBuilder over the same records of each batch.
        one.append(batch.build())
        assert len(one) == len(groups)
        batch = OpenBatch(batch_size, hard, codec, 0.0)
        index = 0
        while True:
            index = batch.add_many(timestamp, keys, values, index)
            if index == len(values):
                break
            many.append(batch.build())
            batch = OpenBatch(batch_size, hard, codec, 0.0)
        many.append(batch.build())
        builder_one = []
        for built in one:
            builder = BatchBuilder(max_batch_bytes=1 << 24, compression=codec)
            for record in _records(built):
                builder.append(record.timestamp, record.key, record.value, record.headers)
            builder_one.append(builder.build())
        assert one == builder_one
        reference_many = []
        for built in many:
            builder = BatchBuilder(max_batch_bytes=1 << 24, compression=codec)
            for record in _records(built):
                builder.append(timestamp, record.key, record.value)
            reference_many.append(builder.build())
        assert many == reference_many
        # and add_many packs exactly as add does one by one
        expected = []
        batch = OpenBatch(batch_size, hard, codec, 0.0)
        for i, value in enumerate(values):
            key = None if keys is None else keys[i]
            if not batch.add(timestamp, key, value):
                expected.append(batch.build())
                batch = OpenBatch(batch_size, hard, codec, 0.0)
                batch.add(timestamp, key, value)
        expected.append(batch.build())
        assert many == expected


def _records(batch_bytes: bytes) -> list:  # type: ignore[type-arg]
    from seglog.format.reader import iter_batches_strict

    [batch] = list(iter_batches_strict(batch_bytes))
    return batch.records()


def test_the_command_writes_the_bytes_of_the_reference_path(cli: Cli, tmp_path: Path) -> None:
    rng = random.Random(3)
    lines = []
    for n in range(20_000):
        obj: dict[str, object] = {
            "value": "x" * rng.randint(0, 200),
            "timestamp": 1_700_000_000_000 + n // 7,
        }
        if n % 3 == 0:
            obj["key"] = f"user-{n % 50}"
        if n % 101 == 0:
            obj["headers"] = {"trace": str(n)}  # the slow path, inside fast chunks
        if n % 997 == 0:
            obj = {"value_base64": base64.b64encode(rng.randbytes(20)).decode(), "timestamp": 5}
        lines.append(json.dumps(obj, separators=(",", ":")).encode())
    data = b"\n".join(lines) + b"\n"
    fast_dir, reference_dir = tmp_path / "fast", tmp_path / "reference"
    for directory in (fast_dir, reference_dir):
        created = cli.run(
            "--data-dir", directory, "topics", "create", "t", "--partitions", "1", data_dir=False
        )
        assert created.status == 0, created.err
    input_file = tmp_path / "in.json"
    input_file.write_bytes(data)
    with input_file.open("rb") as stdin:
        produced = subprocess.run(
            [sys.executable, "-m", "seglog.cli", "--data-dir", str(fast_dir), "produce", "t",
             "--format", "json", "--batch-size", "4096", "--linger-ms", "600000"],
            stdin=stdin, capture_output=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    # The reference: parse_json_line and BatchBuilder(max_batch_bytes=batch.size).
    batches = []
    builder = BatchBuilder(max_batch_bytes=4096)
    for number, line in enumerate(lines, 1):
        record = parse_json_line(number, line, frozenset({0}))
        assert record.timestamp_ms is not None
        args = (record.timestamp_ms, record.key, record.value, record.headers)
        if not builder.try_append(*args):
            batches.append(builder.build())
            builder = BatchBuilder(max_batch_bytes=4096)
            builder.append(*args)
    batches.append(builder.build())
    manager = LogManager.open(BrokerConfig.from_properties({"log.dirs": str(reference_dir)}))
    try:
        log = manager.get_log("t", 0)
        for batch in batches:
            log.append(batch)
    finally:
        manager.close()
    [fast_log] = sorted((fast_dir / "t-0").glob("*.log"))
    reference_log = reference_dir / "t-0" / fast_log.name
    assert fast_log.read_bytes() == reference_log.read_bytes()
    assert len(batches) > 100


# --- a full disk ---------------------------------------------------------------------------------


class DiskFull:
    """A fault hook: the disk fills up at the first ``operation`` on a path ending with
    ``suffix`` (``after``: once it succeeded, else instead of it); from then on every write,
    fsync, creation and rename fails with ENOSPC."""

    FAILING = frozenset({"write", "fsync", "fsync-dir", "create", "rename", "truncate", "mkdir"})

    def __init__(
        self, operation: str, suffix: str, *, after: bool, once_synced: bool = False
    ) -> None:
        self.operation, self.suffix, self.after = operation, suffix, after
        self.armed = False
        self.synced = not once_synced  # once_synced: only after a segment was fsynced

    def _matches(self, operation: str, path: str) -> bool:
        return self.synced and operation == self.operation and path.endswith(self.suffix)

    def __call__(self, operation: str, path: str) -> None:
        if not self.after and self._matches(operation, path):
            self.armed = True
        if self.armed and operation in self.FAILING:
            raise OSError(errno.ENOSPC, "No space left on device", path)

    def completed(self, operation: str, path: str, source: str | None = None) -> None:
        if operation == "fsync" and path.endswith(".log"):
            self.synced = True
        if self.after and self._matches(operation, path):
            self.armed = True


def test_disk_full_at_close_says_the_records_are_safe(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    # The records are written and synced, then the disk is full when the checkpoints are.
    with installed(DiskFull("create", ".tmp", after=False, once_synced=True)):
        result = cli.run("produce", "t", stdin=b"a\nb\nc\n")
    assert result.status == 1
    lines = result.err.splitlines()
    assert lines[0] == "Produced 3 record(s) to topic t."
    error = lines[-1]
    assert error.startswith("seglog: error: writing "), error
    assert "failed: No space left on device" in error
    assert "all 3 record(s) produced are safe (written and synced)" in error
    assert ".tmp" not in error and "Errno" not in error
    assert "checkpoint failed" in error or "seglog-" in error or "meta" in error, error
    # Space returns: the records are there.
    assert cli.ok("consume", "t").out == "a\nb\nc\n"


def test_disk_full_while_appending_says_how_many_were_written(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    lines = b"".join(b"%07d\n" % n for n in range(200_000))  # 1.6 MB: two chunks of input
    with installed(DiskFull("write", ".log", after=True)):  # the first append works, no more
        result = cli.run("produce", "t", "--linger-ms", "0", stdin=lines)
    assert result.status == 1
    summary = result.err.splitlines()[0]
    written = int(summary.split()[1])
    assert 0 < written < 200_000, result.err
    error = result.err.splitlines()[-1]
    assert "failed: No space left on device" in error, error
    assert f"the {written} record(s) written before it" in error
    assert ".tmp" not in error
    consumed = cli.ok("consume", "t").out.splitlines()
    assert consumed == [f"{n:07d}" for n in range(written)]
