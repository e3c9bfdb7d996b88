"""The embedded Spark session seglog uses by default, and the checks that make it start.

``embedded_session()`` returns ``SparkSession.getOrCreate()`` with seglog's data source
registered under the name ``seglog`` (Spark refuses a Python source named ``kafka``). Master
``local[*]`` unless ``master`` or ``SEGLOG_SPARK_MASTER`` says otherwise; on a cluster, build
the session as usual (``spark-submit --master ...``) and call :func:`register` on it: the same
code runs unchanged as long as every executor can read the log directories.

Why each setting:

* ``PYSPARK_PYTHON`` is set to this interpreter when unset, so Spark's Python workers import
  the same environment (pyarrow, numba, seglog); otherwise they run the first ``python3`` on
  ``PATH`` and fail with "No module named 'pyarrow'".
* ``spark.ui.enabled=false``, ``spark.ui.showConsoleProgress=false``: an embedded job needs
  neither a web UI nor Spark's own progress bar; ``spark.driver.bindAddress=127.0.0.1`` keeps
  an embedded run hermetic.
* ``spark.sql.session.timeZone=UTC``: Kafka timestamps are UTC milliseconds.
* Quiet start-up: Spark's JVM logs warnings before any ``setLogLevel`` can run (the default
  log4j profile, the loopback host name, the native Hadoop library), which land in the middle
  of a command's output. The embedded driver gets a log4j2 file that logs errors only (written
  once to the temporary directory, :func:`quiet_log_config`) through
  ``spark.driver.extraJavaOptions``, and ``SPARK_LOCAL_IP=127.0.0.1`` (it binds there anyway).
  A user's own ``spark.driver.extraJavaOptions`` (in ``configs``) come after ours, so their
  own ``-Dlog4j2.configurationFile`` wins.
* ``spark.sql.python.filterPushdown.enabled=true``: our reader accepts partition, offset and
  timestamp filters (off by default in Spark, and a reader that overrides ``pushFilters``
  fails without it).

A missing ``java`` is reported as :class:`~seglog.errors.SparkUnavailableError` saying what to
install, before Spark prints a JVM launch failure.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from seglog.errors import SparkUnavailableError, UnreadableFileError
from seglog.storage import fileops
from seglog.storage.files import read_file_bytes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
MASTER_ENV = "SEGLOG_SPARK_MASTER"

#: Settings of the embedded session (a user's ``configs`` override them).
EMBEDDED_CONFIGS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.shuffle.partitions": "4",
}


def check_spark_available() -> None:
    """Raise :class:`SparkUnavailableError` naming the fix when pyspark or Java is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailableError(
            f"the Spark pipeline needs pyspark and pyarrow ({exc}); install them with "
            "`pip install 'seglog[spark]'` (make install does)"
        ) from exc
    java_home = os.environ.get("JAVA_HOME")
    java = (
        os.path.join(java_home, "bin", "java")
        if java_home and os.path.exists(os.path.join(java_home, "bin", "java"))
        else shutil.which("java")
    )
    if java is None:
        raise SparkUnavailableError(
            "Spark needs Java 17 or newer and no `java` was found on PATH or in JAVA_HOME; "
            "install it (Debian/Ubuntu: `sudo apt-get install openjdk-17-jre-headless`) "
            "or set JAVA_HOME"
        )


def embedded_session(
    master: str | None = None,
    *,
    app_name: str = "seglog",
    configs: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session (``local[*]`` by default) with the ``seglog`` source registered."""
    check_spark_available()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(
        master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    ).appName(app_name)
    settings = {**EMBEDDED_CONFIGS, **(configs or {})}
    java_options = f"-Dlog4j2.configurationFile={quiet_log_config()}"
    settings[JAVA_OPTIONS] = f"{java_options} {settings.get(JAVA_OPTIONS, '')}".strip()
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


QUIET_LOG4J2 = """\
# seglog's embedded Spark: errors only, on stderr (seglog.spark.session)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def quiet_log_config() -> str:
    """Path of the errors-only log4j2 file, written to the temporary directory when missing
    or different (through :mod:`seglog.storage`: a per-process temporary name renamed into
    place, so two commands starting at once never read a half-written file)."""
    path = Path(tempfile.gettempdir()) / f"seglog-log4j2-{os.getuid()}.properties"
    content = QUIET_LOG4J2.encode("utf-8")
    try:
        if read_file_bytes(path, max_bytes=len(content)) == content:
            return str(path)
    except UnreadableFileError:
        pass  # missing, unreadable or another size: write it
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fileops.write_new_file(partial, content)
    fileops.replace(partial, path)
    return str(path)


def register(session: SparkSession) -> None:
    """Register seglog's data source (format name ``seglog``) on ``session``.

    Also turns on ``spark.sql.python.filterPushdown.enabled`` for the session: the source's
    reader overrides ``pushFilters``, and with the flag off Spark fails every query of such
    a reader (``DATA_SOURCE_PUSHDOWN_DISABLED``) instead of skipping pushdown.
    """
    from seglog.spark.source import SeglogDataSource

    session.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    session.dataSource.register(SeglogDataSource)
