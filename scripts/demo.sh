#!/bin/sh
# demo.sh - the demo behind `make demo`: tiercache's main job on a built-in default.
#
#   1. an emulated HDD (the slow backing) and an emulated SATA SSD (the cache), sparse
#      files in a temporary folder; a volume created, attached and served over NBD;
#      fio drives it for a few seconds, `tiercache status` and `stats` show the cache
#   2. `tiercache bench --quick`: uncached vs write-through vs write-back on random
#      4 KiB reads and writes and the database (OLTP) pattern, through NBD, in one run
#   3. `tiercache replay`: the CloudPhysics block trace through a volume in pass-through
#      (no caching) and in write-back, closed loop at queue depth 16
#
# About 2 minutes after the build on 2 cores; at most about 1.5 GiB of real disk in the
# temporary folder ($TMPDIR, else /tmp), removed at the end, also on Ctrl-C.  The
# results (JSON, CSV, plots) stay in $BUILD/demo/.
# Expects a built tree: run it through `make demo`, or set BUILD to the build dir.
set -eu

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TC="$BUILD/src/cli/tiercache"
OUT="$BUILD/demo"
# The repository's own traces (traces/README.md), or a folder laid out like it.
TRACES=${TC_TRACES_DIR:-$(pwd)/traces}
TRACE="$TRACES/libcachesim/cloudPhysicsIO.vscsi.xz"

say() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

[ -x "$TC" ] || die "$TC was not built; run 'make' first"
command -v fio >/dev/null 2>&1 || die "fio is not installed (scripts/install-deps.sh installs it)"
command -v nbdkit >/dev/null 2>&1 || die "nbdkit is not installed (scripts/install-deps.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tiercache-demo.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		# The server removes its control socket when it has stopped.
		i=0
		while [ -S "$tmp/control.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"
start=$(date +%s)
failed=

# ---- 1. a cached volume, served ----------------------------------------------------
hdd="emu:hdd:$tmp/hdd.img"
ssd="emu:sata-ssd:$tmp/ssd.img"
say "1. an emulated 8 GiB HDD and a 256 MiB SATA SSD (sparse files in $tmp)"
"$TC" create backing "$hdd" --name demo --size 8G
"$TC" create cache "$ssd" --unprotected-writeback --size 256M
"$TC" attach --cache "$ssd" --backing "$hdd" --write-policy wb \
	--device "$ssd" --device "$hdd" --control "$tmp/control.sock"
say "serving it over NBD: tiercache serve"
out=$("$TC" serve --socket "$tmp/nbd.sock" --control "$tmp/control.sock" \
	--log "$tmp/serve.log" "$ssd" "$hdd")
echo "$out"
server_pid=$(echo "$out" | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
for pass in "cold cache" "again, same seed: the same blocks first"; do
	say "fio: 5 s of random 4 KiB reads at queue depth 16 over 512 MiB ($pass)"
	fio --name=demo --ioengine=nbd --uri="nbd+unix:///demo?socket=$tmp/nbd.sock" \
		--rw=randread --bs=4k --iodepth=16 --size=512m --runtime=5 --time_based \
		--randseed=1 --output-format=terse --terse-version=3 --output="$tmp/fio.txt" \
		>/dev/null
	awk -F';' '{ printf "read: %.0f IOPS, mean latency %.2f ms\n", $8, $40 / 1000 }' \
		"$tmp/fio.txt"
	"$TC" stats demo --control "$tmp/control.sock" --reset |
		grep -E '^(reads|read_hits|read_misses|promotions|cached_bytes):' | paste -sd' '
done
"$TC" status --control "$tmp/control.sock"
kill "$server_pid"
i=0
while [ -S "$tmp/control.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
server_pid=

# ---- 2. the comparison -------------------------------------------------------------
say "2. tiercache bench --quick: uncached vs write-through vs write-back, same devices, one run"
if ! "$TC" bench --quick --targets uncached,wt,wb --workloads rand-read,db,rand-write \
	--tmpdir "$tmp" --out "$OUT/bench"; then
	failed="$failed bench"
fi

# ---- 3. a real trace ---------------------------------------------------------------
say "3. tiercache replay: the CloudPhysics trace (its first 20,000 requests), 16 in flight, through a volume in pass-through (no caching) and in write-back, on emulated devices"
if [ ! -f "$TRACE" ]; then
	echo "demo: the trace $TRACE is missing (the repository carries it in traces/; TC_TRACES_DIR names another folder laid out like it)" >&2
	failed="$failed replay"
else
	for wp in pt wb; do
		if ! "$TC" replay "$TRACE" --format vscsi --limit 20000 --queue-depth 16 \
			--write-policy $wp --tmpdir "$tmp" --quiet \
			>"$OUT/replay-$wp.txt" 2>"$tmp/replay.err"; then
			cat "$tmp/replay.err" >&2
			echo "demo: tiercache replay --write-policy $wp failed (see above)" >&2
			failed="$failed replay-$wp"
			rm -f "$OUT/replay-$wp.txt"
		fi
	done
	if [ -s "$OUT/replay-wb.txt" ]; then
		# The write-back report without its latency histogram (the whole is in the file).
		sed -n '/^latency histogram/q; p' "$OUT/replay-wb.txt"
	fi
	if [ -s "$OUT/replay-pt.txt" ] && [ -s "$OUT/replay-wb.txt" ]; then
		echo "same trace, same devices:"
		for wp in pt wb; do
			printf '  %s  %s\n' "$wp" "$(grep '^IOPS' "$OUT/replay-$wp.txt")"
		done
	fi
fi

say "done in $(( $(date +%s) - start )) s"
echo "bench results: $OUT/bench/results.json, results.csv; plots: $OUT/bench/*.png"
echo "replay reports: $OUT/replay-pt.txt, $OUT/replay-wb.txt"
if [ -n "$failed" ]; then
	echo "demo: failed:$failed" >&2
	exit 1
fi
