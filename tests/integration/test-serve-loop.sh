#!/bin/sh
# test-serve-loop.sh - a background `tiercache serve` starts every time: 50 starts and
# stops in a row on the same devices (a cached volume with dirty data and an uncached
# one), each start answering on its control socket and serving both volumes, each stop
# removing the sockets.  A server whose start raced with the exit of serve's middle
# process (nbdkit dies with its parent) would fail some of them.
. "$(dirname "$0")/lib.sh"
cd "$T"

tc create cache ssd.img --unprotected-writeback --size 64M >/dev/null
tc create backing hdd.img --name db --size 256M >/dev/null
tc create backing hdd2.img --name db2 --size 64M >/dev/null
tc attach --cache ssd.img --backing hdd.img --write-policy wb --device hdd.img >/dev/null

N=${TC_SERVE_LOOP:-50}
i=0
while [ "$i" -lt "$N" ]; do
	i=$((i + 1))
	set +e
	out=$(tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" ssd.img hdd.img hdd2.img 2>&1)
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || { echo "$out" >&2; fail "start $i of $N: serve exit $rc"; }
	SERVER_PID=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
	[ -n "$SERVER_PID" ] || fail "start $i: no pid in: $out"
	ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
	[ "$(status_get db state)" = cached ] || fail "start $i: db not cached"
	[ "$(status_get db2 state)" = uncached ] || fail "start $i: db2 not uncached"
	stop_server
done
log "$N background starts and stops, none failed"
