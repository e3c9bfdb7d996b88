"""Hypothesis strategies for records and batches (shipped so downstream tests can reuse them).

``batch_specs()`` draws everything :func:`seglog.format.batch.encode_batch` takes: records
with increasing offsets (with gaps, as compaction leaves), timestamps that may go backwards,
null keys and values, headers with null values, every codec, both timestamp types,
transactional and control flags with valid producer fields, and the delete-horizon flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from seglog.format.batch import encode_batch
from seglog.format.compression import CompressionType
from seglog.format.control import ControlRecordType, encode_control_key, encode_end_txn_marker
from seglog.format.records import Header, Record, TimestampType

TS_BASE = 1_700_000_000_000

maybe_bytes = st.none() | st.binary(max_size=24)
header_keys = st.text(max_size=12)
headers = st.lists(st.builds(Header, header_keys, maybe_bytes), max_size=2).map(tuple)


@dataclass(frozen=True)
class BatchSpec:
    """Arguments for ``encode_batch``: the records and the batch-level keyword options."""

    records: tuple[Record, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> bytes:
        """The batch bytes."""
        return encode_batch(list(self.records), **self.options)


@st.composite
def record_lists(
    draw: st.DrawFn, min_size: int = 1, max_size: int = 8, base_offset: int | None = None
) -> list[Record]:
    """Records with strictly increasing offsets (gaps allowed) and arbitrary timestamps."""
    count = draw(st.integers(min_size, max_size))
    offset = base_offset if base_offset is not None else draw(st.integers(0, 1 << 40))
    base_ts = draw(st.integers(0, 1 << 42) | st.just(TS_BASE))
    out = []
    for _ in range(count):
        out.append(
            Record(
                offset=offset,
                timestamp=base_ts + draw(st.integers(-100_000, 100_000)),
                key=draw(maybe_bytes),
                value=draw(maybe_bytes),
                headers=draw(headers),
            )
        )
        offset += draw(st.integers(1, 3) | st.just(1))
    return out


codecs = st.sampled_from(list(CompressionType))


@st.composite
def batch_specs(draw: st.DrawFn, codec: CompressionType | None = None) -> BatchSpec:
    """A data batch (or, sometimes, a transaction marker) with valid flag combinations."""
    if draw(st.integers(0, 9)) == 0:
        return draw(control_batch_specs())
    records = draw(record_lists())
    options: dict[str, Any] = {
        "compression": codec if codec is not None else draw(codecs),
        "partition_leader_epoch": draw(st.integers(-1, 1000)),
    }
    if draw(st.booleans()):
        options["producer_id"] = draw(st.integers(0, 1 << 40))
        options["producer_epoch"] = draw(st.integers(0, 32767))
        options["base_sequence"] = draw(st.integers(0, (1 << 31) - 1))
        options["is_transactional"] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        options["timestamp_type"] = TimestampType.LOG_APPEND_TIME
        options["max_timestamp"] = draw(st.integers(0, 1 << 42))
    if draw(st.integers(0, 4)) == 0:
        options["delete_horizon_ms"] = draw(st.integers(0, 1 << 42))
    return BatchSpec(tuple(records), options)


@st.composite
def control_batch_specs(draw: st.DrawFn) -> BatchSpec:
    """A COMMIT or ABORT marker batch as a transaction coordinator has the broker write it."""
    marker = draw(st.sampled_from([ControlRecordType.COMMIT, ControlRecordType.ABORT]))
    record = Record(
        offset=draw(st.integers(0, 1 << 40)),
        timestamp=TS_BASE + draw(st.integers(0, 10**6)),
        key=encode_control_key(marker),
        value=encode_end_txn_marker(draw(st.integers(0, 1000))),
    )
    options: dict[str, Any] = {
        "is_control": True,
        "is_transactional": True,
        "producer_id": draw(st.integers(0, 1 << 40)),
        "producer_epoch": draw(st.integers(0, 32767)),
        "partition_leader_epoch": draw(st.integers(0, 1000)),
    }
    return BatchSpec((record,), options)


@st.composite
def log_buffers(draw: st.DrawFn, max_batches: int = 4) -> tuple[bytes, list[BatchSpec]]:
    """A buffer of consecutive batches with increasing offsets, as a segment holds them."""
    specs = []
    offset = draw(st.integers(0, 1 << 30))
    for _ in range(draw(st.integers(1, max_batches))):
        spec = draw(batch_specs())
        shift = offset - spec.records[0].offset
        records = tuple(
            Record(r.offset + shift, r.timestamp, r.key, r.value, r.headers) for r in spec.records
        )
        spec = BatchSpec(records, spec.options)
        specs.append(spec)
        offset = records[-1].offset + draw(st.integers(1, 5))
    return b"".join(s.encode() for s in specs), specs
