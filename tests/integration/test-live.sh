#!/bin/sh
# test-live.sh - changes made while a volume serves I/O, without data loss
# (docs/architecture.md, invariants 1, 3 and 6): fio writes and verifies a write-back volume in a loop while
# `tiercache set` switches the write policy (wb -> wt drains the dirty data, wt -> wb),
# read caching off and on, the flush rate, the admission policy and the sequential
# cutoff, and `tiercache flush` writes the dirty data back; each change shows in
# `status --json`, every fio pass verifies.  Afterwards a flush leaves exactly 0 dirty
# bytes, and a restart shows the last settings.  Then a live attach: a backing served
# uncached (never attached) gets data, is attached to the cache while fio verifies it,
# turns "cached" and keeps its data; the two volumes then share the cache, both under
# load, and both read back after another restart.
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

tc create cache ssd.img --unprotected-writeback --size 128M >/dev/null
tc create backing hdd.img --name db --size 512M >/dev/null
tc create backing hdd2.img --name db2 --size 512M --write-policy wb >/dev/null
tc attach --cache ssd.img --backing hdd.img --write-policy wb --device hdd.img >/dev/null

# fio_loop VOLUME TAG OFFSET: fio passes (random 4 KiB / 64 KiB writes and reads over
# 16 MiB from OFFSET, each verified) until $T/stop-TAG exists; exits non-zero at the
# first failing pass.  The pass count goes to $T/passes-TAG.
fio_loop() {
	_fio=
	trap '[ -z "$_fio" ] || kill -TERM "$_fio" 2>/dev/null; exit 143' TERM
	_i=0
	while [ ! -e "$T/stop-$2" ]; do
		_i=$((_i + 1))
		fio --name=v --ioengine=nbd --uri="$(uri "$1")" --verify_state_save=0 \
			--offset="$3" --size=16m --rw=randrw --rwmixread=30 \
			--bssplit=4k/60:64k/40 --iodepth=16 --verify=crc32c --verify_fatal=1 \
			--do_verify=1 --randseed="$_i" >"$T/fio-$2.log" 2>&1 &
		_fio=$!
		wait "$_fio" || { echo "pass $_i failed" >>"$T/fio-$2.log"; exit 1; }
		_fio=
		echo "$_i" >"$T/passes-$2"
	done
	exit 0
}

# start_loop VOLUME TAG OFFSET: fio_loop in the background; sets LOOP.
start_loop() {
	rm -f "$T/stop-$2" "$T/passes-$2"
	bg fio_loop "$@"
	LOOP=$BG
}

# passes TAG: completed passes of a loop.
passes() { cat "$T/passes-$1" 2>/dev/null || echo 0; }

# wait_passes TAG N: until N more passes than now completed (the loop must live).
wait_passes() {
	_want=$(($(passes "$1") + $2))
	for _ in $(seq 1 600); do
		[ "$(passes "$1")" -ge "$_want" ] && return 0
		kill -0 "$LOOP" 2>/dev/null || break
		sleep 0.1
	done
	cat "$T/fio-$1.log" >&2
	fail "fio loop $1: no pass completed (passes $(passes "$1"))"
}

# stop_loop TAG PID: end the loop after its pass; it must have succeeded.
stop_loop() {
	touch "$T/stop-$1"
	bg_wait "$2" || { cat "$T/fio-$1.log" >&2; fail "fio verify loop on $1 failed"; }
	log "fio loop $1: $(passes "$1") passes verified"
}

# setting KEY: the volume's setting in `status --json`.
setting() { status_get db settings "$1"; }

serve ssd.img hdd.img hdd2.img
[ "$(status_get db state)" = cached ] || fail "db not cached"
[ "$(status_get db2 state)" = uncached ] || fail "db2 (never attached) not served uncached"
[ "$(status_get db settings write_policy)" = wb ] || fail "db not in write-back"

# --- settings changed under load ---------------------------------------------------------
start_loop db db 0
wait_passes db 1

