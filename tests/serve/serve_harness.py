"""A real ``seglog serve`` process for tests (the ``tests/serve`` fixtures build on it).

:class:`ServeProcess` starts ``python -m seglog.cli --data-dir DIR --config FILE serve
--listeners PLAINTEXT://127.0.0.1:0 --metrics-port 0`` as a subprocess, waits for its one ready
line (``seglog serve: listening on PLAINTEXT://HOST:PORT``) and exposes the bootstrap address
and the data directory. :meth:`ServeProcess.stop` sends SIGTERM and asserts exit status 0 and
nothing more on stdout; :meth:`ServeProcess.restart` starts it again on the same directory,
on a new port (clients must bootstrap again) or, with ``same_port``, on the port it had, so
clients that stay connected across the restart find it again. The server's stderr goes to a
file beside the data directory; failures show its tail, so a server-side traceback is never
lost.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

READY_PREFIX = "seglog serve: listening on PLAINTEXT://"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
SRC = Path(__file__).resolve().parents[2] / "src"

# Settings every test server gets unless a test overrides them: no group rebalance delay (tests
# must not wait 3 s for a join).
DEFAULT_PROPERTIES = {"group.initial.rebalance.delay.ms": "0"}


class ServeProcess:
    """One ``seglog serve`` subprocess on a data directory (see the module docstring)."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.config_path = data_dir.parent / f"{data_dir.name}.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.stderr_path = data_dir.parent / f"{data_dir.name}.serve.stderr"
        self.process: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def command(self, port: int = 0) -> list[str]:
        return [
            sys.executable,
            "-m",
            "seglog.cli",
            "--data-dir",
            str(self.data_dir),
            "--config",
            str(self.config_path),
            "serve",
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{port}",
            "--metrics-port",
            "0",
        ]

    def start(self, port: int = 0) -> ServeProcess:
        assert self.process is None, "already running"
        env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        with self.stderr_path.open("a") as stderr:
            self.process = subprocess.Popen(
                self.command(port), stdout=subprocess.PIPE, stderr=stderr, text=True, env=env
            )
        line = self._ready_line()
        assert line.startswith(READY_PREFIX), f"unexpected first line {line!r}\n{self.log_tail()}"
        self.bootstrap = line[len(READY_PREFIX) :].strip()
        return self

    def _ready_line(self) -> str:
        process = self.process
        assert process is not None and process.stdout is not None
        stdout = process.stdout
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        if not lines or not lines[0]:
            process.kill()
            process.wait()
            self.process = None
            raise AssertionError(
                f"seglog serve did not print its ready line within {START_TIMEOUT_S} s "
                f"(exit status {process.returncode})\n{self.log_tail()}"
            )
        return lines[0]

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def stop(self) -> None:
        """SIGTERM, then assert a clean exit (status 0) and nothing more on stdout."""
        process = self.process
        if process is None:
            return
        self.process = None
        process.send_signal(signal.SIGTERM)
        try:
            rest, _ = process.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise AssertionError(f"seglog serve ignored SIGTERM\n{self.log_tail()}") from None
        assert process.returncode == 0, f"exit status {process.returncode}\n{self.log_tail()}"
        assert rest == "", f"stdout after the ready line: {rest!r}"

    def restart(self, *, same_port: bool = False) -> ServeProcess:
        port = self.port if same_port else 0
        self.stop()
        return self.start(port)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def log_tail(self, lines: int = 40) -> str:
        if not self.stderr_path.exists():
            return "(no server stderr)"
        text = self.stderr_path.read_text(errors="replace").splitlines()
        return "server stderr (tail):\n" + "\n".join(text[-lines:])


ServeFactory = Callable[..., ServeProcess]
