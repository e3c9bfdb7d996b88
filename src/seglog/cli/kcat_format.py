"""kcat's ``-f FORMAT`` output: a format string with ``%`` tokens, rendered per record.

Tokens (as kcat prints them, for the same record):

* ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%T`` timestamp in ms (the one Kafka
  reports: a LogAppendTime batch's maxTimestamp), all in decimal;
* ``%k`` / ``%s``: the key / value bytes as they are. kcat prints nothing for a null *or an
  empty* key or value, unless ``-Z`` is given: then both print ``NULL``;
* ``%K`` / ``%S``: the key / value length in bytes, ``-1`` when null;
* ``%R``: the value length as a 4-byte big-endian integer (``-1`` as ``ff ff ff ff``), for
  framing binary values;
* ``%h``: the headers as ``name=value`` joined by ``,`` (a null value prints ``NULL``, an empty
  one nothing; no headers print nothing);
* ``%%``: one ``%``.

Text between tokens is written as is after kcat's backslash escapes: ``\\n``, ``\\t``,
``\\r``; ``\\xHH`` (hex digits, read only when a decimal digit follows the ``x``, else
the character after it is written); ``\\NNN`` (decimal, or octal with a leading 0, as C's
``strtoul`` with base 0 reads it; the value is kept modulo 256); any other ``\\c`` is ``c``
(so ``\\\\`` is one backslash); a backslash ending the string is kept. Any other ``%x``, or a
``%`` ending the string, is an :class:`~seglog.errors.InvalidConfigError` naming it, as kcat
refuses it ("Unsupported formatter").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seglog.errors import InvalidConfigError

if TYPE_CHECKING:  # the engine is loaded by the command, not by its parser
    from seglog.engine.log.record_scan import ConsumedRecord

NULL_TEXT = b"NULL"

#: A rendered piece of one record.
Piece = Callable[[str, int, "ConsumedRecord"], bytes]

_HEX = "0123456789abcdefABCDEF"
_OCTAL = "01234567"
_DECIMAL = "0123456789"


def unescape(text: str) -> bytes:
    """kcat's backslash escapes of literal text (module docstring), as UTF-8 bytes."""
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char != "\\" or i + 1 >= n:
            out += char.encode("utf-8", "surrogateescape")
            i += 1
            continue
        i += 1
        char = text[i]
        simple = {"t": 9, "n": 10, "r": 13}
        if char in simple:
            out.append(simple[char])
            i += 1
        elif char == "x":
            # kcat reads hex digits only when a decimal digit follows the "x"; otherwise it
            # writes the character after the "x" as is.
            i += 1
            if i < n and text[i] in _DECIMAL:
                digits = _take(text, i, _HEX)
                out.append(int(digits, 16) % 256)
                i += len(digits)
            elif i < n:
                out += text[i].encode("utf-8", "surrogateescape")
                i += 1
        elif char in _DECIMAL:
            if text.startswith(("0x", "0X"), i) and i + 2 < n and text[i + 2] in _HEX:
                digits, base = _take(text, i + 2, _HEX), 16
                i += 2
            elif char == "0":
                digits, base = _take(text, i, _OCTAL), 8
            else:
                digits, base = _take(text, i, _DECIMAL), 10
            out.append(int(digits, base) % 256)
            i += len(digits)
        else:
            out += char.encode("utf-8", "surrogateescape")
            i += 1
    return bytes(out)


def _take(text: str, start: int, alphabet: str) -> str:
    end = start
    while end < len(text) and text[end] in alphabet:
        end += 1
    return text[start:end]


def _bytes_or_null(data: bytes | None, null_text: bytes) -> bytes:
    return data if data else null_text


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def _headers(record: ConsumedRecord) -> bytes:
    parts = []
    for header in record.headers:
        value = NULL_TEXT if header.value is None else header.value
        parts.append(header.key_bytes() + b"=" + value)
    return b",".join(parts)


def _token(letter: str, null_text: bytes) -> Piece:
    pieces: dict[str, Piece] = {
        "t": lambda topic, _p, _r: topic.encode(),
        "p": lambda _t, partition, _r: str(partition).encode(),
        "o": lambda _t, _p, r: str(r.offset).encode(),
        "T": lambda _t, _p, r: str(r.timestamp).encode(),
        "k": lambda _t, _p, r: _bytes_or_null(r.key, null_text),
        "s": lambda _t, _p, r: _bytes_or_null(r.value, null_text),
        "K": lambda _t, _p, r: _length(r.key),
        "S": lambda _t, _p, r: _length(r.value),
        "R": lambda _t, _p, r: (-1 if r.value is None else len(r.value)).to_bytes(
            4, "big", signed=True
        ),
        "h": lambda _t, _p, r: _headers(r),
    }
    return pieces[letter]


TOKENS = frozenset("tpoTkKsSRh")


@dataclass(frozen=True, slots=True)
class KcatFormat:
    """A parsed ``-f`` string: literal bytes and tokens, in order."""

    pieces: tuple[bytes | Piece, ...]

    def render(self, topic: str, partition: int, record: ConsumedRecord) -> bytes:
        """The output of one record."""
        return b"".join(
            piece if isinstance(piece, bytes) else piece(topic, partition, record)
            for piece in self.pieces
        )


def parse_format(text: str, *, null_as_text: bool = False) -> KcatFormat:
    """Parse kcat's ``-f`` string (module docstring); ``null_as_text`` is kcat's ``-Z``."""
    null_text = NULL_TEXT if null_as_text else b""
    pieces: list[bytes | Piece] = []
    rest = text
    while rest:
        at = rest.find("%")
        if at < 0:
            pieces.append(unescape(rest))
            break
        if at > 0:
            pieces.append(unescape(rest[:at]))
        if at + 1 >= len(rest):
            raise InvalidConfigError(f"-f {text!r}: a '%' ends the format (empty formatter)")
        letter = rest[at + 1]
        if letter == "%":
            pieces.append(b"%")
        elif letter in TOKENS:
            pieces.append(_token(letter, null_text))
        else:
            raise InvalidConfigError(
                f"-f {text!r}: unsupported formatter %{letter} (known: %t %p %o %T %k %K %s "
                "%S %R %h %%)"
            )
        rest = rest[at + 2 :]
    return KcatFormat(tuple(pieces))