log "set --write-policy wt (drains)"
ctl set db --write-policy wt --json >set.json || fail "set --write-policy wt: exit $?"
[ "$(json_get set.json write_policy)" = wt ] || fail "set wt printed $(cat set.json)"
[ "$(setting write_policy)" = wt ] || fail "status: write policy $(setting write_policy)"
# In write-through no write leaves dirty data, so 0 holds under load.
[ "$(status_get db dirty_bytes)" -eq 0 ] ||
	fail "write-through under load: $(status_get db dirty_bytes) dirty bytes"
wait_passes db 1

log "set --write-policy wb"
ctl set db --write-policy wb >/dev/null || fail "set --write-policy wb: exit $?"
[ "$(setting write_policy)" = wb ] || fail "status: write policy $(setting write_policy)"
wait_passes db 1

log "set --read-cache off, then on"
ctl set db --read-cache off >/dev/null || fail "set --read-cache off: exit $?"
[ "$(setting read_cache)" = False ] || fail "status: read_cache $(setting read_cache)"
wait_passes db 1
ctl set db --read-cache on >/dev/null || fail "set --read-cache on: exit $?"
[ "$(setting read_cache)" = True ] || fail "status: read_cache $(setting read_cache)"

log "set --flush-rate high, --admission nhit:2, --seq-cutoff 1M"
ctl set db --flush-rate high >/dev/null || fail "set --flush-rate high: exit $?"
[ "$(setting flush_rate)" = high ] || fail "status: flush rate $(setting flush_rate)"
ctl set db --admission nhit:2 >/dev/null || fail "set --admission nhit:2: exit $?"
[ "$(setting admission)" = nhit ] && [ "$(setting nhit)" -eq 2 ] ||
	fail "status: admission $(setting admission) nhit $(setting nhit)"
ctl set db --seq-cutoff 1M >/dev/null || fail "set --seq-cutoff 1M: exit $?"
[ "$(setting seq_cutoff)" -eq 1048576 ] || fail "status: seq cutoff $(setting seq_cutoff)"
wait_passes db 1

log "flush under load"
ctl flush db --json >flush.json || fail "flush under load: exit $?"
json_get flush.json dirty_bytes_before >/dev/null
wait_passes db 1
stop_loop db "$LOOP"

# --- flush with no load: exactly 0 dirty bytes, at once ---------------------------------
ctl flush db >/dev/null
ctl set db --flush-rate low >/dev/null
[ "$(status_get db dirty_bytes)" -eq 0 ] || fail "dirty data after flush"
keepalive_start db
qemu-io -f raw "$(uri db)" -c 'write -P 0x5c 200M 192k' -c 'write -P 0x5d 300M 4k' >/dev/null ||
	fail "qemu-io write: exit $?"
d=$(status_get db dirty_bytes)
[ "$d" -eq $((196 * 1024)) ] || fail "flush rate low: $d dirty bytes after writing 196 KiB"
ctl flush db --json >flush.json || fail "flush: exit $?"
[ "$(json_get flush.json dirty_bytes)" -eq 0 ] || fail "flush printed $(cat flush.json)"
[ "$(json_get flush.json dirty_bytes_before)" -eq $((196 * 1024)) ] ||
	fail "flush printed $(cat flush.json)"
[ "$(status_get db dirty_bytes)" -eq 0 ] || fail "status right after flush: $(status_get db dirty_bytes) dirty"
keepalive_stop
[ "$(status_get db settings write_policy)" = wb ] || fail "flush changed the write policy"

# --- the settings survive a restart --------------------------------------------------------
ctl set db --flush-rate high >/dev/null
stop_server
tc check --json hdd.img >check.json || fail "check hdd.img: exit $?"
[ "$(json_get check.json devices 0 settings write_policy)" = wb ] || fail "backing: $(cat check.json)"
[ "$(json_get check.json devices 0 settings flush_rate)" = high ] || fail "backing: $(cat check.json)"
# check shows every setting, as status does.
[ "$(json_get check.json devices 0 settings admission)" = nhit ] || fail "backing: $(cat check.json)"
[ "$(json_get check.json devices 0 settings nhit)" -eq 2 ] || fail "backing: $(cat check.json)"
[ "$(json_get check.json devices 0 settings seq_cutoff)" -eq 1048576 ] ||
	fail "backing: $(cat check.json)"
