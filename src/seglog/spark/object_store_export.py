"""Writing a DataFrame as a Parquet table into object storage (``s3://bucket/prefix``),
from the executors, without Spark's Hadoop file systems (pyspark ships no ``s3a``).

A small Python data source writer (``format("seglog-parquet-export")``, registered on use):

1. each task writes its rows as one ``part-<task>-<run>.parquet`` object through ``pyarrow``
   (``pyarrow.fs``, uploaded in parts) and hands the driver its name and row count;
2. the driver's commit removes the objects of earlier runs under the prefix (``part-*``,
   ``_SUCCESS``), then writes ``_SUCCESS`` (``run <id>`` and ``rows <n>``) last; an aborted
   job removes its own parts.

An object store has no rename, so the replacement is not atomic as the local export's is: a
reader listing the prefix while an export commits may see parts of both runs; ``_SUCCESS``
says which run is whole. A prefix holding anything but a table's objects is refused, so a
typo cannot delete a user's objects.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from seglog.errors import SparkOptionError
from seglog.storage.object_store import ObjectLocation, RemoteFile
from seglog.storage.remote_copy_store import ObjectStoreError, S3Settings

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

SUCCESS = "_SUCCESS"
FORMAT = "seglog-parquet-export"


def _is_table_object(item: RemoteFile) -> bool:
    name = item.relative
    return "/" not in name and (name.startswith("part-") or name == SUCCESS)


@dataclass(frozen=True)
class PartWritten(WriterCommitMessage):
    """One task's part: its object name and row count."""

    name: str
    rows: int


class ParquetExportWriter(DataSourceArrowWriter):
    """Tasks write parts; the driver commits (module docstring)."""

    def __init__(self, location: ObjectLocation, run: str) -> None:
        self.location = location
        self.run = run
        self.rows = 0

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PartWritten:
        """Executor side: this task's rows as one Parquet object."""
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        name = f"part-{part:05d}-{self.run}.parquet"
        writer = None
        rows = 0
        try:
            for batch in iterator:
                if writer is None:
                    writer = pq.ParquetWriter(
                        f"{self.location.root}/{name}",
                        batch.schema,
                        filesystem=self.location.filesystem(),
                    )
                writer.write_batch(batch)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        return PartWritten(name if writer is not None else "", rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Driver side: remove earlier runs' objects, then write ``_SUCCESS``."""
        parts = [m for m in messages if isinstance(m, PartWritten)]
        self.rows = sum(m.rows for m in parts)
        ours = {m.name for m in parts if m.name}
        filesystem = self.location.filesystem()
        try:
            for item in self.location.list_files():
                if _is_table_object(item) and item.relative not in ours:
                    filesystem.delete_file(f"{self.location.root}/{item.relative}")
            with filesystem.open_output_stream(f"{self.location.root}/{SUCCESS}") as sink:
                sink.write(f"run {self.run}\nrows {self.rows}\n".encode())
        except OSError as exc:
            raise ObjectStoreError(f"committing the export at {self.location.uri}: {exc}") from exc

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Driver side: remove this run's parts."""
        filesystem = self.location.filesystem()
        for message in messages:
            if isinstance(message, PartWritten) and message.name:
                # best effort: the next export removes what is left
                with contextlib.suppress(OSError):
                    filesystem.delete_file(f"{self.location.root}/{message.name}")


class ParquetExportSource(DataSource):
    """``format("seglog-parquet-export")``: options ``path`` (the URI), ``run``, ``s3.*``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def writer(self, schema: StructType, overwrite: bool) -> ParquetExportWriter:
        options = {str(k): str(v) for k, v in self.options.items()}
        location = ObjectLocation(options["path"], S3Settings.from_options(options))
        return ParquetExportWriter(location, options["run"])


def write_parquet_to_object_store(frame: DataFrame, location: ObjectLocation) -> int:
    """Write ``frame`` under ``location`` (module docstring); the number of rows written."""
    foreign = [item.relative for item in location.list_files() if not _is_table_object(item)]
    if foreign:
        raise SparkOptionError(
            f"export target {location.uri} holds objects that are not a Parquet table's "
            f"({foreign[0]}, ...): refusing to replace it"
        )
    frame.sparkSession.dataSource.register(ParquetExportSource)
    run = uuid.uuid4().hex[:12]
    writer: Any = frame.write.format(FORMAT).mode("append").option("path", location.uri)
    for key, value in {"run": run, **location.settings.as_options()}.items():
        writer = writer.option(key, value)
    writer.save()
    success = location.filesystem().open_input_file(f"{location.root}/{SUCCESS}")
    with success:
        lines = success.read().decode().split()
    if lines[:2] != ["run", run]:
        raise ObjectStoreError(f"the export at {location.uri} was replaced by another run")
    return int(lines[3])
