# lib.bash holds what the scripts that set up the tests share: installing
# a Debian package, and running a private server on a free loopback port
# for the length of a command. Source it; it defines functions only.

# apt_install NAME PACKAGE installs Debian's PACKAGE with apt-get, as root
# or with sudo. Without either, or without apt-get, it says why on stderr
# (prefixed NAME) and returns 1.
apt_install() {
	local name=$1 package=$2 sudo=()
	if [[ $(id -u) != 0 ]]; then
		if ! command -v sudo >/dev/null; then
			echo "$name: neither root nor sudo to install Debian's $package" >&2
			return 1
		fi
		sudo=(sudo -n)
	fi
	if ! command -v apt-get >/dev/null; then
		echo "$name: no apt-get to install Debian's $package" >&2
		return 1
	fi
	echo "$name: installing Debian's $package" >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$package" >&2
}

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
	echo "found no free port" >&2
	return 1
}

# answers PORT REQUEST PATTERN reports whether the server on PORT answers
# REQUEST (printf format) with a first line matching the glob PATTERN.
answers() {
	local line
	{
		exec 3<>"/dev/tcp/127.0.0.1/$1" &&
			printf "$2" >&3 &&
			IFS= read -r -t 2 line <&3 &&
			[[ $line == $3 ]]
	} 2>/dev/null
	local ok=$?
	# Braces scope the redirection to this exec: a bare
	# `exec 3>&- 2>/dev/null` would send the script's own stderr to
	# /dev/null for good, hiding every error of the command it runs.
	{ exec 3>&-; } 2>/dev/null || true
	return $ok
}

# serve NAME TENTHS LAUNCH READY starts a server and sets port and pid:
# LAUNCH PORT starts it in the foreground (serve runs it in the
# background, its output in a log), READY PORT reports whether it
# answers. It waits up to TENTHS tenths of a second for an answer, and
# tries three free ports (another process may take one between free_port
# and the bind) before it gives up with the server's log. The server is
# stopped when the script exits.
serve() {
	local name=$1 tenths=$2 launch=$3 ready=$4
	_serve_log=$(mktemp "${TMPDIR:-/tmp}/$name.XXXXXX")
	pid=
	trap _serve_stop EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	for attempt in 1 2 3; do
		port=$(free_port)
		"$launch" "$port" >"$_serve_log" 2>&1 &
		pid=$!
		for _ in $(seq 1 "$tenths"); do
			if "$ready" "$port"; then
				return 0
			fi
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			sleep 0.1
		done
		echo "$name: the server did not answer on port $port (attempt $attempt):" >&2
		cat "$_serve_log" >&2
		_serve_stop
		_serve_log=$(mktemp "${TMPDIR:-/tmp}/$name.XXXXXX")
	done
	return 1
}

# _serve_stop stops serve's server, if it runs, and removes its log.
_serve_stop() {
	if [[ -n ${pid:-} ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	pid=
	rm -f "${_serve_log:-}"
}
