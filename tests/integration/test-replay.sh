#!/bin/sh
# test-replay.sh - `tiercache replay` end to end: the CloudPhysics sample (traces/, xz)
# through the library on emulated devices, with the JSON keys and values checked; the
# miss-ratio curve; a gzip-compressed multi-volume fixture with --trace-volume; the
# exit codes and messages of bad usage and bad traces; the temporary folder removed;
# and, when nbdkit is installed, the NBD mode against nbdkit's memory plugin.
. "$(dirname "$0")/lib.sh"
need jq gzip

TRACES=${TC_TRACES_DIR:-${TC_SOURCE_ROOT:?}/traces}
FIX=${TC_SOURCE_ROOT:?}/tests/fixtures/traces
CP=$TRACES/libcachesim/cloudPhysicsIO.vscsi.xz
[ -r "$CP" ] || fail "trace $CP is not readable (the repository carries it in traces/)"
# The device files go to tmpfs when there is one: the emulated devices' FLUSH is a real
# fdatasync, which on a disk costs more than the whole replay.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	WORK=$(mktemp -d /dev/shm/tc-replay.XXXXXX)
else
	WORK=$T/work
	mkdir -p "$WORK"
fi
NBDKIT_PID=
trap 'rc=$?; [ -z "$NBDKIT_PID" ] || kill -TERM "$NBDKIT_PID" 2>/dev/null || true; rm -rf "$WORK"; (exit $rc); cleanup' EXIT

# check FILE JQ-EXPR WHAT: the expression must be true on the JSON in FILE.
check() {
	jq -e "$2" "$1" >/dev/null || fail "$3: $(jq -c "$2" "$1" 2>&1) in $(head -c 2000 "$1")"
}

# --- the CloudPhysics sample, library mode, emulated devices, JSON ------------------
# The trace's first reads come after 4000 writes: 7000 warm-up requests, 3000 measured.
log "CloudPhysics, requests 7001-10000, 10 % cache, JSON"
tc replay "$CP" --format vscsi --limit 10000 --warmup 7000 --tmpdir "$WORK" --json \
	>"$T/cp.json" 2>"$T/cp.err" ||
	fail "replay cloudPhysicsIO.vscsi: exit $?: $(cat "$T/cp.err")"
check "$T/cp.json" '.requests == 3000 and .reads + .writes == 3000 and .reads > 1000' "request count"
for k in hit_ratio read_hit_ratio write_hit_ratio byte_hit_ratio read_byte_hit_ratio \
	line_hit_ratio read_line_hit_ratio; do
	check "$T/cp.json" ".$k | type == \"number\" and . >= 0 and . <= 1" "$k in [0, 1]"
done
check "$T/cp.json" '.iops > 0 and .elapsed_s > 0' "iops"
check "$T/cp.json" '.latency_us | .p50 > 0 and .p50 <= .p99 and .p99 <= .p999 and .p999 <= .max' \
	"latency percentiles ordered"
check "$T/cp.json" '.latency_us.count == 3000 and .latency_us.read.count == .reads' "latency counts"
check "$T/cp.json" '[.latency_histogram_us[].count] | add == 3000' "histogram total"
check "$T/cp.json" '.trace.format == "vscsi" and .trace.vscsi_version == 1 and .trace.limited' "trace"
check "$T/cp.json" '.trace.compression == "xz"' "trace compression"
check "$T/cp.json" '.layout.footprint > 0 and .layout.folded == 0 and .layout.regions == 1' "layout"
# 10 % of the footprint, rounded down to 64 KiB lines as cache simulators round
check "$T/cp.json" '.config.cache_bytes <= .layout.footprint * 0.1 and
	.config.cache_bytes > .layout.footprint * 0.1 - 65536 and
	.config.cache_bytes % 65536 == 0' "cache size"
# every volume setting of the run, and page figures beside the others
check "$T/cp.json" '.config.line_size == 65536 and .config.replacement == "s3fifo" and
	.config.write_policy == "wb" and .config.read_cache == true and
	.config.seq_cutoff == 4194304 and .config.admission == "always" and
	.config.nhit == null and .config.fill == "line" and .config.flush_rate == "medium"' \
	"config settings"
check "$T/cp.json" '.page_hit_ratio > 0 and .page_hit_ratio < 1 and
	(.page_miss_ratio + .page_hit_ratio - 1 | fabs) < 1e-9 and
	.cache.read_pages + .cache.write_pages >= .requests and
	.cache.read_page_hits <= .cache.read_pages' "page figures"
check "$T/cp.json" '.config.mode == "library" and .config.driving == "timed"' "config"
check "$T/cp.json" '.cache.promotions > 0 and .cache_device.bytes_written > 0 and
	.backing_device.bytes_read > 0' "engine and device counters"
