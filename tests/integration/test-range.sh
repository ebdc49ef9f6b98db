#!/bin/sh
# test-range.sh - range maintenance and the latency histograms through a running
# server: `tiercache flush --range` writes back exactly the range's dirty data (seen
# on the backing file) and leaves the rest dirty; `tiercache invalidate --range`
# refuses a range with dirty data and changes nothing, drops a clean range so that
# data written to the backing file behind the server shows through, and with
# --discard-dirty says how many dirty bytes it dropped; bad ranges get clear errors;
# fio verifies a write-back range while it is flushed and invalidated over and over;
# `stats --latency` and `stats --json` show the requests' histograms, and --reset
# empties them.
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

KIB=1024
MIB=$((1024 * 1024))
DATA=$MIB        # where a backing's data starts on its device (TC_BACKING_DATA_OFFSET)

make_volume db hdd.img ssd.img --write-policy wb --flush-rate low
tc attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
serve ssd.img hdd.img
keepalive_start db     # the low-rate cleaner stays asleep: dirty counts stay exact

# bytes_are FILE OFFSET LENGTH BYTE: every byte of the file's range is BYTE (hex).
bytes_are() {
	python3 -c '
import sys
f, off, n, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 16)
with open(f, "rb") as fh:
    fh.seek(off)
    d = fh.read(n)
sys.exit(0 if len(d) == n and d == bytes([b]) * n else 1)
' "$@"
}

# 1 MiB of 0xaa written through the cache (write-back): all of it dirty.
qio "$(uri db)" "write -P 0xaa 0 1M"
[ "$(stats_get db dirty_bytes)" -eq $MIB ] || fail "dirty after the write: $(stats_get db dirty_bytes)"

# Invalidate refuses the dirty range and changes nothing.
expect_fail 1 "db.*1048576 dirty bytes.*nothing was changed" ctl invalidate db --range 0:1M
[ "$(stats_get db dirty_bytes)" -eq $MIB ] || fail "refused invalidate changed the dirty bytes"
[ "$(stats_get db cached_bytes)" -ge $MIB ] || fail "refused invalidate dropped cached data"

# A range flush: the first 512 KiB (whole 64 KiB lines) go to the backing, the rest
# stays dirty.
ctl flush db --range 0:512K --json >flush.json
[ "$(json_get flush.json dirty_bytes_before)" -eq $((512 * KIB)) ] ||
	fail "flush --range: dirty_bytes_before $(json_get flush.json dirty_bytes_before)"
[ "$(json_get flush.json dirty_bytes)" -eq $((512 * KIB)) ] ||
	fail "flush --range: dirty now $(json_get flush.json dirty_bytes)"
bytes_are hdd.img $DATA $((512 * KIB)) aa || fail "the flushed range is not on the backing"
bytes_are hdd.img $((DATA + 512 * KIB)) $((512 * KIB)) 00 ||
	fail "data outside the flushed range reached the backing"
ctl flush db --range 0:512K | grep -q "^range 0:524288: flushed 0 B" ||
	fail "a second flush of the clean range: $(ctl flush db --range 0:512K)"

# The backing changes behind the server; the cache still answers with its copy until
# the range is invalidated, then the new data shows through.
python3 -c '
import os, sys
fd = os.open("hdd.img", os.O_WRONLY)
os.pwrite(fd, b"\x55" * 262144, int(sys.argv[1]))
os.fsync(fd)
os.close(fd)
' $DATA
qio "$(uri db)" "read -P 0xaa 0 256k"
ctl invalidate db --range 0:256K --json >inval.json
[ "$(json_get inval.json dropped_bytes)" -eq $((256 * KIB)) ] ||
	fail "invalidate: dropped $(json_get inval.json dropped_bytes)"
[ "$(json_get inval.json dirty_bytes_discarded)" -eq 0 ] || fail "invalidate discarded dirty data"
qio "$(uri db)" "read -P 0x55 0 256k" "read -P 0xaa 256k 768k"

