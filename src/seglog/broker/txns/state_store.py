"""The ``__transaction_state`` store: each transactional id's last metadata, over a LogManager.

**The topic.** ``__transaction_state`` is created on first use, as Kafka's transaction
coordinator does, with ``transaction.state.log.num.partitions`` partitions (50) and the configs
Kafka gives it: ``cleanup.policy=compact``, ``compression.type=uncompressed``, ``segment.bytes``
= ``transaction.state.log.segment.bytes`` (104857600). A transactional id's records all go to
``transaction_partition(id, n)`` (Kafka's ``partitionFor``), except for an id loaded from
another partition (a directory written with another partition count): its records keep going
where they were found, so a tombstone shadows what it deletes. When the topic exists whole
with another partition count, that count is used (an offline tool run without the server's
``server.properties`` still finds the server's ids).

**Writes** (record formats: :mod:`seglog.format.txn_records`; each one record in its own magic 2
batch, CreateTime ``now_ms``, no producer id, uncompressed, as Kafka writes them):

* :meth:`TransactionStateStore.write`: one ``TransactionLogValue`` for the id;
* :meth:`TransactionStateStore.remove`: tombstones (null values) for expired ids, one batch per
  partition; the cleaner drops them after ``delete.retention.ms``.

**Crash safety.** Every write is one batch appended with one ``Log.append``: after a crash,
start-up recovery keeps the whole batch or truncates it away (its CRC covers it), and no other
file is written. The memory view changes only after the append returned, so it always equals
what a reload would give; a failed append (a full disk, a refused batch) raises a
:class:`~seglog.errors.SeglogError` subclass and leaves the view as it was.

**Load** (:meth:`TransactionStateStore.load`, at start-up): every partition of the topic
present here is replayed from its log start offset: the last value of an id wins, a tombstone
deletes it. A record that does not parse stops the load with
:class:`~seglog.errors.CorruptTxnRecordError` naming the partition and offset (Kafka stops
loading the partition there too). A real broker's partitions load the same way.

Time is always given (``now_ms``); nothing here reads a clock. The class is synchronous and not
thread-safe: the server calls it from its one event loop, the CLI from one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from seglog.config import BrokerConfig
from seglog.core.isolation import AbortedRanges
from seglog.engine.log import Log
from seglog.engine.log.reads import iter_records
from seglog.engine.log_manager import LogManager
from seglog.errors import CorruptTxnRecordError, UnknownTopicError
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import (
    TransactionLogEntry,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    transaction_partition,
)

TRANSACTION_STATE_TOPIC = "__transaction_state"


@dataclass(frozen=True, slots=True)
class TxnStateSettings:
    """The broker settings the store follows (``transaction.state.log.*``)."""

    num_partitions: int = 50
    segment_bytes: int = 104_857_600

    @classmethod
    def from_broker(cls, broker: BrokerConfig) -> TxnStateSettings:
        """The settings of a ``server.properties``."""
        return cls(
            broker.transaction_state_log_num_partitions,
            broker.transaction_state_log_segment_bytes,
        )

    def topic_configs(self) -> dict[str, str]:
        """The configs ``__transaction_state`` is created with (Kafka's, without the
        replication settings, which mean nothing on one node)."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "segment.bytes": str(self.segment_bytes),
        }


@dataclass(frozen=True, slots=True)
class TxnLoadSummary:
    """What :meth:`TransactionStateStore.load` replayed."""

    partitions: int
    records: int
    tombstones: int
    ids: int


