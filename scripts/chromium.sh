#!/usr/bin/env bash
# chromium.sh makes sure a headless browser for the page test is installed:
# Debian's chromium, from apt, if no chromium is on the PATH (about 250 MB
# and a minute, once). It needs root or sudo and apt-get; without them it
# says so and leaves the page test to skip (or, with CI=true, to fail).
set -euo pipefail

for name in chromium chromium-browser google-chrome; do
	if command -v "$name" >/dev/null; then
		exit 0
	fi
done
if [[ -n ${INBOX_BROWSER:-} ]]; then
	exit 0
fi
# shellcheck source=lib.bash
source "$(dirname "$0")/lib.bash"
apt_install chromium.sh chromium || echo "chromium.sh: the page test will not run" >&2
