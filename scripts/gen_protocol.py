"""Generate ``src/seglog/protocol/messages.py`` from Kafka's JSON message definitions.

Kafka describes every request, response and header in JSON files
(``clients/src/main/resources/common/message/*.json``). kafka-python 3.x ships the same files as
package data (``kafka.protocol.schemas.resources``), so this script reads them from an installed
kafka-python, for the messages seglog's server speaks, and writes one Python module holding

* one slotted dataclass per message and per nested struct, field names in snake_case
  (``TopicData`` -> ``topic_data``), defaults as Kafka's generated classes have them;
* ``SPECS``: for each message its api key, valid and flexible versions and the field table the
  codec (``seglog.protocol.codec``) compiles into per-version readers and writers.

The output is committed, so neither seglog nor its tests need kafka-python at run time; a test
regenerates it and compares, so the committed file always equals what Kafka's JSON says.

Run: ``python scripts/gen_protocol.py`` (writes the module) or ``--check`` (exit 1 if stale).
"""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "src" / "seglog" / "protocol" / "messages.py"

# The APIs seglog serves, and those the next issues need (transactions, SASL), as Kafka names them.
APIS = (
    "Produce Fetch ListOffsets Metadata OffsetCommit OffsetFetch FindCoordinator JoinGroup "
    "Heartbeat LeaveGroup SyncGroup DescribeGroups ListGroups SaslHandshake ApiVersions "
    "CreateTopics DeleteTopics DeleteRecords InitProducerId OffsetForLeaderEpoch "
    "AddPartitionsToTxn AddOffsetsToTxn EndTxn WriteTxnMarkers TxnOffsetCommit DescribeConfigs "
    "AlterConfigs DescribeLogDirs SaslAuthenticate CreatePartitions DeleteGroups "
    "IncrementalAlterConfigs DescribeCluster DescribeProducers DescribeTransactions "
    "ListTransactions OffsetDelete DescribeAcls CreateAcls DeleteAcls"
).split()
DATA = (
    "RequestHeader",
    "ResponseHeader",
    "ConsumerProtocolSubscription",
    "ConsumerProtocolAssignment",
)
MAX_VERSION = 0x7FFF

PRIMITIVES = {
    "bool": ("bool", "False"),
    "int8": ("int", "0"),
    "int16": ("int", "0"),
    "uint16": ("int", "0"),
    "int32": ("int", "0"),
    "uint32": ("int", "0"),
    "int64": ("int", "0"),
    "float64": ("float", "0.0"),
    "string": ("str", '""'),
    "bytes": ("bytes", 'b""'),
    "uuid": ("UUID", "ZERO_UUID"),
    "records": ("Records", "None"),
}


def load_json(name: str) -> dict[str, Any]:
    """One JSON definition, its ``//`` comment lines removed (Kafka's files carry a licence header)."""
    text = resources.files("kafka.protocol.schemas.resources").joinpath(f"{name}.json").read_text()
    return dict(
        json.loads(
            "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
        )
    )


def snake(name: str) -> str:
    """Kafka's CamelCase field name in snake_case: ``ThrottleTimeMs`` -> ``throttle_time_ms``."""
    step = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", step).lower()


