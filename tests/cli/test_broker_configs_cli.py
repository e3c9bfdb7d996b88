"""The command line on a copy of a ZooKeeper-era broker directory: configs unknown are said,
never acted on, and ``topics alter`` makes a broker's topic seglog's to act on."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_support import Cli

from corpus_location import NO_CORPUS_REASON, corpus_root

ROOT = corpus_root()
SOURCE = ROOT / "broker" / "mscaldas2012-cp512" if ROOT is not None else None
UNKNOWN = "configs unknown: set them with topics alter"


@pytest.fixture
def broker_copy(data_dir: Path) -> Path:
    if SOURCE is None or not SOURCE.is_dir():
        pytest.skip(NO_CORPUS_REASON)
    shutil.copytree(SOURCE, data_dir)
    for dirpath, _, filenames in os.walk(data_dir):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return data_dir


def test_unknown_configs_are_said_everywhere_and_alter_ends_it(cli: Cli, broker_copy: Path) -> None:
    described = cli.ok("topics", "describe", "_schemas", "--read-only").out
    assert f"Note: {UNKNOWN}" in described
    retention = cli.ok("retention", "--once", "--dry-run").lines
    assert f"SKIPPED _schemas-0: {UNKNOWN}" in retention
    assert retention[-1].startswith("Would delete 0 segments")
    clean = cli.ok("clean", "--dry-run").lines
    assert f"SKIPPED docker-connect-configs-0: {UNKNOWN}" in clean
    status = json.loads(cli.ok("cleaner", "status", "--json").out)
    assert status["skipped"]["_schemas-0"] == UNKNOWN
    assert "__consumer_offsets-0" in [
        f"{p['topic']}-{p['partition']}" for p in status["partitions"]
    ]

    cli.ok("topics", "alter", "_schemas", "--config", "cleanup.policy=compact")
    described = cli.ok("topics", "describe", "_schemas", "--read-only").out
    assert UNKNOWN not in described
    assert "SEGLOG_TOPIC_OVERRIDE" in described
    document = json.loads(cli.ok("clean", "--dry-run", "--json").out)
    assert "_schemas" in {p["topic"] for p in document["partitions"]}
    assert "_schemas-0" not in document["skipped"]
