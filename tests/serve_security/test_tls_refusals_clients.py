"""The TLS refusals through each of kcat, confluent-kafka, kafka-python and aiokafka.

One ``ssl.client.auth=required`` listener; alice (a certificate signed by the CA the server
trusts) first writes one record to a topic, then the same client library, misconfigured in one
way, tries to write another record to it:

* an expired client certificate (signed by the trusted CA): the server refuses it during the
  handshake, logging "certificate has expired";
* ``security.protocol=PLAINTEXT`` against the SSL port: the server takes the cleartext request
  for a broken handshake, logging "a client not speaking TLS? check its security.protocol";
* a client that trusts only another CA (it shows alice's good certificate): the client itself
  refuses the server's certificate and reports "certificate verify failed"; the server logs its
  failed handshake (with the client's ``unknown ca`` alert from librdkafka and kafka-python;
  aiokafka's asyncio TLS layer closes without an alert, so the server sees a reset).

Each client must fail with its own error (see :mod:`tls_refused`), the topic must still hold only
alice's record when read back through the same library with alice's certificate, and the server
must go on serving (alice reads, and raw ApiVersions requests are answered on both listeners).

What a refused client can tell: under TLS 1.3 the server checks the client's certificate only
after the client has finished its side of the handshake; the server then sends the TLS alert a
Kafka broker sends (``certificate_expired``), so kcat, confluent-kafka and kafka-python report
"alert certificate expired" (aiokafka's asyncio TLS layer reports the alert as the connection
closed), and none claims a certificate verification failure of its own. A plaintext client sees
only its connection ended; the reason is in the server's log.
"""

from __future__ import annotations

import time

import pytest
from test_tls_refusals import assert_served
from tls_certs import Pki
from tls_clients import CLIENTS, produce_over_ssl, read_over_ssl
from tls_refused import Refusal, Settings, produce_refused
from tls_server import TlsFactory, TlsServe, tls_properties

# The failure each client reports when it cannot produce (see tls_refused).
ERRORS = {
    "kcat": "exit 1",
    "confluent": "_MSG_TIMED_OUT",
    "kafka-python": "KafkaTimeoutError",
    "aiokafka": "KafkaConnectionError",
}
# What a client says when the server ended its connection (the wording differs by client and by
# how the close arrives: a clean TLS close, an EOF, a reset).
ENDED = ("disconnected", "closed", "reset by peer", "eof", "brokers are down", "transport failure")
VERIFY_FAILED = "certificate verify failed"


def await_log(server: TlsServe, text: str) -> None:
    """Wait until the server's log holds ``text`` (it logs a refusal after closing the
    connection, so a fast client can see the close first); AssertionError after 60 s."""
    deadline = time.monotonic() + 60
    while text not in server.log():
        assert time.monotonic() < deadline, f"{text!r} not logged\n{server.log_tail()}"
        time.sleep(0.05)


def refused_then_unchanged(
    client: str, pki: Pki, tls_serve: TlsFactory, kcat: str, settings: Settings, topic: str
) -> tuple[TlsServe, Refusal]:
    """Alice writes one record to ``topic``, ``client`` configured with ``settings`` fails to
    write another; the topic still holds alice's record only, read back by alice."""
    server = tls_serve(tls_properties(pki, client_auth="required"))
    bootstrap = server.bootstrap("SSL")
    produce_over_ssl(client, kcat, bootstrap, pki, "alice", topic, [(b"alice", b"kept")])
    refusal = produce_refused(client, kcat, bootstrap, settings, topic, b"never written")
    assert refusal.error == ERRORS[client], refusal
    assert read_over_ssl(client, kcat, bootstrap, pki, "alice", topic) == [(0, b"alice", b"kept")]
    assert_served(server, pki)
    return server, refusal


@pytest.mark.parametrize("client", CLIENTS)
def test_an_expired_client_certificate_writes_nothing(
    client: str, pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    expired = Settings("SSL", pki.ca, pki.cert("expired"), pki.key("expired"))
    server, refusal = refused_then_unchanged(client, pki, tls_serve, kcat, expired, "expired")
    # The server's TLS alert reaches the client, which names the reason as with a Kafka broker;
    # aiokafka's asyncio TLS layer reports a received alert as the connection closed.
    if client == "aiokafka":
        assert any(word in refusal.detail.lower() for word in ENDED), refusal
    else:
        assert "alert certificate expired" in refusal.detail.lower(), refusal
    assert VERIFY_FAILED not in refusal.detail.lower(), refusal  # the server refused, not it
    await_log(server, "certificate has expired")
    await_log(server, "closing 127.0.0.1: TLS handshake on SSL://")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_plaintext_client_on_the_ssl_port_writes_nothing(
    client: str, pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    plaintext = Settings("PLAINTEXT")
    server, refusal = refused_then_unchanged(client, pki, tls_serve, kcat, plaintext, "cleartext")
    assert any(word in refusal.detail.lower() for word in ENDED), refusal
    if client == "kcat":  # its librdkafka (1.x) guesses the cause itself; confluent's 2.x does not
        assert "incorrect security.protocol configuration" in refusal.detail, refusal
    await_log(server, "a client not speaking TLS? check its security.protocol")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_client_not_trusting_the_server_ca_writes_nothing(
    client: str, pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    distrustful = Settings("SSL", pki.other_ca, pki.cert("alice"), pki.key("alice"))
    server, refusal = refused_then_unchanged(
        client, pki, tls_serve, kcat, distrustful, "distrusted"
    )
    assert VERIFY_FAILED in refusal.detail.lower(), refusal
    await_log(server, "closing 127.0.0.1: TLS handshake on SSL://")
    if client != "aiokafka":
        await_log(server, "alert unknown ca")
