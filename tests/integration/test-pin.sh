#!/bin/sh
# test-pin.sh - ranges with cache attributes through a running server: two volumes on
# one 128 MiB cache; db pins 16 MiB and keeps it resident while db2 reads 600 MiB at
# random; an uncacheable range of db is never filled; bad ranges (conflicting,
# unaligned, a pin above the 50 % bound) are refused with a clear error and nothing
# changes; pins and range policies change live while fio verifies the write-back
# volume; they survive a restart.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

serve_two_volumes

ranges() { status_get "$1" ranges; }

ctl set db --pin 0:16M | grep -q 'range 0:16777216 (16.0 MiB at 0 B) pinned' ||
	fail "set --pin: $(ctl set db --pin 0:16M 2>&1)"
fio_nbd db hot --rw=randread --bs=64k --size=16m --iodepth=8
[ "$(status_get db pinned_bytes)" -eq $((16 * MIB)) ] ||
	fail "pinned lines not resident: $(status_get db pinned_bytes)"
ctl status | grep -q 'volume "db": range 0:16777216 (16.0 MiB at 0 B) pinned' ||
	fail "status does not list the pin: $(ctl status)"

# An uncacheable range: read, never filled.
ctl set db --uncacheable 64M:16M >/dev/null
fio_nbd db unc --rw=randread --bs=64k --offset=64m --size=16m --iodepth=8

p0=$(stats_get db promotions)
fio_nbd db unc2 --rw=randread --bs=64k --offset=64m --size=16m --iodepth=8
[ "$(stats_get db promotions)" -eq "$p0" ] || fail "the uncacheable range was filled"

# db2 scans far more than the cache: db's pinned lines stay, all hits.
fio_nbd db2 scan --rw=randread --bs=64k --size=900m --io_size=600m --iodepth=16
[ "$(status_get db pinned_bytes)" -eq $((16 * MIB)) ] ||
	fail "the scan evicted pinned lines: $(status_get db pinned_bytes)"
h0=$(stats_get db read_hits)
fio_nbd db hot2 --rw=randread --bs=64k --size=16m --iodepth=8
[ $(($(stats_get db read_hits) - h0)) -eq 256 ] || fail "db's pinned range was not all hits"

# Bad ranges: refused, named, nothing changed.
before=$(ranges db)
expect_fail 1 'db.*overlaps range 0:16777216 \(pinned\)' ctl set db --uncacheable 8M:16M
expect_fail 1 'db.*more than the 50% allowed' ctl set db --pin 100M:80M
expect_fail 1 'db.*not aligned to 4096' ctl set db --pin 1000:4096
expect_fail 1 'db.*no uncacheable range overlaps' ctl set db --cacheable 200M:1M
expect_fail 2 'does not end in =wt' ctl set db --range-policy 0:1M=fast
expect_fail 2 'changed alone' ctl set db --pin 0:1M --cap 50%
expect_fail 1 'db.*below the' ctl set db --cap 8M
[ "$(ranges db)" = "$before" ] || fail "a refused set changed db's ranges: $(ranges db)"

# Live changes under fio verify (write-back volume db2).
bg fio --name=v --ioengine=nbd --uri="$(uri db2)" --verify_state_save=0 --offset=256m \
	--size=16m --rw=randrw --rwmixread=30 --bssplit=4k/60:64k/40 --iodepth=16 \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --randseed=3
V=$BG
for s in "--pin 256M:4M" "--range-policy 260M:4M=wt" "--unpin 257M:1M" \
	"--uncacheable 266M:2M" "--range-policy 260M:4M=volume" "--cacheable 266M:2M" \
	"--pin 264M:1M"; do
	# shellcheck disable=SC2086
	ctl set db2 $s >/dev/null || fail "set db2 $s under load"
	sleep 0.3
done
bg_wait "$V" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify failed during range changes"; }
[ "$(status_get db2 ranges 2 offset)" -eq $((264 * MIB)) ] || fail "db2's ranges: $(ranges db2)"

# They are on the devices.
want_db=$(ranges db) want_db2=$(ranges db2)
stop_server
serve ssd.img hdd.img hdd2.img
[ "$(ranges db)" = "$want_db" ] || fail "db's ranges lost on restart: $(ranges db)"
[ "$(ranges db2)" = "$want_db2" ] || fail "db2's ranges lost on restart: $(ranges db2)"
[ "$(status_get db pinned_bytes)" -eq $((16 * MIB)) ] || fail "pins not resident after restart"
stop_server
echo "PASS"
