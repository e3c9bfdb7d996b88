"""Kafka's JSON definitions of the ``__consumer_offsets`` records (group-coordinator's
``OffsetCommitKey``, ``OffsetCommitValue``, ``GroupMetadataKey``, ``GroupMetadataValue``), as
test data for kafka-python's generic ``ApiData`` codec, the peer the record formats are checked
against. kafka-python ships no such definitions; these follow Kafka 4.x's files, with ``type``
"data" (kafka-python's name for a plain struct) instead of "coordinator-key/value"."""
