"""The embedded session starts quietly: no JVM warning lands in a command's output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from seglog.spark.session import JAVA_OPTIONS, QUIET_LOG4J2, quiet_log_config

PROGRAM = """
from seglog.spark.session import embedded_session
spark = embedded_session("local[1]", app_name="quiet")
print("rows", spark.range(5).count())
spark.stop()
"""


def test_quiet_log_config_is_written_once_and_whole() -> None:
    path = Path(quiet_log_config())
    assert path.read_text(encoding="utf-8") == QUIET_LOG4J2
    assert "rootLogger.level = error" in QUIET_LOG4J2
    before = path.stat().st_mtime_ns
    assert quiet_log_config() == str(path)
    assert path.stat().st_mtime_ns == before  # unchanged content: not rewritten


def test_the_shared_session_keeps_its_own_java_options_after_ours(spark: SparkSession) -> None:
    options = spark.sparkContext.getConf().get(JAVA_OPTIONS) or ""
    ours = f"-Dlog4j2.configurationFile={quiet_log_config()}"
    # the test session's own option is kept, after ours (a user's own log file would win)
    assert ours in options and "-XX:TieredStopAtLevel=1" in options
    assert options.index(ours) < options.index("-XX:TieredStopAtLevel=1")


def test_an_embedded_session_prints_no_jvm_warning() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP",)}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "rows 5" in done.stdout
    noisy = [line for line in done.stderr.splitlines() if " WARN " in line or "log4j" in line]
    assert noisy == [], done.stderr
