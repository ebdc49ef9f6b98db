#!/bin/sh
# test-crash-power.sh - DESIGN.md invariant 2 across power loss: the server runs on
# crash: devices (writes stay in a volatile cache until flushed) while tc-crash-client
# writes to the volume (random 4-64 KiB writes, some FUA, some write-zeroes, queue
# depth 16 over 4 connections, a FLUSH every 64 writes); `tiercache debug power-cut`
# then applies a random (seeded) subset of every device's unflushed 4 KiB units to its
# file and kills the server.  `tiercache check` must find both devices sound, the
# server must start again on them, and every unit must hold its value as of the last
# completed flush (or FUA write) or a value written since.  Rounds differ in seed,
# write policy, cache size (16M: smaller than the region, so the cleaner works under
# load) and how the devices are served again (crash: or plain paths).
#
# To explore more: TC_CRASH_ROUNDS="POLICY,CACHE_SIZE,SEED,SECONDS,crash|plain ..."
# replaces the rounds, TC_CRASH_CLIENT_OPTS adds options of `tc-crash-client write`
# (e.g. "--fua-pct 30 --flush-every 500").
. "$(dirname "$0")/lib.sh"
: "${TC_CRASH_CLIENT:?TC_CRASH_CLIENT must name tc-crash-client (run through meson test)}"

# The exit trap also stops the client (lib.sh's cleanup stops the server, removes $T).
CPID=
crash_cleanup() {
	rc=$?
	set +e
	[ -z "$CPID" ] || kill -KILL "$CPID" 2>/dev/null
	(exit "$rc")
	cleanup
}
trap crash_cleanup EXIT

# wait_client SECONDS: the client exits by itself once the server is gone.
wait_client() {
	for _ in $(seq 1 $(($1 * 4))); do
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$CPID" 2>/dev/null; then
		kill -KILL "$CPID"
		fail "tc-crash-client still running $1 s after the server died"
	fi
	wait "$CPID" || fail "tc-crash-client write: exit $?: $(cat "$T/write.out")"
	CPID=
}

# wait_prefill: until the client logged the end of its pre-fill (at most 60 s).
wait_prefill() {
	for _ in $(seq 1 240); do
		grep -q '^P$' "$T/write.log" 2>/dev/null && return 0
		kill -0 "$CPID" 2>/dev/null || fail "tc-crash-client died: $(cat "$T/write.out")"
		sleep 0.25
	done
	fail "tc-crash-client: no pre-fill within 60 s"
}

# check_result FILE: the verify saw enough activity to mean something.
check_result() {
	res=$(sed -n 's/^RESULT //p' "$1")
	acked=$(echo "$res" | sed -n 's/.*writes_acked=\([0-9]*\).*/\1/p')
	flushes=$(echo "$res" | sed -n 's/.*flushes_completed=\([0-9]*\).*/\1/p')
	units=$(echo "$res" | sed -n 's/.*units=\([0-9]*\).*/\1/p')
	[ -n "$acked" ] || fail "no RESULT line in $(cat "$1")"
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged before the crash"
	[ "$flushes" -gt 3 ] || fail "only $flushes flushes completed before the crash"
	[ "$units" -gt 1000 ] || fail "only $units units checked"
}

# check_served POLICY: after the crash the volume is served through its cache again,
# with its write policy (a cache that failed to open would leave it uncached).
check_served() {
	ctl status --json >"$T/status.json"
	st=$(json_get "$T/status.json" volumes 0 state)
	wp=$(json_get "$T/status.json" volumes 0 settings write_policy)
	fb=$(json_get "$T/status.json" volumes 0 fallback)
	[ "$st" = cached ] && [ "$wp" = "$1" ] && [ "$fb" = False ] ||
		fail "after the crash: volume $st, policy $wp, fallback $fb (expected cached, $1)"
	log "served again: cached, $wp, $(json_get "$T/status.json" volumes 0 dirty_bytes)" \
		"dirty bytes recovered"
}

# round POLICY CACHE_SIZE SEED SECONDS RESTART(crash|plain)
round() {
	policy=$1 csize=$2 seed=$3 secs=$4 restart=$5
	log "round: $policy, cache $csize, seed $seed, power cut after $secs s of writes," \
		"served again on $restart devices"
	rm -f "$T/hdd.img" "$T/ssd.img" "$T/write.log"
	tc create backing "$T/hdd.img" --name vol --size 1G --write-policy "$policy" >/dev/null
	tc create cache "$T/ssd.img" --size "$csize" --line-size 64K >/dev/null
	tc attach --cache "$T/ssd.img" --backing "$T/hdd.img" \
		--device "$T/ssd.img" --device "$T/hdd.img" >/dev/null
	serve "crash:$T/ssd.img" "crash:$T/hdd.img" --seed "$seed"
	"$TC_CRASH_CLIENT" write "$(uri vol)" "$T/write.log" --seed "$seed" --length 64M \
		${TC_CRASH_CLIENT_OPTS:-} >"$T/write.out" 2>&1 &
	CPID=$!
	wait_prefill
	sleep "$secs"
	kill -0 "$CPID" 2>/dev/null || fail "tc-crash-client ended early: $(cat "$T/write.out")"
	tc debug power-cut --control "$CTL" >/dev/null || fail "debug power-cut: exit $?"
	for _ in $(seq 1 40); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.25
	done
	kill -0 "$SERVER_PID" 2>/dev/null && fail "server $SERVER_PID alive 10 s after power-cut"
	SERVER_PID=
	wait_client 30
	log "$(cat "$T/write.out")"
	# What power loss left must be a sound cache and backing (the cache opens).
	set +e
	tc check "$T/ssd.img" "$T/hdd.img" >"$T/check.out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || { cat "$T/check.out" >&2; fail "check after the power cut: exit $rc"; }
	grep -q 'ok$' "$T/check.out" || { cat "$T/check.out" >&2; fail "check: no verdict"; }
	if [ "$restart" = crash ]; then
		serve "crash:$T/ssd.img" "crash:$T/hdd.img" --seed "$seed"
	else
		serve "$T/ssd.img" "$T/hdd.img"
	fi
	check_served "$policy"
	set +e
	"$TC_CRASH_CLIENT" verify "$(uri vol)" "$T/write.log" >"$T/verify.out" 2>&1
	rc=$?
	set -e
	cat "$T/verify.out" >&2
	[ "$rc" -eq 0 ] || fail "verify after power cut ($policy, seed $seed): exit $rc;" \
		"replay: TC_CRASH_ROUNDS=$policy,$csize,$seed,$secs,$restart" \
		"TC_CRASH_CLIENT_OPTS='${TC_CRASH_CLIENT_OPTS:-}' meson test test-crash-power"
	check_result "$T/verify.out"
	stop_server
}

trap 'exit 129' HUP
trap 'exit 141' PIPE
start=$(date +%s)
n=0
for r in ${TC_CRASH_ROUNDS:-wb,128M,21,3,crash wt,128M,22,3,crash wb,16M,23,3,plain \
		wb,128M,24,3,plain wt,16M,25,3,crash}; do
	# shellcheck disable=SC2046
	round $(echo "$r" | tr , ' ')
	n=$((n + 1))
done
log "$n rounds in $(($(date +%s) - start)) s"
