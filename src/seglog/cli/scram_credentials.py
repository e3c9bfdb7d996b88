"""``seglog scram-credentials``: add, delete and describe SCRAM users (like ``kafka-configs.sh
--alter --entity-type users``).

The credentials live salted (salt, stored key, server key, iterations; never the password) in
``scram-credentials.json`` at the root of the first data directory, written crash-safely; a
running ``seglog serve`` on that directory sees a change from the next login (no restart), so
this command runs beside the server without stopping it.

``--add`` takes Kafka's syntax: ``MECHANISM=[iterations=N,password=P]`` entries separated by
commas (``iterations`` defaults to 4096, Kafka's range is 4096..16384; ``salt=<base64>`` may be
given, else a random one is drawn). ``--delete`` takes mechanism names. ``--describe`` prints
Kafka's line per user: ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192``. ``--entity-name``, ``--add-config`` and ``--delete-config``
are accepted as Kafka spells them.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from seglog.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    broker_config,
    command_options_parent,
)

if TYPE_CHECKING:
    from seglog.broker.security.credential_store import Credentials
    from seglog.broker.security.scram import ScramCredential
    from seglog.cli.common import Subparsers

EPILOG = """\
Examples:
  seglog --data-dir data scram-credentials --user alice \\
      --add 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  seglog --data-dir data scram-credentials --user alice --delete SCRAM-SHA-512
  seglog --data-dir data scram-credentials --describe"""

_ENTRY = re.compile(r"\s*(?P<mechanism>[A-Z0-9-]+)=\[(?P<body>.*?)\]\s*(?:,|$)")
_FIELD_START = re.compile(r",(?=(?:iterations|password|salt)=)")


def register(subparsers: Subparsers) -> None:
    """Add ``seglog scram-credentials``."""
    parser = subparsers.add_parser(
        "scram-credentials",
        parents=[command_options_parent()],
        help="add, delete and describe SCRAM users (like kafka-configs.sh --entity-type users)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--user", "--entity-name", metavar="NAME", help="the user")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--add",
        "--add-config",
        metavar="MECH=[iterations=N,password=P],...",
        help="add or replace the user's credentials for these mechanisms",
    )
    action.add_argument(
        "--delete",
        "--delete-config",
        metavar="MECH[,MECH...]",
        help="delete the user's credentials for these mechanisms",
    )
    action.add_argument(
        "--describe", action="store_true", help="list the users (or --user) and their mechanisms"
    )
    parser.set_defaults(handler=lambda args: run(args, parser))


def parse_additions(text: str) -> dict[str, ScramCredential]:
    """``MECH=[iterations=N,password=P],...`` -> mechanism -> new salted credential."""
    from seglog.broker.security.scram import (
        DEFAULT_ITERATIONS,
        SCRAM_MECHANISMS,
        make_credential,
    )
    from seglog.errors import InvalidConfigError

    added: dict[str, ScramCredential] = {}
    position = 0
    while position < len(text):
        match = _ENTRY.match(text, position)
        if match is None or match.end() == position:
            raise InvalidConfigError(
                f"--add: cannot parse {text[position:]!r}: expected MECHANISM=[password=...]"
            )
        position = match.end()
        mechanism = match["mechanism"]
        if mechanism not in SCRAM_MECHANISMS:
            raise InvalidConfigError(
                f"--add: {mechanism!r} is not a SCRAM mechanism ({', '.join(SCRAM_MECHANISMS)})"
            )
        fields: dict[str, str] = {}
        for item in _FIELD_START.split(match["body"]):
            key, sep, value = item.partition("=")
            if not sep or key not in ("iterations", "password", "salt") or key in fields:
                raise InvalidConfigError(f"--add {mechanism}: bad field {key!r}")
            fields[key] = value
        if not fields.get("password"):
            raise InvalidConfigError(f"--add {mechanism}: password=... is required")
        try:
            iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
            salt = base64.b64decode(fields["salt"], validate=True) if "salt" in fields else None
        except (ValueError, binascii.Error) as error:
            raise InvalidConfigError(f"--add {mechanism}: {error}") from None
        added[mechanism] = make_credential(mechanism, fields["password"], iterations, salt)
    if not added:
        raise InvalidConfigError("--add: no credential given")
    return added


def describe_lines(credentials: Credentials, user: str | None) -> list[str]:
    """Kafka's describe lines, one per user (only ``user`` when given)."""
    users = [user] if user is not None else sorted(credentials)
    lines = []
    for name in users:
        entries = credentials.get(name, {})
        configs = ", ".join(
            f"{mechanism}=iterations={credential.iterations}"
            for mechanism, credential in sorted(entries.items())
        )
        lines.append(f"SCRAM credential configs for user-principal '{name}' are {configs}")
    return lines


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Entry point of ``seglog scram-credentials``."""
    from seglog.broker.security.credential_store import CredentialStore
    from seglog.broker.security.scram import SCRAM_MECHANISMS
    from seglog.errors import InvalidConfigError

    if (args.add is not None or args.delete is not None) and not args.user:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: --add and --delete need --user NAME", file=sys.stderr)
        return EXIT_USAGE
    directory = Path(broker_config(args, writes=True).log_dirs[0])
    store = CredentialStore(directory)
    if args.describe:
        for line in describe_lines(store.load(), args.user):
            print(line)
        return EXIT_OK
    user: str = args.user
    if args.add is not None:
        added = parse_additions(args.add)
        directory.mkdir(parents=True, exist_ok=True)
        store.alter(lambda credentials: credentials.setdefault(user, {}).update(added))
        print(f"Completed updating config for user {user}.")
        return EXIT_OK
    names = [m.strip() for m in args.delete.split(",") if m.strip()]
    for name in names:
        if name not in SCRAM_MECHANISMS:
            raise InvalidConfigError(f"--delete: {name!r} is not a SCRAM mechanism")
    missing: list[str] = []

    def delete(credentials: Credentials) -> None:
        entries = credentials.get(user, {})
        missing.extend(n for n in names if n not in entries)
        if not missing:
            for name in names:
                del entries[name]

    if not directory.is_dir():
        missing.extend(names)
    else:
        store.alter(delete)
    if missing:
        print(
            f"seglog: error: user {user} has no {', '.join(missing)} credential; nothing deleted",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    print(f"Completed updating config for user {user}.")
    return EXIT_OK
