#!/bin/sh
# soak.sh MINUTES - hours of real clients through the real server while things fail
# (docs/testing.md, "Soak").  Not part of `make check`: run it with `make soak
# MINUTES=N`, or with the environment of tests/integration/lib.sh set by hand.
#
# Layout: a RAID 1 pool "p1" (c0, c1) is the cache of three volumes: "vwb" (write-back)
# on a RAID 5 array "r5" (d0, d1, d2), "viwb" (instant write-back) and "vwt"
# (write-through) on files.  Each round, fio writes each volume (random 4 KiB and 64 KiB
# writes, crc32c verify of every block, an NBD FLUSH at the end) while a driver does
# random management operations: flush rate, partition reserve and cap, the write-back
# volume to write-through (a drain) and back, failing an array member or a pool member
# and adding a new spare (rebuild; the pool's write-back volumes drop to write-through
# while it is degraded).  Every third round the server is killed with SIGKILL (during
# rebuilds too) and served again from the devices, and every block fio wrote in the last
# round of each volume is verified again (--verify_only).  At the end each volume is
# flushed, its dirty bytes must be 0, and everything is verified once more.
# Prints: minutes, rounds, operations done (and refused), failures injected, bytes
# verified.  SOAK_SEED picks the random choices (default: the time).
. "$TC_SOURCE_ROOT/tests/integration/lib.sh"
need fio
MINUTES=${1:-10}
R=${SOAK_SEED:-$(date +%s)}
log "soak: $MINUTES minutes, seed $R, folder $T"
cd "$T"

# rnd N: a pseudo-random number 0..N-1 into RN (a linear congruential generator: the
# runs of one seed repeat their choices).
rnd() {
	R=$(((R * 1103515245 + 12345) % 2147483648))
	RN=$((R / 65536 % $1))
}

for f in d0 d1 d2 c0 c1; do truncate -s 96M "$f"; done
truncate -s 256M b1 b2
tc create array r5 --level 5 --chunk 64K d0 d1 d2 >/dev/null
tc create array p1 --level 1 c0 c1 >/dev/null
tc create backing array:d0,d1,d2 --name vwb --write-policy wb >/dev/null
tc create cache array:c0,c1 --line-size 64K >/dev/null
tc create backing b1 --name vwt --write-policy wt >/dev/null
tc create backing b2 --name viwb --write-policy instwb --stripe-size 256K >/dev/null
R5="d0 d1 d2" P1="c0 c1"     # the arrays' current members (and spares)
serve_all() { serve $P1 $R5 b1 b2; }
serve_all
for b in array:d0,d1,d2 b1 b2; do
	ctl attach --cache array:c0,c1 --backing "$b" >/dev/null
done
VOLS="vwb viwb vwt"

OPS=0 REFUSED=0 FAULTS=0 KILLS=0 VERIFIED=0 ROUND=0 SPARES=0
SIZE=$((40 * 1024 * 1024))   # bytes each volume's fio job writes per round
JOB="--offset=0 --size=40m --rw=randwrite --bssplit=4k/60:64k/40 --iodepth=16"
VER="--verify=crc32c --verify_fatal=1 --randrepeat=1"

# op COMMAND...: one management operation; a refusal is counted, not a failure (the
# data checks decide).
op() {
	OPS=$((OPS + 1))
	if ! "$@" >>"$T/ops.log" 2>&1; then
		REFUSED=$((REFUSED + 1))
		echo "refused: $*" >>"$T/ops.log"
	fi
}

array_state() { ctl array status --json "$1" | json_get - arrays 0 state; }

