#!/bin/sh
# test-fault.sh - fault injection on a running server (`tiercache debug fail|heal`):
# a server started without --testing refuses fail, heal and power-cut with the message
# saying how to start one that allows them, and goes on serving; with --testing, fio
# writing to a write-through volume gets EIO as soon as the backing's writes are
# failed, reads go on, `debug heal` brings the writes back (fio verifies), the chosen
# errno (ENOSPC) reaches the client, --transient --after N fails exactly the N+1th
# write, failing the cache device reaches the engine as cache errors, `status --json`
# shows each device's fault, and bad input (an unknown --op, --errno, --after, device)
# exits 2 or 1 and arms nothing.
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

tc create cache ssd.img --unprotected-writeback --size 128M --line-size 64K >/dev/null
tc create backing hdd.img --name db --size 1G --write-policy wt >/dev/null
tc attach --cache ssd.img --backing hdd.img --device ssd.img --device hdd.img >/dev/null

# faults: the "fault" of every device in status --json, one line each ("DEV OP" or
# "DEV None").
faults() {
	ctl status --json | python3 -c '
import json, sys
for d in json.load(sys.stdin)["devices"]:
    f = d["fault"]
    print(d["device"], f["op"] + "/" + str(f["after"]) + "/" + f["errno_name"] +
          ("/transient" if f["transient"] else "") if f else None)'
}

# qio_fails PATTERN COMMAND: one qemu-io command on the volume must fail with PATTERN.
qio_fails() {
	set +e
	qemu-io -f raw "$(uri db)" -c "$2" >"$T/qio.log" 2>&1
	set -e
	grep -q "$1" "$T/qio.log" || { cat "$T/qio.log" >&2; fail "qemu-io $2: no \"$1\""; }
}

REFUSED='refused: this server was not started for testing; start it with `tiercache serve --testing DEVICE...` to allow fault injection \(debug fail, debug heal\) and power cuts \(debug power-cut\)'

log "a server without --testing refuses the test hooks"
serve ssd.img hdd.img
expect_fail 1 "^tiercache debug: error: fault injection $REFUSED\$" ctl debug fail hdd.img --op write
expect_fail 1 "^tiercache debug: error: heal $REFUSED\$" ctl debug heal hdd.img
expect_fail 1 "^tiercache debug: error: power cut $REFUSED\$" ctl debug power-cut
kill -0 "$SERVER_PID" || fail "the server died of a refused power-cut"
[ "$(ctl status --json | json_get - fault_injection)" = False ] || fail "fault_injection on"
qio "$(uri db)" "write -P 0x5a 0 64k" "read -P 0x5a 0 64k"
stop_server

log "--testing: devices listed, nothing armed"
out=$(tc serve --testing --socket "$SOCK" --control "$CTL" --log "$LOG" ssd.img hdd.img 2>"$T/serve.err") ||
	fail "serve --testing: exit $?"
grep -q 'warning: started for testing' "$T/serve.err" || fail "serve --testing: no warning: $(cat "$T/serve.err")"
SERVER_PID=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
[ "$(ctl status --json | json_get - fault_injection)" = True ] || fail "fault_injection off"
[ "$(ctl status --json | json_get - devices device="$T/hdd.img" role)" = backing ] ||
	fail "hdd.img is not listed as the backing"
[ "$(ctl status --json | json_get - devices device="$T/ssd.img" role)" = cache ] ||
	fail "ssd.img is not listed as the cache"
