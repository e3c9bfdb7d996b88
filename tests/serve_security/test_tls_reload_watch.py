"""CertificateWatch and ReloadingContext without a server: real PEM files on a real file system,
a manual clock for the check interval (no sleeping)."""

from __future__ import annotations

import dataclasses
import logging
import os
import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from tls_certs import cert_pem, key_pem
from tls_rotation import HOW, Ca, replace

from seglog.broker.security.principal import certificate_summary
from seglog.broker.security.tls import TlsSettings, server_context
from seglog.broker.security.tls_reload import CertificateWatch, ReloadingContext
from seglog.broker.server_config import ServerConfig
from seglog.clock import ManualClock
from seglog.errors import InvalidConfigError

LISTENER = "SSL://127.0.0.1:9093"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.pem", tmp_path / "b.pem"
    a.write_bytes(b"first a\n")
    b.write_bytes(b"first b\n")
    return a, b


@pytest.mark.parametrize("how", HOW)
def test_watch_sees_a_replaced_file_once_a_check_is_due(tmp_path: Path, how: str) -> None:
    a, b = _files(tmp_path)
    clock = ManualClock()
    watch = CertificateWatch([str(a), str(b)], 1000, clock)
    clock.advance(1000)
    assert watch.poll() is None  # due, nothing changed
    replace(b, b"second b, longer\n", how)
    assert watch.poll() is None  # changed, but checked less than 1000 ms ago
    clock.advance(999)
    assert watch.poll() is None
    clock.advance(1)
    seen = watch.poll()
    assert seen is not None and seen == watch.fingerprints()
    assert watch.changed(seen) == (str(b),)
    watch.applied(seen)
    clock.advance(1000)
    assert watch.poll() is None  # the new files are the ones in use


def test_watch_sees_an_in_place_rewrite_of_the_same_size_by_its_mtime(tmp_path: Path) -> None:
    a, _ = _files(tmp_path)
    clock = ManualClock()
    watch = CertificateWatch([str(a)], 100, clock)
    before = os.stat(a)
    replace(a, b"other a\n"[: before.st_size].ljust(before.st_size, b"!"), "in-place")
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    clock.advance(100)
    seen = watch.poll()
    assert seen is not None and watch.changed(seen) == (str(a),)


def test_watch_disabled_by_zero_never_reports(tmp_path: Path) -> None:
    a, b = _files(tmp_path)
    clock = ManualClock()
    watch = CertificateWatch([str(a), str(b)], 0, clock)
    replace(a, b"changed a, longer\n", "rename")
    for _ in range(3):
        clock.advance(60_000)
        assert watch.poll() is None
    assert CertificateWatch([], 100, clock).poll() is None  # no file (inline PEM): nothing


def test_watch_skips_failed_files_until_they_change(tmp_path: Path) -> None:
    a, _ = _files(tmp_path)
    clock = ManualClock()
    watch = CertificateWatch([str(a)], 100, clock)
    replace(a, b"broken a, longer\n", "rename")
    clock.advance(100)
    broken = watch.poll()
    assert broken is not None
    watch.failed(broken)
    for _ in range(3):
        clock.advance(100)
        assert watch.poll() is None  # the same broken files: not tried again
    replace(a, b"fixed a, longer still\n", "rename")
    clock.advance(100)
    fixed = watch.poll()
    assert fixed is not None and fixed != broken


def test_watch_counts_a_missing_file_as_a_change(tmp_path: Path) -> None:
    a, b = _files(tmp_path)
    clock = ManualClock()
    watch = CertificateWatch([str(a), str(b)], 100, clock)
    a.unlink()
    clock.advance(100)
    seen = watch.poll()
    assert seen is not None and seen[0] is None and watch.changed(seen) == (str(a),)


