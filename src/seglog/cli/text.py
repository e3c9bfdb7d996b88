"""Small text helpers of the command's output (shared by the commands and the HTML report)."""

from __future__ import annotations


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 segment``, ``0 segments``, ``2 segments`` (``words``: an irregular plural)."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {words or word + 's'}"
