"""Run every benchmark of the suite in turn (the Makefile's ``bench`` target).

Each benchmark times seglog beside its peers in the same process and prints Markdown tables
with ratios; the raw samples go to ``bench/results/*.json`` (git-ignored). Arguments are
passed to every benchmark, e.g. ``--quick`` for a smoke run.

Run: ``.venv/bin/python -m bench.run_all [--quick] [--size-mb N] [--repeat N]``. ``--size-mb``
means MB per segment to ``bench_format``, MB appended per sample to ``bench_storage``, MiB of
dirty log to ``bench_cleaner``, MiB of original log to ``bench_compacted`` and MiB of the
served log to ``bench_serve_fetch``; each benchmark
ignores (``bench_storage``, ``bench_cleaner``, ``bench_compacted``) or rejects
(``bench_format``) the others' own options.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/run_all.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    bench_cleaner,
    bench_cli_consume,
    bench_cli_produce,
    bench_cli_startup,
    bench_compacted,
    bench_format,
    bench_hash,
    bench_object_store,
    bench_read_committed,
    bench_serve_fetch,
    bench_serve_latency,
    bench_serve_produce,
    bench_serve_security,
    bench_serve_txn,
    bench_spark_compaction,
    bench_spark_source,
    bench_storage,
    bench_transactions,
    bench_txn_cleaner,
)

BENCHMARKS: dict[str, Callable[[Sequence[str] | None], int]] = {
    "format": bench_format.main,
    "storage": bench_storage.main,
    "cleaner": bench_cleaner.main,
    "compacted": bench_compacted.main,
    "hash": bench_hash.main,
    "spark_source": bench_spark_source.main,
    "spark_compaction": bench_spark_compaction.main,
    "cli_startup": bench_cli_startup.main,
    "cli_consume": bench_cli_consume.main,
    "object_store": bench_object_store.main,
    "cli_produce": bench_cli_produce.main,
    "transactions": bench_transactions.main,
    "txn_cleaner": bench_txn_cleaner.main,
    "read_committed": bench_read_committed.main,
    "serve_produce": bench_serve_produce.main,
    "serve_fetch": bench_serve_fetch.main,
    "serve_latency": bench_serve_latency.main,
    "serve_security": bench_serve_security.main,
    "serve_txn": bench_serve_txn.main,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run each benchmark with ``argv``; the exit status is the first failure's, else 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    status = 0
    for name, run in BENCHMARKS.items():
        print(f"\n=== bench {name} ===\n", flush=True)
        result = run(args)
        status = status or result
    return status


if __name__ == "__main__":
    raise SystemExit(main())
