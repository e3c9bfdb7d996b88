#!/bin/sh
# Make sure a Java runtime (17 or newer) is installed: Spark (the `seglog spark` commands, the
# Spark step of `seglog demo` and the tests in tests/spark) runs on the JVM.
#
# When no `java` is on PATH (nor in $JAVA_HOME) and apt-get is available, install Debian's
# `openjdk-17-jre-headless` (as root directly, otherwise through sudo). Elsewhere, say what is
# missing and go on: seglog's Spark commands then fail with a message naming the package.
# Idempotent and quick when Java is already there.
set -eu

if command -v java >/dev/null 2>&1 || { [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; }; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-java: no java and no apt-get: install Java 17 (Spark needs it) and set JAVA_HOME" >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "ensure-java: not root and no sudo: run 'apt-get install -y openjdk-17-jre-headless' as root" >&2
  exit 1
fi
echo "ensure-java: installing Debian's openjdk-17-jre-headless (Spark runs on the JVM)"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jre-headless
