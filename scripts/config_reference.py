"""Print, check or rewrite README.md's ``## Configuration reference`` section.

The section is rendered from ``src/seglog/config.py`` (names, types, defaults, checks) and
``src/seglog/config_docs.py`` (descriptions), so it cannot drift from the code:

    .venv/bin/python scripts/config_reference.py           # print the section
    .venv/bin/python scripts/config_reference.py --check   # exit 1 when README.md differs
    .venv/bin/python scripts/config_reference.py --write   # replace the section in README.md

``--write`` replaces the existing section in place (it never adds one: place the heading once
by hand); everything else in README.md is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seglog.config_docs import SECTION_TITLE, readme_section, render_reference

README = Path(__file__).resolve().parents[1] / "README.md"


def main(argv: list[str] | None = None) -> int:
    """Run the script; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md differs")
    mode.add_argument("--write", action="store_true", help="rewrite the section in README.md")
    args = parser.parse_args(argv)
    rendered = render_reference()
    if not (args.check or args.write):
        sys.stdout.write(rendered)
        return 0
    text = README.read_text(encoding="utf-8")
    current = readme_section(text)
    if current is None:
        print(f"{README} has no '{SECTION_TITLE}' section", file=sys.stderr)
        return 1
    if current == rendered:
        return 0
    if args.check:
        print(f"{README}: the configuration reference is out of date", file=sys.stderr)
        return 1
    README.write_text(text.replace(current, rendered, 1), encoding="utf-8")
    print(f"rewrote the configuration reference in {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
