"""``seglog topics`` and the global options: create, list, describe, alter, delete, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.cli.main import build_parser


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (relative), to see what a command created."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_create_list_describe_alter_delete(cli: Cli, data_dir: Path) -> None:
    result = cli.ok(
        "topics",
        "create",
        "prices",
        "--partitions",
        "3",
        "--config",
        "cleanup.policy=compact",
        "--config",
        "retention.ms=3600000",
    )
    assert result.lines == ["Created topic prices."]
    assert sorted(p.name for p in data_dir.iterdir() if p.is_dir()) == [
        "prices-0",
        "prices-1",
        "prices-2",
    ]
    cli.ok("topics", "create", "orders", "--partitions", "1")

    lines = cli.ok("topics", "list").lines
    assert lines[0].split() == ["TOPIC", "PARTITIONS", "SIZE_BYTES"]
    assert [line.split() for line in lines[1:]] == [["orders", "1", "0"], ["prices", "3", "0"]]
    listed = json.loads(cli.ok("topics", "list", "--json").out)
    assert listed == {
        "topics": [
            {"name": "orders", "partitions": 1, "size_bytes": 0},
            {"name": "prices", "partitions": 3, "size_bytes": 0},
        ]
    }

    text = cli.ok("topics", "describe", "prices").out
    first = text.splitlines()[0]
    assert first.startswith("Topic: prices\tTopicId: ")
    assert first.endswith(
        "\tPartitionCount: 3\tConfigs: cleanup.policy=compact,retention.ms=3600000"
    )
    assert "LOG_END_OFFSET" in text and "BASE_OFFSET" in text
    described = json.loads(cli.ok("topics", "describe", "prices", "--json").out)
    assert described["name"] == "prices"
    assert described["overrides"] == {"cleanup.policy": "compact", "retention.ms": "3600000"}
    assert described["config"]["cleanup.policy"] == "compact"
    assert described["config"]["segment.bytes"] == "1073741824"  # a broker default
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    partition = described["partitions"][0]
    assert partition["log_start_offset"] == 0 and partition["log_end_offset"] == 0
    assert partition["directory"] == str(data_dir / "prices-0")
    assert partition["segments"] == [
        {
            "base_offset": 0,
            "size_bytes": 0,
            "offset_index_entries": 0,
            "time_index_entries": 0,
            "max_timestamp": -1,
        }
    ]

    result = cli.ok(
        "topics",
        "alter",
        "prices",
        "--config",
        "retention.ms=1000",
        "--delete-config",
        "cleanup.policy",
    )
    assert result.lines == ["Completed updating config for topic prices."]
    described = json.loads(cli.ok("topics", "describe", "prices", "--json").out)
    assert described["overrides"] == {"retention.ms": "1000"}
    assert described["config"]["cleanup.policy"] == "delete"

    assert cli.ok("topics", "delete", "prices").lines == ["Deleted topic prices."]
    assert not (data_dir / "prices-0").exists()  # renamed to a -delete directory
    assert any(p.name.endswith("-delete") for p in data_dir.iterdir())
    assert json.loads(cli.ok("topics", "list", "--json").out)["topics"] == [
        {"name": "orders", "partitions": 1, "size_bytes": 0}
    ]
    # a read never writes: the -delete directory goes at the next read-write open's start
    assert any(p.name.endswith("-delete") for p in data_dir.iterdir())
    cli.ok("retention", "--once")
    assert not any(p.name.endswith("-delete") for p in data_dir.iterdir())
    # The manager was closed cleanly: the marker is there for the next start.
    assert (data_dir / ".kafka_cleanshutdown").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("topics", "describe", "nope"), "topic 'nope' does not exist"),
        (("topics", "delete", "nope"), "topic 'nope' does not exist"),
        (("topics", "alter", "nope", "--config", "retention.ms=1"), "topic 'nope' does not exist"),
        (("topics", "create", "t", "--partitions", "1"), "topic 't' already exists"),
        (("topics", "create", "u", "--partitions", "1", "--config", "no.such=1"), "no.such"),
        (
            ("topics", "create", "u", "--partitions", "1", "--config", "retention.ms=x"),
            "retention.ms",
        ),
        (
            (
                "topics",
                "create",
                "u",
                "--partitions",
                "1",
                "--config",
                "retention.ms=1",
                "--config",
                "retention.ms=2",
            ),
            "--config retention.ms is given twice",
        ),
        (("topics", "alter", "t"), "nothing to alter"),
        (
            ("topics", "alter", "t", "--delete-config", "retention.ms"),
            "topic 't' does not override retention.ms",
        ),
        (
            (
                "topics",
                "alter",
                "t",
                "--config",
                "retention.ms=1",
                "--delete-config",
                "retention.ms",
            ),
            "both set",
        ),
        (("topics", "alter", "t", "--config", "retention.ms=-7"), "retention.ms"),
    ],
)
def test_user_errors_are_one_line_and_status_1(
    cli: Cli, args: tuple[str, ...], message: str
) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    result = cli.run(*args)
    assert result.status == 1
    assert result.err.startswith("seglog: error: "), result.err
    assert message in result.err
    assert len(result.err.splitlines()) == 1
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    "name", ["../x", "a/b", ".", "..", "x" * 250, "", "t\n", "/abs", "a\x00b", "tópico"]
)
def test_hostile_topic_names_are_rejected_and_nothing_is_created(
    cli: Cli, tmp_path: Path, name: str
) -> None:
    before = tree(tmp_path)
    for args in (
        ("topics", "create", name, "--partitions", "1"),
        ("topics", "describe", name),
        ("topics", "delete", name),
        ("produce", name),
        ("consume", name),
    ):
        result = cli.run(*args, stdin=b"v\n")
        assert result.status == 1, (args, result.err)
        assert result.err.startswith("seglog: error: topic name "), result.err
        assert "is illegal" in result.err
    assert tree(tmp_path) == before  # not even the data dir


def test_249_character_name_is_fine(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "x" * 249, "--partitions", "1")
    assert (data_dir / ("x" * 249 + "-0")).is_dir()


def test_global_options_after_the_command(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    result = cli.run("topics", "list", "--json", "--data-dir", data_dir, data_dir=False)
    assert result.status == 0, result.err
    assert json.loads(result.out)["topics"][0]["name"] == "t"
    # Before and after together: all the roots, before-the-command ones first.
    other = tmp_path / "other"
    result = cli.run(
        "--data-dir",
        data_dir,
        "topics",
        "create",
        "u",
        "--partitions",
        "2",
        "--data-dir",
        other,
        data_dir=False,
    )
    assert result.status == 0, result.err
    assert (other / "u-0").is_dir() or (other / "u-1").is_dir()
    args = build_parser().parse_args(["--data-dir", "a", "consume", "t", "--data-dir", "b"])
    from seglog.cli.common import data_dirs_of

    assert data_dirs_of(args) == ["a", "b"]


def test_several_data_dirs_spread_partitions(cli: Cli, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    result = cli.run(
        "--data-dir",
        one,
        "--data-dir",
        two,
        "topics",
        "create",
        "t",
        "--partitions",
        "4",
        data_dir=False,
    )
    assert result.status == 0, result.err
    assert len(list(one.glob("t-*"))) == 2 and len(list(two.glob("t-*"))) == 2
    result = cli.run("--data-dir", one, "--data-dir", two, "log-dirs", "describe", data_dir=False)
    log_dirs = json.loads(result.out)["brokers"][0]["logDirs"]
    assert [d["logDir"] for d in log_dirs] == [str(one.resolve()), str(two.resolve())]


def test_server_properties(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "kafka-logs"
    config = tmp_path / "server.properties"
    config.write_text(
        "# a broker's file: keys seglog does not read are ignored\n"
        "process.roles=broker,controller\n"
        "listeners=PLAINTEXT://:9092\n"
        f"log.dirs={data}\n"
        "log.segment.bytes=1048576\n"
        "log.retention.hours=1\n"
        "node.id=7\n",
        encoding="iso-8859-1",
    )
    result = cli.run(
        "--config", config, "topics", "create", "t", "--partitions", "1", data_dir=False
    )
    assert result.status == 0, result.err
    assert (data / "t-0").is_dir()
    described = json.loads(
        cli.run("--config", config, "topics", "describe", "t", "--json", data_dir=False).out
    )
    assert described["config"]["segment.bytes"] == "1048576"
    assert described["config"]["retention.ms"] == "3600000"
    assert described["overrides"] == {}
    log_dirs = json.loads(cli.run("--config", config, "log-dirs", "describe", data_dir=False).out)
    assert log_dirs["brokers"][0]["broker"] == 7
    # --data-dir replaces the file's log.dirs; the file's defaults still apply.
    other = tmp_path / "other"
    result = cli.run(
        "--config",
        config,
        "--data-dir",
        other,
        "topics",
        "create",
        "u",
        "--partitions",
        "1",
        data_dir=False,
    )
    assert result.status == 0, result.err
    assert (other / "u-0").is_dir() and not (data / "u-0").exists()
    assert (
        json.loads(
            cli.run(
                "--config",
                config,
                "--data-dir",
                other,
                "topics",
                "describe",
                "u",
                "--json",
                data_dir=False,
            ).out
        )["config"]["segment.bytes"]
        == "1048576"
    )


def test_server_properties_without_log_dirs_and_missing_file(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("log.segment.bytes=1048576\n")
    result = cli.run("--config", config, "topics", "list", data_dir=False)
    assert result.status == 1
    assert "sets neither log.dirs nor log.dir" in result.err
    result = cli.run("--config", tmp_path / "nope.properties", "topics", "list", data_dir=False)
    assert result.status == 1
    assert result.err.startswith("seglog: error: ") and "nope.properties" in result.err
    config.write_text(f"log.dirs={tmp_path / 'd'}\nlog.segment.bytes=12\n")
    result = cli.run(
        "--config", config, "topics", "create", "t", "--partitions", "1", data_dir=False
    )
    assert result.status == 1 and "segment.bytes" in result.err


def test_no_data_dir_and_missing_data_dir(cli: Cli, data_dir: Path) -> None:
    result = cli.run("topics", "list", data_dir=False)
    assert result.status == 1
    assert "give --data-dir DIR" in result.err
    result = cli.run("topics", "list")
    assert result.status == 1
    assert f"log directory {data_dir} does not exist" in result.err
    assert not data_dir.exists()
    result = cli.run("--data-dir", "a,b", "topics", "list", data_dir=False)
    assert result.status == 1 and "comma" in result.err


def test_read_only(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    before = {p: p.stat().st_mtime_ns for p in data_dir.rglob("*")}
    os.remove(data_dir / ".kafka_cleanshutdown")  # make a read-write open visible
    result = cli.run("--read-only", "topics", "list")
    assert result.status == 0, result.err
    assert not (data_dir / ".kafka_cleanshutdown").exists()  # nothing written
    result = cli.run("--read-only", "topics", "create", "u", "--partitions", "1")
    assert result.status == 1 and "read-only" in result.err
    assert "u-0" not in {p.name for p in data_dir.iterdir()}
    assert set(before) - {data_dir / ".kafka_cleanshutdown"} == set(data_dir.rglob("*"))


def test_a_read_only_directory_needs_read_only(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    data_dir.chmod(0o555)
    try:
        # a command that writes is refused; one that reads needs no option (it never writes)
        result = cli.run("produce", "t", stdin=b"x\n")
        assert result.status == 1
        assert "is read-only" in result.err, result.err
        assert cli.ok("topics", "list").lines[1].split()[0] == "t"
        assert cli.ok("--read-only", "topics", "list").lines[1].split()[0] == "t"
    finally:
        data_dir.chmod(0o755)


def test_usage_errors(cli: Cli) -> None:
    result = cli.run("topics")
    assert result.status == 2 and "an action is required" in result.err
    result = cli.run("topics", "create")
    assert result.status == 1 and "a topic name is required" in result.err
    result = cli.run("topics", "create", "t", "--partitions", "0")
    assert result.status == 2
    result = cli.run("topics", "create", "t", "--partitions", "1", "--config", "novalue")
    assert result.status == 2 and "KEY=VALUE" in result.err
    result = cli.run("log-dirs")
    assert result.status == 2 and "an action is required" in result.err
