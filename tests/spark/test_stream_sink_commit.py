"""The streaming sink's commit without a Spark job: its tasks and its driver commit are plain
Python, so replays and crashes are driven directly (a real process is SIGKILLed at a commit
step), and the logs are read back with a read-only manager, never with the code under test.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import TaskContext
from pyspark.sql.types import StringType, StructField, StructType

from seglog.engine.log_manager import open_log_dirs
from seglog.errors import CorruptCheckpointError, RecordTooLargeError, SparkOptionError
from seglog.spark.sink import make_writer
from seglog.spark.staging import default_staging_root
from seglog.spark.stream_ledger import last_committed, ledger_path
from seglog.spark.stream_sink import (
    TEST_KILL_ENV,
    SeglogStreamCommitMessage,
    SeglogStreamWriter,
    make_stream_writer,
)

SCHEMA = StructType([StructField("key", StringType()), StructField("value", StringType())])


def make_data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic("out", 3)
        manager.create_topic("small", 1, configs={"max.message.bytes": "200"})
    return data


def new_writer(data: Path, tmp_path: Path) -> SeglogStreamWriter:
    options = {"path": str(data), "topic": "out", "checkpointLocation": str(tmp_path / "ck")}
    return make_stream_writer(options, SCHEMA, False)


QUERY_ID = "4b1e7c8e-0000-4000-8000-000000000001"
ATTEMPTS = iter(range(1_000_000))


def stage(
    writer: SeglogStreamWriter, tasks: list[list[tuple[str, str]]], batch_id: int
) -> list[SeglogStreamCommitMessage]:
    """Run each task's ``write`` with the task properties Spark gives a micro-batch's tasks."""
    messages = []
    for index, rows in enumerate(tasks):
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([k for k, _ in rows], pa.string()),
                pa.array([v for _, v in rows], pa.string()),
            ],
            names=["key", "value"],
        )
        TaskContext(
            partitionId=index,
            taskAttemptId=next(ATTEMPTS),
            localProperties={
                "sql.streaming.queryId": QUERY_ID,
                "streaming.sql.batchId": str(batch_id),
            },
        )
        try:
            messages.append(writer.write(iter([batch])))
        finally:
            TaskContext._setTaskContext(None)
    return messages


def values_in_log(data: Path) -> list[bytes]:
    with open_log_dirs([data], read_only=True) as manager:
        return sorted(
            r.value
            for p in manager.partitions_of("out")
            for r in manager.get_log("out", p).iter_records(0)
            if r.value is not None
        )


def rows(batch: int, tasks: int = 2, per_task: int = 40) -> list[list[tuple[str, str]]]:
    return [[(f"k{i % 5}", f"b{batch}-t{t}-{i}") for i in range(per_task)] for t in range(tasks)]


def expected(*batches: int) -> list[bytes]:
    return sorted(v.encode() for b in batches for task in rows(b) for _, v in task)


def test_replayed_batch_appends_nothing_and_dead_attempts_are_removed(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer = new_writer(data, tmp_path)
    writer.commit(list(stage(writer, rows(0), 0)), 0)
    assert values_in_log(data) == expected(0)
    assert writer.last_report is not None and writer.last_report.records == 80
    assert last_committed([data], QUERY_ID) == 0
    assert not default_staging_root([data]).exists()

    # Spark replays batch 0 after a crash: same rows staged again, same batch id
    replay = new_writer(data, tmp_path)
    replay.commit(list(stage(replay, rows(0), 0)), 0)
    assert replay.replayed and replay.last_report is None
    assert values_in_log(data) == expected(0)
    assert not default_staging_root([data]).exists()

    # a dead attempt of batch 1 (a killed run) is removed by the commit of batch 1
    dead = stage(new_writer(data, tmp_path), rows(1), 1)
    assert all((default_staging_root([data]) / m.job).is_dir() for m in dead)
    live = new_writer(data, tmp_path)
    live.commit(list(stage(live, rows(1), 1)), 1)
    assert values_in_log(data) == expected(0, 1)
    assert last_committed([data], QUERY_ID) == 1
    assert not default_staging_root([data]).exists()


def test_empty_micro_batch_leaves_nothing(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer = new_writer(data, tmp_path)
    messages = stage(writer, [[], []], 0)
    assert all(m.job == "" and not m.files for m in messages)
    writer.commit(list(messages), 0)
    assert not default_staging_root([data]).exists()
    assert values_in_log(data) == []


def test_abort_and_failed_tasks_remove_staged_data(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer = new_writer(data, tmp_path)
    messages = stage(writer, rows(0), 0)
    writer.abort([messages[0], None], 0)
    writer.abort([messages[1]], 0)
    assert not default_staging_root([data]).exists()
    assert values_in_log(data) == []
    # a task that fails (a record too large for the topic) leaves nothing staged
    small = make_stream_writer({"path": str(data), "topic": "small"}, SCHEMA, False)
    with pytest.raises(RecordTooLargeError, match="append to small-0"):
        stage(small, [[("k", "ok"), ("k", "x" * 500)]], 0)
    assert not default_staging_root([data]).exists()


KILL_SCRIPT = textwrap.dedent(
    """
    import os, pickle, sys
    os.setpgid(0, 0)
    os.environ[{env!r}] = "appending@0@" + sys.argv[2] + "@" + str(os.getpid())
    with open(sys.argv[1], "rb") as handle:
        writer, messages = pickle.load(handle)
    writer.commit(messages, 0)
    """
)


def test_commit_killed_mid_append_is_completed_before_the_replay(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer = new_writer(data, tmp_path)
    messages = stage(writer, rows(0), 0)
    state = tmp_path / "state.pickle"
    state.write_bytes(pickle.dumps((writer, messages)))
    marker = tmp_path / "killed"
    result = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT.format(env=TEST_KILL_ENV), str(state), str(marker)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert result.returncode == -9 and marker.exists()
    partial = values_in_log(data)
    assert 0 < len(partial) < 80  # one partition of three was appended when it died

    # the restarted query replays batch 0: the journal is completed, the replay skipped
    replay = new_writer(data, tmp_path)
    replay.commit(list(stage(replay, rows(0), 0)), 0)
    assert replay.replayed
    assert values_in_log(data) == expected(0)
    assert not default_staging_root([data]).exists()


def outcome(make: Any, options: dict[str, str]) -> str:
    """What a sink makes of the options: "ok" or the error's type and message."""
    try:
        writer = make(options, SCHEMA, False)
    except Exception as exc:  # compared with the other sink, not swallowed
        return f"{type(exc).__name__}: {exc}"
    if hasattr(writer, "job_dir"):
        writer.abort([None])  # the batch sink stages from planning on
    return "ok"


