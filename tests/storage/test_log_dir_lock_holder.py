"""Naming the holder of a log directory's ``.lock`` from ``/proc/locks`` (storage.log_dir)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from seglog.errors import LogDirectoryLockedError
from seglog.storage.log_dir import LOCK_FILE, LogDirectory, lock_holder


def _file_id(path: Path) -> str:
    st = path.stat()
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def test_the_first_holding_line_naming_the_file_wins(tmp_path: Path) -> None:
    lock = tmp_path / LOCK_FILE
    lock.write_bytes(b"")
    file_id = _file_id(lock)
    table = tmp_path / "locks"
    table.write_text(
        "1: POSIX  ADVISORY  WRITE 77 00:00:1 0 EOF\n"  # another file
        f"2: -> POSIX  ADVISORY  WRITE 88 {file_id} 0 EOF\n"  # a waiter, not the holder
        f"3: POSIX  ADVISORY  WRITE {os.getpid()} {file_id} 0 EOF\n"
    )
    fd = os.open(lock, os.O_RDONLY)
    try:
        holder = lock_holder(fd, proc_locks=str(table))
        assert holder is not None and holder.startswith(f"process {os.getpid()} (")
        assert "pytest" in holder or "python" in holder, holder  # this process's command line
        table.write_text(f"1: OFDLCK ADVISORY  WRITE -1 {file_id} 0 EOF\n")
        assert lock_holder(fd, proc_locks=str(table)) == (
            "a process this one cannot see (OFDLCK lock, pid -1)"
        )
        table.write_text("1: FLOCK  ADVISORY  WRITE 12 00:00:1 0 EOF\nnot a lock line\n")
        assert lock_holder(fd, proc_locks=str(table)) is None
        assert lock_holder(fd, proc_locks=str(tmp_path / "absent")) is None
    finally:
        os.close(fd)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_kafka_style_lock_of_another_process_is_named(tmp_path: Path) -> None:
    """A process holding the ``.lock`` as Kafka does (an exclusive POSIX record lock on the
    empty file, no seglog code involved) is named with its pid and command line."""
    root = tmp_path / "root"
    root.mkdir()
    (root / LOCK_FILE).write_bytes(b"")
    script = (
        "# kafka-like-holder (first, so the shortened command line shows it)\n"
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(root / LOCK_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        directory = LogDirectory(root)
        with pytest.raises(LogDirectoryLockedError) as raised:
            directory.lock()
        message = str(raised.value)
        assert f"is locked by process {holder.pid} (" in message, message
        assert "kafka-like-holder" in message and "\n" not in message, message
        assert (root / LOCK_FILE).read_bytes() == b""  # still Kafka's empty file
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    directory.lock()  # free again once the holder is gone
    directory.unlock()
