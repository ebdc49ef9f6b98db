#!/bin/sh
# test-array-spare.sh - the live array commands of a running server (docs/raid.md):
# a served RAID 5 of sparse files with a cache-less volume on it, `array add-spare`,
# `array fail` of a member (the spare takes its slot and rebuilds, seen in `array
# status`, while fio crc32c verify reads and writes through it), `array check` (no
# mismatches), `array remove` of the failed member, `array rebuild-rate`, and each bad
# input refused with its message and nothing changed; then a rebuild cut by kill -9,
# resumed from its checkpoint by the next server, fio verifying what was written
# before and during it.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

for f in d0 d1 d2 s0 s1; do
	truncate -s 64M "$f"
done
truncate -s 16M small.img
tc create backing used.img --name other --size 64M >/dev/null
tc create array r5 --level 5 --chunk 64K d0 d1 d2 >/dev/null
tc create backing array:d0,d1,d2 --name v5 >/dev/null
serve d0 d1 d2
COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=91 --size=48m"
W="--rw=randwrite --bssplit=4k/40:64k/40:256k/20 --iodepth=16"
# shellcheck disable=SC2086
fio_nbd v5 w1 $W $COMMON --do_verify=1

# What a refusal must leave as it was: members, extras, rates.
shape() {
	ctl array status --json r5 | python3 -c '
import json, sys
a = json.load(sys.stdin)["arrays"][0]
print([(m["device"], m["state"]) for m in a["members"]], a["extra"], a["rebuild"])'
}
before=$(shape)
unchanged() { [ "$(shape)" = "$before" ] || fail "a refused command changed the array: $(shape)"; }

log "bad input: each refused with its message, nothing changed"
expect_fail 1 'array "nope": no such array on this host' ctl array add-spare nope s0
expect_fail 1 "array r5: spare $T/small.img of 16777216 bytes is smaller than a member's" \
	ctl array add-spare r5 small.img
expect_fail 1 "device $T/used.img: holds a tiercache backing; give --force" \
	ctl array add-spare r5 used.img
expect_fail 1 "device $T/d1: already in array \"r5\" of this server" ctl array add-spare r5 d1
expect_fail 1 "file $T/d9: open: No such file" ctl array add-spare r5 d9
expect_fail 1 "array r5: no member or spare named d9" ctl array remove r5 d9
expect_fail 1 "array r5: $T/d0 .*not removed" ctl array remove r5 d0
expect_fail 1 'array "nope": no such array' ctl array remove nope d0
expect_fail 1 'array "nope": no such array' ctl array check nope
expect_fail 1 'array "r5": slot 7: not a slot number 0..2' ctl array replace r5 7 s1
expect_fail 2 '--priority: .*101' ctl array rebuild-rate r5 --priority 101
expect_fail 2 '--min: "fast" is not a rate in MB/s' ctl array rebuild-rate r5 --min fast
expect_fail 1 'array r5: rebuild floor 300.0 MB/s \(--min\) above the ceiling 200.0 MB/s' \
	ctl array rebuild-rate r5 --min 300
expect_fail 2 '--repair: for `array check` only' ctl array fail r5 d0 --repair
unchanged

log "add a spare; a slow rebuild rate to watch the rebuild"
ctl array rebuild-rate r5 --min 8 --max 8 >rate.txt
grep -q '^array r5: rebuild and check rate min 8.0 MB/s, max 8.0 MB/s, priority 0' rate.txt ||
	fail "rebuild-rate: $(cat rate.txt)"
ctl array add-spare r5 s0 >add.txt
grep -q "^array r5: $T/s0 added as a hot spare; the array is active" add.txt ||
	fail "add-spare: $(cat add.txt)"
[ "$(ctl array status --json r5 | json_get - arrays 0 extra 0 state)" = spare ] ||
	fail "no spare in status: $(ctl array status r5)"
ctl array status r5 | grep -Eq "^  -  +spare +$T/s0" || fail "text status: $(ctl array status r5)"
expect_fail 1 "device $T/s0: already in array \"r5\"" ctl array add-spare r5 s0

log "fail a member: the spare rebuilds while fio verifies"
# shellcheck disable=SC2086
bg fio --name=v --ioengine=nbd --uri="$(uri v5)" --verify_state_save=0 $W $COMMON \
	--verify_only --loops=3
