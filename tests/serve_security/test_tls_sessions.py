"""The network edge sets each connection's Session: listener, protocol, principal, authenticated.

An in-process server (the real :class:`KafkaServer`, :class:`Dispatcher` and handlers, on a
real data directory) with six listeners at once, each with its own TLS settings given as
``listener.name.<name>.ssl.*`` overrides: ``PLAINTEXT``; ``SSL`` with an inline PEM key and
chain; ``MTLS`` (mapped to SSL) with the key encrypted in its file (``ssl.key.password``) and
``ssl.client.auth=required``; ``OPT`` (SSL, ``requested``); ``SASL_SSL``; ``SASL_PLAINTEXT``.
The ApiVersions handler is wrapped to record the session every request arrives with. Metadata
answers each client with the address of the listener it came in on, as Kafka does.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tls_certs import ALICE_PRINCIPAL, KEY_PASSWORD, Pki

from seglog.broker.app import open_groups
from seglog.broker.dispatch import Dispatcher
from seglog.broker.handlers import api_versions, metadata
from seglog.broker.net.server import KafkaServer
from seglog.broker.registry import ApiHandler
from seglog.broker.security.authenticator import SaslServer
from seglog.broker.security.credential_store import CredentialStore
from seglog.broker.server_config import Listener, ServerConfig
from seglog.broker.session import ANONYMOUS, Session
from seglog.broker.state import BrokerState, RequestContext
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 3) + b"raw"
METADATA_V1_ALL = struct.pack(">hhih", 3, 1, 2, 3) + b"raw" + struct.pack(">i", -1)


def properties(pki: Pki) -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,"
        "SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,OPT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,OPT:SSL",
        "listener.name.opt.ssl.keystore.location": str(pki.server_keystore),
        "listener.name.opt.ssl.truststore.location": str(pki.ca),
        "listener.name.opt.ssl.client.auth": "requested",
        "listener.name.ssl.ssl.keystore.key": (pki.root / "server.key").read_text(),
        "listener.name.ssl.ssl.keystore.certificate.chain": (pki.root / "server.chain").read_text(),
        "listener.name.mtls.ssl.keystore.location": str(pki.server_keystore_encrypted),
        "listener.name.mtls.ssl.key.password": KEY_PASSWORD,
        "listener.name.mtls.ssl.truststore.certificates": pki.ca.read_text(),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.keystore.location": str(pki.server_keystore),
    }


class InProcessServer:
    """The server on an event loop in a thread; ``sessions`` as the handlers saw them."""

    def __init__(self, data_dir: Path, config: ServerConfig) -> None:
        self.sessions: list[Session] = []
        self.manager = LogManager.open(BrokerConfig(log_dirs=(str(data_dir),)))
        groups = open_groups(self.manager, config)
        self.state = BrokerState(self.manager, config, cluster_id="tls", groups=groups)
        self.state.sasl = SaslServer(config.sasl, CredentialStore(self.manager.first_directory))

        async def recording(
            state: BrokerState, context: RequestContext, request: ApiVersionsRequest
        ) -> ApiVersionsResponse:
            self.sessions.append(context.connection)
            return await api_versions.handle(state, context, request)

        handlers = [ApiHandler(api_versions.API_KEY, 0, 4, recording), *metadata.HANDLERS]
        self.server = KafkaServer(Dispatcher(self.state, handlers), config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        bound = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(30)
        self.state.advertise(bound)
        self.bound: dict[str, Listener] = {listener.name: listener for listener in bound}

    def address(self, name: str) -> tuple[str, int]:
        return self.bound[name].host, self.bound[name].port

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()
        self.manager.close()


@pytest.fixture
def served(tmp_path: Path, pki: Pki) -> Iterator[InProcessServer]:
    server = InProcessServer(tmp_path / "data", ServerConfig.from_properties(properties(pki)))
    try:
        yield server
    finally:
        server.close()


def exchange(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(struct.pack(">i", len(request)) + request)
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed by the server")
        data += chunk
    return data[4:]


def tls_client(address: tuple[str, int], pki: Pki, identity: str | None) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if identity is not None:
        context.load_cert_chain(str(pki.cert(identity)), str(pki.key(identity)))
    return context.wrap_socket(socket.create_connection(address, 30), server_hostname="localhost")


def advertised_port(response: bytes) -> int:
    """The port of the only broker of a Metadata v1 response (after the correlation id)."""
    count, _node = struct.unpack(">ii", response[4:12])
    assert count == 1
    (host_size,) = struct.unpack(">h", response[12:14])
    (port,) = struct.unpack(">i", response[14 + host_size : 18 + host_size])
    return int(port)


def test_sessions_carry_listener_protocol_and_certificate_principal(
    served: InProcessServer, pki: Pki
) -> None:
    cases = [
        ("PLAINTEXT", None, "PLAINTEXT", ANONYMOUS, True),
        ("SSL", None, "SSL", ANONYMOUS, True),
        ("SSL", "alice", "SSL", ANONYMOUS, True),  # client.auth=none: no certificate asked
        ("MTLS", "alice", "SSL", ALICE_PRINCIPAL, True),
        ("SASL_SSL", None, "SASL_SSL", ANONYMOUS, False),  # until a SASL exchange succeeds
        ("SASL_PLAINTEXT", None, "SASL_PLAINTEXT", ANONYMOUS, False),
        ("OPT", None, "SSL", ANONYMOUS, True),  # requested: a client may send none
        ("OPT", "alice", "SSL", ALICE_PRINCIPAL, True),
    ]
    for listener, identity, protocol, principal, authenticated in cases:
        address = served.address(listener)
        if listener in ("PLAINTEXT", "SASL_PLAINTEXT"):
            sock: socket.socket = socket.create_connection(address, 30)
        else:
            sock = tls_client(address, pki, identity)
        with sock:
            assert exchange(sock, API_VERSIONS_V0)[:6] == struct.pack(">ih", 1, 0)
            if not listener.startswith("SASL_"):
                assert advertised_port(exchange(sock, METADATA_V1_ALL)) == address[1]
        session = served.sessions[-1]
        assert (session.listener, session.security_protocol) == (listener, protocol)
        assert (session.principal, session.authenticated) == (principal, authenticated)
        assert session.client_host == "127.0.0.1"
    assert len(served.sessions) == len(cases)


def test_required_client_auth_listener_refuses_a_client_without_certificate(
    served: InProcessServer, pki: Pki
) -> None:
    with (
        pytest.raises((ssl.SSLError, EOFError, ConnectionResetError)),
        tls_client(served.address("MTLS"), pki, None) as sock,
    ):
        exchange(sock, API_VERSIONS_V0)
    assert served.sessions == []  # no request reached a handler
    with tls_client(served.address("MTLS"), pki, "alice") as sock:
        exchange(sock, API_VERSIONS_V0)
    assert [s.principal for s in served.sessions] == [ALICE_PRINCIPAL]


@pytest.mark.parametrize(
    ("rules", "principal"),
    [
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT", "User:ALICE@ENG"),
        ("RULE:^CN=bob,.*$/bob/", None),  # no rule applies: refused, as Kafka fails the login
    ],
)
def test_principal_mapping_rules_of_the_listener(
    tmp_path: Path, pki: Pki, rules: str, principal: str | None
) -> None:
    props = properties(pki) | {"listener.name.mtls.ssl.principal.mapping.rules": rules}
    server = InProcessServer(tmp_path / "data", ServerConfig.from_properties(props))
    try:
        with tls_client(server.address("MTLS"), pki, "alice") as sock:
            if principal is None:
                with pytest.raises((EOFError, ConnectionResetError, ssl.SSLError)):
                    exchange(sock, API_VERSIONS_V0)
            else:
                exchange(sock, API_VERSIONS_V0)
        assert [s.principal for s in server.sessions] == ([principal] if principal else [])
    finally:
        server.close()


def test_advertised_listeners_are_matched_by_name(tmp_path: Path, pki: Pki) -> None:
    """``advertised.listeners`` names the SSL listener only: its clients are told that address,
    the PLAINTEXT listener's clients the bound one."""
    props = properties(pki) | {"advertised.listeners": "SSL://broker.example:19093"}
    server = InProcessServer(tmp_path / "data", ServerConfig.from_properties(props))
    try:
        with tls_client(server.address("SSL"), pki, None) as sock:
            assert advertised_port(exchange(sock, METADATA_V1_ALL)) == 19093
        plaintext = server.address("PLAINTEXT")
        with socket.create_connection(plaintext, 30) as sock:
            assert advertised_port(exchange(sock, METADATA_V1_ALL)) == plaintext[1]
    finally:
        server.close()
