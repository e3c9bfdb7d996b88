"""``ssl.principal.mapping.rules``, with the cases of Kafka's ``SslPrincipalMapperTest``."""

from __future__ import annotations

import pytest

from seglog.broker.security.principal_rules import (
    NoMatchingRuleError,
    parse_rules,
    principal_name,
)
from seglog.errors import InvalidConfigError


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    assert parse_rules(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        "RULE:^CN=((.*?)$/$1/",  # an unbalanced group
    ],
)
def test_invalid_rules_name_the_key(rules: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"listener\.name\.mtls\.ssl\.principal\.mapping"):
        parse_rules(rules, "listener.name.mtls.ssl.principal.mapping.rules")


def test_rules_apply_in_order() -> None:
    rules = parse_rules(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, "
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, "
        "DEFAULT"
    )
    assert principal_name(rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert principal_name(rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert principal_name(rules, "cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert principal_name(rules, "cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    dn = "OU=JavaSoft,O=Sun Microsystems,C=US"
    assert principal_name(rules, dn) == dn


def test_commas_inside_a_rule_and_escaped_commas_in_the_dn() -> None:
    rules = parse_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert len(rules) == 2
    assert principal_name(rules, "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"
    assert principal_name(rules, "OU=Other") == "OU=Other"


def test_replacement_references_and_escapes() -> None:
    (rule,) = parse_rules(r"RULE:^CN=(\w+),O=(\w+)$/$2-$1-$3-\$1-$0/")
    assert rule.apply("CN=alice,O=acme") == "acme-alice-$3-$1-CN=alice,O=acme"
    (slash,) = parse_rules(r"RULE:^CN=(\w+)$/team\/$1/U")
    assert slash.apply("CN=bob") == "TEAM/BOB"


def test_no_matching_rule_refuses() -> None:
    rules = parse_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRuleError, match="no rule"):
        principal_name(rules, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US")
