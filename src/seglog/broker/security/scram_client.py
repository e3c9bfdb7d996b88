"""The client side of SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), sans I/O.

The exchange mirrors :class:`~seglog.broker.security.scram.ScramServerExchange` and reuses its
key derivation (:func:`~seglog.broker.security.scram.salted_password`):

1. :meth:`ScramClientExchange.first` gives client-first ``n,,n=<user>,r=<client nonce>`` (gs2
   flag ``n``: no channel binding, as Kafka; ``,``/``=`` in the user name escaped as
   ``=2C``/``=3D``).
2. :meth:`ScramClientExchange.final` takes server-first ``r=<nonce>,s=<salt>,i=<iterations>``
   and gives client-final ``c=biws,r=<nonce>,p=<proof>``. The combined nonce must start with
   the client's, the iterations lie in Kafka's 4096..16384.
3. :meth:`ScramClientExchange.verify` takes server-final ``v=<signature>`` (or ``e=<error>``)
   and checks the server signature in constant time: a server that does not know the
   password's keys is not trusted.

Every broken step raises :class:`~seglog.errors.BrokerConnectionError` (never holding the
password or a proof).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets

from seglog.broker.security.scram import SCRAM_MECHANISMS, check_iterations, salted_password
from seglog.errors import BrokerConnectionError, InvalidConfigError


class ScramClientExchange:
    """One client-side SCRAM exchange (see the module docstring)."""

    def __init__(
        self, mechanism_name: str, user: str, password: str, nonce: str | None = None
    ) -> None:
        self.mechanism = mechanism_name
        self._hash = SCRAM_MECHANISMS[mechanism_name]
        self._password = password
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        name = user.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={self._nonce}"
        self._expected_signature = b""

    def first(self) -> bytes:
        return b"n,," + self._client_first_bare.encode()

    def _broken(self, what: str) -> BrokerConnectionError:
        return BrokerConnectionError(f"{self.mechanism}: the server's {what}")

    def final(self, server_first: bytes) -> bytes:
        try:
            text = server_first.decode("utf-8")
        except UnicodeDecodeError:
            raise self._broken("first message is not UTF-8") from None
        fields = dict(item.partition("=")[::2] for item in text.split(","))
        nonce, salt_text, iterations_text = (fields.get(k, "") for k in ("r", "s", "i"))
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise self._broken("nonce does not extend the client's")
        try:
            salt = base64.b64decode(salt_text, validate=True)
            iterations = int(iterations_text)
            check_iterations(self.mechanism, iterations)
        except (binascii.Error, ValueError, InvalidConfigError) as error:
            raise self._broken(f"first message is malformed ({error})") from None
        salted = salted_password(self._hash, self._password, salt, iterations)
        client_key = self._hash.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = self._hash.hmac(self._hash.hash(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = self._hash.hmac(salted, b"Server Key")
        self._expected_signature = self._hash.hmac(server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode("utf-8", errors="replace")
        if text.startswith("e="):
            raise BrokerConnectionError(f"{self.mechanism}: the server refused: {text[2:]}")
        try:
            signature = base64.b64decode(text.removeprefix("v="), validate=True)
        except binascii.Error:
            raise self._broken("final message is malformed") from None
        if (
            not text.startswith("v=")
            or not self._expected_signature
            or not hmac.compare_digest(signature, self._expected_signature)
        ):
            raise self._broken("signature is wrong: it does not hold this user's keys")
