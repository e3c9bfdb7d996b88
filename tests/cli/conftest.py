"""Fixtures of the ``seglog`` command tests: a data dir and an in-process runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Cli


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data dir (not created yet: ``topics create`` makes it)."""
    return tmp_path / "data"


@pytest.fixture
def cli(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> Cli:
    """The in-process runner."""
    return Cli(capsysbinary, monkeypatch, data_dir)
