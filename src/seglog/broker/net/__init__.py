"""The network edge of ``seglog serve``: asyncio sockets, framing limits, sendfile."""
