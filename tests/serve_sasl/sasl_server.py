"""A real ``seglog serve`` process on a ``SASL_PLAINTEXT`` listener, and the clients' settings.

:class:`SaslServe` adds SCRAM users with ``seglog scram-credentials`` (the CLI, before or while
the server runs), starts ``seglog serve --listeners SASL_PLAINTEXT://127.0.0.1:0`` with the given
``server.properties`` settings, waits for its ready line and stops it with SIGTERM (exit 0
asserted). :func:`partition_dirs` lists the topic directories on disk, so a refused client is
shown to have written nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
READY_PREFIX = "seglog serve: listening on SASL_PLAINTEXT://"
TIMEOUT_S = 60.0

ADMIN_PASSWORD = "admin-secret"
ALICE_PASSWORD = "alice-secret"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}";'
)
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def seglog(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``seglog --data-dir DATA_DIR ARGS...`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def add_user(data_dir: Path, user: str, password: str) -> None:
    """Give ``user`` SCRAM-SHA-256 and SCRAM-SHA-512 credentials with the CLI."""
    done = seglog(
        data_dir,
        "scram-credentials",
        "--user",
        user,
        "--add",
        f"SCRAM-SHA-256=[iterations=4096,password={password}],SCRAM-SHA-512=[password={password}]",
    )
    assert done.returncode == 0, done.stderr


def partition_dirs(data_dir: Path) -> set[str]:
    """The partition directories (``topic-N``) in ``data_dir``."""
    return {
        p.name for p in data_dir.iterdir() if p.is_dir() and p.name.rpartition("-")[2].isdigit()
    }


class SaslServe:
    """One ``seglog serve`` subprocess with a SASL_PLAINTEXT listener."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = data_dir.parent / f"{data_dir.name}.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.stderr_path = data_dir.parent / f"{data_dir.name}.serve.stderr"
        self.process: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def start(self) -> SaslServe:
        command = [
            sys.executable, "-m", "seglog.cli", "--data-dir", str(self.data_dir),
            "--config", str(self.config_path), "serve",
            "--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--metrics-port", "0",
        ]  # fmt: skip
        with self.stderr_path.open("a") as stderr:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=_env()
            )
        assert self.process.stdout is not None
        stdout = self.process.stdout
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(TIMEOUT_S)
        line = lines[0] if lines else ""
        if not line.startswith(READY_PREFIX):
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"no ready line ({line!r})\n{self.log()[-3000:]}")
        self.bootstrap = line[len(READY_PREFIX) :].strip()
        return self

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.bootstrap.rsplit(":", 1)
        return host, int(port)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        self.process = None
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise AssertionError(f"seglog serve ignored SIGTERM\n{self.log()[-3000:]}") from None
        assert process.returncode == 0, f"exit {process.returncode}\n{self.log()[-3000:]}"

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