def test_options_are_checked_as_the_batch_sink_checks_them(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    cases = [
        {"path": str(data), "topic": " "},
        {"path": str(data), "topic": "out", "commitLockWaitMs": "soon"},
        {"path": str(data), "topic": "nope"},
        {"path": str(data)},
        {"topic": "out"},
        {"path": str(data), "topic": "out", "stagingDirr": str(tmp_path / "s")},  # a typo
        {"path": str(data), "topic": "out", "kafka.acks": "all"},
    ]
    for options in cases:
        assert outcome(make_stream_writer, options) == outcome(make_writer, options), options
        # Spark adds the query's checkpointLocation to the options: never an error
        with_checkpoint = {**options, "checkpointLocation": str(tmp_path / "ck")}
        assert outcome(make_stream_writer, with_checkpoint) == outcome(make_writer, options)
    assert not default_staging_root([data]).exists()
    with pytest.raises(SparkOptionError, match="outputMode"):
        make_stream_writer({"path": str(data), "topic": "out"}, SCHEMA, True)


def test_damaged_ledger_stops_the_commit(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    ledger_path([data]).write_text('{"version": 1, "queries": {"q": {"batch_id": "x"}}}\n')
    writer = new_writer(data, tmp_path)
    messages = stage(writer, rows(0), 0)
    with pytest.raises(CorruptCheckpointError, match="streaming ledger"):
        writer.commit(list(messages), 0)
    assert values_in_log(data) == []
