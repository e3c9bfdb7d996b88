"""kcat, confluent-kafka, kafka-python and aiokafka trying to produce where they must fail.

:class:`Settings` is one client configuration (``security.protocol``, the CA file it trusts, its
certificate and key) spelled for each client as in :mod:`tls_clients`. :func:`produce_refused`
makes ``client`` try to write one record to partition 0 of a topic and returns a
:class:`Refusal`: ``error`` is the failure the client itself reports, one per client:

* kcat: ``exit <status>`` (non-zero: an AssertionError if it exits 0);
* confluent-kafka: the delivery report's error name (``_MSG_TIMED_OUT`` once
  ``message.timeout.ms`` passed without a broker to send to);
* kafka-python: the exception ``send(...).get()`` raised (``KafkaTimeoutError``: the metadata
  never came), ``api_version`` given so that it does not probe the broker first;
* aiokafka: the exception ``start()`` raised (``KafkaConnectionError``: no bootstrap);

and ``detail`` is everything the client said about why: kcat's stderr, librdkafka's error
callback and log lines, kafka-python's and aiokafka's log records (these two put the reason, e.g.
``CERTIFICATE_VERIFY_FAILED``, only in their logs; the exception says only that no broker
answered). An acknowledged record raises AssertionError. Each attempt ends within about 10 s
(:data:`GIVE_UP_MS`), bounded by each client's own timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIVE_UP_MS = 10_000
WAIT_S = 60.0


@dataclass(frozen=True)
class Settings:
    """A client's security settings: ``protocol`` is ``SSL`` or ``PLAINTEXT``; ``ca`` the PEM
    file of the CAs it trusts; ``cert`` and ``key`` its own certificate (None: none shown)."""

    protocol: str
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def librdkafka(self) -> dict[str, str]:
        config = {"security.protocol": self.protocol}
        if self.ca is not None:
            config["ssl.ca.location"] = str(self.ca)
        if self.cert is not None and self.key is not None:
            config["ssl.certificate.location"] = str(self.cert)
            config["ssl.key.location"] = str(self.key)
        return config

    def kafka_python(self) -> dict[str, Any]:
        config: dict[str, Any] = {"security_protocol": self.protocol}
        if self.ca is not None:
            config["ssl_cafile"] = str(self.ca)
        if self.cert is not None and self.key is not None:
            config["ssl_certfile"] = str(self.cert)
            config["ssl_keyfile"] = str(self.key)
        return config

    def aiokafka(self) -> dict[str, Any]:
        if self.protocol == "PLAINTEXT":
            return {"security_protocol": "PLAINTEXT"}
        from aiokafka.helpers import create_ssl_context

        context = create_ssl_context(
            cafile=None if self.ca is None else str(self.ca),
            certfile=None if self.cert is None else str(self.cert),
            keyfile=None if self.key is None else str(self.key),
        )
        return {"security_protocol": self.protocol, "ssl_context": context}


@dataclass(frozen=True)
class Refusal:
    """How a client failed: ``error`` the failure it reports, ``detail`` what it said why."""

    error: str
    detail: str


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def _captured(*names: str) -> Iterator[_Lines]:
    """The log records of loggers ``names`` (and their children), INFO and up, while inside."""
    handler = _Lines()
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


def produce_refused(
    client: str, kcat: str, bootstrap: str, settings: Settings, topic: str, value: bytes
) -> Refusal:
    """Try to write ``value`` to partition 0 of ``topic`` through ``client`` configured with
    ``settings``; the client's failure (see the module docstring)."""
    if client == "kcat":
        args = [kcat, "-b", bootstrap, "-P", "-t", topic, "-p", "0"]
        for key, option in settings.librdkafka().items():
            args += ["-X", f"{key}={option}"]
        args += ["-X", f"message.timeout.ms={GIVE_UP_MS}"]
        done = subprocess.run(
            args, input=value + b"\n", capture_output=True, timeout=WAIT_S, check=False
        )
        assert done.returncode != 0, f"kcat wrote: {done.stderr!r}"
        return Refusal(f"exit {done.returncode}", done.stderr.decode(errors="replace"))
    if client == "confluent":
        return _confluent(bootstrap, settings, topic, value)
    if client == "kafka-python":
        return _kafka_python(bootstrap, settings, topic, value)
    if client == "aiokafka":
        return _aiokafka(bootstrap, settings, topic, value)
    raise ValueError(client)


def _confluent(bootstrap: str, settings: Settings, topic: str, value: bytes) -> Refusal:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    reports: list[KafkaError | None] = []
    with _captured("seglog.tests.rdkafka") as log:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "message.timeout.ms": GIVE_UP_MS,
                "error_cb": errors.append,
                "logger": logging.getLogger("seglog.tests.rdkafka"),
            }
            | settings.librdkafka()
        )
        producer.produce(topic, value, partition=0, on_delivery=lambda e, _m: reports.append(e))
        assert producer.flush(WAIT_S) == 0, "no delivery report"
    (report,) = reports
    assert report is not None, "confluent-kafka wrote the record"
    detail = [str(error) for error in errors] + log.lines
    return Refusal(report.name(), "\n".join(detail))


def _kafka_python(bootstrap: str, settings: Settings, topic: str, value: bytes) -> Refusal:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    with _captured("kafka") as log:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            api_version=(2, 8),
            request_timeout_ms=GIVE_UP_MS,
            max_block_ms=GIVE_UP_MS,
            reconnect_backoff_max_ms=1000,
            **settings.kafka_python(),
        )
        try:
            producer.send(topic, value, partition=0).get(timeout=WAIT_S)
        except KafkaError as error:
            failure = f"{type(error).__name__}: {error}"
        else:
            raise AssertionError("kafka-python wrote the record")
        finally:
            producer.close(timeout=WAIT_S)
    return Refusal(failure.partition(":")[0], "\n".join([failure, *log.lines]))


def _aiokafka(bootstrap: str, settings: Settings, topic: str, value: bytes) -> Refusal:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def attempt() -> str:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, request_timeout_ms=GIVE_UP_MS, **settings.aiokafka()
        )
        try:
            await asyncio.wait_for(producer.start(), WAIT_S)
            await asyncio.wait_for(producer.send_and_wait(topic, value, partition=0), WAIT_S)
        except KafkaError as error:
            return f"{type(error).__name__}: {error}"
        finally:
            await producer.stop()
        raise AssertionError("aiokafka wrote the record")

    with _captured("aiokafka") as log:
        failure = asyncio.run(attempt())
    return Refusal(failure.partition(":")[0], "\n".join([failure, *log.lines]))
