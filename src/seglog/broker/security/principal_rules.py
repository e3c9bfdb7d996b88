"""``ssl.principal.mapping.rules``: from a client certificate's DN to the principal's name.

Kafka's syntax and semantics (``SslPrincipalMapper``), sans I/O:

* the setting is a comma-separated list of rules, tried in order; a comma inside a rule's
  pattern does not split it (the list is cut by the rule grammar, not by commas);
* ``DEFAULT`` gives the whole DN (RFC 2253 text, see :mod:`seglog.broker.security.principal`);
* ``RULE:pattern/replacement/`` applies when ``pattern`` matches the **whole** DN: the name is
  the DN with every match of ``pattern`` replaced by ``replacement`` (Java's ``replaceAll``:
  ``$n`` is group ``n``, ``\\x`` a literal ``x``; a ``$n`` above the pattern's group count is
  literal, as Kafka escapes it); ``/L`` or ``/U`` after the replacement lower- or upper-cases
  the result (English rules); ``\\/`` and ``\\,`` write a slash or comma inside a rule;
* when no rule applies, the client is refused (Kafka fails its authentication): the
  connection is closed.

Example: ``RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
DEFAULT``. Patterns are Python regular expressions, which agree with Java's on what such rules
use (groups, classes, lazy quantifiers, anchors).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seglog.errors import InvalidConfigError

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRuleError(ValueError):
    """No rule of ``ssl.principal.mapping.rules`` applies to a DN (the client is refused)."""


@dataclass(frozen=True, slots=True)
class PrincipalRule:
    """One rule: DEFAULT (``pattern`` None) or ``RULE:pattern/replacement/[LU]``."""

    pattern: str | None = None
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        """The name this rule gives ``dn``, None when the rule does not apply."""
        if self.pattern is None:
            return dn
        compiled = re.compile(self.pattern)
        if compiled.fullmatch(dn) is None:
            return None
        name = compiled.sub(lambda match: _expand(self.replacement, match), dn)
        if self.case == "L":
            return name.lower()
        if self.case == "U":
            return name.upper()
        return name


DEFAULT_RULES = (PrincipalRule(),)


def parse_rules(
    text: str | None, key: str = "ssl.principal.mapping.rules"
) -> tuple[PrincipalRule, ...]:
    """The rules of the setting (``DEFAULT`` when None); raises :class:`InvalidConfigError`
    naming ``key`` and the rule for a rule that does not parse or a bad pattern."""
    if text is None or not text.strip():
        return DEFAULT_RULES
    rules: list[PrincipalRule] = []
    for split in _SPLITTER.finditer(text.strip()):
        rule = split.group(1)
        parsed = _PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            raise InvalidConfigError(f"{key}: {rule!r} is not DEFAULT or RULE:pattern/replacement/")
        if parsed.group(1) is not None:
            rules.append(PrincipalRule())
        elif parsed.group(2) is not None:
            pattern, replacement = parsed.group(2), parsed.group(4)
            try:
                groups = re.compile(pattern).groups
            except re.error as error:
                raise InvalidConfigError(f"{key}: {rule!r}: bad pattern: {error}") from None
            _check_replacement(replacement, groups, key, rule)
            rules.append(PrincipalRule(pattern, replacement, parsed.group(6)))
        if split.end() == len(text.strip()):
            break
    if not rules:
        raise InvalidConfigError(f"{key}: no rule in {text!r}")
    return tuple(rules)


def principal_name(rules: tuple[PrincipalRule, ...], dn: str) -> str:
    """The principal's name for ``dn``: the first rule that applies.

    Raises:
        NoMatchingRuleError: no rule applies.
    """
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRuleError(f"no rule of ssl.principal.mapping.rules applies to {dn!r}")


def _check_replacement(replacement: str, groups: int, key: str, rule: str) -> None:
    if replacement.endswith("\\") and not replacement.endswith("\\\\"):
        raise InvalidConfigError(f"{key}: {rule!r}: the replacement ends with a lone backslash")
    for name in re.findall(r"\$\{(\w*)\}?", replacement):
        raise InvalidConfigError(f"{key}: {rule!r}: named group ${{{name}}} is not supported")


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's ``Matcher.appendReplacement`` of ``replacement`` (see the module docstring)."""
    groups = match.re.groups
    out: list[str] = []
    index, size = 0, len(replacement)
    while index < size:
        char = replacement[index]
        if char == "\\" and index + 1 < size:
            out.append(replacement[index + 1])
            index += 2
            continue
        if char == "$" and index + 1 < size and replacement[index + 1].isdigit():
            number = int(replacement[index + 1])
            if number > groups:
                out.append("$")  # literal, as Kafka escapes a reference past the groups
                index += 1
                continue
            index += 2
            while index < size and replacement[index].isdigit():
                longer = number * 10 + int(replacement[index])
                if longer > groups:
                    break
                number, index = longer, index + 1
            out.append(match.group(number) or "")
            continue
        out.append(char)
        index += 1
    return "".join(out)
