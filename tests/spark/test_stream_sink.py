"""The streaming sink through Spark: ``df.writeStream.format("seglog")``.

Input is a file source with one file per micro-batch (``maxFilesPerTrigger=1``), so the
micro-batches are known; the logs are read back with a read-only manager, never with the code
under test. The restart test runs the query in its own process group and SIGKILLs the whole
group (driver, JVM, Python workers) at chosen points of chosen micro-batches, then restarts
it from the same checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from pyspark.sql import functions as sf

from seglog.engine.log_manager import open_log_dirs
from seglog.spark.staging import default_staging_root
from seglog.spark.stream_ledger import read_ledger
from seglog.spark.stream_sink import TEST_KILL_ENV

README = Path(__file__).resolve().parents[2] / "README.md"


def make_data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic("out", 3)
    return data


def write_inputs(folder: Path, files: int, per_file: int) -> list[tuple[str, str]]:
    """JSON-lines files ``part-<n>.json``; returns every (key, value) row written."""
    folder.mkdir()
    rows = []
    for n in range(files):
        chunk = [(f"k{i % 7}", f"f{n}-r{i}") for i in range(per_file)]
        lines = "".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in chunk)
        (folder / f"part-{n}.json").write_text(lines)
        rows.extend(chunk)
    return rows


def log_rows(data: Path) -> list[tuple[str, str, list[Any]]]:
    with open_log_dirs([data], read_only=True) as manager:
        return [
            (r.key.decode(), r.value.decode(), [(h.key, h.value) for h in r.headers])
            for p in manager.partitions_of("out")
            for r in manager.get_log("out", p).iter_records(0)
            if r.key is not None and r.value is not None
        ]


def test_available_now_two_micro_batches_land_once(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    rows = write_inputs(tmp_path / "in", files=2, per_file=150)
    df = (
        spark.readStream.schema("key string, value string")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
        .withColumn(
            "headers",
            sf.array(
                sf.struct(sf.lit("src").alias("key"), sf.col("key").cast("binary").alias("value"))
            ),
        )
    )
    # the README's example, as written
    section = README.read_text().split("### Streaming writes, exactly once", 1)[1]
    (example,) = re.findall(r"```text\n(.*?)```", section, re.S)[:1]
    namespace: dict[str, Any] = {
        "events": df,
        "data": str(data),
        "checkpoint": str(tmp_path / "ck"),
    }
    exec(compile(example, str(README), "exec"), namespace)
    query = namespace["query"]
    assert query.exception() is None
    batches = [p["batchId"] for p in query.recentProgress if p["numInputRows"] > 0]
    assert batches == [0, 1]
    got = log_rows(data)
    assert sorted((k, v) for k, v, _ in got) == sorted(rows)
    assert all(headers == [("src", k.encode())] for k, _, headers in got)
    ledger = read_ledger([data])
    assert [entry["batch_id"] for entry in ledger.values()] == [1]
    assert not default_staging_root([data]).exists()


QUERY_SCRIPT = textwrap.dedent(
    """
    import os, sys
    source, data, checkpoint, kill = sys.argv[1:5]
    os.setpgid(0, 0)
    if kill != "-":
        os.environ[{env!r}] = kill + "@" + str(os.getpid())
    from seglog.spark.session import embedded_session
    spark = embedded_session("local[2]", app_name="seglog-stream-restart", configs={{
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    }})
    df = (spark.readStream.schema("key string, value string")
          .option("maxFilesPerTrigger", 1).json(source).repartition(2))
    query = (df.writeStream.format("seglog").option("path", data).option("topic", "out")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    spark.stop()
    """
).format(env=TEST_KILL_ENV)


def run_query(tmp_path: Path, data: Path, kill: str | None) -> int:
    """Run the query to its end, or until the kill hook fires (then -9)."""
    marker = tmp_path / "killed"
    marker.unlink(missing_ok=True)
    spec = "-" if kill is None else f"{kill}@{marker}"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            QUERY_SCRIPT,
            str(tmp_path / "in"),
            str(data),
            str(tmp_path / "ck"),
            spec,
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        timeout=900,
        check=False,
    )
    if kill is not None:
        assert marker.exists(), result.stderr.decode()[-3000:]
    else:
        assert result.returncode == 0, result.stderr.decode()[-3000:]
    return result.returncode


def test_query_killed_and_restarted_mid_batch_writes_each_row_once(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    rows = write_inputs(tmp_path / "in", files=3, per_file=200)
    staging = default_staging_root([data])
    # killed while the tasks of batch 1 stage (batch 0 is committed) ...
    assert run_query(tmp_path, data, "write@1") == -9
    assert len(log_rows(data)) == 200 and any(staging.iterdir())
    # ... then after batch 1's journal, one partition appended ...
    assert run_query(tmp_path, data, "appending@1") == -9
    assert 200 < len(log_rows(data)) < 400
    assert [p.name for p in staging.glob("*/commit.json")] == ["commit.json"]
    # ... then after batch 2 is in the logs and the ledger, before Spark's commits/2
    assert run_query(tmp_path, data, "committed@2") == -9
    assert len(log_rows(data)) == 600
    assert not (tmp_path / "ck" / "commits" / "2").exists()
    run_query(tmp_path, data, None)  # replays batch 2: nothing appended
    got = Counter((k, v) for k, v, _ in log_rows(data))
    assert got == Counter(rows)
    assert [entry["batch_id"] for entry in read_ledger([data]).values()] == [2]
    assert not default_staging_root([data]).exists()
