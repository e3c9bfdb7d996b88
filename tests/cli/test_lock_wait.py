"""Write commands meeting a lock held by another process wait up to ``--lock-wait-ms``.

The holder is a real second process with the data dir open read-write; it lets go when the
test closes its stdin, so no test depends on how long anything takes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.cli.lock_wait import open_waiting_for_lock
from seglog.errors import LockHeldElsewhereError

TIMEOUT_S = 120
HOLDER = textwrap.dedent(
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


def seglog_process(*args: str | Path) -> subprocess.Popen[bytes]:
    """``python -m seglog.cli ARGS`` started in a new process, stdin/stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "seglog.cli", *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def holder(cli: Cli, data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding the data dir's lock until its stdin is closed."""
    cli.ok("topics", "create", "t", "--partitions", "1")
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "locked\n"
        yield process
    finally:
        assert process.stdin is not None
        if not process.stdin.closed:
            process.stdin.close()
        process.wait(timeout=TIMEOUT_S)


def test_a_write_waits_for_a_lock_released_meanwhile(
    data_dir: Path, holder: subprocess.Popen[str]
) -> None:
    producer = seglog_process("--data-dir", data_dir, "produce", "t", "--lock-wait-ms", "600000")
    assert producer.stdin is not None and producer.stderr is not None
    producer.stdin.write(b"hello\n")
    producer.stdin.close()
    waiting = producer.stderr.readline().decode()
    assert waiting.startswith(f"seglog: waiting up to 600.0 s for the lock of {data_dir} "), waiting
    assert f"held by process {holder.pid} (" in waiting, waiting
    assert holder.stdin is not None
    holder.stdin.close()  # the holder lets go: the waiting command goes on
    rest = producer.stderr.read().decode()
    assert producer.wait(timeout=TIMEOUT_S) == 0, rest
    assert "Produced 1 record(s) to topic t." in rest
    consumed = subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), "consume", "t"],
        capture_output=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    assert consumed.stdout == b"hello\n"


def test_a_write_fails_after_the_wait_naming_the_holder(
    data_dir: Path, holder: subprocess.Popen[str]
) -> None:
    for args in (
        ("--lock-wait-ms", "300", "topics", "create", "u", "--partitions", "1"),
        ("produce", "t", "--lock-wait-ms", "300"),
    ):
        process = seglog_process("--data-dir", data_dir, *args)
        _, err_bytes = process.communicate(b"x\n", timeout=TIMEOUT_S)
        err = err_bytes.decode()
        assert process.returncode == 1, err
        lines = err.splitlines()
        assert lines[0].startswith("seglog: waiting up to 0.3 s for the lock of"), err
        assert any(
            line.startswith("seglog: error: ")
            and f"is locked by process {holder.pid} (" in line
            and "waited 0.3 s for it" in line
            for line in lines
        ), err
    # Nothing was written meanwhile.
    assert not (data_dir / "u-0").exists()


def test_lock_wait_zero_fails_at_once_without_a_waiting_line(
    cli: Cli, holder: subprocess.Popen[str]
) -> None:
    result = cli.run("--lock-wait-ms", "0", "retention", "--once")
    assert result.status == 1
    assert "waiting" not in result.err
    assert f"is locked by process {holder.pid} (" in result.err


def test_the_wait_gives_up_at_the_deadline_and_retries_until_then() -> None:
    # The wait's own logic, with a fake clock: tries every poll interval, one message.
    now = [0.0]
    tries: list[float] = []
    said: list[str] = []

    def open_once() -> None:
        tries.append(now[0])
        raise LockHeldElsewhereError(
            "log directory D is locked by process 7 (seglog maintain): busy",
            path="D/.lock",
            holder="process 7 (seglog maintain)",
        )

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(LockHeldElsewhereError, match=r"process 7 .*waited 1\.0 s"):
        open_waiting_for_lock(
            open_once, 1000, say=said.append, monotonic=lambda: now[0], sleep=sleep
        )
    assert said == [
        "seglog: waiting up to 1.0 s for the lock of D held by process 7 (seglog maintain) ..."
    ]
    assert tries[0] == 0.0 and len(tries) >= 11 and tries[-1] == pytest.approx(1.0)


def test_read_commands_never_wait(cli: Cli, holder: subprocess.Popen[str]) -> None:
    result = cli.run("topics", "list")
    assert result.status == 0 and "waiting" not in result.err
