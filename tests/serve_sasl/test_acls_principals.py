"""ACLs enforced for real principals: SASL users over SASL_SSL and a certificate's subject over
SSL with ``ssl.client.auth=required``, on one server with the ACL authorizer.

The data directory is prepared offline before the start (the server loads it): topics
``orders``, ``orders-<client>``, ``secret`` and ``certs`` with ``seglog topics create``; SCRAM
users ``alice`` and ``bob`` with ``seglog scram-credentials``; ACLs with ``seglog acls``:

* ``User:alice``: WRITE, READ, DESCRIBE on the topics whose names start with ``orders`` and READ
  on the groups whose names start with ``alice-`` (PREFIXED patterns); on ``secret`` the same
  ALLOWs (LITERAL) plus a DENY of WRITE (a DENY wins over any ALLOW);
* ``User:bob``: nothing;
* the certificate principal ``User:CN=alice,OU=eng,O=Acme,C=US``: WRITE, READ, DESCRIBE on
  ``certs`` only (her SASL name's ACLs are not hers: principals are compared whole);
* ``User:admin`` (PLAIN, from the listener's JAAS text) is in ``super.users``: no ACL needed.

"Nothing written" is read on disk: the refused topic's log segments stay empty.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from sasl_clients import CLIENTS, clients_of
from sasl_server import ADMIN_PASSWORD, ALICE_PASSWORD, add_user, sasl_ssl_properties
from sasl_server import seglog as seglog_cli
from tls_certs import ALICE_PRINCIPAL, Pki
from tls_clients import kafka_response_over_tls, librdkafka_ssl, read_over_ssl
from tls_server import TlsServe, serve_for_fixture

BOB_PASSWORD = "bob-secret"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
REFUSED = ("TOPIC_AUTHORIZATION_FAILED", "TopicAuthorizationFailed", "Topic authorization failed")


def cli(data_dir: Path, *args: str) -> None:
    done = seglog_cli(data_dir, *args)
    assert done.returncode == 0, done.stderr


def allow(data_dir: Path, principal: str, resource: tuple[str, str], *operations: str) -> None:
    ops = [arg for op in operations for arg in ("--operation", op)]
    cli(data_dir, "acls", "--add", "--allow-principal", principal, *ops, *resource)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsServe]:
    data_dir = tmp_path_factory.mktemp("acl-principals") / "data"
    data_dir.mkdir()
    for topic in ("orders", "secret", "certs", *(f"orders-{client}" for client in CLIENTS)):
        cli(data_dir, "topics", "create", "--topic", topic, "--partitions", "1")
    add_user(data_dir, "alice", ALICE_PASSWORD)
    add_user(data_dir, "bob", BOB_PASSWORD)
    prefixed = ("--resource-pattern-type", "prefixed")
    topics = ("--topic", "orders", *prefixed)
    allow(data_dir, "User:alice", topics, "Write", "Read", "Describe")
    allow(data_dir, "User:alice", ("--topic", "secret"), "Write", "Read", "Describe")
    allow(data_dir, "User:alice", ("--group", "alice-", *prefixed), "Read")
    deny = ("--deny-principal", "User:alice", "--operation", "Write", "--topic", "secret")
    cli(data_dir, "acls", "--add", *deny)
    allow(data_dir, ALICE_PRINCIPAL, ("--topic", "certs"), "Write", "Read", "Describe")
    properties = sasl_ssl_properties(pki, "SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0") | {
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
        "listener.name.ssl.ssl.client.auth": "required",
    }
    yield from serve_for_fixture(TlsServe(data_dir, properties))


def sasl(server: TlsServe) -> str:
    return server.bootstrap("SASL_SSL")


def log_bytes(data_dir: Path, topic: str) -> int:
    """The bytes of ``topic``'s partition 0 log segments on disk."""
    return sum(p.stat().st_size for p in (data_dir / f"{topic}-0").glob("*.log"))


@pytest.mark.parametrize("client", CLIENTS)
def test_alice_produces_and_consumes_with_her_group(
    server: TlsServe, pki: Pki, kcat: str, client: str
) -> None:
    produce, consume = clients_of(kcat, client)
    topic, values = f"orders-{client}", [f"alice via {client}: {i}" for i in range(5)]
    login = ("SCRAM-SHA-512", "alice", ALICE_PASSWORD)
    assert produce(sasl(server), *login, topic, values, ca=pki.ca) is None
    assert log_bytes(server.data_dir, topic) > 0
    assert consume(sasl(server), *login, topic, 5, ca=pki.ca, group=f"alice-{client}") == values


