"""``seglog verify TOPIC``: real files in a temp data dir, damaged on disk, checked read-only."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.batch import encode_batch
from seglog.format.checkpoint import encode_offset_checkpoint
from seglog.format.reader import BatchReader
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import CLEAN_SHUTDOWN_FILE, CLEANER_OFFSET_CHECKPOINT

T0 = 1_700_000_000_000
SEGMENT_BYTES = "600"


def create(cli: Cli, topic: str, *configs: str, partitions: int = 1) -> None:
    """``topics create`` with small segments and a dense index."""
    args = ["--config", f"segment.bytes={SEGMENT_BYTES}", "--config", "index.interval.bytes=100"]
    for config in configs:
        args += ["--config", config]
    cli.ok("topics", "create", topic, "--partitions", str(partitions), *args)


def produce(cli: Cli, topic: str, rows: list[dict[str, Any]]) -> None:
    """``produce --format json`` of ``rows``, a millisecond apart, in one call (appends of
    about half a segment, so several batches and index entries per segment)."""
    lines = [json.dumps({"timestamp": T0 + i, **row}) + "\n" for i, row in enumerate(rows)]
    cli.ok(
        "produce", topic, "--format", "json", "--batch-size", "100", stdin="".join(lines).encode()
    )


def fill(cli: Cli, topic: str, count: int = 40, partition: int = 0) -> None:
    produce(
        cli,
        topic,
        [{"key": f"k{i}", "value": f"value-{i:03d}", "partition": partition} for i in range(count)],
    )


def partition_dir(data_dir: Path, topic: str, partition: int = 0) -> Path:
    return data_dir / f"{topic}-{partition}"


def segment_logs(data_dir: Path, topic: str, partition: int = 0) -> list[Path]:
    return sorted(partition_dir(data_dir, topic, partition).glob("*.log"))


def batch_count(paths: list[Path]) -> int:
    return sum(len(list(BatchReader(p.read_bytes()))) for p in paths)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns): to see that nothing changed."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def verify_json(cli: Cli, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli.run("verify", *args, "--json")
    assert len(result.lines) == 1, result.out  # one JSON document, on one line
    document: dict[str, Any] = json.loads(result.out)
    return result.status, document


def write_cleaner_checkpoint(data_dir: Path, offsets: dict[TopicPartition, int]) -> None:
    (data_dir / CLEANER_OFFSET_CHECKPOINT).write_bytes(encode_offset_checkpoint(offsets))


def flip_middle_batch(path: Path) -> int:
    """Flip a byte inside the records of the middle batch of ``path``; its position."""
    batches = list(BatchReader(path.read_bytes()))
    position = batches[len(batches) // 2].position
    data = bytearray(path.read_bytes())
    data[position + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    return position


# --- healthy topics ----------------------------------------------------------------------------


def test_healthy_topic_is_ok_and_nothing_is_written(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", partitions=2)
    fill(cli, "t", partition=0)
    fill(cli, "t", 10, partition=1)
    assert len(segment_logs(data_dir, "t")) >= 3
    before = snapshot(data_dir)
    result = cli.run("verify", "t")
    assert result.status == 0, result.out + result.err
    assert result.lines[0].startswith("t-0: OK (")
    assert "40 records" in result.lines[0]
    assert result.lines[1].startswith("t-1: OK (") and "10 records" in result.lines[1]
    assert result.lines[-1] == "Verified 2 partitions of topic t: all OK."
    assert snapshot(data_dir) == before  # read-only: no lock, checkpoint or marker written


def test_json_of_a_healthy_topic(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", partitions=2)
    fill(cli, "t", partition=0)
    status, document = verify_json(cli, "t")
    assert status == 0
    assert document["topic"] == "t" and document["ok"] is True
    first = document["partitions"][0]
    assert first["partition"] == 0 and first["ok"] is True
    assert first["problems"] == [] and first["problems_omitted"] == 0
    assert first["records_checked"] == 40
    assert first["batches_checked"] == batch_count(segment_logs(data_dir, "t")) > 3
    assert first["log_end_offset"] == 40 and first["log_start_offset"] == 0
    assert first["segments_checked"] == len(segment_logs(data_dir, "t"))
    assert first["bytes_checked"] == sum(p.stat().st_size for p in segment_logs(data_dir, "t"))
    assert first["compacted"] is False and first["cleaner_checkpoint"] is None
    assert [p["partition"] for p in document["partitions"]] == [0, 1]


def test_partition_option(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", partitions=3)
    fill(cli, "t", 5, partition=2)
    result = cli.run("verify", "t", "--partition", "2")
    assert result.status == 0
    assert result.lines[0].startswith("t-2: OK (") and "5 records" in result.lines[0]
    assert result.lines[-1] == "Verified 1 partition of topic t: all OK."


# --- problems ------------------------------------------------------------------------------------


def test_crc_damage_exits_1_naming_file_and_position(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", partitions=2)
    fill(cli, "t", partition=0)
    fill(cli, "t", 10, partition=1)
    damaged = segment_logs(data_dir, "t")[1]
    position = flip_middle_batch(damaged)
    result = cli.run("verify", "t")
    assert result.status == 1
    assert result.lines[0].startswith("t-0: 1 problem (")
    line = result.lines[1]
    assert line.startswith(f"  crc  {damaged}  position {position}  offset -  ")
    assert "CRC mismatch" in line
    assert result.lines[2].startswith("t-1: OK (")
    assert result.lines[-1] == "Verified 2 partitions of topic t: 1 problem in 1 partition."

    status, document = verify_json(cli, "t")
    assert status == 1 and document["ok"] is False
    bad, good = document["partitions"]
    assert bad["ok"] is False and good["ok"] is True
    [problem] = bad["problems"]
    assert problem["kind"] == "crc"
    assert (problem["path"], problem["position"], problem["offset"]) == (
        str(damaged),
        position,
        None,
    )


def test_damaged_index_entry(cli: Cli, data_dir: Path) -> None:
    create(cli, "t")
    fill(cli, "t")
    index = sorted(partition_dir(data_dir, "t").glob("*.index"))[0]
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 0)
    struct.pack_into(">ii", data, 0, relative, position + 3)  # inside a batch
    index.write_bytes(bytes(data))
    status, document = verify_json(cli, "t")
    assert status == 1
    [problem] = document["partitions"][0]["problems"]
    assert problem["kind"] == "index-entry"
    assert (problem["path"], problem["position"]) == (str(index), 0)
    assert "is not the start of a batch" in problem["message"]


def test_torn_tail_after_a_crash_is_reported_and_left_on_disk(cli: Cli, data_dir: Path) -> None:
    create(cli, "t")
    fill(cli, "t")
    active = segment_logs(data_dir, "t")[-1]
    size = active.stat().st_size
    with open(active, "ab") as handle:
        handle.write(encode_batch([Record(0, T0, b"k", b"half written")])[:30])
    (data_dir / CLEAN_SHUTDOWN_FILE).unlink()  # the crash: no clean shutdown
    result = cli.run("verify", "t")
    assert result.status == 1
    assert "seglog: recovery:" in result.err  # what the read-only open repaired in memory
    assert result.lines[1].startswith(f"  torn-tail  {active}  position {size}  ")
    assert active.stat().st_size == size + 30
    assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_compacted_topic_below_the_cleaner_checkpoint(cli: Cli, data_dir: Path) -> None:
    create(cli, "c", "cleanup.policy=compact")
    rows: list[dict[str, Any]] = [{"key": f"k{i}", "value": f"v{i}"} for i in range(20)]
    rows[12] = {"key": "k3", "value": "again"}  # offset 12 repeats the key of offset 3
    rows[15] = {"key": "k15", "value": None}  # a tombstone without a delete horizon
    produce(cli, "c", rows)

    result = cli.run("verify", "c")  # no checkpoint: the key checks do not run
    assert result.status == 0
    assert "no cleaner checkpoint: key checks skipped" in result.lines[0]

    write_cleaner_checkpoint(data_dir, {TopicPartition("c", 0): 18})
    status, document = verify_json(cli, "c")
    assert status == 1
    partition = document["partitions"][0]
    assert partition["compacted"] is True and partition["cleaner_checkpoint"] == 18
    found = [(p["kind"], p["offset"]) for p in partition["problems"]]
    assert sorted(found) == [("duplicate-key", 12), ("tombstone-without-horizon", 15)]
    duplicate = next(p for p in partition["problems"] if p["kind"] == "duplicate-key")
    assert "also at offset 3" in duplicate["message"]
    assert duplicate["path"].endswith(".log") and duplicate["position"] is not None

    write_cleaner_checkpoint(data_dir, {TopicPartition("c", 0): 10})  # below both
    result = cli.run("verify", "c")
    assert result.status == 0
    assert "keys checked below the cleaner checkpoint 10" in result.lines[0]


def test_unreadable_cleaner_checkpoint_is_a_problem_of_a_compacted_topic(
    cli: Cli, data_dir: Path
) -> None:
    create(cli, "c", "cleanup.policy=compact")
    create(cli, "d")
    produce(cli, "c", [{"key": "k", "value": "v"}])
    (data_dir / CLEANER_OFFSET_CHECKPOINT).write_bytes(b"garbage\n")
    status, document = verify_json(cli, "c")
    assert status == 1
    [problem] = document["partitions"][0]["problems"]
    assert problem["kind"] == "checkpoint"
    assert problem["path"] == str(data_dir / CLEANER_OFFSET_CHECKPOINT)
    assert "key checks skipped" in problem["message"]
    assert cli.run("verify", "d").status == 0  # not compacted: the file is not used


# --- errors and usage --------------------------------------------------------------------------


def test_unknown_topic_and_partition(cli: Cli, data_dir: Path) -> None:
    create(cli, "t")
    result = cli.run("verify", "nope")
    assert result.status == 1 and result.out == ""
    assert result.err.strip().startswith("seglog: error: topic 'nope' does not exist")
    assert len(result.err.strip().splitlines()) == 1
    result = cli.run("verify", "t", "--partition", "5")
    assert result.status == 1
    assert "topic 't' has no partition 5" in result.err


@pytest.mark.parametrize(
    "args",
    [
        ("verify",),
        ("verify", "t", "--partition", "-1"),
        ("verify", "t", "--partition", "x"),
        ("verify", "bad/name"),
        ("verify", "t", "--no-such-option"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, data_dir: Path, args: tuple[str, ...]) -> None:
    create(cli, "t")
    result = cli.run(*args)
    assert result.status == 2, result.err
    assert "usage: seglog" in result.err


def test_missing_data_dir_is_an_error(cli: Cli, data_dir: Path) -> None:
    result = cli.run("verify", "t")
    assert result.status == 1
    assert "does not exist" in result.err


# --- the corpus --------------------------------------------------------------------------------


def _corpus_data_dirs() -> list[object]:
    root = corpus_root()
    dirs = sorted({p.parent.parent for p in root.rglob("*.log")}) if root is not None else []
    if root is None or not dirs:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dirs]


@pytest.mark.compat
@pytest.mark.parametrize("corpus_data_dir", _corpus_data_dirs())
def test_corpus_topics_verify_ok(
    cli: Cli, corpus_data_dir: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Every topic of a broker's data dir (the corpus, opened read-only, never written)."""
    broker = BrokerConfig.from_properties({"log.dirs": str(corpus_data_dir)})
    with LogManager.open(broker, read_only=True) as manager:
        topics = manager.topic_names()
    before = snapshot(corpus_data_dir)
    for topic in topics:
        result = cli.run("--data-dir", corpus_data_dir, "verify", topic, data_dir=False)
        assert result.status == 0, result.out + result.err
        assert result.lines[-1].endswith("all OK.")
    assert snapshot(corpus_data_dir) == before


