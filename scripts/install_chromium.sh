#!/usr/bin/env bash
# Debian's chromium for the report test (tests/train/record/test_report.py renders the page headless).
#
#   scripts/install_chromium.sh        (through `make setup`; the report tests want /usr/bin/chromium)
#
# Installs with apt-get when run as root; otherwise says what to install and fails, as a missing browser
# fails the report test. Nothing happens when a chromium is already on the PATH.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  echo "install_chromium: $(command -v chromium) already installed"
  exit 0
fi
die() { echo "install_chromium: error: $*" >&2; exit 1; }
if ! command -v apt-get >/dev/null 2>&1; then
  die "needs apt-get (Debian or Ubuntu) to install chromium; on another system install a Chromium whose
  binary is called \`chromium\` on the PATH (the report test runs \`chromium --headless=new\`)"
fi
if [[ $(id -u) -ne 0 ]]; then
  die "chromium is not installed; install it as root:  sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium"
fi
echo "install_chromium: installing chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends chromium \
  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } \
  || die "apt-get install chromium failed"
command -v chromium >/dev/null 2>&1 || die "apt-get ran but chromium is not on the PATH"
