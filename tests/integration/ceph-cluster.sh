#!/bin/sh
# ceph-cluster.sh - a throwaway single-node Ceph cluster for the RBD tests: one monitor
# and one bluestore OSD on a sparse file, all in DIR, on 127.0.0.1 at a free port; no
# manager (pools, images and RBD I/O work without one; `ceph -s` says HEALTH_WARN).
#
#   ceph-cluster.sh start DIR [OSD-BYTES]   start it (about 10 s); prints the path of
#                                           its ceph.conf (give it as rbd:POOL/IMAGE@CONF
#                                           or with `-c` to ceph and rbd); pool "rbd"
#   ceph-cluster.sh stop DIR                stop the daemons (by their pid files)
#   ceph-cluster.sh check                   exit 0 when the Ceph packages are there
#
# Every `ceph` call is wrapped in a timeout: a command that needs a manager would hang.
# Auth is off and the pool has one replica: for tests only.
set -eu

CEPH_BINS="ceph-mon ceph-osd ceph ceph-authtool monmaptool rbd uuidgen"

die() {
	echo "ceph-cluster: error: $*" >&2
	exit 1
}

check() {
	for b in $CEPH_BINS; do
		command -v "$b" >/dev/null 2>&1 || { echo "$b"; return 1; }
	done
	return 0
}

c() { timeout 30 ceph -c "$D/ceph.conf" "$@"; }

# A TCP port nobody listens on (the monitor's), from the kernel's ephemeral range.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
	mkdir -p "$D"
	D=$(cd "$D" && pwd)
	osd_bytes=${1:-4294967296}
	fsid=$(uuidgen)
	port=$(free_port)
	mkdir -p "$D/mon" "$D/osd/ceph-0" "$D/run"
	cat >"$D/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
run dir = $D/run
admin socket = $D/run/\$name.\$pid.asok
log file = $D/\$name.log
log to stderr = false
err to stderr = true
pid file = $D/run/\$name.pid
keyring = $D/keyring
mon data = $D/mon/\$cluster-\$id
osd data = $D/osd/\$cluster-\$id
# A client killed with -9 lets go of its watches (and so of an image's exclusive
# lock) after this many seconds, not 30.
osd client watch timeout = 5
ms bind ipv6 = false
[osd]
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $osd_bytes
bluestore fsck on mkfs = false
bluestore fsck on mount = false
osd op num shards = 2
osd memory target = 1073741824
EOF
	ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' \
		>/dev/null
	ceph-authtool "$D/keyring" --gen-key -n client.admin --cap mon 'allow *' \
		--cap osd 'allow *' --cap mgr 'allow *' >/dev/null
	monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$D/monmap" \
		>/dev/null
	ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" \
		>"$D/mkfs-mon.log" 2>&1 || die "ceph-mon --mkfs failed (see $D/mkfs-mon.log)"
	ceph-mon -c "$D/ceph.conf" -i a || die "ceph-mon did not start (see $D/mon.a.log)"
	osd_uuid=$(uuidgen)
	id=$(c osd new "$osd_uuid") || die "ceph osd new failed"
	mkdir -p "$D/osd/ceph-$id"
	ceph-osd -c "$D/ceph.conf" -i "$id" --mkfs --osd-uuid "$osd_uuid" \
		>"$D/mkfs-osd.log" 2>&1 || die "ceph-osd --mkfs failed (see $D/mkfs-osd.log)"
	ceph-osd -c "$D/ceph.conf" -i "$id" 2>>"$D/osd-start.log" || die "ceph-osd did not start (see $D/osd.$id.log)"
	i=0
	until c osd stat 2>/dev/null | grep -q '1 up'; do
		i=$((i + 1))
		[ "$i" -lt 60 ] || die "the OSD is not up after 60 s (see $D/osd.$id.log)"
		sleep 1
	done
	c osd pool create rbd 8 8 >/dev/null 2>&1 || die "ceph osd pool create failed"
	c osd pool application enable rbd rbd >/dev/null 2>&1 ||
		die "ceph osd pool application enable failed"
	echo "$D/ceph.conf"
}

stop() {
	[ -d "$D/run" ] || return 0
	for f in "$D"/run/osd.*.pid "$D"/run/mon.*.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		kill -TERM "$p" 2>/dev/null || continue
		i=0
		while kill -0 "$p" 2>/dev/null && [ "$i" -lt 50 ]; do
			sleep 0.2
			i=$((i + 1))
		done
		kill -KILL "$p" 2>/dev/null || true
	done
}

case "${1:-}" in
check)
	check >/dev/null
	;;
start)
	[ $# -ge 2 ] || die "usage: $0 start DIR [OSD-BYTES]"
	if ! missing=$(check); then
		die "$missing not found (install ceph-mon ceph-osd ceph-common)"
	fi
	D=$2
	shift 2
	start "$@"
	;;
stop)
	[ $# -eq 2 ] || die "usage: $0 stop DIR"
	D=$2
	stop
	;;
*)
	die "usage: $0 start DIR [OSD-BYTES] | stop DIR | check"
	;;
esac
