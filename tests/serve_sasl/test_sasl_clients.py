"""kcat, confluent-kafka, kafka-python and aiokafka over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256
and SCRAM-SHA-512: allowed users produce and consume; a wrong password or an unknown user is
refused (SASL_AUTHENTICATION_FAILED) and nothing is written.

PLAIN users: ``admin`` from the listener's JAAS text, and ``alice`` (a SCRAM user of the
credential file, whose PLAIN password is checked against her salted credential). A user added
with ``seglog scram-credentials`` while the server runs logs in without a restart.
"""

from __future__ import annotations

import pytest
from sasl_clients import CLIENTS, clients_of, kcat_consume, kcat_produce
from sasl_server import ADMIN_PASSWORD, ALICE_PASSWORD, MECHANISMS, SaslServe, add_user
from sasl_server import partition_dirs as on_disk


def login_of(client: str, mechanism: str) -> tuple[str, str]:
    if mechanism == "PLAIN" and client in ("kcat", "confluent-kafka"):
        return "admin", ADMIN_PASSWORD  # a JAAS user
    return "alice", ALICE_PASSWORD  # a stored SCRAM user (PLAIN checks her salted credential)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_allowed_user_produces_and_consumes(
    sasl_serve: SaslServe, kcat: str, client: str, mechanism: str
) -> None:
    produce, consume = clients_of(kcat, client)
    user, password = login_of(client, mechanism)
    topic = f"ok-{client}-{mechanism}".lower()
    values = [f"{client}-{mechanism}-{i}" for i in range(5)]
    assert produce(sasl_serve.bootstrap, mechanism, user, password, topic, values) is None
    assert consume(sasl_serve.bootstrap, mechanism, user, password, topic, 5) == values
    assert f"{topic}-0" in on_disk(sasl_serve.data_dir)


REFUSALS = {
    "wrong-password": ("SCRAM-SHA-256", "alice", "not-her-password"),
    "unknown-user": ("SCRAM-SHA-512", "mallory", ALICE_PASSWORD),
    "plain-wrong-password": ("PLAIN", "admin", "guess"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
@pytest.mark.parametrize("client", CLIENTS)
def test_refused_login_writes_nothing(
    sasl_serve: SaslServe, kcat: str, client: str, case: str
) -> None:
    produce, _ = clients_of(kcat, client)
    mechanism, user, password = REFUSALS[case]
    topic = f"refused-{client}-{case}"
    evidence = produce(sasl_serve.bootstrap, mechanism, user, password, topic, ["x"])
    assert evidence is not None, "the client says its records were acknowledged"
    if client in ("kcat", "confluent-kafka"):  # librdkafka names the broker's refusal
        assert "Authentication failed" in evidence or "Invalid username or password" in evidence
    assert topic not in {d.rpartition("-")[0] for d in on_disk(sasl_serve.data_dir)}
    log = sasl_serve.log()
    assert (
        "failed SASL authentication from 127.0.0.1 on SASL_PLAINTEXT "
        f"(mechanism {mechanism}, user '{user}')" in log
    )
    assert password not in log  # never logged


def test_user_added_while_serving_logs_in(sasl_serve: SaslServe, kcat: str) -> None:
    add_user(sasl_serve.data_dir, "carol", "carol-pw")
    values = ["late-1", "late-2"]
    assert (
        kcat_produce(
            kcat, sasl_serve.bootstrap, "SCRAM-SHA-512", "carol", "carol-pw", "late", values
        )
        is None
    )
    assert (
        kcat_consume(kcat, sasl_serve.bootstrap, "SCRAM-SHA-256", "carol", "carol-pw", "late", 2)
        == values
    )
