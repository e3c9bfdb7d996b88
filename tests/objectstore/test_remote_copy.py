"""The Pulsar-style compacted copy published to object storage (a real S3 API: moto's server
on loopback): built from a read-only log, published by a conditional PUT of its manifest,
read back by read-compacted readers exactly as a local copy reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from seglog.clock import ManualClock
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.compaction.compactor import CompactionError, Compactor, iter_compacted_records
from seglog.engine.compaction.remote_copy import (
    build_remote_copy,
    open_remote_copy,
    publish_remote_copy,
)
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import CorruptCheckpointError
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition
from seglog.storage.compacted_copy import PUBLISHED_FILE
from seglog.storage.remote_copy_store import (
    ObjectStoreError,
    PublicationConflictError,
    RemoteCopyStore,
    S3Settings,
)

T0 = 1_700_000_000_000
TOPIC = "orders"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def data_dir(tmp_path: Path, clock: ManualClock) -> Iterator[Path]:
    """A compacted topic written and closed; tests open it read-only, as a job does."""
    path = tmp_path / "data"
    with open_log_dirs([path], clock=clock) as manager:
        manager.create_topic(TOPIC, 1, configs={"cleanup.policy": "compact"})
        append(
            manager.get_log(TOPIC, 0), clock, [(b"k%d" % (i % 7), b"v%d" % i) for i in range(40)]
        )
    yield path


def append(log: Log, clock: ManualClock, pairs: list[tuple[bytes, bytes | None]]) -> None:
    for i in range(0, len(pairs), 4):
        builder = BatchBuilder()
        for key, value in pairs[i : i + 4]:
            builder.append(clock.now_ms(), key, value)
        log.append(builder.build())


def store_for(endpoint: str, bucket: str) -> RemoteCopyStore:
    return RemoteCopyStore.for_partition(
        S3Settings(endpoint_url=endpoint), f"s3://{bucket}/copies", f"{TOPIC}-0"
    )


def compactor(clock: ManualClock) -> Compactor:
    return Compactor(Cleaner(OffsetMap(1024 * 1024, 0.9), clock=clock))


def compacted_view(log: Log, remote: RemoteCopyStore, scratch: Path) -> list[tuple[int, bytes]]:
    store = open_remote_copy(remote, log, scratch)
    return [(r.offset, r.value or b"") for r in iter_compacted_records(log, 0, store=store)]


def local_view(data_dir: Path, clock: ManualClock) -> list[tuple[int, bytes]]:
    """What a local compaction of a twin of the same log makes readers see."""
    with open_log_dirs([data_dir], clock=clock) as manager:
        manager.compact(TOPIC)
        log = manager.get_log(TOPIC, 0)
        return [(r.offset, r.value or b"") for r in iter_compacted_records(log, 0)]


def read_only(data_dir: Path, clock: ManualClock) -> LogManager:
    return open_log_dirs([data_dir], clock=clock, read_only=True)


def tree_bytes(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def test_published_copy_reads_as_a_local_copy_does(
    s3_endpoint: str, s3_bucket: str, data_dir: Path, clock: ManualClock, tmp_path: Path
) -> None:
    remote = store_for(s3_endpoint, s3_bucket)
    before = tree_bytes(data_dir)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        build = build_remote_copy(log, remote, compactor(clock), tmp_path / "scratch1")
        assert build.publication is not None and build.started_from is None
        publish_remote_copy(remote, build)
        seen = compacted_view(log, remote, tmp_path / "read1")
    assert tree_bytes(data_dir) == before, "the source log is never written"
    # Seven keys, each with its latest value only, then nothing after the horizon.
    assert [v for _, v in seen] == [b"v%d" % i for i in range(33, 40)]
    twin = tmp_path / "twin"
    twin.mkdir()
    for name, data in before.items():
        (twin / name).parent.mkdir(parents=True, exist_ok=True)
        (twin / name).write_bytes(data)
    assert seen == local_view(twin, ManualClock(T0))


def test_second_run_is_incremental_and_replaces_the_manifest(
    s3_endpoint: str, s3_bucket: str, data_dir: Path, clock: ManualClock, tmp_path: Path
) -> None:
    remote = store_for(s3_endpoint, s3_bucket)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        publish_remote_copy(
            remote, build_remote_copy(log, remote, compactor(clock), tmp_path / "a")
        )
    first = remote.published()
    assert first is not None
    with open_log_dirs([data_dir], clock=clock) as manager:
        append(manager.get_log(TOPIC, 0), clock, [(b"k1", b"new1"), (b"k2", None)])
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        build = build_remote_copy(log, remote, compactor(clock), tmp_path / "b")
        assert build.started_from == first
        assert build.figures["previous_horizon"] == 39
        publish_remote_copy(remote, build)
        values = dict((v, o) for o, v in compacted_view(log, remote, tmp_path / "read"))
        again = build_remote_copy(log, remote, compactor(clock), tmp_path / "c")
    assert b"new1" in values and b"v36" not in values  # k1's latest
    assert again.publication is None, "nothing new: the published copy stays"
    second = remote.published()
    assert second is not None and second.publication.horizon == 41
    # The superseded copy stays until the grace period passed, then the sweep removes it.
    assert remote.sweep(grace_ms=3_600_000) == []
    assert remote.sweep(grace_ms=0) == [first.publication.copy]
    assert compacted_view_values(remote, data_dir, clock, tmp_path / "after-sweep")


def compacted_view_values(
    remote: RemoteCopyStore, data_dir: Path, clock: ManualClock, scratch: Path
) -> list[bytes]:
    with read_only(data_dir, clock) as manager:
        return [v for _, v in compacted_view(manager.get_log(TOPIC, 0), remote, scratch)]


@pytest.mark.parametrize("published_first", [False, True])
def test_two_writers_exactly_one_wins(
    s3_endpoint: str,
    s3_bucket: str,
    data_dir: Path,
    clock: ManualClock,
    tmp_path: Path,
    published_first: bool,
) -> None:
    """Two jobs that started from the same manifest (none, or a published one) race: one
    conditional PUT wins, the other reports the conflict and leaves no copy behind."""
    remote = store_for(s3_endpoint, s3_bucket)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        if published_first:
            publish_remote_copy(
                remote, build_remote_copy(log, remote, compactor(clock), tmp_path / "p")
            )
    if published_first:
        with open_log_dirs([data_dir], clock=clock) as manager:
            append(manager.get_log(TOPIC, 0), clock, [(b"k3", b"late")])
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        builds = [
            build_remote_copy(log, remote, compactor(clock), tmp_path / name)
            for name in ("one", "two")
        ]
        assert builds[0].started_from == builds[1].started_from
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def publish(i: int) -> None:
            barrier.wait()
            try:
                publish_remote_copy(remote, builds[i])
                outcomes.append(f"won:{i}")
            except PublicationConflictError as exc:
                assert "another writer published" in str(exc)
                outcomes.append(f"lost:{i}")

        threads = [threading.Thread(target=publish, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(o.split(":")[0] for o in outcomes) == ["lost", "won"]
        winner = int(next(o for o in outcomes if o.startswith("won")).split(":")[1])
        current = remote.published()
        assert current is not None
        assert current.publication == builds[winner].publication
        loser_copy = builds[1 - winner].publication
        assert loser_copy is not None
        keys = [
            o["Key"]
            for o in boto3.client("s3", endpoint_url=s3_endpoint)
            .list_objects_v2(Bucket=s3_bucket)
            .get("Contents", [])
        ]
        assert not any(loser_copy.copy in key for key in keys), "the loser removed its copy"
        assert all(
            any(f"{current.publication.copy}/{n}" in k for k in keys) for n, _ in current.files
        )
        values = [v for _, v in compacted_view(log, remote, tmp_path / "read")]
    assert values[-1] == (b"late" if published_first else b"v39")


def test_a_copy_past_the_log_end_is_refused(
    s3_endpoint: str, s3_bucket: str, data_dir: Path, clock: ManualClock, tmp_path: Path
) -> None:
    remote = store_for(s3_endpoint, s3_bucket)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        publish_remote_copy(
            remote, build_remote_copy(log, remote, compactor(clock), tmp_path / "a")
        )
    with open_log_dirs([data_dir], clock=clock) as manager:
        manager.truncate(TopicPartition(TOPIC, 0), 12)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        with pytest.raises(CompactionError, match="at or past the log end offset 12"):
            build_remote_copy(log, remote, compactor(clock), tmp_path / "b")


def test_a_damaged_manifest_or_torn_object_is_a_typed_error(
    s3_endpoint: str, s3_bucket: str, data_dir: Path, clock: ManualClock, tmp_path: Path
) -> None:
    remote = store_for(s3_endpoint, s3_bucket)
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.put_object(Bucket=s3_bucket, Key=f"{remote.prefix}/{PUBLISHED_FILE}", Body=b"{nope")
    with pytest.raises(CorruptCheckpointError, match=PUBLISHED_FILE):
        remote.published()
    client.delete_object(Bucket=s3_bucket, Key=f"{remote.prefix}/{PUBLISHED_FILE}")
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        publish_remote_copy(
            remote, build_remote_copy(log, remote, compactor(clock), tmp_path / "a")
        )
        current = remote.published()
        assert current is not None
        name, _ = next(f for f in current.files if f[0].endswith(".log"))
        client.put_object(
            Bucket=s3_bucket, Key=f"{remote.prefix}/{current.publication.copy}/{name}", Body=b"x"
        )
        with pytest.raises(CorruptCheckpointError, match="the manifest says"):
            open_remote_copy(remote, log, tmp_path / "read")


class FailingClient:
    """A boto3 client that fails one kind of call after ``after`` successful ones (a fault
    injected between seglog and the object store)."""

    def __init__(self, real: object, method: str, after: int) -> None:
        self._real = real
        self._method = method
        self._left = after

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._real, name)
        if name != self._method:
            return attr

        def call(*args: object, **kwargs: object) -> object:
            if self._left <= 0:
                raise ConnectionError(f"injected failure of {name}")
            self._left -= 1
            return attr(*args, **kwargs)  # type: ignore[operator]

        return call


@pytest.mark.parametrize("method,after", [("upload_fileobj", 1), ("put_object", 0)])
def test_a_failure_before_the_manifest_publishes_nothing(
    s3_endpoint: str,
    s3_bucket: str,
    data_dir: Path,
    clock: ManualClock,
    tmp_path: Path,
    method: str,
    after: int,
) -> None:
    """A crash or failure anywhere before the manifest's PUT leaves the published copy as it
    was: readers keep seeing it, and the orphaned objects are swept after the grace period."""
    remote = store_for(s3_endpoint, s3_bucket)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        publish_remote_copy(
            remote, build_remote_copy(log, remote, compactor(clock), tmp_path / "a")
        )
        first = remote.published()
        seen = compacted_view(log, remote, tmp_path / "read-a")
    with open_log_dirs([data_dir], clock=clock) as manager:
        append(manager.get_log(TOPIC, 0), clock, [(b"k5", b"changed")])
    faulty = store_for(s3_endpoint, s3_bucket)
    faulty._client = FailingClient(faulty.client, method, after)
    with read_only(data_dir, clock) as manager:
        log = manager.get_log(TOPIC, 0)
        with pytest.raises(ObjectStoreError, match="injected failure"):
            publish_remote_copy(
                faulty, build_remote_copy(log, faulty, compactor(clock), tmp_path / "b")
            )
        assert remote.published() == first
        # the old copy up to its horizon, then the log's new record
        assert compacted_view(log, remote, tmp_path / "read-b") == [*seen, (40, b"changed")]
    leftovers = remote.sweep(grace_ms=0)
    assert len(leftovers) == 1 and leftovers[0] != first.publication.copy
