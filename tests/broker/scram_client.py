"""A SCRAM client written from RFC 5802 for tests: it drives seglog's server exchange through
every step, and forges the broken tokens a hostile client sends."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


class ScramClient:
    """The client side of one SCRAM exchange (``hash_name``: ``sha256`` or ``sha512``)."""

    def __init__(self, hash_name: str, user: str, password: str, nonce: str | None = None):
        self.hash_name = hash_name
        self.user = user
        self.password = password
        self.nonce = nonce or secrets.token_hex(12)
        self.client_first_bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.client_first_bare).encode()

    def final(self, server_first: bytes, *, nonce: str | None = None) -> bytes:
        text = server_first.decode()
        fields = dict(item.split("=", 1) for item in text.split(","))
        salt = base64.b64decode(fields["s"])
        salted = hashlib.pbkdf2_hmac(self.hash_name, self.password.encode(), salt, int(fields["i"]))
        without_proof = f"c=biws,r={nonce or fields['r']}"
        auth = f"{self.client_first_bare},{text},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", self.hash_name).digest()
        stored = hashlib.new(self.hash_name, client_key).digest()
        signature = hmac.new(stored, auth, self.hash_name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", self.hash_name).digest()
        self.server_signature = hmac.new(server_key, auth, self.hash_name).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
