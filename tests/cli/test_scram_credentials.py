"""``seglog scram-credentials``: kafka-configs.sh's user-credential syntax and output, salted
storage (checked by logging in with the stored credential), and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import Cli

from seglog.broker.security.credential_store import FILE_NAME, CredentialStore
from seglog.broker.security.scram import password_matches

SRC = Path(__file__).resolve().parents[2] / "src"


def test_add_describe_delete(cli: Cli) -> None:
    added = cli.ok(
        "scram-credentials",
        "--user",
        "alice",
        "--add",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=a,b]",
    )
    assert added.lines == ["Completed updating config for user alice."]
    cli.ok(
        "scram-credentials", "--entity-name", "bob", "--add-config", "SCRAM-SHA-512=[password=b]"
    )
    assert cli.ok("scram-credentials", "--describe").lines == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096",
    ]
    stored = CredentialStore(cli.data_dir).load()
    assert password_matches("SCRAM-SHA-256", stored["alice"]["SCRAM-SHA-256"], "alice-secret")
    assert password_matches("SCRAM-SHA-512", stored["alice"]["SCRAM-SHA-512"], "a,b")
    text = (cli.data_dir / FILE_NAME).read_text()
    assert "alice-secret" not in text and (cli.data_dir / FILE_NAME).stat().st_mode & 0o777 == 0o600
    cli.ok("scram-credentials", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    cli.ok("scram-credentials", "--user", "bob", "--delete", "SCRAM-SHA-512")
    assert cli.ok("scram-credentials", "--describe", "--user", "alice").lines == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192"
    ]
    assert json.loads(text)["format"] == "seglog-scram-credentials"
    assert "bob" not in CredentialStore(cli.data_dir).load()


def test_errors_name_what_is_wrong(cli: Cli) -> None:
    for add, message in (
        ("SCRAM-SHA-1=[password=x]", "'SCRAM-SHA-1' is not a SCRAM mechanism"),
        ("SCRAM-SHA-256=[iterations=100,password=x]", "iterations=100 is outside 4096..16384"),
        ("SCRAM-SHA-256=[iterations=8192]", "password=... is required"),
        ("SCRAM-SHA-256=[pass=x]", "bad field 'pass'"),
        ("SCRAM-SHA-256=password=x", "cannot parse"),
    ):
        result = cli.run("scram-credentials", "--user", "a", "--add", add)
        assert result.status == 1 and message in result.err, result.err
    missing = cli.run("scram-credentials", "--user", "a", "--delete", "SCRAM-SHA-256")
    assert missing.status == 1 and "has no SCRAM-SHA-256 credential" in missing.err
    no_user = cli.run("scram-credentials", "--add", "SCRAM-SHA-256=[password=x]")
    assert no_user.status == 2 and "--user" in no_user.err
    assert not (cli.data_dir / FILE_NAME).exists()


def test_concurrent_writers_lose_no_user(tmp_path: Path) -> None:
    """Eight processes add eight users at once: the directory lock serializes them."""
    data = tmp_path / "data"
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    seglog = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data), "scram-credentials"]
    processes = [
        subprocess.Popen(
            [*seglog, "--user", f"u{n}", "--add", f"SCRAM-SHA-256=[password=p{n}]"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for n in range(8)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    assert sorted(CredentialStore(data).load()) == [f"u{n}" for n in range(8)]
