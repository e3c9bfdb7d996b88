"""The seglog source over a Kafka tiered-storage location (KIP-405 remote segments).

``spark.read.format("seglog").option("tieredStorage", "aiven" | "local-tiered-storage")
.option("path", LOCATION).option("subscribe", "t").load()`` reads the topic's uploaded
segments with the same schema and the same topic/offset options as a log directory.
``LOCATION`` is a local directory or an object-store URI (``s3://bucket/prefix``; endpoint
and region from ``s3.endpoint``/``s3.region`` or the AWS environment). The bucket is only
ever read.

Options of this mode (besides Spark's Kafka-source options):

* ``remoteLogMetadata``: a broker log directory (local or object store) holding the
  ``__remote_log_metadata-<n>`` partitions. Then the committed metadata decides which
  segments exist (COPY_SEGMENT_FINISHED and not deleted; aborted copies, deleted segments
  and a deleted partition are left out, as the broker leaves them out) and their offsets and
  epochs; a committed segment missing from the bucket is data loss (``failOnDataLoss``).
  Without it, the manifests (Aiven) or file names and checkpoints (LocalTieredStorage)
  decide, and segments deleted logically but still in the bucket are read.
* ``localPath``: the broker's local log directory (or several, comma-separated). Its
  partitions are read too: **the local log wins from its log start offset on** (that is
  where the broker itself serves fetches from local segments), remote pieces are clipped
  below it, so every offset is read once.

Overlapping uploads are resolved by :func:`seglog.core.tiered_selection.plan_remote_reads`.
Offsets: ``startingOffsets``/``endingOffsets`` ``earliest``, ``latest`` and per-partition
JSON; the timestamp forms raise :class:`~seglog.errors.SparkOptionError` in this mode (no
time index is consulted yet). Filters are never pushed down (Spark applies them all).
One input partition per piece (one segment, or the part of it in range) plus one per local
range.

``kafka.isolation.level=read_committed``: remote segments hold only decided transactions (a
broker uploads segments below its last stable offset); the partition's aborted transactions
(each uploaded segment's ``transaction`` index, plus the local log's ``.txnindex`` files) go
with every piece, whose reader drops the aborted batches' rows as a log directory's reader
does. The local part ends at its last stable offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition

from seglog.core.isolation import IsolationLevel
from seglog.core.tiered_selection import (
    ReadPiece,
    SegmentCandidate,
    committed_segments,
    plan_remote_reads,
)
from seglog.errors import DataLossError, SparkOptionError, UnknownTopicError
from seglog.format.remote_log_metadata import RemoteLogMetadata
from seglog.format.txn_index import AbortedTxn, decode_txn_index
from seglog.spark.arrow_reader import RangeRequest, read_range
from seglog.spark.offset_ranges import OffsetRange
from seglog.spark.options import (
    OffsetKind,
    OffsetSpec,
    SourceOptions,
    StrategyKind,
    parse_source_options,
)
from seglog.spark.planning import RangePartition, open_manager, range_partitions
from seglog.spark.tiered_reader import RemotePieceRequest, read_remote_piece
from seglog.storage.remote_files import RemoteFiles, open_remote
from seglog.storage.remote_log_metadata_log import read_remote_log_metadata
from seglog.storage.tiered_layouts import LAYOUTS, RemoteSegment, list_segments, read_index

_TIERED_KEYS = ("tieredstorage", "remotelogmetadata", "localpath")
TP = tuple[str, int]


def is_tiered(options: Mapping[str, str]) -> bool:
    """Whether the options ask for a tiered-storage read."""
    return any(str(k).lower() == "tieredstorage" for k in options)


@dataclass(frozen=True, slots=True)
class TieredOptions:
    """The checked options of a tiered read."""

    layout: str
    location: str
    store_options: tuple[tuple[str, str], ...]
    metadata_location: str | None
    local_dirs: tuple[str, ...]
    source: SourceOptions


def parse_tiered_options(options: Mapping[str, str]) -> TieredOptions:
    """Check the tiered options (module docstring) and the Kafka-source ones."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    layout = opts["tieredstorage"].strip().lower()
    if layout not in LAYOUTS:
        raise SparkOptionError(
            f"option 'tieredStorage' is {layout!r}; expected one of {', '.join(LAYOUTS)}"
        )
    location = opts.get("path", "").strip()
    if not location:
        raise SparkOptionError(
            "option 'path' is required with 'tieredStorage': the bucket prefix "
            "(s3://bucket/prefix) or local directory the plugin writes"
        )
    local = tuple(d.strip() for d in opts.get("localpath", "").split(",") if d.strip())
    rest = {k: v for k, v in opts.items() if k not in _TIERED_KEYS and k != "path"}
    store = tuple(sorted((k, v) for k, v in rest.items() if k.startswith("s3.")))
    source = parse_source_options(
        {k: v for k, v in rest.items() if not k.startswith("s3.")},
        is_streaming=False,
        log_dirs_required=False,
    )
    for spec in (source.starting, source.ending):
        if spec.kind in (OffsetKind.TIMESTAMP, OffsetKind.SPECIFIC_TIMESTAMPS):
            raise SparkOptionError(
                f"option {spec.option!r}: timestamps are not supported with 'tieredStorage' "
                "yet; give offsets"
            )
    return TieredOptions(
        layout,
        location,
        store,
        opts.get("remotelogmetadata"),
        local,
        source,
    )


