"""Shared fixtures: the corpus directory (see ``corpus_location.py``) and the CI profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from corpus_location import NO_CORPUS_REASON, corpus_root

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
