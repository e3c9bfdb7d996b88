"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials and the server exchange.

**Credentials** are stored salted, as Kafka stores them, never the password:
``SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)``,
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))``,
``ServerKey = HMAC(SaltedPassword, "Server Key")``. Their text form is Kafka's
(``ScramCredentialUtils``): ``salt=<base64>,stored_key=<base64>,server_key=<base64>,
iterations=<n>``. Iterations lie in Kafka's range 4096..16384.

**The exchange** (server side, two client tokens):

1. client-first ``n,[a=<authzid>],n=<user>,r=<client nonce>[,<extensions>]``: only the gs2 flag
   ``n`` (no channel binding, as Kafka), an authzid equal to the user when given, the user name
   with ``=2C``/``=3D`` escapes. Unknown user: refused here (as Kafka). The delegation-token
   extension ``tokenauth=true`` is refused (seglog has no delegation tokens); other extensions
   are ignored. Answer: server-first ``r=<client nonce><server nonce>,s=<salt>,i=<iterations>``.
2. client-final ``c=<base64 gs2 header>,r=<nonce>,p=<base64 proof>``: the channel binding must
   be the gs2 header of step 1, the nonce must end with the combined one (Kafka's rule:
   librdkafka 2.0 sends its own nonce before the combined one; the proof still covers the
   fresh server nonce, so nothing can be replayed), and ``H(proof XOR
   HMAC(StoredKey, AuthMessage)) == StoredKey`` (compared in constant time). Answer:
   server-final ``v=<base64 HMAC(ServerKey, AuthMessage)>``; the exchange is complete.

Any other token, or a token after completion, fails the exchange with
:class:`SaslAuthenticationFailed` and Kafka's generic message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from seglog.broker.security.exchange import SaslAuthenticationFailed
from seglog.errors import InvalidConfigError

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    """One SCRAM mechanism: its name and hash."""

    name: str
    hash_name: str

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


SCRAM_MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism("SCRAM-SHA-256", "sha256"),
    "SCRAM-SHA-512": ScramMechanism("SCRAM-SHA-512", "sha512"),
}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's salted credential for one mechanism (see the module docstring)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's text form: ``salt=..,stored_key=..,server_key=..,iterations=..``."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_text(cls, text: str, where: str) -> ScramCredential:
        """Parse Kafka's text form; :class:`InvalidConfigError` naming ``where`` if broken."""
        fields: dict[str, str] = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            if not sep or key in fields:
                raise InvalidConfigError(f"{where}: {item!r} is not a single key=value")
            fields[key] = value
        if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
            raise InvalidConfigError(
                f"{where}: expected salt, stored_key, server_key and iterations, got "
                f"{sorted(fields)}"
            )
        try:
            salt, stored, server = (
                base64.b64decode(fields[k], validate=True)
                for k in ("salt", "stored_key", "server_key")
            )
            iterations = int(fields["iterations"])
        except (binascii.Error, ValueError) as error:
            raise InvalidConfigError(f"{where}: {error}") from None
        return cls(salt, stored, server, iterations)


def check_iterations(mechanism: str, iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise InvalidConfigError(
            f"{mechanism}: iterations={iterations} is outside {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        )


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def make_credential(
    mechanism_name: str,
    password: str,
    iterations: int = DEFAULT_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    """A new salted credential (a random 32-byte salt unless given)."""
    mechanism = SCRAM_MECHANISMS[mechanism_name]
    check_iterations(mechanism_name, iterations)
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(
        salt,
        mechanism.hash(client_key),
        mechanism.hmac(salted, b"Server Key"),
        iterations,
    )


def password_matches(mechanism_name: str, credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` gives ``credential`` (PLAIN checked against a stored SCRAM one)."""
    mechanism = SCRAM_MECHANISMS[mechanism_name]
    salted = salted_password(mechanism, password, credential.salt, credential.iterations)
    stored = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
    return hmac.compare_digest(stored, credential.stored_key)


CredentialLookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential

_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<user>[^,]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
    r"(?P<extensions>(?:,[A-Za-z][A-Za-z0-9]*=[^,]*)*)"
)
_CLIENT_FINAL = re.compile(
    r"c=(?P<binding>[A-Za-z0-9+/=]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
    r"(?:,[A-Za-z]=[^,]*)*,p=(?P<proof>[A-Za-z0-9+/=]+)"
)
_SASL_NAME = re.compile(r"(?:[^=]|=2C|=3D)*")


def _decode_name(text: str) -> str | None:
    if not _SASL_NAME.fullmatch(text):
        return None
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramServerExchange:
    """The server side of one SCRAM exchange (see the module docstring)."""

    def __init__(
        self,
        mechanism_name: str,
        lookup: CredentialLookup,
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ) -> None:
        self.mechanism = mechanism_name
        self._hash = SCRAM_MECHANISMS[mechanism_name]
        self._lookup = lookup
        self._nonce = nonce
        self.complete = False
        self.user: str | None = None
        self._step = 0
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._credential: ScramCredential | None = None

    def _fail(self, reason: str) -> SaslAuthenticationFailed:
        self._step = -1
        message = (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}"
        )
        return SaslAuthenticationFailed(message, reason, self.user)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail(f"{self.mechanism} token is not UTF-8") from None
        if self._step == 0:
            return self._client_first(text)
        if self._step == 1:
            return self._client_final(text)
        raise self._fail(f"{self.mechanism} token after the exchange ended")

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._fail(f"malformed {self.mechanism} client-first message")
        user = _decode_name(match["user"])
        if not user:
            raise self._fail(f"{self.mechanism} client-first message has no valid user name")
        self.user = user
        authzid = match["authzid"]
        if authzid and _decode_name(authzid) != user:
            raise self._fail(f"authorization id of user {user!r} differs from the user")
        extensions = [e for e in match["extensions"].split(",") if e]
        if any(e.partition("=")[0] == "tokenauth" and e.endswith("=true") for e in extensions):
            raise self._fail(f"user {user!r} asked for delegation-token authentication")
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise self._fail(f"no {self.mechanism} credential for user {user!r}")
        self._credential = credential
        self._gs2_header = text[: text.index(",n=") + 1]
        self._client_first_bare = text[len(self._gs2_header) :]
        nonce = match["nonce"] + self._nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={nonce},s={salt},i={credential.iterations}"
        self._step = 1
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        credential = self._credential
        assert credential is not None
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise self._fail(f"malformed {self.mechanism} client-final message")
        expected_binding = base64.b64encode(self._gs2_header.encode()).decode()
        if match["binding"] != expected_binding:
            raise self._fail("channel binding differs from the client-first gs2 header")
        if not match["nonce"].endswith(self._server_first[2 : self._server_first.index(",s=")]):
            raise self._fail("client-final nonce does not end with the server-first nonce")
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            raise self._fail("client proof is not base64") from None
        if len(proof) != self._hash.digest_size:
            raise self._fail("client proof has the wrong length")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self._hash.hmac(credential.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self._hash.hash(client_key), credential.stored_key):
            raise self._fail(f"invalid {self.mechanism} proof for user {self.user!r}")
        server_signature = self._hash.hmac(credential.server_key, auth_message)
        self._step = 2
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
