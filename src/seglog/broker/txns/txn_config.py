"""The broker settings the transaction coordinator honours, with Kafka's names and defaults.

* ``max_timeout_ms``: ``transaction.max.timeout.ms``, 900000;
* ``transactional_id_expiration_ms``: ``transactional.id.expiration.ms``, 604800000;
* ``abort_timed_out_interval_ms``:
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 10000;
* ``remove_expired_interval_ms``:
  ``transaction.remove.expired.transaction.cleanup.interval.ms``, 3600000.

Every value must be at least 1, as Kafka's ``atLeast(1)`` validators demand. A producer's
``transaction.timeout.ms`` must be positive and at most ``max_timeout_ms``
(INVALID_TRANSACTION_TIMEOUT otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from seglog.errors import InvalidConfigError

_KEYS = {
    "max_timeout_ms": "transaction.max.timeout.ms",
    "transactional_id_expiration_ms": "transactional.id.expiration.ms",
    "abort_timed_out_interval_ms": "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "remove_expired_interval_ms": "transaction.remove.expired.transaction.cleanup.interval.ms",
}
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Validated transaction coordinator settings (all in milliseconds)."""

    max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not 1 <= value <= _INT32_MAX:
                raise InvalidConfigError(
                    f"{_KEYS[item.name]} must be between 1 and {_INT32_MAX}, got {value}"
                )

    def valid_timeout(self, timeout_ms: int) -> bool:
        """Whether a producer's ``transaction.timeout.ms`` is allowed (Kafka's
        ``validateTransactionTimeoutMs``: positive and at most ``transaction.max.timeout.ms``)."""
        return 0 < timeout_ms <= self.max_timeout_ms

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TransactionConfig:
        """Reads the transaction properties; absent ones keep Kafka's defaults."""
        values: dict[str, int] = {}
        for name, key in _KEYS.items():
            raw = props.get(key)
            if raw is None:
                continue
            try:
                values[name] = int(raw.strip())
            except ValueError:
                raise InvalidConfigError(f"{key} must be an integer, got {raw!r}") from None
        return cls(**values)
