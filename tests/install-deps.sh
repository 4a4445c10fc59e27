#!/bin/sh
# What the test suite needs beyond pip on a fresh Debian machine: Chromium and its driver (tests/test_ui.py),
# Node.js with the pinned @kubernetes/client-node (tests/test_clients.py). kubectl 1.32 is expected at
# /usr/bin/kubectl. Installs only what is missing; apt-get runs through sudo when not root.
set -eu
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
    $SUDO apt-get install -y -qq $missing || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing; }
fi
[ -d tests/clients/node/node_modules/@kubernetes/client-node ] || \
    (cd tests/clients/node && npm ci --no-audit --no-fund --loglevel=error)
