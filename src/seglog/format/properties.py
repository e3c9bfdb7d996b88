"""Java ``java.util.Properties`` text: ``load`` and ``store`` exactly as the JDK does them.

Kafka writes ``meta.properties`` with ``Properties.store(writer, "")`` and reads it
with ``Properties.load(inputStream)``; ``server.properties`` is read the same way. This module
is pure text <-> mapping; decoding bytes is the caller's choice (Kafka's reader takes the bytes
as ISO-8859-1, its writer emits UTF-8; escaped output is plain ASCII, so both agree).

Reading (``Properties.load``), one *logical* line at a time:

* Lines end at ``\\n``, ``\\r`` or ``\\r\\n``. Leading blanks (space, ``\\t``, ``\\f``) are
  skipped; blank lines are ignored.
* A line whose first non-blank character is ``#`` or ``!`` is a comment, and a comment line
  is never continued.
* A line ending in an odd number of backslashes continues on the next physical line; the
  backslash and the line break are dropped and the next line's leading blanks skipped.
* The key runs to the first unescaped ``=``, ``:`` or blank. Then blanks, at most one ``=`` or
  ``:``, and blanks again are skipped; the rest of the line is the value (it may be empty, and
  a line with only a key has the value ``""``).
* In keys and values ``\\t \\n \\r \\f`` and ``\\uXXXX`` (exactly four hex digits, a malformed
  one is an error) are unescaped, any other ``\\c`` is ``c``. Two ``\\u`` escapes forming a
  UTF-16 surrogate pair become one character.
* A key given twice keeps its last value (``Hashtable.put``).

Writing (``Properties.store``)::

    #<comments>                 only when comments is not None; Kafka passes "" so the line is "#"
    #<java.util.Date.toString()>
    key=value                   one line per entry, "\\n" line ends (Kafka runs on Linux)

* Keys and values escape ``\\``, ``\\t \\n \\r \\f`` and ``= : # !`` with a backslash; keys
  escape every space, values only a leading one; with ``escape_unicode`` (the default, and
  what ``store(OutputStream)`` does) characters below 0x20 or above 0x7E become ``\\uXXXX``
  (upper-case hex, one escape per UTF-16 unit), so the output is ASCII.
* The JDK writes entries in its map's iteration order, which changed over time:
  :attr:`KeyOrder.HASHTABLE` (JDK <= 8, ``Hashtable`` of 11 buckets walked from the top),
  :attr:`KeyOrder.CONCURRENT_HASH_MAP` (JDK 9-17, ``ConcurrentHashMap`` of 16 bins walked from
  the bottom) and :attr:`KeyOrder.SORTED` (JDK 18+, JDK-8231640). All three are emulated so a
  broker's file can be reproduced byte for byte; readers never depend on the order.

Invariant: ``parse_properties(encode_properties(p, ...)) == p`` for every mapping of strings.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from seglog.errors import CorruptCheckpointError

_BLANKS = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_UNESCAPE = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_ESCAPE = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}

# Limits of the emulated JDK maps (beyond them the JDK resizes or treeifies in ways not modelled).
_HASHTABLE_INITIAL_CAPACITY = 11  # new Properties() -> new Hashtable(11, 0.75f) up to JDK 8
_CHM_INITIAL_BINS = 16  # new Properties() -> new ConcurrentHashMap(8): 16 bins, JDK 9-17
_CHM_TREEIFY_THRESHOLD = 8


class KeyOrder(StrEnum):
    """The order in which ``store`` writes entries."""

    GIVEN = "given"  # the mapping's own iteration order (not a JDK order)
    SORTED = "sorted"  # JDK 18+: sorted by key (String.compareTo, i.e. by UTF-16 units)
    HASHTABLE = "hashtable"  # JDK <= 8: Hashtable iteration order, given insertion order
    CONCURRENT_HASH_MAP = "concurrent_hash_map"  # JDK 9-17: ConcurrentHashMap iteration order


@dataclass(frozen=True, slots=True)
class PropertyEntry:
    """One key/value pair as read, with the 1-based physical ``line`` its logical line starts on."""

    key: str
    value: str
    line: int


# --- reading ----------------------------------------------------------------------------------


def parse_properties(text: str, *, path: str | None = None) -> dict[str, str]:
    """Parse ``Properties.load`` text into a dict (first-appearance order, last value wins)."""
    return {entry.key: entry.value for entry in parse_property_entries(text, path=path)}


def parse_property_entries(text: str, *, path: str | None = None) -> list[PropertyEntry]:
    """Parse ``Properties.load`` text into entries in file order (duplicates kept)."""
    line_starts = [0] + [match.end() for match in _LINE_BREAK.finditer(text)]
    entries = []
    for chars, start in _logical_lines(text):
        line = bisect.bisect_right(line_starts, start)
        key_chars, value_chars = _split_key_value(chars)
        entries.append(
            PropertyEntry(
                _unescape(key_chars, line=line, path=path),
                _unescape(value_chars, line=line, path=path),
                line,
            )
        )
    return entries


def _logical_lines(text: str) -> Iterator[tuple[str, int]]:
    """Yield ``(logical line, index of its first character)``, a port of the JDK's LineReader."""
    end = len(text)
    i = 0
    buf: list[str] = []
    start = 0
    skip_blanks = True
    appended_line_begin = False  # just joined a continuation: a line break now ends the line
    preceding_backslash = False
    while True:
        if i >= end:
            if buf:
                if preceding_backslash:
                    buf.pop()
                yield "".join(buf), start
            return
        c = text[i]
        i += 1
        if skip_blanks:
            if c in _BLANKS:
                continue
            if not appended_line_begin and c in "\r\n":
                continue
            skip_blanks = False
            appended_line_begin = False
        if not buf and c in "#!":
            # A comment: skip to the end of the physical line (never continued).
            while i < end and text[i] not in "\r\n":
                i += 1
            i += 1
            skip_blanks = True
            continue
        if c not in "\r\n":
            if not buf:
                start = i - 1
            buf.append(c)
            preceding_backslash = not preceding_backslash if c == "\\" else False
            continue
        # A line break.
        if not buf:
            skip_blanks = True
            continue
        if preceding_backslash:
            buf.pop()  # the continuation backslash is not part of the line
            skip_blanks = True
            appended_line_begin = True
            preceding_backslash = False
            if c == "\r" and i < end and text[i] == "\n":
                i += 1
            continue
        yield "".join(buf), start
        buf = []
        skip_blanks = True


