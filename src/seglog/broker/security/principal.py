"""The principal of a client certificate: its subject's distinguished name, as Kafka gives it.

Kafka's default ``ssl.principal.mapping.rules=DEFAULT`` names an SSL client ``User:<DN>``
(other rules map the DN to a shorter name: :mod:`seglog.broker.security.principal_rules`),
where ``<DN>`` is Java's ``X500Principal.getName()`` of the certificate's subject: RFC 2253
text, most specific RDN first (the reverse of the DER order), e.g.
``User:CN=alice,OU=eng,O=Acme,C=US``. :func:`subject_dn` produces that text from the
certificate's DER bytes, sans I/O:

* the attribute types Java names in RFC 2253 output (CN, C, L, ST, O, OU, STREET, DC, UID) by
  name, with string values escaped per RFC 2253 (``, + " \\ < > ;`` escaped with a backslash, as
  are a leading ``#`` or space and a trailing space);
* every other type (e.g. emailAddress) as its dotted OID and ``#`` followed by the hex of the
  value's DER encoding, as Java does;
* the attributes of a multi-valued RDN joined by ``+`` in their encoded order.

Only the certificate's outer structure is parsed here (``Certificate`` → ``tbsCertificate`` →
``subject``); the TLS library has already verified the certificate. A structure that does not
parse raises :class:`seglog.errors.InvalidCertificateError`.
"""

from __future__ import annotations

from seglog.broker.security.principal_rules import DEFAULT_RULES, PrincipalRule, principal_name
from seglog.errors import InvalidCertificateError

_SEQUENCE, _SET, _OID, _CONTEXT_0 = 0x30, 0x31, 0x06, 0xA0
_INTEGER, _UTC_TIME, _GENERALIZED_TIME = 0x02, 0x17, 0x18
# Java's X500Principal RFC 2253 keywords.
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# DER string types and their decoders: UTF8String, PrintableString, T61String, IA5String,
# UniversalString, BMPString.
_STRINGS = {
    0x0C: "utf-8",
    0x13: "latin-1",
    0x14: "latin-1",
    0x16: "latin-1",
    0x1C: "utf-32-be",
    0x1E: "utf-16-be",
}
_SPECIAL = ',+"\\<>;'


