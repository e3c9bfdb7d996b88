"""seglog serve: a one-node Kafka broker over seglog's logs.

Handlers, consumer groups, the network edge.
"""
