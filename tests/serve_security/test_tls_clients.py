"""kcat, confluent-kafka, kafka-python and aiokafka produce and consume over SSL.

One server has three listeners at once: ``PLAINTEXT``, ``SSL`` (no client certificate asked)
and ``MTLS``, a custom name mapped to SSL by ``listener.security.protocol.map`` whose
``listener.name.mtls.ssl.client.auth=required`` override asks for one. Each client writes
through SSL without a certificate and through MTLS with alice's certificate, reads both topics
back through the same listeners, and the records are the same read through the PLAINTEXT
listener by kafka-python (the bytes on disk do not depend on the listener).
"""

from __future__ import annotations

import pytest
from tls_certs import Pki
from tls_clients import CLIENTS, produce_over_ssl, read_over_ssl
from tls_server import TlsFactory, tls_properties


def three_listeners(pki: Pki) -> dict[str, str]:
    return tls_properties(
        pki,
        listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://localhost:0",
        **{
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            "listener.name.mtls.ssl.client.auth": "required",
        },
    )


def read_plaintext(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out = []
        while consumer.position(tp) != end:
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                out.append((record.offset, record.key, record.value))
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_and_consume_over_ssl_with_and_without_client_certificate(
    client: str, pki: Pki, tls_serve: TlsFactory, kcat: str
) -> None:
    server = tls_serve(three_listeners(pki))
    assert [line.split("://")[0] for line in server.ready_lines] == [
        "seglog serve: listening on PLAINTEXT",
        "seglog serve: listening on SSL",
        "seglog serve: listening on MTLS",
    ]
    for listener, identity in (("SSL", None), ("MTLS", "alice")):
        topic = f"tls-{client}-{listener.lower()}"
        pairs = [(f"k{i}".encode(), f"{listener} value {i}".encode()) for i in range(50)]
        bootstrap = server.bootstrap(listener)
        produce_over_ssl(client, kcat, bootstrap, pki, identity, topic, pairs)
        expected = [(offset, k, v) for offset, (k, v) in enumerate(pairs)]
        assert read_over_ssl(client, kcat, bootstrap, pki, identity, topic) == expected
        assert read_plaintext(server.bootstrap("PLAINTEXT"), topic) == expected
