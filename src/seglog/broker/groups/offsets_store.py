"""The ``__consumer_offsets`` store: committed offsets and group metadata over a LogManager.

**The topic.** ``__consumer_offsets`` is created on first write, as Kafka's coordinator does,
with ``offsets.topic.num.partitions`` partitions (50) and the configs Kafka gives it:
``cleanup.policy=compact``, ``compression.type=producer``, ``segment.bytes`` =
``offsets.topic.segment.bytes`` (104857600). All of a group's records go to one partition,
``group_partition(group, offsets.topic.num.partitions)`` (Kafka's ``partitionFor``), except
for a group loaded from another partition (a directory written with another partition count):
its records keep going where they were found, so tombstones shadow what they delete. When the
topic exists whole with another partition count, that count is used (an offline tool run
without the server's ``server.properties`` still finds the server's groups' partitions).

**Writes** (record formats: :mod:`seglog.format.group_records`; each a magic 2 batch,
CreateTime ``now_ms``, no producer id (but TxnOffsetCommit's), uncompressed as Kafka's
``offsets.topic.compression.codec`` default):

* :meth:`OffsetsStore.commit`: one OffsetCommit record per partition, all in **one batch**;
* :meth:`OffsetsStore.commit_transactional` (TxnOffsetCommit): the same, as a transactional
  batch of the producer's id and epoch (base sequence: the next after the producer's last
  batch in the partition, 0 for a new epoch; Kafka writes 0 every time and skips the sequence
  check for its own appends, seglog's log checks every producer batch). The offsets stay
  pending (:mod:`.pending_offsets`) until :meth:`OffsetsStore.complete_transaction` is told the
  transaction's marker was written to that partition;
* :meth:`OffsetsStore.store_group`: one GroupMetadata record (the coordinator's view);
* :meth:`OffsetsStore.delete_group`, :meth:`OffsetsStore.delete_offsets`,
  :meth:`OffsetsStore.topic_deleted`, :meth:`OffsetsStore.expire_offsets`: tombstones (null
  values) that seglog's cleaner later removes (after ``delete.retention.ms``). As in Kafka,
  a partition with only a pending transactional offset gets a tombstone too (deletions) and
  a tombstone drops the pending offsets it covers, so the transaction's COMMIT does not bring
  a deleted offset back; expiry spares partitions with pending offsets and groups in an open
  transaction.

**Crash safety.** A commit (or a group's tombstones) is one batch appended with one
``Log.append``: after a crash, start-up recovery keeps the whole batch or truncates it away
(its CRC covers every record), so a commit is atomic by construction; no other file is
written. The memory view changes only after the append returned, so it always equals what a
reload would give. A deletion larger than one batch (``max.message.bytes``) is written in
several batches, each atomic; a crash between them leaves some tombstones unwritten, which the
next deletion or expiry writes again. A TxnOffsetCommit is one batch too, and its marker one
control batch written by the transaction coordinator: after a crash a reload finds its offsets
not written, all pending, or (marker written) all committed.

**Load** (:meth:`OffsetsStore.load`, at start-up): every partition of the topic present here
is replayed from its log start offset (:mod:`.offsets_replay`): the last value of a key wins,
a tombstone deletes it; records of transactional batches are pending until their producer's
marker in that partition: a COMMIT applies them (unless a plain commit of the same partition
lies later in the log), an ABORT drops them, and those without a marker yet stay pending
(their transaction is still open: the coordinator completes it), exactly as a running store
would hold them; key types seglog does not read (KIP-848, share groups) are skipped, as
Kafka's loader does. A record that does not parse stops the load with
:class:`~seglog.errors.CorruptGroupRecordError` naming the partition and offset (Kafka stops
loading the partition there too). A real broker's partitions load the same way.

Time is always given (``now_ms``); nothing here reads a clock. The class is synchronous and
not thread-safe: the server calls it from its one event loop; the CLI from one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from seglog.broker.groups.offset_expiry import expired_offsets, group_is_removable
from seglog.broker.groups.offsets_replay import TxnMarker, replay_items
from seglog.broker.groups.offsets_values import (
    ExpiryResult,
    LoadSummary,
    OffsetAndMetadata,
    OffsetsSettings,
)
from seglog.broker.groups.pending_offsets import PendingTxnOffsets
from seglog.engine.log import Log
from seglog.engine.log.append_info import LogAppendInfo
from seglog.engine.log_manager import LogManager
from seglog.errors import CorruptGroupRecordError, RecordTooLargeError, UnknownTopicError
from seglog.format.builder import BatchBuilder
from seglog.format.group_records import (
    NO_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
    group_partition,
)
from seglog.format.topic_names import TopicPartition
from seglog.format.varint import INT32_MAX

OFFSETS_TOPIC = "__consumer_offsets"

__all__ = [
    "OFFSETS_TOPIC",
    "ExpiryResult",
    "LoadSummary",
    "OffsetAndMetadata",
    "OffsetsSettings",
    "OffsetsStore",
]


class OffsetsStore:
    """Committed offsets and group metadata, kept in ``__consumer_offsets`` (see the module
    docstring). Build with :meth:`open` (loads) or the constructor then :meth:`load`."""

    def __init__(self, manager: LogManager, settings: OffsetsSettings | None = None) -> None:
        self.manager = manager
        self.settings = settings or OffsetsSettings.from_broker(manager.broker)
        self._offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
        self._positions: dict[str, dict[TopicPartition, int]] = {}  # log offset of each commit
        self._pending = PendingTxnOffsets()
        self._metadata: dict[str, GroupMetadataValue] = {}
        self._home: dict[str, int] = {}  # the partition a loaded group's records are in
        self._count: int | None = None  # partition_count(), once the topic exists

    @classmethod
    def open(cls, manager: LogManager, settings: OffsetsSettings | None = None) -> OffsetsStore:
        """A store with every partition of ``__consumer_offsets`` here loaded."""
        store = cls(manager, settings)
        store.load()
        return store

    # --- queries ---------------------------------------------------------------------------------
    def partition_count(self) -> int:
        """The partition count groups are hashed over: the topic's own when its partitions
        0..n-1 are all here (it was made with another ``offsets.topic.num.partitions``), else
        ``offsets.topic.num.partitions`` (also for a broker's directory copied in part)."""
        if self._count is None:
            if not self._exists():
                return self.settings.num_partitions
            here = self.manager.partitions_of(OFFSETS_TOPIC)
            whole = here and here == list(range(len(here)))
            self._count = len(here) if whole else self.settings.num_partitions
        return self._count

    def partition_for(self, group: str) -> int:
        """The ``__consumer_offsets`` partition holding ``group``'s records."""
        home = self._home.get(group)
        return group_partition(group, self.partition_count()) if home is None else home

    def groups(self) -> list[str]:
        """Every group with stored metadata, committed offsets or an open transaction, sorted."""
        with_offsets = {g for g, offsets in self._offsets.items() if offsets}
        pending = {g for g in self._pending.groups() if self._pending.partitions_of(g)}
        return sorted(set(self._metadata) | with_offsets | pending)

    def group_metadata(self, group: str) -> GroupMetadataValue | None:
        """The group's last stored metadata, or None."""
        return self._metadata.get(group)

    def committed(
        self, group: str, topics: Iterable[str] | None = None
    ) -> dict[TopicPartition, OffsetCommitValue]:
        """The group's committed offsets (of ``topics`` only, when given), by partition."""
        offsets = self._offsets.get(group, {})
        if topics is None:
            return dict(offsets)
        wanted = set(topics)
        return {tp: value for tp, value in offsets.items() if tp.topic in wanted}

    def has_pending(self, group: str, tp: TopicPartition) -> bool:
        """Whether ``group`` has a transactional offset for ``tp`` awaiting its marker
        (OffsetFetch's ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for it)."""
        return self._pending.has(group, tp)

    def pending(self, group: str) -> dict[int, dict[TopicPartition, OffsetCommitValue]]:
        """``group``'s offsets awaiting their transaction's marker, by producer id."""
        return self._pending.pending(group)

    def is_metadata_too_large(self, metadata: str | None) -> bool:
        """Whether a commit's metadata passes ``offset.metadata.max.bytes`` (Kafka compares
        the Java string's length, in UTF-16 code units): OFFSET_METADATA_TOO_LARGE."""
        if metadata is None:
            return False
        units = len(metadata.encode("utf-16-le", "surrogatepass")) // 2
        return units > self.settings.metadata_max_bytes

    # --- writes ----------------------------------------------------------------------------------
    def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        now_ms: int,
        expire_timestamp_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetCommitValue]:
        """Commit ``offsets`` for ``group`` in one batch (atomic); returns what was stored.

        ``expire_timestamp_ms`` (an OffsetCommit's ``retention_time_ms`` added to now) makes
        the values v1, as Kafka writes them. Metadata longer than ``offset.metadata.max.bytes``
        is the caller's to refuse per partition (OFFSET_METADATA_TOO_LARGE); a commit too
        large for one batch raises :class:`~seglog.errors.RecordTooLargeError`.
        """
        expire = NO_TIMESTAMP if expire_timestamp_ms is None else expire_timestamp_ms
        values = {
            tp: OffsetCommitValue(om.offset, om.metadata, now_ms, om.leader_epoch, expire)
            for tp, om in offsets.items()
        }
        if not values:
            return {}
        info = self._append_one_batch(group, _offset_records(group, values), now_ms)
        self._offsets.setdefault(group, {}).update(values)
        positions = self._positions.setdefault(group, {})
        for i, tp in enumerate(values):
            positions[tp] = info.first_offset + i
        return values

    def commit_transactional(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        producer_id: int,
        producer_epoch: int,
        now_ms: int,
    ) -> dict[TopicPartition, OffsetCommitValue]:
        """TxnOffsetCommit: append ``offsets`` as one transactional batch of the producer
        (atomic) and keep them pending until :meth:`complete_transaction`; returns what was
        written. The log's producer checks apply: an epoch older than the producer's last in
        the partition raises :class:`~seglog.errors.InvalidProducerEpochError`."""
        values = {
            tp: OffsetCommitValue(om.offset, om.metadata, now_ms, om.leader_epoch)
            for tp, om in offsets.items()
        }
        if not values:
            return {}
        partition = self.partition_for(group)
        log = self._log(partition)
        producer = (producer_id, producer_epoch, _next_sequence(log, producer_id, producer_epoch))
        info = self._append_one_batch(
            group, _offset_records(group, values), now_ms, producer=producer
        )
        self._pending.add(
            partition,
            producer_id,
            group,
            ((tp, info.first_offset + i, v) for i, (tp, v) in enumerate(values.items())),
        )
        return values

    def complete_transaction(
        self, offsets_partition: int, producer_id: int, *, commit: bool
    ) -> int:
        """The COMMIT (``commit``) or ABORT marker of ``producer_id`` is written to
        ``__consumer_offsets`` partition ``offsets_partition``: its pending offsets become
        committed (each unless a plain commit of the same partition was appended after it)
        or are dropped. Returns how many offsets became committed. Nothing is written."""
        applied = 0
        for group, offsets in self._pending.complete(offsets_partition, producer_id).items():
            if not commit:
                continue
            committed = self._offsets.setdefault(group, {})
            positions = self._positions.setdefault(group, {})
            for tp, (position, value) in offsets.items():
                if tp not in committed or positions.get(tp, -1) < position:
                    committed[tp] = value
                    positions[tp] = position
                    applied += 1
        return applied

    def store_group(self, group: str, metadata: GroupMetadataValue, *, now_ms: int) -> None:
        """Write ``group``'s metadata (value v3), as the coordinator does on each change."""
        record = (encode_key(GroupMetadataKey(group)), encode_group_metadata_value(metadata))
        self._append_one_batch(group, [record], now_ms)
        self._metadata[group] = metadata

    def delete_group(self, group: str, *, now_ms: int) -> int:
        """Tombstones for the group's metadata and every offset it committed; returns how
        many were written (0: the group is unknown, nothing written). Partitions with only
        a pending transactional offset get one too, as Kafka writes them: the transaction's
        COMMIT then restores nothing."""
        tps = list(self._offsets.get(group, {}))
        tps += sorted(self._pending.partitions_of(group) - set(tps))
        keys = [encode_key(OffsetCommitKey(group, tp.topic, tp.partition)) for tp in tps]
        if group in self._metadata:
            keys.append(encode_key(GroupMetadataKey(group)))
        if keys:
            self._append_tombstones(self.partition_for(group), keys, now_ms)
        for tp in tps:
            self._pending.discard(group, tp)
        self._offsets.pop(group, None)
        self._positions.pop(group, None)
        self._metadata.pop(group, None)
        return len(keys)

    def delete_offsets(
        self, group: str, partitions: Iterable[TopicPartition], *, now_ms: int
    ) -> list[TopicPartition]:
        """Tombstones for some of the group's offsets (OffsetDelete), committed or pending in
        a transaction; returns those deleted."""
        offsets = self._offsets.get(group, {})
        gone = [
            tp for tp in dict.fromkeys(partitions) if tp in offsets or self._pending.has(group, tp)
        ]
        if gone:
            keys = [encode_key(OffsetCommitKey(group, tp.topic, tp.partition)) for tp in gone]
            self._append_tombstones(self.partition_for(group), keys, now_ms)
            positions = self._positions.get(group, {})
            for tp in gone:
                offsets.pop(tp, None)
                positions.pop(tp, None)
                self._pending.discard(group, tp)
        return gone

    def topic_deleted(self, topic: str, *, now_ms: int) -> dict[str, list[TopicPartition]]:
        """Tombstones for every offset committed on ``topic`` (the topic was deleted)."""
        gone: dict[str, list[TopicPartition]] = {}
        for group in self.groups():
            held = set(self._offsets.get(group, {})) | self._pending.partitions_of(group)
            tps = sorted(tp for tp in held if tp.topic == topic)
            if tps:
                gone[group] = self.delete_offsets(group, tps, now_ms=now_ms)
        return gone

    def expire_offsets(
        self, *, now_ms: int, states: Mapping[str, str] | None = None
    ) -> ExpiryResult:
        """Tombstones for expired offsets (Kafka's rule: :mod:`.offset_expiry`), then for the
        metadata of groups left Empty without offsets. ``states``: live group states
        (``Stable``, ``Empty``, ``PreparingRebalance``, ...) of the groups the coordinator
        holds; others are judged by their stored metadata."""
        states = states or {}
        expired: dict[str, list[TopicPartition]] = {}
        removed: list[str] = []
        for group in self.groups():
            metadata = self._metadata.get(group)
            state = states.get(group)
            offsets = {
                tp: value
                for tp, value in self._offsets.get(group, {}).items()
                if not self._pending.has(group, tp)
            }
            tps = expired_offsets(
                offsets,
                metadata,
                now_ms=now_ms,
                retention_ms=self.settings.retention_ms,
                state=state,
            )
            if tps:
                expired[group] = self.delete_offsets(group, tps, now_ms=now_ms)
            if not self._pending.has_group(group) and group_is_removable(
                metadata, len(self._offsets.get(group, {})), state=state
            ):
                self._append_tombstones(
                    self.partition_for(group), [encode_key(GroupMetadataKey(group))], now_ms
                )
                self._metadata.pop(group, None)
                removed.append(group)
        return ExpiryResult(expired, removed)

    # --- loading ---------------------------------------------------------------------------------
    def load(self) -> LoadSummary:
        """Replay every partition of ``__consumer_offsets`` here (see the module docstring);
        what was in memory is replaced."""
        self._offsets, self._positions, self._metadata, self._home = {}, {}, {}, {}
        self._pending = PendingTxnOffsets()
        records = skipped = partitions = 0
        for tp, log in sorted(self.manager.logs().items()):
            if tp.topic != OFFSETS_TOPIC:
                continue
            partitions += 1
            for item in replay_items(log):
                if isinstance(item, TxnMarker):
                    self.complete_transaction(tp.partition, item.producer_id, commit=item.commit)
                    continue
                records += 1
                try:
                    record = decode_record(item.key, item.value)
                except CorruptGroupRecordError as exc:
                    raise CorruptGroupRecordError(
                        f"record at offset {item.offset} of {tp}: {exc.reason}",
                        position=exc.position,
                    ) from exc
                if isinstance(record.key, OffsetCommitKey):
                    self._home.setdefault(record.key.group, tp.partition)
                    self._replay_offset(
                        record.key, record.value, item.offset, tp.partition, item.producer_id
                    )
                elif isinstance(record.key, GroupMetadataKey):
                    self._home.setdefault(record.key.group, tp.partition)
                    self._apply_metadata(record.key.group, record.value)
                else:
                    skipped += 1
        offsets = sum(len(o) for o in self._offsets.values())
        pending = sum(len(self._pending.partitions_of(g)) for g in self._pending.groups())
        return LoadSummary(partitions, records, skipped, len(self.groups()), offsets, pending)

    def _replay_offset(
        self,
        key: OffsetCommitKey,
        value: object,
        position: int,
        offsets_partition: int,
        producer_id: int | None,
    ) -> None:
        """One OffsetCommit record read back (Kafka's ``OffsetMetadataManager.replay``): a
        transactional one is pending; a tombstone, transactional or not, deletes the committed
        offset and the pending ones of the partition."""
        tp = TopicPartition(key.topic, key.partition)
        if value is None:
            self._offsets.get(key.group, {}).pop(tp, None)
            self._positions.get(key.group, {}).pop(tp, None)
            self._pending.discard(key.group, tp)
            return
        assert isinstance(value, OffsetCommitValue)
        if producer_id is not None:
            self._pending.add(offsets_partition, producer_id, key.group, [(tp, position, value)])
        else:
            self._offsets.setdefault(key.group, {})[tp] = value
            self._positions.setdefault(key.group, {})[tp] = position

    def _apply_metadata(self, group: str, value: object) -> None:
        if value is None:
            self._metadata.pop(group, None)
        else:
            assert isinstance(value, GroupMetadataValue)
            self._metadata[group] = value

    # --- appending -------------------------------------------------------------------------------
    def _exists(self) -> bool:
        return OFFSETS_TOPIC in self.manager.topic_names()

    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` with its own settings unless it exists (the first
        FindCoordinator or write)."""
        if not self._exists():
            configs = self.settings.topic_configs()
            self.manager.create_topic(
                OFFSETS_TOPIC, self.settings.num_partitions, configs, internal=True
            )

    def _log(self, partition: int) -> Log:
        """The log of one partition, creating the topic on first use."""
        self.ensure_topic()
        try:
            return self.manager.get_log(OFFSETS_TOPIC, partition)
        except UnknownTopicError:
            raise UnknownTopicError(
                f"{OFFSETS_TOPIC}-{partition} is not in these log directories (a copy of a "
                "broker's directory without it?): the group's records cannot be written"
            ) from None

    def _append_one_batch(
        self,
        group: str,
        records: Sequence[tuple[bytes, bytes | None]],
        now_ms: int,
        *,
        producer: tuple[int, int, int] | None = None,
    ) -> LogAppendInfo:
        """Append ``records`` as one batch to the group's partition; ``producer`` (id, epoch,
        base sequence) makes it a transactional batch of that producer."""
        log = self._log(self.partition_for(group))
        limit = min(log.config.max_message_bytes, log.config.segment_bytes)
        if producer is None:
            builder = BatchBuilder(max_batch_bytes=limit)
        else:
            producer_id, producer_epoch, base_sequence = producer
            builder = BatchBuilder(
                max_batch_bytes=limit,
                is_transactional=True,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
            )
        for key, value in records:
            if not builder.try_append(now_ms, key, value, ()):
                raise RecordTooLargeError(
                    f"group {group!r}: {len(records)} records do not fit one batch of "
                    f"{limit} bytes (max.message.bytes of {OFFSETS_TOPIC})"
                )
        return log.append(builder.build())

    def _append_tombstones(self, partition: int, keys: list[bytes], now_ms: int) -> None:
        self._log(partition).append_records(((k, None) for k in keys), timestamp_ms=now_ms)


def _offset_records(
    group: str, values: Mapping[TopicPartition, OffsetCommitValue]
) -> list[tuple[bytes, bytes | None]]:
    """The OffsetCommit records of ``values``, in their order."""
    return [
        (encode_key(OffsetCommitKey(group, tp.topic, tp.partition)), encode_offset_commit_value(v))
        for tp, v in values.items()
    ]


def _next_sequence(log: Log, producer_id: int, producer_epoch: int) -> int:
    """The base sequence of the producer's next batch in ``log``: after its last one in the
    same epoch, else 0 (the log checks sequences of every producer batch it is given)."""
    entry = log.producer_state.entry(producer_id)
    if entry is None or entry.producer_epoch != producer_epoch or not entry.batches:
        return 0
    last = entry.last_sequence
    return 0 if last == INT32_MAX else last + 1
