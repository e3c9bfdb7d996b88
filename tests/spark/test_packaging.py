"""Packaging: ``seglog.spark`` is the only package that imports pyspark.

``lint-imports`` checks the static imports of the layers (pyproject.toml); this checks what
actually happens at run time, in a fresh interpreter: importing every other seglog module
and running a non-Spark ``seglog`` command loads no ``pyspark`` module.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHECK = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    import seglog
    names = []
    for info in pkgutil.walk_packages(seglog.__path__, "seglog."):
        if info.name == "seglog.spark" or info.name.startswith("seglog.spark."):
            continue
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
        names.append(info.name)
    from seglog.cli.main import main
    try:
        main(["--help"])
    except SystemExit:
        pass
    loaded = sorted(m for m in sys.modules if m == "pyspark" or m.startswith("pyspark."))
    print(len(names), loaded)
    """
)


def test_only_seglog_spark_imports_pyspark() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    count, loaded = result.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) > 50  # every module of every layer was imported
    assert loaded == "[]", f"pyspark loaded outside seglog.spark: {loaded}"
