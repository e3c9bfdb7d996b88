"""Which option names the seglog Spark source and sink accept; a misspelled one raises.

Spark's Kafka source and sink accept any option and ignore the ones they do not know, so
``startingOffset`` (no ``s``) silently reads from the default position. seglog refuses an
unknown name instead, with the closest known name (``difflib``):
``unknown option 'startingoffset' for the seglog source; did you mean 'startingOffsets'?``.
A job written for the Kafka source still runs unchanged because every option the Kafka
source documents is on the list, used or deliberately ignored.

Names are matched **case-insensitively**: Spark hands a Python data source its options in
a case-insensitive map whose keys arrive lower-cased (``startingOffsets`` arrives as
``startingoffsets``), so an error can only show the lower-cased name the user typed; the
suggestion is spelled as documented.

The lists (lower-cased; the documented spelling is in :data:`SPELLING`):

* source, seglog's own: ``path``, ``config``, ``readCompacted``, ``pushFilters``;
* source, Spark's Kafka source options that seglog implements: ``assign``, ``subscribe``,
  ``subscribePattern``, ``startingOffsets``, ``endingOffsets``, ``startingTimestamp``,
  ``endingTimestamp``, ``startingOffsetsByTimestamp``, ``endingOffsetsByTimestamp``,
  ``startingOffsetsByTimestampStrategy``, ``failOnDataLoss``, ``includeHeaders``,
  ``minPartitions``, ``maxRecordsPerPartition``, ``maxOffsetsPerTrigger``,
  ``minOffsetsPerTrigger``, ``maxTriggerDelay`` (the trigger options are accepted by a
  batch read and unused there, as the Kafka source does);
* source, Kafka source options accepted and **ignored on purpose** (they tune a network
  consumer seglog does not have): ``groupIdPrefix``, ``kafkaConsumer.pollTimeoutMs``,
  ``fetchOffset.numRetries``, ``fetchOffset.retryIntervalMs``;
* sink: ``path``, ``topic``, ``stagingDir``, ``commitLockWaitMs``, and ``includeHeaders``
  (ignored: headers are written whenever the column is there); a streaming sink adds what
  its caller passes in ``extra`` (e.g. ``checkpointLocation``, which Spark hands the sink
  when it is set as an option of ``writeStream``);
* both: every ``kafka.*`` name (client settings of a broker connection; ignored, except
  the few the source refuses with Spark's reason, see :mod:`seglog.spark.options`, and
  ``kafka.isolation.level``, which the source reads: a close misspelling of it is refused
  with the right name rather than ignored).

``paths``, which Spark sets for ``load(dir1, dir2)``, is refused with the fix (one ``path``
holding the directories comma-separated), as it is for ``save``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from seglog.errors import SparkOptionError
from seglog.storage.remote_copy_store import S3Settings, option_spellings

#: Documented spelling of every option name (keys lower-cased).
SPELLING: dict[str, str] = {
    name.lower(): name
    for name in (
        "path",
        "config",
        "readCompacted",
        "pushFilters",
        "assign",
        "subscribe",
        "subscribePattern",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "failOnDataLoss",
        "includeHeaders",
        "minPartitions",
        "maxRecordsPerPartition",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "groupIdPrefix",
        "kafkaConsumer.pollTimeoutMs",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
        "topic",
        "stagingDir",
        "commitLockWaitMs",
        "checkpointLocation",
        "kafka.bootstrap.servers",
        "kafka.group.id",
        "kafka.isolation.level",
        "compactedCopy",
        "tieredStorage",
        "remoteLogMetadata",
        "localPath",
        "s3.endpoint",
        "s3.region",
        "s3.access.key",
        "s3.secret.key",
        "s3.session.token",
        "s3.profile",
        "s3.accessKey",
        "s3.secretKey",
        "s3.sessionToken",
    )
}

#: Object-store options (where log directories, copies or tiered buckets are), both spellings
#: (``s3.access.key`` and ``s3.accessKey``), lower-cased as Spark hands them over.
S3_OPTIONS: frozenset[str] = frozenset(
    spelling for name in S3Settings.OPTION_NAMES for spelling in option_spellings(name)
)

#: Options of ``spark.read.format("seglog")`` and ``spark.readStream.format("seglog")``.
SOURCE_OPTIONS: frozenset[str] = frozenset(
    {
        "path",
        "config",
        "readcompacted",
        "pushfilters",
        "assign",
        "subscribe",
        "subscribepattern",
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "endingtimestamp",
        "startingoffsetsbytimestamp",
        "endingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "failondataloss",
        "includeheaders",
        "minpartitions",
        "maxrecordsperpartition",
        "maxoffsetspertrigger",
        "minoffsetspertrigger",
        "maxtriggerdelay",
        "groupidprefix",
        "kafkaconsumer.polltimeoutms",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
        "compactedcopy",
        "tieredstorage",
        "remotelogmetadata",
        "localpath",
        "kafka.isolation.level",
    }
    | S3_OPTIONS
)

#: Options of ``df.write.format("seglog")`` (a streaming sink adds its own, see
#: :func:`check_sink_option_names`).
SINK_OPTIONS: frozenset[str] = frozenset(
    {"path", "topic", "stagingdir", "commitlockwaitms", "includeheaders"}
)

#: A prefix under which every name is accepted (Kafka client settings).
ACCEPTED_PREFIX = "kafka."

#: Suggested for a close miss, though any ``kafka.*`` name is accepted.
_KAFKA_SUGGESTIONS = ("kafka.bootstrap.servers", "kafka.group.id")
#: ``kafka.*`` names seglog reads: a close miss of one of these is refused, not ignored
#: (a misspelt ``kafka.isolation.level`` would otherwise read uncommitted data silently).
_KAFKA_READ = ("kafka.isolation.level",)


def spelled(key: str) -> str:
    """The documented spelling of option ``key`` (any case); unknown names as given."""
    return SPELLING.get(key.lower(), key)


def check_option_names(options: Iterable[str], known: Iterable[str], *, what: str) -> None:
    """Raise :class:`SparkOptionError` for the first name (sorted) of ``options`` that is
    neither in ``known`` (lower-cased names) nor under ``kafka.``; ``what`` names the
    reader or writer in the message (``"the seglog source"``)."""
    allowed = frozenset(k.lower() for k in known)
    for name in sorted(str(k) for k in options):
        key = name.lower()
        if key in allowed:
            continue
        if key.startswith(ACCEPTED_PREFIX):
            read = [k for k in _KAFKA_READ if k in allowed]
            near = difflib.get_close_matches(key, read, n=1, cutoff=0.85)
            if near:
                raise SparkOptionError(
                    f"unknown option {name!r} for {what}; did you mean {near[0]!r}?"
                )
            continue
        if key == "paths" and "path" in allowed:
            raise SparkOptionError(
                f"{what} takes one option 'path' (several log directories separated by "
                "commas), not several paths: use .option('path', 'dir1,dir2') and call "
                "load()/save() without paths"
            )
        candidates = sorted(allowed) + [k for k in _KAFKA_SUGGESTIONS if k not in allowed]
        close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.7)
        hint = (
            f"did you mean {spelled(close[0])!r}?"
            if close
            else "the options are "
            + ", ".join(spelled(k) for k in sorted(allowed))
            + " and kafka.* (ignored)"
        )
        raise SparkOptionError(f"unknown option {name!r} for {what}; {hint}")


def check_source_option_names(options: Mapping[str, object]) -> None:
    """Refuse an unknown option of the seglog source (batch or streaming read)."""
    check_option_names(options.keys(), SOURCE_OPTIONS, what="the seglog source")


def check_sink_option_names(options: Mapping[str, object], extra: Iterable[str] = ()) -> None:
    """Refuse an unknown option of the seglog sink; ``extra`` adds the names a streaming
    sink accepts besides the batch sink's (e.g. ``("checkpointLocation",)``)."""
    known = SINK_OPTIONS | {k.lower() for k in extra}
    check_option_names(options.keys(), known, what="the seglog sink")
