"""Shared fixtures: the corpus directory (see ``corpus_location.py``) and the CI profile."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from corpus_location import NO_CORPUS_REASON, corpus_root
from support.s3_server import fresh_bucket, start_moto

# In CI (CI=true) hypothesis runs derandomized: the same examples every run, the ones the
# developer's `CI=true make test` already ran, so a submission's CI cannot fail by the luck of
# the draw. Locally it explores new examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus root; skips the test (with the reason) when it is absent."""
    root = corpus_root()
    if root is None:
        pytest.skip(NO_CORPUS_REASON)
    return root


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 API on loopback (moto's server) for the whole session; dummy credentials in
    the environment (see ``support/s3_server.py``)."""
    yield from start_moto()


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A fresh bucket on :func:`s3_endpoint`."""
    return fresh_bucket(s3_endpoint)
