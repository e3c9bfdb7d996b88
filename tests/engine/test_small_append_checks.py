"""Small appends (at most ``SMALL_APPEND_RECORDS`` uncompressed records) are checked in Python
instead of by the columnar kernel: both paths must agree on every outcome (accepted, or the same
error with the same message and record index), for keys on a compacted topic and CreateTime
bounds, over one or several batches."""

from __future__ import annotations

import itertools

import pytest
from log_support import T0, config

from seglog.core import append_validation
from seglog.core.append_validation import SMALL_APPEND_RECORDS, validate_append
from seglog.errors import SeglogError
from seglog.format.batch import encode_batch
from seglog.format.records import Record

NOW = T0 + 1_000
BOUNDED = config(
    cleanup_policy=("compact",),
    message_timestamp_before_max_ms=500,
    message_timestamp_after_max_ms=500,
)


def _outcome(data: bytes, monkeypatch: pytest.MonkeyPatch, small: int) -> object:
    monkeypatch.setattr(append_validation, "SMALL_APPEND_RECORDS", small)
    try:
        validate_append(data, config=BOUNDED, log_end_offset=0, now_ms=NOW, where="t-0")
    except SeglogError as error:
        return type(error), str(error), getattr(error, "record_index", None)
    return "accepted"


def _append(keyed: tuple[bool, ...], late: tuple[bool, ...], split: int) -> bytes:
    records = [
        Record(i, NOW + (900 if is_late else 0), b"k%d" % i if has_key else None, b"v")
        for i, (has_key, is_late) in enumerate(zip(keyed, late, strict=True))
    ]
    parts = [records[:split], records[split:]] if 0 < split < len(records) else [records]
    return b"".join(encode_batch([Record(j, r.timestamp, r.key, r.value) for j, r in
                                  enumerate(part)]) for part in parts)  # fmt: skip


@pytest.mark.parametrize("count", [1, 2, 3, SMALL_APPEND_RECORDS])
def test_the_python_and_kernel_checks_agree(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = set()
    for keyed, late in itertools.islice(
        itertools.product(
            itertools.product((True, False), repeat=count),
            itertools.product((False, True), repeat=count),
        ),
        64,
    ):
        for split in (0, count // 2):
            data = _append(keyed, late, split)
            python = _outcome(data, monkeypatch, SMALL_APPEND_RECORDS)
            kernel = _outcome(data, monkeypatch, 0)
            assert python == kernel, (keyed, late, split)
            outcomes.add(python if python == "accepted" else python[0])  # type: ignore[index]
    assert "accepted" in outcomes and len(outcomes) >= 2  # both refusals and acceptances seen
