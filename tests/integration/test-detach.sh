#!/bin/sh
# test-detach.sh - invariant 3 (docs/architecture.md): dirty data is accounted exactly, detach
# drains it to zero before it reports success, a clean shutdown keeps it.
#  1. live detach: fio writes a write-back volume (flush rate low: the data is still
#     dirty), `tiercache detach` drains it and the volume goes on served uncached; then
#     the backing ALONE (no cache device) is served and fio verifies every block;
#  2. a clean shutdown (SIGTERM) with dirty data keeps it: `check` counts it, a restart
#     serves it, and an offline detach (`--device`, no server) drains it; the backing
#     alone then holds every byte;
#  3. --discard-dirty: the dirty bytes are reported as discarded and the backing keeps
#     its older data for those blocks;
#  4. on a terminal, detach shows its progress (a drain to an emulated HDD).
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

# fresh: a write-back volume db on a new cache, flush rate low.
fresh() {
	rm -f hdd.img ssd.img
	make_volume db hdd.img ssd.img --write-policy wb --flush-rate low
	tc attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
}

FIO="--offset=0 --size=48m --rw=randwrite --bssplit=4k/30:64k/70 --iodepth=16
	--verify=crc32c --verify_fatal=1 --randseed=7"

# --- 1. live detach, then the backing alone ----------------------------------------------
log "live detach"
fresh
serve ssd.img hdd.img
keepalive_start db
# shellcheck disable=SC2086
fio_nbd db write1 $FIO --do_verify=0
qio "$(uri db)" 'write -P 0xa1 600M 256k'
# Nothing written back yet: every byte fio and qemu-io wrote is dirty (fio's random
# map writes each block of its 48 MiB once).
dirty=$(status_get db dirty_bytes)
log "dirty before detach: $dirty"
[ "$dirty" -eq $((48 * 1024 * 1024 + 256 * 1024)) ] ||
	fail "dirty bytes before detach: $dirty, expected 48 MiB + 256 KiB"
ctl detach db --json >detach.json || fail "detach: exit $?"
keepalive_stop
[ "$(json_get detach.json state)" = uncached ] || fail "detach printed $(cat detach.json)"
[ "$(json_get detach.json dirty_bytes_discarded)" -eq 0 ] || fail "detach discarded data"
[ "$(status_get db state)" = uncached ] || fail "status after detach: $(status_get db state)"
[ "$(status_get db cache)" = None ] || fail "status after detach: cache $(status_get db cache)"
[ "$(status_get db dirty_bytes)" -eq 0 ] || fail "status after detach: dirty bytes"
# Uncached: stats says so (no engine counters), flush has nothing to do; both succeed.
ctl stats db --json >stats.json || fail "stats of the uncached volume: exit $?"
[ "$(json_get stats.json state)" = uncached ] || fail "stats uncached: $(cat stats.json)"
grep -q 'served uncached, straight to its backing' stats.json || fail "stats uncached: no note"
out=$(ctl flush db) || fail "flush of the uncached volume: exit $?"
echo "$out" | grep -q '^volume "db": served uncached, without a cache: nothing to flush' ||
	fail "flush uncached: $out"
[ "$(ctl flush db --json | json_get - dirty_bytes)" -eq 0 ] || fail "flush uncached --json"
# Served uncached, the data is all there.
qio "$(uri db)" 'read -P 0xa1 600M 256k'
stop_server
tc check --json ssd.img hdd.img >check.json || fail "check after detach: exit $?"
[ "$(json_get check.json devices 0 volumes)" = "[]" ] ||
	fail "the cache still lists volumes: $(json_get check.json devices 0 volumes)"
case $(json_get check.json devices 1 cache_uuid) in
"" | None) ;;
*) fail "the backing still names cache $(json_get check.json devices 1 cache_uuid)" ;;
esac
# The backing alone: no cache device given at all.
serve hdd.img
[ "$(status_get db state)" = uncached ] || fail "backing alone: $(status_get db state)"
# shellcheck disable=SC2086
fio_nbd db verify1 $FIO --verify_only
grep -q 'READ: bw=' verify1.log || fail "the verify pass read nothing"
qio "$(uri db)" 'read -P 0xa1 600M 256k'
stop_server

# --- 2. clean shutdown keeps dirty data; offline detach ----------------------------------------
log "clean shutdown with dirty data, then offline detach"
fresh
serve ssd.img hdd.img
keepalive_start db
# shellcheck disable=SC2086
fio_nbd db write2 $FIO --do_verify=0 --randseed=8
qio "$(uri db)" 'write -P 0xb2 700M 320k' 'write -P 0xb3 701M 4k'
before=$(status_get db dirty_bytes)
[ "$before" -eq $((48 * 1024 * 1024 + 324 * 1024)) ] ||
	fail "dirty bytes before the stop: $before, expected 48 MiB + 324 KiB"