[ "$(faults)" = "$T/ssd.img None
$T/hdd.img None" ] || fail "faults before any: $(faults)"

log "bad input: exit 2 (usage) or 1 (refused), nothing armed"
expect_fail 2 '--op frob: not one of read, write, flush, all' ctl debug fail hdd.img --op frob
expect_fail 2 '--errno EFOO: not an errno name' ctl debug fail hdd.img --errno EFOO
expect_fail 2 '--errno 0: not an errno name' ctl debug fail hdd.img --errno 0
expect_fail 2 '--after: "ten" is not a whole number' ctl debug fail hdd.img --after ten
expect_fail 2 '--after: "-1" is not a whole number' ctl debug fail hdd.img --after -1
expect_fail 2 'debug heal: --op is an option of debug fail' ctl debug heal hdd.img --op read
expect_fail 2 'debug fail: no DEVICE given' ctl debug fail
expect_fail 2 'debug fail: one DEVICE, not 2' ctl debug fail hdd.img ssd.img
expect_fail 2 'debug frob: unknown; expected fail, heal or power-cut' ctl debug frob
expect_fail 1 "device $T/nothere.img: not a device of this host \\(its devices: $T/ssd.img, $T/hdd.img\\)" \
	ctl debug fail nothere.img
expect_fail 1 "control socket $T/none.sock: .*no server" tc debug fail hdd.img --control "$T/none.sock"
[ "$(faults)" = "$T/ssd.img None
$T/hdd.img None" ] || fail "faults after bad input: $(faults)"

log "fio writing; the backing's writes fail: EIO to the client"
bg fio --name=w --ioengine=nbd --uri="$(uri db)" --rw=randrw --rwmixread=50 --bs=4k \
	--offset=100m --size=64m --iodepth=8 --time_based --runtime=60
FIO=$BG
FIO_LOG=$BG_LOG
wait_until 10 grep -q 'connected to NBD server' "$FIO_LOG"
sleep 1
kill -0 "$FIO" || fail "fio ended early: $(cat "$FIO_LOG")"
ctl debug fail "$T/hdd.img" --op write >"$T/fail.out"
grep -qx "device $T/hdd.img (backing): its writes fail with EIO from the next one on, until \`tiercache debug heal\`" \
	"$T/fail.out" || fail "debug fail said: $(cat "$T/fail.out")"
# fio stops at its first error: well before its 60 s.
for _ in $(seq 1 100); do
	kill -0 "$FIO" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$FIO" 2>/dev/null && fail "fio still running 10 s after the backing's writes failed"
if bg_wait "$FIO"; then fail "fio succeeded although the backing's writes fail"; fi
grep -Eq 'Input/output error|err= *5' "$FIO_LOG" || { cat "$FIO_LOG" >&2; fail "fio: no EIO"; }
[ "$(ctl status --json | json_get - devices device="$T/hdd.img" fault op)" = write ] ||
	fail "status does not show the write fault"
failed=$(ctl status --json | json_get - devices device="$T/hdd.img" failed)
[ "$failed" -ge 1 ] || fail "the fault failed $failed requests"
qio_fails 'write failed: Input/output error' 'write -P 0x77 1m 64k'
qio "$(uri db)" "read -P 0x5a 0 64k"       # reads go on
[ "$(ctl status --json | json_get - devices device="$T/ssd.img" fault)" = None ] ||
	fail "the cache got a fault too"

log "heal: writes succeed again"
ctl debug heal hdd.img >"$T/heal.out"
grep -Eq "^device $T/hdd.img \\(backing\\): healed; the fault failed [0-9]+ request\\(s\\)\$" \
	"$T/heal.out" || fail "debug heal said: $(cat "$T/heal.out")"
[ "$(ctl debug heal hdd.img --json | json_get - was_armed)" = False ] || fail "healed twice"
fio_nbd db healed --rw=randrw --bs=4k --offset=200m --size=16m --iodepth=8 --verify=crc32c \
	--verify_fatal=1 --do_verify=1
qio "$(uri db)" "write -P 0x66 1m 64k" "read -P 0x66 1m 64k"

log "the chosen errno reaches the client: ENOSPC"
ctl debug fail hdd.img --op write --errno ENOSPC >/dev/null
qio_fails 'write failed: No space left on device' 'write -P 0x78 2m 4k'
[ "$(ctl status --json | json_get - devices device="$T/hdd.img" fault errno)" = 28 ] ||
	fail "status: errno of the fault is not 28"
ctl debug heal hdd.img >/dev/null

log "--transient --after 2: the third write fails, only it"
ctl debug fail hdd.img --op write --after 2 --transient >"$T/fail.out"
grep -q "one of its writes fails with EIO once 2 more have passed, then the fault disarms" \
	"$T/fail.out" || fail "debug fail --transient said: $(cat "$T/fail.out")"
[ "$(faults | grep hdd.img)" = "$T/hdd.img write/2/EIO/transient" ] || fail "faults: $(faults)"
qio "$(uri db)" "write -P 0x01 4m 4k"
qio "$(uri db)" "write -P 0x02 5m 4k"
qio_fails 'write failed: Input/output error' 'write -P 0x03 6m 4k'
qio "$(uri db)" "write -P 0x04 7m 4k" "read -P 0x04 7m 4k" "read -P 0x02 5m 4k"
[ "$(faults | grep hdd.img)" = "$T/hdd.img None" ] || fail "transient fault still armed: $(faults)"
[ "$(ctl status --json | json_get - devices device="$T/hdd.img" failed)" = 1 ] ||
	fail "the transient fault failed more than one request"

log "the cache device fails: the engine sees cache errors"
[ "$(stats_get db cache_errors)" = 0 ] || fail "cache errors before the fault"
ctl debug fail ssd.img --op write >/dev/null
qemu-io -f raw "$(uri db)" -c "write -P 0x09 8m 256k" >/dev/null 2>&1 || true
errs=$(stats_get db cache_errors)
[ "$errs" -ge 1 ] || fail "cache errors after failing the cache's writes: $errs"
[ "$(ctl status --json | json_get - devices device="$T/ssd.img" failed)" -ge 1 ] ||
	fail "the cache's fault failed nothing"
ctl debug heal ssd.img >/dev/null
stop_server
log "ok"
