#!/bin/sh
# bench-rbd.sh - 4 KiB random reads and writes on a Ceph RBD image, through tiercache
# (the hot set, 16 MiB, in the cache) against librbd alone (fio's rbd engine), on a
# throwaway one-OSD cluster (tests/integration/ceph-cluster.sh).  A and B alternate,
# ROUNDS rounds (default 3) of RUNTIME seconds (default 5) each at queue depth 16;
# prints each round's IOPS and the median ratio tiercache / librbd.
#   sh bench/rbd/bench-rbd.sh BUILD-DIR [ROUNDS] [RUNTIME]
# Reads: write-through volume, hot set read once first.  Writes: write-back volume
# (the writes complete in the cache; the cleaner writes them back later).
set -eu
B=$(cd "${1:?usage: bench-rbd.sh BUILD-DIR [ROUNDS] [RUNTIME]}" && pwd)
ROUNDS=${2:-3}
RT=${3:-5}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TC=$B/src/cli/tiercache
T=$(mktemp -d "${TMPDIR:-/tmp}/tc-bench-rbd.XXXXXX")
PID=
done_() {
	[ -z "$PID" ] || kill -TERM "$PID" 2>/dev/null || true
	sleep 1
	sh "$SRC/tests/integration/ceph-cluster.sh" stop "$T/ceph" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap done_ EXIT
CONF=$(sh "$SRC/tests/integration/ceph-cluster.sh" start "$T/ceph" 2147483648)
# fio's rbd engine reads the cluster from $CEPH_CONF; librbd's RAM cache off for it too,
# as tiercache's device has it (docs/remote.md).
export CEPH_CONF="$CONF" CEPH_ARGS="--rbd_cache=false"
rbd -c "$CONF" create --size 256M rbd/rd
rbd -c "$CONF" create --size 256M rbd/wr
rbd -c "$CONF" create --size 256M rbd/raw
"$TC" create cache "$T/ssd.img" --unprotected-writeback --size 128M --line-size 4K >/dev/null
"$TC" create backing "rbd:rbd/rd@$CONF" --name rd --write-policy wt >/dev/null
"$TC" create backing "rbd:rbd/wr@$CONF" --name wr --write-policy wb --flush-rate low >/dev/null
out=$("$TC" serve --socket "$T/nbd.sock" --control "$T/ctl.sock" --log "$T/serve.log" \
	"$T/ssd.img" "rbd:rbd/rd@$CONF" "rbd:rbd/wr@$CONF")
PID=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
"$TC" attach --cache "$T/ssd.img" --backing "rbd:rbd/rd@$CONF" --control "$T/ctl.sock" >/dev/null
"$TC" attach --cache "$T/ssd.img" --backing "rbd:rbd/wr@$CONF" --control "$T/ctl.sock" >/dev/null
COMMON="--bs=4k --size=16m --iodepth=16 --direct=1 --output-format=json"
iops() { python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))'; }
tcfio() { fio --name=t --ioengine=nbd --uri="nbd+unix:///$1?socket=$T/nbd.sock" $COMMON --rw="$2" --time_based --runtime="$RT" >"$T/fio.json" 2>"$T/fio.err" || { cat "$T/fio.err" >&2; exit 1; }; sed -n "/^{/,\$p" "$T/fio.json" | iops; }
rbdfio() { fio --name=r --ioengine=rbd --clientname=admin --pool=rbd --rbdname=raw $COMMON --rw="$1" --time_based --runtime="$RT" >"$T/fio.json" 2>"$T/fio.err" || { cat "$T/fio.err" >&2; exit 1; }; sed -n "/^{/,\$p" "$T/fio.json" | iops; }
# Fill: the raw image and both volumes written once, the read volume's hot set read once.
fio --name=f --ioengine=rbd --clientname=admin --pool=rbd --rbdname=raw --bs=1m --size=16m --rw=write >/dev/null 2>&1
fio --name=f --ioengine=nbd --uri="nbd+unix:///rd?socket=$T/nbd.sock" --bs=1m --size=16m --rw=write >/dev/null
fio --name=f --ioengine=nbd --uri="nbd+unix:///rd?socket=$T/nbd.sock" --bs=4k --size=16m --rw=read >/dev/null
for op in randread randwrite; do
	vol=rd; [ "$op" = randwrite ] && vol=wr
	ratios=""
	for r in $(seq 1 "$ROUNDS"); do
		a=$(rbdfio "$op"); b=$(tcfio "$vol" "$op")
		ratio=$(python3 -c "print(round($b/$a, 2))")
		echo "$op round $r: librbd $a IOPS, tiercache $b IOPS, ratio $ratio"
		ratios="$ratios $ratio"
	done
	echo "$op median ratio tiercache/librbd: $(python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" $ratios) ($ROUNDS rounds, load $(cut -d' ' -f1 /proc/loadavg))"
done
"$TC" status --control "$T/ctl.sock"
