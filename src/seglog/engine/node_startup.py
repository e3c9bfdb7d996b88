"""The steps of a node's startup that stand apart from the :class:`LogManager`'s state.

Per root of ``log.dirs`` (:class:`LogRoot`): take ``.lock``; read or create
``meta.properties`` (every root must name the same cluster: :func:`load_meta_properties`);
remove stray ``*.tmp``, take the ``.kafka_cleanshutdown`` marker and read the newest
``seglog-topics.json`` over all roots (:func:`prepare_roots`); read the KRaft metadata image
(:func:`load_catalogue`). Opening the partitions is the manager's (it owns the open logs); then
the ``-delete`` directories found are removed (:func:`remove_pending_deletes`) and the node's
periodic tasks are scheduled (:func:`schedule_node_tasks`).

A read-only startup writes nothing: no lock, no marker taken, no ``meta.properties`` written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seglog.clock import Clock
from seglog.config import BrokerConfig
from seglog.engine.scheduler import Scheduler
from seglog.engine.topic_catalogue import TopicCatalogue
from seglog.errors import CorruptCheckpointError, InvalidConfigError, SeglogError
from seglog.format.checkpoint import MetaProperties, new_cluster_id, new_directory_id
from seglog.format.topic_names import PartitionDirKind
from seglog.storage.kraft_image import read_metadata_image
from seglog.storage.log_dir import LogDirectory, TopicsFile
from seglog.storage.partition_dirs import list_partition_dirs, remove_partition_dir

LONG_MAX = (1 << 63) - 1


@dataclass(slots=True)
class LogRoot:
    """One root of ``log.dirs`` and what startup found in it."""

    directory: LogDirectory
    had_clean_shutdown: bool = False
    pending_deletes: list[Path] = field(default_factory=list)


def lock_roots(roots: Sequence[LogRoot], *, read_only: bool) -> None:
    """Take every root's ``.lock`` (a no-op when read-only); a read-only root must exist."""
    for root in roots:
        if read_only and not root.directory.path.is_dir():
            raise InvalidConfigError(f"log directory {root.directory.path} does not exist")
        root.directory.lock()


def load_meta_properties(
    roots: Sequence[LogRoot], broker: BrokerConfig, clock: Clock
) -> MetaProperties | None:
    """Read each root's ``meta.properties`` (writing one where missing, with the cluster id the
    others name); the first root's. Roots naming different clusters are refused."""
    metas = [(root, root.directory.read_meta_properties()) for root in roots]
    cluster_ids = {m.cluster_id for _, m in metas if m is not None and m.cluster_id}
    if len(cluster_ids) > 1:
        raise InvalidConfigError(
            f"log directories belong to different clusters: {sorted(cluster_ids)}"
        )
    cluster_id = next(iter(cluster_ids)) if cluster_ids else new_cluster_id()
    first: MetaProperties | None = None
    for root, found in metas:
        meta = found
        if meta is None:
            meta = MetaProperties(
                version=1,
                node_id=broker.node_id,
                cluster_id=cluster_id,
                directory_id=new_directory_id(),
            )
            root.directory.write_meta_properties(meta, clock.now_ms())
        first = first or meta
    return first


def prepare_roots(roots: Sequence[LogRoot]) -> tuple[TopicsFile, list[str]]:
    """Per root: remove stray temp files, take the clean-shutdown marker, make sure the
    checkpoint files exist; returns the newest ``seglog-topics.json`` over all roots and the
    problems of damaged copies skipped. All copies damaged: the first error is raised
    (opening without the topic configs would apply broker defaults, e.g. delete retention to
    a compacted topic)."""
    newest: TopicsFile | None = None
    damaged: list[CorruptCheckpointError] = []
    for root in roots:
        directory = root.directory
        directory.remove_stray_temp_files()
        root.had_clean_shutdown = directory.take_clean_shutdown_marker()
        directory.ensure_checkpoint_files()
        try:
            topics = directory.read_topics()
        except CorruptCheckpointError as exc:
            damaged.append(exc)  # another root may hold a good copy
            continue
        if topics is not None and (newest is None or topics.generation > newest.generation):
            newest = topics
    if damaged and newest is None:
        raise damaged[0]
    return newest or TopicsFile(), [str(exc) for exc in damaged]


def load_catalogue(
    roots: Sequence[LogRoot],
    broker: BrokerConfig,
    meta: MetaProperties | None,
    problems: list[str],
) -> TopicCatalogue:
    """The topic catalogue from the KRaft metadata image (the first root holding one),
    read-only. A damaged image is reported in ``problems`` and ignored: its topics then count
    as configs unknown (left alone), never as seglog's defaults."""
    node_id = broker.node_id
    if meta is not None and meta.node_id is not None:
        node_id = meta.node_id
    for root in roots:
        try:
            image = read_metadata_image(root.directory.path)
        except SeglogError as exc:
            problems.append(f"KRaft metadata not used: {exc}")
            continue
        if image is not None:
            return TopicCatalogue(broker, image, node_id)
    return TopicCatalogue(broker, None, node_id)


def count_live_partitions(roots: Sequence[LogRoot]) -> int:
    """Live partition directories over every root (the startup progress total)."""
    return sum(
        1
        for root in roots
        for _, parsed in list_partition_dirs(root.directory.path)
        if parsed.kind is PartitionDirKind.LIVE
    )


def remove_pending_deletes(roots: Sequence[LogRoot]) -> None:
    """Remove the ``-delete`` directories found at startup.

    Kafka waits ``file.delete.delay.ms`` after queueing these at startup too, so that readers
    of the old broker process finish. A directory found at startup has no reader here (we hold
    the lock), and a one-shot ``seglog`` command would otherwise never get to remove it:
    removed now (a deliberate difference)."""
    for root in roots:
        for path in root.pending_deletes:
            remove_partition_dir(path)
        root.pending_deletes.clear()


def schedule_node_tasks(
    scheduler: Scheduler,
    broker: BrokerConfig,
    tasks: Sequence[tuple[str, Callable[[], object], int]],
) -> None:
    """Schedule ``(name, action, period_ms)`` tasks after ``log.initial.task.delay.ms``; a
    period of 0 or ``Long.MAX_VALUE`` (Kafka's "never") schedules nothing."""
    for name, action, period in tasks:
        if 0 < period < LONG_MAX:
            scheduler.schedule(
                name, action, delay_ms=broker.log_initial_task_delay_ms, period_ms=period
            )
