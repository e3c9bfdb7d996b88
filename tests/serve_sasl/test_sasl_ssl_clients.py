"""kcat, confluent-kafka, kafka-python and aiokafka over SASL_SSL with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512: the SASL exchange runs inside TLS (the clients trust the test CA); allowed users
produce and consume; a wrong password or an unknown user is refused and nothing is written.

Users as over SASL_PLAINTEXT: ``admin`` from the ``sasl_ssl`` listener's JAAS text (PLAIN) and
``alice``, a SCRAM user added with ``seglog scram-credentials`` before the start.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sasl_clients import CLIENTS, clients_of
from sasl_server import (
    ADMIN_PASSWORD,
    ALICE_PASSWORD,
    MECHANISMS,
    SaslServe,
    add_user,
    sasl_ssl_properties,
)
from sasl_server import partition_dirs as on_disk
from tls_certs import Pki


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SaslServe]:
    data_dir = tmp_path_factory.mktemp("sasl-ssl") / "data"
    data_dir.mkdir()
    add_user(data_dir, "alice", ALICE_PASSWORD)
    served = SaslServe(data_dir, sasl_ssl_properties(pki)).start()
    try:
        assert served.server.ready_lines == [
            f"seglog serve: listening on SASL_SSL://{served.bootstrap}"
        ]
        yield served
        served.stop()
    finally:
        served.kill()


def login_of(client: str, mechanism: str) -> tuple[str, str]:
    if mechanism == "PLAIN" and client in ("kcat", "confluent-kafka"):
        return "admin", ADMIN_PASSWORD  # a JAAS user
    return "alice", ALICE_PASSWORD  # a stored SCRAM user (PLAIN checks her salted credential)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_allowed_user_produces_and_consumes_over_tls(
    server: SaslServe, pki: Pki, kcat: str, client: str, mechanism: str
) -> None:
    produce, consume = clients_of(kcat, client)
    user, password = login_of(client, mechanism)
    topic = f"tls-{client}-{mechanism}".lower()
    values = [f"{client} over SASL_SSL with {mechanism}: {i}" for i in range(5)]
    assert produce(server.bootstrap, mechanism, user, password, topic, values, ca=pki.ca) is None
    assert consume(server.bootstrap, mechanism, user, password, topic, 5, ca=pki.ca) == values
    assert f"{topic}-0" in on_disk(server.data_dir)


REFUSALS = {
    "wrong-password": ("SCRAM-SHA-256", "alice", "not-her-password"),
    "unknown-user": ("SCRAM-SHA-512", "mallory", ALICE_PASSWORD),
    "plain-wrong-password": ("PLAIN", "admin", "guess"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
@pytest.mark.parametrize("client", CLIENTS)
def test_refused_login_over_tls_writes_nothing(
    server: SaslServe, pki: Pki, kcat: str, client: str, case: str
) -> None:
    produce, _ = clients_of(kcat, client)
    mechanism, user, password = REFUSALS[case]
    topic = f"refused-tls-{client}-{case}"
    evidence = produce(server.bootstrap, mechanism, user, password, topic, ["x"], ca=pki.ca)
    assert evidence is not None, "the client says its records were acknowledged"
    if client in ("kcat", "confluent-kafka"):  # librdkafka names the broker's refusal
        assert "Authentication failed" in evidence or "Invalid username or password" in evidence
    assert topic not in {d.rpartition("-")[0] for d in on_disk(server.data_dir)}
    log = server.log()
    assert (
        "failed SASL authentication from 127.0.0.1 on SASL_SSL "
        f"(mechanism {mechanism}, user '{user}')" in log
    )
    assert password not in log  # never logged
