#!/bin/sh
# test-http.sh - `tiercache serve --http` (docs/server.md, "HTTP: metrics and status
# page"): bad --http values are refused before anything starts; the default binds
# 127.0.0.1 only (ss); /metrics parses with prometheus_client's own parser and every
# counter and gauge of `stats --json` is there with the same value (found through the
# key each HELP names), the latency histograms' buckets equal the JSON's, the array and
# member states follow `array fail`; / renders in headless chromium with the volumes,
# the array's state and the plots, and its screenshot is a PNG of the window's size
# that is not blank; other paths answer 404, other methods 405.
. "$(dirname "$0")/lib.sh"
need fio ss
cd "$T"

# A python3 with prometheus_client (python3-prometheus-client) and PIL (python3-pil).
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import prometheus_client.parser, PIL' 2>/dev/null; then
		PY=$(command -v "$p")
		break
	fi
done
[ -n "$PY" ] || { echo "SKIP: python3 with prometheus_client and PIL not installed (python3-prometheus-client, python3-pil)" >&2; exit 77; }

if tc serve --help | grep -q -- '--http'; then :; else fail "serve --help does not name --http"; fi
truncate -s 64M m0 m1
truncate -s 16M gs   # a global spare too small for the mirror: it stays in the pool
tc create array mirror --level 1 m0 m1 >/dev/null
tc create backing array:m0,m1 --name mir >/dev/null

log "bad --http values: refused, nothing started"
if ! "$PY" -c 'import sys' 2>/dev/null; then fail "no python"; fi
expect_fail 2 '--http: "x": the port "x" is not a number from 1 to 65535' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http x m0
expect_fail 2 '--http: "70000": the port "70000" is not a number' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http 70000 m0
expect_fail 2 '--http: ":9100" has no host before' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http :9100 m0
expect_fail 2 'an IPv6 address goes in brackets' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http ::1:9100 m0
expect_fail 2 'host "no-such-host.invalid" does not resolve' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http no-such-host.invalid:9100 m0
expect_fail 2 '--http-interval needs --http' \
	tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" --http-interval 2 m0
[ ! -e "$CTL" ] && [ ! -e "$LOG" ] || fail "a refused --http left a socket or a log"

# A free port: bound and closed again by the kernel's choice.
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
serve_two_volumes --http "$PORT" --http-interval 1 --spare gs array:m0,m1
URL=http://127.0.0.1:$PORT

log "the default address is 127.0.0.1 only"
ss -ltnH "sport = :$PORT" >ss.txt
grep -q "127.0.0.1:$PORT" ss.txt || fail "port $PORT not bound on 127.0.0.1: $(cat ss.txt)"
if grep -Eq "(0\.0\.0\.0|\*|\[::\]):$PORT" ss.txt; then fail "port $PORT bound beyond localhost: $(cat ss.txt)"; fi

# get PATH [METHOD]: "CODE" on the first line, then the body, into get.out.
get() {
	"$PY" - "$URL$1" "${2:-GET}" >get.out <<'EOF'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], method=sys.argv[2],
                             data=b"x" if sys.argv[2] == "POST" else None)
try:
    r = urllib.request.urlopen(req, timeout=30)
    code, body, ctype = r.status, r.read(), r.headers.get("Content-Type")
except urllib.error.HTTPError as e:
    code, body, ctype = e.code, e.read(), e.headers.get("Content-Type")
print(code, ctype)
sys.stdout.write(body.decode())
EOF
}
get /nothing-here
head -n1 get.out | grep -q '^404 ' || fail "GET /nothing-here: $(head -n1 get.out), expected 404"
get /metrics POST
head -n1 get.out | grep -q '^405 ' || fail "POST /metrics: $(head -n1 get.out), expected 405"
get / DELETE
head -n1 get.out | grep -q '^405 ' || fail "DELETE /: $(head -n1 get.out), expected 405"
get /metrics
head -n1 get.out | grep -q '^200 text/plain; version=0.0.4' || fail "GET /metrics: $(head -n1 get.out)"

log "I/O on both volumes"
fio_nbd db w --rw=randwrite --bs=4k --size=8m --iodepth=4
fio_nbd db r --rw=randread --bs=4k --size=8m --iodepth=4 --loops=2
fio_nbd db2 w2 --rw=randwrite --bs=64k --size=16m --iodepth=4
fio_nbd db2 r2 --rw=randread --bs=4k --size=16m --iodepth=4
sleep 3    # three samples of the plots

log "/metrics against stats --json"
ctl stats db --json >db.1.json
ctl stats db2 --json >db2.1.json
ctl status --json >status.1.json
get /metrics
ctl stats db --json >db.2.json
ctl stats db2 --json >db2.2.json
ctl status --json >status.2.json
tail -n +2 get.out >metrics.txt
"$PY" - metrics.txt <<'EOF' || fail "/metrics disagrees with stats --json (above)"
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families
flist = list(text_string_to_metric_families(open(sys.argv[1]).read()))
fams = {f.name: f for f in flist}
bad = []
if len(fams) != len(flist):
    bad.append("metric families named twice: %s" % sorted(
        n for n in fams if [f.name for f in flist].count(n) > 1))
