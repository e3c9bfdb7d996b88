"""``private_file``: the secret is readable by its owner only, and gone after the block."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from seglog.storage.private_file import private_file


def test_private_file_is_owner_only_and_removed_after_the_block() -> None:
    with private_file("-----BEGIN PRIVATE KEY-----\n", "keystore.pem") as path:
        file = Path(path)
        assert file.read_text() == "-----BEGIN PRIVATE KEY-----\n"
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert not file.exists() and not file.parent.exists()


def test_private_file_is_removed_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError, match="load failed"), private_file("x", "k.pem") as path:
        raise RuntimeError("load failed")
    assert not Path(path).parent.exists()