VER=$BG
ctl array fail r5 d1 >fail.txt
# The device failed is named, not the spare that took its slot.
grep -q "^array r5: member 1 ($T/d1) marked faulty" fail.txt || fail "array fail: $(cat fail.txt)"
# ... and so is the spare that took it.
grep -q "; spare $T/s0 took the slot (rebuilding)$" fail.txt || fail "array fail: $(cat fail.txt)"
ctl array status --json r5 >rb.json
[ "$(json_get rb.json arrays 0 members slot=1 device)" = "$T/s0" ] || fail "spare not in slot 1"
[ "$(json_get rb.json arrays 0 members slot=1 state)" = rebuilding ] || fail "not rebuilding: $(cat rb.json)"
[ "$(json_get rb.json arrays 0 sync)" = rebuild ] || fail "sync: $(json_get rb.json arrays 0 sync)"
ctl array status r5 |
	grep -Eq '^  rebuild: .* MB/s per member( \(written rows [0-9.]+ MB/s\))?, (ETA|finishing)' ||
	fail "no rebuild line: $(ctl array status r5)"
# Writes during the rebuild, then verified.
# shellcheck disable=SC2086
fio_nbd v5 w2 $W $COMMON --randseed=92 --offset=48m --size=8m --do_verify=1
bg_wait "$VER" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify during the rebuild"; }
! grep -Eqi 'verify: bad|crc32c: verify failed' "$BG_LOG" || fail "verify errors: $BG_LOG"
ctl array rebuild-rate r5 --max unlimited --priority 100 >/dev/null
active() {
	[ "$(ctl array status --json r5 | json_get - arrays 0 state)" = active ] &&
	[ "$(ctl array status --json r5 | json_get - arrays 0 sync)" = idle ]
}
wait_until 40 active
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=1 state)" = active ] ||
	fail "slot 1 not active after the rebuild"
# shellcheck disable=SC2086
fio_nbd v5 v1 $W $COMMON --verify_only
# shellcheck disable=SC2086
fio_nbd v5 v2 $W $COMMON --randseed=92 --offset=48m --size=8m --verify_only

log "check: started, no mismatches"
ctl array check r5 >check.txt
grep -q '^array r5: check started' check.txt || fail "check: $(cat check.txt)"
wait_until 40 active
ctl array status --json r5 >ck.json
[ "$(json_get ck.json arrays 0 mismatches)" = 0 ] || fail "mismatches: $(cat ck.json)"
[ "$(json_get ck.json arrays 0 checked)" -gt 0 ] || fail "nothing checked: $(cat ck.json)"
ctl array status r5 | grep -q '^  last check: 0 mismatches in [1-9]' ||
	fail "no check line: $(ctl array status r5)"

log "remove the failed member"
[ "$(ctl array status --json r5 | json_get - arrays 0 extra device=$T/d1 state)" = faulty ] ||
	fail "d1 not kept as faulty: $(ctl array status r5)"
ctl array remove r5 d1 >rm.txt
grep -q "^array r5: $T/d1 removed; the array is active" rm.txt || fail "remove: $(cat rm.txt)"
[ "$(ctl array status --json r5 | json_get - arrays 0 extra)" = "[]" ] ||
	fail "d1 still listed: $(ctl array status r5)"
expect_fail 1 "array r5: no member or spare named $T/d1" ctl array remove r5 d1

log "replace d0 by s1 live: d0 stays in service until the copy ends"
ctl array rebuild-rate r5 --min 1 --max 4 >/dev/null  # slow enough to be seen copying
ctl array replace r5 0 s1 >rep.txt
grep -q '^array r5: ' rep.txt || fail "replace: $(cat rep.txt)"
ctl array status r5 >rs.txt
grep -Eq "^  0 +rebuilding +$T/s1 \(replacing $T/d0, in service until the copy ends\)" rs.txt ||
	fail "replace not shown: $(cat rs.txt)"
[ "$(ctl array status --json r5 | json_get - arrays 0 state)" = active ] ||
	fail "not active (full redundancy) during the replace: $(cat rs.txt)"
ctl array rebuild-rate r5 --max unlimited --priority 100 >/dev/null
wait_until 60 active
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=0 device)" = "$T/s1" ] ||
	fail "s1 not in slot 0: $(ctl array status r5)"
# shellcheck disable=SC2086
fio_nbd v5 v4 $W $COMMON --verify_only

log "attach a cache live, the backing named by the array's members of now"
# The server opened r5 as array:d0,d1,d2; its members are s1 s0 d2 now.  Named so,
# it was another device to the server, which opened the members again and refused
# its own locks.
truncate -s 64M c.img
tc create cache c.img >/dev/null
ctl attach --cache c.img --backing array:s1,s0,d2 --write-policy wt >att.txt 2>att.err ||
	fail "attach with the members of now: $(cat att.err)"
