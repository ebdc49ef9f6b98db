#!/bin/sh
# test-nbd-backing.sh - an NBD export as the backing of a cached volume ("nbd:URI"):
# nbdkit serves a sparse file (the far-away disk, 2 ms per request through nbdkit's
# delay filter), tiercache caches it on a local file in write-back and serves it; fio
# writes and verifies through tiercache (crc32c), the server stops (dirty data kept),
# serves again from the same devices and fio verifies again; detach drains the dirty
# data, and the remote file then holds every block: fio verifies it once more through
# nbdkit alone, without tiercache.  Then the export's server dies while tiercache
# serves it uncached: requests fail with an I/O error, the server stays up.
. "$(dirname "$0")/lib.sh"
need fio nbdkit
cd "$T"

REMOTE_SOCK=$T/remote.sock
REMOTE_PID=
# remote_start FILTER [PARAM...]: nbdkit serving $T/remote.img on $REMOTE_SOCK through
# nbdkit's filter FILTER with its PARAMs (key=value, given after the plugin, as nbdkit
# wants them).
remote_start() {
	_filter=$1
	shift
	nbdkit -f -U "$REMOTE_SOCK" -P "$T/remote.pid" --filter="$_filter" \
		file "$T/remote.img" "$@" 2>"$T/remote.log" &
	REMOTE_PID=$!
	wait_until 20 test -s "$T/remote.pid"
}
remote_stop() {
	[ -n "$REMOTE_PID" ] || return 0
	kill -KILL "$REMOTE_PID" 2>/dev/null || true   # the far-away disk dies
	wait "$REMOTE_PID" 2>/dev/null || true
	REMOTE_PID=
	rm -f "$T/remote.pid"
}
with_status() { return "$1"; }
trap '_rc=$?; remote_stop; with_status $_rc; cleanup' EXIT

truncate -s 256M remote.img
remote_start delay rdelay=2ms wdelay=2ms
R="nbd:nbd+unix:///?socket=$REMOTE_SOCK"

# Bad input first: a size for a remote device, a server that is not there.
expect_fail 2 "is remote; its size is the server's" tc create backing "$R" --name db --size 1G
expect_fail 1 "cannot connect" \
	tc create backing "nbd:nbd+unix:///?socket=$T/nobody.sock" --name db

tc create cache ssd.img --unprotected-writeback --size 64M >/dev/null
tc create backing "$R" --name db --write-policy wb --flush-rate low >/dev/null ||
	fail "create backing on $R"
tc attach --cache ssd.img --backing "$R" --device "$R" >/dev/null ||
	fail "attach the nbd: backing"
serve ssd.img "$R"
[ "$(status_get db state)" = cached ] || fail "volume db not cached: $(ctl status --json)"

W="--offset=0 --size=16m --rw=randrw --rwmixread=30 --bs=4k --iodepth=16 \
--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=99"
# shellcheck disable=SC2086  # W is a list of options
fio_nbd db w1 $W --do_verify=1
dirty=$(stats_get db dirty_bytes)
[ "$dirty" -gt 0 ] || fail "write-back over nbd: no dirty data after fio (dirty $dirty)"
stop_server

# Again from the devices alone: dirty data came back with the cache.
serve ssd.img "$R"
# shellcheck disable=SC2086
fio_nbd db v1 $W --verify_only=1
ctl detach db >/dev/null || fail "detach db"
[ "$(status_get db state)" = uncached ] || fail "db not uncached after detach"
stop_server

# The remote disk holds every block now: verify through nbdkit alone.  The volume's
# data starts 1 MiB into the backing, after its superblock, and fio's block headers
# name the volume's offsets, so a read-only nbdkit with the offset filter shows the
# file from 1 MiB on as the volume saw it.
nbdkit -r -U "$T/direct.sock" -P "$T/direct.pid" --filter=offset file "$T/remote.img" \
	offset=1M 2>"$T/direct-nbdkit.log"
wait_until 20 test -s "$T/direct.pid"
set +e
fio --name=v --ioengine=nbd --uri="nbd+unix:///?socket=$T/direct.sock" \
	--verify_state_save=0 --offset=0 --size=16m --rw=randrw --rwmixread=30 --bs=4k \
	--iodepth=16 --verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=99 \
	--verify_only=1 >direct.log 2>&1
rc=$?
set -e
kill -TERM "$(cat "$T/direct.pid")" 2>/dev/null || true
[ "$rc" -eq 0 ] && ! grep -Eqi 'verify: bad|bad magic|crc32c: verify failed' direct.log ||
	{ tail -n 20 direct.log >&2; fail "the remote disk after detach: fio verify (exit $rc)"; }

# The remote server dies under an uncached volume: I/O errors, the server stays.
serve "$R"
[ "$(status_get db state)" = uncached ] || fail "db not served uncached"
remote_stop
set +e
fio --name=r --ioengine=nbd --uri="$(uri db)" --rw=read --bs=4k --size=1m \
	--verify_state_save=0 >lost.log 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "reads succeeded although the remote disk is gone"
grep -qi 'input/output error\|error=5\|err= *5' lost.log ||
	{ cat lost.log >&2; fail "reads of a lost remote disk: not an I/O error"; }
ctl status --json >/dev/null || fail "the server does not answer after the remote loss"
grep -q 'connection lost' "$LOG" || fail "the server log does not say the connection was lost"
stop_server
echo "nbd backing: cached write-back, restart, detach and remote loss all correct"
