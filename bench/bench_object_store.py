"""Reading log directories in object storage, against a loopback S3 API (moto's server).

Contenders, interleaved round-robin (bench/common.py), on one log directory uploaded to a
bucket of an in-process ``ThreadedMotoServer`` on 127.0.0.1:

* ``seam``: seglog's read path, :func:`seglog.storage.log_dir_mirror.mirror` of the whole
  directory into an emptied cache (ranged reads of 8 MiB through ``pyarrow.fs``, the size
  check, the temporary file and rename);
* ``pyarrow whole``: the peer, ``pyarrow.fs`` reading every object of the same listing whole
  (``open_input_file(...).read()``, one large read per object) into memory.

Goal (issue 19): the seam >= 0.8x the peer's bytes/s. And, with ``--spark``: the Spark source's
rows/s over ``s3://`` (a cold mirror each run) vs over the local directory (goal >= 0.5x).

What the loopback server itself costs: moto 5.2 copies the *whole object* for every ranged
GET, so a 64 MiB segment read in 8 MiB ranges costs moto 8 copies of 64 MiB; the peer's one
whole read costs one. Both rows include that; the ``moto floor`` line reports what a single
whole GET of every object costs, which neither contender can beat.

Run: ``.venv/bin/python -m bench.bench_object_store [--size-mb 256] [--repeat 3] [--spark]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import Spread, machine_info, measure_interleaved, write_results

VALUE_BYTES = 100


def _build_log(root: Path, size_mb: int) -> int:
    """One topic of two partitions, ``size_mb`` MiB in all, 64 MiB segments; bytes written."""
    from seglog.clock import ManualClock
    from seglog.engine.log_manager import open_log_dirs
    from seglog.format.builder import BatchBuilder

    clock = ManualClock(1_700_000_000_000)
    with open_log_dirs([root], clock=clock) as manager:
        manager.create_topic("bench", 2, configs={"segment.bytes": str(64 * 1024 * 1024)})
        value = b"v" * VALUE_BYTES
        for partition in (0, 1):
            log = manager.get_log("bench", partition)
            while log.size_bytes() < size_mb * 1024 * 1024 // 2:
                builder = BatchBuilder()
                for i in range(1000):
                    builder.append(clock.now_ms(), b"k%d" % i, value)
                log.append(builder.build())
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print a Markdown table; write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=256, help="log size (default 256)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--spark", action="store_true", help="also the Spark source")
    parser.add_argument("--quick", action="store_true", help="32 MiB, 1 round (smoke run)")
    args, _others = parser.parse_known_args(argv)
    size_mb = 32 if args.quick else args.size_mb
    repeat = 1 if args.quick else args.repeat

    import boto3
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    from seglog.storage.log_dir_mirror import mirror, mirror_root
    from seglog.storage.object_store import ObjectLocation
    from seglog.storage.remote_copy_store import S3Settings

    os.environ.update(
        {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    )
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="seglog-bench-objstore-"))
    os.environ["SEGLOG_MIRROR_DIR"] = str(tmp / "mirror")
    try:
        data = tmp / "data"
        total = _build_log(data, size_mb)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="bench")
        for path in sorted(data.rglob("*")):
            if path.is_file():
                client.upload_file(str(path), "bench", f"logs/{path.relative_to(data)}")
        settings = S3Settings(endpoint_url=endpoint, region="us-east-1")
        location = ObjectLocation("s3://bench/logs", settings)
        listing = location.list_files()
        filesystem = pafs.S3FileSystem(
            endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1"
        )

        def seam() -> object:
            shutil.rmtree(mirror_root(location), ignore_errors=True)
            root = mirror(location)
            return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())

        def peer() -> object:
            read = 0
            for item in listing:
                with filesystem.open_input_file(f"bench/logs/{item.relative}") as source:
                    read += len(source.read())
            return read

        contenders: dict[str, Callable[[], object]] = {"seam": seam, "pyarrow whole": peer}
        if args.spark:
            from seglog.spark.session import embedded_session

            spark = embedded_session("local[2]", app_name="seglog-bench-objstore")

            def count(path: str) -> Callable[[], object]:
                def run() -> object:
                    if path.startswith("s3://"):
                        shutil.rmtree(mirror_root(location), ignore_errors=True)
                    reader: Any = spark.read.format("seglog").option("path", path)
                    reader = reader.option("subscribe", "bench")
                    for key, value in {
                        **settings.as_options(),
                        "s3.access.key": "bench",
                        "s3.secret.key": "bench",
                    }.items():
                        reader = reader.option(key, value)
                    return reader.load().select("offset").count()

                return run

            contenders["spark local"] = count(str(data))
            contenders["spark s3"] = count("s3://bench/logs")

        def check(name: str, result: object) -> None:
            if name in ("seam", "pyarrow whole") and result != total:
                raise AssertionError(f"{name} read {result} bytes, not {total}")

        samples = measure_interleaved(
            contenders, repeat=repeat, warmup=1, min_sample_s=0.0, max_calls=1, check=check
        )
        rows = int(contenders["spark local"]()) if args.spark else 0
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    mib = total / 1024 / 1024
    print(f"log: {mib:.0f} MiB in {len(listing)} objects; moto on {endpoint}\n")
    print("| contender | wall s, median [min..max] | MiB/s or rows/s |")
    print("|---|---|---|")
    results: dict[str, Any] = {}
    medians = {}
    for name, entry in samples.items():
        spread = Spread.of(entry.wall_s)
        medians[name] = spread.median
        rate = (
            f"{rows / spread.median:,.0f} rows/s"
            if name.startswith("spark")
            else (f"{mib / spread.median:,.0f} MiB/s")
        )
        results[name] = {"wall_s": entry.wall_s, "median_s": spread.median}
        print(f"| {name} | {spread.median:.2f} [{spread.min:.2f}..{spread.max:.2f}] | {rate} |")
    seam_ratio = medians["pyarrow whole"] / medians["seam"]
    print(f"\nseam / pyarrow whole (bytes/s): **{seam_ratio:.2f}x** (goal >= 0.8x)")
    if args.spark:
        spark_ratio = medians["spark local"] / medians["spark s3"]
        print(f"Spark source s3 / local (rows/s): **{spark_ratio:.2f}x** (goal >= 0.5x)")
        results["spark_ratio"] = spark_ratio
    results["seam_ratio"] = seam_ratio
    path = write_results(
        "object_store",
        {"machine": machine_info(), "size_mb": size_mb, "repeat": repeat, "results": results},
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
