"""Certificates rotated on disk, picked up without a restart (as Redpanda does).

A TLS listener's PEM files (``ssl.keystore.location``, ``ssl.truststore.location``; inline PEM
cannot change) may be replaced while the server runs, by cert-manager, certbot or a hand:
new connections then get the new key, certificate chain and trusted CAs, and connections
already open keep the ones they were made with (an :class:`ssl.SSLContext` is never changed,
a new one replaces it). Kafka needs a dynamic broker config for this; seglog has none.

* :class:`CertificateWatch` knows a listener's files and their fingerprints
  ``(st_mtime_ns, st_size, st_ino)`` (None for a file that cannot be read) and says when they
  changed, at most once per ``seglog.ssl.reload.check.ms`` of its :class:`Clock`: the server
  asks it on each accepted connection rather than running a thread, so an idle listener costs
  nothing and the check (a few ``stat`` calls) is throttled however many clients connect.
  An atomic rename (``mv new.pem server.pem``) gives a new inode; an in-place rewrite a new
  size or modification time. A rewrite of the same size within one tick of the file
  system's clock (a few milliseconds) keeps its fingerprint and is seen at the next change.
* :class:`ReloadingContext` holds a listener's context and applies a change only when the new
  files build a valid one (:func:`seglog.broker.security.tls.server_context`: PEM that parses,
  a key that decrypts and matches its certificate, CAs that load). Otherwise the context in use
  stays and the failure is logged at WARNING once per change (naming the listener, the file
  and OpenSSL's reason); the files are tried again when they change next. So a key and a
  certificate written one after the other (a half-rotated pair: new key, old certificate)
  are refused, then applied when the second write lands. Files that change while being
  read (their fingerprints differ before and after) are neither applied nor warned about:
  they are tried again at the next check. A success is logged at INFO with the new leaf
  certificate's subject, serial and expiry. The rebuild runs on the server's event loop, once
  per change (a few milliseconds: OpenSSL reads and checks the PEM files); a check that finds
  nothing changed costs a ``stat`` per file, and an accept between checks a clock read.
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Callable, Sequence
from typing import Literal

from seglog.broker.security.principal import certificate_summary
from seglog.broker.security.tls import TlsSettings, server_context
from seglog.clock import Clock, SystemClock
from seglog.errors import InvalidCertificateError, InvalidConfigError

LOG = logging.getLogger("seglog.serve")
RELOAD_CHECK_KEY = "seglog.ssl.reload.check.ms"
DEFAULT_RELOAD_CHECK_MS = 5000

Fingerprint = tuple[int, int, int] | None
Outcome = Literal["reloaded", "failed"]


def fingerprint(path: str) -> Fingerprint:
    """``(st_mtime_ns, st_size, st_ino)`` of ``path`` (symbolic links followed), None when it
    cannot be read (missing: a rename in progress, or a deleted file)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


