"""The sans-I/O SASL pieces: SCRAM (RFC 7677's vector, both mechanisms, every refusal), PLAIN,
JAAS parsing, the settings, the credential file and the failure throttle."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from scram_client import ScramClient

from seglog.broker.security.authenticator import FailureThrottle, SaslServer
from seglog.broker.security.credential_store import FILE_NAME, CredentialStore
from seglog.broker.security.exchange import SaslAuthenticationFailed
from seglog.broker.security.plain import PlainServerExchange, parse_jaas_options, plain_users
from seglog.broker.security.sasl_config import SaslConfig
from seglog.broker.security.scram import (
    ScramCredential,
    ScramServerExchange,
    make_credential,
    password_matches,
)
from seglog.errors import InvalidConfigError

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def exchange_for(mechanism: str, users: dict[str, str], nonce: str = "srv") -> ScramServerExchange:
    credentials = {user: make_credential(mechanism, pw) for user, pw in users.items()}
    return ScramServerExchange(
        mechanism,
        lambda user, mech: credentials.get(user) if mech == mechanism else None,
        nonce=lambda: nonce,
    )


def test_rfc7677_vector() -> None:
    """RFC 7677 section 3: user "user", password "pencil", the published messages."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = make_credential("SCRAM-SHA-256", "pencil", 4096, salt)
    exchange = ScramServerExchange(
        "SCRAM-SHA-256",
        lambda user, mech: credential if user == "user" else None,
        nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    server_first = exchange.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert server_first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    server_final = exchange.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert exchange.complete and exchange.user == "user"


@pytest.mark.parametrize("mechanism", sorted(HASHES))
def test_scram_round_trip_and_names_with_escapes(mechanism: str) -> None:
    exchange = exchange_for(mechanism, {"a,b=c": "s3cret"})
    client = ScramClient(HASHES[mechanism], "a,b=c", "s3cret")
    server_first = exchange.evaluate(client.first())
    assert client.verify(exchange.evaluate(client.final(server_first)))
    assert exchange.complete and exchange.user == "a,b=c"


@pytest.mark.parametrize("mechanism", sorted(HASHES))
def test_scram_wrong_password_unknown_user(mechanism: str) -> None:
    exchange = exchange_for(mechanism, {"alice": "right"})
    client = ScramClient(HASHES[mechanism], "alice", "wrong")
    server_first = exchange.evaluate(client.first())
    with pytest.raises(SaslAuthenticationFailed) as failed:
        exchange.evaluate(client.final(server_first))
    assert "invalid credentials" in failed.value.client_message
    assert "wrong" not in failed.value.reason and not exchange.complete
    unknown = exchange_for(mechanism, {"alice": "right"})
    with pytest.raises(SaslAuthenticationFailed) as failed:
        unknown.evaluate(ScramClient(HASHES[mechanism], "mallory", "x").first())
    assert "mallory" not in failed.value.client_message  # never says whether a user exists


@pytest.mark.parametrize(
    "first",
    [
        b"",
        b"\xff\xfe",
        b"y,,n=alice,r=abc",  # channel binding flags are refused
        b"p=tls-unique,,n=alice,r=abc",
        b"n,,n=,r=abc",
        b"n,,n=al=ice,r=abc",  # '=' not followed by 2C/3D
        b"n,a=bob,n=alice,r=abc",  # authzid differs
        b"n,,n=alice,r=abc,tokenauth=true",
        b"n,,n=alice",
        b"n,,n=alice,r=a,b" + b"x" * 100,
    ],
)
def test_scram_malformed_client_first(first: bytes) -> None:
    exchange = exchange_for("SCRAM-SHA-256", {"alice": "pw"})
    with pytest.raises(SaslAuthenticationFailed):
        exchange.evaluate(first)
    with pytest.raises(SaslAuthenticationFailed):  # a failed exchange stays failed
        exchange.evaluate(ScramClient("sha256", "alice", "pw").first())


def test_scram_malformed_client_final() -> None:
    for mutate in (
        lambda final: final.replace(b"c=biws", b"c=eSws"),  # another gs2 header
        lambda final: final.replace(b",p=", b",p=AAAA"),  # proof of the wrong length
        lambda final: final[: final.index(b",p=")],  # no proof
        lambda final: final + b"=",
        lambda final: b"garbage",
    ):
        exchange = exchange_for("SCRAM-SHA-256", {"alice": "pw"})
        client = ScramClient("sha256", "alice", "pw")
        final = client.final(exchange.evaluate(client.first()))
        with pytest.raises(SaslAuthenticationFailed):
            exchange.evaluate(mutate(final))
    exchange = exchange_for("SCRAM-SHA-256", {"alice": "pw"})
    client = ScramClient("sha256", "alice", "pw")
    server_first = exchange.evaluate(client.first())
    with pytest.raises(SaslAuthenticationFailed):  # a nonce that is not the server's
        exchange.evaluate(client.final(server_first, nonce=client.nonce + "forged"))


def test_scram_accepts_librdkafka_repeated_client_nonce() -> None:
    """librdkafka 2.0 puts its nonce before the combined one; Kafka accepts it (endsWith)."""
    exchange = exchange_for("SCRAM-SHA-256", {"alice": "pw"})
    client = ScramClient("sha256", "alice", "pw")
    server_first = exchange.evaluate(client.first())
    combined = server_first.decode().split(",")[0][2:]
    assert client.verify(
        exchange.evaluate(client.final(server_first, nonce=client.nonce + combined))
    )


def test_token_after_completion_fails() -> None:
    exchange = exchange_for("SCRAM-SHA-512", {"alice": "pw"})
    client = ScramClient("sha512", "alice", "pw")
    exchange.evaluate(client.final(exchange.evaluate(client.first())))
    with pytest.raises(SaslAuthenticationFailed):
        exchange.evaluate(b"more")


def test_credential_text_is_kafkas_and_round_trips() -> None:
    credential = make_credential("SCRAM-SHA-512", "pw", 8192)
    text = credential.to_text()
    assert text.startswith("salt=") and ",stored_key=" in text and text.endswith(",iterations=8192")
    assert ScramCredential.from_text(text, "here") == credential
    assert password_matches("SCRAM-SHA-512", credential, "pw")
    assert not password_matches("SCRAM-SHA-512", credential, "pW")
    for bad in ("salt=x", "salt=@@,stored_key=,server_key=,iterations=1", "a=1,a=2"):
        with pytest.raises(InvalidConfigError, match="here"):
            ScramCredential.from_text(bad, "here")
    for iterations in (4095, 16385):
        with pytest.raises(InvalidConfigError, match="iterations"):
            make_credential("SCRAM-SHA-256", "pw", iterations)


def test_plain_exchange() -> None:
    def verify(user: str, password: str) -> bool:
        return (user, password) == ("alice", "pw")

    assert PlainServerExchange(verify).evaluate(b"\x00alice\x00pw") == b""
    ok = PlainServerExchange(verify)
    ok.evaluate(b"alice\x00alice\x00pw")
    assert ok.complete and ok.user == "alice"
    for token in (
        b"alice\x00pw",
        b"\x00alice\x00pw\x00",
        b"\x00\x00pw",
        b"\x00alice\x00",
        b"bob\x00alice\x00pw",
        b"\x00alice\x00wrong",
        b"\x00mallory\x00pw",
        b"\xff\x00alice\x00pw",
    ):
        exchange = PlainServerExchange(verify)
        with pytest.raises(SaslAuthenticationFailed) as failed:
            exchange.evaluate(token)
        assert "pw" not in failed.value.reason.replace("password", "")
        assert not exchange.complete


def test_jaas_parsing() -> None:
    text = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        ' username="admin" password="admin-secret" user_admin="admin-secret"'
        ' user_alice="a \\"quoted\\" pw" user_bob=bare;'
    )
    options = parse_jaas_options(text, "k")
    assert plain_users(options) == {
        "admin": "admin-secret",
        "alice": 'a "quoted" pw',
        "bob": "bare",
    }
    for bad in (
        "",
        'Module required user_a="x"',
        "Module maybe;",
        "Module required x;",
        'M r a="1"; b',
    ):
        with pytest.raises(InvalidConfigError, match=r"^k: "):
            parse_jaas_options(bad, "k")


