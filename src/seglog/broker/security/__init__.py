"""Security of the server's connections: TLS contexts, SASL mechanisms, credentials."""
