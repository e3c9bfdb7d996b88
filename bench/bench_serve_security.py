"""Produce and fetch with confluent-kafka over SSL and SASL_SSL against PLAINTEXT, on one
server, in one run.

One ``seglog serve`` subprocess listens on ``PLAINTEXT://127.0.0.1:0``, ``SSL://127.0.0.1:0``
and ``SASL_SSL://127.0.0.1:0`` at once (same process, same data directory, same page cache), so
the only difference between the contenders is the listener. The TLS listeners read a PEM
keystore made for the run with ``cryptography`` (a CA and an EC P-256 server certificate for
127.0.0.1; the client trusts the CA and checks the host name); TLS 1.3 as OpenSSL negotiates it
(``TLS_AES_256_GCM_SHA384``, with AES-NI where the CPU has it). On SASL_SSL the client logs in
with SCRAM-SHA-512 as a user added with ``seglog scram-credentials`` (4096 iterations, Kafka's
minimum) before the start; each sample opens new connections, so its login is in the time.

* **produce**: a confluent-kafka ``Producer`` (``acks=1``, ``linger.ms=5``, librdkafka's
  default batch sizes, no compression) writes ``--records`` records of ``--value-bytes`` bytes
  (16-byte keys) to a fresh topic per sample, timed from the first ``produce()`` to the end of
  ``flush()``; every delivery is checked.
* **fetch**: a confluent-kafka ``Consumer`` (librdkafka's defaults: ``fetch.max.bytes`` 50 MiB,
  ``max.partition.fetch.bytes`` 1 MiB) assigned at offset 0 of a topic of ``--fetch-mb`` MiB
  (produced once over PLAINTEXT before timing, read once to warm the page cache) reads it to
  the end; each value's length is summed and checked. Over PLAINTEXT the server sends the
  records with ``sendfile``; over SSL it reads them with ``pread`` and encrypts them in process.

Contenders are interleaved round-robin (PLAINTEXT, SSL, SASL_SSL, PLAINTEXT, ...) after one
untimed warm-up round; reported: MB/s of key + value bytes and records/s of the median wall
time, the server's CPU seconds per sample (``/proc/<pid>/stat``) and each secured listener's
throughput ratio to PLAINTEXT's (**SSL / PLAINTEXT**, **SASL_SSL / PLAINTEXT**; goal >= 0.5).

Run: ``.venv/bin/python -m bench.bench_serve_security [--records 200000] [--value-bytes 1024]
[--fetch-mb 256] [--repeat 5] [--quick]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

if __package__ in (None, ""):  # run as a script: python bench/bench_serve_security.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_info, write_results
from bench.serve_common import environment, median, quiet_client

GOAL = 0.5
LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
SASL_USER, SASL_PASSWORD = "bench", "bench-secret"
READY = "seglog serve: listening on "
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def make_keystore(directory: Path) -> tuple[Path, Path]:
    """A CA (``ca.pem``) and the server's keystore (``server.pem``: key, then chain)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def certificate(
        subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(name(issuer))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            san = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    server_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("bench CA", ca_key, "bench CA", ca_key, True)
    server = certificate("127.0.0.1", server_key, "bench CA", ca_key, False)
    pem = serialization.Encoding.PEM
    ca_path, keystore = directory / "ca.pem", directory / "server.pem"
    ca_path.write_bytes(ca.public_bytes(pem))
    keystore.write_bytes(
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        + server.public_bytes(pem)
        + ca.public_bytes(pem)
    )
    return ca_path, keystore


class ListenerServer:
    """``seglog serve`` with a PLAINTEXT, an SSL and a SASL_SSL listener on loopback, and the
    SCRAM user :data:`SASL_USER` (added with the CLI before the start)."""

    def __init__(self, data_dir: Path, keystore: Path, log: IO[bytes]) -> None:
        config = data_dir.parent / "server.properties"
        config.write_text(
            f"listeners={','.join(f'{name}://127.0.0.1:0' for name in LISTENERS)}\n"
            f"ssl.keystore.location={keystore}\n"
            "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
        )
        command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir)]
        scram = f"SCRAM-SHA-512=[iterations=4096,password={SASL_PASSWORD}]"
        subprocess.run(
            [*command, "scram-credentials", "--user", SASL_USER, "--add", scram],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=environment(),
        )
        command += ["--config", str(config), "serve", "--metrics-port", "0"]
        self.process = subprocess.Popen(
            [*command, "--log-level", "WARNING"],
            stdout=subprocess.PIPE,
            stderr=log,
            env=environment(),
            text=True,
        )
        assert self.process.stdout is not None
        self.address: dict[str, str] = {}
        for _ in LISTENERS:
            line = self.process.stdout.readline().strip()
            if not line.startswith(READY):
                self.process.kill()
                raise RuntimeError(f"seglog serve did not start: {line!r}")
            listener, _, address = line[len(READY) :].partition("://")
            self.address[listener] = address

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(60)
        if status != 0:
            raise RuntimeError(f"seglog serve exited with status {status}")


