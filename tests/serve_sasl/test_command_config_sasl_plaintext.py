"""``seglog acls`` and ``seglog transactions`` with ``--bootstrap-server ... --command-config FILE``
over a SASL_PLAINTEXT listener of a real ``seglog serve`` with the ACL authorizer, for each of
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, the file written as for Kafka's tools
(``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` with ``PlainLoginModule`` or
``ScramLoginModule``).

``User:admin`` is the super user: PLAIN from the listener's JAAS text, SCRAM credentials added
with the CLI before the start (the same principal by every mechanism). ``alice`` is a SCRAM user
with no ACL but those the tests grant. A wrong password or an unknown user fails with the
server's refusal and exit 1, and a later ``--list`` with the right password shows that nothing
was changed (and that the server still serves)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from sasl_clients import CLIENT_TIMEOUT_S
from sasl_server import (
    ADMIN_PASSWORD,
    ALICE_PASSWORD,
    MECHANISMS,
    SETTINGS,
    SaslServe,
    add_user,
    partition_dirs,
)
from sasl_server import seglog as seglog_cli
from tls_server import serve_for_fixture

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
WRONG = "not-the-password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslServe]:
    data_dir = tmp_path_factory.mktemp("cli-sasl-plaintext") / "data"
    data_dir.mkdir()
    add_user(data_dir, "admin", ADMIN_PASSWORD)
    add_user(data_dir, "alice", ALICE_PASSWORD)
    settings = SETTINGS | {
        "connection.failed.authentication.delay.ms": "10",
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
    }
    yield from serve_for_fixture(SaslServe(data_dir, settings))


def command_config(tmp_path: Path, mechanism: str, user: str, password: str) -> Path:
    """A ``--command-config`` file as ``kafka-acls.sh`` reads it."""
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    path = tmp_path / f"{user}-{mechanism}-{len(password)}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required \\\n"
        f'    username="{user}" \\\n'
        f'    password="{password}";\n'
    )
    return path


def cli(server: SaslServe, command: str, config: Path, *args: str) -> tuple[int, str, str]:
    """``seglog COMMAND --bootstrap-server <the listener> --command-config CONFIG ARGS``."""
    done = seglog_cli(
        server.data_dir.parent / "unused",
        command,
        "--bootstrap-server",
        server.bootstrap,
        "--command-config",
        str(config),
        *args,
    )
    return done.returncode, done.stdout, done.stderr


def listed(server: SaslServe, tmp_path: Path, *args: str) -> str:
    """The ACLs ``admin`` lists over SCRAM-SHA-512 (the oracle of "nothing was changed")."""
    admin = command_config(tmp_path, "SCRAM-SHA-512", "admin", ADMIN_PASSWORD)
    code, out, err = cli(server, "acls", admin, "--list", *args)
    assert code == 0, err
    return out


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_add_list_remove(server: SaslServe, tmp_path: Path, mechanism: str) -> None:
    admin = command_config(tmp_path, mechanism, "admin", ADMIN_PASSWORD)
    topic = f"orders-{mechanism.lower()}"
    code, _, err = cli(
        server, "acls", admin, "--add", "--allow-principal", "User:alice", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    assert code == 0, err
    code, out, err = cli(server, "acls", admin, "--list", "--topic", topic)
    assert code == 0, err
    assert topic in out and "User:alice" in out and "READ" in out.upper(), out
    code, _, err = cli(
        server, "acls", admin, "--remove", "--force", "--allow-principal", "User:alice",
        "--operation", "Read", "--topic", topic,
    )  # fmt: skip
    assert code == 0, err
    assert "User:alice" not in listed(server, tmp_path, "--topic", topic)
    assert server.alive()


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", ["admin", "nobody"])
def test_a_refused_login_changes_nothing(
    server: SaslServe, tmp_path: Path, mechanism: str, user: str
) -> None:
    config = command_config(tmp_path, mechanism, user, WRONG)
    topic = f"never-{mechanism.lower()}-{user}"
    code, out, err = cli(
        server, "acls", config, "--add", "--allow-principal", "User:*", "--operation", "All",
        "--topic", topic,
    )  # fmt: skip
    assert code == 1, (out, err)
    assert err.startswith("seglog: error:"), err
    assert f"refused the {mechanism} login" in err and "SASL_AUTHENTICATION_FAILED" in err, err
    assert server.bootstrap in err, err
    assert WRONG not in err + out
    assert topic not in listed(server, tmp_path)
    assert server.alive()


def test_transactions_list_over_scram(server: SaslServe, tmp_path: Path) -> None:
    """A transaction committed by librdkafka as ``admin`` (SCRAM-SHA-512) is listed by the CLI
    as ``admin`` (SCRAM-SHA-256); ``alice`` sees it only once granted DESCRIBE on its id (as
    Kafka, ListTransactions shows only the ids the principal may describe); with a wrong
    password the listing fails and shows nothing."""
    producer = Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "transactional.id": "cli-scram-txn",
        }
    )
    producer.init_transactions(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("paid-sasl", b"v")
    producer.commit_transaction(CLIENT_TIMEOUT_S)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    del producer
    assert "paid-sasl-0" in partition_dirs(server.data_dir)

    admin = command_config(tmp_path, "SCRAM-SHA-256", "admin", ADMIN_PASSWORD)
    code, out, err = cli(server, "transactions", admin, "--list")
    assert code == 0, err
    assert "cli-scram-txn" in out and "CompleteCommit" in out, out

    alice = command_config(tmp_path, "SCRAM-SHA-512", "alice", ALICE_PASSWORD)
    code, out, err = cli(server, "transactions", alice, "--list")
    assert code == 0, err
    assert "cli-scram-txn" not in out, out
    code, _, err = cli(
        server, "acls", admin, "--add", "--allow-principal", "User:alice", "--operation",
        "Describe", "--transactional-id", "cli-scram-txn",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = cli(server, "transactions", alice, "--list")
    assert code == 0, err
    assert "cli-scram-txn" in out, out

    wrong = command_config(tmp_path, "SCRAM-SHA-256", "alice", WRONG)
    code, out, err = cli(server, "transactions", wrong, "--list")
    assert code == 1 and out == "", (out, err)
    assert "refused the SCRAM-SHA-256 login" in err and WRONG not in err, err
    assert server.alive()
