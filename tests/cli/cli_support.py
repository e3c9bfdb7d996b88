"""Helpers of the ``seglog`` command tests: run the command in process, capture its output."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from seglog.cli.main import main


@dataclass(frozen=True)
class Result:
    """What one in-process ``seglog`` run did."""

    status: int
    out_bytes: bytes
    err: str

    @property
    def out(self) -> str:
        """stdout as text (undecodable bytes kept as surrogates)."""
        return self.out_bytes.decode("utf-8", "surrogateescape")

    @property
    def lines(self) -> list[str]:
        """stdout lines."""
        return self.out.splitlines()


class Cli:
    """Runs ``seglog`` in process with ``--data-dir`` set; stdin from bytes."""

    def __init__(
        self,
        capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch,
        data_dir: Path,
    ) -> None:
        self._capture = capsysbinary
        self._monkeypatch = monkeypatch
        self.data_dir = data_dir

    def run(self, *args: str | Path, stdin: bytes = b"", data_dir: bool = True) -> Result:
        """``seglog [--data-dir D] ARGS...``; returns status, stdout and stderr."""
        self._capture.readouterr()  # drop anything printed before
        self._monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        argv: Sequence[str] = [str(a) for a in args]
        if data_dir:
            argv = ["--data-dir", str(self.data_dir), *argv]
        status = main(argv)
        captured = self._capture.readouterr()
        return Result(status, captured.out, captured.err.decode("utf-8", "replace"))

    def ok(self, *args: str | Path, stdin: bytes = b"") -> Result:
        """Like :meth:`run`, asserting the status is 0."""
        result = self.run(*args, stdin=stdin)
        assert result.status == 0, result.err
        return result
