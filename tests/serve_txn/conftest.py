"""Fixtures of the transaction tests: real ``seglog serve`` processes (``tests/serve``'s harness).

``txn_server`` is a running server whose timed-out transactions are aborted within a fifth of a
second (``transaction.abort.timed.out.transaction.cleanup.interval.ms=200``), on a data
directory holding ``out`` (2 partitions); every server is stopped with SIGTERM at the end of
its test and must exit 0.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))

from serve_clients import create_topic
from serve_harness import DEFAULT_PROPERTIES, ServeProcess

TXN_PROPERTIES = DEFAULT_PROPERTIES | {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    "log.cleaner.enable": "false",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serve: integration tests against a real `seglog serve` process"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.serve)


@pytest.fixture
def txn_server(tmp_path: Path) -> Iterator[ServeProcess]:
    data = tmp_path / "data"
    data.mkdir()
    create_topic(data, "out", partitions=2)
    server = ServeProcess(data, TXN_PROPERTIES)
    server.start()
    try:
        yield server
    finally:
        try:
            if server.process is not None:
                server.stop()
        finally:
            server.kill()
