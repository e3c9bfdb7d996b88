"""The options of ``seglog produce``: seglog's and Kafka's console producer's, merged.

Precedence, as in ``kafka-console-producer.sh``: an option given on the command line
(``--batch-size``, ``--linger-ms``/``--timeout``, ``--compression-codec``) wins over
``--producer-property KEY=VALUE``, which wins over ``--producer.config FILE``, which wins
over the defaults (the console producer's: ``batch.size`` 16384, ``linger.ms`` 1000,
compression none). Only ``batch.size``, ``linger.ms`` and ``compression.type`` mean something
to a producer that writes the log itself; any other producer property is refused by name,
rather than silently ignored. Of the line reader's ``--property`` keys, ``parse.key``,
``key.separator`` (default a tab, as Kafka's) and ``null.marker`` (a key or value equal to it
is null, as Kafka's) are supported; ``key.separator`` alone does nothing, as in Kafka.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from seglog.cli.produce_input import TextFormat
from seglog.errors import InvalidConfigError, InvalidRecordError
from seglog.format.compression import CompressionType
from seglog.format.properties import parse_properties
from seglog.format.topic_names import validate_topic_name
from seglog.storage.files import read_file_bytes

MAX_LINE_BYTES_LIMIT = 64 * 1024 * 1024
DEFAULT_BATCH_SIZE = 16 * 1024  # kafka-console-producer.sh --batch-size (batch.size)
DEFAULT_LINGER_MS = 1000  # kafka-console-producer.sh --timeout (linger.ms)
BATCH_SIZE_MAX = 64 * 1024 * 1024
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PRODUCER_PROPERTIES = ("batch.size", "linger.ms", "compression.type")
READER_PROPERTIES = ("parse.key", "key.separator", "null.marker")
MAX_CONFIG_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Settings:
    """What ``produce`` does, from its options (see the module docstring)."""

    topic: str
    batch_size: int
    linger_ms: int
    codec: CompressionType
    text: TextFormat


def _int_property(name: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidConfigError(f"producer property {name}={text!r} is not an integer") from None
    if not low <= value <= high:
        raise InvalidConfigError(f"producer property {name}={value} is outside {low}..{high}")
    return value


def producer_properties(args: argparse.Namespace) -> dict[str, str]:
    """``--producer.config`` then ``--producer-property`` (later wins); others refused."""
    properties: dict[str, str] = {}
    if args.producer_config is not None:
        data = read_file_bytes(args.producer_config, max_bytes=MAX_CONFIG_FILE_BYTES)
        properties.update(parse_properties(data.decode("iso-8859-1"), path=args.producer_config))
    properties.update(dict(args.producer_properties))
    for name in properties:
        if name not in PRODUCER_PROPERTIES:
            raise InvalidConfigError(
                f"producer property {name!r} is not supported by seglog produce (it writes "
                f"the log directly, there is no broker); supported: "
                f"{', '.join(PRODUCER_PROPERTIES)}"
            )
    return properties


def _reader_properties(args: argparse.Namespace) -> dict[str, str]:
    reader = dict(args.properties)
    for name in reader:
        if name not in READER_PROPERTIES:
            raise InvalidConfigError(
                f"--property {name!r} is not supported by seglog produce; supported: "
                f"{', '.join(READER_PROPERTIES)} (for JSON input use --format json)"
            )
    return reader


def settings_of(args: argparse.Namespace) -> Settings:
    """Check the options and merge Kafka's spellings with seglog's."""
    if args.topic is not None and args.topic_option is not None and args.topic != args.topic_option:
        raise InvalidConfigError(
            f"two topics given: {args.topic!r} and --topic {args.topic_option!r}"
        )
    topic = args.topic if args.topic is not None else args.topic_option
    if topic is None:
        raise InvalidConfigError("no topic given: 'seglog produce TOPIC' or '--topic TOPIC'")
    validate_topic_name(topic)
    props = producer_properties(args)
    reader = _reader_properties(args)
    batch_size = args.batch_size
    if batch_size is None:
        batch_size = _int_property(
            "batch.size", props.get("batch.size", str(DEFAULT_BATCH_SIZE)), 1, BATCH_SIZE_MAX
        )
    linger_ms = args.linger_ms
    if linger_ms is None:
        linger_ms = _int_property(
            "linger.ms", props.get("linger.ms", str(DEFAULT_LINGER_MS)), 0, 1 << 31
        )
    codec_name = args.compression_codec or props.get("compression.type", "none").strip()
    if codec_name not in CODECS:
        raise InvalidConfigError(
            f"compression.type {codec_name!r} is not one of {', '.join(CODECS)}"
        )
    if args.max_line_bytes > MAX_LINE_BYTES_LIMIT:
        raise InvalidRecordError(f"--max-line-bytes is above the limit {MAX_LINE_BYTES_LIMIT}")
    parse_key = reader.get("parse.key", "false").strip().lower()
    if parse_key not in ("true", "false"):
        raise InvalidConfigError(f"--property parse.key={parse_key!r}: give true or false")
    separator = args.key_separator
    if separator is None and parse_key == "true":
        separator = reader.get("key.separator", "\t")
    null_value = args.null_value
    null_key = None
    if "null.marker" in reader:
        null_key = reader["null.marker"]
        null_value = null_value if null_value is not None else reader["null.marker"]
    if args.format == "json" and (separator is not None or null_value is not None):
        raise InvalidRecordError(
            "--key-separator, --null-value and --property parse.key/null.marker are for text "
            "input; JSON lines say it themselves"
        )
    if separator == "":
        raise InvalidRecordError("--key-separator cannot be empty")
    return Settings(
        topic=topic,
        batch_size=batch_size,
        linger_ms=linger_ms,
        codec=CompressionType[codec_name.upper()],
        text=TextFormat(_encode_arg(separator), _encode_arg(null_value), _encode_arg(null_key)),
    )


def _encode_arg(text: str | None) -> bytes | None:
    # Command-line text back to the bytes the user typed (undecodable bytes survive).
    return None if text is None else text.encode("utf-8", "surrogateescape")
