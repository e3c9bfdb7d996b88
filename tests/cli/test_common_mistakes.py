"""Common mistakes get one-line errors that say what to do, and every command has --help.

Each mistake goes through the real command line (``seglog.cli.main.main`` in process, and a
subprocess where the environment matters): a missing or mistyped data directory, an unknown
topic, a bad or unknown config, Spark without Java.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.cli.main import build_parser, main


def _one_error_line(err: str) -> str:
    """The single ``seglog: error: ...`` line of ``err`` (no traceback, nothing else)."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("seglog: error: "), err
    return lines[0]


# --- the data directory -------------------------------------------------------------------------


def test_no_data_dir_says_to_give_one(cli: Cli) -> None:
    result = cli.run("topics", "list", data_dir=False)
    assert result.status == 1
    line = _one_error_line(result.err)
    assert "no log directory given" in line
    assert "--data-dir DIR" in line and "seglog --data-dir DIR topics list" in line


@pytest.mark.parametrize(
    "args",
    [
        ("consume", "t"),
        ("topics", "list"),
        ("topics", "describe", "t"),
        ("retention", "--once", "--dry-run"),
        ("cleaner", "status"),
        ("verify", "t"),
    ],
)
def test_a_data_dir_that_does_not_exist_is_named_and_not_created(
    cli: Cli, tmp_path: Path, args: tuple[str, ...]
) -> None:
    typo = tmp_path / "dta"
    result = cli.run("--data-dir", typo, *args, data_dir=False)
    assert result.status == 1, result.err
    line = _one_error_line(result.err)
    assert f"log directory {typo} does not exist" in line
    assert "check the --data-dir path" in line and "topics create" in line
    assert not typo.exists()


def test_a_missing_data_dir_after_the_command_too(cli: Cli, tmp_path: Path) -> None:
    typo = tmp_path / "dta"
    result = cli.run("topics", "list", "--data-dir", typo, data_dir=False)
    assert result.status == 1
    assert "check the --data-dir path" in _one_error_line(result.err)


def test_spark_checks_the_data_dir_before_starting_spark(cli: Cli, tmp_path: Path) -> None:
    typo = tmp_path / "dta"
    for args in (
        ("spark", "stats", "--data-dir", typo),
        ("spark", "compact", "--data-dir", typo),
        ("spark", "export", "t", "--to", tmp_path / "out", "--data-dir", typo),
    ):
        result = cli.run(*args, data_dir=False)
        assert result.status == 1, (args, result.err)
        line = _one_error_line(result.err)
        assert f"log directory {typo} does not exist" in line, args
    result = cli.run("spark", "stats", data_dir=False)
    assert result.status == 1
    assert "--data-dir DIR" in _one_error_line(result.err)


# --- topics -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("consume", "nope"),
        ("produce", "nope"),
        ("topics", "describe", "nope"),
        ("topics", "alter", "nope", "--config", "retention.ms=1"),
        ("topics", "delete", "nope"),
        ("compact", "nope"),
        ("clean", "--once", "--topic", "nope"),
        ("verify", "nope"),
    ],
)
def test_an_unknown_topic_says_how_to_list_and_create_topics(
    cli: Cli, args: tuple[str, ...]
) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    result = cli.run(*args, stdin=b"x\n")
    assert result.status == 1, result.err
    line = _one_error_line(result.err)
    assert "topic 'nope' does not exist" in line
    assert "'seglog topics list'" in line and "'seglog topics create NAME" in line


