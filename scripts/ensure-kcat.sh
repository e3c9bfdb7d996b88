#!/bin/sh
# Make sure `kcat` (the Kafka command-line client, formerly kafkacat) is installed: the
# integration tests of `seglog serve` run it against the server as a real Kafka client, and
# the README's tour uses it.
#
# When no `kcat` is on PATH and apt-get is available, install Debian's `kcat` package (as root
# directly, otherwise through sudo). Elsewhere, say what is missing and go on (the tests that
# drive kcat need it). Idempotent and quick when kcat is already there.
set -eu

if command -v kcat >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-kcat: no kcat and no apt-get: install kcat (https://github.com/edenhill/kcat) for the seglog serve tests" >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "ensure-kcat: not root and no sudo: run 'apt-get install -y kcat' as root" >&2
  exit 1
fi
echo "ensure-kcat: installing Debian's kcat (a Kafka client the seglog serve tests use)"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat
