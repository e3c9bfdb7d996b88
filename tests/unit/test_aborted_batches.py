"""The columnar aborted-batch filter (Spark's reader) against the per-batch one (the record
reads): the same answer for every batch, on random producers, transactions and batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.core.aborted_batches import AbortedIntervals
from seglog.core.isolation import AbortedRanges
from seglog.format.batch import encode_batch
from seglog.format.columnar import scan_columns
from seglog.format.records import Record
from seglog.format.txn_index import AbortedTxn

Batch = tuple[int, bool, bool]  # producer id, transactional, control


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[Batch], list[AbortedTxn]]:
    batches = draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=30
        )
    )
    aborted = []
    for producer in range(4):
        points = sorted(draw(st.sets(st.integers(0, len(batches)), max_size=6)))
        for first, last in zip(points[::2], points[1::2], strict=False):
            aborted.append(AbortedTxn(producer, first, last, last + 1))
    return batches, aborted


@settings(max_examples=200, deadline=None)
@given(logs())
def test_columns_and_ranges_agree(case: tuple[list[Batch], list[AbortedTxn]]) -> None:
    batches, aborted = case
    data = b"".join(
        encode_batch(
            [Record(offset, 0, b"k", b"v")],
            base_offset=offset,
            producer_id=producer,
            producer_epoch=0,
            base_sequence=-1 if control else 0,
            is_transactional=transactional,
            is_control=control,
        )
        for offset, (producer, transactional, control) in enumerate(batches)
    )
    columns = scan_columns(data)
    got = AbortedIntervals(aborted).aborted_batches(columns.batches).tolist()
    ranges = AbortedRanges(aborted)
    expected = [
        transactional and not control and ranges.holds(producer, offset)
        for offset, (producer, transactional, control) in enumerate(batches)
    ]
    assert got == expected
    assert bool(AbortedIntervals(aborted)) == bool(aborted)


@settings(max_examples=100, deadline=None)
@given(logs())
def test_rows_without_aborted_batches(case: tuple[list[Batch], list[AbortedTxn]]) -> None:
    """The kept rows are the records of the batches that are not aborted, in order, and
    each batch's ``record_start`` still says which rows are its records."""
    batches, aborted = case
    data = b"".join(
        encode_batch(
            [Record(2 * offset + i, 0, b"k%d" % i, b"v%d" % offset) for i in range(2)],
            base_offset=2 * offset,
            producer_id=producer,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=transactional,
        )
        for offset, (producer, transactional, _) in enumerate(batches)
    )
    columns = scan_columns(data)
    intervals = AbortedIntervals(
        [AbortedTxn(a.producer_id, 2 * a.first_offset, 2 * a.last_offset, 0) for a in aborted]
    )
    dropped = intervals.aborted_batches(columns.batches).tolist()
    kept = intervals.without_aborted_rows(columns)
    expected = [
        (2 * b + i, b"v%d" % b) for b in range(len(batches)) if not dropped[b] for i in range(2)
    ]
    assert [(int(o), kept.value(r)) for r, o in enumerate(kept.offset)] == expected
    starts = kept.batches.record_start
    for b in range(len(batches)):
        rows = range(int(starts[b]), int(starts[b + 1]))
        assert len(rows) == (0 if dropped[b] else 2)
        assert all(int(kept.batch_index[r]) == b for r in rows)
