"""``seglog spark compact-copy``: the Pulsar-style compacted copy built on Spark and published
to a real S3 API (moto's server on loopback); read back it equals what the in-process
compactor makes readers see, and the source log directories are never written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from seglog.cli.main import main
from seglog.clock import ManualClock
from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.compaction.remote_copy import open_remote_copy
from seglog.engine.log_manager import open_log_dirs
from seglog.format.topic_names import partition_dir_name
from seglog.storage.remote_copy_store import RemoteCopyStore, S3Settings
from support.cleaning_data import fill

T0 = 1_700_000_000_000


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    clock = ManualClock(T0)
    root = tmp_path / "data"
    with open_log_dirs([root], clock=clock) as manager:
        fill(manager, clock, keys=150, records=1500, seed=9)
    return root


def tree_bytes(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def view(records: Any) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in records]


def test_compact_copy_publishes_what_the_local_compactor_makes(
    spark: Any,
    s3_endpoint: str,
    s3_bucket: str,
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(data_dir, twin)
    before = tree_bytes(data_dir)
    target = f"s3://{s3_bucket}/copies"
    argv = ["--data-dir", str(data_dir), "spark", "compact-copy", "--to", target]
    status = main([*argv, "--s3-endpoint", s3_endpoint, "--json"])
    results = json.loads(capsys.readouterr().out)["results"]
    assert status == 0, results
    assert sorted((r["topic"], r["partition"], r["state"]) for r in results) == [
        ("prices", 0, "published"),
        ("prices", 1, "published"),
        ("users", 0, "published"),
    ]
    assert tree_bytes(data_dir) == before, "the source log directories are never written"
    settings = S3Settings(endpoint_url=s3_endpoint)
    with (
        open_log_dirs([twin], clock=ManualClock(T0)) as local,
        open_log_dirs([data_dir], read_only=True) as source,
    ):
        for topic in ("prices", "users"):
            local.compact(topic)
        for r in results:
            tp_log = source.get_log(r["topic"], r["partition"])
            remote = RemoteCopyStore.for_partition(
                settings, target, partition_dir_name(tp_log.topic_partition)
            )
            published = remote.published()
            assert published is not None and published.publication.horizon == r["horizon"]
            store = open_remote_copy(
                remote, tp_log, tmp_path / f"read-{r['topic']}-{r['partition']}"
            )
            expected = view(iter_compacted_records(local.get_log(r["topic"], r["partition"]), 0))
            assert view(iter_compacted_records(tp_log, 0, store=store)) == expected

    # readCompacted from object storage: the same rows as readCompacted over the twin whose
    # copies were built locally.
    def rows(path: Path, **extra: str) -> list[tuple[Any, ...]]:
        reader = spark.read.format("seglog").option("path", str(path))
        reader = reader.option("subscribePattern", ".*")
        for key, value in {"readCompacted": "true", **extra}.items():
            reader = reader.option(key, value)
        frame = reader.load().select("topic", "partition", "offset", "key", "value")
        return sorted(tuple(r) for r in frame.collect())

    # The Spark session may have started before the test's AWS environment: the credentials
    # travel as options, as on a cluster whose executors have no AWS environment of their own.
    s3 = {
        "s3.endpoint": s3_endpoint,
        "s3.region": "us-east-1",
        "s3.access.key": "testing",
        "s3.secret.key": "testing",
    }
    remote_rows = rows(data_dir, compactedCopy=target, **s3)
    assert remote_rows == rows(twin)
    assert len(remote_rows) < len(rows(data_dir))  # data_dir has no local copy: the whole log
    # Nothing new: every partition is unchanged, and the command says so.
    status = main([*argv, "--s3-endpoint", s3_endpoint])
    out = capsys.readouterr().out
    assert status == 0 and out.count("unchanged: copy-") == 3


def test_compact_copy_refuses_a_non_s3_target(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["--data-dir", str(data_dir), "spark", "compact-copy", "--to", "/tmp/x"])
    assert status != 0
    assert "give s3://bucket/prefix" in capsys.readouterr().err
