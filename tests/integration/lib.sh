# lib.sh - what the integration test scripts share; sourced by tests/integration/test-*.sh.
#
# Environment (set by meson): TIERCACHE (the command), TC_NBDKIT_PLUGIN, TC_CRASH_CLIENT,
# TC_SOURCE_ROOT.  Each script gets a private folder $T (sparse device files, sockets,
# logs) removed on exit, and a server helper that remembers what it started so the exit
# trap can stop it; background clients started with `bg` are stopped by it too.
# The program paths are made absolute, so a script may `cd "$T"`.  TC_KEEP_TMP=1 keeps
# $T after the run (to look at a failure).
set -eu

: "${TIERCACHE:?TIERCACHE must name the tiercache command (run through meson test)}"
abs_path() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
TIERCACHE=$(abs_path "$TIERCACHE")
[ -z "${TC_NBDKIT_PLUGIN:-}" ] || TC_NBDKIT_PLUGIN=$(abs_path "$TC_NBDKIT_PLUGIN")
[ -z "${TC_CRASH_CLIENT:-}" ] || TC_CRASH_CLIENT=$(abs_path "$TC_CRASH_CLIENT")
export TC_NBDKIT_PLUGIN

T=$(mktemp -d "${TMPDIR:-/tmp}/tc-it.XXXXXX")
SOCK=$T/nbd.sock
CTL=$T/ctl.sock
LOG=$T/serve.log
SERVER_PID=
ALL_SERVERS=     # every server pid this script started (a test may run several)
BG_PIDS=         # background clients started with `bg`

# ours PID: the process is alive and one this script started (its command line names
# $T, so a recycled pid of someone else's process is never signalled).
ours() {
	kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$T"
}

cleanup() {
	rc=$?
	for p in $BG_PIDS; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $BG_PIDS; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$p" 2>/dev/null || true
	done
	for p in $SERVER_PID $ALL_SERVERS; do
		ours "$p" || continue
		kill -TERM "$p" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$p" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -f "$LOG" ]; then
		echo "--- server log ($LOG) ---" >&2
		tail -n 40 "$LOG" >&2 || true
	fi
	if [ -n "${TC_KEEP_TMP:-}" ]; then
		echo "# TC_KEEP_TMP: kept $T" >&2
	else
		rm -rf "$T"
	fi
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
	ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
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

# json_get FILE KEY...: a value from a JSON document (FILE - : standard input; python3
# is part of the Debian base here only through meson, which needs it).  A list index
# may also be NAME=VALUE: the first element whose NAME is VALUE ("volumes name=db").
# Scalars print as Python does: true/false/null as True/False/None.
json_get() {
	python3 -c '
import json, sys
doc = json.load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1]))
for k in sys.argv[2:]:
    if isinstance(doc, list) and "=" in k:
        key, val = k.split("=", 1)
        m = [d for d in doc if isinstance(d, dict) and str(d.get(key)) == val]
        if not m:
            sys.exit("json_get: no element with %s in %s" % (k, json.dumps(doc)[:500]))
        doc = m[0]
        continue
    doc = doc[int(k)] if isinstance(doc, list) else doc[k]
print(json.dumps(doc) if isinstance(doc, (dict, list)) else doc)
' "$@"
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
	[ -e "$ssd" ] || tc create cache "$ssd" --unprotected-writeback --size 128M --line-size 64K >/dev/null
}

# serve_two_volumes: volumes db (write-through, backing hdd.img) and db2 (write-back,
# hdd2.img) attached to one 128 MiB cache ssd.img in $T, served; MIB set.  Arguments
# go to serve before the devices (more options, more devices).
serve_two_volumes() {
	MIB=$((1024 * 1024))
	make_volume db hdd.img ssd.img --write-policy wt
	make_volume db2 hdd2.img ssd.img --write-policy wb
	tc attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
	tc attach --cache ssd.img --backing hdd2.img --device hdd2.img >/dev/null
	serve "$@" ssd.img hdd.img hdd2.img
}