# SSD endurance: cache-device bytes written per host byte
check "$T/cp.json" '.ssd_bytes_per_host_byte > 0 and
	(.ssd_bytes_per_host_byte - .cache_device.bytes_written / (.read_bytes + .write_bytes)
	 | fabs) < 1e-9' "ssd bytes per host byte"
[ -z "$(ls -A "$WORK")" ] || fail "temporary files left in $WORK: $(ls -A "$WORK")"

# Deterministic: the same seed gives the same figures.
tc replay "$CP" --format vscsi --limit 10000 --warmup 7000 --tmpdir "$WORK" --json \
	>"$T/cp2.json" 2>/dev/null ||
	fail "second replay: exit $?"
[ "$(jq -c '[.hit_ratio, .byte_hit_ratio, .latency_us.p99, .cache.evictions]' "$T/cp.json")" = \
  "$(jq -c '[.hit_ratio, .byte_hit_ratio, .latency_us.p99, .cache.evictions]' "$T/cp2.json")" ] ||
	fail "two replays with the same seed differ"

# --as-reads with each replacement policy: every request a read, nothing written to
# the backing, the policy named in the config; an unknown name is refused.
log "--as-reads, every replacement policy"
for p in lru s3fifo arc 2q sieve wtinylfu lirs wtinylfu-hc; do
	tc replay "$CP" -f vscsi --limit 3000 --as-reads --policy $p --line-size 4K \
		--admission always --seq-cutoff 0 --devices file --queue-depth 1 \
		--tmpdir "$WORK" --json >"$T/ar.json" 2>"$T/ar.err" ||
		fail "--as-reads --policy $p: exit $?: $(cat "$T/ar.err")"
	check "$T/ar.json" ".requests == 3000 and .reads == 3000 and .writes == 0 and
		.cache.write_pages == 0 and .backing_device.bytes_written == 0 and
		.config.replacement == \"$p\" and .page_miss_ratio > 0 and .page_miss_ratio < 1" \
		"--as-reads --policy $p"
done
rc=0
tc replay "$CP" -f vscsi --limit 10 --policy clock --tmpdir "$WORK" >/dev/null 2>"$T/ar.err" || rc=$?
[ "$rc" = 2 ] && grep -q '"clock" is not s3fifo, lru, arc, 2q, sieve, wtinylfu, lirs or wtinylfu-hc' "$T/ar.err" ||
	fail "--policy clock: exit $rc: $(cat "$T/ar.err")"

# Closed loop, table output.
log "closed loop, table"
tc replay "$CP" -f vscsi --limit 8000 --queue-depth 8 --tmpdir "$WORK" >"$T/cp.txt" 2>"$T/cp.err" ||
	fail "closed loop: exit $?: $(cat "$T/cp.err")"
grep -q "closed loop, queue depth 8" "$T/cp.txt" || fail "table: no driving line: $(cat "$T/cp.txt")"
grep -q "^hit ratio " "$T/cp.txt" || fail "table: no hit ratio line"
grep -q "^latency " "$T/cp.txt" || fail "table: no latency table"

# --- the miss-ratio curve ------------------------------------------------------------
log "miss-ratio curve"
tc replay "$CP" -f vscsi --limit 10000 --cache-sizes 5%,40% --queue-depth 4 --tmpdir "$WORK" \
	--json >"$T/mrc.json" 2>"$T/mrc.err" || fail "--cache-sizes: exit $?: $(cat "$T/mrc.err")"
check "$T/mrc.json" '(.runs | length) == 2 and (.mrc | length) == 2' "two runs"
check "$T/mrc.json" '.mrc[0].cache_bytes < .mrc[1].cache_bytes' "sizes grow"
check "$T/mrc.json" '.mrc[1].miss_ratio <= .mrc[0].miss_ratio' "miss ratio falls with size"
check "$T/mrc.json" '.mrc[1].line_miss_ratio < .mrc[0].line_miss_ratio' "line miss ratio falls"
[ -z "$(ls -A "$WORK")" ] || fail "temporary files left in $WORK"

# --- fill and admission -----------------------------------------------------------------
# Filling the whole line serves later reads of its other units; nhit 255 admits little.
log "--fill, --admission"
opt_run() { # NAME OPTION...: a short replay with OPTIONs into $T/NAME.json
	n=$1
	shift
	tc replay "$CP" -f vscsi --limit 10000 --devices memory --volume-cap 4G --tmpdir "$WORK" \
		--json "$@" >"$T/$n.json" 2>"$T/$n.err" || fail "$*: exit $?: $(cat "$T/$n.err")"
}
opt_run line --fill line
opt_run sectors --fill sectors
opt_run nhit --admission nhit --nhit 255
check "$T/line.json" '.cache.bypassed_admission == 0' "--admission always (the default): no miss bypassed"
jq -e --slurpfile s "$T/sectors.json" \
	'.read_byte_hit_ratio > $s[0].read_byte_hit_ratio and
	 .cache.read_line_partial_hits < $s[0].cache.read_line_partial_hits' \
	"$T/line.json" >/dev/null || fail "--fill line does not beat --fill sectors"
