"""The sink's staging and commit without a Spark job: tasks and the driver's commit are plain
Python (spec/spark.md §5), so crashes are injected by killing a real process (``os._exit``)
at each step of the commit, then a new commit (or ``recover_commits``) must finish it with
every staged record in the log exactly once, in task order.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from seglog.engine.log_manager import open_log_dirs
from seglog.errors import InvalidRecordError, RecordTooLargeError, SparkOptionError
from seglog.format.reader import BatchReader
from seglog.spark.sink import (
    SeglogArrowWriter,
    SeglogCommitMessage,
    make_writer,
    parse_sink_options,
    recover_commits,
)
from seglog.spark.staging import (
    JOB_FILE,
    JOURNAL_FILE,
    ORPHAN_JOB_AGE_MS,
    default_staging_root,
    recover_jobs,
)

SCHEMA = StructType(
    [
        StructField("key", StringType()),
        StructField("value", StringType()),
        StructField("partition", IntegerType()),
    ]
)
TOPICS = {"a": 3, "b": 2}


def make_data_dir(tmp_path: Path, configs: dict[str, str] | None = None) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        for name, partitions in TOPICS.items():
            manager.create_topic(name, partitions, configs=configs or {})
    return data


def batch_of(rows: list[tuple[str | None, str | None, int | None]]) -> pa.RecordBatch:
    keys, values, partitions = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.RecordBatch.from_arrays(
        [
            pa.array(list(keys), pa.string()),
            pa.array(list(values), pa.string()),
            pa.array(list(partitions), pa.int32()),
        ],
        names=["key", "value", "partition"],
    )


def stage(
    data: Path, topic: str, tasks: list[list[tuple[str | None, str | None, int | None]]]
) -> tuple[SeglogArrowWriter, list[SeglogCommitMessage]]:
    writer = make_writer({"path": str(data), "topic": topic}, SCHEMA, False)
    assert isinstance(writer, SeglogArrowWriter)
    messages = []
    for index, rows in enumerate(tasks):
        message = writer.write(iter([batch_of(rows)]))
        # outside Spark every task reports partition 0; give them their real order
        messages.append(SeglogCommitMessage(index, message.task_attempt, message.files))
    return writer, messages


def staged_records(
    writer: SeglogArrowWriter, messages: list[SeglogCommitMessage]
) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """What the commit must leave in each partition: staged records in task order."""
    out: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for message in sorted(messages, key=lambda m: m.task_partition):
        for staged in message.files:
            data = (Path(writer.job_dir) / staged.path).read_bytes()
            records = out.setdefault(staged.partition, [])
            for batch in BatchReader(data):
                records.extend((r.key, r.value) for r in batch.records())
    return out


def log_records(data: Path, topic: str) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    with open_log_dirs([data], read_only=True) as manager:
        return {
            p: [(r.key, r.value) for r in manager.get_log(topic, p).iter_records(0)]
            for p in manager.partitions_of(topic)
        }


def many_rows(task: int, count: int) -> list[tuple[str | None, str | None, int | None]]:
    return [(f"k{task}-{i % 7}", f"v{task}-{i}" * 5, None) for i in range(count)]


def test_commit_appends_in_task_order_and_removes_staging(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    tasks = [many_rows(t, 50) for t in range(3)]
    writer, messages = stage(data, "a", tasks)
    expected = staged_records(writer, messages)
    assert sum(len(v) for v in expected.values()) == 150
    writer.commit(list(messages))
    assert log_records(data, "a") == {p: expected.get(p, []) for p in range(3)}
    assert not Path(writer.job_dir).exists()
    assert not default_staging_root([data]).exists()  # no empty *.seglog-staging left
    report = writer.last_report
    assert report is not None and report.records == 150
    # each task's records of a partition follow the previous task's
    for partition, records in expected.items():
        tasks_seen = [k.split(b"-")[0] for k, _ in records if k is not None]
        assert tasks_seen == sorted(tasks_seen)
        assert len(records) == len(log_records(data, "a")[partition])


def test_abort_removes_the_job_directory(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer, _ = stage(data, "a", [many_rows(0, 10)])
    assert Path(writer.job_dir).is_dir()
    writer.abort([None])
    assert not Path(writer.job_dir).exists()
    assert not default_staging_root([data]).exists()
    assert log_records(data, "a") == {0: [], 1: [], 2: []}


def test_abort_outlasts_a_task_still_writing(tmp_path: Path) -> None:
    """Spark calls ``abort`` without waiting for the failed job's other tasks: a task that
    keeps creating staged files while the job directory is removed must not keep it alive
    (CI once found the directory left behind), and once it is gone the task can create
    nothing more."""
    data = make_data_dir(tmp_path)
    writer, _ = stage(data, "a", [many_rows(0, 10)])
    task_dir = Path(writer.job_dir) / "task-00007-late"
    task_dir.mkdir()
    stop = threading.Event()
    refused: list[BaseException] = []

    def late_task() -> None:
        n = 0
        while not stop.is_set():
            try:
                with (task_dir / f"a-{n % 3}.batches").open("ab") as staged:
                    staged.write(b"x" * 64)
            except FileNotFoundError as error:
                refused.append(error)
                return
            n += 1

    thread = threading.Thread(target=late_task)
    thread.start()
    try:
        writer.abort([None])
        # the task's next write after the removal fails, which ends it (however late the
        # thread is scheduled on a loaded machine); ``stop`` only guards a broken test
        thread.join(timeout=60)
        assert not thread.is_alive(), "the late task went on writing after the removal"
    finally:
        stop.set()
        thread.join()
    assert not Path(writer.job_dir).exists()
    assert not default_staging_root([data]).exists()
    assert len(refused) == 1 and isinstance(refused[0], FileNotFoundError), refused


def test_old_jobs_without_a_journal_are_removed_by_the_next_recovery(tmp_path: Path) -> None:
    """Jobs no commit will finish (no journal: none began), untouched for ORPHAN_JOB_AGE_MS:
    this data directory's, and one whose ``job.json`` an interrupted removal already deleted,
    are removed; another data directory's is not, nor is any job while it is recent."""
    data = make_data_dir(tmp_path)
    other = make_data_dir(tmp_path / "other")
    mine, _ = stage(data, "a", [many_rows(0, 5)])
    theirs, _ = stage(other, "a", [many_rows(1, 5)])
    root = default_staging_root([data])
    foreign = root / Path(theirs.job_dir).name
    shutil.move(theirs.job_dir, foreign)  # another data directory's job in this staging root
    cut_short, _ = stage(data, "a", [many_rows(2, 5)])
    (Path(cut_short.job_dir) / JOB_FILE).unlink()
    jobs = sorted([foreign.name, Path(mine.job_dir).name, Path(cut_short.job_dir).name])
    with open_log_dirs([data]) as manager:
        assert recover_jobs(manager, root, now_ms=int(time.time() * 1000)) == []
        assert sorted(p.name for p in root.iterdir()) == jobs  # all recent: all kept
        later = int(time.time() * 1000) + ORPHAN_JOB_AGE_MS + 60_000
        assert recover_jobs(manager, root, now_ms=later) == []
    assert sorted(p.name for p in root.iterdir()) == [foreign.name]
    assert log_records(data, "a") == {0: [], 1: [], 2: []}


