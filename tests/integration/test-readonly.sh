#!/bin/sh
# test-readonly.sh - offline inspection writes nothing: `status --device`, `stats VOL
# --device` and `check` leave every byte of every device as it was (sha256 of each
# device file before and after each command), for
#   - a cache holding dirty data of a write-back volume, shut down cleanly, with and
#     without its backing among the devices (missing backing: state no-backing);
#   - a clean cache of a write-through volume, and that volume's backing alone (its
#     cache missing: served uncached, which a server would record on the backing);
#   - the dirty cache after the server was killed (no clean shutdown: inspection
#     recovers in memory only);
#   - a damaged cache (superblock copy 0 and one metadata copy overwritten).
# Then the devices still serve as before: the killed cache recovers its dirty data.
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

tc create cache ssd-wb.img --size 16M --line-size 64K --unprotected-writeback >/dev/null
tc create backing hdd-wb.img --name wb --size 32M >/dev/null
tc create cache ssd-wt.img --size 16M --line-size 64K >/dev/null
tc create backing hdd-wt.img --name wt --size 32M >/dev/null
tc attach --cache ssd-wb.img --backing hdd-wb.img --write-policy wb --flush-rate low \
	--device hdd-wb.img >/dev/null
tc attach --cache ssd-wt.img --backing hdd-wt.img --write-policy wt \
	--device hdd-wt.img >/dev/null

serve ssd-wb.img hdd-wb.img ssd-wt.img hdd-wt.img
# A slow reader keeps wb busy, so the low-rate cleaner writes nothing back (lib.sh's
# keepalive reads at 500 MiB: beyond these small volumes).
bg fio --name=ka --ioengine=nbd --uri="$(uri wb)" --rw=randread --bs=4k --offset=24m \
	--size=4m --time_based --runtime=300 --rate_iops=50 --iodepth=1
KA=$BG
wait_until 10 grep -q 'connected to NBD server' "$BG_LOG"
qio "$(uri wb)" 'write -P 0x5a 1M 1M' 'write -P 0x5b 20M 1M'
qio "$(uri wt)" 'write -P 0x6a 0 1M' 'read -P 0x6a 0 1M'
[ "$(status_get wb dirty_bytes)" -eq 2097152 ] ||
	fail "dirty after the writes: $(status_get wb dirty_bytes), expected 2097152"
stop_server
keepalive_stop
[ "$(tc check --json ssd-wb.img | json_get - devices 0 volumes name=wb dirty_bytes)" -eq 2097152 ] ||
	fail "the stopped cache does not hold wb's 2 MiB of dirty data"

DEVS="ssd-wb.img hdd-wb.img ssd-wt.img hdd-wt.img"
N=0

# unchanged COMMAND...: run an inspection command (its exit status is not judged here:
# a damaged device makes `check` exit 1) and fail if any device file differs from
# $EXPECT (the sums taken before the round of inspections).
unchanged() {
	set +e
	"$@" >"$T/out.$N" 2>"$T/err.$N"
	set -e
	after=$(sums $DEVS)
	[ "$EXPECT" = "$after" ] || {
		cat "$T/err.$N" >&2
		fail "$*: changed a device ($(echo "$EXPECT" | tr '\n' ' ') -> $(echo "$after" | tr '\n' ' '))"
	}
	N=$((N + 1))
}

# inspect_all LABEL: every inspection command on every combination of the devices.
inspect_all() {
	log "inspection, $1"
	EXPECT=$(sums $DEVS)
	unchanged tc check --json $DEVS
	unchanged tc status --device ssd-wb.img --device hdd-wb.img --json
	unchanged tc status --device ssd-wb.img
	unchanged tc status --device ssd-wt.img --device hdd-wt.img --json
	unchanged tc status --device hdd-wt.img --json
	unchanged tc status --device hdd-wb.img
	unchanged tc status --device ssd-wb.img --device hdd-wb.img --device ssd-wt.img \
		--device hdd-wt.img
	unchanged tc stats wb --device ssd-wb.img --device hdd-wb.img --reset
	unchanged tc stats wb --device ssd-wb.img
	unchanged tc stats wt --device ssd-wt.img --device hdd-wt.img --json
	unchanged tc stats wt --device hdd-wt.img
}

inspect_all "clean shutdown, dirty and clean caches"
# The inspection saw what is there, not nothing.
tc status --device ssd-wb.img --json >st.json
[ "$(json_get st.json volumes name=wb state)" = no-backing ] || fail "wb: not no-backing"
[ "$(json_get st.json volumes name=wb dirty_bytes)" -eq 2097152 ] ||
	fail "status --device CACHE: wb dirty $(json_get st.json volumes name=wb dirty_bytes)"
tc status --device ssd-wb.img --device hdd-wb.img --json >st.json
[ "$(json_get st.json volumes name=wb state)" = cached ] || fail "wb: not cached"
tc status --device hdd-wt.img --json >st.json
[ "$(json_get st.json volumes name=wt state)" != cached ] || fail "wt cached without its cache"

# A server killed: no clean shutdown on the write-back cache.
serve ssd-wb.img hdd-wb.img
qio "$(uri wb)" 'write -P 0x5c 10M 1M'
kill_server
inspect_all "after a crash"
tc status --device ssd-wb.img --device hdd-wb.img --json >st.json
[ "$(json_get st.json volumes name=wb dirty_bytes)" -ge 2097152 ] ||
	fail "after the crash: wb dirty $(json_get st.json volumes name=wb dirty_bytes)"

# Damage: superblock copy 0 of the clean cache, and one copy of a metadata block of the
# dirty cache (its first copy, at md_offset).
dd if=/dev/urandom of=ssd-wt.img bs=4096 count=1 conv=notrunc 2>/dev/null
inspect_all "damaged superblock copy"
tc check ssd-wt.img >chk.txt 2>&1 && fail "check: the damaged cache reads as healthy"
grep -q DAMAGED chk.txt || { cat chk.txt >&2; fail "check: no DAMAGED line"; }

# The devices still serve: the crashed cache recovers its dirty data.
serve ssd-wb.img hdd-wb.img
qio "$(uri wb)" 'read -P 0x5a 1M 1M' 'read -P 0x5b 20M 1M' 'read -P 0x5c 10M 1M'
stop_server
log "inspection wrote nothing: $N commands, every device unchanged"
