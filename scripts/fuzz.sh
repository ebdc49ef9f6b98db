#!/bin/sh
# fuzz.sh - build the libFuzzer targets of tests/fuzz/ with clang
# (-fsanitize=fuzzer,address,undefined, every object instrumented) in their own build
# folder and run each for SECONDS seconds, at low priority.  Called by `make fuzz
# SECONDS=N` (default 60); usable by hand:
#   sh scripts/fuzz.sh [SECONDS [TARGET...]]      (TARGET: cache_sb, trace_msr, ...)
#
# Each target reads its corpus tests/fuzz/corpus/NAME/ (never written here) and writes
# what it finds new into $BUILD_FUZZ/corpus-new/NAME/; a crash, leak or timeout leaves
# its input as $BUILD_FUZZ/crashes/NAME-crash-HASH (or -leak-, -timeout-) and fails the
# run.  A crash becomes a fix plus its input in tests/fuzz/corpus/NAME/ (the replay of
# `make check` then keeps it fixed).  To promote the new entries that add coverage:
#   $BUILD_FUZZ/tests/fuzz/fuzz_NAME -merge=1 tests/fuzz/corpus/NAME $BUILD_FUZZ/corpus-new/NAME
# Environment: BUILD_FUZZ (default build-fuzz), CC (default clang), FUZZ_JOBS (targets
# run at once, default 1), FUZZ_ARGS (more libFuzzer options).
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
B=${BUILD_FUZZ:-build-fuzz}
CC=${CC:-clang}
command -v "$CC" >/dev/null 2>&1 || {
	echo "fuzz: $CC not found (Debian: apt-get install clang)" >&2
	exit 1
}
if [ ! -f "$B/build.ninja" ]; then
	CC=$CC meson setup "$B" . -Dfuzz=true -Dwerror=false -Db_lundef=false \
		-Db_sanitize=address,undefined >/dev/null
fi
ninja -C "$B" fuzzers
targets=$*
if [ -z "$targets" ]; then
	targets=$(ls tests/fuzz/corpus)
fi
mkdir -p "$B/crashes"
rc=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
for t in $targets; do
	exe=$B/tests/fuzz/fuzz_$t
	[ -x "$exe" ] || { echo "fuzz: no target $t ($exe)" >&2; rc=1; continue; }
	mkdir -p "$B/corpus-new/$t"
	echo "== fuzz $t: $SECONDS_EACH s" >&2
	# shellcheck disable=SC2086  # FUZZ_ARGS is a list of options
	if ! nice -n 10 "$exe" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$B/crashes/$t-" ${FUZZ_ARGS:-} \
		"$B/corpus-new/$t" "tests/fuzz/corpus/$t" >"$B/fuzz-$t.log" 2>&1; then
		echo "fuzz: $t FAILED: see $B/fuzz-$t.log and $B/crashes/" >&2
		tail -n 30 "$B/fuzz-$t.log" >&2
		rc=1
	fi
	grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$B/fuzz-$t.log" |
		sed "s/^/  $t /" >&2 || true
done
exit $rc