def test_staging_is_beside_the_data_dir_and_never_inside(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer, _ = stage(data, "a", [many_rows(0, 3)])
    assert Path(writer.job_dir).parent == tmp_path / "data.seglog-staging"
    assert default_staging_root([data]) == tmp_path / "data.seglog-staging"
    with pytest.raises(SparkOptionError, match="inside log directory"):
        parse_sink_options({"path": str(data), "stagingdir": str(data / "stage")})
    custom = parse_sink_options({"path": str(data), "stagingdir": str(tmp_path / "s")})
    assert custom.staging_root == str(tmp_path / "s")


def test_overwrite_and_unknown_topic_are_refused(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    with pytest.raises(SparkOptionError, match="append-only"):
        make_writer({"path": str(data), "topic": "a"}, SCHEMA, True)
    with pytest.raises(Exception, match="topic 'nope' does not exist"):
        make_writer({"path": str(data), "topic": "nope"}, SCHEMA, False)
    with pytest.raises(SparkOptionError, match="'value' column"):
        make_writer(
            {"path": str(data), "topic": "a"}, StructType([StructField("key", StringType())]), False
        )
    with pytest.raises(SparkOptionError, match="timestamp_millis"):
        make_writer(
            {"path": str(data), "topic": "a"},
            StructType([StructField("value", StringType()), StructField("timestamp", LongType())]),
            False,
        )


def test_keyless_record_on_compacted_topic_fails_in_the_task(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"cleanup.policy": "compact"})
    writer = make_writer({"path": str(data), "topic": "b"}, SCHEMA, False)
    with pytest.raises(InvalidRecordError, match="compacted topic requires a key"):
        writer.write(iter([batch_of([("k", "v", None), (None, "v", None)])]))


def test_record_too_large_fails_in_the_task(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"max.message.bytes": "200"})
    writer = make_writer({"path": str(data), "topic": "b"}, SCHEMA, False)
    with pytest.raises(RecordTooLargeError, match="append to b-"):
        writer.write(iter([batch_of([("k", "x" * 500, None)])]))


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, pickle, sys
    from pathlib import Path
    import seglog.spark.staging as staging
    from seglog.engine.log import Log

    kind, count = sys.argv[2], int(sys.argv[3])
    with open(sys.argv[1], "rb") as handle:
        writer, messages = pickle.load(handle)
    calls = {"n": 0}

    def tick():
        calls["n"] += 1
        if calls["n"] == count:
            os._exit(17)

    if kind == "after_partition":
        writer.after_partition = lambda tp: tick()
    elif kind == "append":
        original_append = Log.append
        def append(self, data):
            info = original_append(self, data)
            tick()
            return info
        Log.append = append
    elif kind in ("done_marker", "journal", "committed"):
        original_write = staging.write_file_atomically
        def write(path, data):
            hit = (
                (kind == "done_marker" and path.parent.name == staging.DONE_DIR)
                or (kind == "journal" and path.name == staging.JOURNAL_FILE)
                or (kind == "committed" and path.name == staging.COMMITTED_FILE)
            )
            if hit:
                tick()
            original_write(path, data)
        staging.write_file_atomically = write
    writer.commit(messages)
    sys.exit(0)
    """
)


def crash_commit(
    tmp_path: Path,
    writer: SeglogArrowWriter,
    messages: list[SeglogCommitMessage],
    kind: str,
    n: int,
) -> int:
    state = tmp_path / "state.pickle"
    state.write_bytes(pickle.dumps((writer, messages)))
    result = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(state), kind, str(n)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 17), result.stderr.decode()
    return result.returncode


@pytest.mark.parametrize(
    ("kind", "n"),
    [
        ("after_partition", 1),  # between partitions: one done, two to do
        ("after_partition", 2),
        ("append", 1),  # inside a partition: its first chunk appended, no done marker
        ("append", 4),
        ("done_marker", 2),  # a partition appended and flushed, its marker not written
        ("committed", 1),  # everything done, the job directory not removed
    ],
)
def test_interrupted_commit_is_completed_exactly_once(tmp_path: Path, kind: str, n: int) -> None:
    # small segments and batches: every partition takes several appends (chunks)
    data = make_data_dir(tmp_path, {"segment.bytes": "4096", "max.message.bytes": "600"})
    with open_log_dirs([data]) as manager:  # earlier data: the commit starts mid-log
        manager.get_log("a", 1).append_records([(b"old", b"record")])
    tasks = [many_rows(t, 120) for t in range(3)]
    writer, messages = stage(data, "a", tasks)
    expected = staged_records(writer, messages)
    expected[1] = [(b"old", b"record"), *expected.get(1, [])]
    assert crash_commit(tmp_path, writer, messages, kind, n) == 17
    job_dir = Path(writer.job_dir)
    assert job_dir.exists()
    reports = recover_commits([data])
    assert not job_dir.exists()
    if kind != "committed":
        assert len(reports) == 1
    assert log_records(data, "a") == {p: expected.get(p, []) for p in range(3)}
    # a second recovery finds nothing to do
    assert recover_commits([data]) == []
    assert log_records(data, "a") == {p: expected.get(p, []) for p in range(3)}


def test_crash_before_the_journal_appends_nothing(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    writer, messages = stage(data, "a", [many_rows(0, 30)])
    assert crash_commit(tmp_path, writer, messages, "journal", 1) == 17
    assert not (Path(writer.job_dir) / JOURNAL_FILE).exists()
    assert recover_commits([data]) == []
    assert log_records(data, "a") == {0: [], 1: [], 2: []}
    writer.abort([None])  # what Spark does after the failed commit
    assert not Path(writer.job_dir).exists()


def test_next_commit_recovers_an_interrupted_one_first(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    first, first_messages = stage(data, "a", [many_rows(0, 40), many_rows(1, 40)])
    expected = staged_records(first, first_messages)
    assert crash_commit(tmp_path, first, first_messages, "after_partition", 1) == 17
    second, second_messages = stage(data, "a", [many_rows(5, 20)])
    for partition, records in staged_records(second, second_messages).items():
        expected.setdefault(partition, []).extend(records)
    second.commit(list(second_messages))
    assert log_records(data, "a") == {p: expected.get(p, []) for p in range(3)}
    assert not Path(first.job_dir).exists() and not Path(second.job_dir).exists()
    assert not default_staging_root([data]).exists()  # removed once empty
