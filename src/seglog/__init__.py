"""seglog: partitioned append-only logs in Apache Kafka's exact on-disk format."""

__version__ = "0.1.0"
