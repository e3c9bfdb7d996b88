"""Shared machinery of the ``seglog serve`` benchmarks: the server process and the logs.

:class:`ServeProcess` starts ``seglog --data-dir DIR serve`` as a real subprocess on a free
loopback port (``--listeners PLAINTEXT://127.0.0.1:0``), reads its ready line
(``seglog serve: listening on PLAINTEXT://HOST:PORT``), and stops it with SIGTERM (exit 0
expected). Its CPU seconds (user + system, from ``/proc/<pid>/stat``) are read around each
sample so the tables can say what the server itself spent.

Logs are written in process with :class:`~seglog.engine.log_manager.LogManager` before the
server opens the same directory (the server holds the directory's lock while it runs).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager

SRC = Path(__file__).resolve().parent.parent / "src"
READY_PREFIX = "seglog serve: listening on PLAINTEXT://"
_BATCH_LENGTH_AT = 8  # v2 batch: baseOffset int64, batchLength int32 (bytes after this field)
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def environment() -> dict[str, str]:
    """The subprocess environment: this checkout's sources first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    return env


class ServeProcess:
    """A running ``seglog serve`` on a free loopback port (a context manager)."""

    def __init__(self, data_dir: Path, *, log_path: Path | None = None) -> None:
        self.data_dir = data_dir
        self._log: IO[bytes] | None = None
        if log_path is not None:
            self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "seglog.cli",
                "--data-dir",
                str(data_dir),
                "serve",
                "--listeners",
                "PLAINTEXT://127.0.0.1:0",
                "--metrics-port",
                "0",
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            env=environment(),
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith(READY_PREFIX):
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"seglog serve did not start: {line!r}")
        self.address = line[len(READY_PREFIX) :]
        host, port = self.address.rsplit(":", 1)
        self.host = host
        self.port = int(port)

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server process has used so far."""
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def stop(self) -> int:
        """SIGTERM, wait, and return the exit status (0 when it stopped cleanly)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(60)
        finally:
            if self._log is not None:
                self._log.close()
        if status != 0:
            raise RuntimeError(f"seglog serve exited with status {status}")
        return status

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self.process.kill()
            self.process.wait()
            if self._log is not None:
                self._log.close()
            return
        self.stop()


def quiet_client(config: dict[str, Any]) -> dict[str, Any]:
    """A confluent-kafka config whose librdkafka log lines (e.g. the disconnect at the
    server's shutdown) do not clutter the tables on stdout."""
    import logging

    logger = logging.getLogger("bench.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return {**config, "logger": logger}


def open_manager(data_dir: Path) -> LogManager:
    """A writable :class:`LogManager` on ``data_dir`` (created when missing)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return LogManager.open(BrokerConfig.from_properties({"log.dirs": str(data_dir)}))


def iter_batches(data: bytes | memoryview) -> Iterator[memoryview]:
    """The v2 batches of a ``.log`` file's bytes, as views (a torn tail is left out)."""
    view = memoryview(data)
    position = 0
    end = len(view)
    while position + 12 <= end:
        length = int.from_bytes(view[position + _BATCH_LENGTH_AT : position + 12], "big")
        stop = position + 12 + length
        if stop > end:
            break
        yield view[position:stop]
        position = stop


def segment_files(data_dir: Path, topic: str, partition: int = 0) -> list[Path]:
    """The ``.log`` files of one partition, in offset order."""
    return sorted((data_dir / f"{topic}-{partition}").glob("*.log"))


def read_partition_batches(data_dir: Path, topic: str, partition: int = 0) -> list[bytes]:
    """Every batch stored in one partition, in order, as bytes."""
    batches: list[bytes] = []
    for path in segment_files(data_dir, topic, partition):
        batches.extend(bytes(batch) for batch in iter_batches(path.read_bytes()))
    return batches


def median(values: Sequence[float]) -> float:
    """The median of a non-empty list."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