def test_verify_uses_the_last_cleaning_round_time(cli: Cli) -> None:
    """After ``clean --once`` the round is in ``seglog-cleaner-history.json``; verify judges
    tombstone horizons against it (a tombstone whose horizon a recorded round passed is
    reported), and deleting the topic forgets the history."""
    create(cli, "h", "cleanup.policy=compact", "min.cleanable.dirty.ratio=0.01")
    produce(cli, "h", [{"key": "a", "value": "1"}, {"key": "a", "value": None}] * 30)
    produce(cli, "h", [{"key": "b", "value": "2"}] * 30)
    cli.ok("clean", "--once")
    history_path = cli.data_dir / "seglog-cleaner-history.json"
    history = json.loads(history_path.read_text())
    [round_] = history["partitions"]["h-0"]
    assert round_["round_ms"] > 0 and round_["end_offset"] > 0
    assert verify_json(cli, "h")[0] == 0
    round_["round_ms"] += 10 * 86_400_000  # a later round that should have dropped it
    history_path.write_text(json.dumps(history))
    status, document = verify_json(cli, "h")
    assert status == 1
    assert "expired-tombstone" in json.dumps(document)
    cli.ok("topics", "delete", "h")
    assert "h-0" not in json.loads(history_path.read_text())["partitions"]
