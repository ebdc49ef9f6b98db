#!/bin/sh
# make-corpus.sh - (re)make the seed corpora of tests/fuzz/corpus/: valid inputs for
# every target, from devices the built `tiercache` command formats, the trace fixtures
# (tests/fixtures/traces, plain and compressed), the profiles, and hand-written control
# requests and device specs.  Seeds are named seed-*; entries found by `make fuzz` and
# promoted (docs/architecture.md, Tests) keep their own names and are left alone.
#
# Usage: sh tests/fuzz/make-corpus.sh [BUILD-DIR]   (default build/)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
TC=$BUILD/src/cli/tiercache
C=$ROOT/tests/fuzz/corpus
[ -x "$TC" ] || { echo "make-corpus: $TC not built" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/tc-corpus.XXXXXX")
trap 'rm -rf "$W"' EXIT

for d in cache_sb backing_sb md_block cache_open ctl_request dev_spec profile raid_sb trace_vscsi \
	trace_libcachesim trace_msr trace_systor trace_tencent trace_mqsim trace_alibaba; do
	mkdir -p "$C/$d"
	rm -f "$C/$d"/seed-*
done

# cut FILE OFFSET SIZE OUT: bytes [OFFSET, OFFSET + SIZE) of FILE with the trailing
# zeros of all but the checksum dropped (the targets zero-pad and can fix the checksum).
cut() {
	python3 - "$@" <<'PY'
import sys
path, off, size, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(path, "rb") as f:
    f.seek(off)
    b = f.read(size)
body = b[:-8].rstrip(b"\0")
with open(out, "wb") as f:
    f.write(body if len(body) < len(b) - 8 else b)
PY
}

# Devices: caches of each line size and policy, backings attached and not, striped.
cd "$W"
n=0
for ls in 4K 16K 64K; do
	for repl in lru s3fifo; do
		n=$((n + 1))
		"$TC" create cache "c$n.img" --size 16M --line-size "$ls" --replacement "$repl" \
			--unprotected-writeback >/dev/null
	done
done
"$TC" create backing b1.img --name db --size 32M >/dev/null
"$TC" create backing b2.img --name logs --size 32M --write-policy wb --flush-rate high >/dev/null
"$TC" create backing b3.img --name striped --size 32M --stripe-size 256K >/dev/null
"$TC" attach --cache c1.img --backing b1.img --write-policy wb --device b1.img >/dev/null
"$TC" attach --cache c1.img --backing b2.img --device b2.img >/dev/null
"$TC" attach --cache c3.img --backing b3.img --admission nhit:3 --device b3.img >/dev/null
for i in 1 2 3 4 5 6; do
	cut "c$i.img" 0 8192 "$C/cache_sb/seed-c$i-copy0"
	cut "c$i.img" 8192 8192 "$C/cache_sb/seed-c$i-copy1"
done
dd if=c1.img of="$C/cache_sb/seed-c1-whole" bs=8192 count=1 2>/dev/null
for i in 1 2 3; do
	cut "b$i.img" 0 4096 "$C/backing_sb/seed-b$i-copy0"
	cut "b$i.img" 4096 4096 "$C/backing_sb/seed-b$i-copy1"
done
dd if=b1.img of="$C/backing_sb/seed-b1-whole" bs=4096 count=1 2>/dev/null
# Array member superblocks: a RAID 6 with a spare, a RAID 10 of three copies, a RAID 1
# (each member's copy 0; one copy 1 whole).
for i in 0 1 2 3 4 5 6 7 8 9; do truncate -s 24M "m$i.img"; done
"$TC" create array a6 --level 6 --chunk 64K m0.img m1.img m2.img m3.img --spare m4.img >/dev/null
"$TC" create array a10 --level 10 --copies 3 m5.img m6.img m7.img >/dev/null
"$TC" create array a1 --level 1 m8.img m9.img >/dev/null
for i in 0 3 4 5 8; do
	cut "m$i.img" 0 4096 "$C/raid_sb/seed-m$i-copy0"
done
dd if=m1.img of="$C/raid_sb/seed-m1-copy1-whole" bs=4096 skip=1 count=1 2>/dev/null
# Metadata blocks as formatted (no entries; whole, with their checksum), then blocks
# with entries, encoded as format.h lays them out (the target fixes the checksum).
dd if=c1.img of="$C/md_block/seed-formatted-0" bs=4096 skip=16 count=1 2>/dev/null
dd if=c3.img of="$C/md_block/seed-formatted-1" bs=4096 skip=18 count=1 2>/dev/null
python3 - "$C/md_block" <<'PY'
import struct, sys, random
out = sys.argv[1]
rnd = random.Random(16)
for k, (index, units, n) in enumerate([(0, 16, 5), (1, 4, 40), (7, 1, 253), (15, 16, 1)]):
    ents = b""
    for i in range(n):
        if i % 7 == 3:
            ents += bytes(16)
            continue
        mask = (1 << units) - 1
        valid = rnd.getrandbits(16) & mask or 1
        dirty = rnd.getrandbits(16) & valid
        ents += struct.pack("<QBBHHH", rnd.getrandbits(20), rnd.randint(1, 64), 0, valid,
                            dirty, 0)
    hdr = struct.pack("<IHHIIQ", 0x444d4354, 1, n, index, 0, rnd.getrandbits(40))
    hdr += bytes(rnd.getrandbits(8) for _ in range(16))
    open("%s/seed-entries-%d" % (out, k), "wb").write(hdr + ents)
PY

# Whole small caches for cache_open: superblock copy 0, then the metadata area, its
# trailing zeros dropped (the target zero-fills and fixes zero checksums).
"$TC" create cache o1.img --size 1M --line-size 4K >/dev/null
"$TC" create cache o2.img --size 1M --line-size 16K --replacement s3fifo >/dev/null
"$TC" create backing ob1.img --name one --size 8M >/dev/null
"$TC" create backing ob2.img --name two --size 8M >/dev/null
"$TC" attach --cache o1.img --backing ob1.img --write-policy wb --device ob1.img >/dev/null
"$TC" attach --cache o1.img --backing ob2.img --device ob2.img >/dev/null
for i in 1 2; do
	python3 - "o$i.img" "$C/cache_open/seed-o$i" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
img = b[:8192] + b[65536:65536 + 2 * 4096]
open(sys.argv[2], "wb").write(img.rstrip(b"\0"))
PY
done

# Control requests: one per operation, valid and refused, and several on one line set.
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf '%s' "$line" >"$C/ctl_request/seed-$i"
done <<'JSON'
{"op":"status"}
{"op":"stats","volume":"db"}
{"op":"stats","volume":"db","reset":true}
{"op":"set","volume":"db","settings":{"write_policy":"wb","flush_rate":"medium"}}
{"op":"set","volume":"db","settings":{"read_cache":false,"admission":"nhit","nhit":4,"fill":"sectors","seq_cutoff":1048576}}
{"op":"set","volume":"db","settings":{"write_policy":"bogus"}}
{"op":"flush","volume":"db"}
{"op":"detach","volume":"db","discard":true}
{"op":"attach","cache":"ssd.img","backing":"hdd.img","settings":{"write_policy":"wt"}}
{"op":"fault","device":"ssd.img","fault_op":"write","errno":"EIO","transient":true,"after":3}
{"op":"heal","device":"ssd.img"}
{"op":"power_cut"}
{"op":"nosuch"}
{"op":17}
[1,2,3]
{"op":"status"
JSON
printf '{"op":"status"}\n{"op":"stats","volume":"x"}\n{"op":"flush","volume":"y"}' \
	>"$C/ctl_request/seed-lines"

# Device specs.
i=0
for s in disk.img /dev/sdb crash:/tmp/ssd.img emu:hdd:/tmp/hdd.img \
	emu:/etc/profiles/x.conf:/tmp/d.img 'nbd:nbd+unix:///db?socket=/run/tc.sock' \
	'nbd:nbd://host:10809/export' crash: emu:hdd emu::x nbd:; do
	i=$((i + 1))
	printf '%s' "$s" >"$C/dev_spec/seed-$i"
done

# Profiles: the shipped ones, and one of each type without comments.
for p in "$ROOT"/profiles/*.conf; do
	cp "$p" "$C/profile/seed-$(basename "$p" .conf)"
done
grep -v '^#' "$ROOT/profiles/hdd.conf" | grep -v '^$' >"$C/profile/seed-hdd-bare"

# Traces: each fixture plain and compressed (gzip, bzip2, xz, zstd where installed),
# VSCSI v1 and v2 made here.
F=$ROOT/tests/fixtures/traces
for pair in libcachesim:libcachesim.csv msr:msr.csv systor:systor.csv \
	tencent:tencent.csv tencent:tencent_bad.csv mqsim:mqsim.trace alibaba:alibaba.csv; do
	t=${pair%%:*} f=${pair#*:}
	cp "$F/$f" "$C/trace_$t/seed-$f"
done
for t in libcachesim msr systor tencent mqsim alibaba; do
	f=$(ls "$C/trace_$t" | grep '^seed-' | head -n 1)
	gzip -9 -n -c "$C/trace_$t/$f" >"$C/trace_$t/$f.gz"
done
command -v bzip2 >/dev/null && bzip2 -9 -c "$F/msr.csv" >"$C/trace_msr/seed-msr.csv.bz2"
command -v xz >/dev/null && xz -9 -c "$F/systor.csv" >"$C/trace_systor/seed-systor.csv.xz"
command -v zstd >/dev/null && zstd -q -19 -c "$F/alibaba.csv" >"$C/trace_alibaba/seed-alibaba.csv.zst"
python3 - "$C/trace_vscsi" <<'PY'
import struct, sys
recs = [(0x28, 4096, 2048, 1000), (0x2a, 8192, 4096, 2000), (0x28, 512, 9, 2500),
        (0x00, 0, 0, 3000), (0x88, 65536, 1 << 33, 6000000), (0x0a, 1024, 7, 7500000)]
for ver in (1, 2):
    b = b""
    for i, (cmd, ln, lbn, ts) in enumerate(recs):
        if ver == 1:
            b += struct.pack("<IIIHHQQ", i, ln, 1, cmd, 0x0100, lbn, ts)
        else:
            b += struct.pack("<HHIIIQQQ", cmd, 0x0200, i, ln, 1, lbn, ts, 250)
    open("%s/seed-v%d" % (sys.argv[1], ver), "wb").write(b)
PY
gzip -9 -n -c "$C/trace_vscsi/seed-v2" >"$C/trace_vscsi/seed-v2.gz"

for d in "$C"/*/; do
	printf '%s: %s files, %s bytes\n' "$(basename "$d")" "$(ls "$d" | wc -l)" \
		"$(cat "$d"* | wc -c)"
done
