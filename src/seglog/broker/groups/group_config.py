"""The broker settings the classic group coordinator honours, with Kafka's names and defaults.

| field | Kafka setting | default |
|---|---|---|
| ``initial_rebalance_delay_ms`` | ``group.initial.rebalance.delay.ms`` | 3000 |
| ``min_session_timeout_ms`` | ``group.min.session.timeout.ms`` | 6000 |
| ``max_session_timeout_ms`` | ``group.max.session.timeout.ms`` | 1800000 |
| ``max_size`` | ``group.max.size`` | 2147483647 |
| ``new_member_join_timeout_ms`` | (Kafka's constant ``NewMemberJoinTimeoutMs``) | 300000 |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seglog.errors import InvalidConfigError

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Validated coordinator settings (milliseconds; ``max_size`` counts members)."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = _INT32_MAX
    new_member_join_timeout_ms: int = 300_000

    def __post_init__(self) -> None:
        if self.initial_rebalance_delay_ms < 0:
            raise InvalidConfigError(
                "group.initial.rebalance.delay.ms must be >= 0, got "
                f"{self.initial_rebalance_delay_ms}"
            )
        if (
            self.min_session_timeout_ms < 0
            or self.max_session_timeout_ms < self.min_session_timeout_ms
        ):
            raise InvalidConfigError(
                "group.min.session.timeout.ms must be >= 0 and <= group.max.session.timeout.ms, "
                "got "
                f"{self.min_session_timeout_ms} and {self.max_session_timeout_ms}"
            )
        if self.max_size < 1:
            raise InvalidConfigError(f"group.max.size must be >= 1, got {self.max_size}")
        if self.new_member_join_timeout_ms < 0:
            raise InvalidConfigError(
                f"new member join timeout must be >= 0, got {self.new_member_join_timeout_ms}"
            )

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> GroupConfig:
        """Reads the ``group.*`` broker properties; absent ones keep Kafka's defaults."""
        base = cls()

        def pick(name: str, default: int) -> int:
            raw = props.get(name)
            if raw is None:
                return default
            try:
                return int(raw.strip())
            except ValueError:
                raise InvalidConfigError(f"{name} must be an integer, got {raw!r}") from None

        return cls(
            initial_rebalance_delay_ms=pick(
                "group.initial.rebalance.delay.ms", base.initial_rebalance_delay_ms
            ),
            min_session_timeout_ms=pick(
                "group.min.session.timeout.ms", base.min_session_timeout_ms
            ),
            max_session_timeout_ms=pick(
                "group.max.session.timeout.ms", base.max_session_timeout_ms
            ),
            max_size=pick("group.max.size", base.max_size),
        )