# ---- helpers of the client tests (fio, qemu-io, libnbd) --------------------------------

# bg COMMAND...: run COMMAND in the background, stdout and stderr to $BG_LOG; sets BG
# (its pid) and BG_LOG.  The exit trap stops it if it is still running.
BG_N=0
bg() {
	BG_N=$((BG_N + 1))
	BG_LOG=$T/bg.$BG_N.log
	"$@" >"$BG_LOG" 2>&1 &
	BG=$!
	BG_PIDS="$BG_PIDS $BG"
}

# bg_wait PID: wait for a `bg` command; returns its exit status.
bg_wait() {
	set +e
	wait "$1"
	_rc=$?
	set -e
	BG_PIDS=$(echo "$BG_PIDS" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
	return $_rc
}

# status_get VOLUME KEY...: a value of VOLUME in `tiercache status --json` of the test
# server ("state", "dirty_bytes", "settings write_policy"...).
status_get() {
	_v=$1
	shift
	ctl status --json | json_get - volumes "name=$_v" "$@"
}

# stats_get VOLUME KEY: one counter of `tiercache stats VOLUME --json`.
stats_get() { ctl stats "$1" --json | json_get - "$2"; }

# wait_until SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds; fails the
# test after SECONDS.
wait_until() {
	_n=$(($1 * 5))
	shift
	while [ "$_n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		_n=$((_n - 1))
	done
	fail "not true after the wait: $*"
}

# fio_nbd VOLUME LOGNAME FIO-OPTIONS...: fio against VOLUME on the test server (job
# name "v", the nbd engine; no state files in the current folder).  Output in
# $T/LOGNAME.log; fails the test on a non-zero exit or any verify error.
fio_nbd() {
	_vol=$1 _log=$T/$2.log
	shift 2
	set +e
	fio --name=v --ioengine=nbd --uri="$(uri "$_vol")" --verify_state_save=0 \
		"$@" >"$_log" 2>&1
	_rc=$?
	set -e
	if [ "$_rc" -ne 0 ] || grep -Eqi 'verify: bad|bad magic|crc32c: verify failed|err= *[1-9]' "$_log"; then
		tail -n 30 "$_log" >&2
		fail "fio $* on volume $_vol: exit $_rc (log $_log)"
	fi
}

# keepalive_start VOLUME / keepalive_stop: a slow reader (50 random 4 KiB reads per
# second of 16 MiB at offset 500 MiB) keeps VOLUME busy, so the low-rate cleaner,
# which waits for 1 s without client I/O, writes nothing back meanwhile: dirty byte
# counts stay exact.
KA=
keepalive_start() {
	bg fio --name=ka --ioengine=nbd --uri="$(uri "$1")" --rw=randread --bs=4k \
		--offset=500m --size=16m --time_based --runtime=300 --rate_iops=50 --iodepth=1
	KA=$BG
	wait_until 10 grep -q 'connected to NBD server' "$BG_LOG"
}
keepalive_stop() {
	[ -n "$KA" ] || return 0
	kill -TERM "$KA" 2>/dev/null || true
	bg_wait "$KA" || true
	KA=
}

# nbd_python: a python3 that has libnbd's module (python3-libnbd), or nothing.
nbd_python() {
	for _p in python3 /usr/bin/python3; do
		if command -v "$_p" >/dev/null 2>&1 && "$_p" -c 'import nbd' 2>/dev/null; then
			command -v "$_p"
			return 0
		fi
	done
	return 0
}

# qio URI COMMAND...: qemu-io commands; fails on an error or a pattern mismatch.
qio() {
	_u=$1
	shift
	_args=
	for _c in "$@"; do
		_args="$_args -c '$_c'"
	done
	set +e
	eval "qemu-io -f raw '$_u' $_args" >"$T/qio.log" 2>&1
	_rc=$?
	set -e
	if [ "$_rc" -ne 0 ] || grep -q 'Pattern verification failed' "$T/qio.log"; then
		cat "$T/qio.log" >&2
		fail "qemu-io $*: exit $_rc"
	fi
}
