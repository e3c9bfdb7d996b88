from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.s3_server import fresh_bucket, start_moto


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    yield from start_moto()


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    return fresh_bucket(s3_endpoint)
