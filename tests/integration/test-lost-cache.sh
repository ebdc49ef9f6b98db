#!/bin/sh
# test-lost-cache.sh - a cache device that is named but missing, and one lost for good.
#  1. with the cache's device gone, `serve CACHE HDD-WT HDD-WB` serves the
#     write-through volume uncached (with its data) and refuses the write-back one by
#     name, with the way out; `serve` of the write-back backing alone is refused;
#  2. `forget-cache` refuses while the old cache can still be read whole and holds the
#     volume's dirty data (and changes nothing); refuses a cache for a backing, a
#     backing of another cache's, a backing with no cache;
#  3. with the cache lost, `forget-cache HDD` lets the write-back volume be served
#     alone: its data is what the backing holds (the dirty data is gone, as the
#     command says); the old cache, brought back, is stale for the volume.
. "$(dirname "$0")/lib.sh"
need qemu-io
cd "$T"

make_volume wt hdd-wt.img ssd.img --write-policy wt
make_volume wb hdd-wb.img ssd.img --write-policy wb --flush-rate low
tc attach --cache ssd.img --backing hdd-wt.img --device hdd-wt.img >/dev/null
tc attach --cache ssd.img --backing hdd-wb.img --device hdd-wb.img >/dev/null
uuid=$(tc check --json ssd.img | json_get - devices 0 uuid)

serve ssd.img hdd-wt.img hdd-wb.img
qio "$(uri wt)" 'write -P 0x31 0 1M'
qio "$(uri wb)" 'write -P 0x41 0 1M'
[ "$(status_get wb dirty_bytes)" -eq $((1024 * 1024)) ] || fail "wb: dirty $(status_get wb dirty_bytes)"
stop_server   # the dirty data stays in the cache

# --- 2. forget-cache while the cache can still be read ---------------------------------------
log "forget-cache refusals"
before=$(sums hdd-wb.img hdd-wt.img ssd.img)
expect_fail 1 "cache ssd.img can still be read and holds 1(\.0)? MiB of dirty data of volume \"wb\"" \
	tc forget-cache hdd-wb.img --cache ssd.img
expect_fail 1 'ssd.img is not a tiercache backing \(it is a cache' tc forget-cache ssd.img
expect_fail 1 'hdd-wt.img is not a tiercache cache \(it is a backing' \
	tc forget-cache hdd-wb.img --cache hdd-wt.img
expect_fail 2 'no BACKING given' tc forget-cache
[ "$(sums hdd-wb.img hdd-wt.img ssd.img)" = "$before" ] || fail "a refused forget-cache changed a device"

# --- 1. the cache's device missing ------------------------------------------------------------
log "the cache named but missing"
mv ssd.img ssd.gone
out=$(tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" ssd.img hdd-wt.img hdd-wb.img 2>err) ||
	{ cat err >&2; fail "serve with the cache missing: exit $?"; }
SERVER_PID=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
grep -q "warning: volume \"wb\" (backing .*hdd-wb.img) is not served: its cache $uuid is not among the devices given.*forget-cache" err ||
	{ cat err >&2; fail "serve did not say why volume wb is not served"; }
grep -q "warning: device .*ssd.img cannot be used" err || { cat err >&2; fail "serve did not name the missing device"; }
[ "$(status_get wt state)" = degraded ] || fail "wt: state $(status_get wt state)"
qio "$(uri wt)" 'read -P 0x31 0 1M'
ctl status --json | json_get - volumes | grep -q '"wb"' && fail "volume wb is served without its cache"
stop_server
expect_fail 1 "volume \"wb\" .*is not served: its cache $uuid is not among the devices given" \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" ssd.img hdd-wb.img
[ ! -e "$SOCK" ] && [ ! -e "$CTL" ] || fail "a refused serve left a socket behind"

# --- 3. forget the lost cache -----------------------------------------------------------------
log "forget-cache"
tc forget-cache hdd-wb.img >out || fail "forget-cache: exit $?"
grep -q "volume \"wb\" (backing hdd-wb.img): cache $uuid forgotten" out || fail "forget-cache printed: $(cat out)"
grep -q "dirty data lost: not known (write-back" out || fail "forget-cache printed: $(cat out)"
expect_fail 1 'no cache attached, nothing to forget' tc forget-cache hdd-wb.img
serve hdd-wb.img
[ "$(status_get wb state)" = uncached ] || fail "wb after forget-cache: state $(status_get wb state)"
qio "$(uri wb)" 'read -P 0 0 1M'           # the dirty data never reached the backing
qio "$(uri wb)" 'write -P 0x42 0 64k'
stop_server
# The old cache comes back: stale for wb (refused until its dirty lines are dropped).
mv ssd.gone ssd.img
expect_fail 1 'backing .*hdd-wb.img.*not attached|no cache|stale|written without' \
	tc attach --cache ssd.img --backing hdd-wb.img --device ssd.img --device hdd-wb.img
tc forget-cache hdd-wt.img --cache ssd.img --json >f.json || fail "forget-cache wt: exit $?"
[ "$(json_get f.json dirty_bytes_lost)" -eq 0 ] || fail "wt: $(cat f.json)"
[ "$(json_get f.json forgotten_cache)" = "$uuid" ] || fail "wt: $(cat f.json)"

# --- the checksum setting is stored on the cache ---------------------------------------------
tc create cache ssd-nocsum.img --unprotected-writeback --size 64M --checksums off >/dev/null
[ "$(tc check --json ssd-nocsum.img | json_get - devices 0 checksums)" = False ] ||
	fail "create cache --checksums off: check says $(tc check --json ssd-nocsum.img)"
[ "$(tc check --json ssd.img | json_get - devices 0 checksums)" = True ] ||
	fail "a default cache has no checksums"
expect_fail 2 '--checksums: "maybe" is not on or off' tc create cache x.img --size 64M --checksums maybe
[ ! -e x.img ] || fail "bad usage created x.img"
log "ok"