@pytest.mark.parametrize("client", CLIENTS)
def test_bob_without_acls_is_refused_and_writes_nothing(
    server: TlsServe, pki: Pki, kcat: str, client: str
) -> None:
    produce, _ = clients_of(kcat, client)
    before = log_bytes(server.data_dir, "orders")
    login = ("SCRAM-SHA-256", "bob", BOB_PASSWORD)
    evidence = produce(sasl(server), *login, "orders", ["bob was here"], ca=pki.ca)
    assert evidence is not None and any(r in evidence for r in REFUSED), evidence
    assert log_bytes(server.data_dir, "orders") == before


@pytest.mark.parametrize("client", CLIENTS)
def test_deny_wins_over_allow(server: TlsServe, pki: Pki, kcat: str, client: str) -> None:
    produce, _ = clients_of(kcat, client)
    login = ("SCRAM-SHA-512", "alice", ALICE_PASSWORD)
    evidence = produce(sasl(server), *login, "secret", ["not allowed"], ca=pki.ca)
    assert evidence is not None and any(r in evidence for r in REFUSED), evidence
    assert log_bytes(server.data_dir, "secret") == 0


@pytest.mark.parametrize("client", CLIENTS)
def test_super_user_needs_no_acl(server: TlsServe, pki: Pki, kcat: str, client: str) -> None:
    produce, consume = clients_of(kcat, client)
    login = ("PLAIN", "admin", ADMIN_PASSWORD)
    topic = f"admin-{client}"  # auto-created: a super user may CREATE too
    values = [f"admin via {client}: {i}" for i in range(3)]
    assert produce(sasl(server), *login, topic, values, ca=pki.ca) is None
    assert consume(sasl(server), *login, topic, 3, ca=pki.ca, group=f"admin-{client}") == values


def certificate_produce(server: TlsServe, pki: Pki, topic: str, value: bytes) -> str | None:
    """Produce one value as alice's certificate with confluent-kafka: the error or None."""
    from confluent_kafka import Producer

    config = {"bootstrap.servers": server.bootstrap("SSL"), "message.timeout.ms": 10_000}
    producer = Producer(config | librdkafka_ssl(pki, "alice"))
    errors: list[str] = []
    producer.produce(topic, value, on_delivery=lambda e, _m: e is None or errors.append(str(e)))
    assert producer.flush(30) == 0
    return errors[0] if errors else None


def test_certificate_principal_gets_exactly_its_acls(server: TlsServe, pki: Pki, kcat: str) -> None:
    # The SSL listener's override asks for a certificate: none, no connection.
    with pytest.raises((ssl.SSLError, EOFError, ConnectionResetError)):
        kafka_response_over_tls(server.bootstrap("SSL"), pki, None)
    assert certificate_produce(server, pki, "certs", b"from a certificate") is None
    records = read_over_ssl("kafka-python", kcat, server.bootstrap("SSL"), pki, "alice", "certs")
    assert [value for _, _, value in records] == [b"from a certificate"]
    # User:alice may write orders; the certificate's principal is another one and may not.
    before = log_bytes(server.data_dir, "orders")
    evidence = certificate_produce(server, pki, "orders", b"not mine")
    assert evidence is not None and any(r in evidence for r in REFUSED), evidence
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    from tls_clients import kafka_python_ssl

    producer = KafkaProducer(
        bootstrap_servers=server.bootstrap("SSL"), **kafka_python_ssl(pki, "alice")
    )
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("orders", b"not mine either").get(timeout=30)
    finally:
        producer.close()
    assert log_bytes(server.data_dir, "orders") == before


def test_alice_needs_read_on_the_group(server: TlsServe, pki: Pki) -> None:
    """A group alice has no ACL on: confluent-kafka's consumer is told GROUP_AUTHORIZATION_FAILED
    and gets no record, though she may read the topic."""
    from confluent_kafka import Consumer, KafkaError

    config = {
        "bootstrap.servers": sasl(server),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca),
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": ALICE_PASSWORD,
        "group.id": "not-hers",
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer(config)
    consumer.subscribe(["orders"])
    try:
        codes: set[int] = set()
        values: list[bytes] = []
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                codes.add(message.error().code())
                break
            values.append(message.value())
    finally:
        consumer.close()
    assert codes == {KafkaError.GROUP_AUTHORIZATION_FAILED}
    assert values == []
