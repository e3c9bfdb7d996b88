"""Benchmark: the seglog Spark source against Spark's Python-source transport limit.

Goal (issue 7): the seglog source reads at **>= 60 %** of the rows/s of a Spark Python data
source that yields the same rows from **prebuilt** Arrow record batches, in the same run.

**Workload.** One topic of 4 partitions, ``--records`` records in all (default 1,000,000;
``--quick``: 20,000), spread evenly: 16-byte keys and 100-byte JSON-like values from
``bench.common.generate_records`` (deterministic), CreateTime timestamps, appended through
seglog's ``LogManager`` (uncompressed producer-style batches), then the manager is closed
cleanly. Built once per run in a scratch directory (``--workdir``), removed at the end.

**Contenders**, each one Spark query ``df.write.format("noop").mode("overwrite").save()``
over all 4 partitions in the same session (``local[2]``, default JIT; spec/spark.md §0),
timed with :func:`bench.common.measure_interleaved` (round-robin, 1 untimed warm-up round,
then ``--repeat`` rounds; median [min..max] of wall seconds; the driver's CPU time is not
the work, which runs in the JVM and in Spark's Python workers, so only wall time counts):

1. *seglog source*: ``spark.read.format("seglog").option("path", DIR)
   .option("subscribe", TOPIC)``: planning opens the directory read-only, each task opens
   its partition, reads 8 MiB at a time, decodes with ``scan_columns`` and builds 10k-row
   Arrow batches (:mod:`seglog.spark.arrow_reader`).
2. *prebuilt Arrow (transport limit)*: a Python data source (format ``seglogbenchprebuilt``)
   with one input partition per topic-partition whose ``read()`` memory-maps an Arrow IPC
   file holding that partition's rows **as the seglog reader produced them** (same schema,
   same 10k-row batches, written before timing) and yields its batches: zero-copy, no
   decoding, so what remains is Spark's per-query planning and the Arrow transport from the
   Python worker to the JVM.

Both are checked once before timing: same row count and the same sums of ``offset`` and of
``length(value)``. Ratio = seglog rows/s / prebuilt rows/s (medians), and the same for the
worst and best pairing of samples.

Run: ``.venv/bin/python -m bench.bench_spark_source [--records N] [--repeat 3]
[--workdir DIR] [--quick]``. Results go to ``bench/results/spark_source-*.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_spark_source.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Spread,
    format_ratio,
    generate_records,
    machine_info,
    measure_interleaved,
    source_state,
    write_results,
)

TOPIC = "bench-source"
PARTITIONS = 4
VALUE_BYTES = 100
GOAL = 0.60
SEGLOG = "seglog source"
PREBUILT = "prebuilt Arrow (transport limit)"
PEER_FORMAT = "seglogbenchprebuilt"
MEASURED_SOURCES = ("src/seglog/spark", "src/seglog/format", "src/seglog/kernels")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options (unknown ones, meant for other benchmarks, are ignored)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    if args.quick:
        args.records = min(args.records, 20_000)
        args.repeat = 1
    args.records -= args.records % PARTITIONS
    return args


def build_log(data: Path, records: int) -> dict[str, Any]:
    """The workload: ``records`` records over ``PARTITIONS`` partitions of ``TOPIC``."""
    from seglog.engine.log_manager import open_log_dirs

    started = time.perf_counter()
    generated = generate_records(records, VALUE_BYTES)
    with open_log_dirs([data]) as manager:
        manager.create_topic(TOPIC, PARTITIONS)
        for partition in range(PARTITIONS):
            mine = generated[partition::PARTITIONS]
            manager.get_log(TOPIC, partition).append_records(
                (key, value, (), timestamp) for timestamp, key, value in mine
            )
    size = sum(f.stat().st_size for f in data.rglob("*.log"))
    return {"records": records, "log_bytes": size, "build_s": time.perf_counter() - started}


def write_prebuilt(data: Path, out: Path, records_each: int) -> list[str]:
    """One Arrow IPC file per partition with the rows the seglog reader yields."""
    import pyarrow as pa

    from seglog.spark.arrow_reader import RangeRequest, read_range
    from seglog.spark.schema import arrow_read_schema

    files = []
    for partition in range(PARTITIONS):
        path = out / f"prebuilt-{partition}.arrow"
        request = RangeRequest((str(data),), None, TOPIC, partition, 0, records_each)
        with (
            pa.OSFile(str(path), "wb") as sink,
            pa.ipc.new_file(sink, arrow_read_schema(False)) as writer,
        ):
            for batch in read_range(request):
                writer.write_batch(batch)
        files.append(str(path))
    return files


def prebuilt_source() -> type:
    """The peer: a Python data source yielding batches of memory-mapped IPC files."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from seglog.spark.schema import read_schema_ddl

    class PrebuiltReader(DataSourceReader):
        def __init__(self, files: list[str]) -> None:
            self.files = files

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(f) for f in self.files]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            import pyarrow as pa

            with pa.memory_map(partition.value) as source:
                reader = pa.ipc.open_file(source)
                for index in range(reader.num_record_batches):
                    yield reader.get_batch(index)

    class PrebuiltSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return PEER_FORMAT

        def schema(self) -> str:
            return read_schema_ddl(False)

        def reader(self, schema: Any) -> PrebuiltReader:
            return PrebuiltReader(self.options["files"].split(","))

    return PrebuiltSource


