"""Progress bars: quiet unless a terminal watches (or they are forced), on stderr only."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from seglog.cli.progress import ENV_VAR, ProgressBar, progress_mode, should_show
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.engine.producer import Producer, ProduceRecord

TIMEOUT_S = 120


def seglog(
    *args: str | Path,
    stdin: bytes = b"",
    stdin_file: IO[bytes] | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m seglog.cli ARGS`` in a new process (stdout and stderr are pipes; stdin the
    bytes given, or ``stdin_file``)."""
    environment = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    environment.update(env or {})
    command = [sys.executable, "-m", "seglog.cli", *map(str, args)]
    if stdin_file is not None:
        return subprocess.run(
            command, stdin=stdin_file, capture_output=True, timeout=TIMEOUT_S, check=False,
            env=environment,
        )  # fmt: skip
    return subprocess.run(
        command, input=stdin, capture_output=True, timeout=TIMEOUT_S, check=False,
        env=environment,
    )  # fmt: skip


FORCED = {ENV_VAR: "always"}


# --- the helper -------------------------------------------------------------------------------


def test_mode_comes_from_the_argument_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert progress_mode() == "auto"
    monkeypatch.setenv(ENV_VAR, "ALWAYS")
    assert progress_mode() == "always"
    assert progress_mode("never") == "never"
    monkeypatch.setenv(ENV_VAR, "sometimes")
    assert progress_mode() == "auto"  # unknown values read as the default


def test_not_a_terminal_means_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    # Under pytest stdout and stderr are captured: not terminals.
    assert not should_show()
    assert should_show(mode="always")
    assert not should_show(mode="always", json_output=True)
    assert not should_show(mode="never")
    stream = io.StringIO()
    with ProgressBar("working", total=3, stream=stream) as bar:
        assert not bar.enabled
        for _ in range(3):
            bar.advance()
    assert stream.getvalue() == ""
    assert bar.completed == 3


def test_auto_shows_only_when_both_streams_are_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(sys, "stdout", Tty())
    monkeypatch.setattr(sys, "stderr", Tty())
    assert should_show()
    assert not should_show(json_output=True)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # stdout piped: quiet
    assert not should_show()


def test_forced_bar_renders_its_final_state() -> None:
    stream = io.StringIO()
    with ProgressBar("cleaning partitions", mode="always", stream=stream) as bar:
        bar.callback(0, 3)
        bar.callback(2, 3)
        bar.callback(3, 3)
    text = stream.getvalue()
    assert "cleaning partitions" in text
    assert "3/3" in text
    assert "\x1b[" in text  # a terminal rendering (colours, cursor control)


def test_bytes_unit_renders_sizes() -> None:
    stream = io.StringIO()
    with ProgressBar(
        "producing", total=2_000_000, unit="bytes", mode="always", stream=stream
    ) as bar:
        bar.update(2_000_000)
    assert "producing" in stream.getvalue() and "2.0 MB" in stream.getvalue()


# --- engine callbacks ---------------------------------------------------------------------------


def test_engine_reports_opening_and_cleaning(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    manager = open_log_dirs([data_dir])
    try:
        manager.create_topic(
            "t", 2, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
        )
        producer = Producer(manager, "t")
        for key, value in [(b"a", b"1"), (b"a", b"2"), (b"b", b"3")]:
            producer.send(ProduceRecord(value=value, key=key, partition=0))
            producer.flush()
        manager.get_log("t", 0).roll()
        calls: list[tuple[int, int]] = []
        results = manager.clean_once(progress=lambda done, total: calls.append((done, total)))
        assert len(results) == 1
        assert calls == [(0, 1), (1, 1)]
    finally:
        manager.close()
    opened: list[tuple[int, int]] = []
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    with LogManager.open(broker, progress=lambda d, t: opened.append((d, t))):
        pass
    assert opened == [(1, 2), (2, 2), (2, 2)]


# --- the commands -------------------------------------------------------------------------------


@pytest.fixture
def compacted(data_dir: Path) -> Path:
    """A compacted topic ``c`` with duplicate keys in closed segments."""
    d = ("--data-dir", data_dir)
    created = seglog(*d, "topics", "create", "c", "--partitions", "1",
                     "--config", "cleanup.policy=compact", "--config", "segment.bytes=100",
                     "--config", "min.cleanable.dirty.ratio=0.01")  # fmt: skip
    assert created.returncode == 0, created.stderr
    produced = seglog(*d, "produce", "c", "--key-separator", "=", stdin=b"k=1\nk=2\nk=3\nj=4\n")
    assert produced.returncode == 0, produced.stderr
    return data_dir


def test_clean_is_quiet_when_piped_and_draws_a_bar_when_forced(compacted: Path) -> None:
    quiet = seglog("--data-dir", compacted, "clean", "--once")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == b""  # not a terminal: nothing extra
    assert quiet.stdout.endswith(b"until the next open removes them.\n")
    produced = seglog("--data-dir", compacted, "produce", "c", "--key-separator", "=",
                      stdin=b"k=5\nk=6\nk=7\n")  # fmt: skip
    assert produced.returncode == 0
    forced = seglog("--data-dir", compacted, "clean", "--once", env=FORCED)
    assert forced.returncode == 0, forced.stderr
    err = forced.stderr.decode()
    assert "cleaning partitions" in err and "1/1" in err
    assert forced.stdout.endswith(b"until the next open removes them.\n")  # stdout unchanged
    assert b"\x1b[" not in forced.stdout
    as_json = seglog("--data-dir", compacted, "clean", "--once", "--json", env=FORCED)
    assert as_json.returncode == 0, as_json.stderr
    # --json: never a bar (stderr holds only the note on the replaced files removed at open).
    assert b"\x1b[" not in as_json.stderr and b"cleaning partitions" not in as_json.stderr
    assert b"removed" in as_json.stderr and b"leftover file(s)" in as_json.stderr


def test_compact_and_produce_from_a_file_draw_bars_when_forced(
    compacted: Path, tmp_path: Path
) -> None:
    quiet = seglog("--data-dir", compacted, "compact", "c")
    assert quiet.returncode == 0 and quiet.stderr == b""
    forced = seglog("--data-dir", compacted, "compact", "c", env=FORCED)
    assert forced.returncode == 0, forced.stderr
    assert "compacting partitions" in forced.stderr.decode()
    assert "1/1" in forced.stderr.decode()

    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"".join(b"key%d=value%d\n" % (i, i) for i in range(2000)))
    with lines.open("rb") as stdin:
        produced = seglog("--data-dir", compacted, "produce", "c", "--key-separator", "=",
                          stdin_file=stdin, env=FORCED)  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    err = produced.stderr.decode()
    assert "producing" in err
    size_kb = f"{lines.stat().st_size / 1000:.1f}/{lines.stat().st_size / 1000:.1f} kB"
    assert size_kb in err  # the file's size is the total, and all of it was read
    assert "Produced 2000 record(s) to topic c." in err


def test_recovery_draws_a_bar_when_forced(compacted: Path) -> None:
    (compacted / ".kafka_cleanshutdown").unlink()  # as after a crash
    forced = seglog("--data-dir", compacted, "topics", "list", env=FORCED)
    assert forced.returncode == 0, forced.stderr
    assert "recovering logs" in forced.stderr.decode()
    assert "1/1" in forced.stderr.decode()
    assert not (compacted / ".kafka_cleanshutdown").exists()  # a read wrote no marker
    quiet = seglog("--data-dir", compacted, "topics", "list")
    assert quiet.returncode == 0
    assert b"recovering logs" not in quiet.stderr
