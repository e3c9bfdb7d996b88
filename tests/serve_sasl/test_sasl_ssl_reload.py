"""Certificates rotated under a running ``SASL_SSL`` listener: the TLS layer under SASL is the
same reloading context as an ``SSL`` listener's (``seglog.ssl.reload.check.ms``).

confluent-kafka logs in with SCRAM-SHA-512 over the old certificate and produces; a raw TLS
connection made then stays open. The keystore is replaced by atomic rename with a certificate
from another CA; a raw TLS client trusting only the new CA then gets it (ApiVersions is
answered before any SASL exchange, as Kafka allows); confluent-kafka trusting only the new CA
logs in, produces and reads both records; the connection opened before is still answered.
"""

from __future__ import annotations

import time
from pathlib import Path

from sasl_clients import confluent_consume, confluent_produce
from sasl_server import ALICE_PASSWORD, SaslServe, add_user, sasl_ssl_properties
from tls_certs import Pki
from tls_rotation import Ca, OpenTls, replace, server_serial
from tls_server import serve_for_fixture

DEADLINE_S = 30.0


def test_sasl_ssl_listener_takes_a_rotated_certificate(tmp_path: Path, pki: Pki) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    add_user(data_dir, "alice", ALICE_PASSWORD)
    keystore = tmp_path / "server.pem"
    keystore.write_bytes(pki.server_keystore.read_bytes())
    properties = sasl_ssl_properties(pki) | {
        "ssl.keystore.location": str(keystore),
        "seglog.ssl.reload.check.ms": "100",
    }
    for served in serve_for_fixture(SaslServe(data_dir, properties)):
        login = (served.bootstrap, "SCRAM-SHA-512", "alice", ALICE_PASSWORD)
        assert confluent_produce(*login, "rotated", ["before"], ca=pki.ca) is None
        opened_before = OpenTls(served.bootstrap, pki.ca)

        new_ca = Ca("rotated CA")
        new_ca_path = tmp_path / "new-ca.pem"
        new_ca_path.write_bytes(new_ca.pem)
        data, cert = new_ca.keystore()
        replace(keystore, data, "rename")
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                if server_serial(served.bootstrap, new_ca_path) == cert.serial_number:
                    break
            except (OSError, EOFError):
                pass  # still the old certificate, which the new CA did not sign
            assert time.monotonic() < deadline, served.log()[-3000:]
            time.sleep(0.05)

        assert confluent_produce(*login, "rotated", ["after"], ca=new_ca_path) is None
        assert confluent_consume(*login, "rotated", 2, ca=new_ca_path) == ["before", "after"]
        assert opened_before.api_versions()[:4] == (7).to_bytes(4, "big")  # correlation id
        opened_before.close()
        assert "reloaded TLS certificates of SASL_SSL://" in served.log()
