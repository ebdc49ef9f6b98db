#!/bin/sh
# test-crash-power.sh - invariant 2 (docs/architecture.md) across power loss: the server
# runs on crash: devices (writes stay in a volatile cache until flushed) while
# tc-crash-client writes to the volume (random 4-64 KiB writes, some FUA, some
# write-zeroes, queue depth 16 over 4 connections, a FLUSH every 64 writes); `tiercache
# debug power-cut` then applies a random (seeded) subset of every device's unflushed 4 KiB
# units to its file and kills the server.  `tiercache check` must find both devices sound,
# the server must start again on them, and every unit must hold its value as of the last
# completed flush (or FUA write) or a value written since.  Rounds differ in seed, write
# policy, cache size (16M: smaller than the region, so the cleaner works under load) and
# how the devices are served again (crash: or plain paths).  The server is started with
# --testing: only such a server answers `debug power-cut`.
#
# To explore more: TC_CRASH_ROUNDS="POLICY,CACHE_SIZE,SEED,SECONDS,crash|plain ..."
# replaces the rounds, TC_CRASH_CLIENT_OPTS adds options of `tc-crash-client write`
# (e.g. "--fua-pct 30 --flush-every 500").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crash_lib.sh"

# round POLICY CACHE_SIZE SEED SECONDS RESTART(crash|plain)
round() {
	policy=$1 csize=$2 seed=$3 secs=$4 restart=$5
	log "round: $policy, cache $csize, seed $seed, power cut after $secs s of writes," \
		"served again on $restart devices"
	rm -f "$T/hdd.img" "$T/ssd.img" "$T/write.log"
	tc create backing "$T/hdd.img" --name vol --size 1G --write-policy "$policy" >/dev/null
	tc create cache "$T/ssd.img" --unprotected-writeback --size "$csize" --line-size 64K >/dev/null
	tc attach --cache "$T/ssd.img" --backing "$T/hdd.img" \
		--device "$T/ssd.img" --device "$T/hdd.img" >/dev/null
	serve --testing "crash:$T/ssd.img" "crash:$T/hdd.img" --seed "$seed"
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
