"""A broker's own topic configs: the KRaft metadata image, Kafka's internal-topic configs,
topics whose configs are unknown, and topics found on disk treated as topics.

Expected plans per corpus directory (``/work/shared/corpus/broker``), derived from its files
and Kafka's rules. Every partition there has one segment (the active one), so a broker
would delete it by time only when its topic has ``delete`` with a finite ``retention.ms``,
and would clean nothing (the active segment is never cleaned):

* ``mscaldas2012-cp512`` (Kafka 2.1, ZooKeeper: configs lived in ZooKeeper, not on disk):
  ``__consumer_offsets`` has Kafka's internal configs (compact); every other topic is skipped
  as configs unknown (``_schemas`` and ``docker-connect-*`` are compacted on the broker,
  which seglog's delete defaults would have broken);
* ``seanorth-kafka-dist`` (Kafka 2.8, ZooKeeper): ``__consumer_offsets-16`` compact,
  ``some-topic-0`` skipped;
* ``itumelengmogase-cp-kraft`` (KRaft snapshot): every topic known from the image; the only
  ``delete`` topic (``_confluent-ksql-default__command_topic``) has ``retention.ms=-1``;
* ``apache-kafka-pr15553/*``: the broker dirs hold ``test-topic-0`` without metadata
  (skipped); the controller dir holds only ``__cluster_metadata`` (never opened).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.errors import InvalidConfigError, InvalidTopicError
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import TOPICS_FILE
from support.kraft_records import config_record, partition_record, topic_record

FAR_FUTURE_MS = 4_102_444_800_000  # 2100-01-01: any finite retention.ms has passed
ROOT = corpus_root()
BROKER = ROOT / "broker" if ROOT is not None else None
needs_corpus = pytest.mark.skipif(BROKER is None or not BROKER.is_dir(), reason=NO_CORPUS_REASON)

MSCALDAS_UNKNOWN = [
    "_confluent-command-0",
    "_confluent-controlcenter-5-1-2-1-KSTREAM-OUTEROTHER-0000000096-store-changelog-0",
    "_confluent-controlcenter-5-1-2-1-KSTREAM-OUTERTHIS-0000000095-store-changelog-0",
    "_confluent-controlcenter-5-1-2-1-actual-group-consumption-rekey-0",
    "_confluent-controlcenter-5-1-2-1-expected-group-consumption-rekey-0",
    "_confluent-controlcenter-5-1-2-1-monitoring-message-rekey-0",
    "_confluent-controlcenter-5-1-2-1-monitoring-trigger-event-rekey-0",
    "_schemas-0",
    "docker-connect-configs-0",
    "docker-connect-offsets-0",
    "docker-connect-status-0",
    "teamMembers7-0",
    "test10-0",
]

# directory -> (partitions retention would change, partitions the cleaner lists, skipped)
EXPECTED: dict[str, tuple[list[str], list[str], list[str]]] = {
    "mscaldas2012-cp512": (
        [],
        [f"__consumer_offsets-{p}" for p in (0, 9, 13, 29, 37)],
        MSCALDAS_UNKNOWN,
    ),
    "seanorth-kafka-dist": ([], ["__consumer_offsets-16"], ["some-topic-0"]),
    "itumelengmogase-cp-kraft": (
        [],
        [
            "__consumer_offsets-29",
            "__consumer_offsets-37",
            "__transaction_state-44",
            "_schemas-0",
            "docker-connect-configs-0",
        ],
        [],
    ),
    "apache-kafka-pr15553/kafka-13294002803961715372": ([], [], ["test-topic-0"]),
    "apache-kafka-pr15553/kafka-13980083082189751010": ([], [], ["test-topic-0"]),
    "apache-kafka-pr15553/kafka-14696354110866436968": ([], [], []),
    "apache-kafka-pr15553/kafka-1168504093769635972": ([], [], []),
}


def copy_dir(name: str, tmp_path: Path) -> Path:
    """A writable copy of a corpus broker directory."""
    assert BROKER is not None
    target = tmp_path / name.replace("/", "_")
    shutil.copytree(BROKER / name, target)
    for dirpath, dirnames, filenames in os.walk(target):
        os.chmod(dirpath, 0o755)
        for entry in filenames:
            os.chmod(os.path.join(dirpath, entry), 0o644)
        del dirnames
    return target


def open_read_only(path: Path) -> LogManager:
    return open_log_dirs([path], clock=ManualClock(FAR_FUTURE_MS), read_only=True)


@needs_corpus
def test_every_broker_directory_is_listed_here() -> None:
    assert BROKER is not None
    nested = BROKER / "apache-kafka-pr15553"  # one source holding several brokers' dirs
    found = {p.name for p in BROKER.iterdir() if p != nested}
    found |= {f"{nested.name}/{p.name}" for p in nested.iterdir()}
    assert found == set(EXPECTED)


@needs_corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dry_runs_propose_what_the_broker_would_do(name: str, tmp_path: Path) -> None:
    retained, listed, skipped = EXPECTED[name]
    with open_read_only(copy_dir(name, tmp_path)) as manager:
        plans = manager.run_retention(dry_run=True)
        assert [str(tp) for tp, _ in plans] == retained
        cleaning = manager.plan_cleaning()
        assert [str(p.candidate.topic_partition) for p in cleaning] == listed
        assert not any(p.candidate.is_cleanable for p in cleaning)  # only active segments
        assert [str(tp) for tp in manager.unknown_config_partitions()] == skipped
        assert manager.run_compaction_triggers() == []
        for tp in manager.unknown_config_partitions():
            assert manager.describe_topic(tp.topic).configs_known is False


@needs_corpus
def test_an_explicit_policy_makes_a_topic_ours(tmp_path: Path) -> None:
    path = copy_dir("mscaldas2012-cp512", tmp_path)
    with open_log_dirs([path], clock=ManualClock(FAR_FUTURE_MS)) as manager:
        with pytest.raises(InvalidConfigError, match=CONFIGS_UNKNOWN):
            manager.delete_records({TopicPartition("test10", 0): 1})
        with pytest.raises(InvalidConfigError, match=CONFIGS_UNKNOWN):
            manager.compact("test10")
        with pytest.raises(InvalidConfigError, match=CONFIGS_UNKNOWN):
            manager.clean_once(topic="_schemas")
        manager.alter_topic("test10", {"cleanup.policy": "delete"})
        manager.alter_topic("_schemas", {"cleanup.policy": "compact"})
        plans = dict(manager.run_retention(dry_run=True))
        assert list(plans) == [TopicPartition("test10", 0)]
        assert plans[TopicPartition("test10", 0)].needs_roll  # its only segment, by time
        listed = [str(p.candidate.topic_partition) for p in manager.plan_cleaning()]
        assert "_schemas-0" in listed and "test10-0" not in listed
        assert manager.describe_topic("test10").sources["cleanup.policy"] == (
            "SEGLOG_TOPIC_OVERRIDE"
        )
    with open_read_only(path) as manager:  # the overrides survive a reopen
        assert "test10-0" not in [str(tp) for tp in manager.unknown_config_partitions()]
        assert manager.describe_topic("_schemas").config["cleanup.policy"] == "compact"


@needs_corpus
def test_describe_shows_the_brokers_metadata(tmp_path: Path) -> None:
    with open_read_only(copy_dir("itumelengmogase-cp-kraft", tmp_path)) as manager:
        offsets = manager.describe_topic("__consumer_offsets")
        assert offsets.topic_id == "vH1Xu-ntQPu9P3I3F8wp8Q"
        assert offsets.config["cleanup.policy"] == "compact"
        assert offsets.config["segment.bytes"] == "104857600"
        assert offsets.sources["segment.bytes"] == "DYNAMIC_TOPIC_CONFIG"
        assert offsets.sources["retention.ms"] == "DEFAULT_CONFIG"
        txn = manager.describe_topic("__transaction_state")
        assert txn.config["compression.type"] == "uncompressed"
        assert txn.config["min.insync.replicas"] == "1"  # shown, from the metadata
        ksql = manager.describe_topic("_confluent-ksql-default__command_topic")
        assert (ksql.config["cleanup.policy"], ksql.config["retention.ms"]) == ("delete", "-1")
        assert ksql.configs_known
    with open_read_only(copy_dir("mscaldas2012-cp512", tmp_path)) as manager:
        offsets = manager.describe_topic("__consumer_offsets")
        assert offsets.sources["cleanup.policy"] == "INTERNAL_TOPIC_CONFIG"
        assert offsets.config["segment.bytes"] == "104857600"
        schemas = manager.describe_topic("_schemas")
        assert not schemas.configs_known and schemas.topic_id == ""
    with open_read_only(copy_dir("seanorth-kafka-dist", tmp_path)) as manager:
        assert BROKER is not None
        metadata = (BROKER / "seanorth-kafka-dist/some-topic-0/partition.metadata").read_text()
        assert manager.describe_topic("some-topic").topic_id == metadata.split("topic_id: ")[1]


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@needs_corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_alter_works_on_every_topic_and_writes_only_seglogs_file(name: str, tmp_path: Path) -> None:
    path = copy_dir(name, tmp_path)
    metadata_before = {k: v for k, v in digests(path).items() if "__cluster_metadata" in k}
    with open_log_dirs([path]) as manager:
        opened = digests(path)  # after the open (recovery, checkpoints are the open's)
        for topic in manager.topic_names():
            manager.alter_topic(topic, {"min.cleanable.dirty.ratio": "0.4"})
            described = manager.describe_topic(topic)
            assert described.overrides == {"min.cleanable.dirty.ratio": "0.4"}
            assert described.sources["min.cleanable.dirty.ratio"] == "SEGLOG_TOPIC_OVERRIDE"
        altered = digests(path)
        with pytest.raises(InvalidTopicError, match="KRaft metadata log"):
            manager.alter_topic("__cluster_metadata", {"retention.ms": "1"})
        with pytest.raises(InvalidTopicError, match="KRaft metadata log"):
            manager.delete_topic("__cluster_metadata")
    changed = {k for k in set(opened) | set(altered) if opened.get(k) != altered.get(k)}
    assert changed <= {TOPICS_FILE}
    assert {k: v for k, v in digests(path).items() if "__cluster_metadata" in k} == (
        metadata_before
    )


@needs_corpus
def test_a_discovered_topic_can_be_deleted(tmp_path: Path) -> None:
    path = copy_dir("seanorth-kafka-dist", tmp_path)
    with open_log_dirs([path]) as manager:
        manager.delete_topic("some-topic")
        assert "some-topic" not in manager.topic_names()
    with open_read_only(path) as manager:
        assert manager.topic_names() == ["__consumer_offsets"]


def _metadata_log(root: Path, values: list[bytes]) -> None:
    directory = root / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    records = [Record(offset, 0, None, value) for offset, value in enumerate(values)]
    (directory / "00000000000000000000.log").write_bytes(encode_batch(records, base_offset=0))


def test_precedence_seglog_then_topic_then_dynamic_broker_then_static(tmp_path: Path) -> None:
    topic_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    _metadata_log(
        tmp_path,
        [
            topic_record("t", topic_id),
            partition_record(0, topic_id),
            config_record(2, "t", "retention.ms", "1000"),
            config_record(2, "t", "segment.ms", "5000"),
            config_record(2, "t", "segment.ms", None),  # deleted: falls back to the broker
            config_record(4, "", "log.roll.ms", "7000"),
            config_record(4, "", "log.retention.bytes", "111"),
            config_record(4, "0", "log.retention.bytes", "222"),
        ],
    )
    (tmp_path / "t-0").mkdir()
    overrides = {"log.cleaner.min.cleanable.ratio": "0.3", "log.segment.bytes": "2000000"}
    with open_log_dirs([tmp_path], overrides={**overrides, "node.id": "0"}) as manager:
        manager.alter_topic("t", {"segment.bytes": "3000000"})
        described = manager.describe_topic("t")
    expected = {
        "segment.bytes": ("3000000", "SEGLOG_TOPIC_OVERRIDE"),
        "retention.ms": ("1000", "DYNAMIC_TOPIC_CONFIG"),
        "segment.ms": ("7000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        "retention.bytes": ("222", "DYNAMIC_BROKER_CONFIG"),
        "min.cleanable.dirty.ratio": ("0.3", "STATIC_BROKER_CONFIG"),
        "delete.retention.ms": ("86400000", "DEFAULT_CONFIG"),
    }
    assert {k: (described.config[k], described.sources[k]) for k in expected} == expected
    assert described.topic_id == "ASNFZ4mrze8BI0VniavN7w"
    assert described.configs_known