# fail_member ARRAY: fail a random member of ARRAY, when it is whole, and add a new
# spare, which the rebuild takes over.
fail_member() {
	[ "$(array_state "$1")" = active ] || return 0
	eval "members=\$$(echo "$1" | tr a-z A-Z)"
	set -- "$1" $members
	arr=$1
	shift
	rnd $#
	i=0
	for m in "$@"; do
		[ $i -eq "$RN" ] && victim=$m
		i=$((i + 1))
	done
	SPARES=$((SPARES + 1))
	spare=s$SPARES
	truncate -s 96M "$spare"
	op ctl array fail "$arr" "$T/$victim"
	FAULTS=$((FAULTS + 1))
	op ctl array add-spare "$arr" "$T/$spare"
	rest=$(for m in "$@"; do [ "$m" = "$victim" ] || echo "$m"; done | tr '\n' ' ')
	case $arr in
	r5) R5="$rest$spare" ;;
	p1) P1="$rest$spare" ;;
	esac
	rm -f "$victim"
}

drive_once() {
	rnd 6
	case $RN in
	0) rnd 3; set -- low medium high; eval "rate=\${$((RN + 1))}"
	   rnd 3; set -- $VOLS; eval "v=\${$((RN + 1))}"
	   op ctl set "$v" --flush-rate "$rate" ;;
	1) rnd 3; set -- $VOLS; eval "v=\${$((RN + 1))}"
	   rnd 30; op ctl set "$v" --reserve "$RN%" --cap "$((RN + 30))%" ;;
	2) op ctl set vwb --write-policy wt; op ctl set vwb --write-policy wb ;;
	3) fail_member r5 ;;
	4) fail_member p1 ;;
	5) rnd 3; set -- $VOLS; eval "v=\${$((RN + 1))}"; op ctl flush "$v" ;;
	esac
}

verify_all() {
	for v in $VOLS; do
		fio_nbd "$v" "verify-$ROUND-$v" $JOB $VER --randseed="$ROUND" --verify_only=1
		VERIFIED=$((VERIFIED + SIZE))
	done
}

END=$(($(date +%s) + MINUTES * 60))
while [ "$(date +%s)" -lt "$END" ]; do
	ROUND=$((ROUND + 1))
	pids=
	for v in $VOLS; do
		# shellcheck disable=SC2086
		bg fio_nbd "$v" "round-$ROUND-$v" $JOB $VER --randseed="$ROUND" --do_verify=1 \
			--end_fsync=1
		pids="$pids $BG"
	done
	while :; do
		running=0
		for p in $pids; do kill -0 "$p" 2>/dev/null && running=1; done
		[ $running -eq 1 ] || break
		drive_once
		sleep 1
	done
	for p in $pids; do
		bg_wait "$p" || fail "round $ROUND: a writer failed (logs round-$ROUND-*.log)"
		VERIFIED=$((VERIFIED + SIZE))
	done
	if [ $((ROUND % 3)) -eq 0 ]; then
		old=$SERVER_PID
		kill_server
		# A loaded machine may take longer than kill_server waits to end it.
		wait_until 120 sh -c "! kill -0 $old 2>/dev/null"
		KILLS=$((KILLS + 1))
		FAULTS=$((FAULTS + 1))
		serve_all
		for v in $VOLS; do
			[ "$(status_get "$v" state)" = cached ] ||
				fail "round $ROUND: volume $v not cached after the restart"
		done
		verify_all
	fi
	log "round $ROUND: ops $OPS (refused $REFUSED), faults $FAULTS, verified $((VERIFIED / 1048576)) MiB"
done

# The end: arrays whole, dirty data drained, every block of the last round verified.
arrays_whole() {
	[ "$(array_state r5)" = active ] && [ "$(array_state p1)" = active ]
}
wait_until 600 arrays_whole
for v in $VOLS; do
	ctl flush "$v" >/dev/null
	d=$(status_get "$v" dirty_bytes)
	[ "$d" -eq 0 ] || fail "volume $v: $d dirty bytes after its flush"
done
verify_all
stop_server
echo "soak: $MINUTES minutes, $ROUND rounds, $OPS operations ($REFUSED refused), $FAULTS failures injected ($KILLS server kills), $((VERIFIED / 1048576)) MiB verified, seed ${SOAK_SEED:-time}"
