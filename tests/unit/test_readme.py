"""The README stays true: its Python example runs and every tour command succeeds."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def test_readme_starts_with_the_two_commands() -> None:
    head = README.read_text().splitlines()[:10]
    assert any(line.startswith("make run") for line in head)
    assert any(line.startswith("make test") for line in head)


def test_python_example_runs() -> None:
    (example,) = _blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(example, str(README), "exec"), namespace)
    assert namespace["end"].kind.name == "CLEAN"  # type: ignore[attr-defined]
    assert list(namespace["columns"].offset) == [0, 1]  # type: ignore[attr-defined]
    assert namespace["info"].last_offset == 1  # type: ignore[attr-defined]
    assert namespace["hit"].offset == 1  # type: ignore[attr-defined]


def test_tour_commands_succeed(tmp_path: Path) -> None:
    seglog = shutil.which("seglog", path=str(Path(sys.executable).parent))
    if seglog is None:
        pytest.fail("the seglog console script is not installed beside this Python")
    commands = [
        line.split("#")[0].strip()
        for block in _blocks("sh")
        for line in block.splitlines()
        if line.startswith("seglog ")
    ]
    assert len(commands) >= 5
    for command in commands:
        shell = command.replace("seglog ", f"{seglog} ", 1)
        result = subprocess.run(
            ["bash", "-c", shell],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        # With "| head" the status is head's, so the command's own failures are read from
        # stderr: seglog reports every error there as "seglog: error: ...". Some commands
        # (produce, consume) print their summary on stderr, so stderr may hold text.
        assert result.returncode == 0, (command, result.stderr)
        assert "error" not in result.stderr.lower(), (command, result.stderr)
        assert result.stdout.strip() or result.stderr.strip(), command
