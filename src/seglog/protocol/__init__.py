"""Kafka's wire protocol, sans I/O: frames, headers and messages as bytes <-> values.

Nothing here opens a socket or a file. ``seglog.broker`` drives it from asyncio.
"""
