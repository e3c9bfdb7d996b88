"""``seglog acls``: add, remove and list ACLs (like ``kafka-acls.sh``).

Two ways to reach the ACLs, with the same options and output:

* **through a broker** (``--bootstrap-server HOST:PORT``): DescribeAcls, CreateAcls and
  DeleteAcls over Kafka's protocol, to ``seglog serve`` or a Kafka broker; the principal of the
  connection needs DESCRIBE (list) or ALTER (add, remove) on the cluster;
* **offline, on the data directory** (``--data-dir DIR``): the ACL file of the first data
  directory (:mod:`seglog.broker.acl.acl_file`). ``--list`` only reads it (no lock, beside a
  running server); ``--add`` and ``--remove`` take the directory's lock, so they wait for (and
  then refuse, naming it) a running ``seglog serve``: go through the server then, which owns
  the ACLs it enforces. A server loads the file when it starts.

Output, as ``kafka-acls.sh`` prints it (one line per resource, wrapped here)::

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders,
    patternType=LITERAL)`:
        (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

``--remove`` asks "Are you sure ... (y/n)" on a terminal unless ``--force`` (decision: when
stdin is not a terminal, a script, it does not ask, rather than read an answer from its input).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from seglog.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from seglog.errors import InvalidAclError

if TYPE_CHECKING:
    from seglog.broker.acl.model import AclBinding, AclFilter
    from seglog.cli.common import Subparsers

HELP = "add, remove and list ACLs (like kafka-acls.sh)"
EPILOG = """\
Examples:
  seglog acls --bootstrap-server localhost:9092 --add --allow-principal User:alice \\
      --operation Read --operation Describe --topic orders
  seglog acls --bootstrap-server localhost:9092 --add --allow-principal User:bob \\
      --consumer --topic orders --group billing
  seglog acls --bootstrap-server localhost:9092 --list --topic orders
  seglog acls --bootstrap-server broker:9093 --command-config admin.properties --list
      (admin.properties: security.protocol=SASL_SSL, ssl.truststore.location=ca.pem,
       sasl.mechanism=SCRAM-SHA-512, sasl.jaas.config=... username="admin" password="...";)
  seglog --data-dir /var/lib/seglog acls --add --deny-principal 'User:*' --operation Write \\
      --topic audit- --resource-pattern-type prefixed
  seglog --data-dir /var/lib/seglog acls --remove --topic orders --force"""


class AclBackend(Protocol):
    """Where the ACLs are: a broker or the data directory."""

    def describe(self, selection: AclFilter) -> list[AclBinding]: ...

    def create(self, bindings: list[AclBinding]) -> None: ...

    def delete(self, selections: list[AclFilter]) -> list[list[AclBinding]]: ...


def register(subparsers: Subparsers) -> None:
    """Add ``seglog acls``."""
    parser = subparsers.add_parser(
        "acls",
        help=HELP,
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs")
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="go through this broker (else: the ACL file of the first --data-dir)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="--bootstrap-server: a properties file with the connection's security.protocol, "
        "ssl.* and sasl.* settings (as kafka-acls.sh)",
    )
    repeatable = (
        ("--topic", "topics", "T", "a topic"),
        ("--group", "groups", "G", "a consumer group"),
        ("--transactional-id", "transactional_ids", "ID", "a transactional id"),
        ("--operation", "operations", "OP", "e.g. Read (default: All)"),
        ("--allow-principal", "allow_principals", "P", "e.g. User:alice"),
        ("--deny-principal", "deny_principals", "P", "e.g. User:*"),
        ("--allow-host", "allow_hosts", "H", "default: *"),
        ("--deny-host", "deny_hosts", "H", "default: *"),
        ("--principal", "principals", "P", "--list: only this principal's ACLs"),
    )
    for flag, dest, metavar, text in repeatable:
        parser.add_argument(
            flag, dest=dest, metavar=metavar, help=text, action="append", default=[]
        )
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default="LITERAL",
        metavar="TYPE",
        help="LITERAL (default) or PREFIXED; --list/--remove also ANY or MATCH",
    )
    role = parser.add_mutually_exclusive_group()
    role.add_argument("--producer", action="store_true", help="the producer role's ACLs")
    role.add_argument("--consumer", action="store_true", help="the consumer role's ACLs")
    parser.add_argument("--idempotent", action="store_true", help="--producer: IdempotentWrite")
    parser.add_argument("--force", action="store_true", help="--remove: do not ask")
    parser.set_defaults(handler=run, parser=parser)


def _usage_error(args: argparse.Namespace, message: str) -> int:
    parser: argparse.ArgumentParser = args.parser
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Entry point of ``seglog acls``."""
    from seglog.cli import acls_options as options

    role = args.producer or args.consumer
    if args.list and (role or args.allow_principals or args.deny_principals or args.allow_hosts
                      or args.deny_hosts):  # fmt: skip
        return _usage_error(args, "--list takes no --producer, --consumer, --allow-*, --deny-*")
    if role and (args.operations or args.deny_principals or args.deny_hosts):
        return _usage_error(
            args, "--producer and --consumer take no --operation, --deny-principal, --deny-host"
        )
    if args.command_config is not None and not args.bootstrap_server:
        return _usage_error(args, "--command-config needs --bootstrap-server")
    if args.idempotent and not args.producer:
        return _usage_error(args, "The --idempotent option is only available if --producer is set")
    if args.consumer and not (args.topics and args.groups):
        return _usage_error(args, "--consumer needs --topic and --group")
    if args.producer and not (args.topics or args.transactional_ids):
        return _usage_error(args, "--producer needs --topic or --transactional-id")
    try:
        if args.add:
            bindings = options.bindings_to_add(args)
            with _backend(args, writes=True) as backend:
                return _add(backend, bindings)
        if args.remove:
            selections = options.filters_to_remove(args)
            if not args.force and not _confirmed(selections):
                return EXIT_FAILURE
            with _backend(args, writes=True) as backend:
                return _remove(backend, selections)
        selections = options.filters_to_list(args)
    except InvalidAclError as error:
        return _usage_error(args, str(error))
    with _backend(args, writes=False) as backend:
        return _list(backend, selections, args.principals)


