"""seglog serve: a single-node Kafka broker over seglog's logs (handlers, groups, the network edge)."""