class TransactionStateStore:
    """Transactional ids' metadata, kept in ``__transaction_state`` (see the module
    docstring). Build with :meth:`open` (loads) or the constructor then :meth:`load`."""

    def __init__(self, manager: LogManager, settings: TxnStateSettings | None = None) -> None:
        self.manager = manager
        self.settings = settings or TxnStateSettings.from_broker(manager.broker)
        self._entries: dict[str, TransactionLogEntry] = {}
        self._home: dict[str, int] = {}  # the partition a loaded id's records are in
        self._count: int | None = None  # partition_count(), once the topic exists
        self.last_load: TxnLoadSummary | None = None

    @classmethod
    def open(
        cls, manager: LogManager, settings: TxnStateSettings | None = None
    ) -> TransactionStateStore:
        """A store with every partition of ``__transaction_state`` here loaded."""
        store = cls(manager, settings)
        store.load()
        return store

    # --- queries ---------------------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether ``__transaction_state`` exists in these log directories."""
        return TRANSACTION_STATE_TOPIC in self.manager.topic_names()

    def partition_count(self) -> int:
        """The count ids are hashed over: the topic's own when its partitions 0..n-1 are all
        here, else ``transaction.state.log.num.partitions``."""
        if self._count is None:
            if not self.exists():
                return self.settings.num_partitions
            here = self.manager.partitions_of(TRANSACTION_STATE_TOPIC)
            whole = here and here == list(range(len(here)))
            self._count = len(here) if whole else self.settings.num_partitions
        return self._count

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition holding ``transactional_id``'s records."""
        home = self._home.get(transactional_id)
        if home is not None:
            return home
        return transaction_partition(transactional_id, self.partition_count())

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The coordinator epoch markers of this id carry: the leader epoch of its
        ``__transaction_state`` partition (0 on a fresh directory)."""
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        log = self.manager.logs().get(tp)
        return 0 if log is None else log.leader_epoch

    def entries(self) -> dict[str, TransactionLogEntry]:
        """Every id's last written or loaded entry (a copy)."""
        return dict(self._entries)

    def entry(self, transactional_id: str) -> TransactionLogEntry | None:
        """The id's last written or loaded entry, or None."""
        return self._entries.get(transactional_id)

    # --- writes ----------------------------------------------------------------------------------
    def write(self, transactional_id: str, entry: TransactionLogEntry, *, now_ms: int) -> None:
        """Append the id's entry (one record, one batch; atomic) and remember it."""
        record = (encode_key(transactional_id), encode_value(entry))
        log = self._log(self.partition_for(transactional_id))
        log.append_records([record], timestamp_ms=now_ms)
        self._entries[transactional_id] = entry

    def remove(self, transactional_ids: Iterable[str], *, now_ms: int) -> list[str]:
        """Tombstones for the ids this store knows (one batch per partition); returns them."""
        gone = [t for t in dict.fromkeys(transactional_ids) if t in self._entries]
        by_partition: dict[int, list[str]] = {}
        for txn_id in gone:
            by_partition.setdefault(self.partition_for(txn_id), []).append(txn_id)
        for partition, ids in sorted(by_partition.items()):
            self._log(partition).append_records(
                [(encode_key(t), None) for t in ids], timestamp_ms=now_ms
            )
            for txn_id in ids:
                del self._entries[txn_id]
                self._home.pop(txn_id, None)
        return gone

    # --- loading ---------------------------------------------------------------------------------
    def load(self) -> dict[str, TransactionLogEntry]:
        """Replay every partition of ``__transaction_state`` here (see the module docstring);
        what was in memory is replaced. Returns the entries (a copy)."""
        self._entries, self._home, self._count = {}, {}, None
        records = tombstones = partitions = 0
        for tp, log in sorted(self.manager.logs().items()):
            if tp.topic != TRANSACTION_STATE_TOPIC:
                continue
            partitions += 1
            for offset, key, value in _records(log):
                records += 1
                try:
                    txn_id = decode_key(key)
                    entry = None if value is None else decode_value(value)
                except CorruptTxnRecordError as exc:
                    raise CorruptTxnRecordError(
                        f"record at offset {offset} of {tp}: {exc.reason}", position=exc.position
                    ) from exc
                self._home.setdefault(txn_id, tp.partition)
                if entry is None:
                    tombstones += 1
                    self._entries.pop(txn_id, None)
                else:
                    self._entries[txn_id] = entry
        self.last_load = TxnLoadSummary(partitions, records, tombstones, len(self._entries))
        return dict(self._entries)

    # --- appending -------------------------------------------------------------------------------
    def ensure_topic(self) -> None:
        """Create ``__transaction_state`` with its settings unless it exists (first use)."""
        if not self.exists():
            self.manager.create_topic(
                TRANSACTION_STATE_TOPIC,
                self.settings.num_partitions,
                self.settings.topic_configs(),
                internal=True,
            )

    def _log(self, partition: int) -> Log:
        """The log of one partition, creating the topic on first use."""
        self.ensure_topic()
        try:
            return self.manager.get_log(TRANSACTION_STATE_TOPIC, partition)
        except UnknownTopicError:
            raise UnknownTopicError(
                f"{TRANSACTION_STATE_TOPIC}-{partition} is not in these log directories (a copy "
                "of a broker's directory without it?): the transaction state cannot be written"
            ) from None


def _records(log: Log) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record of ``log`` not in an aborted transaction (Kafka's
    coordinator never writes transactional batches here; a hand-made one is honoured)."""
    start, end = log.log_start_offset, log.log_end_offset
    records = iter_records(
        log,
        start,
        end,
        max_bytes=1 << 20,
        skip_corrupt=False,
        on_skip=None,
        check_gaps=False,
        aborted=AbortedRanges(log.aborted_transactions(start, end)),
    )
    for record in records:
        yield record.offset, record.key, record.value
