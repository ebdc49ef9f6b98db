#!/bin/sh
# test-bench.sh - `tiercache bench` end to end, shortest form: the emulated HDD alone
# against tiercache in write-back and nbdkit's cache filter, random 4 KiB reads at QD 1
# for 2 s after a 2 s warm-up.  Asserts the JSON document's shape, that every run
# produced IOPS without error, that tiercache's hit ratio is measured (and the
# uncached one is null), that the ratios are computed from the results, and that the
# plots are drawn.  Timing ratios are not asserted: the machines are noisy.
. "$(dirname "$0")/lib.sh"
need fio nbdkit gnuplot

out=$T/out
TMPDIR=$T TC_FIO_DIR=${TC_SOURCE_ROOT:?}/bench/fio tc bench --runtime 2 --warmup 2 --qd 1 \
	--workloads rand-read --targets uncached,wb,nbdkit-wb --cache-size 64M \
	--json --out "$out" >"$T/bench.json" 2>"$T/bench.err" ||
	{ cat "$T/bench.err" >&2; fail "bench: exit $?"; }

python3 - "$T/bench.json" <<'PY' || fail "bench JSON checks"
import json, sys
doc = json.load(open(sys.argv[1]))
for k in ("tool", "version", "machine", "config", "results", "ratios", "elapsed_s"):
    assert k in doc, k
res = {r["target"]: r for r in doc["results"] if r["workload"] == "rand-read"}
assert set(res) >= {"uncached", "tc-wb", "nbdkit-wb"}, sorted(res)
for t, r in res.items():
    assert r["error"] in (None, ""), (t, r["error"])
    assert r["qd"] == 1, r
    assert r["iops"] > 0 and r["lat_us"]["p50"] > 0, (t, r)
    lat = r["lat_us"]   # fio's bucketed percentiles are clamped to its exact max
    assert lat["p50"] <= lat["p99"] <= lat["p99_9"] <= lat["max"], (t, r)
assert res["uncached"]["hit_ratio"] is None
assert res["nbdkit-wb"]["hit_ratio"] is None
assert 0.0 < res["tc-wb"]["hit_ratio"] <= 1.0, res["tc-wb"]
ratio = [x for x in doc["ratios"] if x["target"] == "tc-wb" and x["vs"] == "uncached"]
assert ratio, doc["ratios"]
want = res["tc-wb"]["iops"] / res["uncached"]["iops"]
assert abs(ratio[0]["ratio"] - want) <= 0.01 * want + 0.01, (ratio[0], want)
print("bench: tc-wb / uncached = %.2f, hit ratio %.2f" % (want, res["tc-wb"]["hit_ratio"]))
PY
ls "$out"/*.png >/dev/null 2>&1 || fail "no plots in $out"
[ -s "$out/results.json" ] || fail "no results.json in $out"
# The bench worked under $T (TMPDIR): no server of its own is left running, and its
# temporary folder is gone.
pgrep -f "nbdkit.*$T" >/dev/null 2>&1 && fail "bench left a server running"
[ -z "$(find "$T" -mindepth 1 -maxdepth 1 ! -name out ! -name 'bench.*' ! -name '*.sock' ! -name serve.log)" ] ||
	fail "bench left files in its temporary folder: $(ls "$T")"
log "bench ok"
