"""Pulsar-style compaction: the compacted copy beside the log, its compactor and service
(:mod:`~seglog.engine.compaction.compactor`), and the read-compacted readers
(:func:`~seglog.engine.compaction.compactor.iter_compacted_records`,
:mod:`~seglog.engine.compaction.partition_reader`). A ``Log`` knows nothing of its copy: the
readers here use the log.
"""
