#!/bin/sh
# test-rbd.sh - Ceph RBD images as backings ("rbd:POOL/IMAGE@CONF") against a throwaway
# single-node cluster (ceph-cluster.sh: one monitor, one OSD on a sparse file).  One
# server caches two images on one local cache: "db" in write-back, "logs" in
# write-through; fio writes and verifies both through tiercache (crc32c).  While the
# server runs, a second opener is refused (the image's exclusive lock), and the image
# records the cache that holds db's dirty data (metadata tiercache.dirty).  kill -9:
# an opener without the cache is still refused (the record names the cache), the
# server comes back from the same devices and fio verifies again.  Detach drains:
# the record goes, a second opener is accepted, and `rbd export` of each image holds
# every block (fio verifies the exported files without tiercache).
. "$(dirname "$0")/lib.sh"
need fio
CLUSTER="$(dirname "$0")/ceph-cluster.sh"
CLUSTER=$(abs_path "$CLUSTER")
if ! sh "$CLUSTER" check; then
	echo "SKIP: the Ceph packages (ceph-mon, ceph-osd, ceph-common) are not installed" >&2
	exit 77
fi
if ! "$TIERCACHE" create backing "rbd:x/y@$T/none.conf" --name x 2>&1 |
	grep -q "cannot read the Ceph configuration"; then
	echo "SKIP: this tiercache was built without librbd" >&2
	exit 77
fi
cd "$T"
# The cluster stops first; cleanup then sees the script's own exit status.
with_status() { return "$1"; }
trap '_rc=$?; set +e; sh "$CLUSTER" stop "$T/ceph" >/dev/null 2>&1; with_status $_rc; cleanup' EXIT

CONF=$(sh "$CLUSTER" start "$T/ceph" 2147483648) || fail "the Ceph test cluster did not start"
rbdc() { timeout 60 rbd -c "$CONF" "$@"; }
rbdc create --size 128M --object-size 1M rbd/img1
rbdc create --size 128M --object-size 1M rbd/img2
R1="rbd:rbd/img1@$CONF"
R2="rbd:rbd/img2@$CONF"
dirty_record() { rbdc image-meta get rbd/img1 tiercache.dirty 2>/dev/null; }

# Bad input: a spec without an image, an image that is not there.
expect_fail 1 'expected rbd:POOL/IMAGE' tc create backing "rbd:img1@$CONF" --name db
expect_fail 1 'image "nosuch" in pool "rbd"' tc create backing "rbd:rbd/nosuch@$CONF" --name db

tc create cache ssd.img --unprotected-writeback --size 64M >/dev/null
tc create backing "$R1" --name db --write-policy wb --flush-rate low >/dev/null ||
	fail "create backing on $R1"
tc create backing "$R2" --name logs --write-policy wt >/dev/null ||
	fail "create backing on $R2"
tc attach --cache ssd.img --backing "$R1" --device "$R1" >/dev/null || fail "attach db"
tc attach --cache ssd.img --backing "$R2" --device "$R2" >/dev/null || fail "attach logs"
serve ssd.img "$R1" "$R2"
[ "$(status_get db state)" = cached ] || fail "db not cached: $(ctl status --json)"
[ "$(status_get logs state)" = cached ] || fail "logs not cached"

rec=$(dirty_record) || fail "db in write-back: no tiercache.dirty record on rbd/img1"
echo "$rec" | grep -Eq "^[0-9a-f-]{36}@$(hostname)\$" ||
	fail "tiercache.dirty is \"$rec\", not CACHE-UUID@$(hostname)"
if rbdc image-meta get rbd/img2 tiercache.dirty >/dev/null 2>&1; then
	fail "logs in write-through: rbd/img2 has a tiercache.dirty record"
fi

W="--offset=0 --size=16m --rw=randrw --rwmixread=30 --bs=4k --iodepth=16 \
--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=7"
# A slow reader keeps db busy, so the low-rate cleaner (it waits for 1 s without client
# I/O) leaves the dirty data in the cache until the kill.
bg fio --name=ka --ioengine=nbd --uri="$(uri db)" --rw=randread --bs=4k --offset=100m \
	--size=16m --time_based --runtime=300 --rate_iops=50 --iodepth=1
