"""Kafka-style compaction in place (the log cleaner): one round's work
(:mod:`~seglog.engine.cleaning.cleaner`), the cleaner manager's state machine and checkpoints
(:mod:`~seglog.engine.cleaning.cleaner_manager`) and the cleaner threads
(:mod:`~seglog.engine.cleaning.log_cleaner`). The decisions themselves are in
:mod:`seglog.core.cleaning`; the Spark job's engine side is :mod:`seglog.engine.cleaning_job`.
"""
