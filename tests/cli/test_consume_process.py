"""``seglog consume`` as a real process: Ctrl-C, a closed pipe, ``--follow``."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

WAIT_S = 60  # generous: the machine is shared; never a timing assertion


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def command(data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args]


def seglog(data_dir: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        command(data_dir, *args),
        input=stdin,
        capture_output=True,
        env=env(),
        timeout=WAIT_S,
        check=False,
    )


@pytest.fixture
def topic(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert seglog(data, "topics", "create", "t", "--partitions", "1").returncode == 0
    lines = b"".join(b"value-%d\n" % i for i in range(20_000))
    assert seglog(data, "produce", "t", stdin=lines).returncode == 0
    return data


def test_head_closes_the_pipe_and_consume_exits_0(topic: Path) -> None:
    for fmt in ("text", "json"):
        script = f"set -o pipefail; {shlex.join(command(topic, 'consume', 't', '--format', fmt))}"
        done = subprocess.run(
            ["bash", "-c", script + " | head -1"],
            capture_output=True,
            env=env(),
            timeout=WAIT_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 1
        assert b"Traceback" not in done.stderr and b"error" not in done.stderr


def test_ctrl_c_prints_the_count_and_exits_130(topic: Path) -> None:
    process = subprocess.Popen(
        command(topic, "consume", "t", "--follow", "--poll-ms", "50"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    try:
        assert process.stdout is not None
        for _ in range(20_000):  # every record, then it waits for more
            assert process.stdout.readline()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert err.decode().strip().splitlines() == ["Processed a total of 20000 messages"]


def test_follow_prints_records_appended_later(topic: Path) -> None:
    process = subprocess.Popen(
        command(topic, "consume", "t", "--follow", "--poll-ms", "50", "--max-messages", "20002"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    try:
        assert process.stdout is not None
        for _ in range(20_000):  # every record, then it waits for more
            assert process.stdout.readline()
        assert seglog(topic, "produce", "t", stdin=b"new-1\nnew-2\n").returncode == 0
        out, err = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out == b"new-1\nnew-2\n"
    assert err == b"Processed a total of 20002 messages\n"


def test_follow_ends_after_timeout_without_new_records(topic: Path) -> None:
    done = seglog(
        topic,
        "consume",
        "t",
        "--follow",
        "--poll-ms",
        "20",
        "--timeout-ms",
        "200",
        "--max-messages",
        "30000",
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 20_000
    assert done.stderr == b"Processed a total of 20000 messages\n"


@pytest.fixture
def segmented(tmp_path: Path) -> Path:
    """20,000 records in segments of 64 KiB: the fast path reads them in many chunks."""
    data = tmp_path / "segmented"
    created = seglog(data, "topics", "create", "t", "--config", "segment.bytes=65536")
    assert created.returncode == 0, created.stderr
    lines = b"".join(b'value-%d \xc3\xa9 "q"\n' % i for i in range(20_000))
    assert seglog(data, "produce", "t", stdin=lines).returncode == 0
    assert len(list((data / "t-0").glob("*.log"))) > 4
    return data


def fast_env() -> dict[str, str]:
    return {**env(), "SEGLOG_CONSUME_PATH": "fast"}


def test_fast_path_in_a_process_head_and_ctrl_c(segmented: Path) -> None:
    """The JSON kernel's thread runs a chunk ahead: a closed pipe still ends with status 0,
    and Ctrl-C while stdout is full still prints the count and exits 130, with stdout a
    prefix of the whole output."""
    whole = subprocess.run(
        command(segmented, "consume", "t", "--format", "json"),
        capture_output=True,
        env=fast_env(),
        timeout=WAIT_S,
        check=False,
    )
    assert whole.returncode == 0, whole.stderr
    assert len(whole.stdout.splitlines()) == 20_000
    slow = subprocess.run(
        command(segmented, "consume", "t", "--format", "json"),
        capture_output=True,
        env={**env(), "SEGLOG_CONSUME_PATH": "slow"},
        timeout=WAIT_S,
        check=False,
    )
    assert slow.stdout == whole.stdout
    script = "set -o pipefail; " + shlex.join(
        command(segmented, "consume", "t", "--format", "json")
    )
    done = subprocess.run(
        ["bash", "-c", script + " | head -1"],
        capture_output=True,
        env=fast_env(),
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == whole.stdout.splitlines(keepends=True)[0]
    assert b"Traceback" not in done.stderr
    process = subprocess.Popen(
        command(segmented, "consume", "t", "--format", "json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=fast_env(),
        bufsize=0,  # unbuffered: communicate() below reads what readline() left
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the process now blocks on a full pipe
        process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert whole.stdout.startswith(first + rest)
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Processed a total of "), err


def test_main_asks_openblas_for_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """seglog never calls BLAS: its thread pool is start-up time only (about 50 ms)."""
    from seglog.cli.main import BLAS_THREADS_ENV, main

    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    assert main(["--version"]) == 0
    assert os.environ[BLAS_THREADS_ENV] == "1"
    monkeypatch.setenv(BLAS_THREADS_ENV, "3")
    assert main(["--version"]) == 0
    assert os.environ[BLAS_THREADS_ENV] == "3"


def test_output_to_a_file_is_complete_after_the_quick_exit(topic: Path, tmp_path: Path) -> None:
    """consume ends with os._exit once its output is flushed: a file gets every byte."""
    for fmt in ("text", "json"):
        target = tmp_path / f"out.{fmt}"
        with target.open("wb") as sink:
            done = subprocess.run(
                command(topic, "consume", "t", "--format", fmt),
                stdout=sink,
                stderr=subprocess.PIPE,
                env=env(),
                timeout=WAIT_S,
                check=False,
            )
        assert done.returncode == 0, done.stderr
        assert done.stderr == b"Processed a total of 20000 messages\n"
        lines = target.read_bytes().splitlines()
        assert len(lines) == 20_000
        last = b"value-19999" if fmt == "text" else b'"value":"value-19999"'
        assert last in lines[-1]
