#!/bin/sh
# Make sure headless Chromium is installed: the `seglog report` test screenshots the report
# with it (tests/cli/test_report_chromium.py fails without it).
#
# When /usr/bin/chromium is missing and apt-get is available, install Debian's `chromium`
# package (as root directly, otherwise through sudo). Elsewhere (no apt-get), say what is
# missing and go on: the test then fails and names the package. Idempotent and quick when
# Chromium is already there.
set -eu

if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no /usr/bin/chromium and no apt-get: install Chromium yourself" \
    "(the report screenshot test needs it)" >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "ensure-chromium: not root and no sudo: run 'apt-get install -y chromium' as root" >&2
  exit 1
fi
echo "ensure-chromium: installing Debian's chromium package (for the report screenshot test)"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
