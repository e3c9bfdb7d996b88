"""The seglog source over Kafka tiered-storage locations (Aiven and LocalTieredStorage).

Buckets are built from seglog-written and broker-written partition directories; the oracle
is a read of the original log directory with the ordinary source reader (``read_range``).
Most tests plan and read without a Spark session (the same reader code the executors run);
one runs through Spark ``local[2]``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from corpus_location import corpus_root
from seglog.engine.log_manager import open_log_dirs
from seglog.errors import EncryptedRemoteSegmentError, IcebergRemoteSegmentError
from seglog.format.txn_index import decode_txn_index
from seglog.spark.arrow_reader import RangeRequest, read_range
from seglog.spark.tiered_source import TieredBatchReader, parse_tiered_options
from support.tiered_buckets import (
    closed_segments,
    new_uuid,
    segment_record,
    update_record,
    write_aiven,
    write_local_tiered,
    write_metadata_log,
)

TOPIC = "events"
TOPIC_ID = "jF8s79t9SrG_PNqlwv7bAA"


def _write_log(root: Path) -> Path:
    data = root / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, 1, {"segment.bytes": "1024"})
        log = manager.get_log(TOPIC, 0)
        for chunk in range(12):
            log.append_records(
                [(b"k%d" % i, b"v%d-" % i + b"x" * (i % 50), (), 1_700_000_000_000 + i)
                 for i in range(chunk * 10, chunk * 10 + 10)]
            )  # fmt: skip
        log.roll()
    return data


def _rows(options: dict[str, str]) -> pa.Table:
    reader = TieredBatchReader(parse_tiered_options(options))
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    return pa.Table.from_batches(batches).sort_by("offset")


def _oracle(data: Path, topic: str, partition: int, start: int, end: int) -> pa.Table:
    request = RangeRequest((str(data),), None, topic, partition, start, end)
    return pa.Table.from_batches(list(read_range(request))).sort_by("offset")


@pytest.fixture(scope="module")
def seglog_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    data = _write_log(tmp_path_factory.mktemp("log"))
    segments = closed_segments(data / f"{TOPIC}-0")
    assert len(segments) >= 4
    return data, segments


@pytest.mark.parametrize(
    "shape",
    [{}, {"compression": True}, {"legacy": True, "with_metadata": False}],
    ids=["plain", "zstd-chunks", "pre-v1.0"],
)
def test_aiven_bucket_equals_the_log(
    seglog_log: tuple[Path, list[Any]], tmp_path: Path, shape: dict[str, Any]
) -> None:
    data, segments = seglog_log
    bucket = tmp_path / "bucket" / "prefix"
    write_aiven(bucket, TOPIC, TOPIC_ID, 0, segments, chunk_size=1024, **shape)
    before = sorted((p, p.stat().st_mtime_ns) for p in bucket.rglob("*"))
    got = _rows({"tieredStorage": "aiven", "path": str(bucket), "subscribe": TOPIC})
    assert got.num_rows == segments[-1].end + 1
    assert got.equals(_oracle(data, TOPIC, 0, 0, segments[-1].end + 1))
    assert sorted((p, p.stat().st_mtime_ns) for p in bucket.rglob("*")) == before  # read-only


def test_local_tiered_storage_equals_the_log(
    seglog_log: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    data, segments = seglog_log
    write_local_tiered(tmp_path / "rsm", TOPIC, TOPIC_ID, 0, segments)
    got = _rows({"tieredStorage": "local-tiered-storage", "path": str(tmp_path / "rsm"),
                 "subscribe": TOPIC, "startingOffsets": "earliest"})  # fmt: skip
    assert got.equals(_oracle(data, TOPIC, 0, 0, segments[-1].end + 1))


def test_metadata_decides_and_local_path_adds_the_newest(
    seglog_log: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    data, segments = seglog_log
    bucket = tmp_path / "bucket"
    ids = write_aiven(bucket, TOPIC, TOPIC_ID, 0, segments)
    # A retried upload of segment 1 that never finished (its objects are in the bucket), and
    # segment 0 deleted by retention (its objects linger).
    orphan = write_aiven(bucket, TOPIC, TOPIC_ID, 0, [segments[1]], ids=[new_uuid()])[0]
    records = [
        segment_record(TOPIC, TOPIC_ID, 0, u, s, 0) for u, s in zip(ids, segments, strict=True)
    ]
    records += [update_record(TOPIC, TOPIC_ID, 0, u, 1) for u in ids]
    records += [segment_record(TOPIC, TOPIC_ID, 0, orphan, segments[1], 0)]
    records += [
        update_record(TOPIC, TOPIC_ID, 0, ids[0], 2),
        update_record(TOPIC, TOPIC_ID, 0, ids[0], 3),
    ]
    write_metadata_log(tmp_path / "broker", records)
    options = {"tieredStorage": "aiven", "path": str(bucket), "subscribe": TOPIC,
               "remoteLogMetadata": str(tmp_path / "broker")}  # fmt: skip
    got = _rows(options)
    first = segments[1].base
    assert got.equals(_oracle(data, TOPIC, 0, first, segments[-1].end + 1))
    # The broker's local log: starts inside the remote range (local retention), ends past it.
    local = tmp_path / "local"
    shutil.copytree(data, local)
    with open_log_dirs([local]) as manager:
        log = manager.get_log(TOPIC, 0)
        log.append_records([(b"new", b"newest", (), 1_700_000_001_000)])
        log.delete_records(segments[2].base + 3)
        log_end = log.log_end_offset
    got = _rows(dict(options, localPath=str(local)))
    assert got.num_rows == log_end - first
    cut = segments[2].base + 3  # the local log start offset: local wins from here on
    expected = pa.concat_tables(
        [_oracle(data, TOPIC, 0, first, cut), _oracle(local, TOPIC, 0, cut, log_end)]
    )
    assert got.equals(expected)


def test_encrypted_and_iceberg_segments_raise(
    seglog_log: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    _, segments = seglog_log
    write_aiven(
        tmp_path / "enc",
        TOPIC,
        TOPIC_ID,
        0,
        segments[:1],
        extra={"encryption": {"dataKey": "k:AA", "aad": "AA"}},
    )
    with pytest.raises(EncryptedRemoteSegmentError, match="encrypted"):
        _rows({"tieredStorage": "aiven", "path": str(tmp_path / "enc"), "subscribe": TOPIC})
    write_aiven(
        tmp_path / "ice", TOPIC, TOPIC_ID, 0, segments[:1], extra={"segmentFormat": "iceberg"}
    )
    with pytest.raises(IcebergRemoteSegmentError):
        _rows({"tieredStorage": "aiven", "path": str(tmp_path / "ice"), "subscribe": TOPIC})


def test_broker_written_corpus_segments(tmp_path: Path) -> None:
    root = corpus_root()
    if root is None:
        pytest.skip("Kafka corpus not found (../shared/corpus or $SEGLOG_CORPUS)")
    candidates = sorted(
        p.parent for p in root.rglob("*.log")
        if "__" not in p.parent.name and "-" in p.parent.name
        and len(list(p.parent.glob("*.log"))) >= 2
    )  # fmt: skip
    if not candidates:
        pytest.skip("the corpus has no partition with two segments or more")
    part = candidates[0]
    topic, _, number = part.name.rpartition("-")
    segments = closed_segments(part)
    write_aiven(tmp_path / "b", topic, TOPIC_ID, int(number), segments, compression=True)
    got = _rows({"tieredStorage": "aiven", "path": str(tmp_path / "b"), "subscribe": topic})
    assert got.num_rows > 0
    assert got.equals(
        _oracle(part.parent, topic, int(number), segments[0].base, segments[-1].end + 1)
    )


@pytest.fixture
def moto_endpoint(monkeypatch: pytest.MonkeyPatch) -> Any:
    from moto.server import ThreadedMotoServer

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.setenv(name, "us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _upload(endpoint: str, local: Path, bucket: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket=bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            client.put_object(
                Bucket=bucket, Key=str(path.relative_to(local)), Body=path.read_bytes()
            )


def test_aiven_bucket_on_s3_with_metadata_and_spark(
    seglog_log: tuple[Path, list[Any]], tmp_path: Path, moto_endpoint: str, spark: Any
) -> None:
    data, segments = seglog_log
    ids = write_aiven(tmp_path / "b" / "tiered", TOPIC, TOPIC_ID, 0, segments, compression=True)
    records = [
        segment_record(TOPIC, TOPIC_ID, 0, u, s, 0) for u, s in zip(ids, segments, strict=True)
    ]
    records += [
        update_record(TOPIC, TOPIC_ID, 0, u, 1) for u in ids[:-1]
    ]  # the last: never finished
    write_metadata_log(tmp_path / "m" / "broker", records)
    _upload(moto_endpoint, tmp_path / "b", "kafka-tiered")
    _upload(moto_endpoint, tmp_path / "m", "kafka-broker")
    options = {"tieredStorage": "aiven", "path": "s3://kafka-tiered/tiered", "subscribe": TOPIC,
               "s3.endpoint": moto_endpoint, "remoteLogMetadata": "s3://kafka-broker/broker",
               "s3.accessKey": "testing", "s3.secretKey": "testing",
               "s3.region": "us-east-1"}  # fmt: skip
    expected = _oracle(data, TOPIC, 0, 0, segments[-2].end + 1)
    assert _rows(options).equals(expected)
    frame = spark.read.format("seglog").options(**options).load()
    got = pa.Table.from_pylist([r.asDict() for r in frame.orderBy("offset").collect()])
    assert got.column("offset").to_pylist() == expected.column("offset").to_pylist()
    assert got.column("value").to_pylist() == expected.column("value").to_pylist()
    assert got.column("key").to_pylist() == expected.column("key").to_pylist()


def _write_transactional_log(root: Path) -> Path:
    """Two transactional producers and plain records over many small segments; producer 7's
    transactions span two rounds and abort every other time, so an ABORT marker (and its
    ``.txnindex`` entry) lies in a later segment than part of its data."""
    from seglog.testing.transactions import append_transactional

    data = root / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, 1, {"segment.bytes": "1024"})
        log = manager.get_log(TOPIC, 0)
        sequences = {7: 0, 8: 0}
        for round_ in range(10):
            for pid in (7, 8):
                records = [(b"p%d-%d-%d" % (pid, round_, i), b"x" * 60) for i in range(3)]
                append_transactional(log, pid, 0, sequences[pid], records)
                sequences[pid] += 3
            log.append_records([(b"plain-%d" % round_, b"y" * 60)])
            if round_ % 2:  # producer 7's transactions span two rounds (two segments)
                log.append_marker(7, 0, commit=round_ % 4 == 1, coordinator_epoch=0)
            log.append_marker(8, 0, commit=True, coordinator_epoch=0)
        log.roll()
    return data


@pytest.mark.parametrize("layout", ["aiven", "local-tiered-storage"])
def test_read_committed_from_a_bucket_leaves_aborted_transactions_out(
    tmp_path: Path, layout: str
) -> None:
    data = _write_transactional_log(tmp_path)
    segments = closed_segments(data / f"{TOPIC}-0")
    assert len(segments) >= 4 and any(".txnindex" in s.files for s in segments)
    location = tmp_path / "bucket"
    if layout == "aiven":
        write_aiven(location, TOPIC, TOPIC_ID, 0, segments, chunk_size=1024)
    else:
        write_local_tiered(location, TOPIC, TOPIC_ID, 0, segments)
    options = {"tieredStorage": layout, "path": str(location), "subscribe": TOPIC}
    end = segments[-1].end + 1
    committed = _rows({**options, "kafka.isolation.level": "read_committed"})
    oracle_request = RangeRequest((str(data),), None, TOPIC, 0, 0, end, read_committed=True)
    oracle = pa.Table.from_batches(list(read_range(oracle_request))).sort_by("offset")
    assert committed.equals(oracle)
    keys = [k.decode() for k in committed.column("key").to_pylist()]
    aborted_rounds = ("p7-2-", "p7-3-", "p7-6-", "p7-7-")
    assert not any(k.startswith(aborted_rounds) for k in keys)
    assert any(k.startswith("p7-0-") for k in keys) and any(k.startswith("p8-") for k in keys)
    # some aborted transaction began in an earlier segment than its ABORT marker's
    assert any(
        txn.first_offset < s.base
        for s in segments
        if ".txnindex" in s.files
        for txn in decode_txn_index(s.files[".txnindex"].read_bytes(), path="x")
    )
    uncommitted = _rows(options)
    assert uncommitted.num_rows > committed.num_rows  # the aborted rows are there to leave out


def test_read_committed_with_local_path_ends_at_the_local_lso(tmp_path: Path) -> None:
    """The remote pieces and the local log together: an ABORT whose entry is only in the local
    log still drops its remote data, and the open transaction bounds the read."""
    from seglog.testing.transactions import append_transactional

    data = _write_transactional_log(tmp_path)
    segments = closed_segments(data / f"{TOPIC}-0")
    with open_log_dirs([data]) as manager:
        log = manager.get_log(TOPIC, 0)
        append_transactional(log, 7, 0, 30, [(b"open", b"z")])  # stays open
        lso = log.last_stable_offset
    bucket = tmp_path / "bucket"
    write_aiven(bucket, TOPIC, TOPIC_ID, 0, segments[:-2], chunk_size=1024)
    local = tmp_path / "local"
    shutil.copytree(data, local)
    for closed in segments[:-2]:  # the broker deleted its local copy of the uploaded ones
        for path in closed.files.values():
            (local / f"{TOPIC}-0" / path.name).unlink()
    got = _rows({"tieredStorage": "aiven", "path": str(bucket), "subscribe": TOPIC,
                 "localPath": str(local), "kafka.isolation.level": "read_committed"})  # fmt: skip
    oracle_request = RangeRequest((str(data),), None, TOPIC, 0, 0, lso, read_committed=True)
    oracle = pa.Table.from_batches(list(read_range(oracle_request))).sort_by("offset")
    assert got.equals(oracle)
    assert b"open" not in got.column("key").to_pylist()
