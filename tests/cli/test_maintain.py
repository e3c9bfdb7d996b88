"""``seglog maintain`` as a real process: scheduler, cleaner, compactor, metrics over HTTP,
and a clean stop on SIGTERM/SIGINT."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from cli_support import Cli
from prometheus_client.parser import text_string_to_metric_families

from seglog.engine.log_manager import open_log_dirs

TIMEOUT_S = 60.0
POLL_S = 0.05
SERVING = "seglog maintain: serving metrics on "


def seglog(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``python -m seglog.cli ARGS`` in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "seglog.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def read_line(stream: IO[bytes], timeout_s: float) -> bytes:
    """One line of a child's stdout, or b"" when it closes or nothing comes in time."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            return b""
    return stream.readline()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(POLL_S)


@dataclass
class Maintain:
    """A running ``seglog maintain`` child."""

    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """The served metrics: {(sample name, sorted labels): value}."""
        with urllib.request.urlopen(self.url, timeout=TIMEOUT_S) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            text = response.read().decode()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def stop(self, signum: int) -> int:
        """Send ``signum`` and wait for the exit status."""
        self.process.send_signal(signum)
        return self.process.wait(timeout=TIMEOUT_S)


@contextmanager
def start_maintain(tmp_path: Path, *args: str | Path) -> Iterator[Maintain]:
    """Start ``seglog ARGS maintain --metrics-port 0`` and wait for its serving line."""
    stderr_path = tmp_path / "maintain.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "seglog.cli",
                *map(str, args),
                "maintain",
                "--metrics-port",
                "0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdout is not None
    try:
        line = read_line(process.stdout, TIMEOUT_S).decode()
        assert line.startswith(SERVING), (line, stderr_path.read_text())
        url = line[len(SERVING) :].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        yield Maintain(process, url, stderr_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT_S)
        process.stdout.close()


def labels(**values: str | int) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in values.items()))


def write_server_properties(tmp_path: Path, data_dir: Path) -> Path:
    """Fast intervals, so every background task runs within a fraction of a second."""
    path = tmp_path / "server.properties"
    path.write_text(
        f"log.dirs={data_dir}\n"
        "log.initial.task.delay.ms=0\n"
        "log.retention.check.interval.ms=100\n"
        "log.compaction.check.interval.ms=100\n"
        "log.cleaner.backoff.ms=50\n"
        "log.flush.offset.checkpoint.interval.ms=100\n"
        "log.segment.delete.delay.ms=0\n"
    )
    return path


