#!/bin/sh
# test-priority.sh - a volume's priority on the devices through a running server: set
# live while fio verifies the volume, shown by set and status (--json), refused with a
# clear error for a bad value (exit 2, nothing changed), kept on the devices across a
# restart.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

make_volume db hdd.img ssd.img --write-policy wt
make_volume db2 hdd2.img ssd.img --write-policy wb
tc attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
tc attach --cache ssd.img --backing hdd2.img --device hdd2.img >/dev/null
serve ssd.img hdd.img hdd2.img

[ "$(status_get db settings priority)" = normal ] || fail "default priority: $(status_get db settings priority)"

# Live changes under fio verify on the volume itself.
bg fio --name=v --ioengine=nbd --uri="$(uri db)" --verify_state_save=0 --size=16m \
	--rw=randrw --rwmixread=30 --bssplit=4k/60:64k/40 --iodepth=16 \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --randseed=5
V=$BG
for p in high low normal high; do
	ctl set db --priority "$p" | grep -q "priority $p" || fail "set db --priority $p"
	sleep 0.3
done
bg_wait "$V" || { tail -n 20 "$BG_LOG" >&2; fail "fio verify failed during priority changes"; }
[ "$(status_get db settings priority)" = high ] || fail "db not high after the changes"
ctl set db2 --priority low >/dev/null || fail "set db2 --priority low"

# A bad value: refused before anything is sent, naming the value; nothing changed.
expect_fail 2 'priority: "urgent" is not high, normal or low' ctl set db --priority urgent
expect_fail 2 'priority' ctl set db --priority ""
[ "$(status_get db settings priority)" = high ] || fail "a refused set changed db"
[ "$(status_get db2 settings priority)" = low ] || fail "a refused set changed db2"

# On the devices.
stop_server
serve ssd.img hdd.img hdd2.img
[ "$(status_get db settings priority)" = high ] || fail "db's priority lost on restart"
[ "$(status_get db2 settings priority)" = low ] || fail "db2's priority lost on restart"
stop_server
echo "PASS"
