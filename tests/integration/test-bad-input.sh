#!/bin/sh
# test-bad-input.sh - every bad input gets a message naming the object and the value,
# the documented exit code (1: refused or failed, 2: bad usage) and changes nothing:
# the device files keep their sha256 and `tiercache check --json` says the same.
# Covered: missing devices; the wrong kind of device (a backing as a cache, a cache as
# a backing, zeros, an ext4 file system); devices too small; a device in use by a
# server (create --force, an offline command with another --control path); a backing
# of another cache; a cache missing or stale (write-back refused and named, write-
# through served uncached with a warning, stale lines dropped at the next attach); a
# cache with dirty data formatted (refused even with --force, --discard-dirty
# accepted); unknown volumes; bad usage; requests beyond the end or not aligned
# (libnbd with strict mode off); malformed control messages.  The server must stay up
# through all the bad requests.
. "$(dirname "$0")/lib.sh"
need qemu-io
cd "$T"

# state: what must not change - the device files (names and sha256) and what `check`
# reads on them.
state() {
	for f in "$T"/*.img; do
		[ -e "$f" ] || continue
		echo "$f $(sums "$f")"
	done
	tc check --json "$T"/*.img 2>&1 || true
}

# refused CODE PATTERN COMMAND...: expect_fail, and the devices are as they were.
refused() {
	state >"$T/state.before"
	expect_fail "$@"
	state >"$T/state.after"
	shift 2
	cmp -s "$T/state.before" "$T/state.after" || {
		diff "$T/state.before" "$T/state.after" >&2 || true
		fail "$*: refused, yet a device changed"
	}
}

# refused_offline CODE PATTERN COMMAND...: the same for an offline volume command that
# assembles a cache before it is refused: opening a cache writes its superblock (open
# and clean-shutdown marks, a counter), so only what `check` reads must be the same.
refused_offline() {
	state | grep -v "^$T/" >"$T/state.before"
	expect_fail "$@"
	state | grep -v "^$T/" >"$T/state.after"
	shift 2
	cmp -s "$T/state.before" "$T/state.after" || {
		diff "$T/state.before" "$T/state.after" >&2 || true
		fail "$*: refused, yet what check reads changed"
	}
}

# serve_try DEVICE...: `tiercache serve` on the test sockets (expected to be refused).
serve_try() { tc serve --socket "$SOCK" --control "$CTL" --log "$LOG" "$@"; }

# --- bad usage: exit 2, the option and the value named ------------------------------------
log "bad usage"
expect_fail 2 "bogus" tc stats db --bogus
expect_fail 2 "unknown command \"frobnicate\"" tc frobnicate
expect_fail 2 '--size: "12Q" is not a size' tc create cache x.img --size 12Q
[ ! -e x.img ] || fail "a bad --size created x.img"
expect_fail 2 '--write-policy: "xx" is not wt, wb, wa, pt or instwb' tc set db --write-policy xx
expect_fail 2 '--write-policy: "xx"' tc create backing x.img --name db --size 1G --write-policy xx
expect_fail 2 '--write-policy: "xx"' tc attach --cache a --backing b --write-policy xx
expect_fail 2 '--flush-rate: "fast"' tc set db --flush-rate fast
expect_fail 2 '--read-cache: "maybe"' tc set db --read-cache maybe
expect_fail 2 '--admission nhit:N: "0"' tc set db --admission nhit:0
expect_fail 2 '--admission: "sometimes"' tc set db --admission sometimes
expect_fail 2 '--seq-cutoff: "1X"' tc set db --seq-cutoff 1X
expect_fail 2 'nothing to set' tc set db
expect_fail 2 '--line-size: "3K"' tc create cache x.img --size 64M --line-size 3K
expect_fail 2 '--stripe-size: "3K"' tc create backing x.img --name db --size 64M --stripe-size 3K
expect_fail 2 '--name: "bad name" is not a volume name' tc create backing x.img --name 'bad name' --size 64M
expect_fail 2 '--replacement/--policy: "mru"' tc create cache x.img --size 64M --replacement mru
expect_fail 2 '--threads: "0"' tc serve --threads 0 x.img
expect_fail 2 'no DEVICE given' tc serve
expect_fail 2 'expected one VOLUME' tc detach
expect_fail 2 'needs --cache DEVICE and --backing DEVICE' tc attach --cache x.img
expect_fail 2 '"disk": expected backing or cache' tc create disk x.img
[ ! -e x.img ] || fail "bad usage created x.img"

# --- missing devices ---------------------------------------------------------------------------
log "missing devices"
refused 1 'nosuch.img: No such file or directory' serve_try nosuch.img
refused 1 'nosuch.img: No such file or directory \(give --size' tc create cache nosuch.img
refused 1 'nosuch.img.*No such file or directory' tc check nosuch.img
refused 1 'nosuch.img.*No such file or directory' \
	tc attach --cache nosuch.img --backing nosuch2.img --device nosuch.img --control "$CTL"
[ ! -e nosuch.img ] && [ ! -e nosuch2.img ] || fail "a missing device was created"
[ ! -e "$SOCK" ] && [ ! -e "$CTL" ] || fail "a refused serve left a socket behind"

# --- devices too small ----------------------------------------------------------------------------
log "devices too small"
truncate -s 64K small.img
refused 1 'cache small.img: device size 65536 too small' tc create cache small.img
refused 1 'backing small.img: device size 65536 too small' tc create backing small.img --name db
refused 1 'cache small2.img: device size 65536 too small' tc create cache small2.img --size 64K
[ ! -e small2.img ] || fail "a refused create left small2.img behind"
rm -f small.img

# --- the wrong kind of device -------------------------------------------------------------------
log "wrong devices"
# Small devices: each refusal checksums every device file twice.
tc create backing hdd.img --name db --size 64M >/dev/null
tc create cache ssd.img --unprotected-writeback --size 16M >/dev/null
truncate -s 16M zero.img
refused 1 'zero.img: is empty, not a tiercache' serve_try zero.img
refused 1 '--cache hdd.img is a backing \(of volume "db"\), not a cache$' \
	tc attach --cache hdd.img --backing hdd.img --control "$CTL"
refused 1 '--backing ssd.img is a cache, not a backing' \
	tc attach --cache ssd.img --backing ssd.img --write-policy wt --control "$CTL"
# The two swapped: said as such, not as a complaint about the backing's cache.
refused 1 '--cache hdd.img is a backing \(of volume "db"\), not a cache; --cache and --backing are swapped' \
	tc attach --cache hdd.img --backing ssd.img --device hdd.img --control "$CTL"
[ "$(grep -c . "$T/err")" -eq 1 ] || { cat "$T/err" >&2; fail "swapped attach: more than one message"; }
refused_offline 1 'zero.img.*(empty|not a tiercache)' \
	tc attach --cache ssd.img --backing zero.img --control "$CTL"
refused 1 'holds the tiercache backing of volume "db"; give --force' tc create cache hdd.img
refused 1 'holds tiercache cache [0-9a-f-]+ .*give --force' tc create backing ssd.img --name x
rm -f zero.img

# A bad option or a missing device: one message (not getopt's, then ours; not the
# library's, then check's).
log "one message per error"
expect_fail 2 '^tiercache status: unknown option --bogus$' tc status --bogus
[ "$(grep -vc '^Try ' "$T/err")" -eq 1 ] || { cat "$T/err" >&2; fail "status --bogus: the error twice"; }
expect_fail 2 '^tiercache set: option --write-policy needs a value$' tc set db --write-policy
[ "$(grep -vc '^Try ' "$T/err")" -eq 1 ] || { cat "$T/err" >&2; fail "set --write-policy: the error twice"; }
expect_fail 2 'unknown command "--bogus"' tc --bogus
[ "$(grep -vc '^Try ' "$T/err")" -eq 1 ] || { cat "$T/err" >&2; fail "--bogus: the error twice"; }
expect_fail 1 'nothere.img: open: No such file' tc check nothere.img
[ "$(cat "$T/out" "$T/err" | grep -c nothere)" -eq 1 ] ||
	{ cat "$T/out" "$T/err" >&2; fail "check nothere.img: the error twice"; }

# A sequential cutoff below one 4 KiB unit is refused, naming the value and the
# minimum; 0 (off) stays allowed.
expect_fail 2 '--seq-cutoff: "1K" \(1024 bytes\) is below the minimum, 4K \(4096 bytes' \
	tc set db --seq-cutoff 1K
expect_fail 2 '--seq-cutoff: "4095" \(4095 bytes\) is below the minimum' \
	tc attach --cache ssd.img --backing hdd.img --seq-cutoff 4095
expect_fail 2 '--seq-cutoff: "2K"' tc replay x.trace --format msr --seq-cutoff 2K

if command -v mkfs.ext4 >/dev/null 2>&1; then
	log "a file system"
	truncate -s 16M fs.img
	mkfs.ext4 -F -q fs.img
	refused 1 'device fs.img: holds ext4 file system; give --force' tc create cache fs.img
	refused 1 'device fs.img: holds ext4 file system; give --force' \
		tc create backing fs.img --name fs
	refused 1 'fs.img: holds ext4 file system, not a tiercache' serve_try fs.img
	tc create cache fs.img --unprotected-writeback --force >/dev/null || fail "create cache --force over ext4: exit $?"
	[ "$(tc check --json fs.img | json_get - devices 0 kind)" = cache ] ||
		fail "fs.img is not a cache after create --force"
	rm -f fs.img
else
	log "SKIP the ext4 case: mkfs.ext4 not installed (package e2fsprogs)"
fi

# --- a device in use ------------------------------------------------------------------------------
log "devices in use"
tc attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
# Attaching it again: "already attached", exit 0, nothing changed; offline with or
# without the backing among the devices, and live (below), all alike.  With settings
# it is refused (settings change through `set`).
for dev in "" "--device hdd.img"; do
	# shellcheck disable=SC2086
	out=$(tc attach --cache ssd.img --backing hdd.img $dev --control "$CTL") ||
		fail "offline re-attach ($dev): exit $?"
	echo "$out" | grep -q '^volume "db": already attached to cache .*ssd.img; nothing changed$' ||
		fail "offline re-attach ($dev): $out"
done
refused_offline 1 'volume "db": already attached to cache .*ssd.img; nothing changed: change its settings with `tiercache set`' \
	tc attach --cache ssd.img --backing hdd.img --write-policy wt --control "$CTL"
serve ssd.img hdd.img
out=$(ctl attach --cache ssd.img --backing hdd.img) || fail "live re-attach: exit $?"
echo "$out" | grep -q '^volume "db": already attached to cache .*ssd.img; nothing changed$' ||
	fail "live re-attach: $out"
[ "$(ctl attach --cache ssd.img --backing hdd.img --json | json_get - already_attached)" = True ] ||
	fail "live re-attach --json: no already_attached"
expect_fail 1 'already attached to cache .*change its settings with `tiercache set`' \
	ctl attach --cache ssd.img --backing hdd.img --write-policy wt
qio "$(uri db)" 'write -P 0x6a 0 1M'
ctl flush db >/dev/null
refused 1 'device ssd.img: in use' tc create cache ssd.img --force
refused 1 'device hdd.img: in use' tc create backing hdd.img --name x --force
# An offline command while the server runs (with another control path): the locks.
refused 1 'device ssd.img: in use.*|yet a device is locked' \
	tc flush db --device ssd.img --device hdd.img --control "$T/other.sock"
grep -q 'yet a device is locked' "$T/err" || fail "flush: no word of the lock: $(cat "$T/err")"
refused 1 'yet a device is locked' \
	tc set db --write-policy wt --device ssd.img --device hdd.img --control "$T/other.sock"
[ ! -e "$T/other.sock" ] || fail "an offline command created a socket"
# A second server on the same devices.
refused 1 'in use' tc serve --socket "$T/nbd2.sock" --control "$T/ctl2.sock" \
	--log "$T/serve2.log" ssd.img hdd.img
[ ! -e "$T/nbd2.sock" ] && [ ! -e "$T/ctl2.sock" ] || fail "the refused server left sockets"
refused 1 'control socket .*ctl.sock: a server already answers there' \
	serve_try ssd.img
qio "$(uri db)" 'read -P 0x6a 0 1M'

# --- unknown volumes -------------------------------------------------------------------------------
log "unknown volumes"
refused 1 'volume "nosuch": no such volume' ctl stats nosuch
refused 1 'volume "nosuch": no such volume' ctl set nosuch --write-policy wt
refused 1 'volume "nosuch": no such volume' ctl flush nosuch
refused 1 'volume "nosuch": no such volume' ctl detach nosuch
set +e
qemu-io -f raw "$(uri nosuch)" -c 'read 0 4k' >qio-nosuch.log 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "qemu-io opened export nosuch"
grep -q 'volume "nosuch": no such volume' "$LOG" || fail "the server log does not name export nosuch"

# --- requests beyond the end or not aligned (libnbd, strict mode off) ------------------------------
PY=$(nbd_python)
if [ -n "$PY" ]; then
	log "bad NBD requests"
	"$PY" - "$(uri db)" >nbd-bad.log 2>&1 <<'EOF' || { cat nbd-bad.log >&2; fail "bad NBD requests: see above"; }
import errno, sys
import nbd
h = nbd.NBD()
h.set_strict_mode(0)          # libnbd would refuse these itself otherwise
h.connect_uri(sys.argv[1])
size = h.get_size()
cases = [
    ("read beyond the end", lambda: h.pread(4096, size), errno.EINVAL),
    ("read straddling the end", lambda: h.pread(8192, size - 4096), errno.EINVAL),
    ("write beyond the end", lambda: h.pwrite(b"\x01" * 4096, size), (errno.EINVAL, errno.ENOSPC)),
    ("read not 512-aligned", lambda: h.pread(100, 1), errno.EINVAL),
    ("write not 512-aligned", lambda: h.pwrite(b"\x01" * 100, 513), errno.EINVAL),
    ("trim not 512-aligned", lambda: h.trim(100, 3), errno.EINVAL),
    ("zero beyond the end", lambda: h.zero(4096, size), (errno.EINVAL, errno.ENOSPC)),
]
bad = 0
for what, f, want in cases:
    want = want if isinstance(want, tuple) else (want,)
    try:
        f()
        print("FAIL %s: succeeded" % what)
        bad += 1
    except nbd.Error as e:
        # libnbd's Python binding gives the errno's name ("EINVAL") or its number.
        name = e.errno if isinstance(e.errno, str) else errno.errorcode.get(e.errno)
        ok = name in [errno.errorcode[w] for w in want]
        print("%s %s: %s (%s)" % ("ok" if ok else "FAIL", what, name, e.string))
        bad += 0 if ok else 1
# The connection still works, and the data is intact.
assert h.pread(1048576, 0) == b"\x6a" * 1048576, "data changed"
h.shutdown()
sys.exit(1 if bad else 0)
EOF
	grep -q 'volume "db": write offset 513 length 100 not aligned to 512 bytes' "$LOG" ||
		fail "the server log does not name the unaligned write: $(tail -5 "$LOG")"
else
	log "SKIP bad NBD requests: no python3 with libnbd's module (package python3-libnbd)"
fi

# --- malformed control messages --------------------------------------------------------------------
log "malformed control messages"
python3 - "$CTL" >ctl-bad.log 2>&1 <<'EOF' || { cat ctl-bad.log >&2; fail "malformed control messages: see above"; }
import json, socket, sys
cases = [
    (b"garbage\n", 71, "not one JSON object"),
    (b"[1,2]\n", 71, "not one JSON object"),
    (b"x" * 70000 + b"\n", 71, "at most 64 KiB"),
    (b'{"op": 42}\n', 22, 'an "op" string'),
    (b'{"op": null}\n', 22, 'an "op" string'),
    (b'{"nop": "status"}\n', 22, 'an "op" string'),
    (b'{"op": "nosuch"}\n', 22, 'unknown op "nosuch"'),
    (b'{"op": "stats"}\n', 22, '"volume" (a string) is missing'),
    (b'{"op": "stats", "volume": null}\n', 22, '"volume" (a string) is missing'),
    (b'{"op": "stats", "volume": "nosuch"}\n', 2, 'volume "nosuch": no such volume'),
    (b'{"op": "set", "volume": "db"}\n', 22, '"settings" (an object) is missing'),
    (b'{"op": "set", "volume": "db", "settings": [1]}\n', 22, "not a JSON object"),
    (b'{"op": "set", "volume": "db", "settings": {"write_policy": "zz"}}\n', 22,
     'key "write_policy" with value "zz"'),
    (b'{"op": "set", "volume": "db", "settings": {"nhit": 999}}\n', 22, 'key "nhit" with value 999'),
    (b'{"op": "attach", "cache": 1}\n', 22, '"cache" and "backing"'),
    (b'{"op": "status"', 71, "not one JSON object"),   # no newline: the client hangs up
]
bad = 0
for msg, err, text in cases:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.sendall(msg)
    if not msg.endswith(b"\n"):
        s.shutdown(socket.SHUT_WR)
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    try:
        r = json.loads(data)
        ok = r.get("ok") is False and r.get("errno") == err and text in r.get("error", "")
    except ValueError:
        r, ok = data, False
    print("%s %r -> %r" % ("ok" if ok else "FAIL", msg[:60], r))
    bad += 0 if ok else 1
    # The server still answers.
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.sendall(b'{"op": "status"}\n')
    r = json.loads(s.makefile().readline())
    s.close()
    if not r.get("ok"):
        print("FAIL status after %r: %r" % (msg[:60], r))
        bad += 1
sys.exit(1 if bad else 0)
EOF
[ "$(status_get db state)" = cached ] || fail "the server does not answer status"
qio "$(uri db)" 'read -P 0x6a 0 1M'
stop_server

# --- a backing of another cache ---------------------------------------------------------------------
log "a backing attached to another cache"
tc create cache ssd2.img --unprotected-writeback --size 16M >/dev/null
uuid=$(tc check --json ssd.img | json_get - devices 0 uuid)
uuid2=$(tc check --json ssd2.img | json_get - devices 0 uuid)
refused_offline 1 "backing .*hdd.img \\(volume \"db\"\\): attached to cache $uuid, not to cache $uuid2" \
	tc attach --cache ssd2.img --backing hdd.img --control "$CTL"

# --- a cache missing, then stale ----------------------------------------------------------------------
log "the cache missing (write-back), then stale (write-through)"
# Old data in the cache: written in write-back, still dirty (the stop keeps it).
serve ssd.img hdd.img
qio "$(uri db)" 'write -P 0x71 8M 1M'
stop_server
refused 1 "its cache $uuid is not among the devices given, and in write-back" serve_try hdd.img
refused 1 "its cache $uuid is not among the devices given" \
	tc set db --write-policy wt --device hdd.img --control "$CTL"
[ ! -e "$SOCK" ] && [ ! -e "$CTL" ] || fail "a refused serve left a socket behind"
# Write-through (drains the dirty data): the backing may then be served alone.
tc set db --write-policy wt --device ssd.img --device hdd.img --control "$CTL" >/dev/null
serve hdd.img
grep -q "warning: volume \"db\".*its cache $uuid is not among the devices given; serving the volume uncached" "$LOG" ||
	fail "no warning in the log for the missing cache: $(tail -5 "$LOG")"
[ "$(status_get db state)" = degraded ] || fail "served without its cache: state $(status_get db state)"
qio "$(uri db)" 'read -P 0x71 8M 1M' 'write -P 0x72 8M 64k'
stop_server
# With the cache again: its lines of db are stale, dropped.
serve ssd.img hdd.img
grep -q 'warning: volume "db": stale cache contents dropped' "$LOG" ||
	fail "no word of the stale cache in the log: $(tail -5 "$LOG")"
[ "$(status_get db state)" = cached ] || fail "state $(status_get db state)"
qio "$(uri db)" 'read -P 0x72 8M 64k' 'read -P 0x71 8256k 960k'
stop_server

# --- formatting a cache that holds dirty data ----------------------------------------------------------
log "create cache over dirty data"
tc set db --write-policy wb --flush-rate low --device ssd.img --device hdd.img --control "$CTL" >/dev/null
serve ssd.img hdd.img
qio "$(uri db)" 'write -P 0x73 16M 2M'
stop_server
dirty=$(tc check --json ssd.img | json_get - devices 0 volumes name=db dirty_bytes)
[ "$dirty" -gt 0 ] || fail "no dirty data kept"
refused 1 "device ssd.img: holds cache $uuid with .* of dirty data \\(volumes \"db\"\\).*--discard-dirty" \
	tc create cache ssd.img --unprotected-writeback --force
tc create cache ssd.img --unprotected-writeback --discard-dirty >/dev/null || fail "create cache --discard-dirty: exit $?"
[ "$(tc check --json ssd.img | json_get - devices 0 uuid)" != "$uuid" ] || fail "same cache uuid"
# The backing still names the old cache, in write-back: serving it alone is refused.
refused 1 "its cache $uuid is not among the devices given" serve_try hdd.img
# ...and formatting it over is refused even with --force: the cache it names may hold
# its newest data.
refused 1 "device hdd.img: holds the backing of volume \"db\", attached in write-back to cache $uuid.*--discard-dirty" \
	tc create backing hdd.img --name other --force

# --- socket and log paths that name existing files -------------------------------------------------------
log "serve paths naming existing files"
printf 'not a socket\n' >"$T/notes.txt"
keep=$(sums "$T/notes.txt")
refused 1 "NBD socket $T/notes.txt: exists and is not a socket" \
	tc serve --socket "$T/notes.txt" --control "$CTL" --log "$LOG" ssd.img
refused 1 "control socket $T/notes.txt: exists and is not a socket" \
	tc serve --socket "$SOCK" --control "$T/notes.txt" --log "$LOG" ssd.img
refused 1 "log $T/ssd.img: exists and is not a text file" \
	tc serve --socket "$SOCK" --control "$CTL" --log "$T/ssd.img" ssd.img
[ "$(sums "$T/notes.txt")" = "$keep" ] || fail "notes.txt changed"

# --- a refused live attach leaves no device held by the server ---------------------------------------------
log "refused live attach releases what it opened"
tc create cache ssd3.img --unprotected-writeback --size 64M >/dev/null
serve ssd.img
expect_fail 1 '--cache hdd.img is a backing' ctl attach --cache hdd.img --backing hdd.img
expect_fail 1 "attached to cache" ctl attach --cache ssd3.img --backing hdd.img
[ "$(ctl status --json | json_get - caches | grep -c ssd3)" -eq 0 ] ||
	fail "the server still lists ssd3.img after a refused attach"
tc create cache ssd3.img --unprotected-writeback --force >/dev/null || fail "ssd3.img still locked after a refused attach"
stop_server
log "ok"
