"""Spark API polish: a misspelled option raises with the closest name, seglog's own error
comes out of Spark's exception (helpers, ``seglog_errors()``, the CLI), a write without
``.mode()`` says to use append, and Ctrl-C stops ``seglog spark export`` with one line.

Each test first shows the finding on real Spark (local mode, the shared session), then the
fix. The CLI's output is checked in one real subprocess (its own JVM: what the JVM itself
prints counts), which runs a failing export and then an export interrupted by SIGINT sent to
its process group, as a terminal's Ctrl-C is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import seglog
from seglog.engine.log_manager import open_log_dirs
from seglog.errors import CorruptRecordError, SparkOptionError
from seglog.format.reader import read_batches
from seglog.spark.export import export_topic
from seglog.spark.failures import is_spark_exception, seglog_errors
from seglog.spark.option_names import check_sink_option_names
from seglog.spark.options import parse_source_options
from seglog.spark.sink import parse_sink_options

TYPO_MESSAGE = (
    "unknown option 'startingoffset' for the seglog source; did you mean 'startingOffsets'?"
)


def topic_dir(root: Path, partitions: int = 1) -> Path:
    with open_log_dirs([root]) as manager:
        manager.create_topic("t", partitions)
        manager.get_log("t", 0).append_records([(b"k", b"v")])
    return root


def damaged_dir(root: Path) -> Path:
    """Topic ``t`` whose second segment has a flipped byte inside a record (CRC mismatch)."""
    with open_log_dirs([root]) as manager:
        manager.create_topic("t", 1, {"segment.bytes": "1024"})
        log = manager.get_log("t", 0)
        for i in range(0, 90, 3):
            log.append_records([(b"key-%d" % j, b"value-%05d" % j) for j in range(i, i + 3)])
    victim = sorted((root / "t-0").glob("*.log"))[1]
    data = bytearray(victim.read_bytes())
    batches, _ = read_batches(bytes(data))
    data[batches[1].position + 70] ^= 0x01
    victim.write_bytes(bytes(data))
    return root


# --- option names (no Spark) -------------------------------------------------------------------
def test_a_misspelled_option_is_refused_with_the_closest_name(tmp_path: Path) -> None:
    data = topic_dir(tmp_path / "data")
    base = {"path": str(data), "subscribe": "t"}
    for streaming in (False, True):  # the batch and the streaming reader
        with pytest.raises(SparkOptionError) as caught:
            parse_source_options({**base, "startingoffset": "earliest"}, is_streaming=streaming)
        assert str(caught.value) == TYPO_MESSAGE
    # Every option Spark's Kafka source documents passes, in any case, and kafka.* too.
    parsed = parse_source_options(
        {
            "PATH": str(data),
            "Subscribe": "t",
            "groupIdPrefix": "g",
            "kafkaConsumer.pollTimeoutMs": "500",
            "fetchOffset.numRetries": "3",
            "fetchOffset.retryIntervalMs": "10",
            "kafka.bootstrap.servers": "localhost:9092",
            "MaxOffsetsPerTrigger": "10",
        },
        is_streaming=True,
    )
    assert parsed.max_offsets_per_trigger == 10
    with pytest.raises(SparkOptionError, match=r"option 'colour' .*the options are .*assign"):
        parse_source_options({**base, "colour": "blue"}, is_streaming=False)
    with pytest.raises(SparkOptionError, match="several log directories separated by commas"):
        parse_source_options({"paths": '["a","b"]', "subscribe": "t"}, is_streaming=False)
    with pytest.raises(SparkOptionError) as sink_typo:
        parse_sink_options({"path": str(data), "stagingdirectory": str(tmp_path / "s")})
    assert str(sink_typo.value) == (
        "unknown option 'stagingdirectory' for the seglog sink; did you mean 'stagingDir'?"
    )
    # The streaming sink's extra names (its own function, one call).
    check_sink_option_names({"path": "d", "checkpointLocation": "c"}, ("checkpointLocation",))
    with pytest.raises(SparkOptionError, match="unknown option 'checkpointLocation'"):
        check_sink_option_names({"path": "d", "checkpointLocation": "c"})


def test_the_last_seglog_line_of_a_spark_text_is_the_error() -> None:
    from pyspark.errors import PySparkException

    from seglog.engine.cleaning.cleaner import UncleanableLogError
    from seglog.spark.failures import SparkJobError, seglog_error_of

    text = (
        "[PYTHON_EXCEPTION] Traceback (most recent call last):\n"
        "seglog.errors.CorruptRecordError: the cause, printed first\n"
        "\nThe above exception was the direct cause of the following exception:\n\n"
        "seglog.engine.cleaning.cleaner.UncleanableLogError: t-0: the raised one\n"
        " SQLSTATE: 38000\n\tat org.apache.spark.Foo(Foo.scala:1)\n"
    )
    found = seglog_error_of(PySparkException(message=text))
    assert type(found) is UncleanableLogError and str(found) == "t-0: the raised one"
    gone = seglog_error_of(PySparkException(message="seglog.errors.NoSuchError: x\n"))
    assert type(gone) is SparkJobError and str(gone) == "NoSuchError: x"
    assert seglog_error_of(PySparkException(message="java.lang.OutOfMemoryError")) is None
    assert seglog_error_of(ValueError("seglog.errors.SparkOptionError: x")) is None


# --- through Spark -----------------------------------------------------------------------------
def test_seglog_errors_come_out_of_spark_exceptions(spark: Any, tmp_path: Path) -> None:
    data = topic_dir(tmp_path / "data")
    reader = (
        spark.read.format("seglog")
        .option("path", str(data))
        .option("subscribe", "t")
        .option("startingOffset", "earliest")
    )
    # The finding: Spark's exception, seglog's message deep inside a Python trace.
    with pytest.raises(Exception, match="PYTHON_DATA_SOURCE_ERROR") as raw:
        reader.load().collect()
    assert not str(raw.value).startswith("unknown option")
    # The fix: the seglog error, its message first, Spark's exception as the cause.
    with pytest.raises(SparkOptionError) as caught, seglog_errors():
        reader.load().collect()
    assert str(caught.value) == TYPO_MESSAGE
    assert caught.value.__cause__ is not None and is_spark_exception(caught.value.__cause__)
    # The streaming reader: the query fails in its own thread (StreamingQueryException).
    stream = (
        spark.readStream.format("seglog")
        .option("path", str(data))
        .option("subscribe", "t")
        .option("startingOffset", "earliest")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
    )
    with pytest.raises(SparkOptionError) as stream_caught, seglog_errors():
        stream.start().awaitTermination()
    assert str(stream_caught.value) == TYPO_MESSAGE
    # An error raised in an executor's task, through seglog's helper.
    damaged = damaged_dir(tmp_path / "damaged")
    with pytest.raises(CorruptRecordError) as task_error:
        export_topic(spark, [damaged], "t", tmp_path / "out", mode="changelog")
    assert str(task_error.value).startswith(f"{damaged / 't-0'}: record batch CRC mismatch")
    assert is_spark_exception(task_error.value.__cause__)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_a_write_without_mode_says_to_use_append(spark: Any, tmp_path: Path) -> None:
    data = topic_dir(tmp_path / "data")
    frame = spark.createDataFrame([("k2", "v2")], "key string, value string")
    write = frame.write.format("seglog").option("path", str(data)).option("topic", "t")
    with pytest.raises(Exception, match="Overwrite"):  # the finding: Spark's own advice
        write.save()
    with pytest.raises(SparkOptionError, match=r'add \.mode\("append"\)'), seglog_errors():
        write.save()
    typo = frame.write.format("seglog").mode("append").option("path", str(data))
    with pytest.raises(SparkOptionError, match="did you mean 'topic'"), seglog_errors():
        typo.option("topics", "t").save()
    with open_log_dirs([data], read_only=True) as manager:
        assert [r.value for r in manager.get_log("t", 0).iter_records(0)] == [b"v"]
    write.mode("append").save()  # and with the mode, it writes
    with open_log_dirs([data], read_only=True) as manager:
        assert [r.value for r in manager.get_log("t", 0).iter_records(0)] == [b"v", b"v2"]


# --- the command line, in its own process ---------------------------------------------------------
def _big_topic(root: Path) -> Path:
    """600 000 records of 100 B: an export long enough to be interrupted mid-job."""
    with open_log_dirs([root]) as manager:
        manager.create_topic("big", 2, {"retention.ms": "-1"})
        for p in range(2):
            log = manager.get_log("big", p)
            for start in range(0, 300_000, 20_000):
                log.append_records(
                    [(b"k%d" % (i % 50_000), b"v" * 100) for i in range(start, start + 20_000)]
                )
    return root


def test_spark_cli_prints_one_line_on_error_and_on_ctrl_c(tmp_path: Path) -> None:
    damaged = damaged_dir(tmp_path / "damaged")
    big = _big_topic(tmp_path / "big")
    target = tmp_path / "exported"
    failing = ["--data-dir", str(damaged), "spark", "export", "t", "--to", str(tmp_path / "x")]
    interrupted = ["--data-dir", str(big), "spark", "export", "big", "--to", str(target)]
    script = (
        "import sys\n"
        "from seglog.cli.main import main\n"
        f"status = main({failing!r} + ['--mode', 'changelog'])\n"
        "print('FIRST-DONE', status, file=sys.stderr, flush=True)\n"
        f"sys.exit(main({interrupted!r}))\n"
    )
    source_root = str(Path(seglog.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [source_root, os.environ.get("PYTHONPATH")])),
        "SEGLOG_PROGRESS": "never",
        "SEGLOG_SPARK_MASTER": "local[2]",
    }
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,  # its own process group, signalled as a terminal does
        )
        try:
            # The parquet job has started once its staging directory exists.
            while process.poll() is None and not list(tmp_path.glob("exported.seglog-tmp-*")):
                time.sleep(0.05)
            assert process.poll() is None, stderr_path.read_text()
            os.killpg(process.pid, signal.SIGINT)
            status = process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
    text = stderr_path.read_text()
    first, _, second = text.partition("FIRST-DONE 1\n")
    assert second, text
    assert (
        first.rstrip("\n")
        .splitlines()[-1]
        .startswith(f"seglog: error: {damaged / 't-0'}: record batch CRC mismatch")
    ), first
    assert status == 130
    assert second == "seglog: interrupted: the Spark work was stopped\n", second
    for noise in ("Traceback", "ERROR", "\tat ", "py4j"):
        assert noise not in text, text
    assert not target.exists() and not list(tmp_path.glob("exported.seglog-tmp-*"))