def test_sasl_settings() -> None:
    props = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN, SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required user_a="b";',
        "connections.max.reauth.ms": "5000",
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "1000",
    }
    config = SaslConfig.from_properties(props, ["SASL_PLAINTEXT", "OTHER"])
    listener = config.for_listener("SASL_PLAINTEXT")
    assert listener.mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert listener.plain_users == {"a": "b"}
    assert listener.reauth_ms == {"PLAIN": 1000, "SCRAM-SHA-256": 5000}
    assert config.for_listener("OTHER").mechanisms == ("SCRAM-SHA-512",)
    assert config.for_listener("LATE").mechanisms == ("SCRAM-SHA-512",)  # not named at start
    assert SaslConfig.from_properties({}, ["X"]).for_listener("X").mechanisms == (
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
    )
    with pytest.raises(InvalidConfigError, match=r"sasl\.enabled\.mechanisms: 'GSSAPI'"):
        SaslConfig.from_properties({"sasl.enabled.mechanisms": "GSSAPI"}, ["X"])
    with pytest.raises(InvalidConfigError, match=r"connection\.failed\.authentication\.delay\.ms"):
        SaslConfig.from_properties({"connection.failed.authentication.delay.ms": "-1"}, [])


def test_credential_store_writes_crash_safely_and_reloads(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    assert store.lookup("alice", "SCRAM-SHA-256") is None
    credential = make_credential("SCRAM-SHA-256", "correct-horse-battery")
    store.alter(lambda c: c.setdefault("alice", {}).update({"SCRAM-SHA-256": credential}))
    path = tmp_path / FILE_NAME
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert "correct-horse-battery" not in path.read_text()
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()
    reader = CredentialStore(tmp_path)  # a running server's view
    assert reader.lookup("alice", "SCRAM-SHA-256") == credential
    # A stray .tmp left by a crash between write and rename is overwritten by the next write.
    (tmp_path / (FILE_NAME + ".tmp")).write_text("half a file")
    store.alter(lambda c: c.pop("alice"))
    assert reader.lookup("alice", "SCRAM-SHA-256") is None  # the change is seen without restart
    assert json.loads(path.read_text())["users"] == {}
    # A damaged file keeps the last good credentials in a running reader; load() names it.
    store.alter(lambda c: c.setdefault("bob", {}).update({"SCRAM-SHA-256": credential}))
    assert reader.lookup("bob", "SCRAM-SHA-256") == credential
    path.write_text('{"format": "seglog-scram-credentials", "version": 1, "users": {"bob": 3}}')
    assert reader.lookup("bob", "SCRAM-SHA-256") == credential
    with pytest.raises(InvalidConfigError, match=FILE_NAME):
        store.load()


def test_plain_checks_stored_scram_credentials(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    credential = make_credential("SCRAM-SHA-256", "pw")
    store.alter(lambda c: c.setdefault("alice", {}).update({"SCRAM-SHA-256": credential}))
    props = {
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required user_bob="bp";',
    }
    server = SaslServer(SaslConfig.from_properties(props, ["SASL_PLAINTEXT"]), store)
    for user, password, ok in (("alice", "pw", True), ("alice", "no", False), ("bob", "bp", True)):
        auth = server.authenticator("SASL_PLAINTEXT")
        assert auth.handshake("PLAIN", 1)
        if ok:
            assert auth.authenticate(f"\x00{user}\x00{password}".encode(), 1).complete
        else:
            with pytest.raises(SaslAuthenticationFailed):
                auth.authenticate(f"\x00{user}\x00{password}".encode(), 1)


def test_failure_throttle_doubles_per_host_and_forgets() -> None:
    throttle = FailureThrottle(100)
    delays = [throttle.failed("10.0.0.1", 1_000 + i) for i in range(8)]
    assert delays == [100, 200, 400, 800, 1600, 3200, 3200, 3200]
    assert throttle.failed("10.0.0.2", 2_000) == 100  # another host is not slowed
    assert throttle.failed("10.0.0.1", 1_000 + 8 + 60_001) == 100  # a quiet minute resets
