"""``--help`` reads as plain text in a terminal: the descriptions are reStructuredText
docstrings, and none of their markup (````code````, ``**strong**``, ``::``) is shown."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from seglog.cli.help_text import terminal_text
from seglog.cli.main import build_parser, main


def _paths(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _paths(child, (*path, name))


PATHS = list(_paths(build_parser()))


def test_markup_becomes_plain() -> None:
    text = (
        "``seglog clean``: the **dirty ratio** of ``cleanup.policy=compact`` topics::\n"
        '\n    {"a": 1}\n'
        "A glob ``*.deleted`` and *emphasis* stay; so does C++ and a::b."
    )
    assert terminal_text(text) == (
        "`seglog clean`: the dirty ratio of `cleanup.policy=compact` topics:\n"
        '\n    {"a": 1}\n'
        "A glob `*.deleted` and *emphasis* stay; so does C++ and a::b."
    )


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "seglog" for p in PATHS])
def test_no_help_page_shows_markup(
    capsys: pytest.CaptureFixture[str], path: tuple[str, ...]
) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and "**" not in out, out
    assert not [line for line in out.splitlines() if line.rstrip().endswith("::")], out


def test_every_command_is_covered() -> None:
    assert len(PATHS) >= 25
    assert ("cleaner", "status") in PATHS and ("spark", "export") in PATHS
