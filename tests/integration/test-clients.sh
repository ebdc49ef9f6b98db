#!/bin/sh
# test-clients.sh - the NBD clients people use against a served volume: qemu-img
# convert writes a file of known content into the export, qemu-io writes patterns at
# several offsets and sizes (overwrites inside a cache line, a single sector, the last
# MiB, write-zeroes) and reads each back with -P, nbdinfo shows the exports and sizes,
# nbdcopy copies the whole export out (its sha256 must equal that of a local file given
# the same writes) and copies that file into a second volume (qemu-img compare: the two
# volumes are identical).  The server is then restarted (write-back: dirty data kept
# in the cache) and both volumes read again.
. "$(dirname "$0")/lib.sh"
need qemu-io qemu-img nbdcopy nbdinfo
cd "$T"

tc create cache ssd.img --unprotected-writeback --size 64M >/dev/null
for v in db db2; do
	tc create backing "$v.img" --name "$v" --size 256M --write-policy wb --flush-rate low \
		>/dev/null
	tc attach --cache ssd.img --backing "$v.img" --device "$v.img" >/dev/null
done
serve ssd.img db.img db2.img
SIZE=$(status_get db size)
[ "$SIZE" -eq $((255 * 1024 * 1024)) ] || fail "volume size $SIZE, expected 255 MiB"
U=$(uri db)
U2=$(uri db2)

# --- nbdinfo: both exports listed, sizes as served ------------------------------------
nbdinfo --list "nbd+unix:///?socket=$SOCK" >list.txt || fail "nbdinfo --list: exit $?"
grep -q 'export="db"' list.txt || fail "nbdinfo --list does not show db: $(cat list.txt)"
grep -q 'export="db2"' list.txt || fail "nbdinfo --list does not show db2: $(cat list.txt)"
[ "$(nbdinfo --size "$U")" -eq "$SIZE" ] || fail "nbdinfo --size $(nbdinfo --size "$U")"
[ "$(qemu-img info -f raw --output=json "$U" | json_get - virtual-size)" -eq "$SIZE" ] ||
	fail "qemu-img info: wrong virtual size"

# --- qemu-img convert: 8 MiB of random data into the start of the export ------------
head -c 8M /dev/urandom >src.bin
qemu-img convert -n -f raw -O raw src.bin "$U" || fail "qemu-img convert into $U: exit $?"

# --- qemu-io: patterns -----------------------------------------------------------------
# The same writes go to a local sparse file, the reference for whole-volume checksums.
truncate -s "$SIZE" expected.img
dd if=src.bin of=expected.img conv=notrunc status=none
# apply TARGET: the pattern writes (offsets in bytes, K and M suffixes: qemu-io's).
apply() {
	qemu-io -f raw "$1" \
		-c 'write -P 0xab 16M 1M' \
		-c 'write -P 0xee 16452k 4k' \
		-c 'write -P 0x5a 20M 4k' \
		-c 'write -P 0x11 24M 64k' \
		-c 'write -P 0x22 24636k 12k' \
		-c 'write -P 0x33 200M 512' \
		-c 'write -P 0x44 3M 64k' \
		-c 'write -P 0x77 40M 128k' \
		-c 'write -z 40M 64k' \
		-c 'write -P 0xcd 254M 1M' >"$T/qio-write.log" 2>&1 ||
		{ cat "$T/qio-write.log" >&2; fail "qemu-io writes to $1: exit $?"; }
}
apply expected.img
apply "$U"

# check TARGET: every pattern read back (-P fails on any byte that differs).
check() {
	qemu-io -f raw "$1" \
		-c 'read -P 0xab 16M 64k' \
		-c 'read -P 0xee 16452k 4k' \
		-c 'read -P 0xab 16456k 952k' \
		-c 'read -P 0x5a 20M 4k' \
		-c 'read -P 0 20484k 60k' \
		-c 'read -P 0x11 24M 60k' \
		-c 'read -P 0x22 24636k 12k' \
		-c 'read -P 0 24648k 4k' \
		-c 'read -P 0x33 200M 512' \
		-c 'read -P 0 209715712 3584' \
		-c 'read -P 0x44 3M 64k' \
		-c 'read -P 0 40M 64k' \
		-c 'read -P 0x77 42008576 64k' \
		-c 'read -P 0xcd 254M 1M' \
		-c 'read -P 0 100M 1M' >"$T/qio-read.log" 2>&1
	_rc=$?
	if [ "$_rc" -ne 0 ] || grep -q 'Pattern verification failed' "$T/qio-read.log"; then
		cat "$T/qio-read.log" >&2
		fail "qemu-io read-back of $1: exit $_rc"
	fi
	[ "$(grep -c '^read ' "$T/qio-read.log")" -eq 15 ] ||
		fail "qemu-io: not every read ran: $(cat "$T/qio-read.log")"
}
check expected.img
check "$U"
# The check itself: a wrong pattern must be reported.
set +e
qemu-io -f raw "$U" -c 'read -P 0xac 16M 4k' >qio-neg.log 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q 'Pattern verification failed' qio-neg.log ||
	fail "qemu-io did not report a wrong pattern (exit $rc): $(cat qio-neg.log)"

# --- whole-volume checksums --------------------------------------------------------------
want=$(sums expected.img)
# copy_sum URI: sha256 of the whole export, copied out with nbdcopy.
copy_sum() {
	rm -f out.img
	nbdcopy "$1" out.img || fail "nbdcopy $1 out.img: exit $?"
	[ "$(stat -c %s out.img)" -eq "$SIZE" ] || fail "nbdcopy wrote $(stat -c %s out.img) bytes"
	sums out.img
}
[ "$(copy_sum "$U")" = "$want" ] || fail "nbdcopy of db: sha256 differs from the expected content"
cmp -n 3145728 src.bin out.img || fail "the qemu-img convert data differs (first 3 MiB)"

# nbdcopy into the second volume (parallel writes, zero detection), then compare.
nbdcopy expected.img "$U2" || fail "nbdcopy expected.img $U2: exit $?"
qemu-img compare -f raw -F raw "$U" "$U2" >cmp.log 2>&1 || fail "qemu-img compare db db2: $(cat cmp.log)"
qemu-img compare -f raw -F raw expected.img "$U2" >cmp.log 2>&1 ||
	fail "qemu-img compare expected db2: $(cat cmp.log)"

dirty=$(status_get db dirty_bytes)
dirty2=$(status_get db2 dirty_bytes)
hits=$(stats_get db read_hits)
log "before restart: dirty db $dirty db2 $dirty2, read hits db $hits"
[ "$hits" -gt 0 ] || fail "no read hits on db"
[ "$(stats_get db errors)" -eq 0 ] || fail "db counted errors"

# --- after a restart ----------------------------------------------------------------------
stop_server
serve ssd.img db.img db2.img
check "$U"
[ "$(copy_sum "$U")" = "$want" ] || fail "after restart: nbdcopy of db differs"
[ "$(copy_sum "$U2")" = "$want" ] || fail "after restart: nbdcopy of db2 differs"
# Read back through qemu-img convert too (another reader: its own request sizes).
qemu-img convert -f raw -O raw "$U2" conv.img || fail "qemu-img convert out of db2: exit $?"
[ "$(sums conv.img)" = "$want" ] || fail "qemu-img convert out of db2 differs"
stop_server
log "ok"
