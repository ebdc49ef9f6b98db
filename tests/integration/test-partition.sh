#!/bin/sh
# test-partition.sh - cache partitions through a running server: two volumes on one
# 128 MiB cache; volume db reserves 32 MiB and keeps a hot set of that size resident
# while db2, capped at 50 %, reads 600 MiB at random, and db2 never holds more than
# its cap; shares that do not fit are refused with a clear error and nothing changes;
# shares change live while fio verifies a write-back volume; they survive a restart.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

serve_two_volumes

resident() { stats_get "$1" resident_bytes; }

# db's hot set: 32 MiB read once in random order (64 KiB blocks: one line each).
ctl set db --reserve 32M >/dev/null
fio_nbd db hot --rw=randread --bs=64k --size=32m --iodepth=8
[ "$(resident db)" -ge $((32 * MIB)) ] || fail "hot set not resident: $(resident db)"

# db2 scans far more than the cache under a 50 % cap; its share is checked meanwhile.
ctl set db2 --cap 50% | grep -q "cap 50%" || fail "set --cap 50%: $(ctl set db2 --cap 50%)"
bg fio --name=scan --ioengine=nbd --uri="$(uri db2)" --rw=randread --bs=64k \
	--size=900m --io_size=600m --iodepth=16
SCAN=$BG
while kill -0 "$SCAN" 2>/dev/null; do
	r=$(resident db2)
	[ "$r" -le $((64 * MIB)) ] || fail "db2 holds $r bytes, above its cap of 64 MiB"
	sleep 0.5
done
bg_wait "$SCAN" || fail "the scan failed: $(tail -n 5 "$BG_LOG")"
[ "$(resident db2)" -le $((64 * MIB)) ] || fail "db2 above its cap after the scan"
[ "$(resident db)" -ge $((32 * MIB)) ] ||
	fail "the scan pushed db below its reservation: $(resident db) bytes"
h0=$(stats_get db read_hits)
fio_nbd db hot2 --rw=randread --bs=64k --size=32m --iodepth=8
[ $(($(stats_get db read_hits) - h0)) -eq 512 ] || fail "db's hot set was not all hits"

# Shares that do not fit: refused, named, nothing changed.
expect_fail 1 'db2.*add up to' ctl set db2 --reserve 100M --cap 0
expect_fail 1 'db2.*above the cap of 50%' ctl set db2 --reserve 100M
expect_fail 1 'db.*above the cap' ctl set db --cap 16M
expect_fail 1 'more than the cache' ctl set db --reserve 1G
expect_fail 2 'not a whole number from 0 to 100' ctl set db --reserve 101%
expect_fail 2 'not a multiple of 4K' ctl set db --cap 1000
[ "$(status_get db settings reserve_bytes)" -eq $((32 * MIB)) ] || fail "a refused set changed db"
[ "$(status_get db2 settings reserve_bytes)" -eq 0 ] || fail "a refused set changed db2"

# Live changes under fio verify (write-back volume db2).
bg fio --name=v --ioengine=nbd --uri="$(uri db2)" --verify_state_save=0 --offset=256m \
	--size=16m --rw=randrw --rwmixread=30 --bssplit=4k/60:64k/40 --iodepth=16 \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --randseed=3
V=$BG
for s in "--cap 10%" "--reserve 8M --cap 24M" "--cap 0" "--reserve 0 --cap 75%"; do
	# shellcheck disable=SC2086
	ctl set db2 $s >/dev/null || fail "set db2 $s under load"
	sleep 0.3
done
bg_wait "$V" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify failed during share changes"; }

# They are on the devices.
stop_server
serve ssd.img hdd.img hdd2.img
[ "$(status_get db settings reserve_bytes)" -eq $((32 * MIB)) ] || fail "db's reserve lost on restart"
[ "$(status_get db2 settings cap_pct)" -eq 75 ] || fail "db2's cap lost on restart"
stop_server
echo "PASS"
