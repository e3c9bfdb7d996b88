"""The README stays true: every command it shows is exercised.

* the ``sh`` blocks (the two commands, the tour, development): every ``seglog`` line runs, in
  order, in a fresh directory, and succeeds; where a comment says what a ``consume`` prints,
  it prints exactly that; every ``make`` target named exists, and ``make run`` is the demo;
* the CLI table: every command form names a real command and only options it accepts, and
  every command of the parser has a row;
* the ``python`` block runs here; the Spark ``py`` block and the cluster job run in
  ``tests/spark/test_readme_spark.py``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAKEFILE = ROOT / "Makefile"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def test_readme_starts_with_the_two_commands() -> None:
    head = README.read_text().splitlines()[:10]
    assert any(line.startswith("make run") for line in head)
    assert any(line.startswith("make test") for line in head)


def test_python_example_runs() -> None:
    example, transactions = _blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(example, str(README), "exec"), namespace)
    assert namespace["end"].kind.name == "CLEAN"  # type: ignore[attr-defined]
    assert list(namespace["columns"].offset) == [0, 1]  # type: ignore[attr-defined]
    assert namespace["info"].last_offset == 1  # type: ignore[attr-defined]
    assert namespace["hit"].offset == 1  # type: ignore[attr-defined]
    txn: dict[str, object] = {}
    exec(compile(transactions, str(README), "exec"), txn)
    assert txn["lso"] == 1 and txn["committed"] == [b"k2"]
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in txn["aborted"]] == [(7, 0, 2)]  # type: ignore[attr-defined]


def test_tour_commands_succeed(tmp_path: Path) -> None:
    seglog = shutil.which("seglog", path=str(Path(sys.executable).parent))
    if seglog is None:
        pytest.fail("the seglog console script is not installed beside this Python")
    commented = [
        (line.split("#")[0].strip(), line.partition("#")[2].strip())
        for block in _blocks("sh")
        for line in block.splitlines()
        if line.startswith("seglog ")
    ]
    assert len(commented) >= 30
    checked = 0
    for command, comment in commented:
        shell = command.replace("seglog ", f"{seglog} ", 1)
        result = subprocess.run(
            ["bash", "-c", shell],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        # With "| head" the status is head's, so the command's own failures are read from
        # stderr: seglog reports every error there as "seglog: error: ...". Some commands
        # (produce, consume) print their summary on stderr, so stderr may hold text.
        assert result.returncode == 0, (command, result.stderr)
        assert "error" not in result.stderr.lower(), (command, result.stderr)
        assert result.stdout.strip() or result.stderr.strip(), command
        expected = _promised_records(comment)
        if expected is not None:
            assert result.stdout.splitlines() == expected, (command, result.stdout)
            checked += 1
    assert checked == 2  # the two consumes whose comments say what they print


def _promised_records(comment: str) -> list[str] | None:
    """``AAPL 190.1, MSFT 412.0, then MSFT 413.5`` -> the ``--print-key`` lines it promises
    (key TAB value); None for a comment that is not such a list."""
    items = [item.strip().removeprefix("then ") for item in comment.split(",")]
    if not comment or not all(re.fullmatch(r"[A-Z]+ [0-9.]+", item) for item in items):
        return None
    return [item.replace(" ", "\t") for item in items]


# --- make -------------------------------------------------------------------------------------


def test_every_make_command_is_a_target_and_make_run_is_the_demo() -> None:
    shown = {match for block in _blocks("sh") for match in re.findall(r"^make (\w+)", block, re.M)}
    assert {"run", "test", "install", "check", "bench", "reliability"} <= shown
    targets = set(re.findall(r"^([a-z][\w-]*):", MAKEFILE.read_text(), re.M))
    assert shown <= targets, shown - targets
    if shutil.which("make") is None:
        pytest.skip("make is not installed: the targets were checked in the Makefile's text")
    for target in sorted(shown):
        dry = subprocess.run(
            ["make", "-n", "--no-print-directory", target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert dry.returncode == 0, (target, dry.stderr)
    run = subprocess.run(
        ["make", "-n", "--no-print-directory", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.stdout.splitlines()[-1] == ".venv/bin/seglog demo --data-dir data"


# --- the CLI table ------------------------------------------------------------------------------


def _cli_table_forms() -> list[str]:
    """The command forms of the first column of the README's CLI table."""
    section = README.read_text().split("## The CLI", 1)[1]
    lines = section.strip().splitlines()
    assert lines[0].startswith("| command |") and lines[1].startswith("| ---")
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break  # the table ends at its first non-row line (a blank line splits a table)
        rows.append(line)
    forms = []
    for row in rows:
        first_cell = row.split(" | ", 1)[0].removeprefix("| ")
        forms += re.findall(r"`([^`]+)`", first_cell)
    return forms


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    children = _subcommands(parser)
    if not children and path:
        yield path
    for name, child in children.items():
        yield from _leaves(child, (*path, name))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def test_cli_table_forms_match_the_parser() -> None:
    root = build_parser()
    forms = _cli_table_forms()
    covered: set[tuple[str, ...]] = set()
    for form in forms:
        words = form.removeprefix("seglog ").split()
        parser, path = root, ()
        for word in words:
            child = _subcommands(parser).get(word)
            if child is None:
                break
            parser, path = child, (*path, word)
        if not form.startswith("seglog [--data-dir"):  # the global options' row
            assert path and not _subcommands(parser), f"{form!r}: not a whole command"
            covered.add(path)
        for option in re.findall(r"--[a-z][a-z0-9-]*", form):
            assert option in _options(parser) | _options(root), f"{form!r}: no {option}"
    assert len(forms) >= 25
    assert covered == set(_leaves(root)), set(_leaves(root)) ^ covered
