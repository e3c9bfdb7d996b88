"""``seglog transactions --bootstrap-server ... --command-config FILE`` over an SSL listener: a
transaction committed by librdkafka (confluent-kafka) on the PLAINTEXT listener is listed by
the CLI through the SSL one (``ssl.client.auth=required``: the CLI shows alice's certificate
from one PEM keystore file, key then certificate), the server's certificate and host name
checked against ``ca.pem``; trusting another CA, the TLS handshake fails clearly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from tls_certs import Pki
from tls_server import SRC, TIMEOUT_S, TlsFactory, tls_properties


def transactions(bootstrap: str, config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(tmp_path / "unused")]
    command += ["transactions", "--bootstrap-server", bootstrap, "--command-config", str(config)]
    command += ["--list"]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, check=False
    )


def test_transactions_list_over_ssl(tls_serve: TlsFactory, pki: Pki, tmp_path: Path) -> None:
    server = tls_serve(tls_properties(pki, client_auth="required"))
    producer = Producer(
        {"bootstrap.servers": server.bootstrap("PLAINTEXT"), "transactional.id": "cli-ssl-txn"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("paid", b"v")
    producer.commit_transaction(30)
    producer.flush(30)
    del producer
    keystore = tmp_path / "alice.pem"
    keystore.write_bytes(pki.key("alice").read_bytes() + pki.cert("alice").read_bytes())
    config = tmp_path / "ssl.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={pki.ca}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={keystore}\n"
    )
    done = transactions(server.bootstrap("SSL"), config, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cli-ssl-txn" in done.stdout, done.stdout

    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={pki.cert('stranger')}\n"
        f"ssl.keystore.location={keystore}\nssl.endpoint.identification.algorithm=\n"
    )
    done = transactions(server.bootstrap("SSL"), config, tmp_path)
    assert done.returncode == 1
    assert "TLS handshake failed" in done.stderr, done.stderr
