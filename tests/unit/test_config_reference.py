"""README.md's configuration reference is the one the code renders, and it documents every key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from seglog import config_docs
from seglog.config import BROKER_KEYS, TOPIC_CONFIG_KEYS, ConfigType
from seglog.config_docs import (
    REGENERATE_COMMAND,
    SECTION_TITLE,
    MissingDocsError,
    check_documented,
    default_text,
    java_double,
    kafka_text,
    readme_section,
    render_reference,
)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_section_is_the_rendered_reference() -> None:
    text = README.read_text(encoding="utf-8")
    section = readme_section(text)
    assert section is not None, f"README.md has no '{SECTION_TITLE}' section"
    rendered = render_reference()
    assert section == rendered, (
        "README.md's configuration reference differs from the code (a key was added, a "
        f"default or a description changed): regenerate it with `{REGENERATE_COMMAND}`"
    )


def test_the_reference_follows_settings_and_precedes_design() -> None:
    headings = [line for line in README.read_text().splitlines() if line.startswith("## ")]
    at = headings.index(SECTION_TITLE)
    assert headings[at - 1] == "## Settings seglog adds to Kafka's"
    assert headings[at + 1] == "## Design"


def test_every_key_has_a_description() -> None:
    check_documented()
    rendered = render_reference()
    for name in TOPIC_CONFIG_KEYS:
        assert f"| `{name}` |" in rendered, name
    for name in BROKER_KEYS:
        assert f"| `{name}` |" in rendered, name


def test_a_key_without_description_fails_saying_how_to_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = dict(config_docs.TOPIC_CONFIG_DOCS)
    del docs["segment.ms"]
    docs["segment.mss"] = "a typo"
    monkeypatch.setattr(config_docs, "TOPIC_CONFIG_DOCS", docs)
    with pytest.raises(MissingDocsError) as raised:
        render_reference()
    message = str(raised.value)
    assert "topic configs without a description: segment.ms" in message
    assert "descriptions of unknown topic configs: segment.mss" in message
    assert "config_docs.py" in message and REGENERATE_COMMAND in message


def test_a_broker_setting_without_description_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = dict(config_docs.BROKER_SETTING_DOCS)
    del docs["log.cleaner.threads"]
    monkeypatch.setattr(config_docs, "BROKER_SETTING_DOCS", docs)
    with pytest.raises(MissingDocsError, match=r"broker settings without a description: log\."):
        check_documented()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("segment.bytes", "`1073741824` (1 GiB)"),
        ("segment.ms", "`604800000` (7 days)"),
        ("retention.ms", "`604800000` (7 days)"),
        ("retention.bytes", "`-1`"),
        ("max.message.bytes", "`1048588` (1 MiB + 12)"),
        ("flush.messages", "`9223372036854775807` (Long.MAX_VALUE)"),
        ("cleanup.policy", "`delete`"),
        ("min.cleanable.dirty.ratio", "`0.5`"),
        ("preallocate", "`false`"),
        ("compression.type", "`producer`"),
    ],
)
def test_defaults_are_printed_as_kafka_prints_them(name: str, text: str) -> None:
    key = TOPIC_CONFIG_KEYS[name]
    assert default_text(name, key.kind, key.default) == text
    assert f"| `{name}` |" in render_reference()


def test_kafka_text_of_values() -> None:
    assert kafka_text(ConfigType.LIST, ("compact", "delete")) == "compact,delete"
    assert kafka_text(ConfigType.LONG, None) == "null"
    assert kafka_text(ConfigType.BOOLEAN, True) == "true"
    assert java_double(0.9) == "0.9"
    assert java_double(sys.float_info.max) == "1.7976931348623157E308"
    assert java_double(1e7) == "1.0E7"
    assert java_double(1.5e-5) == "1.5E-5"
    assert java_double(0.0) == "0.0"


def test_synonym_defaults_are_kafkas() -> None:
    rendered = render_reference()
    assert "| `log.roll.ms` | long | `null` |" in rendered
    assert "| `log.roll.hours` | int | `168` |" in rendered
    assert "| `log.retention.minutes` | int | `null` |" in rendered
    assert "| `log.retention.hours` | int | `168` |" in rendered
    assert "| `log.flush.interval.ms` | long | `null` |" in rendered
    assert "| `log.dir` | string | `/tmp/kafka-logs` |" in rendered


def test_valid_values_use_kafkas_validator_text() -> None:
    rendered = render_reference()
    assert "| `[14,...]` |" in rendered  # segment.bytes: Range.atLeast(14)
    assert "| `[0,...,1]` |" in rendered  # min.cleanable.dirty.ratio: Range.between(0, 1)
    assert "| `[compact, delete]` |" in rendered  # cleanup.policy: ValidList
    assert "| `[CreateTime, LogAppendTime]` |" in rendered


def test_the_script_checks_and_prints_the_section() -> None:
    script = ROOT / "scripts" / "config_reference.py"
    check = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    printed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True
    )
    assert printed.stdout == render_reference()


def test_readme_section_extraction() -> None:
    text = f"# x\n\n## A\n\na\n\n{SECTION_TITLE}\n\nbody\n\n## B\n\nb\n"
    assert readme_section(text) == f"{SECTION_TITLE}\n\nbody\n"
    assert readme_section("# x\n") is None
