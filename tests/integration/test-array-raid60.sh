#!/bin/sh
# test-array-raid60.sh - a RAID 60 with member superblocks on a running server
# (docs/raid.md, "Levels and layout"): two RAID 6 legs of five files (three data
# chunks of 64 KiB: 192 KiB leg stripes, not a power of two) under a RAID 0 whose chunk
# is one leg stripe, named as one device with the legs in brackets
# (array:[array:...],[array:...]); fio verify through it; `array status` lists the legs
# with the RAID 60; a global spare takes the place of a leg's failed member and
# rebuilds it while fio verifies; restarts with the old spec and the spare given with
# --spare (it joins its leg), and with the leg named by its members of now.
# Bad specs refused with their messages.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

for l in a b; do
	for i in 0 1 2 3 4; do
		truncate -s 48M "$l$i"
	done
	tc create array "${l}6" --level 6 --chunk 64K "${l}0" "${l}1" "${l}2" "${l}3" "${l}4" \
		>/dev/null
done
truncate -s 48M s0
LA="array:$T/a0,$T/a1,$T/a2,$T/a3,$T/a4"
LB="array:$T/b0,$T/b1,$T/b2,$T/b3,$T/b4"

log "bad specs: each refused with its message"
expect_fail 2 '--chunk: "192K" is not a power of two from 4K to 64M \(raid5; RAID 0 takes' \
	tc create array x --level 5 --chunk 192K a0 a1 a2
expect_fail 2 'give each leg of a RAID 50 / 60 as a device of its own' \
	tc create array r60 --level 0 --chunk 192K "array:[$LA],[$LB]"
tc create array r60 --level 0 --chunk 192K "$LA" "$LB" >/dev/null
expect_fail 1 'a member that is an array goes in brackets: array:\[array:A,B,C\]' \
	tc create backing "array:$LA,$LB" --name v60
expect_fail 1 'brackets that do not pair' tc create backing "array:[$LA" --name v60
expect_fail 1 'only an array spec goes in brackets' tc create backing "array:[$T/a0]" --name v60
expect_fail 1 'one level of brackets' tc create backing "array:[array:[$LA]],[$LB]" --name v60
expect_fail 1 'brackets that do not pair' tc create backing "array:[$LA],[$LB]," --name v60

R60="array:[$LA],[$LB]"
tc create backing "$R60" --name v60 >/dev/null
serve "$R60"
COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=61"
W="--rw=randwrite --bssplit=4k/30:64k/30:192k/40 --iodepth=8"
# shellcheck disable=SC2086
fio_nbd v60 w1 $W $COMMON --size=64m --do_verify=1

log "array status: the RAID 60 and its legs"
ctl array status --json >st.json
names=$(python3 -c '
import json
print(" ".join(a["name"] for a in json.load(open("st.json"))["arrays"]))')
[ "$names" = "r60 a6 b6" ] || fail "arrays listed: $names"
[ "$(json_get st.json arrays 0 chunk)" = 196608 ] || fail "r60 chunk: $(cat st.json)"
[ "$(json_get st.json arrays 0 redundancy)" = 2 ] || fail "r60 redundancy: $(cat st.json)"

log "a leg member fails: a global spare takes its place and rebuilds while fio verifies"
ctl array add-spare --global s0 >/dev/null
# shellcheck disable=SC2086
bg fio --name=v --ioengine=nbd --uri="$(uri v60)" --verify_state_save=0 $W $COMMON \
	--size=64m --verify_only --loops=2
VER=$BG
ctl array fail a6 a1 >/dev/null
leg_active() {
	[ "$(ctl array status --json a6 | json_get - arrays 0 state)" = active ] &&
	[ "$(ctl array status --json a6 | json_get - arrays 0 sync)" = idle ]
}
wait_until 60 leg_active
[ "$(ctl array status --json a6 | json_get - arrays 0 members slot=1 device)" = "$T/s0" ] ||
	fail "the global spare is not in slot 1 of a6: $(ctl array status a6)"
bg_wait "$VER" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify during the leg's rebuild"; }
# shellcheck disable=SC2086
fio_nbd v60 w2 $W $COMMON --randseed=62 --offset=64m --size=16m --do_verify=1
stop_server

log "restart with the old spec and --spare s0: the spare, a6's member now, joins its leg"
serve --spare s0 "$R60"
[ "$(ctl array status --json a6 | json_get - arrays 0 members slot=1 device)" = "$T/s0" ] ||
	fail "s0 not back in slot 1 of a6: $(ctl array status a6)"
[ "$(ctl array status --json a6 | json_get - arrays 0 state)" = active ] ||
	fail "a6 after the restart: $(ctl array status a6)"
# shellcheck disable=SC2086
fio_nbd v60 v0 $W $COMMON --size=64m --verify_only
stop_server

log "restart: the leg named by its members of now"
serve "array:[array:$T/a0,$T/s0,$T/a2,$T/a3,$T/a4],[$LB]"
[ "$(ctl array status --json r60 | json_get - arrays 0 state)" = active ] ||
	fail "r60 after the restart: $(ctl array status r60)"
# shellcheck disable=SC2086
fio_nbd v60 v1 $W $COMMON --size=64m --verify_only
# shellcheck disable=SC2086
fio_nbd v60 v2 $W $COMMON --randseed=62 --offset=64m --size=16m --verify_only
stop_server
log "ok"
