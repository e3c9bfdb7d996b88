"""The authorizer's settings: Kafka's ``authorizer.class.name``, ``super.users`` and
``allow.everyone.if.no.acl.found``.

=================================  =========  ================================================
key                                default    meaning
=================================  =========  ================================================
authorizer.class.name              (empty)    empty: no authorizer, everything is allowed;
                                              one of :data:`AUTHORIZER_CLASS_NAMES`: ACLs
super.users                        (empty)    ``User:alice;User:bob``: allowed everything
allow.everyone.if.no.acl.found     false      a resource no ACL applies to is open to all
=================================  =========  ================================================

Decision: Kafka's two authorizer class names (KRaft's ``StandardAuthorizer`` and the older
``AclAuthorizer``) are accepted besides seglog's own, so a ``server.properties`` written for a
Kafka broker works unchanged; both mean seglog's authorizer, whose ACLs live in the data
directory (:mod:`seglog.broker.acl.acl_file`) rather than in KRaft metadata or ZooKeeper. Any
other class name is refused, naming the key: a server silently running without the
authorizer its operator asked for would be open to all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seglog.broker.acl.model import parse_principal
from seglog.errors import InvalidAclError, InvalidConfigError

SEGLOG_AUTHORIZER = "seglog.broker.acl.AclAuthorizer"
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        SEGLOG_AUTHORIZER,
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
    }
)


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    """The three settings of the module docstring."""

    class_name: str = ""
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @property
    def enabled(self) -> bool:
        """Whether ACLs are enforced (``authorizer.class.name`` is set)."""
        return bool(self.class_name)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> AuthorizerSettings:
        class_name = props.get("authorizer.class.name", "").strip()
        if class_name and class_name not in AUTHORIZER_CLASS_NAMES:
            raise InvalidConfigError(
                f"authorizer.class.name: {class_name!r} is not an authorizer seglog has; use "
                f"{SEGLOG_AUTHORIZER} (or Kafka's "
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer, which means the same)"
            )
        users: set[str] = set()
        for entry in props.get("super.users", "").split(";"):
            user = entry.strip()
            if not user:
                continue
            try:
                parse_principal(user)
            except InvalidAclError as error:
                raise InvalidConfigError(f"super.users: {error}") from None
            users.add(user)
        text = props.get("allow.everyone.if.no.acl.found", "false").strip().lower()
        if text not in ("true", "false"):
            raise InvalidConfigError(
                f"allow.everyone.if.no.acl.found: {text!r} is not true or false"
            )
        return cls(class_name, frozenset(users), text == "true")
