"""``seglog consumer-groups --reset-offsets``: which partitions, and the new offset of each.

Kafka's ``ConsumerGroupCommand`` rules, computed against the logs of the data dirs:

* partitions: ``--topic T`` is every partition of T here, ``--topic T:0,2`` those listed
  (repeatable); ``--all-topics`` every partition the group has committed offsets for whose
  log is here (others are named on stderr and left as they are: a copied broker directory
  may lack some topics);
* ``--to-earliest``: the log start offset; ``--to-latest``: the log end offset (the high
  watermark); ``--to-offset N``: N; ``--shift-by N``: the committed offset + N (a partition
  without one is an error, as in Kafka); ``--to-datetime T``: the first offset whose
  timestamp is at or after T (ISO 8601; without a zone, local time, as Kafka), else the log
  end offset;
* a new offset outside [log start, log end] is moved to the nearest end, with Kafka's
  warning on stderr ("New offset (N) is lower than earliest offset ...").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime

from seglog.engine.log_manager import LogManager
from seglog.errors import InvalidConfigError, UnknownTopicError
from seglog.format.group_records import OffsetCommitValue
from seglog.format.topic_names import TopicPartition


@dataclass(frozen=True, slots=True)
class ResetSpec:
    """One of the five ways to pick the new offset (``kind`` and its argument)."""

    kind: str  # earliest, latest, offset, shift, datetime
    value: int = 0  # the offset, the shift, or the datetime in epoch ms


def parse_topic_spec(text: str) -> tuple[str, list[int] | None]:
    """``T`` or ``T:0,1,2`` (Kafka's ``--topic`` for resets)."""
    topic, sep, numbers = text.partition(":")
    if not topic:
        raise InvalidConfigError(f"--topic {text!r}: no topic name")
    if not sep:
        return topic, None
    try:
        return topic, [int(n) for n in numbers.split(",") if n.strip()]
    except ValueError:
        raise InvalidConfigError(
            f"--topic {text!r}: partitions must be numbers, as in T:0,1,2"
        ) from None


def parse_datetime_ms(text: str) -> int:
    """An ISO 8601 date-time (``2024-01-31T12:00:00.000``, optional zone) in epoch ms."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidConfigError(
            f"--to-datetime {text!r}: expected ISO 8601, e.g. 2024-01-31T12:00:00.000 or "
            "2024-01-31T12:00:00.000+01:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as Kafka reads a date-time without zone
    return int(moment.timestamp() * 1000)


def partitions_to_reset(
    manager: LogManager,
    committed: dict[TopicPartition, OffsetCommitValue],
    topics: list[str],
    all_topics: bool,
) -> list[TopicPartition]:
    """The partitions ``--topic``/``--all-topics`` name, sorted."""
    if all_topics:
        found = [tp for tp in sorted(committed) if tp.partition in manager.partitions_of(tp.topic)]
        for tp in sorted(set(committed) - set(found)):
            print(
                f"seglog: {tp} is not in these data dirs: its offset is left as is", file=sys.stderr
            )
        return found
    out: set[TopicPartition] = set()
    for spec in topics:
        topic, numbers = parse_topic_spec(spec)
        here = manager.partitions_of(topic)
        if not here:
            raise UnknownTopicError(f"topic {topic!r} does not exist in these data dirs")
        for number in here if numbers is None else numbers:
            if number not in here:
                raise UnknownTopicError(f"partition {topic}-{number} does not exist here")
            out.add(TopicPartition(topic, number))
    return sorted(out)


def new_offset(
    manager: LogManager,
    tp: TopicPartition,
    spec: ResetSpec,
    current: OffsetCommitValue | None,
) -> int:
    """The offset ``spec`` gives ``tp``, kept inside [log start, log end]."""
    log = manager.get_log(tp.topic, tp.partition)
    earliest, latest = log.log_start_offset, log.high_watermark
    if spec.kind == "earliest":
        return earliest
    if spec.kind == "latest":
        return latest
    if spec.kind == "datetime":
        found = log.fetch_offset_by_timestamp(spec.value)
        return latest if found is None else found.offset
    if spec.kind == "shift":
        if current is None:
            raise InvalidConfigError(
                f"--shift-by: partition {tp} has no committed offset to shift "
                "(Kafka: expected a valid current offset)"
            )
        wanted = current.offset + spec.value
    else:
        wanted = spec.value
    if wanted < earliest:
        print(
            f"New offset ({wanted}) is lower than earliest offset for topic partition {tp}. "
            f"Value will be set to {earliest}",
            file=sys.stderr,
        )
        return earliest
    if wanted > latest:
        print(
            f"New offset ({wanted}) is higher than latest offset for topic partition {tp}. "
            f"Value will be set to {latest}",
            file=sys.stderr,
        )
        return latest
    return wanted
