"""One Spark session for the whole test run (spec/spark.md §5), local[2], stopped at the end.

Every test in this folder is marked ``spark``. pyspark, pyarrow and Java are part of
``make install`` (the ``spark`` extra) and of the machine CI runs on, so they are required
here, not skipped: a missing one fails the run with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seglog.spark.session import embedded_session

TEST_CONFIGS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    # C1-only JIT: the JVM starts faster; tests are short (spec/spark.md §5)
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = embedded_session("local[2]", app_name="seglog-tests", configs=TEST_CONFIGS)
    yield session
    session.stop()
