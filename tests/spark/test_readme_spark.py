"""The README's Spark example runs as written (on the shared session: ``embedded_session()``
returns the running one)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_spark_example_runs(spark: Any, capsys: Any) -> None:
    (example,) = re.findall(r"```py\n(.*?)```", README.read_text(), re.S)
    namespace: dict[str, Any] = {}
    exec(compile(example, str(README), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "500 7"
    assert out[1] == "500"
    assert namespace["rows"] == 7
    assert all(r.error is None for r in namespace["results"])
    assert sum(row["records"] for row in namespace["stats"].collect()) <= 500


def test_readme_cluster_job_runs_under_spark_submit(tmp_path: Path) -> None:
    """The README's ``spark-submit`` job, submitted to ``local[1]`` (a cluster master takes
    the same code): a separate driver process that only calls ``register``."""
    import os
    import subprocess
    import sys

    from seglog.engine.log_manager import open_log_dirs

    block = README.read_text().split("**On a cluster**", 1)[1]
    (job,) = re.findall(r"```text\n(.*?)```", block, re.S)[:1]
    (tmp_path / "my_job.py").write_text(job)
    data = tmp_path / "kafka-data"
    with open_log_dirs([data]) as manager:
        manager.create_topic("prices", 2)
        for partition in range(2):
            manager.get_log("prices", partition).append_records(
                [(b"k%d" % i, b"v") for i in range(5 + partition)]
            )
    submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run(
        [str(submit), "--master", "local[1]", "my_job.py", str(data)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "11"
