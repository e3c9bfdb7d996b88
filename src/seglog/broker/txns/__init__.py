"""The transaction coordinator: its pure state machine and the `__transaction_state` store."""
