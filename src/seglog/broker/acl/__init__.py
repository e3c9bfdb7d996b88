"""ACLs: Kafka's model and decision (pure), the ACL file, the authorizer of ``seglog serve``."""
