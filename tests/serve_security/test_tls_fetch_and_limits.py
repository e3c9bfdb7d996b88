"""Large fetches over TLS return exactly the bytes written, and TLS handshakes are bounded.

* Over TLS the server cannot ``sendfile``: it reads each file range in chunks and encrypts
  them. 20 MB of random values produced over PLAINTEXT are read back over SSL by
  confluent-kafka with 8 MiB per partition and response (so one response spans several read
  chunks and segment files of 4 MiB) and compared record by record with what was produced.
* A connection in its TLS handshake holds a connection slot: with ``max.connections=1`` a
  silent client on the TLS port keeps a second client out until the idle limit closes it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import ssl
import struct

import pytest
from tls_certs import Pki
from tls_clients import host_port, kafka_response_over_tls, librdkafka_ssl
from tls_server import TlsFactory, tls_properties


def test_large_fetch_over_tls_returns_every_byte(pki: Pki, tls_serve: TlsFactory) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    server = tls_serve(tls_properties(pki, **{"log.segment.bytes": str(4 * 1024 * 1024)}))
    values = [os.urandom(1000 + (i * 7919) % 30000) for i in range(1500)]
    assert sum(map(len, values)) > 20 * 1000 * 1000
    producer = Producer(
        {"bootstrap.servers": server.bootstrap("PLAINTEXT"), "message.max.bytes": 10_000_000}
    )
    for index, value in enumerate(values):
        producer.produce("big", value, str(index).encode(), partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap("SSL"),
            "group.id": "unused",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "fetch.max.bytes": 8 * 1024 * 1024,
        }
        | librdkafka_ssl(pki, None)
    )
    try:
        consumer.assign([TopicPartition("big", 0, 0)])
        read: list[tuple[int, bytes, bytes]] = []
        while len(read) < len(values):
            for message in consumer.consume(min(1000, len(values) - len(read)), 30):
                assert message.error() is None, message.error()
                read.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    assert [offset for offset, _, _ in read] == list(range(len(values)))
    assert [key for _, key, _ in read] == [str(i).encode() for i in range(len(values))]
    digest = hashlib.sha256(b"".join(value for _, _, value in read)).hexdigest()
    assert digest == hashlib.sha256(b"".join(values)).hexdigest()
    assert len(list(server.data_dir.glob("big-0/*.log"))) > 3  # the reads crossed segments


def test_a_connection_in_its_handshake_holds_a_connection_slot(
    pki: Pki, tls_serve: TlsFactory
) -> None:
    server = tls_serve(
        tls_properties(pki, **{"max.connections": "1", "connections.max.idle.ms": "3000"})
    )
    address = server.bootstrap("SSL")
    with socket.create_connection(host_port(address), timeout=30) as silent:
        # the slot is taken while `silent` sits in its handshake: the next client is refused
        with pytest.raises((ssl.SSLError, EOFError, ConnectionResetError)):
            kafka_response_over_tls(address, pki, None)
        assert silent.recv(1) == b""  # the idle limit ends the silent handshake
    response = kafka_response_over_tls(address, pki, None)  # the slot is free again
    assert struct.unpack(">ih", response[:6]) == (7, 0)