@contextmanager
def _backend(args: argparse.Namespace, *, writes: bool) -> Iterator[AclBackend]:
    if args.bootstrap_server:
        from seglog.cli.acls_wire import AclClient
        from seglog.cli.client_security import security_of

        with AclClient(args.bootstrap_server, security=security_of(args)) as client:
            yield client
        return
    from seglog.broker.acl.authorizer import AclAuthorizer
    from seglog.broker.acl.settings import AuthorizerSettings

    if not writes:
        from seglog.cli.common import broker_config

        yield AclAuthorizer(Path(broker_config(args).log_dirs[0]), AuthorizerSettings())
        return
    from seglog.cli.common import open_manager

    with open_manager(args, writes=True) as manager:
        yield AclAuthorizer(manager.first_directory, AuthorizerSettings())


def _grouped(bindings: list[AclBinding]) -> dict[str, list[AclBinding]]:
    from seglog.cli.acls_options import pattern_text

    grouped: dict[str, list[AclBinding]] = {}
    for acl in sorted(bindings):
        text = pattern_text(acl.resource_type, acl.resource_name, acl.pattern_type)
        grouped.setdefault(text, []).append(acl)
    return grouped


def _print_block(heading: str, acls: list[AclBinding]) -> None:
    from seglog.cli.acls_options import entry_text

    lines = "\n".join("\t" + entry_text(acl) for acl in acls)
    print(f"{heading}: \n {lines} \n")


def _add(backend: AclBackend, bindings: list[AclBinding]) -> int:
    for resource, acls in _grouped(bindings).items():
        _print_block(f"Adding ACLs for resource `{resource}`", acls)
    backend.create(bindings)
    return EXIT_OK


def _remove(backend: AclBackend, selections: list[AclFilter]) -> int:
    removed = [acl for group in backend.delete(selections) for acl in group]
    for resource, acls in _grouped(removed).items():
        _print_block(f"Removed ACLs for resource `{resource}`", acls)
    return EXIT_OK


def _list(backend: AclBackend, selections: list[AclFilter], principals: list[str]) -> int:
    found = sorted({acl for selection in selections for acl in backend.describe(selection)})
    if not principals:
        for resource, acls in _grouped(found).items():
            _print_block(f"Current ACLs for resource `{resource}`", acls)
        return EXIT_OK
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        mine = [acl for acl in found if acl.principal == principal]
        for resource, acls in _grouped(mine).items():
            _print_block(f"Current ACLs for resource `{resource}`", acls)
    return EXIT_OK


def _confirmed(selections: list[AclFilter]) -> bool:
    """Ask on a terminal (see the module docstring)."""
    if not sys.stdin.isatty():
        return True
    described = "\n".join(f"\t{s}" for s in selections)
    answer = input(f"Are you sure you want to remove ACLs matching: \n{described} \n (y/n) ")
    return answer.strip().lower() in ("y", "yes")
