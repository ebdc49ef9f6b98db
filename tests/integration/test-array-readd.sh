#!/bin/sh
# test-array-readd.sh - `tiercache array re-add` on a running server (docs/raid.md,
# "Re-add"): a served RAID 5 with the write-intent map (--consistency-policy bitmap)
# loses a member; fio writes while it is away; re-added, the member resyncs only the
# regions written since (the server's log says how much it skipped), and with another
# member failed afterwards fio verifies everything through it.  Then the same after a
# restart: the member left out at the assembly comes back the same way.  Every
# refusal with its message, nothing changed (a RAID 5 with the partial-parity log
# among them: its faulty member stays in its slot).
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

for f in d0 d1 d2 blank; do
	truncate -s 64M "$f"
done
tc create array r5 --level 5 --chunk 64K --consistency-policy bitmap d0 d1 d2 >/dev/null
tc create backing array:d0,d1,d2 --name v5 >/dev/null
serve --verbose d0 d1 d2  # --verbose: the resync's line in the log
COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=81"
W="--rw=randwrite --bs=64k --iodepth=8"
# shellcheck disable=SC2086
fio_nbd v5 w1 $W $COMMON --size=48m --do_verify=1

state_of() { ctl array status --json r5 | json_get - arrays 0 members "slot=$1" state; }
active() {
	[ "$(ctl array status --json r5 | json_get - arrays 0 state)" = active ] &&
	[ "$(ctl array status --json r5 | json_get - arrays 0 sync)" = idle ]
}

map_dirty() { ctl array status --json r5 | json_get - arrays 0 map_dirty; }
# Whole, the array clears the bits of regions idle for 5 s.
map_clear() { [ "$(map_dirty)" = 0 ]; }
wait_until 30 map_clear

log "member 1 fails; writes while it is away, in a few regions only"
ctl array fail r5 d1 >/dev/null
[ "$(state_of 1)" = faulty ] || fail "d1 not faulty: $(ctl array status r5)"
# shellcheck disable=SC2086
fio_nbd v5 w2 $W $COMMON --randseed=82 --offset=48m --size=4m --do_verify=1
sleep 6  # past the write-intent daemon's 5 s: a whole array would clear its bits
[ "$(map_dirty)" -gt 0 ] || fail "the write-intent map kept no bit while degraded"

log "bad input: each refused with its message, nothing changed"
shape() { ctl array status --json r5 | python3 -c '
import json, sys
a = json.load(sys.stdin)["arrays"][0]
print([(m["device"], m["state"]) for m in a["members"]], a["extra"])'; }
before=$(shape)
expect_fail 1 'array "nope": no such array' ctl array re-add nope d1
expect_fail 1 "device $T/d0: an active member of array \"r5\" \(slot 0\): nothing to re-add" \
	ctl array re-add r5 d0
expect_fail 1 "array r5: $T/blank holds no valid member superblock" ctl array re-add r5 blank
expect_fail 1 "file $T/d9: open: No such file" ctl array re-add r5 d9
expect_fail 2 'array re-add: expected NAME DEVICE' ctl array re-add r5
[ "$(shape)" = "$before" ] || fail "a refused re-add changed the array: $(shape)"

log "re-add d1: only the regions written since are resynced"
ctl array re-add r5 d1 >ra.txt
grep -q "^array r5: $T/d1 back in its slot: resyncing what it missed" ra.txt ||
	fail "re-add: $(cat ra.txt)"
wait_until 40 active
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=1 device)" = "$T/d1" ] ||
	fail "d1 not in slot 1: $(ctl array status r5)"
[ "$(state_of 1)" = active ] || fail "d1 not active: $(ctl array status r5)"
skipped=$(grep -F "array r5: member 1 ($T/d1) resynced; " "$LOG" |
	sed -n 's/.*resynced; \([0-9]*\) of its \([0-9]*\) bytes skipped.*/\1 \2/p')
[ -n "$skipped" ] || fail "no resync line in the log: $(grep 'r5' "$LOG" | tail -5)"
set -- $skipped
# 4 MiB written while away (2 MiB of each member, in 512 KiB regions): the rest
# skipped, at least three quarters of the member.
[ "$1" -ge $(($2 * 3 / 4)) ] || fail "resync skipped only $1 of $2 bytes"
log "the resync skipped $1 of the member's $2 bytes"

log "d0 fails: d1 now carries its share, and everything verifies"
ctl array fail r5 d0 >/dev/null
# shellcheck disable=SC2086
fio_nbd v5 v1 $W $COMMON --size=48m --verify_only
# shellcheck disable=SC2086
fio_nbd v5 v2 $W $COMMON --randseed=82 --offset=48m --size=4m --verify_only

log "after a restart: d0, left out at the assembly, comes back the same way"
# shellcheck disable=SC2086
fio_nbd v5 w3 $W $COMMON --randseed=83 --offset=52m --size=2m --do_verify=1
stop_server
serve d0 d1 d2 2>serve.err
grep -q "d0" serve.err || fail "d0 not named as left out: $(cat serve.err)"
[ "$(state_of 0)" = faulty ] || fail "d0 not faulty after the restart: $(ctl array status r5)"
[ "$(map_dirty)" -gt 0 ] || fail "the write-intent bits did not survive the clean stop"
ctl array re-add r5 d0 >/dev/null
wait_until 40 active
[ "$(state_of 0)" = active ] || fail "d0 not active: $(ctl array status r5)"
ctl array fail r5 d2 >/dev/null
# shellcheck disable=SC2086
fio_nbd v5 v3 $W $COMMON --size=48m --verify_only
# shellcheck disable=SC2086
fio_nbd v5 v4 $W $COMMON --randseed=83 --offset=52m --size=2m --verify_only
stop_server

log "a RAID 5 with the partial-parity log (the default) keeps no write-intent map:"
log "re-add refused, the faulty member left in its slot"
for f in p0 p1 p2; do
	truncate -s 64M "$f"
done
tc create array p5 --level 5 --chunk 64K p0 p1 p2 >/dev/null
tc create backing array:p0,p1,p2 --name vp >/dev/null
serve p0 p1 p2
ctl array fail p5 p1 >/dev/null
expect_fail 1 "array p5 keeps no write-intent map \\(consistency policy ppl\\)" \
	ctl array re-add p5 p1
[ "$(ctl array status --json p5 | json_get - arrays 0 members slot=1 device)" = "$T/p1" ] ||
	fail "the refused re-add took p1 out of its slot: $(ctl array status p5)"
[ "$(ctl array status --json p5 | json_get - arrays 0 members slot=1 state)" = faulty ] ||
	fail "p1 not faulty: $(ctl array status p5)"
stop_server
log "ok"
