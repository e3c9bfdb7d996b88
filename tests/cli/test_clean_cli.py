"""``seglog clean`` and ``seglog cleaner status``: real files, the real cleaner, in process."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli

from seglog.cli import clean
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from support.legacy_messages import legacy_message

COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "2048",
    "min.cleanable.dirty.ratio": "0.01",
}
KEYS = 5
RECORDS_PER_BATCH = 10
ROUNDS = 6  # one batch per round, each rolled into its own segment
END = ROUNDS * RECORDS_PER_BATCH


def build_compacted(data_dir: Path, topic: str, *, legacy_round: int | None = None) -> None:
    """A compacted topic of ``ROUNDS`` closed segments, each one batch writing every key twice
    (so a round keeps one record per key); ``legacy_round``: that round is a legacy (v1)
    message set written into its segment as a pre-0.11 broker wrote it, which the cleaner
    refuses. The active segment is empty (the log rolled after the last batch)."""
    data_dir.mkdir(exist_ok=True)
    manager = open_log_dirs([data_dir])
    try:
        manager.create_topic(topic, 1, COMPACTED)
        now = int(time.time() * 1000)
        for r in range(ROUNDS):
            log = manager.get_log(topic, 0)
            if r == legacy_round:
                segment = log.active_segment.log_path
                manager.close()
                with open(segment, "ab") as handle:
                    for i in range(RECORDS_PER_BATCH):
                        handle.write(
                            legacy_message(
                                r * RECORDS_PER_BATCH + i,
                                1,
                                f"k{i % KEYS}".encode(),
                                f"v{r}-{i}".encode() * 5,
                                timestamp=now,
                            )
                        )
                manager = open_log_dirs([data_dir])
                log = manager.get_log(topic, 0)
            else:
                builder = BatchBuilder()
                for i in range(RECORDS_PER_BATCH):
                    builder.append(now, f"k{i % KEYS}".encode(), f"v{r}-{i}".encode() * 5)
                log.append(builder.build())
            log.roll()
    finally:
        manager.close()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns): to see that nothing changed."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def segment_files(partition_dir: Path) -> dict[str, int]:
    """The live ``.log`` files of a partition with their sizes."""
    return {p.name: p.stat().st_size for p in sorted(partition_dir.glob("*.log"))}


def table(cli: Cli, *args: str) -> list[list[str]]:
    """A command's table output, split into cells (cells hold no spaces here but the last)."""
    return [line.split() for line in cli.ok(*args).lines]


def as_json(cli: Cli, *args: str) -> dict[str, Any]:
    """A command's ``--json`` output, parsed (it must be one document on one line)."""
    lines = cli.ok(*args, "--json").lines
    assert len(lines) == 1
    document: dict[str, Any] = json.loads(lines[0])
    return document


def consumed(cli: Cli, topic: str) -> list[tuple[str, str]]:
    """(key, value) of every record of the topic, in offset order."""
    rows = [json.loads(line) for line in cli.ok("consume", topic, "--format", "json").lines]
    return [(row["key"], row["value"]) for row in rows]


def checkpoint_entries(data_dir: Path) -> list[str]:
    """The entry lines of ``cleaner-offset-checkpoint`` (after version and count)."""
    path = data_dir / "cleaner-offset-checkpoint"
    return path.read_text().splitlines()[2:] if path.exists() else []


@contextmanager
def reuse(manager: LogManager) -> Iterator[LogManager]:
    """``open_manager`` stand-in handing the commands a manager this test holds open."""
    yield manager


# --- usage ------------------------------------------------------------------------------------


