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

if ! command -v redis-server >/dev/null; then
	sudo=()
	if [[ $(id -u) != 0 ]]; then
		if ! command -v sudo >/dev/null; then
			echo "redis.sh: no redis-server, and neither root nor sudo to install it: install Debian's redis-server" >&2
			exit 1
		fi
		sudo=(sudo -n)
	fi
	if ! command -v apt-get >/dev/null; then
		echo "redis.sh: no redis-server, and no apt-get to install it" >&2
		exit 1
	fi
	echo "redis.sh: installing Debian's redis-server" >&2
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq >&2
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends redis-server >&2
	command -v redis-server >/dev/null || { echo "redis.sh: no redis-server after apt-get install" >&2; exit 1; }
fi

# free_port prints a loopback port that nothing listens on right now.
free_port() {
	local port
	for _ in $(seq 1 50); do
		port=$((20000 + RANDOM % 40000))
		if ! { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
			printf '%s\n' "$port"
			return 0
		fi
		{ exec 3>&-; } 2>/dev/null || true
	done
	echo "redis.sh: found no free port" >&2
	return 1
}

# answers reports whether a Redis server answers PING on port $1.
answers() {
	local line
	{
		exec 3<>"/dev/tcp/127.0.0.1/$1" &&
			printf 'PING\r\n' >&3 &&
			IFS= read -r -t 2 line <&3 &&
			[[ $line == +PONG* ]]
	} 2>/dev/null
	local ok=$?
	# Braces scope the redirection to this exec (see ddblocal.sh).
	{ exec 3>&-; } 2>/dev/null || true
	return $ok
}

pid=
log=$(mktemp "${TMPDIR:-/tmp}/redis.XXXXXX")
stop() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -f "$log"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Another process may take the port between free_port and the bind: try a
# few ports.
for attempt in 1 2 3; do
	port=$(free_port)
	# --dir: an empty --save still lets a SAVE command write a dump; keep
	# it out of the repository.
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "${TMPDIR:-/tmp}" --logfile '' >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do # up to 10 s
		if answers "$port"; then
			break 2
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "redis.sh: redis-server did not answer on port $port (attempt $attempt):" >&2
	cat "$log" >&2
	stop
	pid=
	log=$(mktemp "${TMPDIR:-/tmp}/redis.XXXXXX")
	[[ $attempt == 3 ]] && exit 1
done

export INBOX_REDIS_ADDR="127.0.0.1:$port"
echo "redis.sh: redis-server at $INBOX_REDIS_ADDR (pid $pid)" >&2
status=0
"$@" || status=$?
exit "$status"
