"""Key hashing for the cleaner's offset map: Kafka's MD5 (``hashlib``, one call per key, as a
Python cleaner would have to call it) beside seglog's keyed SipHash-2-4-128 (one numba call
over a whole column of keys), in the same run.

Run: ``.venv/bin/python -m bench.bench_hash [--keys N] [--repeat N] [--quick]``. Prints the
median M keys/s (process time) of each and the ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from seglog.core.offset_map import OffsetMap


def main(argv: Sequence[str] | None = None) -> int:
    """Time both hashes, interleaved; print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    count = 20_000 if args.quick else args.keys
    keys = [b"key%09d" % i for i in range(count)]
    data = np.frombuffer(b"".join(keys), dtype=np.uint8).copy()
    positions = np.arange(count, dtype=np.int64) * 12
    lengths = np.full(count, 12, dtype=np.int32)
    offset_map = OffsetMap(1 << 20, 0.9)
    offset_map.hash_columns(data, positions[:2], lengths[:2])  # compile / load outside the clock
    samples: dict[str, list[float]] = {"md5 (hashlib, per key)": [], "SipHash-128 (numba)": []}
    for _ in range(1 if args.quick else args.repeat):
        start = time.process_time()
        for key in keys:
            hashlib.md5(key).digest()
        samples["md5 (hashlib, per key)"].append(time.process_time() - start)
        start = time.process_time()
        offset_map.hash_columns(data, positions, lengths)
        samples["SipHash-128 (numba)"].append(time.process_time() - start)
    rates = {name: count / statistics.median(times) / 1e6 for name, times in samples.items()}
    print(f"| hash of {count:,} 12-byte keys | M keys/s (cpu, median) |")
    print("|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:.1f} |")
    ratio = rates["SipHash-128 (numba)"] / rates["md5 (hashlib, per key)"]
    print(f"\nSipHash-128 / md5: **{ratio:.1f}x**")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