check "$T/nhit.json" '.cache.bypassed_admission > 0' "--admission nhit --nhit 255 bypasses"
[ -z "$(ls -A "$WORK")" ] || fail "temporary files left in $WORK"

# --- a compressed multi-volume trace, one volume ---------------------------------------
log "gzip Tencent fixture, --trace-volume"
gzip -c "$FIX/tencent.csv" >"$T/cbs.gz"
tc replay "$T/cbs.gz" -f tencent --trace-volume 17 --tmpdir "$WORK" --devices file --json \
	>"$T/cbs.json" 2>"$T/cbs.err" || fail "tencent: exit $?: $(cat "$T/cbs.err")"
check "$T/cbs.json" '.requests == 2 and .trace.compression == "gzip" and .trace.trace_volume == "17"' \
	"tencent volume 17"
check "$T/cbs.json" '.trace.skipped_other_volume == 2 and .layout.regions == 1' "selection"
tc replay "$T/cbs.gz" -f tencent --tmpdir "$WORK" --devices memory --json >"$T/cbs2.json" \
	2>/dev/null || fail "tencent, all volumes: exit $?"
check "$T/cbs2.json" '.requests == 4 and .layout.regions == 2' "all volumes, two regions"

# --- errors ------------------------------------------------------------------------------
log "errors"
set +e
tc replay "$CP" >/dev/null 2>"$T/e1"; rc=$?
set -e
[ $rc -eq 2 ] || fail "no --format: exit $rc, wanted 2"
grep -q -- "--format is required" "$T/e1" || fail "no --format: $(cat "$T/e1")"
set +e
tc replay "$FIX/tencent_bad.csv" -f tencent --tmpdir "$WORK" >/dev/null 2>"$T/e2"; rc=$?
set -e
[ $rc -eq 1 ] || fail "malformed line: exit $rc, wanted 1"
grep -q "tencent_bad.csv:3: Offset \"abc\" is not a number" "$T/e2" || fail "malformed line: $(cat "$T/e2")"
set +e
tc replay "$T/absent.csv" -f msr >/dev/null 2>"$T/e3"; rc=$?
set -e
[ $rc -eq 1 ] || fail "missing file: exit $rc, wanted 1"
grep -q "absent.csv: No such file" "$T/e3" || fail "missing file: $(cat "$T/e3")"
set +e
tc replay "$CP" -f vscsi --queue-depth 0 >/dev/null 2>"$T/e4"; rc=$?
set -e
[ $rc -eq 2 ] || fail "--queue-depth 0: exit $rc, wanted 2"
tc replay --help | grep -q "^EXIT STATUS" || fail "--help has no EXIT STATUS"
[ -z "$(ls -A "$WORK")" ] || fail "temporary files left in $WORK after errors"

# --- NBD mode against nbdkit's memory plugin ----------------------------------------------
if command -v nbdkit >/dev/null 2>&1; then
	log "NBD mode (nbdkit memory)"
	NSOCK=$T/mem.sock
	nbdkit -U "$NSOCK" -P "$T/nbdkit.pid" memory 64M || fail "nbdkit: exit $?"
	for _ in $(seq 1 50); do [ -s "$T/nbdkit.pid" ] && [ -S "$NSOCK" ] && break; sleep 0.1; done
	NBDKIT_PID=$(cat "$T/nbdkit.pid")
	tc replay "$FIX/alibaba.csv" -f alibaba --target "nbd+unix:///?socket=$NSOCK" --speed 10 \
		--json >"$T/nbd.json" 2>"$T/nbd.err" || fail "NBD replay: exit $?: $(cat "$T/nbd.err")"
	check "$T/nbd.json" '.requests == 3 and .errors == 0 and .config.mode == "nbd"' "NBD requests"
	check "$T/nbd.json" '.hit_ratio == null and .byte_hit_ratio == null and .cache == null' \
		"NBD: hit ratios unknown"
	check "$T/nbd.json" '.latency_us.count == 3 and .latency_us.max > 0' "NBD latencies"
	# volume 0 ends at ~118 GiB: folded into its share of 64 MiB
	check "$T/nbd.json" '.layout.folded >= 2 and .layout.volume_size <= 67108864' "NBD folding"
	tc replay "$CP" -f vscsi --limit 500 --queue-depth 16 --target "nbd+unix:///?socket=$NSOCK" \
		--json >"$T/nbd2.json" 2>"$T/nbd2.err" || fail "NBD closed loop: exit $?: $(cat "$T/nbd2.err")"
	check "$T/nbd2.json" '.requests == 500 and .errors == 0 and .iops > 0' "NBD closed loop"
fi
log "ok"
