"""seglog's client-side SCRAM exchange (the CLI's ``--command-config`` SASL login) against
seglog's server exchange, both sans I/O: a right password completes and the server signature
is accepted; a wrong one is refused by the server; a server that does not hold the user's keys
(a forged signature) is refused by the client; a user name with ``,`` and ``=`` is escaped."""

from __future__ import annotations

import base64

import pytest

from seglog.broker.security.exchange import SaslAuthenticationFailed
from seglog.broker.security.scram import ScramServerExchange, make_credential
from seglog.broker.security.scram_client import ScramClientExchange
from seglog.errors import BrokerConnectionError


def server_for(mechanism: str, user: str, password: str) -> ScramServerExchange:
    credential = make_credential(mechanism, password)
    return ScramServerExchange(
        mechanism, lambda u, m: credential if (u, m) == (user, mechanism) else None
    )


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user", ["alice", "a,b=c"])
def test_right_password_completes_both_sides(mechanism: str, user: str) -> None:
    server = server_for(mechanism, user, "pw")
    client = ScramClientExchange(mechanism, user, "pw")
    server_first = server.evaluate(client.first())
    client.verify(server.evaluate(client.final(server_first)))
    assert server.complete and server.user == user


def test_wrong_password_is_refused_by_the_server() -> None:
    server = server_for("SCRAM-SHA-256", "alice", "pw")
    client = ScramClientExchange("SCRAM-SHA-256", "alice", "wrong")
    server_first = server.evaluate(client.first())
    with pytest.raises(SaslAuthenticationFailed):
        server.evaluate(client.final(server_first))


def test_forged_server_signature_is_refused_by_the_client() -> None:
    server = server_for("SCRAM-SHA-512", "alice", "pw")
    client = ScramClientExchange("SCRAM-SHA-512", "alice", "pw")
    server.evaluate(client.final(server.evaluate(client.first())))
    forged = b"v=" + base64.b64encode(bytes(64))
    with pytest.raises(BrokerConnectionError, match="signature is wrong"):
        client.verify(forged)


def test_server_nonce_must_extend_the_client_one() -> None:
    client = ScramClientExchange("SCRAM-SHA-256", "alice", "pw", nonce="abc")
    with pytest.raises(BrokerConnectionError, match="nonce"):
        client.final(b"r=xyz123,s=c2FsdA==,i=4096")
    with pytest.raises(BrokerConnectionError, match="malformed"):
        client.final(b"r=abc123,s=c2FsdA==,i=10")
