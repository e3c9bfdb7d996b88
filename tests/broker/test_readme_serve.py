"""The README's ``seglog serve`` tour runs as written (bash, kcat, confluent-kafka).

The block is run by bash in a fresh directory with the README's port replaced by a free one
(tests run in parallel); every line must succeed, kcat must print the two records, the Python
client must read them, and ``consumer-groups --describe`` must show the group's committed
offsets at the log end (lag 0).
"""

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_tour_runs(tmp_path: Path) -> None:
    if shutil.which("kcat") is None:
        pytest.fail("kcat is not installed: run `make install` (it installs Debian's kcat)")
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    (block,) = [b for b in blocks if "--data-dir served serve --listeners" in b]
    script = "set -euo pipefail\n" + block.replace("9092", str(_free_port()))
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
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
    out = done.stdout
    assert "seglog serve: listening on PLAINTEXT://127.0.0.1:" in out
    assert "AAPL=192.0 @0" in out and "MSFT=410.5 @1" in out
    assert "b'AAPL' b'192.0' 0" in out and "b'MSFT' b'410.5' 1" in out
    describe = [line.split() for line in out.splitlines() if line.startswith("tour ")]
    assert describe, out
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...: both records committed
    assert [row[:6] for row in describe] == [["tour", "quotes", "0", "2", "2", "0"]], describe


def test_exactly_once_tour_runs(tmp_path: Path) -> None:
    """The README's transactions block: the committed record is read, the aborted one not,
    and ``seglog transactions --list`` shows the id's last transaction aborted."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    (block,) = [b for b in blocks if "--data-dir eos serve" in b]
    script = "set -euo pipefail\n" + block.replace("9192", str(_free_port()))
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
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
    out = done.stdout
    assert "read b'committed'" in out, out
    assert "b'aborted'" not in out, out
    listing = [line.split() for line in out.splitlines() if line.startswith("orders-writer")]
    assert listing and listing[0][-1] == "CompleteAbort", out
