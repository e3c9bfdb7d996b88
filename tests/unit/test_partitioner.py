"""Kafka's default partitioner: ``Utils.murmur2`` and ``partitionForKey``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from seglog.core.partitioner import murmur2, partition_for_key, to_positive


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        # org.apache.kafka.common.utils.UtilsTest.testMurmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafkas_test_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_of_empty_key() -> None:
    assert murmur2(b"") == kafka_python_murmur2(b"")


@given(st.binary(max_size=200))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    ours = murmur2(data)
    assert -(2**31) <= ours < 2**31  # a Java int
    assert ours & 0xFFFFFFFF == kafka_python_murmur2(data)  # kafka-python returns it unsigned


@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_partition_matches_kafka_python_default_partitioner(key: bytes, count: int) -> None:
    # kafka.partitioner.default.DefaultPartitioner.partition over partitions 0..count-1.
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % count
    assert partition_for_key(key, count) == expected
    assert 0 <= partition_for_key(key, count) < count


def test_to_positive_clears_the_sign_bit() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", 0)
