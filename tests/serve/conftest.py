"""The harness of the ``seglog serve`` integration tests: a real server process per test.

:class:`ServeProcess` starts ``python -m seglog.cli --data-dir DIR [--config FILE] serve
--listeners PLAINTEXT://127.0.0.1:0 --metrics-port 0`` as a subprocess, waits for its one ready
line (``seglog serve: listening on PLAINTEXT://HOST:PORT``) and exposes the bootstrap address
and the data directory. :meth:`ServeProcess.stop` sends SIGTERM and asserts exit status 0 (a
clean shutdown is part of every test); :meth:`ServeProcess.restart` starts it again on the same
directory (a new port: clients must bootstrap again).

Every server binds port 0 (the kernel picks a free port) and its metrics port 0, and every test
has its own ``tmp_path`` data directory, so the tests run in parallel under pytest-xdist
(``-n 2``) without port or directory clashes. All of them carry the ``serve`` marker
(``-m serve`` selects them, ``-m "not serve"`` leaves them out).

The server's stderr goes to ``serve.stderr`` beside the data directory; a test that fails
shows its tail, so a server-side traceback is never lost.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

READY_PREFIX = "seglog serve: listening on PLAINTEXT://"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
SRC = Path(__file__).resolve().parents[2] / "src"

# Settings every test server gets unless a test overrides them: no group rebalance delay (tests
# must not wait 3 s for a join).
DEFAULT_PROPERTIES = {"group.initial.rebalance.delay.ms": "0"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serve: integration tests against a real `seglog serve` process"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.serve)


class ServeProcess:
    """One ``seglog serve`` subprocess on a data directory (see the module docstring)."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.config_path = data_dir.parent / f"{data_dir.name}.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.stderr_path = data_dir.parent / f"{data_dir.name}.serve.stderr"
        self.process: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def command(self) -> list[str]:
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
            "PLAINTEXT://127.0.0.1:0",
            "--metrics-port",
            "0",
        ]

    def start(self) -> ServeProcess:
        assert self.process is None, "already running"
        env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        with self.stderr_path.open("a") as stderr:
            self.process = subprocess.Popen(
                self.command(), stdout=subprocess.PIPE, stderr=stderr, text=True, env=env
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

    def restart(self) -> ServeProcess:
        self.stop()
        return self.start()

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


@pytest.fixture
def serve_factory(tmp_path: Path) -> Iterator[ServeFactory]:
    """Start servers: ``serve_factory(properties={...}, data_dir=..., start=True)``.

    Every server started is stopped at the end of the test with SIGTERM and must exit 0.
    ``start=False`` returns it unstarted (to prepare the directory with ``seglog topics create``
    first)."""
    started: list[ServeProcess] = []

    def make(
        properties: dict[str, str] | None = None,
        data_dir: Path | None = None,
        start: bool = True,
    ) -> ServeProcess:
        directory = data_dir or tmp_path / f"data{len(started)}"
        directory.mkdir(parents=True, exist_ok=True)
        server = ServeProcess(directory, DEFAULT_PROPERTIES | (properties or {}))
        started.append(server)
        return server.start() if start else server

    yield make
    errors = []
    for server in started:
        try:
            server.stop()
        except AssertionError as error:  # stop every server, then report
            errors.append(str(error))
        finally:
            server.kill()
    assert not errors, "\n".join(errors)


@pytest.fixture
def serve(serve_factory: ServeFactory) -> ServeProcess:
    """A running server with the default settings on a fresh data directory."""
    return serve_factory()


@pytest.fixture(scope="session")
def kcat() -> str:
    """The path of ``kcat``; the test is skipped, saying so, when it is not installed."""
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.skip("kcat is not installed (Debian: apt-get install kcat; `make install` does it)")
    return path
