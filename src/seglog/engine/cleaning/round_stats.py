"""One cleaning round's figures (Kafka's ``CleanerStats``), in Kafka's log words."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CleanerStats:
    """One round's figures, as Kafka's ``CleanerStats``."""

    first_dirty_offset: int = 0
    end_offset: int = 0
    bytes_read: int = 0
    messages_read: int = 0
    bytes_written: int = 0
    messages_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    invalid_messages_read: int = 0
    map_keys: int = 0
    map_slots: int = 0
    buffer_utilization: float = 0.0
    is_partial: bool = False  # the map filled: the round ended before the uncleanable offset
    start_s: float = field(default_factory=time.monotonic)
    map_complete_s: float = 0.0
    end_s: float = 0.0
    size_before_bytes: int = 0
    size_after_bytes: int = 0
    groups: int = 0

    @property
    def elapsed_secs(self) -> float:
        """Seconds the whole round took."""
        return max(self.end_s - self.start_s, 1e-9)

    @property
    def elapsed_index_secs(self) -> float:
        """Seconds spent building the offset map."""
        return max(self.map_complete_s - self.start_s, 0.0)

    @property
    def recopy_percent(self) -> int:
        """Bytes written as a share of bytes read (Kafka's ``cleaner-recopy-percent``)."""
        return int(100 * self.bytes_written / max(self.bytes_read, 1))

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON-able dict."""
        return {
            "first_dirty_offset": self.first_dirty_offset,
            "end_offset": self.end_offset,
            "bytes_read": self.bytes_read,
            "messages_read": self.messages_read,
            "bytes_written": self.bytes_written,
            "messages_written": self.messages_written,
            "map_bytes_read": self.map_bytes_read,
            "map_messages_read": self.map_messages_read,
            "invalid_messages_read": self.invalid_messages_read,
            "map_keys": self.map_keys,
            "buffer_utilization": round(self.buffer_utilization, 6),
            "is_partial": self.is_partial,
            "elapsed_secs": round(self.elapsed_secs, 6),
            "elapsed_index_secs": round(self.elapsed_index_secs, 6),
            "size_before_bytes": self.size_before_bytes,
            "size_after_bytes": self.size_after_bytes,
            "groups": self.groups,
            "recopy_percent": self.recopy_percent,
        }

    def summary(self, name: str, *, thread: int = 0) -> str:
        """Kafka's INFO summary of a round, in its words."""
        mb = 1024.0 * 1024.0
        elapsed = self.elapsed_secs
        index_secs = self.elapsed_index_secs
        clean_secs = max(elapsed - index_secs, 1e-9)
        lines = [
            f"Log cleaner thread {thread} cleaned log {name} (dirty section = "
            f"[{self.first_dirty_offset}, {self.end_offset}])",
            f"\t{self.bytes_read / mb:.1f} MB of log processed in {elapsed:.1f} seconds "
            f"({self.bytes_read / mb / elapsed:.1f} MB/sec).",
            f"\tIndexed {self.map_bytes_read / mb:.1f} MB in {index_secs:.1f} seconds "
            f"({self.map_bytes_read / mb / max(index_secs, 1e-9):.1f} Mb/sec, "
            f"{100 * index_secs / elapsed:.1f}% of total time)",
            f"\tBuffer utilization: {100 * self.buffer_utilization:.1f}%",
            f"\tCleaned {self.bytes_read / mb:.1f} MB in {clean_secs:.1f} seconds "
            f"({self.bytes_read / mb / clean_secs:.1f} Mb/sec, "
            f"{100 * clean_secs / elapsed:.1f}% of total time)",
            f"\tStart size: {self.bytes_read / mb:.1f} MB ({self.messages_read:,} messages)",
            f"\tEnd size: {self.bytes_written / mb:.1f} MB ({self.messages_written:,} messages)",
            f"\t{100 - 100 * self.bytes_written / max(self.bytes_read, 1):.1f}% size "
            f"reduction ({100 - 100 * self.messages_written / max(self.messages_read, 1):.1f}% "
            "fewer messages)",
        ]
        if self.invalid_messages_read:
            lines.append(f"\tFound {self.invalid_messages_read} invalid messages (no key)")
        return "\n".join(lines)
