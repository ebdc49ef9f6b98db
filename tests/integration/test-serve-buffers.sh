#!/bin/sh
# test-serve-buffers.sh - what a client reads over NBD is what the cache holds, whatever
# buffer nbdkit hands the plugin: nbdkit's buffers are malloc()ed, not 4 KiB aligned,
# so requests of up to 64 KiB go through an aligned buffer of the server thread's own
# (src/nbd/plugin.c), larger ones through the engine's buffers.  Patterns of 4 KiB,
# 64 KiB and 128 KiB are written to a write-back volume, the server is restarted (so no
# nbdkit buffer still holds them), and every pattern must read back from the cache as
# read hits, then again after a rewrite on the same server (overwrites of cached lines).
. "$(dirname "$0")/lib.sh"
need qemu-io
cd "$T"

make_volume db hdd.img ssd.img
tc attach --cache ssd.img --backing hdd.img --write-policy wb --flush-rate low \
	--device hdd.img >/dev/null

# offset length pattern: 4 KiB at scattered places, 64 KiB (the largest through the
# thread's buffer), 128 KiB (beyond it), one 4 KiB unit inside a line.
REQS="0 4k 0x11
8192k 4k 0x22
12292k 4k 0x33
1m 64k 0x44
4m 128k 0x55
20484k 4k 0x66"

write_all() {
	echo "$REQS" | while read -r off len pat; do
		p=$(printf '0x%02x' $(( $pat ^ $1 )))
		qio "$(uri db)" "write -P $p $off $len"
	done
}
read_all() {
	echo "$REQS" | while read -r off len pat; do
		p=$(printf '0x%02x' $(( $pat ^ $1 )))
		qio "$(uri db)" "read -P $p $off $len"
	done
}

serve ssd.img hdd.img
write_all 0
stop_server
serve ssd.img hdd.img
hits0=$(stats_get db read_hits)
read_all 0
hits1=$(stats_get db read_hits)
[ "$hits1" -gt "$hits0" ] || fail "no read hits counted ($hits0 before, $hits1 after)"
write_all 255
read_all 255
stop_server
log "read hits $hits0 -> $hits1"
