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
