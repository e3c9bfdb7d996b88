"""Real brokers' ``__consumer_offsets`` partitions load into the offsets store: read-only
(nothing written), every group found in the partition Kafka's ``partitionFor`` gives it (Java's
``String.hashCode`` checked against real brokers), the same state as a replay of the records
kafka-python reads, and a copy takes seglog's writes (a deleted group stays deleted)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root, snapshot
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetAndMetadata, OffsetsStore
from seglog.cli.main import main
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.format.group_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_record,
    group_partition,
)
from seglog.format.topic_names import TopicPartition
from support.kafka_oracle import read_partition_dir_with_kafka_python

pytestmark = pytest.mark.compat

T0 = 1_700_000_000_000


def _data_dirs() -> list[Path]:
    root = corpus_root()
    if root is None:
        return []
    return sorted({p.parent for p in root.rglob(f"{OFFSETS_TOPIC}-*") if p.is_dir()})


def _params() -> list[object]:
    root = corpus_root()
    dirs = _data_dirs()
    if root is None or not dirs:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dirs]


def _open(data_dir: Path, *, read_only: bool) -> LogManager:
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    return LogManager.open(broker, clock=ManualClock(T0), read_only=read_only)


def _oracle_state(data_dir: Path) -> tuple[dict[str, dict[TopicPartition, int]], set[str]]:
    """Committed offsets and groups with metadata, replaying kafka-python's records."""
    offsets: dict[str, dict[TopicPartition, int]] = {}
    groups: set[str] = set()
    for partition_dir in sorted(data_dir.glob(f"{OFFSETS_TOPIC}-*")):
        for record in read_partition_dir_with_kafka_python(partition_dir):
            decoded = decode_record(record[2], record[3])
            key = decoded.key
            if isinstance(key, OffsetCommitKey):
                tp = TopicPartition(key.topic, key.partition)
                if decoded.value is None:
                    offsets.get(key.group, {}).pop(tp, None)
                else:
                    offsets.setdefault(key.group, {})[tp] = decoded.value.offset  # type: ignore[union-attr]
            elif isinstance(key, GroupMetadataKey):
                (groups.discard if decoded.value is None else groups.add)(key.group)
    return {g: o for g, o in offsets.items() if o}, groups


@pytest.mark.parametrize("data_dir", _params())
def test_a_brokers_consumer_offsets_load_read_only(data_dir: Path) -> None:
    before = snapshot(data_dir)
    with _open(data_dir, read_only=True) as manager:
        store = OffsetsStore(manager)
        summary = store.load()
        assert summary.partitions >= 1 and summary.records > 0 and summary.groups >= 1
        oracle_offsets, oracle_groups = _oracle_state(data_dir)
        for group in store.groups():
            # Kafka put every group's records in abs(hashCode) % 50: ours agrees
            assert store.partition_for(group) == group_partition(group, 50), group
            assert {tp: v.offset for tp, v in store.committed(group).items()} == (
                oracle_offsets.get(group, {})
            )
        groups_with_metadata = {g for g in store.groups() if store.group_metadata(g) is not None}
        assert groups_with_metadata == oracle_groups
        assert set(store.groups()) == oracle_groups | set(oracle_offsets)
    assert snapshot(data_dir) == before


def test_known_groups_of_the_corpus(corpus_dir: Path) -> None:
    data_dir = corpus_dir / "broker" / "mscaldas2012-cp512"
    if not data_dir.is_dir():
        pytest.skip(f"{data_dir} is not in this corpus")
    with _open(data_dir, read_only=True) as manager:
        store = OffsetsStore.open(manager)
        meta = store.group_metadata("compose-connect-group")
        assert meta is not None and meta.protocol_type == "connect" and len(meta.members) == 1
        assert meta.members[0].client_host.startswith("/")
        control_center = store.group_metadata("_confluent-controlcenter-5-1-2-1")
        assert control_center is not None and control_center.members == ()
        assert len(store.committed("_confluent-controlcenter-5-1-2-1")) == 17


@pytest.mark.parametrize("data_dir", _params())
def test_a_copy_takes_seglogs_writes(data_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    with _open(copy, read_only=False) as manager:
        store = OffsetsStore.open(manager)
        group = store.groups()[0]
        deleted = store.delete_group(group, now_ms=T0)
        assert deleted >= 1
        # a new commit of a group living in a partition the copy holds
        tp = TopicPartition("t", 0)
        store.commit(group, {tp: OffsetAndMetadata(42)}, now_ms=T0)
    with _open(copy, read_only=False) as manager:
        store = OffsetsStore.open(manager)
        assert store.group_metadata(group) is None
        assert {p: v.offset for p, v in store.committed(group).items()} == {tp: 42}


def test_consumer_groups_cli_on_a_brokers_directory(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = corpus_dir / "broker" / "seanorth-kafka-dist"
    if not data_dir.is_dir():
        pytest.skip(f"{data_dir} is not in this corpus")
    before = snapshot(data_dir)
    assert main(["--data-dir", str(data_dir), "consumer-groups", "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["simple-consumer-example"]
    args = ["consumer-groups", "--describe", "--group", "simple-consumer-example"]
    assert main(["--data-dir", str(data_dir), *args]) == 0
    out = capsys.readouterr()
    assert "has no active members" in out.err
    rows = [line.split() for line in out.out.splitlines()[1:]]
    assert rows and all(row[0] == "simple-consumer-example" for row in rows)
    for row in rows:  # lag = log end - committed where the topic is here
        if row[4] != "-":
            assert int(row[5]) == int(row[4]) - int(row[3])
    assert snapshot(data_dir) == before

    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    reset = ["consumer-groups", "--reset-offsets", "--group", "simple-consumer-example"]
    assert (
        main(["--data-dir", str(copy), *reset, "--all-topics", "--to-earliest", "--execute"]) == 0
    )
    capsys.readouterr()
    delete = ["consumer-groups", "--delete", "--group", "simple-consumer-example"]
    assert main(["--data-dir", str(copy), *delete]) == 0
    assert "was successful" in capsys.readouterr().out
    assert main(["--data-dir", str(copy), "consumer-groups", "--list"]) == 0
    assert capsys.readouterr().out == ""