class CertificateWatch:
    """Change detection for a set of files, throttled by a clock (see the module docstring).

    ``check_ms == 0`` (or no file) disables it: :meth:`poll` always answers None. The state:
    the fingerprints of the files in use (``applied``), and those that last failed to build a
    context (``failed``), which are not tried again until the files change.
    """

    def __init__(
        self,
        paths: Sequence[str],
        check_ms: int,
        clock: Clock,
        stat: Callable[[str], Fingerprint] = fingerprint,
    ) -> None:
        self.paths = tuple(paths)
        self.check_ms = check_ms if self.paths else 0
        self._clock = clock
        self._stat = stat
        self._applied = self.fingerprints()
        self._failed: tuple[Fingerprint, ...] | None = None
        self._next_ms = clock.monotonic_ms() + check_ms

    def fingerprints(self) -> tuple[Fingerprint, ...]:
        """The files' fingerprints now, in the order of :attr:`paths`."""
        return tuple(self._stat(path) for path in self.paths)

    def poll(self) -> tuple[Fingerprint, ...] | None:
        """The new fingerprints when a check is due (``check_ms`` since the last one) and the
        files differ from those applied and from those that last failed; None otherwise."""
        if self.check_ms == 0:
            return None
        now = self._clock.monotonic_ms()
        if now < self._next_ms:
            return None
        self._next_ms = now + self.check_ms
        current = self.fingerprints()
        if current == self._applied:
            self._failed = None  # back to the files in use: a later failure is news again
            return None
        if current == self._failed:
            return None
        return current

    def changed(self, fingerprints: tuple[Fingerprint, ...]) -> tuple[str, ...]:
        """The paths whose fingerprints differ from those applied."""
        return tuple(
            path
            for path, old, new in zip(self.paths, self._applied, fingerprints, strict=True)
            if old != new
        )

    def settled(self, fingerprints: tuple[Fingerprint, ...]) -> bool:
        """Whether the files still have ``fingerprints`` (no write since they were taken)."""
        return self.fingerprints() == fingerprints

    def applied(self, fingerprints: tuple[Fingerprint, ...]) -> None:
        """The files with ``fingerprints`` are in use now."""
        self._applied, self._failed = fingerprints, None

    def failed(self, fingerprints: tuple[Fingerprint, ...]) -> None:
        """The files with ``fingerprints`` did not build a context: skip them until they change."""
        self._failed = fingerprints


def watched_files(settings: TlsSettings) -> tuple[str, ...]:
    """The PEM files of a listener's settings (inline PEM has none)."""
    paths = (settings.keystore_location, settings.truststore_location)
    return tuple(path for path in paths if path is not None)


class ReloadingContext:
    """A listener's :class:`ssl.SSLContext`, rebuilt when its files change (see the module
    docstring). :attr:`context` is the one new connections use; :meth:`refresh` says what a
    check did (the server counts it in its stats)."""

    def __init__(
        self,
        settings: TlsSettings,
        check_ms: int = DEFAULT_RELOAD_CHECK_MS,
        clock: Clock | None = None,
        build: Callable[[TlsSettings], ssl.SSLContext] = server_context,
    ) -> None:
        self.settings = settings
        self._build = build
        # fingerprints first: a change while the first context is built is seen at the first check
        self.watch = CertificateWatch(watched_files(settings), check_ms, clock or SystemClock())
        self.context = build(settings)

    def refresh(self, listener: str) -> Outcome | None:
        """Check the files if a check is due; rebuild the context if they changed. ``listener``
        names the listener in log lines. Returns what happened, None when nothing did."""
        fingerprints = self.watch.poll()
        if fingerprints is None:
            return None
        changed = ", ".join(self.watch.changed(fingerprints))
        try:
            context = self._build(self.settings)
            summary = self._summary()
        except (InvalidConfigError, InvalidCertificateError, OSError) as error:
            if not self.watch.settled(fingerprints):
                return None  # being written: try again at the next check
            self.watch.failed(fingerprints)
            LOG.warning(
                "TLS certificates of %s not reloaded (%s changed), keeping those in use: %s",
                listener,
                changed,
                error,
            )
            return "failed"
        if not self.watch.settled(fingerprints):
            return None  # what was read may mix two versions: read again at the next check
        self.context = context
        self.watch.applied(fingerprints)
        LOG.info("reloaded TLS certificates of %s: %s (%s changed)", listener, summary, changed)
        return "reloaded"

    def _summary(self) -> str:
        """The leaf certificate of the keystore file, as :func:`certificate_summary` says it."""
        path = self.settings.keystore_location
        if path is None:
            return "keystore inline, unchanged"
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
        begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
        start = text.find(begin)
        stop = text.find(end, start)
        if start < 0 or stop < 0:
            raise InvalidConfigError(f"{path}: no certificate")
        try:
            der = ssl.PEM_cert_to_DER_cert(text[start : stop + len(end)])
        except ValueError as error:
            raise InvalidConfigError(f"{path}: its certificate does not parse: {error}") from None
        return certificate_summary(der)
