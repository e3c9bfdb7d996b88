"""``--help`` for a terminal: the commands' descriptions are their module docstrings, written
in reStructuredText for the API docs; in a terminal the markup is noise.

:func:`use_terminal_help` gives every parser of the ``seglog`` tree a formatter that shows
``code`` as `code` (one backtick, as in Markdown), a cross-reference role such as
``:mod:`seglog.engine.scheduler``` or ``:data:`~pkg.NAME``` as `seglog.engine.scheduler` or
`NAME`, drops ``**`` emphasis, ends a literal block's introduction with one colon instead
of ``::`` and leaves out a module docstring's paragraph for developers ("Why this module is
longer ..."). Only the markup changes: wording,
line breaks and the formatter's wrapping behaviour stay those of each parser.
"""

from __future__ import annotations

import argparse
import re

_CODE = re.compile(r"``(.+?)``", re.S)
# :role:`target`, :py:role:`target`, :role:`~dotted.target` (Sphinx shows the last part).
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`(~?)([^`]+)`")
_STRONG = re.compile(r"\*\*(.+?)\*\*", re.S)
_LITERAL_INTRO = re.compile(r"(?<=\S)::$", re.M)
# A paragraph for developers (why a module is long): not for a user's help page.
_DEVELOPER_NOTE = re.compile(r"\n*^Why this module is [^\n]*(?:\n(?!\n)[^\n]*)*", re.M)


def terminal_text(text: str) -> str:
    """``text`` with its reStructuredText markup made plain (see the module docstring)."""
    text = _DEVELOPER_NOTE.sub("", text)
    text = _CODE.sub(r"`\1`", text)
    text = _ROLE.sub(_role_target, text)
    text = _STRONG.sub(r"\1", text)
    return _LITERAL_INTRO.sub(":", text)


def _role_target(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class TerminalHelpFormatter(argparse.HelpFormatter):
    """argparse's default formatter (re-wrapped descriptions), markup made plain."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(terminal_text(text))


class TerminalRawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The raw-description formatter (line breaks kept), markup made plain."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(terminal_text(text))


def _terminal_formatter(formatter: object) -> type[argparse.HelpFormatter] | None:
    """The terminal twin of ``formatter``; None when it has none (a parser's own class)."""
    if formatter is argparse.RawDescriptionHelpFormatter:
        return TerminalRawDescriptionHelpFormatter
    if formatter is argparse.HelpFormatter:
        return TerminalHelpFormatter
    return None


def use_terminal_help(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and every subcommand parser under it the terminal formatters."""
    twin = _terminal_formatter(parser.formatter_class)
    if twin is not None:
        parser.formatter_class = twin
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                use_terminal_help(child)
