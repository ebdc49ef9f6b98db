#!/bin/sh
# demo.sh - the demo behind `make demo`: the main job on a built-in default.
#
# First version: runs the hit-path benchmark in quick mode and prints its results.
# It will grow into the full demo (a cached volume served over NBD, driven by fio).
# Expects a built tree: run it through `make demo`, or set BUILD to the build dir.
set -eu

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
bench="$BUILD/bench/tc-bench-hit"

if [ ! -x "$bench" ]; then
	echo "demo: $bench was not built (bench/bench_hit.c does not exist yet?); run 'make' first" >&2
	exit 1
fi

echo "== tiercache demo: cache hit path (tc-bench-hit --quick)"
"$bench" --quick
