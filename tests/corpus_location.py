"""Where the broker-written corpus lives, and the corpus as pytest parameters.

The corpus (real Kafka files) is never copied into this repository. Tests read it from
``../shared/corpus`` beside the checkout, or from ``$SEGLOG_CORPUS``, and skip with a clear
reason when it is absent. ``tests/conftest.py`` and the compat tests import this module
(pytest puts ``tests/`` on ``sys.path`` when it loads ``tests/conftest.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
NO_CORPUS_REASON = (
    "Kafka corpus not found: expected ../shared/corpus beside the checkout (or set "
    "SEGLOG_CORPUS); these tests read real broker-written files"
)


def corpus_root() -> Path | None:
    """The corpus directory, or None when this machine has none."""
    configured = os.environ.get("SEGLOG_CORPUS")
    candidate = Path(configured) if configured else REPO_ROOT.parent / "shared" / "corpus"
    return candidate if candidate.is_dir() else None


def corpus_files(suffixes: tuple[str, ...]) -> list[Path]:
    """Every corpus file whose name ends with one of ``suffixes`` (empty without a corpus)."""
    root = corpus_root()
    if root is None:
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def corpus_params(suffixes: tuple[str, ...]) -> list[Any]:
    """Those files as pytest params (id = corpus path).

    Without a corpus this is one skipped param, so the skip and its reason show up in the
    report instead of an empty parameter set.
    """
    root = corpus_root()
    files = corpus_files(suffixes)
    if root is None or not files:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(path, id=str(path.relative_to(root))) for path in files]


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file below ``directory``: equal before and after a read-only
    open proves nothing was written, renamed or locked there."""
    out = {}
    for dirpath, _, files in os.walk(directory):
        for name in files:
            stat = os.stat(os.path.join(dirpath, name))
            out[os.path.join(dirpath, name)] = (stat.st_size, stat.st_mtime_ns)
    return out
