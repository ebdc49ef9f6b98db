#!/bin/sh
# test-protect.sh - write-back only on a protected cache (docs/pools.md), offline: on a
# cache file without --unprotected-writeback (redundancy 0), attaching a volume stored
# as wb, attaching with --write-policy wb and `set --write-policy wb` are refused with
# a message naming the volume, the cache, its redundancy and the way out, and change
# no byte of either device; instwb on a backing without a stripe is refused; status
# shows the cache's redundancy and no warning.  A cache formatted with the override
# takes wb and, on a backing with --stripe-size, instwb; status warns about it, in the
# table and in --json.  The server refuses the same as the offline commands.
# `set-cache --unprotected-writeback off` is refused while a volume runs wb (attached,
# or only recorded, its backing absent), offline and live; accepted once it runs wt,
# stored; `on` gives the override back.
. "$(dirname "$0")/lib.sh"
cd "$T"

tc create cache ssd.img --size 64M >/dev/null
tc create backing hdd.img --name db --size 256M >/dev/null     # stored: wb (default)
# (Opening a cache offline rewrites its superblock's in-use flag and generation: the
# backing's bytes and the cache's volumes are what must not change.)
before="$(sums hdd.img)"
expect_fail 1 'volume "db": write policy wb refused: cache .*ssd.img has redundancy 0.*--unprotected-writeback' \
	tc attach --cache ssd.img --backing hdd.img --control "$CTL"
expect_fail 1 'volume "db": write policy wb refused' \
	tc attach --cache ssd.img --backing hdd.img --write-policy wb --control "$CTL"
[ "$(sums hdd.img)" = "$before" ] || fail "a refused attach changed the backing"
[ "$(tc check --json ssd.img | json_get - devices 0 volumes)" = "[]" ] ||
	fail "a refused attach left a volume on the cache: $(tc check --json ssd.img)"

tc attach --cache ssd.img --backing hdd.img --write-policy wt --control "$CTL" >/dev/null
dev="--device ssd.img --device hdd.img --control $CTL"
before="$(sums hdd.img)"
expect_fail 1 'volume "db": write policy wb refused: cache .*ssd.img has redundancy 0' \
	tc set db --write-policy wb $dev
expect_fail 1 'volume "db": write policy instwb refused: backing .*hdd.img reports no full stripe.*--stripe-size' \
	tc set db --write-policy instwb $dev
[ "$(sums hdd.img)" = "$before" ] || fail "a refused set changed the backing"
tc status $dev --json >st.json
[ "$(json_get st.json volumes name=db settings write_policy)" = wt ] || fail "db is not wt"
[ "$(json_get st.json caches 0 redundancy)" = 0 ] || fail "redundancy not 0"
[ "$(json_get st.json caches 0 unprotected_writeback)" = False ] || fail "override set"
[ "$(json_get st.json caches 0 warning)" = None ] || fail "a warning without the override"

log "the server refuses the same"
serve ssd.img hdd.img
expect_fail 1 'volume "db": write policy wb refused: cache .*ssd.img has redundancy 0' \
	ctl set db --write-policy wb
[ "$(ctl status --json | json_get - volumes name=db settings write_policy)" = wt ] ||
	fail "the server's db is not wt after a refused set"
stop_server

log "with --unprotected-writeback"
tc create cache ssd2.img --unprotected-writeback --size 64M --json >c2.json
[ "$(json_get c2.json unprotected_writeback)" = True ] || fail "create --json: $(cat c2.json)"
tc create backing hdd2.img --name logs --size 256M --stripe-size 1M >/dev/null
tc attach --cache ssd2.img --backing hdd2.img --write-policy instwb --control "$CTL" >/dev/null
dev2="--device ssd2.img --device hdd2.img --control $CTL"
tc status $dev2 --json >st2.json
[ "$(json_get st2.json volumes name=logs settings write_policy)" = instwb ] ||
	fail "logs is not instwb"
[ "$(json_get st2.json volumes name=logs effective_policy)" = instwb ] ||
	fail "logs does not run instwb: $(json_get st2.json volumes name=logs effective_policy)"
[ "$(json_get st2.json caches 0 unprotected_writeback)" = True ] || fail "no override"
json_get st2.json caches 0 warning | grep -q "without redundancy" || fail "no warning in --json"
tc status $dev2 | grep -q "warning: cache .*ssd2.img: write-back allowed without redundancy" ||
	fail "no warning in the status table: $(tc status $dev2)"
tc set logs --write-policy wb $dev2 >/dev/null

log "set-cache --unprotected-writeback: off refused while logs runs wb, offline and live"
expect_fail 2 'not on or off' tc set-cache ssd2.img --unprotected-writeback maybe $dev2
expect_fail 2 'nothing to set' tc set-cache ssd2.img $dev2
expect_fail 1 'cache .*ssd2.img: cannot require a redundant cache for write-back: volume "logs" runs wb' \
	tc set-cache ssd2.img --unprotected-writeback off $dev2
# The backing absent: its record still says wb.
expect_fail 1 'volume "logs" .its backing not open here. is recorded in wb' \
	tc set-cache ssd2.img --unprotected-writeback off --device ssd2.img --control "$CTL"
[ "$(tc status $dev2 --json | json_get - caches 0 unprotected_writeback)" = True ] ||
	fail "a refused set-cache took the override back"
serve ssd2.img hdd2.img
expect_fail 1 'volume "logs" runs wb' ctl set-cache ssd2.img --unprotected-writeback off
ctl set logs --write-policy wt >/dev/null
ctl set-cache ssd2.img --unprotected-writeback off | grep -q "needs a redundant cache device" ||
	fail "live set-cache off did not say so"
[ "$(ctl status --json | json_get - caches 0 unprotected_writeback)" = False ] ||
	fail "live set-cache off: the override is still set"
expect_fail 1 'volume "logs": write policy wb refused' ctl set logs --write-policy wb
stop_server
log "offline: the override stored, given back, and wb allowed again"
[ "$(tc status $dev2 --json | json_get - caches 0 unprotected_writeback)" = False ] ||
	fail "set-cache off was not stored"
tc set-cache ssd2.img --unprotected-writeback on $dev2 --json >sc.json
[ "$(json_get sc.json unprotected_writeback)" = True ] || fail "set-cache on --json: $(cat sc.json)"
tc set logs --write-policy wb $dev2 >/dev/null
expect_fail 1 'cache "nosuch.img": not open here' \
	tc set-cache nosuch.img --unprotected-writeback on $dev2
log "ok"
