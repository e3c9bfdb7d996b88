"""Isolation levels of a reader (Kafka's consumer ``isolation.level``).

* ``read_uncommitted`` (the default): every data record up to the high watermark, those of
  open and aborted transactions included;
* ``read_committed``: data records up to the last stable offset only, leaving out the
  records of aborted transactions. Control records (transaction markers) are never handed
  to a reader at either level.
"""

from __future__ import annotations

from enum import StrEnum

from seglog.errors import InvalidConfigError


class IsolationLevel(StrEnum):
    """Kafka's two isolation levels, spelled as its ``isolation.level`` values."""

    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"

    @classmethod
    def parse(cls, text: str, *, option: str = "isolation.level") -> IsolationLevel:
        """The level named by ``text`` (case-insensitive); ``InvalidConfigError`` naming
        ``option`` and the two allowed values otherwise."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            allowed = ", ".join(level.value for level in cls)
            raise InvalidConfigError(
                f"{option}: {text!r} is not an isolation level (allowed: {allowed})"
            ) from None
