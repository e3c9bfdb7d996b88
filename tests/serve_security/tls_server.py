"""A ``seglog serve`` process with any set of listeners: the one server harness of the TLS,
SASL (``tests/serve_sasl`` uses it too) and ACL-with-principals tests.

:class:`TlsServe` writes the broker properties (``listeners`` included) to a file, starts
``python -m seglog.cli --data-dir D --config F serve --metrics-port 0`` and reads one ready line
per listener (``seglog serve: listening on NAME://HOST:PORT``), keeping each bound address by
listener name. :meth:`TlsServe.stop` sends SIGTERM and requires exit status 0 and nothing
more on stdout. The server's stderr goes to a file, shown when something fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from tls_certs import Pki

READY = "seglog serve: listening on "
TIMEOUT_S = 60.0
SRC = Path(__file__).resolve().parents[2] / "src"


def run_cli(data_dir: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``seglog --data-dir D --config F ARGS`` to the end (for a command that exits)."""
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir)]
    command += ["--config", str(config), *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, check=False
    )


class TlsServe:
    """One server process (see the module docstring)."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = data_dir.parent / f"{data_dir.name}.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.stderr_path = data_dir.parent / f"{data_dir.name}.stderr"
        self.listeners = [p for p in properties["listeners"].split(",") if p.strip()]
        self.process: subprocess.Popen[str] | None = None
        self.addresses: dict[str, str] = {}
        self.ready_lines: list[str] = []

    def start(self) -> TlsServe:
        env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(self.data_dir)]
        command += ["--config", str(self.config_path), "serve", "--metrics-port", "0"]
        with self.stderr_path.open("a") as stderr:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env
            )
        stdout = self.process.stdout
        assert stdout is not None
        lines: list[str] = []

        def read() -> None:
            for _ in self.listeners:
                lines.append(stdout.readline())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(TIMEOUT_S)
        if len(lines) < len(self.listeners) or not all(lines):
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"ready lines {lines!r}\n{self.log_tail()}")
        self.ready_lines = [line.rstrip("\n") for line in lines]
        for line in self.ready_lines:
            assert line.startswith(READY), line
            name, _, address = line[len(READY) :].partition("://")
            self.addresses[name] = address
        return self

    def bootstrap(self, listener: str) -> str:
        return self.addresses[listener]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            rest, _ = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise AssertionError(f"seglog serve ignored SIGTERM\n{self.log_tail()}") from None
        assert process.returncode == 0, f"exit status {process.returncode}\n{self.log_tail()}"
        assert rest == "", f"stdout after the ready lines: {rest!r}"

    def kill(self) -> None:
        """SIGKILL (for clean-up after a failure; :meth:`stop` is the normal end)."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.communicate()

    def log(self) -> str:
        """The server's whole stderr so far."""
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        if not self.stderr_path.exists():
            return "(no server stderr)"
        text = self.log().splitlines()
        return "server stderr (tail):\n" + "\n".join(text[-lines:])


def tls_properties(pki: Pki, client_auth: str = "none", **extra: str) -> dict[str, str]:
    """A PLAINTEXT and an SSL listener on loopback; the SSL one reads ``server.pem``."""
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": client_auth,
        "group.initial.rebalance.delay.ms": "0",
        **extra,
    }


TlsFactory = Callable[..., TlsServe]


class _Serving(Protocol):
    def start(self) -> _Serving: ...
    def stop(self) -> None: ...
    def kill(self) -> None: ...


S = TypeVar("S", bound=_Serving)


def serve_for_fixture(served: S) -> Iterator[S]:
    """A fixture's body: start ``served``, hand it out, then stop it (exit 0 asserted), and
    kill it whatever happened (``yield from serve_for_fixture(TlsServe(...))``)."""
    try:
        served.start()
        yield served
        served.stop()
    finally:
        served.kill()
