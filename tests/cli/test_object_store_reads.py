"""The read-only commands on a log directory in object storage (a real S3 API: moto's server
on loopback) print exactly what they print on a local copy of the directory; write commands
refuse it; nothing is ever written to the bucket."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from support.cleaning_data import fill
from support.s3_server import upload_tree

SRC = Path(__file__).resolve().parents[2] / "src"

READ_COMMANDS = [
    ["topics", "list"],
    ["topics", "describe", "prices"],
    ["consume", "--topic", "prices", "--from-beginning", "--partition", "1"],
    ["consume", "users", "--format", "json"],
    ["verify", "prices"],
    ["verify", "users"],
    ["cleaner", "status"],
    ["compaction-status", "users"],
    ["log-dirs", "describe"],
]


def seglog(data_dir: str, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--data-dir", data_dir, *argv],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clock = ManualClock(1_700_000_000_000)
    root = tmp_path_factory.mktemp("objreads") / "data"
    with open_log_dirs([root], clock=clock) as manager:
        fill(manager, clock, keys=60, records=400, seed=5)
        manager.compact("users")
    return root


@pytest.fixture
def env(s3_endpoint: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "AWS_ENDPOINT_URL": s3_endpoint,
        "SEGLOG_MIRROR_DIR": str(tmp_path / "mirror"),
    }


def listing(endpoint: str, bucket: str) -> list[tuple[str, str]]:
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    return [(o["Key"], o["ETag"]) for o in client.list_objects_v2(Bucket=bucket)["Contents"]]


def test_read_commands_print_what_they_print_locally(
    data_dir: Path, s3_endpoint: str, s3_bucket: str, env: dict[str, str], tmp_path: Path
) -> None:
    uri = upload_tree(s3_endpoint, s3_bucket, "copy/data", data_dir)
    before = listing(s3_endpoint, s3_bucket)
    mirror = tmp_path / "mirror"
    for argv in READ_COMMANDS:
        local = seglog(str(data_dir), *argv, env=env)
        remote = seglog(uri, *argv, env=env)
        assert local.returncode == 0, (argv, local.stderr)
        # Paths name the directory read: the local one, or the mirror of the location.
        shown = remote.stdout
        for root in mirror.glob("*"):
            shown = shown.replace(str(root), str(data_dir))
        assert (remote.returncode, shown) == (local.returncode, local.stdout), argv
    assert listing(s3_endpoint, s3_bucket) == before, "the bucket is only read"


def test_dump_log_of_an_object(
    data_dir: Path, s3_endpoint: str, s3_bucket: str, env: dict[str, str]
) -> None:
    uri = upload_tree(s3_endpoint, s3_bucket, "copy/data", data_dir)
    segment = sorted((data_dir / "prices-0").glob("*.log"))[0]
    argv = ["dump-log", "--print-data-log"]
    local = seglog(str(data_dir), *argv, str(segment), env=env)
    remote = seglog(str(data_dir), *argv, f"{uri}/prices-0/{segment.name}", env=env)
    assert local.returncode == remote.returncode == 0
    assert remote.stdout == local.stdout.replace(str(segment), f"{uri}/prices-0/{segment.name}")


def test_write_commands_refuse_object_storage(
    data_dir: Path, s3_endpoint: str, s3_bucket: str, env: dict[str, str]
) -> None:
    uri = upload_tree(s3_endpoint, s3_bucket, "copy/data", data_dir)
    result = seglog(uri, "clean", "--once", env=env)
    assert result.returncode != 0
    assert "in object storage, which seglog only reads" in result.stderr
    missing = seglog(f"s3://{s3_bucket}/nothing", "topics", "list", env=env)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
