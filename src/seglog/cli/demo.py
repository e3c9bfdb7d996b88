"""``seglog demo``: the main job on an embedded default (what ``make run`` runs).

It runs the whole system once on a realistic workload and says what
happened, in a data directory laid out exactly like a Kafka broker's:

1. **prepare**: open (or create) the data directory; the demo's own topics
   (``stock-prices``, ``page-events``, ``ticker-summary``) left by an earlier run are
   deleted and created again, so the demo can run any number of times; any other topic
   there is left alone;
2. **produce** with Kafka's default partitioner (murmur2 of the key), in producer-sized
   batches: ``stock-prices`` (3 partitions, ``cleanup.policy=compact``, lz4, small segments)
   gets price updates keyed by ticker, and a tombstone for each delisted ticker;
   ``page-events`` (2 partitions, ``cleanup.policy=delete``, zstd) gets page views keyed by
   user: first a late backfill (a third of them, dated three days ago, then a roll), then
   live traffic;
3. **roll** every active segment, so all data is in closed segments;
4. **retention** (``LogManager.run_retention``): ``page-events`` loses its oldest segments by
   ``retention.bytes`` and by ``retention.ms``; each deletion is reported with its rule;
5. **compact**: the Pulsar-style compacted copy of ``stock-prices`` beside the untouched log
   (the latest record per ticker up to the compaction horizon), and a read-compacted read;
6. **clean**: one in-process Kafka-style cleaner round on ``stock-prices``, rewriting the log
   in place (the latest record per ticker is kept; the delisted tickers' tombstones are kept,
   stamped with a delete horizon ``delete.retention.ms`` ahead);
7. **more updates**, then a roll (``stock-prices`` becomes dirty again);
8. **spark** (unless ``--no-spark``): the Spark pipeline in local mode: read
   ``stock-prices`` with the ``seglog`` source, write a derived ``ticker-summary`` topic
   with the sink, the distributed compaction job (the second cleaning round: it also drops
   the expired tombstones), export ``stock-prices`` as a Parquet table beside the data
   directory (``<data-dir>-exports/stock-prices``; never inside it: Kafka refuses a log
   directory holding a directory that is not a partition), and the per-partition
   statistics. With ``--no-spark`` the second cleaning round runs in process;
9. **verify** every topic as ``seglog verify`` does (read-only), then print a summary: sizes,
   segments, records and keys before and after, dirty ratios, what retention and the cleaner
   deleted and why, the compacted copy's horizon, the Spark figures and each step's time
   (``--json``: one JSON document instead).

Exit status: 0 when every step ran and every topic verified OK, 1 otherwise (a Spark that
cannot start, e.g. without Java, is an error naming what to install; ``--no-spark`` skips
that step and the summary says so).

Why this module is longer than the house's ~500 lines: it is a scripted walk through the whole
system in numbered stages, each printing what it did; it is read top to bottom, like the
README's tour.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import string
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog.cli.common import EXIT_FAILURE, EXIT_OK, positive_int
from seglog.cli.progress import ProgressBar
from seglog.cli.text import plural
from seglog.cli.verify import CleanerCheckpoints, verify_partition
from seglog.engine.cleaning.log_cleaner import CleanResult
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.engine.producer import Producer, ProduceRecord
from seglog.errors import InvalidConfigError, SeglogError, SparkUnavailableError
from seglog.format.columnar import scan_columns
from seglog.format.reader import EndKind

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

PRICES = "stock-prices"
EVENTS = "page-events"
SUMMARY = "ticker-summary"  # written by the Spark step
#: Topics the demo owns in its data directory: deleted and created again on each run.
DEMO_TOPICS = (PRICES, EVENTS, SUMMARY)
# The Spark half lives in seglog.spark.demo, loaded by name with importlib: seglog.cli may
# not import seglog.spark (two independent layers, docs/architecture.md), like the
# `seglog spark` command in main.py's table. Spark's lock-taking steps (the sink's commit,
# the compaction job) run while this command holds no log manager open.
SPARK_PLUGIN = "seglog.spark.demo"

PRICE_PARTITIONS = 3
EVENT_PARTITIONS = 2
# Short, so the second cleaning round removes the delisted tickers' tombstones (Kafka's
# default keeps them a day, for consumers to see the deletes).
DELETE_RETENTION_MS = 200
PRICE_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(128 * 1024),
    "compression.type": "lz4",
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
}
EVENT_RETENTION_MS = 2 * 24 * 3600 * 1000
EVENT_CONFIGS = {
    "cleanup.policy": "delete",
    "segment.bytes": str(64 * 1024),
    "compression.type": "zstd",
    "retention.ms": str(EVENT_RETENTION_MS),
    "retention.bytes": str(384 * 1024),
}
BACKFILL_AGE_MS = 3 * 24 * 3600 * 1000  # older than retention.ms: deleted by time
BATCH_RECORDS = 500  # records per producer batch (about a producer's batch.size)
UPDATE_INTERVAL_MS = 10
PROGRESS_EVERY = 1000
REAL_TICKERS = (
    "AAPL", "MSFT", "GOOG", "AMZN", "NVDA", "META", "TSLA", "BRK.B", "JPM", "V",
    "UNH", "XOM", "JNJ", "WMT", "MA", "PG", "HD", "CVX", "KO", "PEP",
)  # fmt: skip
PAGES = ("/", "/quote", "/chart", "/news", "/portfolio", "/watchlist", "/login", "/search")
FIRST_ROUND_SHARE = 0.8  # of the price updates before the first cleaning round
DELISTED_SHARE = 0.05
MAX_TICKERS = 20_000
SUMMARY_WIDTH = 100  # where the summary wraps its long lists (step times)

NEXT_COMMANDS = (
    "seglog --data-dir {data} topics describe stock-prices",
    "seglog --data-dir {data} consume stock-prices --read-compacted --print-key --max-records 5",
    "seglog --data-dir {data} cleaner status",
    "seglog --data-dir {data} verify stock-prices",
    "seglog --data-dir {data} report --out report.html",
    "seglog dump-log --print-data-log {data}/stock-prices-0/*.log | head -20",
)


def register(subparsers: Subparsers) -> None:
    """Add ``seglog demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="run the main job: produce, roll, retain, clean, compact, Spark, verify, summarise",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data-dir", default="data", help="the demo's data directory (default: data)"
    )
    parser.add_argument(
        "--updates",
        type=positive_int,
        default=150_000,
        help="stock price updates to produce (default: %(default)s)",
    )
    parser.add_argument(
        "--events",
        type=positive_int,
        default=60_000,
        help="page events to produce (default: %(default)s)",
    )
    parser.add_argument(
        "--tickers",
        type=positive_int,
        default=300,
        help=f"distinct tickers, at most {MAX_TICKERS} (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    parser.add_argument(
        "--export-dir",
        default=None,
        help="where the Spark step writes Parquet (default: <data-dir>-exports, beside it)",
    )
    parser.add_argument(
        "--no-spark",
        action="store_true",
        help="skip the Spark step (the second cleaning round then runs in process)",
    )
    parser.add_argument(
        "--master", default=None, help="Spark master (default: $SEGLOG_SPARK_MASTER or local[*])"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


# --- the workload -----------------------------------------------------------------------------


def ticker_names(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct ticker symbols: the 20 real ones first, then made-up ones."""
    if count > MAX_TICKERS:
        raise InvalidConfigError(f"--tickers {count}: at most {MAX_TICKERS}")
    names = list(REAL_TICKERS[:count])
    seen = set(names)
    while len(names) < count:
        name = "".join(rng.choices(string.ascii_uppercase, k=rng.choice((3, 4))))
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


@dataclass
class PriceFeed:
    """Seed 001's stock prices: a random walk per ticker, every update a keyed record."""

    tickers: list[str]
    rng: random.Random
    start_ms: int
    prices: dict[str, float] = field(default_factory=dict)
    seq: int = 0

    def __post_init__(self) -> None:
        self.prices = {t: round(self.rng.uniform(5, 900), 2) for t in self.tickers}

    @property
    def now_ms(self) -> int:
        """The feed's clock: the timestamp of its next update."""
        return self.start_ms + self.seq * UPDATE_INTERVAL_MS

    def update(self, tickers: Sequence[str]) -> ProduceRecord:
        """One price update of a ticker drawn from ``tickers``."""
        ticker = self.rng.choice(tickers)
        price = max(self.prices[ticker] * (1 + self.rng.gauss(0, 0.002)), 0.01)
        self.prices[ticker] = price
        value = {
            "ticker": ticker,
            "price": round(price, 2),
            "volume": self.rng.randint(1, 50) * 100,
            "seq": self.seq,
        }
        record = ProduceRecord(
            value=json.dumps(value, separators=(",", ":")).encode(),
            key=ticker.encode(),
            timestamp_ms=self.now_ms,
        )
        self.seq += 1
        return record


def page_event(rng: random.Random, users: int, timestamp_ms: int) -> ProduceRecord:
    """One page view keyed by user."""
    user = f"user-{rng.randrange(users):05d}"
    value = {"user": user, "page": rng.choice(PAGES), "ms": rng.randint(20, 4000)}
    return ProduceRecord(
        value=json.dumps(value, separators=(",", ":")).encode(),
        key=user.encode(),
        timestamp_ms=timestamp_ms,
    )


def produce(
    manager: LogManager, topic: str, records: Iterator[ProduceRecord], bar: ProgressBar
) -> int:
    """Send ``records`` to ``topic`` in producer-sized batches; returns how many."""
    producer = Producer(manager, topic, max_buffered_records=BATCH_RECORDS)
    count = 0
    for record in records:
        producer.send(record)
        count += 1
        if count % PROGRESS_EVERY == 0:
            bar.advance(PROGRESS_EVERY)
    producer.flush()
    bar.advance(count % PROGRESS_EVERY)
    return count


# --- figures from the files -------------------------------------------------------------------


def log_figures(log: Log) -> dict[str, int]:
    """Records, keys and tombstones of a partition, read from its segment files."""
    keys: set[bytes] = set()
    records = tombstones = 0
    start = log.log_start_offset
    for segment in log.segments:
        if segment.size == 0:
            continue
        columns = scan_columns(segment.read_at(0, segment.size))
        if columns.end.kind is not EndKind.CLEAN:
            raise columns.end.to_error(str(segment.log_path))
        is_control = columns.batches.is_control[columns.batch_index]
        for row in range(len(columns)):
            if is_control[row] or columns.offset[row] < start:
                continue
            records += 1
            key = columns.key(row)
            if key is not None:
                keys.add(key)
                tombstones += int(columns.value_length[row] < 0)
    return {"records": records, "distinct_keys": len(keys), "tombstones": tombstones}


def dirty_ratio(manager: LogManager, topic: str) -> float | None:
    """The topic's share of cleanable bytes, as the cleaner computes it (None: not compacted)."""
    plans = manager.plan_cleaning(topic=topic)
    if not plans:
        return None
    dirty = sum(p.candidate.to_clean.cleanable_bytes for p in plans)
    total = dirty + sum(p.candidate.to_clean.clean_bytes for p in plans)
    return round(dirty / total, 4) if total else 0.0


def topic_figures(manager: LogManager, topic: str) -> dict[str, Any]:
    """Size, segments, records, keys, tombstones and dirty ratio of a topic."""
    totals = {"size_bytes": 0, "segments": 0, "records": 0, "distinct_keys": 0, "tombstones": 0}
    for partition in manager.partitions_of(topic):
        log = manager.get_log(topic, partition)
        totals["size_bytes"] += log.size_bytes()
        totals["segments"] += len(log.segments)
        for name, value in log_figures(log).items():
            totals[name] += value  # keys are partition-local: the sum is the topic's count
    return {**totals, "dirty_ratio": dirty_ratio(manager, topic)}


def clean_json(results: Sequence[CleanResult]) -> dict[str, Any]:
    """A cleaning round's per-partition figures and totals."""
    rows = [r.to_json() for r in results]
    stats = [r.stats for r in results if r.stats is not None]
    return {
        "partitions": rows,
        "errors": [r["error"] for r in rows if r["error"]],
        "messages_read": sum(s.messages_read for s in stats),
        "messages_written": sum(s.messages_written for s in stats),
        "size_before_bytes": sum(s.size_before_bytes for s in stats),
        "size_after_bytes": sum(s.size_after_bytes for s in stats),
    }


# --- the steps --------------------------------------------------------------------------------


class Steps:
    """Times each step and shows a progress bar of the steps (quiet unless on a terminal)."""

    def __init__(self, json_output: bool) -> None:
        self.json_output = json_output
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str, total: int | None = None) -> Iterator[ProgressBar]:
        """Time the block as step ``name``; yields its progress bar (``total`` units)."""
        started = time.perf_counter()
        with ProgressBar(name, total=total, json_output=self.json_output) as bar:
            yield bar
            if total is not None:
                bar.update(total)
        elapsed = time.perf_counter() - started
        self.seconds[name] = round(self.seconds.get(name, 0.0) + elapsed, 3)


def prepare_topics(manager: LogManager) -> list[str]:
    """Delete the demo's topics left by an earlier run, then create them; returns those
    deleted."""
    deleted = []
    for name in DEMO_TOPICS:
        if name in manager.topic_names():
            try:
                manager.delete_topic(name)
            except SeglogError as exc:
                raise InvalidConfigError(
                    f"the data directory holds a topic {name!r} seglog demo cannot replace "
                    f"({exc}); remove its directories or give another --data-dir"
                ) from exc
            deleted.append(name)
    manager.create_topic(PRICES, PRICE_PARTITIONS, PRICE_CONFIGS)
    manager.create_topic(EVENTS, EVENT_PARTITIONS, EVENT_CONFIGS)
    return deleted


def roll_all(manager: LogManager, topic: str) -> int:
    """Roll every partition's active segment; returns how many were rolled."""
    rolled = 0
    for partition in manager.partitions_of(topic):
        log = manager.get_log(topic, partition)
        if log.active_segment.size:
            log.roll()
            rolled += 1
    return rolled


def load_spark_plugin() -> Any:
    """:mod:`seglog.spark.demo`, loaded by name (``seglog.cli`` never imports ``seglog.spark``);
    raises :class:`SparkUnavailableError` naming what to install when Spark cannot run."""
    try:
        plugin = importlib.import_module(SPARK_PLUGIN)
        plugin.check_available()
    except (ImportError, SparkUnavailableError) as exc:
        raise SparkUnavailableError(
            f"{exc}; or run `seglog demo --no-spark` to skip the Spark step"
        ) from exc
    return plugin


def export_dir_of(args: argparse.Namespace, data_dir: Path) -> Path:
    """``--export-dir``, else ``<data-dir>-exports`` beside the data directory."""
    if args.export_dir:
        return Path(args.export_dir).absolute()
    return data_dir.with_name(f"{data_dir.name}-exports")


def run(args: argparse.Namespace) -> int:
    """Run the demo (see the module docstring) and print its summary."""
    data_dir = Path(args.data_dir).absolute()
    if args.tickers > MAX_TICKERS:
        raise InvalidConfigError(f"--tickers {args.tickers}: at most {MAX_TICKERS}")
    plugin = None if args.no_spark else load_spark_plugin()  # fail before any work
    export_dir = export_dir_of(args, data_dir)
    started = time.perf_counter()
    steps = Steps(args.json)
    rng = random.Random(args.seed)
    now_ms = int(time.time() * 1000)
    tickers = ticker_names(args.tickers, rng)
    delisted_count = min(max(1, round(len(tickers) * DELISTED_SHARE)), len(tickers) - 1)
    delisted = sorted(rng.sample(tickers, delisted_count))
    listed = [t for t in tickers if t not in set(delisted)]
    first_round = max(int(args.updates * FIRST_ROUND_SHARE), 1)
    second_round = args.updates - first_round
    feed = PriceFeed(tickers, rng, start_ms=now_ms - args.updates * UPDATE_INTERVAL_MS)
    summary: dict[str, Any] = {"data_dir": str(data_dir)}

    with steps.step("prepare"):
        data_dir.mkdir(parents=True, exist_ok=True)
        manager = open_log_dirs([data_dir])
    try:
        with steps.step("prepare"):
            summary["replaced_topics"] = prepare_topics(manager)

        with steps.step("produce", total=args.updates + args.events) as bar:

            def prices() -> Iterator[ProduceRecord]:
                for i in range(first_round):
                    # Delisted tickers trade in the first half only, then get a tombstone.
                    yield feed.update(tickers if i < first_round // 2 else listed)
                for ticker in delisted:
                    yield ProduceRecord(value=None, key=ticker.encode(), timestamp_ms=feed.now_ms)

            produced = produce(manager, PRICES, prices(), bar)
            events_rng = random.Random(args.seed + 1)
            backfill = args.events // 3
            users = max(args.events // 20, 1)

            def events(first: int, end: int) -> Iterator[ProduceRecord]:
                for i in range(first, end):
                    if i < backfill:  # a late backfill: three days old
                        timestamp = now_ms - BACKFILL_AGE_MS + i * 1000
                    else:
                        timestamp = now_ms - (args.events - i) * 50
                    yield page_event(events_rng, users, timestamp)

            # The backfill arrives first and is rolled (as segment.ms would roll it), so its
            # segments hold only old events whatever the workload's size.
            produce(manager, EVENTS, events(0, backfill), bar)
            roll_all(manager, EVENTS)
            produce(manager, EVENTS, events(backfill, args.events), bar)
            summary["workload"] = {
                "tickers": len(tickers),
                "delisted": delisted,
                "price_updates": args.updates,
                "tombstones": len(delisted),
                "page_events": args.events,
                "backfilled_events": backfill,
                "records_produced": produced + args.events,
            }

        with steps.step("roll"):
            rolled = roll_all(manager, PRICES) + roll_all(manager, EVENTS)
            before = {t: topic_figures(manager, t) for t in (PRICES, EVENTS)}
            summary["rolled_segments"] = rolled

        with steps.step("retention"):
            deletions: list[dict[str, Any]] = []
            for tp, plan in manager.run_retention():
                deletions += [
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "base_offset": d.base_offset,
                        "size_bytes": d.size_bytes,
                        "rule": str(d.rule),
                        "reason": d.reason,
                    }
                    for d in plan.deletions
                ]
            summary["retention"] = {
                "deleted_segments": len(deletions),
                "deleted_bytes": sum(d["size_bytes"] for d in deletions),
                "by_rule": {
                    rule: sum(1 for d in deletions if d["rule"] == rule)
                    for rule in sorted({d["rule"] for d in deletions})
                },
                "deletions": deletions,
            }

        with steps.step("compact", total=PRICE_PARTITIONS) as bar:
            runs = manager.compact(PRICES)
            horizons = {str(tp.partition): run.horizon for tp, run in runs.items()}
            read = {}
            for partition in manager.partitions_of(PRICES):
                log = manager.get_log(PRICES, partition)
                compacted = manager.read_compacted(PRICES, partition, 0, 1 << 30)
                read[str(partition)] = {
                    "records": len(compacted),
                    "tombstones": sum(1 for r in compacted if r.value is None),
                    "log_end_offset": log.log_end_offset,
                }
                bar.advance()
            summary["compacted_copy"] = {
                "horizons": horizons,
                "records_kept": sum(r.records_kept for r in runs.values()),
                "records_read": sum(r.records_read for r in runs.values()),
                "keys": sum(r.keys for r in runs.values()),
                "copy_bytes": sum(r.copy_bytes for r in runs.values()),
                "read_compacted": read,
            }

        with steps.step("clean", total=PRICE_PARTITIONS) as bar:
            ratio_before = dirty_ratio(manager, PRICES)
            first = manager.clean_once(topic=PRICES, progress=bar.callback)
            horizon_ms = int(time.time() * 1000) + DELETE_RETENTION_MS
            summary["clean"] = {
                "dirty_ratio_before": ratio_before,
                "dirty_ratio_after": dirty_ratio(manager, PRICES),
                **clean_json(first),
            }

        with steps.step("more updates", total=second_round) as bar:
            produce(manager, PRICES, (feed.update(listed) for _ in range(second_round)), bar)
            roll_all(manager, PRICES)
            summary["more_updates"] = {
                "price_updates": second_round,
                "dirty_ratio": dirty_ratio(manager, PRICES),
            }
            latest_prices = {t: round(feed.prices[t], 2) for t in listed}
        # The second round must come after the tombstones' delete horizon (a few ms at most:
        # the steps in between take longer on any real workload).
        time.sleep(max(horizon_ms + 1 - time.time() * 1000, 0) / 1000)
        if plugin is None:
            # The second cleaning round, in process (with Spark, the compaction job does it).
            with steps.step("clean again", total=PRICE_PARTITIONS) as bar:
                second = manager.clean_once(topic=PRICES, progress=bar.callback)
                summary["second_clean"] = {"runner": "in-process cleaner", **clean_json(second)}
    finally:
        manager.close()

    if plugin is None:
        summary["spark"] = {"skipped": "--no-spark was given"}
    else:
        # No log manager is open here: the sink's commit and the compaction job take the lock.
        with steps.step("spark", total=plugin.STEP_COUNT) as bar:
            spark = plugin.run_spark_pipeline(
                data_dir,
                export_dir,
                master=args.master,
                progress=bar.callback,
            )
        summary["spark"] = spark
        summary["second_clean"] = {"runner": "Spark compaction job", **spark["compaction"]}

    with steps.step("verify"):
        with open_log_dirs([data_dir]) as manager:  # a writable open drops .deleted files
            topics = [t for t in DEMO_TOPICS if t in manager.topic_names()]
            after = {t: topic_figures(manager, t) for t in topics}
        summary["verify"] = verify_topics(data_dir, topics)
    summary["topics"] = {
        t: {"before": before.get(t), "after": after[t], "config": topic_config(t)} for t in topics
    }
    summary["latest_prices"] = dict(sorted(latest_prices.items()))  # the feed's, per listed ticker
    summary["listed_tickers"] = len(listed)
    summary["steps_seconds"] = steps.seconds
    summary["elapsed_seconds"] = round(time.perf_counter() - started, 3)
    data = args.data_dir
    summary["next"] = [c.format(data=data) for c in NEXT_COMMANDS]
    summary["ok"] = (
        summary["verify"]["ok"]
        and not summary["clean"]["errors"]
        and not summary["second_clean"]["errors"]
    )
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(summary)
    return EXIT_OK if summary["ok"] else EXIT_FAILURE


def topic_config(topic: str) -> dict[str, str]:
    """The overrides the demo gives ``topic``."""
    return {PRICES: PRICE_CONFIGS, EVENTS: EVENT_CONFIGS}.get(topic, {})


def verify_topics(data_dir: Path, topics: Sequence[str]) -> dict[str, Any]:
    """``seglog verify`` of each topic (read-only): OK or the problems, per topic."""
    result: dict[str, Any] = {"ok": True, "topics": {}}
    checkpoints = CleanerCheckpoints()
    with open_log_dirs([data_dir], read_only=True) as manager:
        for topic in topics:
            reports = [
                verify_partition(manager.get_log(topic, p), checkpoints).report
                for p in manager.partitions_of(topic)
            ]
            problems = [
                f"{p.kind} {p.path} position {p.position}: {p.message}"
                for r in reports
                for p in r.problems
            ]
            ok = all(r.ok for r in reports)
            result["topics"][topic] = {
                "ok": ok,
                "partitions": len(reports),
                "records_checked": sum(r.records_checked for r in reports),
                "problems": problems[:20],
            }
            result["ok"] = result["ok"] and ok
    return result


# --- the text summary -------------------------------------------------------------------------


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def summary_lines(s: dict[str, Any]) -> list[str]:
    """The human summary of a run."""
    w = s["workload"]
    first_round = w["price_updates"] - s["more_updates"]["price_updates"]
    out = [
        f"seglog demo: {s['data_dir']}",
        f"  workload  {w['price_updates']:,} price updates of {w['tickers']} tickers "
        f"({len(w['delisted'])} delisted with a tombstone) -> {PRICES} (compacted)",
        f"            {w['page_events']:,} page events ({w['backfilled_events']:,} backfilled, "
        f"3 days old) -> {EVENTS} (delete policy)",
    ]
    if s["replaced_topics"]:
        out.append(f"  replaced  the previous run's topics: {', '.join(s['replaced_topics'])}")
    out += [
        "",
        f"  before: produced ({first_round:,} of the price updates) and rolled, before "
        "retention and cleaning;",
        "  after:  at the end (retention, both cleaning rounds"
        f"{'' if 'skipped' in s['spark'] else ' and the Spark step'} done); dirty: the dirty "
        "ratio",
        "",
    ]
    header = f"  {'topic':<15}{'':<8}{'size':>12}{'segments':>10}{'records':>10}{'keys':>8}"
    out += [header + f"{'tombstones':>12}{'dirty':>7}"]
    for topic, t in s["topics"].items():
        for label in ("before", "after"):
            f = t[label]
            if f is None:
                continue
            out.append(
                f"  {topic if label == 'before' or t['before'] is None else '':<15}{label:<8}"
                f"{_size(f['size_bytes']):>12}{f['segments']:>10,}{f['records']:>10,}"
                f"{f['distinct_keys']:>8,}{f['tombstones']:>12,}{_ratio(f['dirty_ratio']):>7}"
            )
    r = s["retention"]
    out += [
        "",
        f"  retention deleted {plural(r['deleted_segments'], 'segment')} "
        f"({_size(r['deleted_bytes'])})",
    ]
    for d in r["deletions"]:
        out.append(
            f"    {d['topic']}-{d['partition']} segment {d['base_offset']} "
            f"({_size(d['size_bytes'])}): {d['rule']}: {readable_reason(d['reason'])}"
        )
    cc = s["compacted_copy"]
    horizons = ", ".join(f"p{p}: {h}" for p, h in cc["horizons"].items())
    read_total = sum(r["records"] for r in cc["read_compacted"].values())
    out += [
        f"  compactor Pulsar-style copy beside the log: {cc['records_read']:,} records read, "
        f"{cc['records_kept']:,} kept ({_size(cc['copy_bytes'])})",
        f"            horizons {horizons}; a read-compacted reader sees {read_total:,} records",
    ]
    c = s["clean"]
    out += [
        f"  cleaner   round 1 (in process): dirty ratio {_ratio(c['dirty_ratio_before'])} -> "
        f"{_ratio(c['dirty_ratio_after'])}; {c['messages_read']:,} -> "
        f"{c['messages_written']:,} records, {_size(c['size_before_bytes'])} -> "
        f"{_size(c['size_after_bytes'])}",
        "            (superseded prices removed; tombstones kept, with a delete horizon "
        "delete.retention.ms ahead)",
    ]
    m = s["more_updates"]
    c2 = s["second_clean"]
    out.append(
        f"            {m['price_updates']:,} more updates -> dirty ratio "
        f"{_ratio(m['dirty_ratio'])}; round 2 ({c2['runner']}): {c2['messages_read']:,} -> "
        f"{c2['messages_written']:,} records, {_size(c2['size_before_bytes'])} -> "
        f"{_size(c2['size_after_bytes'])}"
    )
    out.append("            (superseded prices and expired tombstones removed)")
    for error in [*c["errors"], *c2["errors"]]:
        out.append(f"            ERROR {error}")
    out += spark_lines(s["spark"])
    v = s["verify"]
    verdicts = ", ".join(
        f"{topic} {'OK' if t['ok'] else 'PROBLEMS'} ({t['records_checked']:,} records)"
        for topic, t in v["topics"].items()
    )
    out.append(f"  verify    {verdicts}")
    for topic, t in v["topics"].items():
        out += [f"    {topic}: {p}" for p in t["problems"]]
    timings = ", ".join(f"{name} {secs:.1f}s" for name, secs in s["steps_seconds"].items())
    out += textwrap.wrap(
        f"{s['elapsed_seconds']:.1f}s ({timings})",
        width=SUMMARY_WIDTH,
        initial_indent="  time      ",
        subsequent_indent=" " * 12,
    )
    out += ["", "Next:"]
    out += [f"  {command}" for command in s["next"]]
    return out


def spark_lines(spark: dict[str, Any]) -> list[str]:
    """The Spark part of the summary."""
    if "skipped" in spark:
        return [f"  spark     skipped: {spark['skipped']}"]
    e = spark["export"]
    out = [
        f"  spark     {spark['master']}: read {spark['rows_read']:,} records of {PRICES} (the "
        f"cleaned log and the new updates) with the source:",
        f"            {spark['latest']['tickers']} listed tickers, "
        f"{spark['latest']['delisted']} delisted; wrote "
        f"{spark['ticker_summary']['rows_written']} rows to {SUMMARY} with the sink",
        "            steps: "
        + ", ".join(f"{k} {v:.1f}s" for k, v in spark["steps_seconds"].items()),
        f"            export: {e['rows']:,} rows (one per listed ticker) -> {e['path']}",
        "            partition statistics after the job (seglog spark stats has every column):",
    ]
    out += [f"              {line}" for line in stats_table_lines(spark["stats"])]
    return out


#: The columns of ``seglog spark stats`` the summary shows (the rest are in ``--json``).
STATS_COLUMNS = (
    ("topic", "topic"),
    ("partition", "partition"),
    ("records", "records"),
    ("distinct_keys", "keys"),
    ("duplicates", "duplicates"),
    ("tombstones", "tombstones"),
    ("dirty_ratio", "dirty"),
    ("size_bytes", "size"),
    ("segments", "segments"),
)


def stats_table_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A narrow table of the Spark statistics rows (:data:`STATS_COLUMNS`), sizes readable."""

    def cell(name: str, value: Any) -> str:
        if value is None:
            return "-"
        if name == "size_bytes":
            return _size(int(value))
        if name == "dirty_ratio":
            return _ratio(float(value))
        return f"{value:,}" if isinstance(value, int) else str(value)

    table = [[cell(name, row.get(name)) for name, _ in STATS_COLUMNS] for row in rows]
    header = [title for _, title in STATS_COLUMNS]
    widths = [max([len(h), *(len(line[i]) for line in table)]) for i, h in enumerate(header)]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()
        for cells in (header, *table)
    ]


# An exact figure followed by its readable form in a retention reason: "172800000 (2.0 days)".
_EXACT_THEN_READABLE = re.compile(r"\b\d+ (?:ms |bytes )?\(([^()]*)\)")


def readable_reason(reason: str) -> str:
    """A retention reason with only the readable form of each figure (the JSON summary keeps
    the exact ones): ``... is 2.8 days old, over retention.ms 2.0 days``."""
    return _EXACT_THEN_READABLE.sub(r"\1", reason)


def print_summary(summary: dict[str, Any], write: Callable[[str], None] = print) -> None:
    """Print the human summary."""
    for line in summary_lines(summary):
        write(line)
