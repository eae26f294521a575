#!/usr/bin/env bash
# redis.sh runs a command against a private Redis server.
#
#   scripts/redis.sh go test ./rediscache/
#
# It installs Debian's redis-server with apt-get (as root, or with sudo) if
# no redis-server is on the PATH, starts one on a free loopback port with no
# persistence, waits until it answers PING, runs the command with
# INBOX_REDIS_ADDR=127.0.0.1:PORT, and stops the server when the script
# exits, whatever the command's outcome. The command's exit status is the
# script's. Needs only bash, and apt-get for the install.
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=lib.bash
source scripts/lib.bash

if ! command -v redis-server >/dev/null; then
	apt_install redis.sh redis-server
	command -v redis-server >/dev/null || { echo "redis.sh: no redis-server after apt-get install" >&2; exit 1; }
fi

launch() {
	# --dir: an empty --save still lets a SAVE command write a dump; keep
	# it out of the repository.
	exec redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "${TMPDIR:-/tmp}" --logfile ''
}
ready() { answers "$1" 'PING\r\n' '+PONG*'; }
serve redis.sh 100 launch ready || exit 1 # up to 10 s a try

export INBOX_REDIS_ADDR="127.0.0.1:$port"
echo "redis.sh: redis-server at $INBOX_REDIS_ADDR (pid $pid)" >&2
status=0
"$@" || status=$?
exit "$status"
