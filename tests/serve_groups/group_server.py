"""A restartable ``seglog serve`` subprocess for the consumer-group tests, and shared helpers.

:class:`GroupServer` runs ``python -m seglog.cli --data-dir DIR --config FILE serve --listeners
PLAINTEXT://127.0.0.1:0 --metrics-port 0`` and reads the ready line; :meth:`GroupServer.stop`
sends SIGTERM and asserts exit status 0; :meth:`GroupServer.start` again reopens the same data
directory (a new port each time). The config makes groups quick: no initial rebalance delay,
session timeouts down to 500 ms, 4 partitions for auto-created topics.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
READY_PREFIX = "seglog serve: listening on PLAINTEXT://"
START_TIMEOUT_S = 60.0
PARTITIONS = 4
#: group settings that keep the tests fast (Kafka's defaults: 3000 ms delay, 6000 ms minimum)
FAST_GROUPS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "num.partitions": str(PARTITIONS),
}
T = TypeVar("T")


def seglog_env() -> dict[str, str]:
    """The environment a ``python -m seglog.cli`` child needs."""
    return dict(os.environ, PYTHONPATH=str(REPO_SRC))


def write_config(path: Path, settings: dict[str, str]) -> Path:
    """A ``server.properties`` with ``settings``."""
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 30.0) -> T:
    """Poll ``probe`` until it returns something other than None/False; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


class GroupServer:
    """One data directory served by a ``seglog serve`` process that can be stopped and started."""

    def __init__(self, data_dir: Path, config: Path) -> None:
        self.data_dir = data_dir
        self.config = config
        self.process: subprocess.Popen[str] | None = None
        self.bootstrap = ""
        self.stderr = ""

    def start(self, port: int = 0) -> str:
        """Start the server (on ``port``, 0: a free one); returns ``host:port``."""
        assert self.process is None, "already running"
        command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(self.data_dir)]
        command += ["--config", str(self.config), "serve"]
        command += ["--listeners", f"PLAINTEXT://127.0.0.1:{port}", "--metrics-port", "0"]
        command += ["--log-level", os.environ.get("GROUPS_TEST_SERVER_LOG", "WARNING")]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=seglog_env()
        )
        line: list[str] = []
        assert process.stdout is not None
        stdout = process.stdout
        reader = threading.Thread(target=lambda: line.append(stdout.readline()))
        reader.start()
        reader.join(START_TIMEOUT_S)
        if not line or not line[0].startswith(READY_PREFIX):
            process.kill()
            _, err = process.communicate(timeout=10)
            raise AssertionError(f"seglog serve did not start: {line!r}\n{err}")
        self.process = process
        self.bootstrap = line[0][len(READY_PREFIX) :].strip()
        return self.bootstrap

    def stop(self) -> None:
        """SIGTERM; asserts the server exits 0."""
        process, self.process = self.process, None
        assert process is not None, "not running"
        process.send_signal(signal.SIGTERM)
        try:
            _, self.stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, self.stderr = process.communicate()
            raise AssertionError(f"seglog serve did not stop on SIGTERM\n{self.stderr}") from None
        assert process.returncode == 0, f"seglog serve exited {process.returncode}\n{self.stderr}"

    def restart(self, *, same_port: bool = False) -> str:
        """Stop (SIGTERM, exit 0) and start again on the same directory (and port, when
        ``same_port``: clients that stay connected find it again)."""
        port = int(self.bootstrap.rpartition(":")[2]) if same_port else 0
        self.stop()
        return self.start(port)

    @property
    def running(self) -> bool:
        return self.process is not None


def seglog(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``seglog --data-dir DIR ARGS...`` (an offline command beside the server)."""
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=seglog_env(), timeout=120, check=False
    )
