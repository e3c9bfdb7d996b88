"""``--json`` on every inspection command: one JSON document on stdout, stable keys, real values,
and nothing else printed (no progress bar even when bars are forced)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli, Result

from seglog.cli.main import build_parser

CLEAN_STATUS_KEYS = {
    "topic", "partition", "state", "dirty_ratio", "min_cleanable_dirty_ratio", "cleanable",
    "checkpoint", "checkpoint_reset_reason", "first_dirty_offset", "first_uncleanable_offset",
    "log_start_offset", "log_end_offset", "clean_bytes", "dirty_bytes", "uncleanable_reason",
}  # fmt: skip
CLEAN_PLAN_KEYS = {
    "topic", "partition", "cleanable", "would_clean", "dirty_ratio", "min_cleanable_dirty_ratio",
    "first_dirty_offset", "first_uncleanable_offset", "clean_bytes", "dirty_bytes",
    "max_compaction_delay_ms", "groups", "estimated_keys_max", "map_capacity_keys",
    "estimated_map_use", "state", "uncleanable_reason",
}  # fmt: skip
RUN_KEYS = {
    "previous_horizon", "horizon", "records_read", "records_kept", "records_removed", "keys",
    "bytes_read", "bytes_written", "copy_bytes", "duration_s", "is_partial", "is_noop", "copy",
    "started_ms", "segments",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _bars_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with bars forced on, --json output gets none."""
    monkeypatch.setenv("SEGLOG_PROGRESS", "always")


def document(result: Result) -> Any:
    """The one JSON document of a successful run; stdout holds nothing else, stderr nothing."""
    assert result.status == 0, result.err
    assert result.err == ""
    assert result.out.endswith("\n") and result.out.count("\n") == 1
    return json.loads(result.out)


@pytest.fixture
def topics(cli: Cli) -> Cli:
    """``t`` (2 partitions, delete) with 3 records; ``c`` (compacted, 1 partition) with dups."""
    cli.ok("topics", "create", "t", "--partitions", "2")
    cli.ok("produce", "t", "--key-separator", "=", stdin=b"a=1\nb=2\nc=3\n")
    cli.ok(
        "topics", "create", "c", "--partitions", "1", "--config", "cleanup.policy=compact",
        "--config", "segment.bytes=100", "--config", "min.cleanable.dirty.ratio=0.01",
    )  # fmt: skip
    cli.ok("produce", "c", "--key-separator", "=", stdin=b"k=1\nk=2\nk=3\nj=4\n")
    return cli


def test_topics_list_and_describe(topics: Cli) -> None:
    listed = document(topics.run("topics", "list", "--json"))
    assert [t["name"] for t in listed["topics"]] == ["c", "t"]
    assert {tuple(sorted(t)) for t in listed["topics"]} == {("name", "partitions", "size_bytes")}
    described = document(topics.run("topics", "describe", "t", "--json"))
    assert set(described) == {
        "name",
        "topic_id",
        "overrides",
        "config",
        "partitions",
        "sources",
        "configs_known",
    }
    assert described["name"] == "t" and len(described["partitions"]) == 2
    assert sum(p["log_end_offset"] for p in described["partitions"]) == 3
    assert listed["topics"][1]["size_bytes"] == sum(
        p["size_bytes"] for p in described["partitions"]
    )


def test_cleaner_status_dry_run_and_clean_once(topics: Cli) -> None:
    status = document(topics.run("cleaner", "status", "--json"))
    assert status["topic"] is None
    [row] = status["partitions"]
    assert set(row) == CLEAN_STATUS_KEYS
    assert (row["topic"], row["partition"], row["log_end_offset"]) == ("c", 0, 4)
    assert row["checkpoint"] is None and row["state"] == "none"

    plan = document(topics.run("clean", "--dry-run", "--json"))
    assert set(plan) == {"dry_run", "topic", "map_capacity_keys", "partitions"}
    [entry] = plan["partitions"]
    assert set(entry) == CLEAN_PLAN_KEYS
    assert plan["dry_run"] is True and entry["would_clean"] is True

    cleaned = document(topics.run("clean", "--once", "--json"))
    assert set(cleaned) == {"dry_run", "topic", "results", "metrics"}
    [result] = cleaned["results"]
    assert (result["topic"], result["partition"], result["error"]) == ("c", 0, None)
    assert result["stats"]["bytes_read"] > result["stats"]["bytes_written"] > 0
    assert cleaned["metrics"]["cleaner-recopy-percent"] == int(
        100 * result["stats"]["bytes_written"] / result["stats"]["bytes_read"]
    )
    after = document(topics.run("cleaner", "status", "--json", "--topic", "c"))
    assert after["partitions"][0]["checkpoint"] == after["partitions"][0]["first_dirty_offset"]