# The stop at once: the cleaner may run during the shutdown (1 s after the last I/O).
keepalive_stop
stop_server
tc check --json ssd.img >check.json || fail "check: exit $?"
kept=$(json_get check.json devices 0 volumes name=db dirty_bytes)
[ "$(json_get check.json devices 0 clean_shutdown)" = True ] || fail "not a clean shutdown"
log "dirty: $before before the stop, $kept kept"
[ "$kept" -ge $((324 * 1024)) ] || fail "the clean shutdown kept only $kept dirty bytes"
[ "$kept" -le "$before" ] || fail "more dirty bytes after the stop ($kept) than before ($before)"
serve ssd.img hdd.img
keepalive_start db
[ "$(status_get db dirty_bytes)" -eq "$kept" ] ||
	fail "after restart: $(status_get db dirty_bytes) dirty bytes, check said $kept"
qio "$(uri db)" 'read -P 0xb2 700M 320k' 'read -P 0xb3 701M 4k'
keepalive_stop
stop_server
kept=$(tc check --json ssd.img | json_get - devices 0 volumes name=db dirty_bytes)
[ "$kept" -gt 0 ] || fail "no dirty data left for the offline detach"
# Offline: no server answers on $CTL; the devices are given.
tc detach db --device ssd.img --device hdd.img --control "$CTL" --json >detach.json ||
	fail "offline detach: exit $?"
[ "$(json_get detach.json state)" = uncached ] || fail "offline detach printed $(cat detach.json)"
[ "$(json_get detach.json dirty_bytes_discarded)" -eq 0 ] || fail "offline detach discarded data"
tc check --json ssd.img hdd.img >check.json || fail "check after offline detach: exit $?"
[ "$(json_get check.json devices 0 lines_dirty)" -eq 0 ] || fail "dirty lines left in the cache"
case $(json_get check.json devices 1 cache_uuid) in
"" | None) ;;
*) fail "the backing still names cache $(json_get check.json devices 1 cache_uuid)" ;;
esac
serve hdd.img
qio "$(uri db)" 'read -P 0xb2 700M 320k' 'read -P 0xb3 701M 4k'
# shellcheck disable=SC2086
fio_nbd db verify2 $FIO --verify_only --randseed=8
stop_server

# --- 3. detach --discard-dirty ------------------------------------------------------------------
log "detach --discard-dirty"
fresh
serve ssd.img hdd.img
# Old data, written back (flush), then newer data left dirty.
qio "$(uri db)" 'write -P 0xc1 800M 1M'
ctl flush db >/dev/null
[ "$(status_get db dirty_bytes)" -eq 0 ] || fail "dirty data after flush"
keepalive_start db
qio "$(uri db)" 'write -P 0xc2 800M 256k' 'write -P 0xc3 900M 64k'
dirty=$(status_get db dirty_bytes)
[ "$dirty" -eq $((320 * 1024)) ] || fail "dirty bytes $dirty, expected exactly 320 KiB"
ctl detach db --discard-dirty --json >detach.json || fail "detach --discard-dirty: exit $?"
[ "$(json_get detach.json dirty_bytes_discarded)" -eq "$dirty" ] ||
	fail "detach --discard-dirty printed $(cat detach.json), dirty was $dirty"
[ "$(json_get detach.json state)" = uncached ] || fail "detach printed $(cat detach.json)"
keepalive_stop
ctl detach db >detach.out 2>&1 && fail "a second detach succeeded: $(cat detach.out)"
# The backing's older data for those blocks (the discarded writes never reached it).
qio "$(uri db)" 'read -P 0xc1 800M 1M' 'read -P 0 900M 64k'
stop_server

# --- 4. progress: detach on a terminal, the backing an emulated HDD (a slow drain) -------------
if command -v script >/dev/null 2>&1; then
	log "detach progress on a terminal"
	fresh
	serve ssd.img "emu:hdd:$T/hdd.img"
	keepalive_start db
	# 512 random 4 KiB writes over 64 MiB: as many seeks for the drain.
	fio_nbd db write4 --rw=randwrite --bs=4k --size=64m --io_size=2m --iodepth=16
	[ "$(status_get db dirty_bytes)" -eq $((2 * 1024 * 1024)) ] ||
		fail "dirty bytes $(status_get db dirty_bytes), expected 2 MiB"
	keepalive_stop
	script -qec "'$TIERCACHE' detach db --control '$CTL'" /dev/null >progress.out 2>&1 ||
		fail "detach on a terminal: exit $?: $(cat progress.out)"
	tr '\r' '\n' <progress.out >progress.txt
	grep -Eq '^draining volume "db": +[0-9]+%  .* of 2\.0 MiB dirty left' progress.txt ||
		fail "no progress line: $(cat progress.txt)"
	grep -q 'volume "db": detached from its cache' progress.txt ||
		fail "no result line: $(cat progress.txt)"
	[ "$(status_get db state)" = uncached ] || fail "state after detach: $(status_get db state)"
	stop_server
else
	log "SKIP the progress check: script(1) not installed (package util-linux)"
fi
log "ok"