KA=$BG
wait_until 10 grep -q 'connected to NBD server' "$BG_LOG"
# shellcheck disable=SC2086  # W is a list of options
fio_nbd logs w2 $W --do_verify=1
# shellcheck disable=SC2086
fio_nbd db w1 $W --do_verify=1
dirty=$(stats_get db dirty_bytes)
[ "$dirty" -gt 0 ] || fail "write-back over rbd: no dirty data after fio (dirty $dirty)"

# A second opener while the server lives: the exclusive lock refuses it.
SOCK2=$T/nbd2.sock CTL2=$T/ctl2.sock
expect_fail 1 'the server did not start' tc serve --socket "$SOCK2" --control "$CTL2" \
	--log "$T/serve2.log" "$R1"
grep -q "exclusive lock is held by" "$T/serve2.log" ||
	{ cat "$T/serve2.log" >&2; fail "second opener: no exclusive-lock message"; }

# kill -9: dirty data stays in the cache; the record stays on the image.
[ "$(stats_get db dirty_bytes)" -gt 0 ] || fail "db clean before the kill"
kill_server
bg_wait "$KA" || true
[ "$(dirty_record)" = "$rec" ] || fail "the record changed with the kill: $(dirty_record)"
# An opener without the cache (once the dead client's lock has lapsed) is refused,
# naming the cache.
n=0
while :; do
	rm -f "$T/serve2.log"
	set +e
	tc serve --socket "$SOCK2" --control "$CTL2" --log "$T/serve2.log" "$R1" \
		>/dev/null 2>&1
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || fail "served $R1 uncached while cache $rec holds its dirty data"
	grep -q "exclusive lock is held" "$T/serve2.log" || break
	n=$((n + 1))
	[ "$n" -lt 30 ] || fail "the killed server's exclusive lock never lapsed"
	sleep 1
done
grep -qF "cache $rec holds its dirty data" "$T/serve2.log" ||
	{ cat "$T/serve2.log" >&2; fail "uncached opener: no message naming cache $rec"; }
# Another cache is refused too, offline, naming the cache.
tc create cache ssd2.img --unprotected-writeback --size 64M >/dev/null
expect_fail 1 "cache $rec holds its dirty data" \
	tc attach --cache ssd2.img --backing "$R1" --device "$R1"

# Back from the same devices: the dirty data came back with the cache.
n=0
until tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" ssd.img "$R1" "$R2" \
	>"$T/serve.out" 2>&1; do
	n=$((n + 1))
	[ "$n" -lt 30 ] || { cat "$T/serve.out" "$LOG" >&2; fail "restart after kill -9"; }
	sleep 1
done
SERVER_PID=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/serve.out")
ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
[ "$(status_get db state)" = cached ] || fail "db not cached after the restart"
# shellcheck disable=SC2086
fio_nbd db v1 $W --verify_only=1
# shellcheck disable=SC2086
fio_nbd logs v2 $W --verify_only=1

# Detach drains and flushes: the record goes, a second opener is accepted.
ctl detach db >/dev/null || fail "detach db"
ctl detach logs >/dev/null || fail "detach logs"
if r=$(dirty_record); then
	fail "rbd/img1 still records cache \"$r\" after detach"
fi
stop_server
serve "$R1"
[ "$(status_get db state)" = uncached ] || fail "db not served uncached after detach"
stop_server

# The images hold every block: verify `rbd export` copies without tiercache (the
# volume's data starts 1 MiB into the backing, after its superblock).
for i in 1 2; do
	rbdc export "rbd/img$i" "export$i.img" >/dev/null 2>&1 || fail "rbd export rbd/img$i"
	# fio's headers hold the volume's offsets: verify the volume's part of the copy.
	dd if="export$i.img" of="vol$i.img" bs=1M skip=1 status=none
	set +e
	fio --name=v --ioengine=psync --filename="vol$i.img" --verify_state_save=0 \
		--offset=0 --size=16m --rw=randrw --rwmixread=30 --bs=4k --verify=crc32c \
		--verify_fatal=1 --randrepeat=1 --randseed=7 --verify_only=1 \
		>"direct$i.log" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 0 ] && ! grep -Eqi 'verify: bad|bad magic|crc32c: verify failed' \
		"direct$i.log" ||
		{ tail -n 20 "direct$i.log" >&2; fail "rbd/img$i after detach: fio verify (exit $rc)"; }
	rm -f "export$i.img" "vol$i.img"
done
log "rbd: wb and wt over RBD verified across kill -9 and detach; one writer while dirty"