def _split_key_value(chars: str) -> tuple[str, str]:
    """Split a logical line into its raw (still escaped) key and value."""
    limit = len(chars)
    key_len = 0
    value_start = limit
    has_separator = False
    preceding_backslash = False
    while key_len < limit:
        c = chars[key_len]
        if c in "=:" and not preceding_backslash:
            value_start = key_len + 1
            has_separator = True
            break
        if c in _BLANKS and not preceding_backslash:
            value_start = key_len + 1
            break
        preceding_backslash = not preceding_backslash if c == "\\" else False
        key_len += 1
    while value_start < limit:
        c = chars[value_start]
        if c not in _BLANKS:
            if not has_separator and c in "=:":
                has_separator = True
            else:
                break
        value_start += 1
    return chars[:key_len], chars[value_start:]


def _unescape(chars: str, *, line: int, path: str | None) -> str:
    """The JDK's ``loadConvert``: resolve backslash escapes."""
    if "\\" not in chars:
        return chars
    out: list[str] = []
    i = 0
    end = len(chars)
    while i < end:
        c = chars[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        # The line reader never leaves an unescaped backslash at the end of a line.
        c = chars[i]
        i += 1
        if c != "u":
            out.append(_UNESCAPE.get(c, c))
            continue
        digits = chars[i : i + 4]
        if len(digits) < 4 or not _HEX_DIGITS.issuperset(digits):
            escape = "\\u" + digits
            raise CorruptCheckpointError(
                f"malformed \\uxxxx escape {escape!r}: expected four hex digits",
                line=line,
                path=path,
            )
        out.append(chr(int(digits, 16)))
        i += 4
    text = "".join(out)
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        # Escaped UTF-16 surrogate pairs become one character; lone surrogates stay as they are.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


# --- writing ----------------------------------------------------------------------------------


def encode_properties(
    props: Mapping[str, str],
    *,
    date_comment: str | None,
    comments: str | None = "",
    order: KeyOrder = KeyOrder.GIVEN,
    escape_unicode: bool = True,
) -> str:
    """Text as ``Properties.store`` writes it (see the module docstring for the layout).

    ``date_comment`` is the text of the ``#<date>`` line (see :func:`java_date_string`), or None
    to leave that line out (the JDK always writes it). ``comments`` is the comment the JDK
    writes first; Kafka passes ``""``, which gives the lone ``#`` line; None writes no comment.
    """
    lines = []
    if comments is not None:
        lines.append(_comment_text(comments))
    if date_comment is not None:
        if "\n" in date_comment or "\r" in date_comment:
            raise ValueError(f"date comment {date_comment!r} spans lines")
        lines.append("#" + date_comment)
    for key in java_key_order(props.keys(), order):
        escaped_key = _escape(key, escape_space=True, escape_unicode=escape_unicode)
        escaped_value = _escape(props[key], escape_space=False, escape_unicode=escape_unicode)
        lines.append(f"{escaped_key}={escaped_value}")
    return "".join(line + "\n" for line in lines)


def _escape(text: str, *, escape_space: bool, escape_unicode: bool) -> str:
    """The JDK's ``saveConvert``."""
    out: list[str] = []
    for index, c in enumerate(text):
        code = ord(c)
        if 61 < code < 127:
            out.append("\\\\" if c == "\\" else c)
        elif c == " ":
            out.append("\\ " if index == 0 or escape_space else " ")
        elif c in _ESCAPE:
            out.append(_ESCAPE[c])
        elif c in "=:#!":
            out.append("\\" + c)
        elif escape_unicode and (code < 0x20 or code > 0x7E):
            out.extend(f"\\u{unit:04X}" for unit in _utf16_units(c))
        else:
            out.append(c)
    return "".join(out)


def _comment_text(comments: str) -> str:
    """The JDK's ``writeComments``, without the final line break."""
    out = ["#"]
    i = 0
    end = len(comments)
    while i < end:
        c = comments[i]
        if ord(c) > 0xFF:
            out.extend(f"\\u{unit:04X}" for unit in _utf16_units(c))
        elif c in "\r\n":
            out.append("\n")
            if c == "\r" and i + 1 < end and comments[i + 1] == "\n":
                i += 1
            if i == end - 1 or comments[i + 1] not in "#!":
                out.append("#")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _utf16_units(c: str) -> list[int]:
    data = c.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def java_date_string(epoch_ms: int) -> str:
    """``java.util.Date.toString()`` in UTC: ``Fri Oct 25 00:00:00 UTC 2024``."""
    try:
        when = datetime.fromtimestamp(epoch_ms // 1000, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"epoch_ms {epoch_ms} is outside the years 1..9999") from exc
    return (
        f"{_DAY_NAMES[when.weekday()]} {_MONTH_NAMES[when.month - 1]} {when.day:02d} "
        f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} UTC {when.year}"
    )


# --- the JDK's iteration orders ---------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as a signed int32 (over UTF-16 units)."""
    h = 0
    for unit in _utf16_units_of(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _utf16_units_of(text: str) -> Iterator[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        yield (data[i] << 8) | data[i + 1]


def java_key_order(keys: Iterable[str], order: KeyOrder) -> list[str]:
    """The order in which ``Properties.store`` writes ``keys`` (given in insertion order)."""
    given = list(dict.fromkeys(keys))
    if order is KeyOrder.GIVEN:
        return given
    if order is KeyOrder.SORTED:
        return sorted(given, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
    if order is KeyOrder.HASHTABLE:
        return _hashtable_order(given)
    return _concurrent_hash_map_order(given)


def _hashtable_order(keys: list[str]) -> list[str]:
    """``java.util.Hashtable`` (JDK <= 8): head insertion, rehash at 75 %, walked top-down."""
    capacity = _HASHTABLE_INITIAL_CAPACITY
    table: list[list[str]] = [[] for _ in range(capacity)]
    threshold = int(capacity * 0.75)
    for count, key in enumerate(keys):
        if count >= threshold:
            new_capacity = capacity * 2 + 1
            new_table: list[list[str]] = [[] for _ in range(new_capacity)]
            for index in range(capacity - 1, -1, -1):
                for moved in table[index]:
                    new_table[(java_string_hash(moved) & 0x7FFFFFFF) % new_capacity].insert(
                        0, moved
                    )
            table, capacity = new_table, new_capacity
            threshold = int(new_capacity * 0.75)
        table[(java_string_hash(key) & 0x7FFFFFFF) % capacity].insert(0, key)
    return [key for index in range(capacity - 1, -1, -1) for key in table[index]]


def _chm_spread(key: str) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0x7FFFFFFF


def _concurrent_hash_map_order(keys: list[str]) -> list[str]:
    """``ConcurrentHashMap`` (JDK 9-17): tail insertion, doubling at 75 %, walked bottom-up."""
    bins = _CHM_INITIAL_BINS
    table: list[list[str]] = [[] for _ in range(bins)]
    size_ctl = bins - (bins >> 2)
    for count, key in enumerate(keys, start=1):
        chain = table[_chm_spread(key) & (bins - 1)]
        if len(chain) >= _CHM_TREEIFY_THRESHOLD:
            raise ValueError("ConcurrentHashMap order is not modelled once a bin treeifies")
        chain.append(key)
        while count >= size_ctl:
            table = _chm_transfer(table, bins)
            bins <<= 1
            size_ctl = bins - (bins >> 2)
    return [key for chain in table for key in chain]


def _chm_transfer(table: list[list[str]], bins: int) -> list[list[str]]:
    """Double a ConcurrentHashMap table, keeping its split order (the ``lastRun`` reuse)."""
    new_table: list[list[str]] = [[] for _ in range(bins * 2)]
    for index, chain in enumerate(table):
        if not chain:
            continue
        run_bit = _chm_spread(chain[0]) & bins
        last_run = 0
        for position in range(1, len(chain)):
            bit = _chm_spread(chain[position]) & bins
            if bit != run_bit:
                run_bit, last_run = bit, position
        low: list[str] = list(chain[last_run:]) if run_bit == 0 else []
        high: list[str] = list(chain[last_run:]) if run_bit != 0 else []
        for key in chain[:last_run]:
            (high if _chm_spread(key) & bins else low).insert(0, key)
        new_table[index] = low
        new_table[index + bins] = high
    return new_table
