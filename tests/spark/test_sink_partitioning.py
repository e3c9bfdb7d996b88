"""The sink's columnar murmur2 equals Kafka's (``seglog.core.partitioner``) on every key
shape: every length mod 4, empty, long (the per-key fallback), null, sliced arrays."""

from __future__ import annotations

import random

import pyarrow as pa

from seglog.core.partitioner import murmur2, partition_for_key, to_positive
from seglog.spark.partitioning import VECTOR_KEY_BYTES_MAX, murmur2_positive


def test_columnar_murmur2_matches_kafka() -> None:
    rng = random.Random(7)
    lengths = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 64, 255, VECTOR_KEY_BYTES_MAX + 3]
    keys: list[bytes | None] = [
        None if rng.random() < 0.1 else rng.randbytes(rng.choice(lengths)) for _ in range(2000)
    ]
    expected = [-1 if k is None else to_positive(murmur2(k)) for k in keys]
    for kind in (pa.binary(), pa.large_binary()):
        array = pa.array(keys, kind)
        assert murmur2_positive(array).tolist() == expected
        assert murmur2_positive(array.slice(13, 400)).tolist() == expected[13:413]
    # Kafka's own examples of partition choice hold too
    text = [b"hello", b"key-1", "ключ".encode()]
    got = murmur2_positive(pa.array(text, pa.binary())).tolist()
    assert [g % 7 for g in got] == [partition_for_key(k, 7) for k in text]
    assert murmur2_positive(pa.array([], pa.binary())).tolist() == []