class _Pems:
    """A listener's keystore and truststore files, from one CA."""

    def __init__(self, root: Path) -> None:
        self.ca = Ca("reload unit CA")
        self.keystore, self.truststore = root / "server.pem", root / "clients.pem"
        data, self.cert = self.ca.keystore()
        self.keystore.write_bytes(data)
        self.truststore.write_bytes(self.ca.pem)
        self.settings = TlsSettings(
            listener="SSL",
            keystore_location=str(self.keystore),
            truststore_location=str(self.truststore),
            client_auth="required",
        )


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("how", HOW)
def test_half_rotated_pair_is_refused_once_then_applied(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    pems, clock = _Pems(tmp_path), ManualClock()
    reloading = ReloadingContext(pems.settings, 100, clock)
    first = reloading.context
    new_key_, new_cert = pems.ca.server()
    caplog.set_level(logging.INFO, logger="seglog.serve")
    # the key written first, the certificate still the old one
    replace(pems.keystore, key_pem(new_key_) + cert_pem(pems.cert) + pems.ca.pem, how)
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "failed"
    assert reloading.context is first
    for _ in range(3):
        clock.advance(100)
        assert reloading.refresh(LISTENER) is None
    (warning,) = _warnings(caplog)
    assert LISTENER in warning and str(pems.keystore) in warning
    assert "KEY_VALUES_MISMATCH" in warning, warning
    # then the certificate lands
    replace(pems.keystore, key_pem(new_key_) + cert_pem(new_cert) + pems.ca.pem, how)
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "reloaded"
    assert reloading.context is not first
    (info,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reloaded")]
    assert info.startswith(f"reloaded TLS certificates of {LISTENER}: subject CN=localhost, ")
    assert f"serial {new_cert.serial_number:x}," in info


def test_a_key_alone_then_its_chain_written_in_place(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A writer that writes the key, then (later) the chain, into the same open file."""
    pems, clock = _Pems(tmp_path), ManualClock()
    reloading = ReloadingContext(pems.settings, 100, clock)
    key, cert = pems.ca.server()
    caplog.set_level(logging.INFO, logger="seglog.serve")
    with pems.keystore.open("r+b") as handle:
        handle.truncate(0)
        handle.write(key_pem(key))
        handle.flush()
        clock.advance(100)
        assert reloading.refresh(LISTENER) == "failed"
        handle.write(cert_pem(cert) + pems.ca.pem)
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "reloaded"
    assert len(_warnings(caplog)) == 1


def test_truststore_rotation_and_a_broken_truststore(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pems, clock = _Pems(tmp_path), ManualClock()
    reloading = ReloadingContext(pems.settings, 100, clock)
    caplog.set_level(logging.INFO, logger="seglog.serve")
    replace(pems.truststore, b"-----BEGIN CERTIFICATE-----\nnot base64\n", "in-place")
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "failed"
    (warning,) = _warnings(caplog)
    assert str(pems.truststore) in warning and "ssl.truststore.location" in warning
    other = Ca("next clients CA")
    replace(pems.truststore, other.pem, "in-place")
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "reloaded"
    subjects = [c["subject"] for c in reloading.context.get_ca_certs()]
    assert subjects == [((("commonName", "next clients CA"),),)]


def test_files_changing_while_read_are_tried_again_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pems, clock = _Pems(tmp_path), ManualClock()
    late_write: list[bytes] = []

    def build(settings: TlsSettings) -> ssl.SSLContext:
        context = server_context(settings)
        if late_write:  # another write lands while this one is being read
            replace(pems.keystore, late_write.pop(), "rename")
        return context

    reloading = ReloadingContext(pems.settings, 100, clock, build)
    first = reloading.context
    caplog.set_level(logging.INFO, logger="seglog.serve")
    data, _ = pems.ca.keystore()
    final, final_cert = pems.ca.keystore()
    replace(pems.keystore, data, "rename")
    late_write.append(final)
    clock.advance(100)
    assert reloading.refresh(LISTENER) is None  # read a moving file: not applied
    assert reloading.context is first and not _warnings(caplog)
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "reloaded"
    assert f"serial {final_cert.serial_number:x}," in caplog.text


def test_certificate_summary_matches_cryptography() -> None:
    ca = Ca("summary CA")
    for days in (1, 400, 40_000):  # UTCTime until 2049, GeneralizedTime from 2050
        _, cert = ca.server(days)
        summary = certificate_summary(cert.public_bytes(serialization.Encoding.DER))
        after = cert.not_valid_after_utc.strftime("%Y-%m-%d %H:%M:%S")
        assert summary == (
            f"subject CN=localhost, serial {cert.serial_number:x}, not after {after} UTC"
        )


def test_check_interval_setting() -> None:
    listeners = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    assert ServerConfig.from_properties(listeners).ssl_reload_check_ms == 5000
    props = listeners | {"seglog.ssl.reload.check.ms": "0"}
    assert ServerConfig.from_properties(props).ssl_reload_check_ms == 0
    for bad, reason in (("-1", "below the minimum 0"), ("soon", "is not an integer")):
        props = listeners | {"seglog.ssl.reload.check.ms": bad}
        with pytest.raises(InvalidConfigError, match=f"seglog.ssl.reload.check.ms: .*{reason}"):
            ServerConfig.from_properties(props)


def test_watch_follows_a_symlink_swap(tmp_path: Path) -> None:
    """A Kubernetes Secret volume: ``server.pem -> ..data/server.pem``, ``..data`` swapped."""
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "server.pem").write_bytes(b"same size " + version.encode())
    (tmp_path / "..data").symlink_to("v1")
    (tmp_path / "server.pem").symlink_to("..data/server.pem")
    clock = ManualClock()
    watch = CertificateWatch([str(tmp_path / "server.pem")], 100, clock)
    (tmp_path / "..data.new").symlink_to("v2")
    os.replace(tmp_path / "..data.new", tmp_path / "..data")
    clock.advance(100)
    assert watch.poll() is not None


def test_a_new_key_encrypted_with_another_password_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pems, clock = _Pems(tmp_path), ManualClock()
    key, cert = pems.ca.server()
    chain = cert_pem(cert) + pems.ca.pem
    pems.keystore.write_bytes(key_pem(key, "first password") + chain)
    settings = dataclasses.replace(pems.settings, key_password="first password")
    reloading = ReloadingContext(settings, 100, clock)
    caplog.set_level(logging.INFO, logger="seglog.serve")
    key, cert = pems.ca.server()
    chain = cert_pem(cert) + pems.ca.pem
    replace(pems.keystore, key_pem(key, "another password") + chain, "rename")
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "failed"
    assert "ssl.key.password" in _warnings(caplog)[0]
    replace(pems.keystore, key_pem(key, "first password") + chain, "rename")
    clock.advance(100)
    assert reloading.refresh(LISTENER) == "reloaded"
