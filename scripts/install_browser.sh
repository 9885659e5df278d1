#!/bin/sh
# Debian's Chromium and its driver, for the web page's browser tests (tests/integration/test_web_browser.py,
# driven by Selenium). Installed with apt where apt is there and we are root (Debian/Ubuntu, CI);
# elsewhere nothing is installed and one line says how (the browser test then fails saying so).
# Not in the Docker image: the page needs no browser on the server.
set -eu
PACKAGES="chromium chromium-driver"
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null \
        || echo "browser tests: could not install $PACKAGES with apt" >&2
else
    echo "browser tests: Chromium is not installed; to run them: sudo apt-get install $PACKAGES" >&2
fi