def value(fam, **labels):
    for s in fam.samples:
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None
# The families by the JSON key their HELP names.
by_key = {}
for f in fams.values():
    m = re.search(r"\(stats --json: ([a-z_.]+)\)", f.documentation)
    if m:
        by_key[m.group(1)] = f
def flat(d, pre=""):
    for k, v in d.items():
        if isinstance(v, dict):
            if k != "latency":
                yield from flat(v, pre + k + ".")
        elif isinstance(v, (bool, int)) and not isinstance(v, float):
            yield pre + k, v
derived = {"cache_device.client_bytes_written", "cache_device.client_bytes_read"}
for vol in ("db", "db2"):
    a = json.load(open(vol + ".1.json"))
    b = json.load(open(vol + ".2.json"))
    keys = dict(flat(a))
    after = dict(flat(b))
    checked = 0
    for k, va in keys.items():
        if k in derived:
            continue
        f = by_key.get(k)
        if f is None:
            bad.append("%s: no metric names stats --json key %s" % (vol, k))
            continue
        # The stats' "cache" object is the cache device's, labelled by cache.
        v = value(f, cache=a["cache"]["device"]) if k.startswith("cache.") else \
            value(f, volume=vol)
        lo, hi = sorted((int(va), int(after[k])))
        if v is None or not (lo <= v <= hi):
            bad.append("%s: %s = %s, stats --json says %s..%s" % (vol, f.name, v, lo, hi))
        checked += 1
    if checked < 40:
        bad.append("%s: only %d keys checked" % (vol, checked))
    # The latency histograms: count, sum and the cumulative buckets at powers of two.
    lat = fams["tiercache_volume_request_latency_seconds"]
    for cls, j in a["latency"].items():
        samples = [s for s in lat.samples if s.labels.get("volume") == vol and
                   s.labels.get("class") == cls]
        count = [s.value for s in samples if s.name.endswith("_count")]
        if count != [j["count"]]:
            bad.append("%s %s: _count %s, JSON %s" % (vol, cls, count, j["count"]))
        cum = 0
        for bk in j["buckets"]:
            cum += bk["count"]
            if bk["lt_ns"] >= 2 ** 37:
                continue
            le = bk["lt_ns"] / 1e9
            got = [s.value for s in samples if s.name.endswith("_bucket") and
                   s.labels["le"] != "+Inf" and abs(float(s.labels["le"]) - le) < 1e-12]
            if got != [cum]:
                bad.append("%s %s: bucket le=%g holds %s, JSON %d" % (vol, cls, le, got, cum))
        mean = [s.value for s in samples if s.name.endswith("_sum")]
        if j["count"] and not (mean and abs(mean[0] / j["count"] * 1e9 - j["mean_ns"]) <= 1 + j["mean_ns"] * 1e-6):
            bad.append("%s %s: _sum %s does not give mean_ns %d" % (vol, cls, mean, j["mean_ns"]))
# Named metrics with the values the I/O must have given.
rb = value(fams["tiercache_volume_read_bytes"], volume="db")
if not rb or rb < 16 * 1024 * 1024:
    bad.append("tiercache_volume_read_bytes_total{volume=db} = %s, expected >= 16 MiB" % rb)
if value(fams["tiercache_volume_read_hits"], volume="db") <= 0:
    bad.append("no read hits on db")
# Status numbers: volume state, cache lines, the array and its members.
st = json.load(open("status.1.json"))
for v in st["volumes"]:
    if value(fams["tiercache_volume_state"], volume=v["name"], state=v["state"]) != 1:
        bad.append("volume %s: state %s not 1" % (v["name"], v["state"]))
    if value(fams["tiercache_volume_size_bytes"], volume=v["name"]) != v["size"]:
        bad.append("volume %s: size" % v["name"])
c = st["caches"][0]
for key, name in (("lines", "tiercache_cache_lines"), ("line_size", "tiercache_cache_line_size_bytes"),
                  ("redundancy", "tiercache_cache_redundancy")):
    if value(fams[name], cache=c["device"]) != c[key]:
        bad.append("cache %s: %s != %s" % (c["device"], name, c[key]))
arr = st["arrays"][0]
if value(fams["tiercache_array_state"], array="mirror", state="active") != 1:
    bad.append("array mirror not active in the metrics")
if value(fams["tiercache_array_size_bytes"], array="mirror") != arr["size"]:
    bad.append("array mirror: size")
for m in arr["members"]:
    if value(fams["tiercache_array_member_state"], array="mirror", slot=str(m["slot"]),
             state=m["state"]) != 1:
        bad.append("member %s: state %s not 1" % (m["slot"], m["state"]))
gs = st["global_spares"]
if len(gs) != 1 or value(fams["tiercache_global_spares"]) != 1:
    bad.append("global spares: %s in status, %s in the metrics" %
               (gs, value(fams["tiercache_global_spares"])))
