"""SASL/PLAIN (RFC 4616): the server exchange and the JAAS text that names its users.

**The exchange**: one client token ``[authzid] NUL authcid NUL password`` (UTF-8), exactly three
fields; the user (authcid) and the password must not be empty; an authzid, when given, must equal
the user (as Kafka's ``PlainSaslServer``). The answer is an empty token; the exchange is then
complete. The password is checked by the ``verify(user, password) -> bool`` it was built with.

**JAAS** (``listener.name.<listener>.plain.sasl.jaas.config``, Kafka's broker syntax)::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

``user_<NAME>="<password>"`` options are the PLAIN users. Values are double-quoted (``\\"`` and
``\\\\`` escapes) or bare words; the text ends with ``;``.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable

from seglog.broker.security.exchange import SaslAuthenticationFailed
from seglog.errors import InvalidConfigError

PLAIN = "PLAIN"
INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"

_TOKEN = re.compile(
    r'\s*(?:(?P<key>[^\s="]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))'
    r'|(?P<word>[^\s=;"]+)|(?P<end>;))'
)


def parse_jaas_options(text: str, key: str) -> dict[str, str]:
    """The options of a one-module JAAS text (see the module docstring).

    Raises:
        InvalidConfigError: naming ``key``, when the text is not ``Class flag (k=v)* ;``.
    """
    position = 0
    words: list[str] = []
    options: dict[str, str] = {}
    ended = False
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None or ended:
            raise InvalidConfigError(f"{key}: cannot parse the JAAS text at character {position}")
        position = match.end()
        if match["end"]:
            ended = True
        elif match["word"]:
            if options:
                raise InvalidConfigError(f"{key}: {match['word']!r} is not key=value")
            words.append(match["word"])
        else:
            value = match["bare"]
            if value is None:
                value = re.sub(r"\\(.)", r"\1", match["quoted"])
            options[match["key"]] = value
    if not ended or len(words) != 2:
        raise InvalidConfigError(f"{key}: expected 'LoginModuleClass required key=\"value\" ... ;'")
    if words[1] not in ("required", "requisite", "sufficient", "optional"):
        raise InvalidConfigError(f"{key}: {words[1]!r} is not a JAAS control flag")
    return options


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """``user_NAME="password"`` options of a PLAIN JAAS text: name -> password."""
    return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


def constant_time_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class PlainServerExchange:
    """The server side of one PLAIN exchange (see the module docstring)."""

    mechanism = PLAIN

    def __init__(self, verify: Callable[[str, str], bool]) -> None:
        self._verify = verify
        self.complete = False
        self.user: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationFailed(INVALID_CREDENTIALS, "PLAIN token after completion")
        try:
            fields = token.decode("utf-8").split("\x00")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed(
                "Invalid SASL/PLAIN response: not UTF-8", "PLAIN token is not UTF-8"
            ) from None
        if len(fields) != 3:
            message = f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(fields)}"
            raise SaslAuthenticationFailed(message, message)
        authzid, user, password = fields
        if not user:
            message = "Authentication failed: username not specified"
            raise SaslAuthenticationFailed(message, message)
        self.user = user
        if not password:
            message = "Authentication failed: password not specified"
            raise SaslAuthenticationFailed(message, f"{message} for user {user!r}", user)
        if authzid and authzid != user:
            message = (
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
            raise SaslAuthenticationFailed(message, f"{message} (user {user!r})", user)
        if not self._verify(user, password):
            raise SaslAuthenticationFailed(
                INVALID_CREDENTIALS, f"invalid PLAIN password or unknown user {user!r}", user
            )
        self.complete = True
        return b""