def _tlv(data: bytes, at: int, end: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the DER element at ``at``."""
    if at + 2 > end:
        raise InvalidCertificateError("DER element cut short", position=at)
    tag, first = data[at], data[at + 1]
    at += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or at + count > end:
            raise InvalidCertificateError("bad DER length", position=at - 1)
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > end:
        raise InvalidCertificateError("DER element overruns its parent", position=at)
    return tag, at, at + length


def _expect(data: bytes, at: int, end: int, tag: int, what: str) -> tuple[int, int]:
    found, start, stop = _tlv(data, at, end)
    if found != tag:
        raise InvalidCertificateError(
            f"{what} has DER tag {found:#04x}, expected {tag:#04x}", position=at
        )
    return start, stop


def _oid(raw: bytes) -> str:
    parts: list[int] = []
    value = 0
    for byte in raw:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    if not parts:
        raise InvalidCertificateError("empty OID")
    first = parts[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(p) for p in head + parts[1:])


def _escape(text: str) -> str:
    out = []
    for index, char in enumerate(text):
        if (
            char in _SPECIAL
            or (index == 0 and char in "# ")
            or (index == len(text) - 1 and char == " ")
        ):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _attribute(data: bytes, start: int, end: int) -> str:
    oid_start, oid_end = _expect(data, start, end, _OID, "attribute type")
    oid = _oid(data[oid_start:oid_end])
    tag, value_start, value_end = _tlv(data, oid_end, end)
    keyword = _KEYWORDS.get(oid)
    if keyword is not None and tag in _STRINGS:
        try:
            text = data[value_start:value_end].decode(_STRINGS[tag])
        except UnicodeDecodeError:
            raise InvalidCertificateError(
                f"{keyword} value is not valid text", position=value_start
            ) from None
        return f"{keyword}={_escape(text)}"
    return f"{keyword or oid}=#{data[oid_end:value_end].hex()}"


def subject_dn(certificate: bytes) -> str:
    """The RFC 2253 text of a DER certificate's subject (see the module docstring)."""
    start, end = _expect(certificate, 0, len(certificate), _SEQUENCE, "Certificate")
    start, end = _expect(certificate, start, end, _SEQUENCE, "tbsCertificate")
    at = start
    tag, _, stop = _tlv(certificate, at, end)
    if tag == _CONTEXT_0:  # version
        at = stop
    for _field in ("serialNumber", "signature", "issuer", "validity"):
        _, _, at = _tlv(certificate, at, end)
    name_start, name_end = _expect(certificate, at, end, _SEQUENCE, "subject")
    rdns: list[str] = []
    at = name_start
    while at < name_end:
        set_start, set_end = _expect(certificate, at, name_end, _SET, "RDN")
        values: list[str] = []
        inner = set_start
        while inner < set_end:
            value_start, value_end = _expect(certificate, inner, set_end, _SEQUENCE, "attribute")
            values.append(_attribute(certificate, value_start, value_end))
            inner = value_end
        rdns.append("+".join(values))
        at = set_end
    return ",".join(reversed(rdns))


def certificate_summary(certificate: bytes) -> str:
    """``subject <DN>, serial <hex>, not after <YYYY-MM-DD HH:MM:SS> UTC`` of a DER
    certificate, for log lines (the DN as :func:`subject_dn` writes it).

    Raises:
        InvalidCertificateError: the structure does not parse.
    """
    start, end = _expect(certificate, 0, len(certificate), _SEQUENCE, "Certificate")
    start, end = _expect(certificate, start, end, _SEQUENCE, "tbsCertificate")
    tag, _, stop = _tlv(certificate, start, end)
    at = stop if tag == _CONTEXT_0 else start  # version
    serial_start, serial_end = _expect(certificate, at, end, _INTEGER, "serialNumber")
    _, _, at = _tlv(certificate, serial_end, end)  # signature
    _, _, at = _tlv(certificate, at, end)  # issuer
    validity_start, validity_end = _expect(certificate, at, end, _SEQUENCE, "validity")
    _, _, after_at = _tlv(certificate, validity_start, validity_end)  # notBefore
    tag, time_start, time_end = _tlv(certificate, after_at, validity_end)
    text = certificate[time_start:time_end].decode("ascii", "replace")
    if tag == _UTC_TIME and text[:12].isdigit():  # YYMMDDHHMMSSZ; years 50-99 are 19xx
        text = ("19" if int(text[:2]) >= 50 else "20") + text
    elif tag != _GENERALIZED_TIME or not text[:14].isdigit():
        raise InvalidCertificateError(f"notAfter has DER tag {tag:#04x}", position=after_at)
    not_after = f"{text[0:4]}-{text[4:6]}-{text[6:8]} {text[8:10]}:{text[10:12]}:{text[12:14]}"
    serial = certificate[serial_start:serial_end].hex().lstrip("0") or "0"
    return f"subject {subject_dn(certificate)}, serial {serial}, not after {not_after} UTC"


def principal_of_certificate(
    certificate: bytes | None, rules: tuple[PrincipalRule, ...] = DEFAULT_RULES
) -> str | None:
    """``User:<name>`` of a client certificate (DER), None without one; the name is the
    subject's DN mapped by ``ssl.principal.mapping.rules`` (DEFAULT: the DN itself).

    Raises:
        InvalidCertificateError: the certificate's subject does not parse.
        NoMatchingRuleError: no mapping rule applies to the DN (the client is refused).
    """
    if not certificate:
        return None
    return f"User:{principal_name(rules, subject_dn(certificate))}"
