"""Shared fixtures: where the broker-written corpus lives.

The corpus (real Kafka files) is never copied into this repository. Tests read it from
``../shared/corpus`` beside the checkout, or from ``$SEGLOG_CORPUS``, and skip with a clear
reason when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# In CI (CI=true) hypothesis runs derandomized: the same examples every run, the ones the
# developer's `CI=true make test` already ran, so a submission's CI cannot fail by the luck of
# the draw. Locally it explores new examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parents[1]


def corpus_root() -> Path | None:
    """The corpus directory, or None when this machine has none."""
    configured = os.environ.get("SEGLOG_CORPUS")
    candidate = Path(configured) if configured else REPO_ROOT.parent / "shared" / "corpus"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus root; skips the test (with the reason) when it is absent."""
    root = corpus_root()
    if root is None:
        pytest.skip(
            "Kafka corpus not found: expected ../shared/corpus beside the checkout "
            "(or set SEGLOG_CORPUS); these tests decode real broker-written files"
        )
    return root


def corpus_files(suffixes: tuple[str, ...]) -> list[Path]:
    """Every corpus file whose name ends with one of ``suffixes`` (empty without a corpus)."""
    root = corpus_root()
    if root is None:
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes))
