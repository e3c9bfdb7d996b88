"""The command-line frame: global options before or after any command, "did you mean" with the
command's usage, and commands imported only when they run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.cli.common import data_dirs_of
from seglog.cli.main import COMMANDS, build_parser, main

SRC = Path(__file__).resolve().parents[2] / "src"

# --- global options in both positions ------------------------------------------------------


def _server_properties(tmp_path: Path, data_dir: Path) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(f"log.dirs={data_dir}\n", encoding="iso-8859-1")
    return path


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("option", ["--data-dir", "--config"])
def test_log_directory_options_work_before_and_after_nested_commands(
    cli: Cli, tmp_path: Path, where: str, option: str
) -> None:
    data = tmp_path / "d"
    value = str(data if option == "--data-dir" else _server_properties(tmp_path, data))

    def run(*words: str) -> str:
        argv = [option, value, *words] if where == "before" else [*words, option, value]
        result = cli.run(*argv, data_dir=False)
        assert result.status == 0, result.err
        return result.out

    # --config after `topics create` is a topic config (kafka-topics.sh): that one goes before.
    cli.run("--data-dir", data, "topics", "create", "t", "--partitions", "2", data_dir=False)
    assert "t" in run("topics", "list").split()
    assert "Topic: t" in run("topics", "describe", "t")
    assert run("cleaner", "status").strip()
    cli.run("--data-dir", data, "produce", "t", stdin=b"a\nb\n", data_dir=False)
    assert sorted(run("consume", "t").split()) == ["a", "b"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_read_only_is_refused_by_a_writing_command_in_both_places(
    cli: Cli, tmp_path: Path, where: str
) -> None:
    words = ["topics", "create", "t", "--partitions", "1"]
    argv = ["--read-only", *words] if where == "before" else [*words, "--read-only"]
    result = cli.run("--data-dir", tmp_path / "d", *argv, data_dir=False)
    assert result.status == 1
    assert "--read-only: this command changes data" in result.err


def test_topic_config_after_topics_create_keeps_kafkas_meaning(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1", "--config", "retention.ms=1000")
    assert "retention.ms=1000" in cli.ok("topics", "describe", "t").out


def test_data_dirs_at_every_depth_are_all_used_in_order() -> None:
    parser = build_parser(lazy=True)
    args = parser.parse_args(
        ["--data-dir", "a", "topics", "--data-dir", "b", "list", "--data-dir", "c"]
    )
    assert data_dirs_of(args) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--config", "before.properties", "spark", "export", "t", "--to", "out"],
        ["spark", "export", "t", "--to", "out", "--config", "before.properties"],
        ["spark", "--config", "before.properties", "export", "t", "--to", "out"],
        ["--config", "x", "cleaner", "status", "--config", "before.properties"],
        ["cleaner", "status", "--config", "before.properties", "--read-only"],
    ],
    ids=["before", "after", "between", "later-wins", "with-read-only"],
)
def test_config_is_parsed_in_every_position(argv: list[str]) -> None:
    args = build_parser(lazy=True).parse_args(argv)
    assert args.server_config == "before.properties"


def test_a_value_given_before_is_not_reset_by_the_command_parser() -> None:
    args = build_parser(lazy=True).parse_args(["--read-only", "--config", "f", "topics", "list"])
    assert args.read_only is True and args.server_config == "f"


# --- did you mean ----------------------------------------------------------------------------


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_misspelled_option_gets_the_commands_usage_and_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _usage_error(capsys, "consume", "t", "--max-record", "3", "--print-kye")
    assert err.startswith("usage: seglog consume ")
    assert "--max-records" in err.split("error:")[0]  # the command's usage, not the top level's
    assert "seglog consume: error: unrecognized arguments:" in err
    assert "--print-kye (did you mean --print-key?)" in err


def test_misspelled_option_beats_a_missing_required_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _usage_error(capsys, "topics", "create", "t", "--partitons", "2")
    assert err.startswith("usage: seglog topics create ")
    assert "--partitons (did you mean --partitions?)" in err


def test_misspelled_global_option_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(capsys, "--data-dri", "d", "topics", "list")
    assert err.startswith("usage: seglog [-h]")
    assert "--data-dri (did you mean --data-dir?)" in err


@pytest.mark.parametrize(
    ("argv", "usage", "suggestion"),
    [
        (["consum", "t"], "usage: seglog [-h]", "did you mean 'consume'?"),
        (["topics", "craete", "t"], "usage: seglog topics ", "did you mean 'create'?"),
        (["cleaner", "stauts"], "usage: seglog cleaner ", "did you mean 'status'?"),
        (
            ["spark", "export", "t", "--to", "o", "--mode", "tabel"],
            "usage: seglog spark export ",
            "did you mean 'table'?",
        ),
    ],
)
def test_misspelled_command_or_choice(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, suggestion: str
) -> None:
    err = _usage_error(capsys, *argv)
    assert err.startswith(usage)
    assert suggestion in err


def test_unknown_option_without_a_close_one_gets_no_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _usage_error(capsys, "topics", "list", "--zzzzzz")
    assert err.rstrip().endswith("unrecognized arguments: --zzzzzz")


# --- the command table -------------------------------------------------------------------------


def test_the_table_lists_every_command_with_the_help_its_module_registers() -> None:
    (subparsers,) = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    registered = {action.dest: action.help for action in subparsers._choices_actions}
    assert registered == {name: help_line for name, _, help_line in COMMANDS}
    assert list(registered) == [name for name, _, _ in COMMANDS]


# --- lazy imports (structural, not timed) -------------------------------------------------------

HEAVY = ("numba", "numpy", "rich", "pyspark", "prometheus_client", "lz4", "zstandard", "cramjam")


def _imported(argv: list[str], stdin: bytes = b"") -> set[str]:
    """The top-level packages ``python -X importtime -m seglog.cli ARGV`` imports."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "seglog.cli", *argv],
        input=stdin,
        capture_output=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    modules = set()
    for line in result.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            modules.add(name.split(".")[0])
    assert "seglog" in modules
    return modules


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=" ".join)
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    modules = _imported(argv)
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_a_small_consume_imports_neither_spark_nor_prometheus(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    cli.ok("produce", "t", stdin=b"one\ntwo\n")
    modules = _imported(["--data-dir", str(data_dir), "consume", "t"])
    assert not modules & {"pyspark", "prometheus_client", "rich"}, modules
    assert "seglog" in modules