serve ssd.img hdd.img hdd2.img
[ "$(setting write_policy)" = wb ] || fail "after restart: write policy $(setting write_policy)"
[ "$(setting read_cache)" = True ] || fail "after restart: read cache $(setting read_cache)"
[ "$(setting flush_rate)" = high ] || fail "after restart: flush rate $(setting flush_rate)"
[ "$(setting admission)" = nhit ] || fail "after restart: admission $(setting admission)"
[ "$(setting nhit)" -eq 2 ] || fail "after restart: nhit $(setting nhit)"
[ "$(setting seq_cutoff)" -eq 1048576 ] || fail "after restart: seq cutoff $(setting seq_cutoff)"
qemu-io -f raw "$(uri db)" -c 'read -P 0x5c 200M 192k' -c 'read -P 0x5d 300M 4k' >qio.log 2>&1 ||
	fail "after restart: $(cat qio.log)"
grep -q 'Pattern verification failed' qio.log && fail "after restart: $(cat qio.log)"

# --- live attach of a volume served uncached ---------------------------------------------------
[ "$(status_get db2 state)" = uncached ] || fail "db2 not uncached after restart"
qemu-io -f raw "$(uri db2)" -c 'write -P 0x3c 0 1M' -c 'write -P 0x3d 100M 64k' >/dev/null ||
	fail "qemu-io write db2: exit $?"
[ "$(ctl stats db2 --json | json_get - state)" = uncached ] || fail "stats of uncached db2: not uncached"
start_loop db2 db2 64m
wait_passes db2 1
log "attach db2 while fio runs on it"
tc attach --cache ssd.img --backing hdd2.img --control "$CTL" --json >attach.json ||
	fail "live attach: exit $?"
[ "$(json_get attach.json state)" = cached ] || fail "attach printed $(cat attach.json)"
[ "$(status_get db2 state)" = cached ] || fail "status: db2 is $(status_get db2 state)"
[ "$(status_get db2 cache)" = "$(status_get db cache)" ] || fail "db2 on another cache"
[ "$(status_get db2 settings write_policy)" = wb ] || fail "db2 policy: not the backing's wb"
wait_passes db2 2
qemu-io -f raw "$(uri db2)" -c 'read -P 0x3c 0 1M' -c 'read -P 0x3d 100M 64k' \
	-c 'read -P 0x3c 0 1M' >qio.log 2>&1 || fail "db2 after attach: $(cat qio.log)"
grep -q 'Pattern verification failed' qio.log && fail "db2 after attach: $(cat qio.log)"

# --- two volumes on one cache, both under load ---------------------------------------------------
LOOP2=$LOOP
start_loop db db 0
wait_passes db 2
stop_loop db "$LOOP"
LOOP=$LOOP2
wait_passes db2 1
stop_loop db2 "$LOOP2"
[ "$(stats_get db2 promotions)" -gt 0 ] || fail "db2: no promotions once cached"
[ "$(stats_get db2 errors)" -eq 0 ] || fail "db2: errors"
[ "$(stats_get db errors)" -eq 0 ] || fail "db: errors"
ncache=$(ctl status --json | json_get - caches | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$ncache" -eq 1 ] || fail "$ncache caches in status, expected 1"

# Both read back after a restart: the last passes' blocks, verified by fio.
stop_server
serve ssd.img hdd.img hdd2.img
[ "$(status_get db2 state)" = cached ] || fail "db2 not cached after restart"
for v in db db2; do
	off=0
	[ "$v" = db ] || off=64m
	i=$(passes "$v")
	fio_nbd "$v" "verify-$v" --offset="$off" --size=16m --rw=randrw --rwmixread=30 \
		--bssplit=4k/60:64k/40 --iodepth=16 --verify=crc32c --verify_fatal=1 \
		--randseed="$i" --verify_only
done
qemu-io -f raw "$(uri db2)" -c 'read -P 0x3d 100M 64k' >qio.log 2>&1 || fail "db2: $(cat qio.log)"
stop_server
log "ok"