def test_once_is_required_unless_dry_run(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    result = cli.run("clean")
    assert result.status == 2
    assert result.err.startswith("usage: seglog clean")
    assert "--once is required (or --dry-run)" in result.err and "seglog maintain" in result.err
    assert result.out == ""


def test_read_only_allows_only_the_dry_run(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    files = snapshot(data_dir)
    result = cli.run("clean", "--once", "--read-only")
    assert result.status == 2
    assert "--read-only open cannot do" in result.err and "--dry-run" in result.err
    cli.ok("clean", "--dry-run", "--read-only")
    assert snapshot(data_dir) == files


def test_cleaner_needs_an_action(cli: Cli, data_dir: Path) -> None:
    result = cli.run("cleaner")
    assert result.status == 2
    assert "an action is required (status)" in result.err


def test_unknown_and_invalid_topics(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    for args in (
        ("clean", "--once"),
        ("clean", "--dry-run"),
        ("cleaner", "status"),
    ):
        result = cli.run(*args, "--topic", "nope")
        assert result.status == 1, args
        assert result.err.startswith("seglog: error: topic 'nope' does not exist"), args
        assert result.err.count("\n") == 1 and "topics list" in result.err, args
        invalid = cli.run(*args, "--topic", "a/b")
        assert invalid.status == 2, args
        assert "--topic: " in invalid.err, args
    assert checkpoint_entries(data_dir) == []


# --- dry run, clean --once, status --------------------------------------------------------------


def test_dry_run_lists_the_partition_and_changes_nothing(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    files = snapshot(data_dir)

    rows = table(cli, "clean", "--dry-run")
    assert rows[0] == list(clean.PLAN_HEADER)
    partition, cleanable, ratio, min_ratio, dirty_range, clean_b, dirty_b, keys, use = rows[1][:9]
    assert (partition, cleanable, ratio, min_ratio) == ("c-0", "yes", "1.000", "0.01")
    assert dirty_range == f"[0,{END})"
    assert int(clean_b) == 0 and int(dirty_b) == sum(segment_files(data_dir / "c-0").values())
    assert int(keys) == END and use == "0.0%"
    assert " ".join(rows[1][9:]) == "[0,10,20,30,40] [50]"  # 2048-byte groups of 351-byte logs
    summary = cli.ok("clean", "--dry-run").lines[-1]
    assert summary.startswith("Would clean 1 of 1 compacted partition (offset map: ")

    document = as_json(cli, "clean", "--dry-run", "--once")  # --once is allowed with it
    assert document["dry_run"] is True and document["topic"] is None
    (plan,) = document["partitions"]
    assert plan["topic"] == "c" and plan["partition"] == 0
    assert plan["cleanable"] is True and plan["would_clean"] is True
    assert plan["dirty_ratio"] == 1.0 and plan["min_cleanable_dirty_ratio"] == 0.01
    assert (plan["first_dirty_offset"], plan["first_uncleanable_offset"]) == (0, END)
    assert plan["groups"] == [[0, 10, 20, 30, 40], [50]]
    assert plan["estimated_keys_max"] == END
    assert plan["map_capacity_keys"] == document["map_capacity_keys"] > END
    assert plan["state"] == "none" and plan["uncleanable_reason"] is None

    status = table(cli, "cleaner", "status")
    assert status == [
        list(clean.STATUS_HEADER),
        ["c-0", "none", "1.000", "-", "0", str(END), "0", str(END), "-"],
    ]
    assert snapshot(data_dir) == files  # not a byte, name or mtime changed


def test_clean_once_cleans_and_writes_the_checkpoint(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    before = sum(segment_files(data_dir / "c-0").values())

    result = cli.ok("clean", "--once")
    # Kafka's statistics of the round, then the summary line.
    assert f"c-0 (dirty section = [0, {END}])" in result.lines[0]
    assert f"\tStart size: 0.0 MB ({END} messages)" in result.lines
    assert f"\tEnd size: 0.0 MB ({KEYS} messages)" in result.lines
    assert result.lines[-1].startswith(f"Cleaned 1 partition ({before} bytes read, ")
    assert "*.deleted" in result.lines[-1]
    assert checkpoint_entries(data_dir) == [f"c 0 {END}"]

    # The last value of each key is left, at its offset.
    assert consumed(cli, "c") == [(f"k{i}", f"v{ROUNDS - 1}-{i + KEYS}" * 5) for i in range(KEYS)]
    status = table(cli, "cleaner", "status", "--topic", "c")
    assert status[1] == ["c-0", "none", "0.000", str(END), str(END), str(END), "0", str(END), "-"]
    (entry,) = as_json(cli, "cleaner", "status")["partitions"]
    assert entry["checkpoint"] == entry["first_dirty_offset"] == END
    assert entry["dirty_bytes"] == 0 and entry["cleanable"] is False
    assert entry["uncleanable_reason"] is None and entry["checkpoint_reset_reason"] is None

    again = cli.ok("clean", "--once")
    assert again.lines == [
        "Nothing to clean: no compacted partition is cleanable now (of 1: the dirty ratio is not "
        "above min.cleanable.dirty.ratio); see 'seglog clean --dry-run'."
    ]
    assert table(cli, "clean", "--dry-run")[1][:2] == ["c-0", "no"]


def test_clean_once_json(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    document = as_json(cli, "clean", "--once", "--topic", "c")
    assert document["dry_run"] is False and document["topic"] == "c"
    (result,) = document["results"]
    assert (result["topic"], result["partition"]) == ("c", 0)
    assert result["error"] is None and result["uncleanable"] is False
    stats = result["stats"]
    assert (stats["first_dirty_offset"], stats["end_offset"]) == (0, END)
    assert (stats["messages_read"], stats["messages_written"]) == (END, KEYS)
    assert stats["is_partial"] is False and stats["groups"] == 2
    metrics = document["metrics"]
    assert metrics["uncleanable-partitions-count"] == 0.0
    assert metrics["DeadThreadCount"] == 0.0
    assert metrics["cleaner-recopy-percent"] == float(stats["recopy_percent"])

    nothing = as_json(cli, "clean", "--once")
    assert nothing["results"] == []


def test_non_compacted_topics_are_not_listed(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "plain", "--partitions", "2")
    cli.ok("produce", "plain", "--key-separator", ":", stdin=b"a:1\na:2\n")
    assert cli.ok("cleaner", "status", "--topic", "plain").lines == [
        "No compacted partitions: topic plain is not compacted (cleanup.policy=delete)."
    ]
    assert cli.ok("cleaner", "status").lines == [
        "No compacted partitions: no topic has cleanup.policy=compact."
    ]
    assert as_json(cli, "cleaner", "status", "--topic", "plain") == {
        "topic": "plain",
        "partitions": [],
    }
    assert cli.ok("clean", "--dry-run", "--topic", "plain").lines == [
        "Nothing to clean: topic plain is not compacted (cleanup.policy=delete); nothing was "
        "changed (--dry-run)."
    ]
    assert cli.ok("clean", "--once").lines == [
        "Nothing to clean: no topic has cleanup.policy=compact."
    ]

    build_compacted(data_dir, "c")  # a compacted topic beside it: only that one is listed
    assert [row[0] for row in table(cli, "cleaner", "status")[1:]] == ["c-0"]
    assert [row[0] for row in table(cli, "clean", "--dry-run")[1:-1]] == ["c-0"]


# --- failures -------------------------------------------------------------------------------


def test_a_legacy_partition_is_uncleanable(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "c")
    build_compacted(data_dir, "old", legacy_round=2)
    old_files = segment_files(data_dir / "old-0")

    result = cli.run("clean", "--once")
    assert result.status == 1
    # KIP-346: the bad partition is skipped with its reason, the other one is cleaned.
    failure = [line for line in result.lines if line.startswith("old-0: ")]
    assert failure == [
        "old-0: not cleaned, marked uncleanable: LegacyFormatError: old-0: "
        "00000000000000000020.log holds a legacy (v0/v1) message set at position 0; "
        "seglog cleans only v2 batches (Kafka 4 rewrites legacy entries as v2 while cleaning)"
    ]
    assert any("c-0 (dirty section" in line for line in result.lines)
    assert result.lines[-1].startswith("Cleaned 1 partition (")
    assert "; 1 failed;" in result.lines[-1]
    assert result.err == ""  # reported once, on stdout (the engine's log line is not repeated)
    assert checkpoint_entries(data_dir) == [f"c 0 {END}"]
    assert segment_files(data_dir / "old-0") == old_files  # untouched

    # The mark lives in the process that cleaned: a new one tries (and fails) again.
    document = json.loads(cli.run("clean", "--once", "--json").out)
    (entry,) = document["results"]
    assert entry["topic"] == "old" and entry["stats"] is None and entry["uncleanable"] is True
    assert entry["error"].startswith("LegacyFormatError: ")
    assert document["metrics"]["uncleanable-partitions-count"] == 1.0


def test_status_shows_the_uncleanable_reason_of_the_process_that_cleaned(
    cli: Cli, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_compacted(data_dir, "old", legacy_round=0)
    manager = open_log_dirs([data_dir])
    try:
        monkeypatch.setattr(clean, "open_manager", lambda *_a, **_k: reuse(manager))
        result = cli.run("clean", "--once")  # through the command, in this manager
        assert result.status == 1
        assert "old-0: not cleaned, marked uncleanable: LegacyFormatError" in result.out

        status = table(cli, "cleaner", "status")
        assert status[1][:8] == ["old-0", "none", "1.000", "-", "0", str(END), "0", str(END)]
        assert " ".join(status[1][8:]).startswith("LegacyFormatError: old-0: ")
        (entry,) = as_json(cli, "cleaner", "status")["partitions"]
        assert "legacy (v0/v1) message set at position 0" in entry["uncleanable_reason"]

        dry = table(cli, "clean", "--dry-run")
        assert dry[1][:3] == ["old-0", "no", "(uncleanable)"]
        (plan,) = as_json(cli, "clean", "--dry-run")["partitions"]
        assert plan["cleanable"] is True and plan["would_clean"] is False
        assert plan["uncleanable_reason"] == entry["uncleanable_reason"]

        # Marked, the partition is skipped: this process has nothing left to clean.
        assert cli.ok("clean", "--once").lines == [
            "Nothing to clean: no compacted partition is cleanable now (of 1: the dirty ratio "
            "is not above min.cleanable.dirty.ratio); see 'seglog clean --dry-run'."
        ]
    finally:
        manager.close()


def test_an_interrupt_stops_the_round_before_anything_is_swapped(
    cli: Cli, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_compacted(data_dir, "c")
    files = segment_files(data_dir / "c-0")
    pre_pass = Cleaner.pre_pass

    def interrupted(self: Cleaner, *args: Any, **kwargs: Any) -> Any:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while the round runs
        return pre_pass(self, *args, **kwargs)

    monkeypatch.setattr(Cleaner, "pre_pass", interrupted)
    result = cli.run("clean", "--once")
    assert result.status == 130
    assert result.lines == [
        "c-0: not cleaned: cleaning c-0 stopped: the cleaner is shutting down",
        "Cleaned 0 partitions; 1 failed.",
    ]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert segment_files(data_dir / "c-0") == files
    leftovers = [p.name for p in (data_dir / "c-0").iterdir() if p.suffix in {".cleaned", ".swap"}]
    assert leftovers == []
    assert checkpoint_entries(data_dir) == []
    monkeypatch.undo()
    assert cli.ok("clean", "--once").lines[-1].startswith("Cleaned 1 partition (")


# --- formatting -------------------------------------------------------------------------------


def test_groups_and_map_use_text() -> None:
    assert clean.groups_text([]) == "-"
    assert clean.groups_text([[0, 10], [20]]) == "[0,10] [20]"
    assert clean.groups_text([list(range(0, 70, 10))]) == "[0,10,...,60 (7 segments)]"
    many = [[i] for i in range(8)]
    assert clean.groups_text(many) == "[0] [1] [2] [3] [4] [5] ... (8 groups)"
    assert clean.map_use_text(5, 1000) == "0.5%"
    assert clean.map_use_text(3000, 1000) == "300% (partial)"
    assert clean.map_use_text(1, 0) == "-"
