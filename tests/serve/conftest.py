"""Fixtures of the ``seglog serve`` integration tests: a real server process per test.

``serve`` is a running server (default settings, fresh data directory); ``serve_factory``
starts more, with broker properties (``--config``), on a chosen directory, or unstarted so the
directory can be prepared first; ``kcat`` is kcat's path, or a skip saying it is not installed.
The process itself is :class:`serve_harness.ServeProcess`; every server a test started is
stopped with SIGTERM at its end and must exit 0.

Every server binds port 0 (the kernel picks a free port) and its metrics port 0, and every test
has its own ``tmp_path`` data directory, so the tests run in parallel under pytest-xdist
(``-n 2``) without port or directory clashes. All of them carry the ``serve`` marker
(``-m serve`` selects them, ``-m "not serve"`` leaves them out).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_harness import DEFAULT_PROPERTIES, ServeFactory, ServeProcess


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
def serve_factory(tmp_path: Path) -> Iterator[ServeFactory]:
    """Start servers: ``serve_factory(properties={...}, data_dir=..., start=True)``.

    Every server started is stopped at the end of the test with SIGTERM and must exit 0.
    ``start=False`` returns it unstarted (to prepare the directory with ``seglog topics create``
    first)."""
    started: list[ServeProcess] = []

    def make(
        properties: dict[str, str] | None = None,
        data_dir: Path | None = None,
        start: bool = True,
    ) -> ServeProcess:
        directory = data_dir or tmp_path / f"data{len(started)}"
        directory.mkdir(parents=True, exist_ok=True)
        server = ServeProcess(directory, DEFAULT_PROPERTIES | (properties or {}))
        started.append(server)
        return server.start() if start else server

    yield make
    errors = []
    for server in started:
        try:
            server.stop()
        except AssertionError as error:  # stop every server, then report
            errors.append(str(error))
        finally:
            server.kill()
    assert not errors, "\n".join(errors)


@pytest.fixture
def serve(serve_factory: ServeFactory) -> ServeProcess:
    """A running server with the default settings on a fresh data directory."""
    return serve_factory()


@pytest.fixture(scope="session")
def kcat() -> str:
    """The path of ``kcat``; the test is skipped, saying so, when it is not installed."""
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.skip("kcat is not installed (Debian: apt-get install kcat; `make install` does it)")
    return path
