"""``seglog`` as a separate process: end to end, the directory lock, interrupts, log-dirs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.cli.common import deferred_interrupts

TIMEOUT_S = 120


def seglog(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``python -m seglog.cli ARGS`` in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "seglog.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_end_to_end_in_a_subprocess(data_dir: Path) -> None:
    d = ("--data-dir", str(data_dir))
    created = seglog(*d, "topics", "create", "t", "--partitions", "2")
    assert (created.returncode, created.stdout, created.stderr) == (0, b"Created topic t.\n", b"")
    produced = seglog(*d, "produce", "t", "--key-separator", "=", stdin=b"a=1\nb=2\nc=3\n")
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr.startswith(b"Produced 3 record(s) to topic t.\n")
    consumed = seglog(*d, "consume", "t", "--format", "json")
    assert consumed.returncode == 0, consumed.stderr
    got = sorted((r["key"], r["value"]) for r in map(json.loads, consumed.stdout.splitlines()))
    assert got == [("a", "1"), ("b", "2"), ("c", "3")]
    assert consumed.stderr == b"Processed a total of 3 messages\n"
    # The options after the command work the same.
    listed = seglog("topics", "list", "--json", *d)
    assert json.loads(listed.stdout) == {
        "topics": [
            {
                "name": "t",
                "partitions": 2,
                "size_bytes": json.loads(listed.stdout)["topics"][0]["size_bytes"],
            }
        ]
    }
    # The files are Kafka's: dump-log reads them and their indexes pass the sanity check.
    files = sorted(str(p) for p in data_dir.glob("t-*/*index"))
    checked = seglog("dump-log", "--index-sanity-check", *files)
    assert checked.returncode == 0, checked.stderr
    # A user error: one line, status 1, no traceback.
    bad = seglog(*d, "topics", "create", "../escape", "--partitions", "1")
    assert bad.returncode == 1
    assert bad.stderr.decode().startswith("seglog: error: topic name '../escape' is illegal")
    assert not (data_dir.parent / "escape-0").exists()


@pytest.fixture
def lock_holder(data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process with the data dir open (and so its lock), until the test ends."""
    script = textwrap.dedent(
        """
        import sys
        from seglog.config import BrokerConfig
        from seglog.engine.log_manager import LogManager
        manager = LogManager.open(BrokerConfig.from_properties({"log.dirs": sys.argv[1]}))
        print("locked", flush=True)
        sys.stdin.read()
        manager.close()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=TIMEOUT_S)


def test_a_second_process_gets_the_lock_error(
    cli: Cli, data_dir: Path, lock_holder: subprocess.Popen[str]
) -> None:
    # Only commands that change data take the lock: with --lock-wait-ms 0 they fail at once,
    # naming the holder (tests/cli/test_lock_wait.py covers the wait).
    for args in (
        ("topics", "create", "t", "--partitions", "1"),
        ("produce", "t"),
        ("retention", "--once"),
        ("topics", "delete", "t"),
    ):
        result = cli.run("--lock-wait-ms", "0", *args)
        assert result.status == 1, args
        assert result.err.startswith("seglog: error: "), result.err
        assert f"is locked by process {lock_holder.pid} (" in result.err, result.err
        assert "Commands that only read" in result.err, result.err
        assert len(result.err.splitlines()) == 1
    # Commands that only read take no lock (with or without --read-only): a directory a
    # running broker owns can still be read.
    for args in (("topics", "list"), ("log-dirs", "describe"), ("--read-only", "topics", "list")):
        assert cli.run(*args).status == 0, args
    # And from a separate process too.
    other = seglog(
        "--data-dir", data_dir, "topics", "create", "t", "--partitions", "1", "--lock-wait-ms", "0"
    )
    assert other.returncode == 1 and f"locked by process {lock_holder.pid}".encode() in (
        other.stderr
    )
    assert seglog("--data-dir", data_dir, "topics", "list").returncode == 0


def test_lock_is_released_when_the_holder_ends(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    assert seglog("--data-dir", data_dir, "topics", "list").returncode == 0
    assert cli.ok("topics", "list").lines[1].split()[0] == "t"


def test_interrupts_are_held_back_while_the_engine_writes() -> None:
    reached_the_end_of_the_block = False
    with pytest.raises(KeyboardInterrupt), deferred_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
        reached_the_end_of_the_block = True
    assert reached_the_end_of_the_block


def test_log_dirs_describe(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "a", "--partitions", "2")
    cli.ok("topics", "create", "b", "--partitions", "1")
    cli.ok("produce", "a", stdin=b"x\ny\n")
    result = cli.ok("log-dirs", "describe")
    assert len(result.lines) == 1  # one line of JSON, for jq
    described = json.loads(result.out)
    assert described["version"] == 1
    (broker,) = described["brokers"]
    (log_dir,) = broker["logDirs"]
    assert log_dir["logDir"] == str(data_dir.resolve())
    assert log_dir["error"] is None
    partitions = {p["partition"]: p for p in log_dir["partitions"]}
    assert sorted(partitions) == ["a-0", "a-1", "b-0"]
    assert partitions["a-0"]["size"] > 0 and partitions["b-0"]["size"] == 0
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in partitions.values())
    only_b = json.loads(cli.ok("log-dirs", "describe", "--topic-list", "b").out)
    assert [p["partition"] for p in only_b["brokers"][0]["logDirs"][0]["partitions"]] == ["b-0"]
    pretty = cli.ok("log-dirs", "describe", "--pretty")
    assert json.loads(pretty.out) == described and len(pretty.lines) > 1


def test_interrupts_are_held_back_with_other_threads_running() -> None:
    # A thread that does not block signals must not let the interrupt in early.
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        reached_the_end_of_the_block = False
        with pytest.raises(KeyboardInterrupt), deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # give a stray delivery every chance to happen
                pass
            reached_the_end_of_the_block = True
        assert reached_the_end_of_the_block
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        stop.set()
        worker.join()
