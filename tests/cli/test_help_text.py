"""``--help`` reads as plain text in a terminal: the descriptions are reStructuredText
docstrings, and none of their markup (````code````, ``**strong**``, ``::``, ``:mod:`x```
roles) is shown; no page points outside the repository or speaks of its making."""

from __future__ import annotations

import argparse
import re
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


# A role (:mod:`x`, :py:func:`x`), a pointer outside the repository, the project's own notes.
NOT_FOR_USERS = re.compile(
    r":(?:[a-z]+:)?[a-z]+:`|\bseeds?\b|spec §|\.\./shared|DESIGN\.md", re.IGNORECASE
)
# `seglog demo --seed N` is the workload's random seed: a word for users, not a project note.
DEMO_RANDOM_SEED = re.compile(r"--seed(?: SEED)?|random seed")


def test_roles_become_code() -> None:
    text = "see :mod:`seglog.engine.scheduler`, :data:`~seglog.cli.demo.DEMO_TOPICS`, :py:func:`f`"
    assert terminal_text(text) == "see `seglog.engine.scheduler`, `DEMO_TOPICS`, `f`"


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "seglog" for p in PATHS])
def test_no_help_page_shows_roles_or_project_notes(
    capsys: pytest.CaptureFixture[str], path: tuple[str, ...]
) -> None:
    assert main([*path, "--help"]) == 0
    out = DEMO_RANDOM_SEED.sub("", capsys.readouterr().out)
    found = [m.group(0) for m in NOT_FOR_USERS.finditer(out)]
    assert not found, (found, out)


def test_every_command_is_covered() -> None:
    assert len(PATHS) >= 25
    assert ("cleaner", "status") in PATHS and ("spark", "export") in PATHS
    assert ("demo",) in PATHS and ("topics", "create") in PATHS
