#!/bin/sh
# test-array.sh - arrays with member superblocks from the command line
# (docs/raid.md): `create array` and its refusals (each with its message, nothing
# written), `array status` read from the members in any order, a stale member left out
# by name, a dirty and degraded RAID 5 refused and then forced with `array assemble
# --force`, and fio crc32c verify through the server on RAID 5 and RAID 6 of sparse
# files given to `serve` as members (grouped by array uuid) and as an array:... spec,
# before and after a member is failed with `array fail`, again after a restart
# without the failed member, and after the forced start with a member file gone.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

for i in 0 1 2 3 4 5 6 7 8; do
	truncate -s 96M "d$i"
done
heads() { for f in "$@"; do head -c 8192 "$f" | sha256sum | cut -c1-16; done; }
zero=$(head -c 8192 /dev/zero | sha256sum | cut -c1-16)
nothing_written() {
	for h in $(heads "$@"); do
		[ "$h" = "$zero" ] || fail "a refused create wrote to a member"
	done
}

log "create array: bad input, nothing written"
expect_fail 2 'create array: 2 member devices for raid5: it needs 3 to 32' \
	tc create array r5 --level 5 d0 d1
expect_fail 2 'create array: 3 member devices for raid6: it needs 4 to 32' \
	tc create array r6 --level 6 d0 d1 d2
expect_fail 2 '--chunk: "48K" is not a power of two from 4K to 64M' \
	tc create array r5 --level 5 --chunk 48K d0 d1 d2
expect_fail 2 '--level: "4" is not 0, 1, 5, 6 or 10' tc create array r5 --level 4 d0 d1 d2
expect_fail 2 '"bad/name" is not an array name' tc create array bad/name --level 5 d0 d1 d2
expect_fail 2 '--level LEVEL is required' tc create array r5 d0 d1 d2
expect_fail 2 '--copies: for raid10 only' tc create array r5 --level 5 --copies 2 d0 d1 d2
expect_fail 1 'device d1 is given twice' tc create array r5 --level 5 d0 d1 d1
expect_fail 1 "device ./d1 is given twice \\(also as d1\\)" \
	tc create array r5 --level 5 d0 d1 ./d1
expect_fail 1 'device d0 is given twice' tc create array r5 --level 5 d0 d1 d2 --spare d0
expect_fail 1 'd9: No such file' tc create array r5 --level 5 d0 d1 d9
nothing_written d0 d1 d2
# A member holding a file system, a backing: refused unless --force.
if command -v mkfs.ext4 >/dev/null 2>&1; then
	truncate -s 96M fs.img
	mkfs.ext4 -q -F fs.img
	expect_fail 1 'member .*/fs.img holds ext4 file system; give --force to reuse it' \
		tc create array r5 --level 5 d0 d1 fs.img
	nothing_written d0 d1
fi
tc create backing d7 --name old >/dev/null
expect_fail 1 'member .*/d7 holds the tiercache backing of volume "old"; give --force' \
	tc create array r5 --level 5 d0 d1 d7
nothing_written d0 d1
# Too small for the metadata area and one chunk.
truncate -s 8M small.img
expect_fail 1 'member .*/small.img of 8388608 bytes is too small' \
	tc create array r5 --level 5 d0 d1 small.img
nothing_written d0 d1

log "create RAID 5 and RAID 6; sizes"
truncate -s 100M d3          # larger: the smallest is used, and said
tc create array r5 --level 5 --chunk 64K d0 d1 d2 d3 2>warn.txt >out.txt
grep -q 'members of different sizes' warn.txt || fail "no size warning: $(cat warn.txt)"
grep -q '^array r5: raid5 of 4 members, chunk 64.0 KiB, 264.0 MiB' out.txt ||
	fail "create output: $(cat out.txt)"
tc create array r6 --level 6 --chunk 64K --json d4 d5 d6 d7 --force >r6.json
[ "$(json_get r6.json level)" = raid6 ] || fail "r6: $(cat r6.json)"
[ "$(json_get r6.json size)" = $((2 * 88 * 1048576)) ] || fail "r6 size: $(cat r6.json)"
expect_fail 1 'member .*/d1 belongs to array "r5" \(uuid [0-9a-f-]*\); give --force' \
	tc create array again --level 1 d1 d8
expect_fail 2 'the name "d8" is also a file here: the array.s name comes first' \
	tc create array d8 --level 1 d9 d10

log "array status from the members, in any order"
tc array status d2 d0 d3 d1 >st.txt
grep -q '^array r5 (uuid .*): raid5, chunk 64.0 KiB, 4 members, 264.0 MiB, active' st.txt ||
	fail "status: $(cat st.txt)"
tc array status --json d3 d1 d2 d0 >st.json
for s in 0 1 2 3; do
	[ "$(json_get st.json arrays 0 members "slot=$s" device)" = "$T/d$s" ] ||
		fail "slot $s is $(json_get st.json arrays 0 members "slot=$s" device)"
done
[ "$(json_get st.json arrays 0 dirty)" = False ] || fail "r5 dirty after create"
expect_fail 1 'belongs to another array, "r6"' tc array status d0 d1 d4
expect_fail 1 'holds no array member superblock' tc array status d0 d8

log "volumes on the arrays, served from their members"
tc create backing array:d0,d1,d2,d3 --name v5 >/dev/null
tc create backing array:d7,d6,d5,d4 --name v6 >/dev/null
# Members straight among serve's devices (grouped by uuid, any order), and an array: spec.
serve d3 d1 array:d4,d5,d6,d7 d0 d2
ctl status --json >status.json
[ "$(json_get status.json arrays name=r5 state)" = active ] || fail "status: $(cat status.json)"
[ "$(json_get status.json arrays name=r6 level)" = raid6 ] || fail "status: $(cat status.json)"
ctl status | grep -q '^r5 *raid5' || fail "status text lacks r5: $(ctl status)"
[ "$(ctl array status --json r6 | json_get - arrays 0 dirty)" = True ] ||
	fail "r6 not dirty while served"

COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=77 --size=48m"
W="--rw=randwrite --bssplit=4k/40:64k/40:256k/20 --iodepth=16"
for v in v5 v6; do
	# shellcheck disable=SC2086
	fio_nbd "$v" "$v-w" $W $COMMON --do_verify=1
done
log "fail a member of each, verify degraded, write more, verify"
ctl array fail r5 d2 >fail.txt
grep -q "array r5: member 2 ($T/d2) marked faulty; the array is degraded" fail.txt ||
	fail "array fail: $(cat fail.txt)"
ctl array fail r6 1 >/dev/null
ctl array fail r6 "$T/d7" >/dev/null
[ "$(ctl array status --json r6 | json_get - arrays 0 state)" = degraded ] ||
	fail "r6 not degraded"
expect_fail 1 'array "r6": no member "d9"' ctl array fail r6 d9
expect_fail 1 'array "nope": no such array' ctl array fail nope d1
# A drill past the redundancy is refused (the data would be unreachable): r6 has lost
# two members, r5 one.
expect_fail 1 'array "r6": failing member 0 \('"$T"'/d4\) would fail the array: it survives no more member failures.*give --force' \
	ctl array fail r6 d4
expect_fail 1 'array "r5": failing member 3 .* would fail the array' ctl array fail r5 3
[ "$(ctl array status --json r6 | json_get - arrays 0 state)" = degraded ] ||
	fail "r6 not degraded after a refused fail"
for v in v5 v6; do
	# shellcheck disable=SC2086
	fio_nbd "$v" "$v-v1" $W $COMMON --verify_only
	# shellcheck disable=SC2086
	fio_nbd "$v" "$v-w2" $W $COMMON --randseed=78 --offset=48m --do_verify=1
done
stop_server

log "restart: the failed members are stale, named, left out"
tc array status d0 d1 d2 d3 2>stale.txt >/dev/null
grep -q "member $T/d2 (slot 2) is stale: its event count [0-9]* is older than" stale.txt ||
	fail "no stale message: $(cat stale.txt)"
serve d0 d1 d2 d3 d4 d5 d6 d7
[ "$(ctl array status --json r5 | json_get - arrays 0 members slot=2 state)" = faulty ] ||
	fail "stale d2 not left out"
for v in v5 v6; do
	# shellcheck disable=SC2086
	fio_nbd "$v" "$v-v2" $W $COMMON --verify_only
	# shellcheck disable=SC2086
	fio_nbd "$v" "$v-v3" $W $COMMON --randseed=78 --offset=48m --verify_only
done

log "kill -9: dirty; dirty and degraded RAID 5 refused, then forced"
kill_server
tc array status --json d0 d1 d3 >dirty.json 2>/dev/null
[ "$(json_get dirty.json arrays 0 dirty)" = True ] || fail "r5 not dirty after kill -9"
expect_fail 1 'array r5: dirty and degraded \(slot 2 missing\).*array assemble --force. starts it' \
	tc array assemble d0 d1 d3
[ "$(tc array status --json d0 d1 d3 2>/dev/null | json_get - arrays 0 dirty)" = True ] ||
	fail "the refused assembly wrote"
tc array assemble --force d0 d1 d3 2>force.txt >/dev/null
grep -q 'starting dirty and degraded .* because forced' force.txt ||
	fail "no forced warning: $(cat force.txt)"
[ "$(tc array status --json d0 d1 d3 | json_get - arrays 0 dirty)" = False ] || fail "still dirty"
# A member file that is gone: the array assembles without it (it is degraded anyway).
serve "array:d0,d1,d3,$T/gone"
grep -q "array member $T/gone cannot be used" "$LOG" || fail "gone member not named"
# shellcheck disable=SC2086
fio_nbd v5 v5-v4 $W $COMMON --verify_only
stop_server

log "offline attach with a RAID 1 pool as the cache, named by relative paths"
truncate -s 96M p0 p1 b0
tc create array pool --level 1 p0 p1 >/dev/null
tc create cache array:p0,p1 >/dev/null
tc create backing b0 --name vp >/dev/null
# The spec given relative and absolute was two devices to the offline host, which
# opened the members twice and refused its own lock.
tc attach --cache array:p0,p1 --backing b0 >att.txt 2>att.err ||
	fail "offline attach on an array cache: $(cat att.err)"
grep -q '^volume "vp": attached to cache array:' att.txt || fail "attach: $(cat att.txt)"
! grep -q 'not shut down cleanly' att.err || fail "attach warned: $(cat att.err)"
[ "$(tc array status --json p0 p1 | json_get - arrays 0 dirty)" = False ] || fail "pool left dirty"

log "a member list missing a member the array last ran with is refused, nothing written"
truncate -s 96M q0 q1 q2
tc create array rq --level 5 --chunk 64K q0 q1 q2 >/dev/null
before=$(sums q0 q1 q2)
expect_fail 1 'array rq: slot 2, a member the array last ran with, is not among the devices given.*array assemble --force' \
	tc create backing array:q0,q1 --name vq
[ "$(sums q0 q1 q2)" = "$before" ] || fail "the refused create wrote"
tc array assemble --force q0 q1 >/dev/null 2>&1 || fail "forced assembly"
tc create backing array:q0,q1 --name vq >/dev/null || fail "create backing once started degraded"
log "ok"
