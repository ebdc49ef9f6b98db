#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""policy_compare.py - every replacement policy on every trace of traces/.

Replays each trace with `tiercache replay` through a real cache once per policy, at
cache sizes of 1, 5, 10 and 20 % of the trace's distinct 4 KiB pages, in the setting
of docs/policy.md where the engine's eviction order is the policy's own: 4 KiB lines,
every request replayed as a read (--as-reads, so nothing is ever dirty), admission
always, sequential cutoff 0, sparse-file devices, one request in flight.  Prints the
page miss ratio of each cell, the best of each trace and size marked with a *, or
one JSON object (--json).

With --rounds N it then measures the per-access CPU cost: N rounds, in each every
policy once (the order rotated from round to round, so load on the machine falls on
all alike), replaying the first --limit requests of cloudPhysicsIO at 10 %; the
median of each policy's replay requests per second, and its ratio to LRU's.

    bench/policy_compare.py [--tiercache PATH] [--traces DIR] [--policies LIST]
                            [--sizes LIST] [--rounds N] [--limit N] [--only S]
                            [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file under traces/, format).  cloudPhysicsIO.csv.xz is the same requests as the
# VSCSI file (tests/unit/test_trace.c checks it), so it is not replayed twice.
TRACES = [
    ("libcachesim/cloudPhysicsIO.vscsi.xz", "vscsi"),
    ("caffeine/msr-cambridge1-sample.csv.xz", "msr"),
    ("caffeine/systor17-traces-sample.csv.gz", "systor"),
    ("mqsim/tpcc-small.trace.xz", "mqsim"),
]
POLICIES = ["lru", "s3fifo", "arc", "2q", "sieve", "wtinylfu", "lirs", "wtinylfu-hc"]
SIZES = ["1%", "5%", "10%", "20%"]


def replay(tc, path, fmt, policy, sizes, tmpdir, limit=0):
    cmd = [tc, "replay", path, "-f", fmt, "--cache-sizes", ",".join(sizes),
           "--line-size", "4K", "--write-policy", "wt", "--as-reads",
           "--admission", "always", "--seq-cutoff", "0", "--policy", policy,
           "--devices", "file", "--tmpdir", tmpdir, "--queue-depth", "1", "--json",
           "--quiet"]
    if limit:
        cmd += ["--limit", str(limit)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiercache", default=os.path.join(ROOT, "build/src/cli/tiercache"))
    ap.add_argument("--traces", default=os.environ.get("TC_TRACES_DIR") or
                    os.path.join(ROOT, "traces"))
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--limit", type=int, default=30000)
    ap.add_argument("--tmpdir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--only", default="", help="only the traces whose name has this")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    policies = a.policies.split(",")
    sizes = a.sizes.split(",")
    tmp = tempfile.mkdtemp(prefix="policy-compare.", dir=a.tmpdir)
    result = {"setting": "4 KiB lines, reads only, admission always, seq cutoff 0, "
                         "file devices, queue depth 1", "sizes": sizes, "traces": []}
    try:
        for name, fmt in TRACES:
            path = os.path.join(a.traces, name)
            if a.only and a.only not in name:
                continue
            row = {"trace": name, "page_miss_ratio": {}}
            for p in policies:
                d = replay(a.tiercache, path, fmt, p, sizes, tmp)
                row["page_miss_ratio"][p] = [m["page_miss_ratio"] for m in d["mrc"]]
                if not a.json:
                    print(f"  {name} {p}: " + " ".join(
                        f"{x:.4f}" for x in row["page_miss_ratio"][p]), file=sys.stderr)
            row["best"] = [min(policies, key=lambda p: row["page_miss_ratio"][p][k])
                           for k in range(len(sizes))]
            result["traces"].append(row)
        if a.rounds:
            name, fmt = TRACES[0]
            path = os.path.join(a.traces, name)
            rps = {p: [] for p in policies}
            for r in range(a.rounds):
                order = policies[r % len(policies):] + policies[:r % len(policies)]
                for p in order:
                    d = replay(a.tiercache, path, fmt, p, ["10%"], tmp, a.limit)
                    rps[p].append(d["runs"][0]["replay_requests_per_s"])
            med = {p: statistics.median(v) for p, v in rps.items()}
            base = med.get("lru") or next(iter(med.values()))
            result["cpu"] = {"trace": name, "limit": a.limit, "size": "10%",
                             "rounds": a.rounds, "requests_per_s": rps,
                             "median_requests_per_s": med,
                             "ratio_to_lru": {p: med[p] / base for p in med}}
    finally:
        subprocess.run(["rm", "-rf", tmp])

    if a.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return
    print("| trace | policy | " + " | ".join(sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for row in result["traces"]:
        for p in policies:
            cells = []
            for k, x in enumerate(row["page_miss_ratio"][p]):
                best = min(row["page_miss_ratio"][q][k] for q in policies)
                cells.append(f"{x:.4f}" + ("*" if x == best else ""))
            print(f"| {os.path.basename(row['trace'])} | {p} | " + " | ".join(cells) + " |")
    if "cpu" in result:
        c = result["cpu"]
        print(f"\nreplay requests/s, first {c['limit']} requests of {c['trace']} at "
              f"{c['size']}, median of {c['rounds']} alternating rounds:")
        for p in policies:
            print(f"  {p:9s} {c['median_requests_per_s'][p]:10.0f}  "
                  f"{c['ratio_to_lru'][p]:.3f} x LRU")


if __name__ == "__main__":
    main()
