# lib.sh - what the integration test scripts share; sourced by tests/integration/test-*.sh.
#
# Environment (set by meson): TIERCACHE (the command), TC_NBDKIT_PLUGIN, TC_CRASH_CLIENT,
# TC_SOURCE_ROOT.  Each script gets a private folder $T (sparse device files, sockets,
# logs) removed on exit, and a server helper that remembers what it started so the exit
# trap can stop it.
set -eu

: "${TIERCACHE:?TIERCACHE must name the tiercache command (run through meson test)}"
export TC_NBDKIT_PLUGIN

T=$(mktemp -d "${TMPDIR:-/tmp}/tc-it.XXXXXX")
SOCK=$T/nbd.sock
CTL=$T/ctl.sock
LOG=$T/serve.log
SERVER_PID=

cleanup() {
	rc=$?
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -f "$LOG" ]; then
		echo "--- server log ($LOG) ---" >&2
		tail -n 40 "$LOG" >&2 || true
	fi
	rm -rf "$T"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "# $*" >&2; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# need PROGRAM...: skip the test (exit 77) when a client is not installed.
need() {
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || { echo "SKIP: $p not installed" >&2; exit 77; }
	done
}

tc() { "$TIERCACHE" "$@"; }

# uri NAME: the NBD URI of volume NAME on the test server.
uri() { echo "nbd+unix:///$1?socket=$SOCK"; }

# serve DEVICE...: start a background server on $SOCK / $CTL; sets SERVER_PID.
serve() {
	out=$(tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" "$@") ||
		fail "serve $*: exit $?"
	SERVER_PID=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
	[ -n "$SERVER_PID" ] || fail "serve: no pid in: $out"
}

# stop_server: SIGTERM and wait until it is gone (at most 30 s); asserts the sockets
# are removed.
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill -TERM "$SERVER_PID"
	for _ in $(seq 1 60); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.5
	done
	kill -0 "$SERVER_PID" 2>/dev/null && fail "server $SERVER_PID still running 30 s after SIGTERM"
	SERVER_PID=
	[ ! -e "$SOCK" ] || fail "NBD socket $SOCK left behind"
	[ ! -e "$CTL" ] || fail "control socket $CTL left behind"
}

# kill_server: SIGKILL (process death: nothing committed).
kill_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill -KILL "$SERVER_PID"
	for _ in $(seq 1 20); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.25
	done
	SERVER_PID=
}

# ctl COMMAND...: a volume command against the test server.
ctl() { tc "$@" --control "$CTL"; }

# json_get FILE KEY...: a value from a JSON document (python3 is part of the Debian
# base here only through meson, which needs it).
json_get() {
	python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    doc = doc[int(k)] if isinstance(doc, list) else doc[k]
print(json.dumps(doc) if isinstance(doc, (dict, list)) else doc)
PY
}

# expect_fail CODE PATTERN COMMAND...: the command must exit with CODE and print a
# message matching PATTERN (grep -E) on stderr.
expect_fail() {
	code=$1 pat=$2
	shift 2
	set +e
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	[ "$rc" -eq "$code" ] || { cat "$T/err" >&2; fail "$*: exit $rc, expected $code"; }
	grep -Eq -- "$pat" "$T/err" || { cat "$T/err" >&2; fail "$*: message does not match /$pat/"; }
}

# sums FILE...: a checksum of each file's content, to compare devices before/after.
sums() { sha256sum "$@" | awk '{print $1}'; }

# make_volume NAME HDD SSD [create-backing options]: a backing of 1 GiB and a cache of
# 128 MiB as sparse files in $T.
make_volume() {
	name=$1 hdd=$2 ssd=$3
	shift 3
	tc create backing "$hdd" --name "$name" --size 1G "$@" >/dev/null
	[ -e "$ssd" ] || tc create cache "$ssd" --size 128M --line-size 64K >/dev/null
}