def client_config(listener: str, server: ListenerServer, ca: Path) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": server.address[listener]}
    if listener != "PLAINTEXT":
        config |= {"security.protocol": listener, "ssl.ca.location": str(ca)}
    if listener == "SASL_SSL":
        config |= {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": SASL_USER}
        config |= {"sasl.password": SASL_PASSWORD}
    return quiet_client(config)


def produce(config: dict[str, Any], topic: str, records: int, value: bytes) -> float:
    """Produce ``records`` records; returns the wall seconds (first produce to flush end)."""
    from confluent_kafka import Producer

    producer = Producer(config | {"acks": 1, "linger.ms": 5})
    failures: list[object] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(error)

    start = time.perf_counter()
    for index in range(records):
        key = b"%016d" % index
        while True:
            try:
                producer.produce(topic, value, key, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(f"{remaining} undelivered, errors {failures[:3]}")
    return elapsed


def fetch(config: dict[str, Any], topic: str, records: int, value_bytes: int) -> float:
    """Read the topic from offset 0 to its end; returns the wall seconds (assign to last)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(config | {"group.id": "bench-unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        start = time.perf_counter()
        seen = total = 0
        deadline = start + 300
        while seen < records:
            for message in consumer.consume(min(10000, records - seen), 1.0):
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                seen += 1
                total += len(message.value())
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {seen} of {records} records read")
        elapsed = time.perf_counter() - start
        if total != records * value_bytes:
            raise RuntimeError(f"{total} value bytes read, expected {records * value_bytes}")
        return elapsed
    finally:
        consumer.close()


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    ca, keystore = make_keystore(workdir)
    value = (b"0123456789abcdef" * (args.value_bytes // 16 + 1))[: args.value_bytes]
    fetch_records = args.fetch_mb * 1024 * 1024 // args.value_bytes
    record_bytes = args.value_bytes + 16
    results: dict[str, Any] = {"samples": {}}
    with (workdir / "serve.stderr").open("ab") as log:
        server = ListenerServer(workdir / "data", keystore, log)
        try:
            configs = {name: client_config(name, server, ca) for name in LISTENERS}
            produce(configs["PLAINTEXT"], "fetched", fetch_records, value)
            fetch(configs["PLAINTEXT"], "fetched", fetch_records, args.value_bytes)  # warm
            samples: dict[str, list[tuple[float, float]]] = {}
            for round_index in range(args.repeat + 1):  # round 0: warm-up, not kept
                for listener, config in configs.items():
                    for kind in ("produce", "fetch"):
                        cpu = server.cpu_seconds()
                        if kind == "produce":
                            topic = f"p-{listener.lower()}-{round_index}"
                            wall = produce(config, topic, args.records, value)
                        else:
                            wall = fetch(config, "fetched", fetch_records, args.value_bytes)
                        if round_index:
                            key = f"{kind} {listener}"
                            spent = server.cpu_seconds() - cpu
                            samples.setdefault(key, []).append((wall, spent))
        finally:
            server.stop()
    print(
        f"\n{args.records} records of {args.value_bytes} B produced per sample; "
        f"{fetch_records} records ({args.fetch_mb} MiB) fetched per sample; "
        f"{args.repeat} interleaved rounds after a warm-up\n"
    )
    print("| contender | MB/s | records/s | wall s (median) | server cpu s | / PLAINTEXT |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, count in (("produce", args.records), ("fetch", fetch_records)):
        walls = {}
        for listener in LISTENERS:
            values = samples[f"{kind} {listener}"]
            wall = median([w for w, _ in values])
            cpu = median([c for _, c in values])
            walls[listener] = wall
            ratio = ""
            if listener != "PLAINTEXT":
                ratio = f"**{walls['PLAINTEXT'] / wall:.2f}x**"
                ratio += " met" if walls["PLAINTEXT"] / wall >= GOAL else " missed"
            print(
                f"| {kind}, {listener} | {count * record_bytes / wall / 1e6:,.0f} | "
                f"{count / wall:,.0f} | {wall:.2f} [{min(w for w, _ in values):.2f}.."
                f"{max(w for w, _ in values):.2f}] | {cpu:.2f} | {ratio} |"
            )
        results[kind] = {
            "wall_s": walls,
            "ratio": walls["PLAINTEXT"] / walls["SSL"],  # SSL / PLAINTEXT, as before
            "ratio_sasl_ssl": walls["PLAINTEXT"] / walls["SASL_SSL"],
        }
    results["samples"] = samples
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--fetch-mb", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a smoke run (tiny sizes)")
    args, _others = parser.parse_known_args(argv)  # bench.run_all passes others' options
    if args.quick:
        args.records, args.fetch_mb, args.repeat = 2_000, 2, 1
    workdir = Path(tempfile.mkdtemp(prefix="bench-serve-security-"))
    try:
        results = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if not args.quick:
        path = write_results(
            "serve_security", {"machine": machine_info(), "args": vars(args), **results}
        )
        print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
