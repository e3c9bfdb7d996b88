"""Scaling of the reliability tests and the figures they report (RELIABILITY.md).

``SEGLOG_RELIABILITY=long`` (what ``make reliability`` sets) turns the bounded trial counts of
``make test`` into the long run's; a test-specific variable overrides both. When
``SEGLOG_RELIABILITY_REPORT`` names a file, :func:`record_figures` appends one JSON line per
test to it (``{"test": ..., **figures}``), from which RELIABILITY.md's table is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

IS_LONG = os.environ.get("SEGLOG_RELIABILITY", "").lower() == "long"


def scaled(variable: str, bounded: int, long: int) -> int:
    """``$variable`` if set, else ``long`` under ``SEGLOG_RELIABILITY=long``, else ``bounded``."""
    value = os.environ.get(variable)
    if value is not None:
        return int(value)
    return long if IS_LONG else bounded


def record_figures(test: str, **figures: object) -> None:
    """Append ``{"test": test, **figures}`` to ``$SEGLOG_RELIABILITY_REPORT`` (if set)."""
    target = os.environ.get("SEGLOG_RELIABILITY_REPORT")
    if not target:
        return
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"test": test, **figures}, sort_keys=True) + "\n")
