#!/bin/sh
# Installs the browser of the browser tests (tests/report/test_browser.py): Debian's chromium
# package at /usr/bin/chromium, when it is missing and this can be done (root, apt-get).
# The test suite itself never installs anything: README.md's test command runs this first.
# It always exits 0 and prints one line; when the browser cannot be installed, the browser
# tests are skipped (and fail under CI, where CI=1: see tests/report/conftest.py).
set -u

chromium=/usr/bin/chromium
skipped="the browser tests will be skipped (they fail under CI=1)"

if [ -x "$chromium" ]; then
    echo "setup_browser: Chromium is at $chromium"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup_browser: no $chromium and no apt-get (not a Debian-based system): $skipped"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "setup_browser: no $chromium; installing it needs root (apt-get install chromium): $skipped"
    exit 0
fi

log=$(mktemp)
apt() {
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get "$@" >"$log" 2>&1
}
install="install -y --no-install-recommends chromium"
# shellcheck disable=SC2086  # $install is several words on purpose
if ! apt $install; then
    # The package lists may be missing or stale.
    if ! apt update || ! apt $install; then
        echo "setup_browser: apt-get could not install chromium ($(tail -n 1 "$log")): $skipped"
        rm -f "$log"
        exit 0
    fi
fi
rm -f "$log"
if [ -x "$chromium" ]; then
    echo "setup_browser: installed Debian's chromium at $chromium"
else
    echo "setup_browser: apt-get installed chromium but there is no $chromium: $skipped"
fi
exit 0
