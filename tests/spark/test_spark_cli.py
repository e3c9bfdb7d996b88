"""``seglog spark compact|export|stats`` through the real command (in process, so it reuses
the shared Spark session: ``embedded_session`` returns the running one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from seglog.cli.main import main
from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from support.cleaning_data import fill


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    clock = ManualClock(1_700_000_000_000)
    root = tmp_path / "data"
    with open_log_dirs([root], clock=clock) as manager:
        fill(manager, clock, keys=200, records=2000, seed=4)
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().out


def test_spark_compact_cleans_and_reports(
    spark: Any, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "--data-dir", str(data_dir), "spark", "compact", "--json")
    assert status == 0
    results = json.loads(out)["results"]
    assert sorted(f"{r['topic']}-{r['partition']}" for r in results) == [
        "prices-0",
        "prices-1",
        "users-0",
    ]
    assert all(r["error"] is None and r["stats"]["messages_written"] <= 200 for r in results)
    with open_log_dirs([data_dir]) as manager:
        checkpoints = manager.cleaner_checkpoints()
        for r in results:
            log = manager.get_log(r["topic"], r["partition"])
            keys = [rec.key for rec in log.iter_records(log.log_start_offset)]
            assert checkpoints[log.topic_partition] == r["stats"]["end_offset"]
            # one record per key below the checkpoint
            below = [
                rec.key
                for rec in log.iter_records(log.log_start_offset)
                if rec.offset < r["stats"]["end_offset"]
            ]
            assert len(below) == len(set(below)) and keys
    status, out = run(capsys, "spark", "compact", "--data-dir", str(data_dir))
    assert status == 0 and "nothing to clean" in out


def test_spark_cli_needs_a_data_dir(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["spark", "compact"])
    assert status == 1
    assert "--data-dir" in capsys.readouterr().err


def test_spark_export_and_stats(
    spark: Any, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "prices.parquet"
    status, out = run(
        capsys, "--data-dir", str(data_dir), "spark", "export", "prices", "--to", str(target)
    )
    assert status == 0 and "exported" in out
    table = pq.read_table(target)
    keys = table.column("key").to_pylist()
    assert len(keys) == len(set(keys)) > 0
    status, out = run(capsys, "--data-dir", str(data_dir), "spark", "stats", "--json")
    assert status == 0
    rows = json.loads(out)["partitions"]
    assert sorted((r["topic"], r["partition"]) for r in rows) == [
        ("prices", 0),
        ("prices", 1),
        ("users", 0),
    ]
    status, out = run(capsys, "--data-dir", str(data_dir), "spark", "stats", "--topic", "users")
    assert status == 0 and "users" in out


def test_spark_commands_draw_a_progress_bar_only_when_asked(
    spark: Any,
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "users.parquet"
    argv = ["--data-dir", str(data_dir), "spark", "export", "users", "--to", str(target)]
    assert main(argv) == 0
    quiet = capsys.readouterr()
    assert "tasks" not in quiet.err  # not a terminal: no bar
    monkeypatch.setenv("SEGLOG_PROGRESS", "always")
    assert main(argv) == 0
    drawn = capsys.readouterr()
    assert "exporting users" in drawn.err and "tasks" in drawn.err
    assert "exported" in drawn.out and "tasks" not in drawn.out  # the bar stays on stderr
