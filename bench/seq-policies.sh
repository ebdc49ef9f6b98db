#!/bin/sh
# seq-policies.sh - sequential 1 MiB reads and writes through NBD, each write policy
# against the backing served uncached, alternating, as ratios (docs/benchmarks.md,
# "Sequential reads and writes in every policy").
#
# Every target is served by its own `tiercache serve` over its own sparse files: an
# emulated 7,200 rpm HDD (profiles/hdd.conf) as backing and, for the cached targets,
# an emulated SATA SSD (profiles/sata-ssd.conf) as cache.  For each round, workload
# (write, then read) and queue depth, fio (nbd engine, one connection) runs on every
# target in turn, each on a region of its own that nothing read or wrote before; the
# report gives per queue depth the median over the rounds of each target's MB/s over
# uncached's in the same round, and the median p99 completion latency.
#
#   bench/seq-policies.sh [--rounds N] [--secs S] [--qd "1 4 16 64"]
#                         [--policies "wt wb wa pt"] [--tmpdir DIR]
#                         [--compare OLD_TIERCACHE] [--tiercache PATH]
#
# --compare adds a target "old-wb": write-back served by another build's tiercache
# (before/after in one run).  Needs fio, nbdkit and python3.
set -eu

ROUNDS=3 SECS=3 QDS="1 4 16 64" POLICIES="wt wb wa pt" TMP=${TMPDIR:-/tmp} OLD=
HERE=$(cd "$(dirname "$0")/.." && pwd)
TC=${TIERCACHE:-$HERE/build/src/cli/tiercache}
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--qd) QDS=$2; shift 2 ;;
	--policies) POLICIES=$2; shift 2 ;;
	--tmpdir) TMP=$2; shift 2 ;;
	--compare) OLD=$2; shift 2 ;;
	--tiercache) TC=$2; shift 2 ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "seq-policies.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for p in fio nbdkit python3; do
	command -v $p >/dev/null || { echo "seq-policies.sh: $p is needed" >&2; exit 2; }
done
[ -x "$TC" ] || { echo "seq-policies.sh: $TC: not built (meson setup build && ninja -C build)" >&2; exit 2; }

D=$(mktemp -d "$TMP/tc-seq-XXXXXX")
PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	rm -rf "$D"
}
trap cleanup EXIT INT TERM

# setup NAME TIERCACHE POLICY|none: devices and a server for one target.
setup() {
	n=$1 t=$2 pol=$3
	mkdir -p "$D/$n"
	truncate -s "$((HDD_GIB))G" "$D/$n/hdd.img"
	truncate -s 1G "$D/$n/ssd.img"
	hdd=emu:hdd:$D/$n/hdd.img ssd=emu:sata-ssd:$D/$n/ssd.img
	"$t" create backing "$hdd" --name v >/dev/null
	if [ "$pol" = none ]; then
		devs=$hdd
	else
		"$t" create cache "$ssd" --unprotected-writeback >/dev/null
		"$t" attach --cache "$ssd" --backing "$hdd" --write-policy "$pol" >/dev/null
		devs="$ssd $hdd"
	fi
	# shellcheck disable=SC2086
	out=$("$t" serve --socket "$D/$n/nbd.sock" --control "$D/$n/ctl.sock" \
		--log "$D/$n/log" $devs)
	PIDS="$PIDS $(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')"
}

# A region of 3 GiB of its own for every run of a target (2 workloads x the depths x
# the rounds), past the superblock: nothing a run reads or writes was touched before,
# so no cache holds any of it.  The files stay sparse (holes punched after each run).
NQD=$(echo $QDS | wc -w)
HDD_GIB=$((1 + 3 * 2 * NQD * ROUNDS + 1))
TARGETS=uncached
setup uncached "$TC" none
for p in $POLICIES; do
	setup "$p" "$TC" "$p"
	TARGETS="$TARGETS $p"
done
if [ -n "$OLD" ]; then
	setup old-wb "$OLD" wb
	TARGETS="$TARGETS old-wb"
fi

R=$D/results.txt
: >"$R"
step=0
for round in $(seq "$ROUNDS"); do
	for rw in write read; do
		for qd in $QDS; do
			for n in $TARGETS; do
				off=$((1 + step))
				fio --name=s --ioengine=nbd \
					--uri="nbd+unix:///v?socket=$D/$n/nbd.sock" --rw=$rw \
					--bs=1M --iodepth="$qd" --runtime="$SECS" --time_based \
					--offset=${off}G --size=3G --output-format=json \
					--output="$D/fio.json" >/dev/null 2>&1
				python3 - "$D/fio.json" "$round $rw $qd $n" >>"$R" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
op = sys.argv[2].split()[1]
d = j[op]
print(sys.argv[2], d["bw"] * 1024 / 1e6, d["clat_ns"]["percentile"]["99.000000"] / 1e6)
EOF
				# The region back to a hole: the files stay sparse.
				fallocate -p -o $((off << 30)) -l $((3 << 30)) "$D/$n/hdd.img" 2>/dev/null || true
			done
			step=$((step + 3))
		done
	done
	echo "seq-policies.sh: round $round of $ROUNDS done" >&2
done

python3 - "$R" "$TARGETS" "$QDS" <<'EOF'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
targets = sys.argv[2].split()
qds = [int(q) for q in sys.argv[3].split()]
mbs, p99 = {}, collections.defaultdict(list)
for r, rw, qd, n, bw, lat in rows:
    mbs[(r, rw, int(qd), n)] = float(bw)
    p99[(rw, int(qd), n)].append(float(lat))
rounds = sorted({r for r, *_ in rows})
others = [t for t in targets if t != "uncached"]
print("sequential 1 MiB, MB/s of each target over uncached in the same round "
      "(median of %d rounds); p99 ms (median)" % len(rounds))
print("%-6s %3s %10s %s" % ("", "QD", "uncached", "  ".join("%9s" % t for t in others)))
for rw in ("write", "read"):
    for qd in qds:
        u = [mbs[(r, rw, qd, "uncached")] for r in rounds]
        ratios = ["%9.3f" % statistics.median(
            [mbs[(r, rw, qd, t)] / mbs[(r, rw, qd, "uncached")] for r in rounds])
            for t in others]
        print("%-6s %3d %6.1f MB/s %s" % (rw, qd, statistics.median(u), "  ".join(ratios)))
        print("%-6s %3s %7.0f ms %s" % ("", "p99", statistics.median(p99[(rw, qd, "uncached")]),
              "  ".join("%6.0f ms" % statistics.median(p99[(rw, qd, t)]) for t in others)))
EOF