def versions(text: str | None) -> tuple[int, int] | None:
    """``"3+"`` -> (3, MAX), ``"0-12"`` -> (0, 12), ``"5"`` -> (5, 5), ``"none"``/absent -> None."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    if "-" in text:
        low, high = text.split("-")
        return int(low), int(high)
    return int(text), int(text)


class Generator:
    """Collects the dataclasses and the spec table of every message, then renders the module."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.struct_specs: list[str] = []
        self.message_specs: list[str] = []

    def message(self, name: str) -> None:
        schema = load_json(name)
        common = {struct["name"]: struct for struct in schema.get("commonStructs", [])}
        emitted: set[str] = set()
        fields_expr = self.struct(name, name, schema["fields"], common, emitted)
        valid = versions(schema["validVersions"])
        flexible = versions(schema.get("flexibleVersions"))
        self.message_specs.append(
            f"    {name!r}: MessageSpec({name!r}, {name}, {schema.get('apiKey', -1)}, "
            f"{schema['type']!r}, {valid!r}, {flexible!r}, {fields_expr}),"
        )

    def struct(
        self,
        message: str,
        struct_name: str,
        fields: list[dict[str, Any]],
        common: dict[str, Any],
        emitted: set[str],
    ) -> str:
        """Emit the dataclass for one struct (children first); return its field table expression."""
        class_name = struct_name if struct_name == message else f"{message}{struct_name}"
        lines: list[str] = []
        specs: list[str] = []
        for field in fields:
            attr = snake(field["name"])
            kind = field["type"]
            element = kind[2:] if kind.startswith("[]") else kind
            nested: str | None = None
            if element not in PRIMITIVES:
                nested_fields = field.get("fields") or common[element]["fields"]
                nested = f"{message}{element}"
                if nested not in emitted:
                    emitted.add(nested)
                    self.struct(message, element, nested_fields, common, emitted)
            annotation, default = self.annotation(field, element, nested)
            lines.append(f"    {attr}: {annotation} = {default}")
            spec_kind = "array" if kind.startswith("[]") else ("struct" if nested else kind)
            specs.append(
                f"FieldSpec({attr!r}, {spec_kind!r}, {element if nested is None else None!r}, "
                f"{nested or 'None'}, {versions(field['versions'])!r}, "
                f"{versions(field.get('nullableVersions'))!r}, {versions(field.get('taggedVersions'))!r}, "
                f"{field.get('tag')!r}, {field.get('flexibleVersions') == 'none'!r})"
            )
        body = "\n".join(lines) if lines else "    pass"
        self.classes.append(f"@dataclass(slots=True)\nclass {class_name}:\n{body}\n")
        table = "(\n        " + ",\n        ".join(specs) + ",\n    )" if specs else "()"
        if class_name != message:
            self.struct_specs.append(f"STRUCTS[{class_name!r}] = StructSpec({class_name}, {table})")
        return table

    @staticmethod
    def annotation(field: dict[str, Any], element: str, nested: str | None) -> tuple[str, str]:
        """The dataclass annotation and default expression of one field."""
        nullable = versions(field.get("nullableVersions")) is not None
        default = field.get("default")
        if field["type"].startswith("[]"):
            item = nested or PRIMITIVES[element][0]
            if nullable and default == "null":
                return f"list[{item}] | None", "None"
            return f"list[{item}]" + (" | None" if nullable else ""), "field(default_factory=list)"
        if nested is not None:
            if nullable:
                return f"{nested} | None", "None"
            return nested, f"field(default_factory={nested})"
        python_type, zero = PRIMITIVES[element]
        if element == "records":
            return "Records", "None"
        if nullable and (default == "null" or element == "bytes"):
            return f"{python_type} | None", "None" if default in (None, "null") else repr(default)
        annotation = f"{python_type} | None" if nullable else python_type
        if default is None or default == "null":
            return annotation, zero
        if python_type == "int":
            return annotation, str(int(str(default), 0))
        if python_type == "bool":
            return annotation, str(str(default).lower() == "true")
        if python_type == "float":
            return annotation, repr(float(default))
        if python_type == "str":
            return annotation, repr(str(default))
        return annotation, zero

    def render(self) -> str:
        header = (
            '"""Kafka\'s protocol messages: one dataclass per message and struct, and their field tables.\n\n'
            "GENERATED by scripts/gen_protocol.py from Kafka's JSON message definitions (Apache-2.0, as\n"
            "shipped in kafka-python's package data); do not edit. Field names are Kafka's in snake_case;\n"
            "defaults are those of Kafka's generated classes. ``SPECS`` maps a message or struct name to its\n"
            "spec, which ``seglog.protocol.codec`` compiles into a reader and a writer per version.\n"
            '"""\n\n'
            "# ruff: noqa: E501\n"
            "from __future__ import annotations\n\n"
            "from dataclasses import dataclass, field\n"
            "from uuid import UUID\n\n"
            "from seglog.protocol.schema import ZERO_UUID, FieldSpec, MessageSpec, Records, StructSpec\n\n\n"
        )
        classes = "\n\n".join(self.classes)
        table = "\n\nSTRUCTS: dict[str, StructSpec] = {}\n" + "\n".join(self.struct_specs)
        table += "\n\nSPECS: dict[str, MessageSpec] = {\n" + "\n".join(self.message_specs) + "\n}\n"
        return header + classes + table


def generate() -> str:
    generator = Generator()
    for name in DATA:
        generator.message(name)
    for api in APIS:
        generator.message(f"{api}Request")
        generator.message(f"{api}Response")
    return generator.render()


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python scripts/gen_protocol.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
