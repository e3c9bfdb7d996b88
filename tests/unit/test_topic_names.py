"""Topic names, partitions and partition directory names (spec §2.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.errors import InvalidTopicError
from seglog.format.topic_names import (
    MAX_DIR_NAME_LENGTH,
    ParsedPartitionDir,
    PartitionDirKind,
    TopicPartition,
    delete_dir_name,
    future_dir_name,
    is_valid_topic_name,
    new_dir_uuid_hex,
    parse_partition_dir_name,
    partition_dir_name,
    stray_dir_name,
    validate_partition,
    validate_topic_name,
)

UUID = "2308294e39dc4a44ab8183f587805af2"


def test_topic_partition_str_and_tuple() -> None:
    tp = TopicPartition("orders", 3)
    assert str(tp) == "orders-3"
    assert tp == ("orders", 3)
    assert partition_dir_name(tp) == "orders-3"


@pytest.mark.parametrize(
    "name", ["a", "orders", "__consumer_offsets", "my.topic-with_all-0", "..a", "x" * 249]
)
def test_valid_topic_names(name: str) -> None:
    validate_topic_name(name)
    assert is_valid_topic_name(name)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "can't be empty"),
        (".", 'cannot be "." or ".."'),
        ("..", 'cannot be "." or ".."'),
        ("x" * 250, "longer than 249"),
        ("a/b", "character other than ASCII alphanumerics"),
        ("a\x00b", "character other than ASCII alphanumerics"),
        ("a\nb", "character other than ASCII alphanumerics"),
        ("a b", "character other than ASCII alphanumerics"),
        ("é", "character other than ASCII alphanumerics"),
    ],
)
def test_invalid_topic_names_name_the_rule(name: str, rule: str) -> None:
    with pytest.raises(InvalidTopicError, match=rule) as info:
        validate_topic_name(name)
    assert isinstance(info.value, ValueError)
    if name:
        assert repr(name)[:40] in str(info.value)  # shown with repr: no raw NUL or newline
    assert "\n" not in str(info.value) and "\x00" not in str(info.value)


def test_length_is_counted_in_utf16_units_like_java() -> None:
    # 125 astral characters = 250 UTF-16 units: rejected for length before the character rule.
    with pytest.raises(InvalidTopicError, match="250 characters long"):
        validate_topic_name("\U0001f600" * 125)


@pytest.mark.parametrize("partition", [0, 1, 2**31 - 1])
def test_valid_partitions(partition: int) -> None:
    validate_partition(partition)


@pytest.mark.parametrize("partition", [-1, 2**31, True])
def test_invalid_partitions(partition: int) -> None:
    with pytest.raises(InvalidTopicError):
        validate_partition(partition)


def test_partition_dir_name_validates() -> None:
    with pytest.raises(InvalidTopicError):
        partition_dir_name(TopicPartition("a/b", 0))
    with pytest.raises(InvalidTopicError):
        partition_dir_name(TopicPartition("a", -1))


# --- suffixed directory names -------------------------------------------------------------------


def test_suffixed_dir_names() -> None:
    tp = TopicPartition("test-topic", 0)
    assert delete_dir_name(tp, UUID) == f"test-topic-0.{UUID}-delete"
    assert future_dir_name(tp, UUID) == f"test-topic-0.{UUID}-future"
    assert stray_dir_name(tp, UUID) == f"test-topic-0.{UUID}-stray"


def test_random_uuid_when_none_given() -> None:
    tp = TopicPartition("t", 1)
    first, second = delete_dir_name(tp), delete_dir_name(tp)
    assert first != second
    assert parse_partition_dir_name(first) is not None
    assert len(new_dir_uuid_hex()) == 32


@pytest.mark.parametrize("uuid_hex", ["", "abc", UUID.upper(), UUID + "0", "g" * 32])
def test_uuid_must_be_32_lowercase_hex(uuid_hex: str) -> None:
    with pytest.raises(ValueError, match="hex"):
        delete_dir_name(TopicPartition("t", 0), uuid_hex)


def test_delete_and_stray_names_are_capped_at_255_by_truncating_the_topic() -> None:
    topic = "t" * 249
    tp = TopicPartition(topic, 2**31 - 1)
    suffix = f"-{2**31 - 1}.{UUID}-delete"
    name = delete_dir_name(tp, UUID)
    assert len(name) == MAX_DIR_NAME_LENGTH
    assert name == topic[: 255 - len(suffix)] + suffix
    parsed = parse_partition_dir_name(name)
    assert parsed is not None
    assert topic.startswith(parsed.topic) and parsed.partition == 2**31 - 1
    assert len(stray_dir_name(tp, UUID)) == MAX_DIR_NAME_LENGTH
    # A short topic is not truncated, and the future name is never capped (as in Kafka).
    assert delete_dir_name(TopicPartition("t", 0), UUID).startswith("t-0.")
    assert len(future_dir_name(tp, UUID)) > MAX_DIR_NAME_LENGTH


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", ParsedPartitionDir("orders", 0, PartitionDirKind.LIVE, None)),
        ("my-topic-12", ParsedPartitionDir("my-topic", 12, PartitionDirKind.LIVE, None)),
        ("__cluster_metadata-0", ParsedPartitionDir("__cluster_metadata", 0, "live", None)),
        ("a.b-1", ParsedPartitionDir("a.b", 1, PartitionDirKind.LIVE, None)),
        (f"test-topic-0.{UUID}-delete", ParsedPartitionDir("test-topic", 0, "delete", UUID)),
        (f"t.x-3.{UUID}-future", ParsedPartitionDir("t.x", 3, PartitionDirKind.FUTURE, UUID)),
        (f"t-3.{UUID}-stray", ParsedPartitionDir("t", 3, PartitionDirKind.STRAY, UUID)),
        ("t-3.u-delete", ParsedPartitionDir("t", 3, PartitionDirKind.DELETE, "u")),
        ("t-007", ParsedPartitionDir("t", 7, PartitionDirKind.LIVE, None)),  # Java parseInt
        ("t-+7", ParsedPartitionDir("t", 7, PartitionDirKind.LIVE, None)),
        # Split at the last '-': the topic is "orders-" (Kafka does not check it here).
        ("orders--1", ParsedPartitionDir("orders-", 1, PartitionDirKind.LIVE, None)),
    ],
)
def test_parse_partition_dir_names(name: str, expected: ParsedPartitionDir) -> None:
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "",
        "orders",
        "-0",  # empty topic
        "orders-",  # empty partition
        "orders-x",
        "orders-0.tmp",
        "orders-2147483648",  # beyond int32
        "remote-log-index-cache",
        "recovery-point-offset-checkpoint",
        f"t-0{UUID}-delete",  # no dot before the uuid
        f"t-0.{UUID} x-delete",  # whitespace
        "t-0.-delete",
        f"t-x.{UUID}-delete",
        f".{UUID}-delete",
        "lost+found",
    ],
)
def test_names_that_are_not_partition_dirs(name: str) -> None:
    assert parse_partition_dir_name(name) is None


def test_topic_partition_of_parsed_dir() -> None:
    parsed = parse_partition_dir_name("a-1")
    assert parsed is not None and parsed.topic_partition == TopicPartition("a", 1)


# --- properties ---------------------------------------------------------------------------------

_TOPIC_LIKE = st.one_of(
    st.text(max_size=260),
    st.text(
        st.sampled_from("abcXYZ019._-/ \n\x00é"),
        max_size=260,
    ),
    st.from_regex(r"[a-zA-Z0-9._-]{1,249}", fullmatch=True),
)


@given(_TOPIC_LIKE, st.integers(0, 2**31 - 1))
def test_any_string_validates_and_round_trips_or_raises(topic: str, partition: int) -> None:
    try:
        validate_topic_name(topic)
    except InvalidTopicError:
        with pytest.raises(InvalidTopicError):
            partition_dir_name(TopicPartition(topic, partition))
        return
    tp = TopicPartition(topic, partition)
    name = partition_dir_name(tp)
    assert "/" not in name and "\x00" not in name and name not in (".", "..")
    assert parse_partition_dir_name(name) == ParsedPartitionDir(
        topic, partition, PartitionDirKind.LIVE, None
    )
    uuid_hex = new_dir_uuid_hex()
    for make, kind in (
        (delete_dir_name, PartitionDirKind.DELETE),
        (stray_dir_name, PartitionDirKind.STRAY),
        (future_dir_name, PartitionDirKind.FUTURE),
    ):
        suffixed = make(tp, uuid_hex)
        assert "/" not in suffixed
        parsed = parse_partition_dir_name(suffixed)
        assert parsed is not None
        assert (parsed.partition, parsed.kind, parsed.uuid) == (partition, kind, uuid_hex)
        if kind is PartitionDirKind.FUTURE:
            assert parsed.topic == topic
        else:
            assert len(suffixed) <= MAX_DIR_NAME_LENGTH
            assert topic.startswith(parsed.topic) and parsed.topic


@given(st.text(max_size=80))
def test_parse_never_raises(name: str) -> None:
    parsed = parse_partition_dir_name(name)
    if parsed is not None:
        assert parsed.topic and 0 <= parsed.partition <= 2**31 - 1