grep -q '^volume "v5": attached to cache' att.txt || fail "attach: $(cat att.txt)"
ctl detach v5 >/dev/null
stop_server

log "the members say so too: s1 s0 d2, active and clean"
tc array status s1 s0 d2 >st.txt
grep -q '^array r5 .*active (survives 1 more member failure), clean' st.txt ||
	fail "offline status: $(cat st.txt)"
serve s1 s0 d2
# shellcheck disable=SC2086
fio_nbd v5 v3 $W $COMMON --verify_only

log "kill -9 mid-rebuild: the rebuild resumes from its checkpoint, the data verifies"
truncate -s 64M s2
ctl array add-spare r5 s2 >/dev/null
ctl array rebuild-rate r5 --min 1 --max 4 >/dev/null  # 56 MiB at 4 MB/s: about 14 s
ctl array fail r5 d2 >/dev/null
# Writes while it rebuilds, verified after the restart.
# shellcheck disable=SC2086
fio_nbd v5 w3 $W $COMMON --randseed=93 --offset=56m --size=8m
rebuilt_some() {
	[ "$(ctl array status --json r5 | json_get - arrays 0 sync_pos)" -ge $((8 << 20)) ]
}
wait_until 30 rebuilt_some
[ "$(ctl array status --json r5 | json_get - arrays 0 sync)" = rebuild ] ||
	fail "the rebuild ended before the kill: $(ctl array status r5)"
kill_server
[ -S "$SOCK" ] || fail "expected the killed server's NBD socket to be left behind"
# The members record s2 rebuilding and the checkpoint it reached, which the next
# server resumes from (not from 0).
tc array status --json s1 s0 s2 d2 >ks.json 2>ks.err || fail "offline status: $(cat ks.err)"
[ "$(json_get ks.json arrays 0 members slot=2 state)" = rebuilding ] ||
	fail "s2 not recorded rebuilding: $(cat ks.json)"
[ "$(json_get ks.json arrays 0 rebuild_pos)" -gt 0 ] ||
	fail "no rebuild checkpoint recorded: $(cat ks.json)"
# The rates set live are kept in the superblocks: the next server rebuilds at 4 MB/s.
[ "$(json_get ks.json arrays 0 rebuild max_rate)" = 4000000 ] ||
	fail "rebuild rate not kept on the members: $(cat ks.json)"
# So are the regions ever written (a rebuild reads the survivors in those only).
[ "$(json_get ks.json arrays 0 written_regions)" -gt 0 ] &&
	[ "$(json_get ks.json arrays 0 written_regions)" -le \
		"$(json_get ks.json arrays 0 written_map_regions)" ] ||
	fail "no regions recorded written: $(cat ks.json)"
serve s1 s0 s2 d2
# Reads during the resumed rebuild, then after it.
# shellcheck disable=SC2086
fio_nbd v5 v6 $W $COMMON --verify_only
ctl array rebuild-rate r5 --max unlimited --priority 100 >/dev/null
wait_until 60 active
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=2 device)" = "$T/s2" ] ||
	fail "s2 not in slot 2: $(ctl array status r5)"
# shellcheck disable=SC2086
fio_nbd v5 v7 $W $COMMON --randseed=92 --offset=48m --size=8m --verify_only
# shellcheck disable=SC2086
fio_nbd v5 v8 $W $COMMON --randseed=93 --offset=56m --size=8m --verify_only
ctl array check r5 >/dev/null
wait_until 40 active
[ "$(ctl array status --json r5 | json_get - arrays 0 mismatches)" = 0 ] ||
	fail "mismatches after the resumed rebuild: $(ctl array status r5)"

log "a removed spare is left blank; still among serve's devices, it is ignored"
truncate -s 64M s3
ctl array add-spare r5 s3 >/dev/null
ctl array remove r5 s3 >/dev/null
stop_server
serve s1 s0 s2 d2 s3 2>serve.err
grep -q "warning: device $T/s3: is empty (no tiercache superblock): ignored" serve.err ||
	fail "no warning for the blank device: $(cat serve.err)"
[ "$(ctl array status --json r5 | json_get - arrays 0 state)" = active ] ||
	fail "not active with a blank device listed: $(ctl array status r5)"
# shellcheck disable=SC2086
fio_nbd v5 v9 $W $COMMON --randseed=93 --offset=56m --size=8m --verify_only
stop_server
log "ok"