def _resolve(spec: OffsetSpec, tp: TP, low: int, high: int) -> int:
    if spec.kind is OffsetKind.EARLIEST:
        return low
    if spec.kind is OffsetKind.LATEST:
        return high
    value = spec.as_dict().get(tp, -2 if spec.option == "startingOffsets" else -1)
    return low if value == -2 else high if value == -1 else value


class TieredBatchReader(DataSourceReader):
    """Plans pieces of remote segments (and local ranges) and reads them (module docstring)."""

    def __init__(self, options: TieredOptions) -> None:
        self.options = options

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802
        """Nothing is pushed: every filter goes back to Spark."""
        return list(filters)

    def partitions(self) -> list[InputPartition]:
        """One input partition per remote piece and per local range."""
        return plan_tiered(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one piece or range (on an executor)."""
        request = partition.value
        if request is None:
            return iter(())
        if isinstance(request, RemotePieceRequest):
            return read_remote_piece(request)
        assert isinstance(request, RangeRequest)
        return read_range(request)


class PiecePartition(InputPartition):
    """One Spark input partition: a :class:`RemotePieceRequest` (``value``)."""

    def __init__(self, request: RemotePieceRequest) -> None:
        super().__init__(request)


def _wanted(options: SourceOptions, tp: TP) -> bool:
    strategy = options.strategy
    if strategy.kind is StrategyKind.ASSIGN:
        return tp in strategy.partitions
    return strategy.matches(tp[0])


def _candidates(
    tp: TP,
    segments: list[RemoteSegment],
    records: list[RemoteLogMetadata] | None,
    options: TieredOptions,
) -> tuple[list[SegmentCandidate], dict[str, RemoteSegment]]:
    by_id = {s.segment_id: s for s in segments}
    if records is None:
        ranked = sorted(enumerate(segments), key=lambda p: (p[1].event_timestamp_ms, p[0]))
        return [
            SegmentCandidate(s.segment_id, s.start_offset, s.end_offset, s.leader_epochs, rank)
            for rank, (_, s) in enumerate(ranked)
        ], by_id
    topic_ids = {s.topic_id for s in segments}
    committed: dict[str, SegmentCandidate] = {}
    for topic_id in topic_ids:
        committed.update(committed_segments(records, topic_id, tp[1]))
    missing = sorted(k for k in committed if k not in by_id)
    if missing and options.source.fail_on_data_loss:
        raise DataLossError(
            f"{tp[0]}-{tp[1]}: committed remote segment(s) {', '.join(missing)} are not in "
            f"{options.location}; set failOnDataLoss=false to skip them"
        )
    return [c for k, c in committed.items() if k in by_id], by_id


def plan_tiered(options: TieredOptions) -> list[InputPartition]:
    """The input partitions of a tiered read (module docstring)."""
    files = open_remote(options.location, dict(options.store_options))
    if not files.is_dir():
        raise SparkOptionError(f"option 'path': {files.describe('')} does not exist")
    source = options.source
    per_tp = {
        tp: segs for tp, segs in list_segments(files, options.layout).items() if _wanted(source, tp)
    }
    records = None
    if options.metadata_location is not None:
        records = read_remote_log_metadata(
            open_remote(options.metadata_location, dict(options.store_options))
        )
    committed = source.isolation_level is IsolationLevel.READ_COMMITTED
    local_bounds: dict[TP, tuple[int, int]] = {}
    local_aborted: dict[TP, list[AbortedTxn]] = {}
    if options.local_dirs:
        local_source = parse_source_options(
            {"path": ",".join(options.local_dirs), "subscribepattern": ".*"}, is_streaming=False
        )
        with open_manager(local_source) as manager:
            for topic in manager.topic_names():
                for partition in manager.partitions_of(topic):
                    if _wanted(source, (topic, partition)):
                        log = manager.get_log(topic, partition)
                        local_bounds[(topic, partition)] = (
                            log.log_start_offset,
                            log.last_stable_offset if committed else log.log_end_offset,
                        )
                        if committed:
                            local_aborted[(topic, partition)] = log.aborted_transactions(
                                log.log_start_offset, log.log_end_offset
                            )
    if source.strategy.kind is StrategyKind.SUBSCRIBE:
        found = {t for t, _ in per_tp} | {t for t, _ in local_bounds}
        missing = [t for t in source.strategy.topics if t not in found]
        if missing:
            raise UnknownTopicError(
                f"option 'subscribe': topic(s) {', '.join(map(repr, missing))} have no "
                f"segments in {files.describe('')}"
            )
    out: list[InputPartition] = []
    local_ranges: list[OffsetRange] = []
    for tp in sorted(set(per_tp) | set(local_bounds)):
        pieces: list[ReadPiece] = []
        by_id: dict[str, RemoteSegment] = {}
        aborted: tuple[AbortedTxn, ...] = ()
        if tp in per_tp:
            candidates, by_id = _candidates(tp, per_tp[tp], records, options)
            pieces = plan_remote_reads(candidates)
            if committed:
                aborted = _aborted_transactions(files, per_tp[tp], local_aborted.get(tp, []))
        local = local_bounds.get(tp)
        low = pieces[0].start if pieces else (local[0] if local else 0)
        remote_end = _piece_end(pieces[-1], by_id) if pieces else low
        high = max(remote_end, local[1]) if local else remote_end
        start = _resolve(source.starting, tp, low, high)
        end = _resolve(source.ending, tp, low, high)
        cut = local[0] if local else high  # the local log wins from its start on
        for piece in pieces:
            last = _piece_end(piece, by_id) - 1
            first, stop = max(piece.start, start), min(last, end - 1, cut - 1)
            if first <= stop:
                open_ended = piece.last is None and stop == last and not local
                request = RemotePieceRequest(
                    files,
                    by_id[piece.segment_id],
                    first,
                    None if open_ended else stop,
                    source.include_headers,
                    aborted,
                )
                out.append(PiecePartition(request))
        if local is not None and max(start, local[0]) < min(end, local[1]):
            local_ranges.append(OffsetRange(tp[0], tp[1], max(start, local[0]), min(end, local[1])))
    if local_ranges:
        local_source = parse_source_options(
            {"path": ",".join(options.local_dirs), "subscribepattern": ".*",
             "includeheaders": str(source.include_headers).lower(),
             "kafka.isolation.level": source.isolation_level.value},
            is_streaming=False,
        )  # fmt: skip
        out.extend(range_partitions(local_source, local_ranges))
    return out


def _aborted_transactions(
    files: RemoteFiles, segments: list[RemoteSegment], local: list[AbortedTxn]
) -> tuple[AbortedTxn, ...]:
    """Every aborted transaction of a partition: the ``transaction`` index of each uploaded
    segment (a transaction's entry lives with its ABORT marker, which may lie in a later
    segment, or in the local log) plus the local log's; the same entry from overlapping
    uploads once. Small: one entry per aborted transaction."""
    found: set[AbortedTxn] = set(local)
    for segment in segments:
        data = read_index(files, segment, "transaction")
        if data:
            found.update(decode_txn_index(data, path=files.describe(segment.log_path)))
    return tuple(sorted(found, key=lambda t: (t.last_offset, t.producer_id)))


def _piece_end(piece: ReadPiece, by_id: dict[str, RemoteSegment]) -> int:
    """One past the piece's last offset (an open end: the segment's listed end, else huge)."""
    if piece.last is not None:
        return piece.last + 1
    end = by_id[piece.segment_id].end_offset
    return (1 << 62) if end is None else end + 1


__all__ = ["PiecePartition", "RangePartition", "TieredBatchReader", "plan_tiered"]
