"""Errors and figures a user can act on: ``--data-dir`` naming a file, a bad ``report --out``,
``clean --once``'s uncleanable mark seen by ``cleaner status`` in another process, the
report's cleaner bytes equal to ``clean --once``'s, plurals, and the README's tour leaving
nothing in the repository."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from cli_support import Cli
from report_support import parse_page
from test_clean_cli import build_compacted

from seglog.testing.crash import installed

ROOT = Path(__file__).resolve().parents[2]


# --- --data-dir naming a file ------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [("topics", "list"), ("topics", "create", "t"), ("consume", "t"), ("produce", "t")],
)
def test_data_dir_naming_a_file_says_it_is_a_file(
    cli: Cli, tmp_path: Path, command: tuple[str, ...]
) -> None:
    file = tmp_path / "not-a-dir"
    file.write_text("x")
    result = cli.run("--data-dir", file, *command, data_dir=False)
    assert result.status == 1
    assert f"log directory {file} is a file, not a directory" in result.err, result.err
    assert "does not exist" not in result.err
    assert file.read_text() == "x"


# --- report --out ------------------------------------------------------------------------------
def test_report_out_errors_name_the_path_given(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    cli.ok("topics", "create", "t")
    missing = tmp_path / "no-such-dir" / "r.html"
    result = cli.run("report", "--out", missing)
    assert result.status == 1
    assert f"--out {missing}: the directory {missing.parent} does not exist" in result.err
    result = cli.run("report", "--out", tmp_path)
    assert f"--out {tmp_path}: is a directory; give a file name" in result.err
    file = tmp_path / "plain"
    file.write_text("x")
    result = cli.run("report", "--out", file / "r.html")
    assert f"{file} is not a directory" in result.err
    assert ".tmp" not in result.err


def test_report_out_write_failure_names_the_file_and_leaves_no_tmp(
    cli: Cli, data_dir: Path, tmp_path: Path
) -> None:
    cli.ok("topics", "create", "t")
    out = tmp_path / "report.html"

    def disk_full(operation: str, path: str) -> None:
        if operation == "write" and path.endswith("report.html.tmp"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    with installed(disk_full):
        result = cli.run("report", "--out", out)
    assert result.status == 1
    assert str(out) in result.err and "No space left on device" in result.err, result.err
    assert ".tmp" not in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no report, no .tmp
    assert cli.ok("report", "--out", out).lines == [str(out)]


# --- clean --once and cleaner status agree -----------------------------------------------------
def test_cleaner_status_shows_what_clean_once_marked(cli: Cli, data_dir: Path) -> None:
    build_compacted(data_dir, "old", legacy_round=0)
    build_compacted(data_dir, "c")
    result = cli.run("clean", "--once")
    assert result.status == 1
    (line,) = [x for x in result.lines if x.startswith("old-0: ")]
    reason = line.removeprefix("old-0: not cleaned, marked uncleanable: ")
    assert reason != line and reason.startswith("LegacyFormatError: ")

    # cleaner status is a new process: it shows the mark and the reason, not "-"
    status = cli.ok("cleaner", "status").lines
    (row,) = [x for x in status if x.startswith("old-0 ")]
    assert row.rstrip().endswith(reason), row
    (clean_row,) = [x for x in status if x.startswith("c-0 ")]
    assert clean_row.rstrip().endswith("-")
    document = json.loads(cli.ok("cleaner", "status", "--json").out)
    reasons = {p["topic"]: p["uncleanable_reason"] for p in document["partitions"]}
    assert reasons == {"old": reason, "c": None}

    # a new pass retries it (as a restarted broker): it fails again and the mark stays
    again = cli.run("clean", "--once", "--topic", "old")
    assert again.status == 1 and "marked uncleanable" in again.out
    assert cli.ok("cleaner", "status", "--topic", "old").lines[1].rstrip().endswith(reason)


# --- the report's cleaner bytes are clean --once's ---------------------------------------------
def test_report_cleaner_bytes_equal_the_clean_output(
    cli: Cli, data_dir: Path, tmp_path: Path
) -> None:
    build_compacted(data_dir, "c")
    summary = cli.ok("clean", "--once").lines[-1]
    match = re.search(r"\((\d+) bytes read, (\d+) written\)", summary)
    assert match, summary
    read, written = match.groups()
    out = tmp_path / "report.html"
    cli.ok("report", "--out", out)
    page = parse_page(out.read_text())
    header, row = page.rows[("c-0", "cleaner-history")]
    assert header[2:4] == ["bytes read", "bytes written"]
    assert row[2:4] == [read, written]
    assert int(read) > int(written) > 0


def test_report_says_one_segment_not_one_segments(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    cli.ok("topics", "create", "only")
    cli.ok("produce", "only", stdin=b"a\n")
    out = tmp_path / "report.html"
    cli.ok("report", "--out", out)
    text = "".join(parse_page(out.read_text()).text)
    assert "1 segment," in text and "1 segments" not in text
    assert "1 topic:" in text and "1 topics" not in text


# --- the README's tour leaves nothing in the repository ---------------------------------------
TOUR_OUTPUTS = ("data-exports/", "kafka-data/", "quotes-table/", "report.html")


def test_the_tour_runs_in_a_temporary_directory_and_gitignore_covers_its_files() -> None:
    readme = (ROOT / "README.md").read_text()
    tour = readme[readme.index("## A five-minute tour") :]
    lines = tour[: tour.index("\n## ", 1)].splitlines()
    first_command = next(i for i, line in enumerate(lines) if line.startswith("seglog "))
    assert any(line.startswith('cd "$(mktemp -d)"') for line in lines[:first_command])
    for path in TOUR_OUTPUTS:
        check = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path], check=False)
        assert check.returncode == 0, f"{path} is not in .gitignore"
