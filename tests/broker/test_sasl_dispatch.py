"""The dispatcher's SASL gate and the two SASL APIs, in process with a manual clock.

Frames go through :class:`Dispatcher` exactly as the network edge passes them; time is a
:class:`ManualClock`, so session expiry and re-authentication are tested without sleeping.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scram_client import ScramClient

from seglog.broker.app import all_handlers, open_groups
from seglog.broker.dispatch import Dispatcher
from seglog.broker.registry import CloseConnection
from seglog.broker.security.authenticator import SaslServer
from seglog.broker.security.credential_store import CredentialStore
from seglog.broker.security.scram import make_credential
from seglog.broker.server_config import ServerConfig
from seglog.broker.session import Session
from seglog.broker.state import BrokerState
from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.protocol import codec, messages
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.framing import RESPONSES, response_header_version

SETTINGS = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="adm";'
    ),
    "connections.max.reauth.ms": "1000",
}


@dataclass
class Served:
    dispatcher: Dispatcher
    clock: ManualClock
    store: CredentialStore

    def session(self, listener: str = "SASL_PLAINTEXT") -> Session:
        return Session(
            "10.1.2.3",
            listener=listener,
            security_protocol=listener,
            authenticated=not listener.startswith("SASL_"),
        )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    clock = ManualClock()
    with open_log_dirs([tmp_path], clock=clock) as manager:
        config = ServerConfig.from_properties(
            SETTINGS, listeners_override="SASL_PLAINTEXT://127.0.0.1:0"
        )
        state = BrokerState(manager, config, cluster_id="test", groups=open_groups(manager, config))
        store = CredentialStore(manager.first_directory)
        state.sasl = SaslServer(config.sasl, store)
        store.alter(
            lambda c: c.update(
                {
                    "alice": {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "pw")},
                    "bob": {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "bpw")},
                }
            )
        )
        yield Served(Dispatcher(state, all_handlers()), clock, store)


def frame(api_key: int, version: int, body: Any) -> bytes:
    flexible = messages.SPECS[type(body).__name__].is_flexible(version)
    header = messages.RequestHeader(
        request_api_key=api_key, request_api_version=version, correlation_id=7, client_id="t"
    )
    return codec.encode(header, 2 if flexible else 1) + codec.encode(body, version)


def call(served: Served, session: Session, api_key: int, version: int, body: Any) -> Any:
    parts = asyncio.run(served.dispatcher.dispatch(frame(api_key, version, body), session))
    assert parts is not None
    return decode(api_key, version, b"".join(p for p in parts if isinstance(p, bytes)))


def decode(api_key: int, version: int, data: bytes) -> Any:
    (size,) = struct.unpack(">i", data[:4])
    assert size == len(data) - 4
    _, end = codec.decode(
        messages.ResponseHeader,
        data,
        response_header_version(api_key, version),
        offset=4,
        whole=False,
    )
    value, _ = codec.decode(RESPONSES[api_key].cls, data, version, offset=end)
    return value


def refused(
    served: Served, session: Session, api_key: int, version: int, body: Any
) -> CloseConnection:
    with pytest.raises(CloseConnection) as closed:
        asyncio.run(served.dispatcher.dispatch(frame(api_key, version, body), session))
    return closed.value


METADATA = messages.MetadataRequest(topics=[])


def scram_login(
    served: Served, session: Session, user: str, password: str, version: int = 2
) -> Any:
    answer = call(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    assert answer.error_code == 0 and "SCRAM-SHA-256" in answer.mechanisms
    client = ScramClient("sha256", user, password)
    first = call(served, session, 36, version, messages.SaslAuthenticateRequest(client.first()))
    assert first.error_code == 0
    final = call(
        served,
        session,
        36,
        version,
        messages.SaslAuthenticateRequest(client.final(first.auth_bytes)),
    )
    assert final.error_code == 0 and client.verify(final.auth_bytes)
    return final


def test_only_sasl_apis_before_authentication(served: Served) -> None:
    session = served.session()
    closed = refused(served, session, 3, 12, METADATA)
    assert "before authentication" in str(closed) and closed.farewell_parts is None
    session = served.session()
    assert call(served, session, 18, 3, messages.ApiVersionsRequest("t", "1")).error_code == 0
    refused(served, session, 18, 3, messages.ApiVersionsRequest("t", "1"))  # once, as Kafka
    session = served.session()
    call(served, session, 17, 1, messages.SaslHandshakeRequest("PLAIN"))
    refused(served, session, 3, 12, METADATA)  # after the handshake: SaslAuthenticate only
    assert not session.authenticated


def test_scram_login_sets_principal_and_lifetime(served: Served) -> None:
    session = served.session()
    final = scram_login(served, session, "alice", "pw")
    assert final.session_lifetime_ms == 1000
    assert session.authenticated and session.principal == "User:alice"
    assert call(served, session, 3, 12, METADATA).cluster_id == "test"
    again = call(served, session, 36, 2, messages.SaslAuthenticateRequest(b"x"))
    assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_failed_login_is_answered_then_closed_with_a_delay(served: Served) -> None:
    session = served.session()
    call(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    client = ScramClient("sha256", "alice", "wrong")
    first = call(served, session, 36, 2, messages.SaslAuthenticateRequest(client.first()))
    closed = refused(
        served, session, 36, 2, messages.SaslAuthenticateRequest(client.final(first.auth_bytes))
    )
    assert closed.delay_ms == 100 and closed.farewell_parts is not None
    answer = decode(36, 2, b"".join(closed.farewell_parts))
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "SCRAM-SHA-256" in answer.error_message
    assert not session.authenticated and session.principal == "User:ANONYMOUS"
    unknown = served.session()  # a second failure from the same host waits longer
    call(served, unknown, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    closed = refused(
        served,
        unknown,
        36,
        2,
        messages.SaslAuthenticateRequest(ScramClient("sha256", "zed", "x").first()),
    )
    assert closed.delay_ms == 200


def test_unsupported_mechanism(served: Served) -> None:
    closed = refused(served, served.session(), 17, 1, messages.SaslHandshakeRequest("GSSAPI"))
    assert closed.farewell_parts is not None
    answer = decode(17, 1, b"".join(closed.farewell_parts))
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def test_expired_session_is_closed_unless_reauthenticated(served: Served) -> None:
    session = served.session()
    scram_login(served, session, "alice", "pw")
    served.clock.advance(999)
    call(served, session, 3, 12, METADATA)
    served.clock.advance(1)
    assert "expired" in str(refused(served, session, 3, 12, METADATA))

    session = served.session()
    scram_login(served, session, "alice", "pw")
    served.clock.advance(5_000)
    final = scram_login(served, session, "alice", "pw")  # KIP-368 re-authentication
    assert final.session_lifetime_ms == 1000
    call(served, session, 3, 12, METADATA)
    served.clock.advance(1_000)
    refused(served, session, 3, 12, METADATA)


def test_reauthentication_cannot_change_principal(served: Served) -> None:
    session = served.session()
    scram_login(served, session, "alice", "pw")
    call(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    client = ScramClient("sha256", "bob", "bpw")
    first = call(served, session, 36, 2, messages.SaslAuthenticateRequest(client.first()))
    closed = refused(
        served, session, 36, 2, messages.SaslAuthenticateRequest(client.final(first.auth_bytes))
    )
    assert closed.farewell_parts is not None
    assert (
        "Cannot change principals" in decode(36, 2, b"".join(closed.farewell_parts)).error_message
    )
    session = served.session()
    scram_login(served, session, "alice", "pw")
    refused(served, session, 17, 1, messages.SaslHandshakeRequest("PLAIN"))  # other mechanism


def test_v0_clients_get_no_reauthentication(served: Served) -> None:
    session = served.session()
    scram_login(served, session, "alice", "pw", version=0)
    answer = call(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
    served.clock.advance(1_000)
    refused(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))


def test_raw_tokens_after_a_v0_handshake(served: Served) -> None:
    session = served.session()
    call(served, session, 17, 0, messages.SaslHandshakeRequest("PLAIN"))
    parts = asyncio.run(served.dispatcher.dispatch(b"\x00admin\x00adm", session))
    assert parts == [b"\x00\x00\x00\x00"]
    assert session.principal == "User:admin"
    call(served, session, 3, 12, METADATA)
    session = served.session()
    call(served, session, 17, 0, messages.SaslHandshakeRequest("PLAIN"))
    with pytest.raises(CloseConnection) as closed:
        asyncio.run(served.dispatcher.dispatch(b"\x00admin\x00nope", session))
    assert closed.value.farewell_parts is None  # v0: no error frame, as Kafka


def test_scram_over_raw_tokens(served: Served) -> None:
    session = served.session()
    call(served, session, 17, 0, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    client = ScramClient("sha256", "alice", "pw")
    (first,) = asyncio.run(served.dispatcher.dispatch(client.first(), session)) or []
    assert isinstance(first, bytes)
    (final,) = asyncio.run(served.dispatcher.dispatch(client.final(first[4:]), session)) or []
    assert isinstance(final, bytes) and client.verify(final[4:])
    assert session.authenticated and session.principal == "User:alice"


def test_plaintext_sessions_answer_illegal_sasl_state(served: Served) -> None:
    session = served.session("PLAINTEXT")
    assert call(served, session, 17, 1, messages.SaslHandshakeRequest("PLAIN")).error_code == 34
    assert call(served, session, 36, 1, messages.SaslAuthenticateRequest(b"")).error_code == 34
    call(served, session, 3, 12, METADATA)


def test_credentials_changed_on_disk_count_at_next_login(served: Served) -> None:
    served.store.alter(lambda c: c.pop("alice"))
    session = served.session()
    call(served, session, 17, 1, messages.SaslHandshakeRequest("SCRAM-SHA-256"))
    refused(
        served,
        session,
        36,
        2,
        messages.SaslAuthenticateRequest(ScramClient("sha256", "alice", "pw").first()),
    )
    served.store.alter(
        lambda c: c.update({"alice": {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "new")}})
    )
    scram_login(served, served.session(), "alice", "new")