elif value(fams["tiercache_global_spare_size_bytes"], device=gs[0]["device"]) != gs[0]["size"]:
    bad.append("global spare %s: size" % gs[0]["device"])
for f in fams.values():
    if f.type == "counter" and not f.name.startswith("tiercache_"):
        bad.append("family %s outside tiercache_" % f.name)
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("metrics: %d families" % len(fams))
EOF

log "a member fails: the array is degraded in the metrics and on the page"
ctl array fail mirror m1 >/dev/null
get /metrics
grep -qx 'tiercache_array_state{array="mirror",state="degraded"} 1' get.out ||
	fail "array mirror not degraded in /metrics: $(grep tiercache_array_state get.out)"
grep -q "tiercache_array_member_state{array=\"mirror\",slot=\"1\",device=\"[^\"]*m1\",state=\"faulty\"} 1" get.out ||
	fail "member m1 not faulty in /metrics: $(grep tiercache_array_member_state get.out)"
get /status.json
tail -n +2 get.out | json_get - arrays 0 state | grep -qx degraded || fail "/status.json: array not degraded"
tail -n +2 get.out | json_get - volumes name=db2 settings write_policy | grep -qx wb ||
	fail "/status.json: db2 not write-back"
# The spare too small for the mirror stays in the pool, on the page too.
tail -n +2 get.out | json_get - global_spares 0 device | grep -qx "$T/gs" ||
	fail "/status.json: global spare gs not in the pool"
get /
grep -q "<p id=\"global-spares\">.*<code>$T/gs</code> (16.0 MiB)" get.out ||
	fail "the page does not list the global spare: $(grep -o '<p id="global-spares">.*' get.out)"

log "the page in headless chromium"
BROWSER=
for b in chromium chromium-browser google-chrome; do
	command -v "$b" >/dev/null 2>&1 && { BROWSER=$b; break; }
done
if [ -z "$BROWSER" ]; then
	echo "SKIP: the page was not checked in a browser: chromium not installed (apt-get install chromium)" >&2
	stop_server
	exit 77
fi
# --no-sandbox: the test may run as root, where chromium's sandbox refuses to start.
chrome() {
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/chrome" --window-size=1100,1000 "$@" 2>>chrome.log
}
chrome --dump-dom "$URL/" >dom.html || fail "chromium --dump-dom exited $?: $(tail -5 chrome.log)"
chrome --screenshot="$T/shot.png" "$URL/" >/dev/null || fail "chromium --screenshot exited $?: $(tail -5 chrome.log)"
"$PY" - dom.html shot.png <<'EOF' || fail "the page lacks what it should show (above)"
import sys
from html.parser import HTMLParser
from PIL import Image
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.cells, self.svgs, self.lines = [], {}, [], 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self.row = a.get("id", "")
        if tag == "td":
            self.stack.append((getattr(self, "row", ""), a.get("class", "")))
        if tag == "svg":
            self.svgs.append(a.get("id"))
        if tag == "polyline":
            self.lines += 1
    def handle_endtag(self, tag):
        if tag == "td" and self.stack:
            self.stack.pop()
    def handle_data(self, d):
        if self.stack:
            row, cls = self.stack[-1]
            self.cells.setdefault((row, cls.split()[0] if cls else ""), "")
            self.cells[(row, cls.split()[0] if cls else "")] += d
p = P()
p.feed(open(sys.argv[1]).read())
bad = []
def cell(row, cls):
    return p.cells.get((row, cls), "").strip()
for v, state in (("db", "cached"), ("db2", "cached"), ("mir", "uncached")):
    if cell("volume-" + v, "name") != v:
        bad.append("no row of volume %s" % v)
    if cell("volume-" + v, "state") != state:
        bad.append("volume %s: state %r, expected %s" % (v, cell("volume-" + v, "state"), state))
if cell("volume-db2", "policy") != "wb":
    bad.append("db2's policy: %r" % cell("volume-db2", "policy"))
if not cell("volume-db", "num").endswith("%") and "%" not in str(p.cells):
    bad.append("no hit ratio")
if cell("array-mirror", "state") != "degraded":
    bad.append("array mirror: state %r, expected degraded" % cell("array-mirror", "state"))
for want in ("hit-ratio-db", "latency-db", "hit-ratio-db2", "latency-db2"):
    if want not in p.svgs:
        bad.append("no plot %s (plots: %s)" % (want, p.svgs))
if p.lines < 4:
    bad.append("only %d lines drawn in the plots" % p.lines)
im = Image.open(sys.argv[2])
if im.format != "PNG" or im.size != (1100, 1000):
    bad.append("screenshot: %s %s, expected a PNG of 1100x1000" % (im.format, im.size))
colours = im.convert("RGB").getcolors(1 << 20) or []
if len(colours) < 16:
    bad.append("screenshot nearly blank: %d colours" % len(colours))
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("page: %d plots, %d lines; screenshot %s, %d colours" % (len(p.svgs), p.lines, im.size, len(colours)))
EOF
stop_server
log "pass"