def test_maintain_runs_retention_cleaner_and_compactor_and_stops_cleanly(
    tmp_path: Path, data_dir: Path
) -> None:
    d = ("--data-dir", str(data_dir))
    assert (
        seglog(
            *d,
            "topics",
            "create",
            "r",
            "--partitions",
            "1",
            "--config",
            "segment.bytes=100",
            "--config",
            "retention.ms=60000",
        ).returncode
        == 0
    )
    assert seglog(*d, "topics", "create", "c", "--partitions", "1",
                  "--config", "cleanup.policy=compact", "--config", "segment.bytes=100",
                  "--config", "min.cleanable.dirty.ratio=0.01",
                  "--config", "compaction.threshold.bytes=1").returncode == 0  # fmt: skip
    old = b"".join(
        b'{"key": "k%d", "value": "v%d", "timestamp": 1000}\n' % (i, i) for i in range(4)
    )
    produced = seglog(*d, "produce", "r", "--format", "json", stdin=old)
    assert produced.returncode == 0, produced.stderr
    produced = seglog(
        *d, "produce", "c", "--key-separator", "=", stdin=b"a=1\nb=2\na=3\na=4\nb=5\n"
    )
    assert produced.returncode == 0, produced.stderr
    config = write_server_properties(tmp_path, data_dir)

    with start_maintain(tmp_path, "--config", config) as maintain:
        r0, c0 = labels(topic="r", partition=0), labels(topic="c", partition=0)

        def done() -> bool:
            m = maintain.scrape()
            deleted = labels(topic="r", partition=0, rule="retention.ms")
            return (
                m[("kafka_log_Log_LogStartOffset", r0)] == 4  # every old segment went
                # counted just after the log start moved: a scrape may fall in between
                and m.get(("seglog_retention_deleted_segments_total", deleted), 0) == 4
                and m[("kafka_log_LogCleaner_cleaner_recopy_percent", ())] > 0  # a round ran
                and m[("seglog_compaction_state", labels(topic="c", partition=0, state="SUCCESS"))]
                == 1
            )

        wait_until(done, "retention, a cleaner round and a compaction in the metrics")
        metrics = maintain.scrape()
        assert metrics[("kafka_log_Log_LogEndOffset", r0)] == 4
        assert metrics[("kafka_log_Log_NumLogSegments", r0)] == 1  # rolled, then all deleted
        rule = labels(topic="r", partition=0, rule="retention.ms")
        assert metrics[("seglog_retention_deleted_segments_total", rule)] == 4
        assert metrics[("seglog_log_cleaner_running", ())] == 1
        assert metrics[("kafka_log_LogCleaner_DeadThreadCount", ())] == 0
        assert metrics[("kafka_log_Log_LogEndOffset", c0)] == 5
        assert metrics[("seglog_compaction_horizon", c0)] == 4
        assert metrics[("seglog_compaction_last_run_records_kept", c0)] == 2  # a=4, b=5

        # The lock is held: a read-write command fails; a read-only one works beside it.
        refused = seglog(*d, "produce", "r", stdin=b"x\n")
        assert refused.returncode == 1
        assert b"is locked by process " in refused.stderr, refused.stderr
        assert b"Commands that only read" in refused.stderr
        listed = seglog(*d, "topics", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [t["name"] for t in json.loads(listed.stdout)["topics"]] == ["c", "r"]
        scraped = seglog(*d, "metrics")
        assert scraped.returncode == 0, scraped.stderr
        assert b'kafka_log_Log_LogEndOffset{partition="0",topic="c"} 5.0' in scraped.stdout

        assert maintain.stop(signal.SIGTERM) == 0
        log = maintain.stderr
        assert "seglog.maintain: maintaining 2 partition(s) of 2 topic(s)" in log
        assert "retention deleted segment 0 of r-0" in log
        assert "compacted c-0 (backlog" in log
        assert "Log cleaner thread 0 cleaned log c-0 (dirty section = [0, " in log
        assert "SIGTERM received: stopping" in log
        assert log.rstrip().endswith("stopped cleanly")

    assert (data_dir / ".kafka_cleanshutdown").exists()
    reopened = open_log_dirs([data_dir], read_only=True)
    try:
        assert all(not report.recovered for report in reopened.load_reports)
        assert reopened.get_log("r", 0).log_start_offset == 4
    finally:
        reopened.close()
    described = seglog(*d, "topics", "describe", "c", "--json")
    assert described.returncode == 0
    # A clean shutdown, and the replaced segments' files already removed: nothing to repair.
    assert described.stderr == b""
    consumed = seglog(*d, "consume", "c", "--format", "json", "--read-compacted")
    assert consumed.returncode == 0, consumed.stderr
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert [(r["key"], r["value"]) for r in records] == [("a", "4"), ("b", "5")]


def test_sigint_stops_it_cleanly_too(tmp_path: Path, data_dir: Path) -> None:
    assert (
        seglog("--data-dir", data_dir, "topics", "create", "t", "--partitions", "1").returncode == 0
    )
    with start_maintain(tmp_path, "--data-dir", data_dir) as maintain:
        assert not (data_dir / ".kafka_cleanshutdown").exists()  # taken at startup
        metrics = maintain.scrape()
        assert metrics[("kafka_log_Log_LogEndOffset", labels(topic="t", partition=0))] == 0
        assert maintain.stop(signal.SIGINT) == 0
        assert "SIGINT received: stopping" in maintain.stderr
    assert (data_dir / ".kafka_cleanshutdown").exists()


def test_a_port_in_use_fails_before_opening_the_data_dirs(tmp_path: Path, data_dir: Path) -> None:
    assert (
        seglog("--data-dir", data_dir, "topics", "create", "t", "--partitions", "1").returncode == 0
    )
    marker = data_dir / ".kafka_cleanshutdown"
    assert marker.exists()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), "maintain",
             "--metrics-port", str(port)],
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )  # fmt: skip
    assert result.returncode == 1
    assert b"seglog: error:" in result.stderr
    assert os.strerror(98).encode() in result.stderr or b"in use" in result.stderr
    assert marker.exists()  # the data dirs were never opened


def test_read_only_is_a_usage_error(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    result = cli.run("maintain", "--read-only")
    assert result.status == 2
    assert "cannot do" in result.err and "seglog metrics" in result.err


def test_bad_port_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("maintain", "--metrics-port", "70000")
    assert result.status == 2
    assert "port must be in 0..65535" in result.err
