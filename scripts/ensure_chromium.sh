#!/bin/sh
# The search page is tested in a real browser: install Debian's Chromium when it is missing and we can.
# Never fails: where it cannot be installed, tests/test_page.py skips and says so.
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the search-page tests (apt-get)..." >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/tmp/retrievo-chromium.log 2>&1; then
        apt-get update -q >>/tmp/retrievo-chromium.log 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >>/tmp/retrievo-chromium.log 2>&1 ||
            echo "could not install chromium (see /tmp/retrievo-chromium.log); the page tests will skip" >&2
    fi
else
    echo "chromium is missing and cannot be installed here (needs root and apt-get); the page tests will skip" >&2
fi
exit 0
