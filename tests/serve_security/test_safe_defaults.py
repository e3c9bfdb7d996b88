"""``seglog serve`` refuses an unencrypted listener reachable from other hosts unless told.

Without an authorizer and without ``seglog.allow.insecure.listeners=true`` the command fails
at once with the error naming the listener and the ways out, binding nothing; with the setting
it starts, prints its ready line and logs a warning naming the listener. A bad TLS setting
fails the command the same way, naming the key.
"""

from __future__ import annotations

from pathlib import Path

from tls_certs import Pki
from tls_server import TlsFactory, run_cli


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(text)
    return path


def test_plaintext_on_every_interface_is_refused_without_the_setting(tmp_path: Path) -> None:
    config = _config(tmp_path, "listeners=PLAINTEXT://0.0.0.0:0\n")
    result = run_cli(tmp_path / "data", config, "serve", "--metrics-port", "0")
    assert result.returncode != 0
    assert result.stdout == ""  # no ready line
    assert "PLAINTEXT://0.0.0.0:0 would accept unencrypted connections" in result.stderr
    assert "seglog.allow.insecure.listeners=true" in result.stderr


def test_plaintext_on_every_interface_starts_with_the_setting_and_warns(
    tls_serve: TlsFactory,
) -> None:
    server = tls_serve(
        {"listeners": "PLAINTEXT://0.0.0.0:0", "seglog.allow.insecure.listeners": "true"}
    )
    assert server.ready_lines[0].startswith("seglog serve: listening on PLAINTEXT://0.0.0.0:")
    log = server.stderr_path.read_text()
    assert "WARNING" in log and "accepts unencrypted connections from other hosts" in log


def test_a_bad_tls_setting_fails_the_command_naming_the_key(tmp_path: Path, pki: Pki) -> None:
    config = _config(
        tmp_path,
        f"listeners=SSL://127.0.0.1:0\nssl.keystore.location={pki.server_keystore_encrypted}\n",
    )
    result = run_cli(tmp_path / "data", config, "serve", "--metrics-port", "0")
    assert result.returncode != 0 and result.stdout == ""
    assert "the private key is encrypted: set ssl.key.password" in result.stderr
