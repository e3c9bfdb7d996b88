"""``seglog spark compact|export|compact-copy|stats``: the Spark pipeline from the command line.

This module is a plugin of the ``seglog`` command: :mod:`seglog.cli.main` loads it by name
(``importlib``) when it builds its parser, so the core command never imports anything of Spark
and ``seglog.cli`` and ``seglog.spark`` stay independent layers. Importing it does not import
pyspark either: a session is built only when a ``spark`` command runs.

Commands (the global ``--data-dir DIR``/``--config FILE`` options name the log directories,
before or after the command):

* ``seglog spark compact [--topic T] [--no-shard-keys]``: the distributed Kafka-style cleaner
  (:mod:`seglog.spark.compaction_job`); one line per partition, or ``--json``.
* ``seglog spark export TOPIC --to PATH [--mode table|changelog]``: the topic as a Parquet
  table (:mod:`seglog.spark.export`).
* ``seglog spark compact-copy --to s3://bucket/prefix [--topic T]``: the Pulsar-style compacted
  copy built on Spark and published to object storage (:mod:`seglog.spark.copy_job`).
* ``seglog spark stats [--topic T] [--json]``: per-partition statistics
  (:mod:`seglog.spark.stats`).

``--master`` (default ``local[*]``, or ``SEGLOG_SPARK_MASTER``) picks where Spark runs; under
``spark-submit`` use the Python API instead (README, "Spark on a cluster").

Failures and Ctrl-C (every command runs through :func:`_guarded`):

* a seglog error raised inside Spark (a task, the data source's planner) is taken out of
  Spark's exception (:mod:`seglog.spark.failures`) and printed as ``seglog: error: <message>``,
  one line, exit status 1, like any other seglog command. Spark's own log is off during a
  command (a failed task is otherwise logged three times with its Java trace before the
  exception reaches the command; an error that is not seglog's still ends the command with
  its full trace); ``SEGLOG_SPARK_LOG_LEVEL=ERROR`` (or ``WARN``...) turns it back on;
* Ctrl-C (SIGINT): pyspark's own handler cancels the jobs from inside the signal handler
  while the main thread is in a Py4J call, and Py4J then logs several tracebacks. Once the
  session is up, seglog's handler replaces it: it turns Spark's logging off (the cancelled
  job and tasks would each log their abort with a Java trace) and cancels every job from
  another thread (its own Py4J connection), repeatedly until the command ends, so a job
  started later is cancelled too; the command unwinds normally (``export`` removes its
  staging directory), prints ``seglog: interrupted: the Spark work was stopped`` and exits
  with 130 (128 + SIGINT, as shells expect). A second Ctrl-C, or one while Spark is still starting
  (nothing done yet), prints that line and exits at once with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from seglog.errors import SparkOptionError
from seglog.spark.failures import seglog_error_of
from seglog.spark.options import broker_config_of
from seglog.spark.progress import spark_progress

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT
INTERRUPTED_MESSAGE = "seglog: interrupted: the Spark work was stopped"
CANCEL_INTERVAL_S = 0.25
LOG_LEVEL_ENV = "SEGLOG_SPARK_LOG_LEVEL"  # e.g. ERROR or WARN to see Spark's own log

Command = Callable[[argparse.Namespace], int]


class _Interrupts:
    """Ctrl-C during a Spark command (module docstring): flag, cancel jobs, unwind."""

    def __init__(self) -> None:
        self.interrupted = threading.Event()
        self.done = threading.Event()
        self.context: Any = None
        self.previous: Any = None

    def arm(self) -> None:
        """Until :meth:`watch`: Ctrl-C exits at once (main thread only)."""
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._exit_now)

    def watch(self, spark: Any) -> None:
        """Once the session is up: Ctrl-C cancels its jobs (replaces pyspark's handler)."""
        if self.previous is None:
            return
        self.context = spark.sparkContext
        signal.signal(signal.SIGINT, self._on_sigint)

    @staticmethod
    def _exit_now(signum: int, frame: FrameType | None) -> None:
        """While the JVM starts (nothing written yet; a KeyboardInterrupt inside a Py4J call
        makes Py4J log a trace) or at a second Ctrl-C: leave at once. The JVM exits when
        its stdin, a pipe from this process, closes."""
        print(INTERRUPTED_MESSAGE, file=sys.stderr, flush=True)
        os._exit(EXIT_INTERRUPTED)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted.is_set():
            self._exit_now(signum, frame)
        self.interrupted.set()
        threading.Thread(target=self._cancel_jobs, name="seglog-cancel", daemon=True).start()

    def _cancel_jobs(self) -> None:
        # a cancelled task and job log their abort with a Java trace: not news here
        with contextlib.suppress(Exception):  # the JVM may be stopping
            self.context.setLogLevel("OFF")
        while not self.done.is_set():
            try:
                self.context.cancelAllJobs()
            except Exception:  # the JVM may be stopping: nothing to cancel
                return
            self.done.wait(CANCEL_INTERVAL_S)

    def close(self) -> None:
        """Stop cancelling and give SIGINT back to the handler it had."""
        self.done.set()
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None


_INTERRUPTS: list[_Interrupts] = []  # the running command's, for _session


def _guarded(command: Command) -> Command:
    """Run ``command`` with seglog's Ctrl-C handling and Spark errors unwrapped."""

    def run(args: argparse.Namespace) -> int:
        interrupts = _Interrupts()
        _INTERRUPTS.append(interrupts)
        interrupts.arm()
        try:
            return command(args)
        except KeyboardInterrupt:  # before the session was up, or between two calls
            print(INTERRUPTED_MESSAGE, file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception as exc:
            if interrupts.interrupted.is_set():
                print(INTERRUPTED_MESSAGE, file=sys.stderr)
                return EXIT_INTERRUPTED
            found = seglog_error_of(exc)
            if found is None or found is exc:
                raise
            raise found from exc
        finally:
            interrupts.close()
            _INTERRUPTS.remove(interrupts)

    return run


def register(subparsers: Any) -> None:
    """Add ``spark`` and its subcommands to the ``seglog`` parser."""
    parser = subparsers.add_parser(
        "spark",
        help="run the Spark pipeline: distributed compaction, Parquet export, statistics",
        description="The Spark pipeline on the log directories (embedded local[*] by default).",
    )
    parser.set_defaults(handler=lambda args: _usage(parser))
    commands = parser.add_subparsers(title="spark commands", metavar="SPARK_COMMAND")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--data-dir",
            dest="command_data_dirs",
            action="append",
            default=argparse.SUPPRESS,
            metavar="DIR",
            help="a log directory root (log.dirs); repeat for several roots",
        )
        sub.add_argument(
            "--master",
            default=None,
            help="Spark master (default: $SEGLOG_SPARK_MASTER or local[*])",
        )

    compact = commands.add_parser(
        "compact",
        help="clean every compacted partition that needs it, on Spark",
        description=(
            "The Kafka-style log cleaner as a Spark job: the same decisions and bytes as "
            "`seglog clean --once`; the partitions are packed into one task per core."
        ),
    )
    common(compact)
    compact.add_argument("--topic", default=None, help="only this topic")
    compact.add_argument(
        "--no-shard-keys",
        action="store_true",
        help="when a partition's keys overflow one task's map, clean it partially (as the "
        "in-process cleaner does) instead of sharding its keys across tasks",
    )
    compact.add_argument("--json", action="store_true", help="print one JSON document")
    compact.set_defaults(handler=_guarded(_run_compact))

    export = commands.add_parser(
        "export",
        help="write a topic as a Parquet table (latest value per key) or changelog",
        description=(
            "Export TOPIC to Parquet: --mode table (default) keeps the latest value per key "
            "(tombstones delete it), --mode changelog every record; with lineage columns."
        ),
    )
    common(export)
    export.add_argument("topic", metavar="TOPIC", help="the topic to export")
    export.add_argument("--to", required=True, metavar="PATH", help="the Parquet directory")
    export.add_argument(
        "--mode",
        choices=("table", "changelog"),
        default="table",
        help="table: the latest value per key (default); changelog: every record",
    )
    export.set_defaults(handler=_guarded(_run_export))

    copy = commands.add_parser(
        "compact-copy",
        help="build the Pulsar-style compacted copy of each partition into object storage",
        description=(
            "Build each compacted partition's Pulsar-style copy (as `seglog compact` does) on "
            "Spark and publish it under an s3:// prefix by a conditional PUT of its manifest; "
            "the log directories are only read. Credentials and endpoint: the AWS environment "
            "(AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, AWS_PROFILE, ...) or the --s3-* options."
        ),
    )
    common(copy)
    copy.add_argument("--to", required=True, metavar="URI", help="s3://bucket/prefix")
    copy.add_argument("--topic", default=None, help="only this topic (any cleanup.policy)")
    copy.add_argument("--s3-endpoint", default=None, metavar="URL", help="an S3 API endpoint")
    copy.add_argument("--s3-region", default=None, metavar="REGION", help="the bucket's region")
    copy.add_argument("--json", action="store_true", help="print one JSON document")
    copy.set_defaults(handler=_run_compact_copy)

    stats = commands.add_parser(
        "stats",
        help="per-partition records, keys, duplicates, tombstones, dirty ratio, sizes",
        description="Statistics of every partition (or one topic's), computed on Spark.",
    )
    common(stats)
    stats.add_argument("--topic", default=None, help="only this topic")
    stats.add_argument("--json", action="store_true", help="print one JSON document")
    stats.set_defaults(handler=_guarded(_run_stats))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _data_dirs(args: argparse.Namespace) -> tuple[str, ...]:
    before: list[str] = getattr(args, "data_dirs", None) or []
    after: list[str] = getattr(args, "command_data_dirs", None) or []
    return (*before, *after)


def _read_dirs(args: argparse.Namespace) -> list[str]:
    """The log directories a reading command (export, stats) hands to Spark as given: object
    storage locations (``s3://...``) stay URIs, read by the source itself."""
    from seglog.storage.object_store import is_remote

    data_dirs = _data_dirs(args)
    if any(is_remote(d) for d in data_dirs):
        if getattr(args, "server_config", None) is not None:
            raise SparkOptionError("give object-store log directories with --data-dir only")
        return list(data_dirs)
    return list(_broker(args).log_dirs)


def _broker(args: argparse.Namespace) -> Any:
    from seglog.storage.object_store import is_remote

    data_dirs = _data_dirs(args)
    config = getattr(args, "server_config", None)
    if not data_dirs and config is None:
        raise SparkOptionError("give the log directories with --data-dir DIR (or --config FILE)")
    if any(is_remote(d) for d in data_dirs) and args.handler is not _run_compact_copy:
        raise SparkOptionError(
            "this command changes the log directories, and object storage is only read: "
            "give a local --data-dir (export, stats and compact-copy read s3:// directories)"
        )
    broker = broker_config_of(data_dirs, config)
    for root in broker.log_dirs:  # before Spark starts (tens of seconds), not after
        if not os.path.isdir(root):
            raise SparkOptionError(
                f"log directory {root} does not exist: check the --data-dir path"
            )
    return broker


def _session(args: argparse.Namespace) -> Any:
    from seglog.spark.session import embedded_session

    spark = embedded_session(args.master)
    spark.sparkContext.setLogLevel(os.environ.get(LOG_LEVEL_ENV, "OFF"))
    if _INTERRUPTS:
        _INTERRUPTS[-1].watch(spark)
    return spark


def _run_compact(args: argparse.Namespace) -> int:
    from seglog.spark.compaction_job import compact

    broker = _broker(args)
    spark = _session(args)
    with spark_progress(spark, "cleaning", json_output=args.json):
        results = compact(spark, broker, topic=args.topic, shard_keys=not args.no_shard_keys)
    if args.json:
        print(json.dumps({"results": [r.to_json() for r in results]}, indent=1))
    elif not results:
        print("nothing to clean: no compacted partition is above min.cleanable.dirty.ratio")
    for result in results if not args.json else []:
        if result.stats is None:
            print(f"{result.topic_partition}: not cleaned: {result.error}")
            continue
        s = result.stats
        print(
            f"{result.topic_partition}: cleaned [{s.first_dirty_offset}, {s.end_offset}) "
            f"{s.size_before_bytes:,} -> {s.size_after_bytes:,} bytes, "
            f"{s.messages_read:,} -> {s.messages_written:,} records"
            + (" (partial)" if s.is_partial else "")
        )
    return EXIT_FAILURE if any(r.error for r in results) else EXIT_OK


def _run_export(args: argparse.Namespace) -> int:
    from seglog.spark.export import export_topic

    dirs = _read_dirs(args)
    spark = _session(args)
    with spark_progress(spark, f"exporting {args.topic}"):
        rows = export_topic(spark, dirs, args.topic, args.to, mode=args.mode)
    print(f"exported {rows:,} rows of {args.topic} ({args.mode}) to {args.to}")
    return EXIT_OK


def _run_compact_copy(args: argparse.Namespace) -> int:
    from seglog.spark.copy_job import compact_to_object_store
    from seglog.storage.remote_copy_store import S3Settings, split_s3_uri

    try:
        split_s3_uri(args.to)
    except ValueError as exc:
        raise SparkOptionError(f"--to: {exc} (give s3://bucket/prefix)") from exc
    broker = _broker(args)
    settings = S3Settings(endpoint_url=args.s3_endpoint, region=args.s3_region)
    spark = _session(args)
    with spark_progress(spark, "compacted copies", json_output=args.json):
        outcomes = compact_to_object_store(
            spark, broker, args.to, settings=settings, topic=args.topic
        )
    if args.json:
        print(json.dumps({"results": [o.to_json() for o in outcomes]}, indent=1))
    elif not outcomes:
        print(
            "nothing to copy: no compacted topic" + (f" named {args.topic}" if args.topic else "")
        )
    for o in outcomes if not args.json else []:
        where = f"{o.copy} (horizon {o.horizon})" if o.copy else ""
        detail = {"published": f"published {where}", "unchanged": f"unchanged: {where}"}.get(
            o.state, f"{o.state}: {o.message}"
        )
        print(f"{o.topic_partition}: {detail}")
    return EXIT_FAILURE if any(o.state in ("error", "conflict") for o in outcomes) else EXIT_OK


def _run_stats(args: argparse.Namespace) -> int:
    from seglog.spark.stats import format_stats, partition_stats

    dirs = _read_dirs(args)
    spark = _session(args)
    with spark_progress(spark, "statistics", json_output=args.json):
        rows = partition_stats(spark, dirs, args.topic).collect()
    if args.json:
        print(json.dumps({"partitions": [row.asDict() for row in rows]}, indent=1, default=str))
    else:
        print(format_stats(rows))
    return EXIT_OK
