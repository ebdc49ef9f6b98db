#!/bin/sh
# test-crash-kill.sh - invariant 2 (docs/architecture.md) across process death:
# tc-crash-client writes to a volume (random 4-64 KiB writes, some FUA, some write-zeroes,
# queue depth 16 over 4 connections, a FLUSH every 64 writes), the server is killed with
# SIGKILL in the middle of it, served again from the same devices (recovery), and the
# client checks that every 4 KiB unit holds its value as of the last completed flush (or
# FUA write) or a value written since.  Rounds: write-back, write-through, and write-back
# on a cache smaller than the region (dirty lines evicted and cleaned under load). A last
# control proves the check has teeth: a unit overwritten with garbage behind the client's
# back must be reported.
#
# To explore more: TC_CRASH_ROUNDS="POLICY,CACHE_SIZE,SEED,SECONDS ..." replaces the
# rounds, TC_CRASH_CLIENT_OPTS adds options of `tc-crash-client write`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crash_lib.sh"

# round POLICY CACHE_SIZE SEED SECONDS
round() {
	policy=$1 csize=$2 seed=$3 secs=$4
	log "round: $policy, cache $csize, seed $seed, SIGKILL after $secs s of writes"
	rm -f "$T/hdd.img" "$T/ssd.img" "$T/write.log"
	tc create backing "$T/hdd.img" --name vol --size 1G --write-policy "$policy" >/dev/null
	tc create cache "$T/ssd.img" --unprotected-writeback --size "$csize" --line-size 64K >/dev/null
	tc attach --cache "$T/ssd.img" --backing "$T/hdd.img" \
		--device "$T/ssd.img" --device "$T/hdd.img" >/dev/null
	serve "$T/ssd.img" "$T/hdd.img"
	"$TC_CRASH_CLIENT" write "$(uri vol)" "$T/write.log" --seed "$seed" --length 64M \
		${TC_CRASH_CLIENT_OPTS:-} >"$T/write.out" 2>&1 &
	CPID=$!
	wait_prefill
	sleep "$secs"
	kill -0 "$CPID" 2>/dev/null || fail "tc-crash-client ended early: $(cat "$T/write.out")"
	kill_server
	wait_client 30
	log "$(cat "$T/write.out")"
	# The killed server left its sockets behind: serve removes them and starts.
	[ -S "$SOCK" ] || fail "expected the killed server's NBD socket to be left behind"
	serve "$T/ssd.img" "$T/hdd.img"
	check_served "$policy"
	set +e
	"$TC_CRASH_CLIENT" verify "$(uri vol)" "$T/write.log" >"$T/verify.out" 2>&1
	rc=$?
	set -e
	cat "$T/verify.out" >&2
	[ "$rc" -eq 0 ] || fail "verify after SIGKILL ($policy, seed $seed): exit $rc;" \
		"replay: TC_CRASH_ROUNDS=$policy,$csize,$seed,$secs" \
		"TC_CRASH_CLIENT_OPTS='${TC_CRASH_CLIENT_OPTS:-}' meson test test-crash-kill"
	check_result "$T/verify.out"
}

# control: garbage in one unit of the region (written behind the client's back) is a
# violation, reported with its offset.
control() {
	if ! command -v qemu-io >/dev/null 2>&1; then
		log "control skipped: qemu-io not installed"
		return 0
	fi
	qemu-io -f raw -c 'write -P 0x5a 36864 4096' "$(uri vol)" >/dev/null
	set +e
	"$TC_CRASH_CLIENT" verify "$(uri vol)" "$T/write.log" >"$T/verify.out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { cat "$T/verify.out" >&2; fail "control: verify exit $rc, expected 1"; }
	grep -q '^VIOLATION at offset 36864 .*found garbage' "$T/verify.out" ||
		{ cat "$T/verify.out" >&2; fail "control: the garbage unit was not reported"; }
	log "control: garbage at offset 36864 reported"
}

trap 'exit 129' HUP
trap 'exit 141' PIPE
start=$(date +%s)
n=0
for r in ${TC_CRASH_ROUNDS:-wb,128M,11,4 wt,128M,12,4 wb,16M,13,4}; do
	# shellcheck disable=SC2046
	round $(echo "$r" | tr , ' ')
	n=$((n + 1))
	if [ "$n" -eq 1 ]; then
		control
	fi
	stop_server
done
log "$n rounds in $(($(date +%s) - start)) s"
