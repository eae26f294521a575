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
sudo=()
if [[ $(id -u) != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "chromium.sh: no chromium, and neither root nor sudo to install it: the page test will not run" >&2
		exit 0
	fi
	sudo=(sudo -n)
fi
if ! command -v apt-get >/dev/null; then
	echo "chromium.sh: no chromium, and no apt-get to install it: the page test will not run" >&2
	exit 0
fi
echo "chromium.sh: installing Debian's chromium for the page test" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >&2