def test_compact_and_compaction_status(topics: Cli) -> None:
    compacted = document(topics.run("compact", "c", "--json"))
    assert set(compacted) == {"topic", "partition", "results"}
    [result] = compacted["results"]
    assert set(result["run"]) == RUN_KEYS
    assert (result["run"]["horizon"], result["run"]["records_kept"]) == (3, 2)
    status = document(topics.run("compaction-status", "c", "--json"))
    assert set(status) == {"topic", "partitions"}
    [row] = status["partitions"]
    assert set(row) == {"topic", "partition", "state", "message", "figures"}
    assert row["state"] == "SUCCESS" and row["figures"]["horizon"] == 3


def test_verify(topics: Cli) -> None:
    verified = document(topics.run("verify", "t", "--json"))
    assert set(verified) == {"topic", "ok", "partitions"}
    assert verified["ok"] is True
    assert sum(p["records_checked"] for p in verified["partitions"]) == 3


def test_retention_plan_and_run(topics: Cli, tmp_path: Path) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_text('{"partitions": [{"topic": "c", "partition": 0, "offset": 3}]}')
    # compact-only topics refuse delete-records; give c the delete policy too.
    topics.ok("topics", "alter", "c", "--config", "cleanup.policy=compact,delete")
    moved = document(topics.run("delete-records", "--offset-json-file", offsets, "--json"))
    assert moved
    plan = document(topics.run("retention", "--once", "--dry-run", "--json"))
    assert set(plan) == {"dry_run", "deleted", "log_start_offsets"}
    assert plan["dry_run"] is True and plan["deleted"]
    assert {d["rule"] for d in plan["deleted"]} == {"log start offset"}
    assert set(plan["deleted"][0]) == {
        "topic", "partition", "base_offset", "size_bytes", "rule", "reason",
    }  # fmt: skip
    done = document(topics.run("retention", "--once", "--json"))
    assert done["dry_run"] is False
    assert done["deleted"] == plan["deleted"]
    assert done["log_start_offsets"] == plan["log_start_offsets"]


def test_log_dirs_and_metrics(topics: Cli, data_dir: Path) -> None:
    plain = topics.ok("log-dirs", "describe")
    described = document(topics.run("log-dirs", "describe", "--json"))
    assert described == json.loads(plain.out)
    [log_dir] = described["brokers"][0]["logDirs"]
    assert log_dir["logDir"] == str(data_dir.resolve())
    assert sorted(p["partition"] for p in log_dir["partitions"]) == ["c-0", "t-0", "t-1"]
    metrics = document(topics.run("metrics", "--json"))
    names = [m["name"] for m in metrics["metrics"]]
    assert "kafka_log_Log_Size" in names and len(names) == len(set(names))


#: Every command that inspects (reads, reports or plans) and what it is: each takes --json.
INSPECTION_COMMANDS = [
    ("topics", "list"),
    ("topics", "describe"),
    ("log-dirs", "describe"),
    ("cleaner", "status"),
    ("clean",),  # --dry-run: the plan
    ("retention",),  # --dry-run: the plan
    ("compaction-status",),
    ("compact",),
    ("delete-records",),
    ("verify",),
    ("metrics",),
    ("dump-log",),
    ("demo",),
    ("spark", "stats"),
    ("spark", "compact"),
]


@pytest.mark.parametrize("path", INSPECTION_COMMANDS, ids=" ".join)
def test_every_inspection_command_takes_json(path: tuple[str, ...]) -> None:
    """The parser of each inspection command accepts ``--json`` (the runs above and in the
    commands' own tests check what it prints)."""
    parser = build_parser()
    for word in path:
        (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = subparsers.choices[word]
    options = {option for action in parser._actions for option in action.option_strings}
    assert "--json" in options, path