def test_an_unknown_partition_names_the_partition(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    result = cli.run("consume", "t", "--partition", "5")
    assert result.status == 1
    assert "topic 't' has no partition 5" in _one_error_line(result.err)


# --- configs ------------------------------------------------------------------------------------


def test_a_bad_config_value_names_key_value_and_what_is_expected(cli: Cli) -> None:
    result = cli.run("topics", "create", "t", "--partitions", "1", "--config", "segment.ms=abc")
    assert result.status == 1
    line = _one_error_line(result.err)
    assert "invalid value 'abc' for segment.ms: expected an int64 >= 1" in line
    listing = cli.ok("topics", "list", "--json").out
    assert '"name":"t"' not in listing.replace(" ", "")  # the topic was not created


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("segment.bytes=1", "invalid value '1' for segment.bytes: expected an int32 >= 14"),
        ("cleanup.policy=compcat", "with items from compact, delete"),
        ("min.cleanable.dirty.ratio=2", "expected a number in [0, 1]"),
        ("compression.type=brotli", "one of uncompressed, zstd, lz4, snappy, gzip, producer"),
        ("compaction.strategy=header:", "offset, timestamp or header:<name>"),
    ],
)
def test_bad_values_say_what_is_valid(cli: Cli, config: str, expected: str) -> None:
    result = cli.run("topics", "create", "t", "--partitions", "1", "--config", config)
    assert result.status == 1
    assert expected in _one_error_line(result.err)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("segment.byte", "unknown topic config 'segment.byte'; did you mean 'segment.bytes'?"),
        ("retension.ms", "did you mean 'retention.ms'?"),
        (
            "log.segment.bytes",
            "'log.segment.bytes' is a broker setting; the topic config is 'segment.bytes'",
        ),
        ("message.timestamp.difference.max.ms", "use message.timestamp.before.max.ms"),
    ],
)
def test_an_unknown_config_key_suggests_the_right_one(cli: Cli, key: str, expected: str) -> None:
    result = cli.run("topics", "create", "t", "--partitions", "1", "--config", f"{key}=100")
    assert result.status == 1
    assert expected in _one_error_line(result.err)


def test_altering_with_a_bad_value_changes_nothing(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1", "--config", "segment.ms=1000")
    result = cli.run("topics", "alter", "t", "--config", "segment.ms=soon")
    assert result.status == 1
    assert "invalid value 'soon' for segment.ms" in _one_error_line(result.err)
    assert "segment.ms=1000" in cli.ok("topics", "describe", "t").out


def test_a_config_without_equals_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("topics", "create", "t", "--partitions", "1", "--config", "segment.ms")
    assert result.status == 2
    assert "expected KEY=VALUE, got 'segment.ms'" in result.err


def test_no_command_is_a_usage_error(cli: Cli) -> None:
    result = cli.run(data_dir=False)
    assert result.status == 2
    assert "a command is required" in result.err


# --- Spark without Java -------------------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None,
    reason="pyspark/pyarrow not installed (the error then names `pip install 'seglog[spark]'`)",
)
@pytest.mark.parametrize("java_home", [None, "empty"])
def test_spark_without_java_says_to_install_java_17(
    cli: Cli, data_dir: Path, tmp_path: Path, java_home: str | None
) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    no_java = tmp_path / "bin"  # a PATH with no java on it
    no_java.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH")}
    env["PATH"] = str(no_java)
    if java_home is not None:
        env["JAVA_HOME"] = str(tmp_path)  # a JAVA_HOME without bin/java
    result = subprocess.run(
        [sys.executable, "-m", "seglog.cli", "spark", "stats", "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    line = _one_error_line(result.stderr)
    assert "Spark needs Java 17 or newer" in line
    assert "openjdk-17-jre-headless" in line and "JAVA_HOME" in line
    assert result.stdout == ""


# --- --help for every command -------------------------------------------------------------------


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_parser_has_the_commands_we_expect() -> None:
    paths = {path for path, _ in COMMANDS}
    for expected in [
        (),
        ("topics", "create"),
        ("consume",),
        ("cleaner", "status"),
        ("spark",),
        ("spark", "compact"),
        ("spark", "export"),
        ("spark", "stats"),
    ]:
        assert expected in paths, expected


@pytest.mark.parametrize(
    ("path", "parser"), COMMANDS, ids=[" ".join(p) or "seglog" for p, _ in COMMANDS]
)
def test_help_runs_and_describes_the_command_and_its_options(
    capsys: pytest.CaptureFixture[str], path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    status = main([*path, "--help"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith(f"usage: {' '.join(['seglog', *path])}"), out[:200]
    description = (parser.description or "").strip()
    assert description, f"`seglog {' '.join(path)}` has no description"
    first_words = _words(re.sub(r"[`*]", "", description))[:40]
    assert first_words in _words(re.sub(r"[`*]", "", out)), (first_words, out[:400])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.dest == "help":
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"`seglog {' '.join(path)}` {name}: no help"
        shown = action.option_strings[0] if action.option_strings else action.metavar
        assert str(shown) in out, (name, out[:400])
