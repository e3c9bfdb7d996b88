"""The README's SASL example runs as written: a SCRAM user added with the CLI, a
SASL_PLAINTEXT listener, kcat producing and consuming as that user, a wrong password refused."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SRC = Path(__file__).resolve().parents[2] / "src"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_sasl_example_runs(tmp_path: Path) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (Debian: apt-get install kcat)")
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    (block,) = [b for b in blocks if "scram-credentials --user alice" in b]
    script = "set -euo pipefail\n" + block.replace("9093", str(_free_port()))
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ["PATH"],
        "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.splitlines()
    assert out[0] == "Completed updating config for user alice."
    assert "hello" in out and "refused" in out
    assert out[-1] == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    assert "SASL authentication error" in done.stderr
    assert "listening on SASL_PLAINTEXT://127.0.0.1:" in (tmp_path / "sasl.out").read_text()
