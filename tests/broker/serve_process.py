"""A ``seglog serve`` subprocess for tests: start on a free loopback port, stop with SIGTERM.

:func:`serve` starts ``python -m seglog.cli --data-dir DIR [--config FILE] serve --listeners
PLAINTEXT://127.0.0.1:0 --metrics-port 0``, reads the ready line
(``seglog serve: listening on PLAINTEXT://HOST:PORT``) and yields the running server; on exit it
sends SIGTERM and asserts the clean exit status 0. Kept local to the admin tests (a shared
harness for every client comes separately).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
READY_PREFIX = "seglog serve: listening on PLAINTEXT://"
START_TIMEOUT_S = 60.0


@dataclass
class ServeProcess:
    """A running server: its process, ``host:port`` and the data directory."""

    process: subprocess.Popen[str]
    bootstrap: str
    data_dir: Path


def _read_ready_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(START_TIMEOUT_S)
    if not line or not line[0].startswith(READY_PREFIX):
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"seglog serve did not start: {line!r}\n{err}")
    return line[0][len(READY_PREFIX) :].strip()


@contextmanager
def serve(data_dir: Path, *, config: Path | None = None) -> Iterator[ServeProcess]:
    """Run ``seglog serve`` on ``data_dir`` for the ``with`` block (see the module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(REPO_SRC))
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir)]
    if config is not None:
        command += ["--config", str(config)]
    command += ["serve", "--listeners", "PLAINTEXT://127.0.0.1:0", "--metrics-port", "0"]
    command += ["--log-level", "WARNING"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        bootstrap = _read_ready_line(process)
        yield ServeProcess(process, bootstrap, data_dir)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
            raise AssertionError(f"seglog serve did not stop on SIGTERM\n{err}") from None
    assert process.returncode == 0, f"seglog serve exited {process.returncode}\n{err}"
