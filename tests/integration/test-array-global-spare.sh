#!/bin/sh
# test-array-global-spare.sh - global hot spares (docs/raid.md): a server with a
# RAID 5 and a RAID 1, two global spares given to `serve --spare` (one too small for
# either array); a member of the RAID 5 failed while fio writes and verifies: the
# spare that fits takes its slot and rebuilds, the small one stays in the pool; a
# member of the RAID 1 failed next: no spare fits, the array stays degraded and says
# why, until `array add-spare --global` brings one, which it takes at once; `array
# remove --global`; each bad input refused with its message and nothing changed; a
# restart with the spares given again serves the spare an array took as its member
# (also when the array is named by its old members, array:...); a spare added while no
# array needs one waits in the pool.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

for f in a0 a1 a2 b0 b1 s0 s1 s2; do
	truncate -s 64M "$f"
done
truncate -s 16M small
tc create array r5 --level 5 --chunk 64K a0 a1 a2 >/dev/null
tc create array r1 --level 1 b0 b1 >/dev/null
tc create backing array:a0,a1,a2 --name v5 >/dev/null
tc create backing array:b0,b1 --name v1 >/dev/null
tc create backing used.img --name other --size 64M >/dev/null

log "bad input at start: a spare holding a superblock stops the server"
expect_fail 1 "used.img: holds a tiercache backing" \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --spare used.img a0 a1 a2
[ ! -e "$CTL" ] || fail "a refused start left its control socket"
printf '[serve]\nspare =\n' >bad.conf
expect_fail 1 'config .*bad.conf: line 2: key "spare" has no value' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --config bad.conf a0

serve --spare small --spare s0 a0 a1 a2 b0 b1
pool() { ctl array status --json | json_get - global_spares; }
[ "$(ctl array status --json | json_get - global_spares 0 device)" = "$T/small" ] &&
	[ "$(ctl array status --json | json_get - global_spares 1 device)" = "$T/s0" ] ||
	fail "pool at start: $(pool)"
ctl array status | grep -q "^global spares: $T/small (16.0 MiB), $T/s0 (64.0 MiB)$" ||
	fail "text status: $(ctl array status)"

log "bad input live: each refused with its message, nothing changed"
before=$(pool)
expect_fail 1 "device $T/s0: already a global spare of this server" \
	ctl array add-spare --global s0
expect_fail 1 "device $T/a1: already in array \"r5\" of this server" \
	ctl array add-spare --global a1
expect_fail 1 "device $T/used.img: holds a tiercache backing; give --force" \
	ctl array add-spare --global used.img
expect_fail 1 "device $T/s0: already a global spare of this server" ctl array add-spare r1 s0
expect_fail 1 "device $T/nope: not a global spare of this server" \
	ctl array remove --global nope
expect_fail 2 "array add-spare --global: expected DEVICE \(and no array NAME\)" \
	ctl array add-spare --global r5 s1
expect_fail 2 "--global: for .array add-spare. and .array remove. only" \
	ctl array check --global r5
[ "$(pool)" = "$before" ] || fail "a refused command changed the pool: $(pool)"

log "a RAID 5 member fails under fio: the global spare that fits takes its slot"
COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=51 --size=40m"
W="--rw=randwrite --bssplit=4k/40:64k/40:256k/20 --iodepth=16"
# shellcheck disable=SC2086
fio_nbd v5 w1 $W $COMMON --do_verify=1
ctl array rebuild-rate r5 --min 8 --max 8 >/dev/null   # slow enough to be seen
# shellcheck disable=SC2086
bg fio --name=v --ioengine=nbd --uri="$(uri v5)" --verify_state_save=0 $W $COMMON \
	--verify_only --loops=2
VER=$BG
ctl array fail r5 a1 >/dev/null
took() {
	[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=1 device)" = "$T/s0" ]
}
wait_until 10 took
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=1 state)" = rebuilding ] ||
	fail "s0 not rebuilding: $(ctl array status r5)"