def _check(spark: Any, frames: dict[str, Any], records: int) -> dict[str, Any]:
    """Same rows from both contenders: count, sum(offset), sum(length(value))."""
    from pyspark.sql import functions as f

    figures = {}
    for name, df in frames.items():
        row = df.agg(
            f.count("*").alias("rows"),
            f.sum("offset").alias("offsets"),
            f.sum(f.length("value")).alias("value_bytes"),
        ).collect()[0]
        figures[name] = row.asDict()
    first, second = figures.values()
    if first != second or first["rows"] != records:
        raise AssertionError(f"the contenders disagree: {figures} (expected {records} rows)")
    return figures[SEGLOG]


def run(spark: Any, argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The benchmark in ``spark`` (an existing session); returns the JSON payload."""
    import pyspark

    args = parse_args(argv)
    # The peer's classes are local to prebuilt_source(), so cloudpickle ships them by value
    # (Spark's workers cannot import `bench`, which is not installed).
    info = machine_info()
    info["source"] = source_state(MEASURED_SOURCES)
    info["pyspark"] = pyspark.__version__
    info["master"] = spark.sparkContext.master
    workdir = Path(tempfile.mkdtemp(prefix="seglog-bench-spark-source-", dir=args.workdir))
    try:
        data = workdir / "data"
        workload = build_log(data, args.records)
        files = write_prebuilt(data, workdir, args.records // PARTITIONS)
        spark.dataSource.register(prebuilt_source())
        frames = {
            SEGLOG: spark.read.format("seglog")
            .option("path", str(data))
            .option("subscribe", TOPIC)
            .load(),
            PREBUILT: spark.read.format(PEER_FORMAT).option("files", ",".join(files)).load(),
        }
        check = _check(spark, frames, args.records)

        def query(df: Any) -> Any:
            return lambda: df.write.format("noop").mode("overwrite").save()

        samples = measure_interleaved(
            {name: query(df) for name, df in frames.items()},
            repeat=args.repeat,
            warmup=1,
            min_sample_s=0.0,
            max_calls=1,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rates = {name: Spread.of(s.wall_s).rate(args.records) for name, s in samples.items()}
    mine, peer = rates[SEGLOG], rates[PREBUILT]
    ratio = {
        "median": mine.median / peer.median,
        "min": mine.min / peer.max,
        "max": mine.max / peer.min,
    }
    payload: dict[str, Any] = {
        "machine": info,
        "command": " ".join(["bench.bench_spark_source", *(argv or [])]),
        "workload": {**workload, "partitions": PARTITIONS, "value_bytes": VALUE_BYTES},
        "check": check,
        "rows": {
            name: {"wall_s": s.wall_s, "rows_per_s": vars(rates[name])}
            for name, s in samples.items()
        },
        "ratio": ratio,
        "goal": {"ratio": GOAL, "is_met": ratio["median"] >= GOAL},
    }
    return payload


def report(payload: dict[str, Any]) -> str:
    """Markdown tables of the payload."""
    w = payload["workload"]
    lines = [
        "## workload\n",
        f"{w['records']:,} records of {w['value_bytes']} B values in {w['partitions']} "
        f"partitions, {w['log_bytes'] / 1e6:.1f} MB of log (built in {w['build_s']:.1f} s)\n",
        "## throughput (rows/s by wall time; median [min..max])\n",
        "| contender | s per query | rows/s |",
        "|---|---|---|",
    ]
    for name, row in payload["rows"].items():
        wall = Spread.of(row["wall_s"])
        rate = Spread(**row["rows_per_s"])
        lines.append(
            f"| {name} | {wall.median:.2f} [{wall.min:.2f}..{wall.max:.2f}] | "
            f"{rate.median / 1e6:.2f}M [{rate.min / 1e6:.2f}M..{rate.max / 1e6:.2f}M] |"
        )
    r = payload["ratio"]
    met = "yes" if payload["goal"]["is_met"] else "NO"
    lines += [
        "\n## goals\n",
        "| goal | ratio, median [worst..best pairing] | met |",
        "|---|---|---|",
        f"| seglog source >= {GOAL:.0%} of the prebuilt-Arrow source | "
        f"**{format_ratio(r['median'])}** [{format_ratio(r['min'])}..{format_ratio(r['max'])}] "
        f"| {met} |",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Start a session (``local[2]``), run, print Markdown, write JSON to bench/results/."""
    from seglog.spark.session import embedded_session

    args = list(sys.argv[1:] if argv is None else argv)
    spark = embedded_session("local[2]", app_name="seglog-bench-spark-source")
    try:
        payload = run(spark, args)
    finally:
        spark.stop()
    print(
        f"# seglog Spark source benchmark: {payload['machine']['date_utc']} UTC, "
        f"load {os.getloadavg()}\n"
    )
    print(report(payload))
    path = write_results("spark_source", payload)
    print(f"\nraw samples: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
