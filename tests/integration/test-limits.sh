#!/bin/sh
# test-limits.sh - resource limits do no harm (issue 16, item 5): the server under a
# descriptor limit (ulimit -n 64) meets 100 connections at once (those past the limit
# wait, the server keeps serving and recovers once they close) and 1000 connections opened and
# closed, clients that disconnect in the middle of their requests, and control requests
# from a user without access to the control socket (refused by the socket's access
# rights, nothing changed).  After each: the server is alive, holds no more descriptors
# than before (no leak), and a client reads back what it wrote.
. "$(dirname "$0")/lib.sh"
PY=$(nbd_python)
[ -n "$PY" ] || { echo "SKIP: python3 nbd module not installed" >&2; exit 77; }
cd "$T"

make_volume v1 hdd.img ssd.img
tc attach --cache ssd.img --backing hdd.img --write-policy wt --device hdd.img >/dev/null
# The limit applies to the server serve starts (it inherits it).
(ulimit -n 64 && serve ssd.img hdd.img)
SERVER_PID=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$LOG" 2>/dev/null | head -1)
SERVER_PID=${SERVER_PID:-$(pgrep -f "socket=$SOCK" | head -1)}
ALL_SERVERS="$ALL_SERVERS $SERVER_PID"
[ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" || fail "no server running after serve"
lim=$(awk '/Max open files/ {print $4}' "/proc/$SERVER_PID/limits")
[ "$lim" -eq 64 ] || fail "server descriptor limit $lim, expected 64"
fds() { ls "/proc/$SERVER_PID/fd" | wc -l; }

# roundtrip TAG: write a tagged 64 KiB block at 1 MiB and read it back.
roundtrip() {
	"$PY" - "$(uri v1)" "$1" <<'PYEOF' || fail "round trip after $1: the volume does not read back what was written"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
buf = (sys.argv[2].encode() * 65536)[:65536]
h.pwrite(buf, 1 << 20)
h.flush()
assert h.pread(65536, 1 << 20) == buf
h.shutdown()
PYEOF
}
roundtrip start
base=$(fds)
log "server $SERVER_PID: $base descriptors at rest, limit $lim"

# 100 connections at once: past the limit the server's accept fails (EMFILE) and a
# client waits in the listen backlog until descriptors are free again (nbdkit's accept
# loop); each gets 1 s to finish its handshake.  Then all close: the server recovers.
"$PY" - "$(uri v1)" <<'PYEOF' >burst.txt
import sys, time, nbd
ok = waiting = 0
hs = []
for i in range(100):
    h = nbd.NBD()
    h.aio_connect_uri(sys.argv[1])
    t = time.time()
    while h.aio_is_connecting() and time.time() - t < 1:
        h.poll(100)
    if h.aio_is_ready():
        ok += 1
    else:
        waiting += 1
    hs.append(h)
for h in hs:
    if h.aio_is_ready():
        h.shutdown()
del hs
print(ok, waiting)
PYEOF
read -r ok waiting <burst.txt
log "100 connections at once: $ok served, $waiting past the limit"
[ "$ok" -gt 0 ] || fail "no connection served under the descriptor limit"
[ "$waiting" -gt 0 ] || fail "100 connections under ulimit -n 64: all served (is the limit applied?)"
kill -0 "$SERVER_PID" || fail "the server died of too many connections"
roundtrip burst

# 1000 connections opened and closed, one after the other.
"$PY" - "$(uri v1)" <<'PYEOF' || fail "1000 sequential connections: one failed"
import sys, nbd
for i in range(1000):
    h = nbd.NBD()
    h.connect_uri(sys.argv[1])
    h.shutdown()
PYEOF
roundtrip sequential

# Clients that vanish in the middle of their requests (writes and reads in flight).
for i in 1 2 3 4 5 6 7 8 9 10; do
	"$PY" - "$(uri v1)" <<'PYEOF' || fail "disconnecting client $i could not connect"
import os, sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
for j in range(16):
    h.aio_pwrite(nbd.Buffer(1 << 20), (j % 8) << 20 | (64 << 20))
    h.aio_pread(nbd.Buffer(1 << 20), j << 20)
h.poll(0)
os._exit(0)   # no NBD_CMD_DISC, requests unanswered
PYEOF
done
kill -0 "$SERVER_PID" || fail "the server died of clients disconnecting mid-request"
roundtrip vanish
wait_until 30 sh -c "[ \$(ls /proc/$SERVER_PID/fd | wc -l) -le $base ]" ||
	fail "descriptors leaked"

# A user without access to the control socket is refused and changes nothing.
chmod 755 "$T"   # the folder open to all: the socket's own rights decide
before=$(status_get v1 settings flush_rate)
if setpriv --reuid=65534 --regid=65534 --clear-groups "$TIERCACHE" set v1 --flush-rate high \
	--control "$CTL" >nobody.out 2>&1; then
	fail "user nobody changed a setting through the control socket: $(cat nobody.out)"
fi
grep -qi "permission denied" nobody.out || fail "user nobody: unexpected error: $(cat nobody.out)"
[ "$(status_get v1 settings flush_rate)" = "$before" ] || fail "the refused set changed the flush rate"
chmod 700 "$T"
roundtrip control
[ "$(fds)" -le "$base" ] || fail "server holds $(fds) descriptors, $base at rest"
stop_server