[ "$(ctl array status --json | json_get - global_spares 0 device)" = "$T/small" ] &&
	[ "$(ctl array status --json | json_get - global_spares 1 2>/dev/null)" = "" ] ||
	fail "pool after the takeover: $(pool)"
grep -q "array r5: global spare $T/s0 takes the place of faulty member 1 ($T/a1)" "$LOG" ||
	fail "no log line for the takeover: $(tail -n 5 "$LOG")"
bg_wait "$VER" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify during the rebuild"; }
ctl array rebuild-rate r5 --max unlimited --priority 100 >/dev/null
active() {
	[ "$(ctl array status --json "$1" | json_get - arrays 0 state)" = active ] &&
	[ "$(ctl array status --json "$1" | json_get - arrays 0 sync)" = idle ]
}
wait_until 40 active r5
# shellcheck disable=SC2086
fio_nbd v5 v1 $W $COMMON --verify_only

log "a RAID 1 member fails: no global spare fits, the array says so"
ctl array fail r1 b1 >/dev/null
wait_until 10 grep -q "array r1: member 1 faulty, and no global spare fits (1 in the pool; it needs" "$LOG"
[ "$(ctl array status --json r1 | json_get - arrays 0 state)" = degraded ] ||
	fail "r1 not degraded: $(ctl array status r1)"
sleep 1.5   # the once-a-second pass: the small spare still does not fit
[ "$(ctl array status --json | json_get - global_spares 0 device)" = "$T/small" ] ||
	fail "the small spare left the pool: $(pool)"
[ "$(grep -c "array r1: member 1 faulty, and no global spare fits" "$LOG")" = 1 ] ||
	fail "the warning repeats: $(grep -c "no global spare fits" "$LOG")"

log "add-spare --global: the degraded RAID 1 takes it at once"
ctl array add-spare --global s1 >add.txt
grep -q "^global spare $T/s1 added, and taken at once by array r1 (a member was faulty): rebuilding$" \
	add.txt || fail "add-spare --global: $(cat add.txt)"
wait_until 40 active r1
[ "$(ctl array status --json r1 | json_get - arrays 0 members slot=1 device)" = "$T/s1" ] ||
	fail "s1 not in r1's slot 1: $(ctl array status r1)"
fio_nbd v1 w2 --rw=randwrite --bs=64k --iodepth=8 --size=32m --verify=crc32c \
	--verify_fatal=1 --do_verify=1

log "remove --global"
ctl array remove --global small >rm.txt
grep -q "^global spare $T/small removed; 0 left in the pool$" rm.txt || fail "remove: $(cat rm.txt)"
[ "$(pool)" = "[]" ] || fail "pool not empty: $(pool)"
ctl array status | grep -q "^global spares: none$" || fail "text status: $(ctl array status)"
stop_server

log "restart with the spares given again: s0 and s1 are members now"
# r5 named by its old members (as a configuration's `device = array:...` line would):
# s0, given as a spare, joins that spec.
serve --spare small --spare s0 --spare s1 array:a0,a1,a2 b0 b1
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=1 device)" = "$T/s0" ] ||
	fail "r5 without s0 after the restart: $(ctl array status r5)"
[ "$(ctl array status --json r1 | json_get - arrays 0 members slot=1 device)" = "$T/s1" ] ||
	fail "r1 without s1 after the restart: $(ctl array status r1)"
[ "$(ctl array status --json | json_get - global_spares 0 device)" = "$T/small" ] ||
	fail "pool after the restart: $(pool)"
# shellcheck disable=SC2086
fio_nbd v5 v2 $W $COMMON --verify_only

log "add-spare --global with no array degraded: it waits in the pool"
ctl array add-spare --global s2 >add2.txt
grep -q "^global spare $T/s2 added; 2 in the pool (not kept across a restart" add2.txt ||
	fail "add-spare --global: $(cat add2.txt)"
[ "$(ctl array status --json | json_get - global_spares 1 device)" = "$T/s2" ] ||
	fail "s2 not in the pool: $(pool)"
stop_server
log "ok"
