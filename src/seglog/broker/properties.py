"""Typed reads of ``server.properties`` values the server's settings share.

Each takes the whole properties mapping and a key, returns the default when the key is absent,
and raises :class:`~seglog.errors.InvalidConfigError` naming the key and the bad text otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from seglog.errors import InvalidConfigError


def int_setting(props: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    """An integer of at least ``minimum``."""
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidConfigError(f"{key}: {text!r} is not an integer") from None
    if value < minimum:
        raise InvalidConfigError(f"{key}: {value} is below the minimum {minimum}")
    return value


def bool_setting(props: Mapping[str, str], key: str, default: bool) -> bool:
    """``true`` or ``false`` (any case)."""
    text = props.get(key)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfigError(f"{key}: {text!r} is not true or false")
    return value == "true"
