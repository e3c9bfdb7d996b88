"""Fixtures of the consumer-group tests: a restartable ``seglog serve`` and topics to consume."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from group_server import FAST_GROUPS, GroupServer, write_config
from group_workload import produce_numbered


@pytest.fixture
def server_settings() -> dict[str, str]:
    """The server's ``server.properties`` (a module overrides this fixture to add settings)."""
    return dict(FAST_GROUPS)


@pytest.fixture
def server(tmp_path: Path, server_settings: dict[str, str]) -> Iterator[GroupServer]:
    """A running server with quick group settings; stopped (exit 0 asserted) at the end."""
    config = write_config(tmp_path / "server.properties", server_settings)
    data = tmp_path / "data"
    data.mkdir()
    running = GroupServer(data, config)
    running.start()
    try:
        yield running
    finally:
        if running.running:
            running.stop()
        print(running.stderr)  # shown by pytest when the test failed


@pytest.fixture
def topic(server: GroupServer) -> str:
    """A fresh 4-partition topic holding 25 numbered records per partition."""
    name = f"orders-{uuid.uuid4().hex[:8]}"
    produce_numbered(server.bootstrap, name, range(25))
    return name


@pytest.fixture
def group() -> str:
    return f"group-{uuid.uuid4().hex[:8]}"