# --discard-dirty drops the dirty half and says so; reads then see the backing (zeros).
ctl invalidate db --range 512K:512K --discard-dirty >inval.txt
grep -q "512.0 KiB of dirty data discarded" inval.txt || fail "invalidate --discard-dirty: $(cat inval.txt)"
[ "$(stats_get db dirty_bytes)" -eq 0 ] || fail "dirty after the discard: $(stats_get db dirty_bytes)"
qio "$(uri db)" "read -P 0 512k 512k" "read -P 0xaa 256k 256k"

# Bad ranges: clear errors, nothing changed.
expect_fail 1 "db.*4097:4096.*not aligned" ctl invalidate db --range 4097:4096
expect_fail 1 "db.*past the volume's end" ctl flush db --range 1020M:8M
expect_fail 2 "not OFFSET:LENGTH" ctl flush db --range 4096
expect_fail 2 "is empty" ctl invalidate db --range 4096:0
expect_fail 2 "needs --range" ctl invalidate db
expect_fail 2 "does not take --range" ctl detach db --range 0:4K
expect_fail 1 "no such volume" ctl invalidate nosuch --range 0:4K

# fio verifies a write-back range while the range is flushed and invalidated in a loop
# (an invalidation finding dirty data is refused: exit 1 and the message, tolerated).
# fio_passes: four verified passes over 64M..72M, one seed each.
fio_passes() {
	for _s in 1 2 3 4; do
		fio --name=v --ioengine=nbd --uri="$(uri db)" --verify_state_save=0 \
			--offset=64m --size=8m --rw=randrw --rwmixread=30 --bssplit=4k/60:64k/40 \
			--iodepth=16 --verify=crc32c --verify_fatal=1 --do_verify=1 \
			--randseed=$_s || exit 1
	done
}
bg fio_passes
FIO=$BG
FIO_LOG=$BG_LOG
n=0
while kill -0 "$FIO" 2>/dev/null && [ $n -lt 40 ]; do
	n=$((n + 1))
	ctl flush db --range 64M:8M >/dev/null || fail "flush --range under load failed"
	set +e
	ctl invalidate db --range 64M:8M >/dev/null 2>inval.err
	rc=$?
	set -e
	[ $rc -eq 0 ] || grep -q "dirty bytes" inval.err || fail "invalidate under load: $(cat inval.err)"
done
bg_wait "$FIO" || { tail -n 20 "$FIO_LOG" >&2; fail "fio verify failed while the range was flushed and invalidated"; }
grep -Eqi 'verify: bad|crc32c: verify failed' "$FIO_LOG" && fail "fio reported bad data"
[ $n -ge 2 ] || fail "fio finished before the range operations ran"
ctl flush db --range 64M:8M >/dev/null
ctl invalidate db --range 64M:8M >/dev/null
qio "$(uri db)" "read -P 0x55 0 256k"

# The latency histograms: the reads above were hits and misses of the read classes.
keepalive_stop
ctl stats db --latency >lat.txt
grep -Eq '^read hit +[1-9][0-9]* ' lat.txt || fail "stats --latency: no read hits: $(cat lat.txt)"
grep -Eq '^read miss +[1-9][0-9]* ' lat.txt || fail "stats --latency: no read misses: $(cat lat.txt)"
grep -q 'p99.99' lat.txt || fail "stats --latency: no p99.99 column"
ctl stats db --json >stats.json
hits=$(json_get stats.json latency read_hit count)
max=$(json_get stats.json latency read_hit max_ns)
p50=$(json_get stats.json latency read_hit p50_ns)
[ "$hits" -gt 0 ] && [ "$max" -ge "$p50" ] && [ "$p50" -gt 0 ] ||
	fail "stats --json latency: count $hits p50 $p50 max $max"
ctl stats db | grep -q '^latency' && fail "plain stats prints the histograms"
ctl stats db --reset >/dev/null
[ "$(stats_get db latency | json_get - read_hit count)" -eq 0 ] || fail "stats --reset left latency counts"
stop_server
echo "PASS"
