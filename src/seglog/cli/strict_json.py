"""Strict JSON input for the command line (``produce --format json``, offsets files).

:func:`loads_strict` accepts only what the JSON standard allows and nothing ambiguous: a key
given twice in one object, ``NaN``/``Infinity``, and nesting too deep for the parser are
refused with a ``ValueError`` whose message names the problem (and, for syntax errors, the
line and column). Nothing here ever evaluates or unpickles input.
"""

from __future__ import annotations

import json
from typing import Any


def kind_of(value: Any) -> str:
    """A JSON value's kind in words, for error messages ("a string", "an array", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, value in pairs:
        if name in obj:
            raise ValueError(f"key {name!r} is given twice in an object")
        obj[name] = value
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_strict(text: str) -> Any:
    """Parse ``text`` as standard JSON; ``ValueError`` names what is wrong and where."""
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
