#!/bin/sh
# test-install.sh - `meson install` (into a staging folder, DESTDIR) puts every part
# where it belongs: the command, the library with its soname link, the headers and
# pkg-config file, the nbdkit plugin, a manual page per command, the systemd unit and
# the example configuration; a program builds against the installed library through
# pkg-config and runs; the installed command, run as the unit's ExecStart line runs it
# (with a test configuration in place of /etc's), serves the volumes its configuration
# names, answers on its control socket and stops cleanly on SIGTERM; a bad
# configuration is refused with the file, line and key.
. "$(dirname "$0")/lib.sh"
: "${TC_BUILD_ROOT:?TC_BUILD_ROOT must name the build folder (run through meson test)}"
need meson
need pkg-config
need cc
cd "$T"

DEST=$T/root
meson install -C "$TC_BUILD_ROOT" --destdir "$DEST" --no-rebuild --quiet >install.log 2>&1 ||
	fail "meson install: $(tail -5 install.log)"
meson introspect "$TC_BUILD_ROOT" --buildoptions >options.json
option() { python3 -c 'import json,sys; print([o["value"] for o in json.load(open("options.json")) if o["name"]==sys.argv[1]][0])' "$1"; }
prefix=$(option prefix)
R=$DEST$prefix
LIBDIR=$R/$(option libdir)

# one_file GLOB: exactly the files the pattern names exist (the pattern may hold a *).
one_file() {
	for f in $1; do
		[ -e "$f" ] || fail "not installed: $1"
		echo "$f"
		return 0
	done
}
BIN=$(one_file "$R/bin/tiercache")
one_file "$LIBDIR/libtiercache.so.0" >/dev/null
one_file "$LIBDIR/libtiercache.so" >/dev/null
one_file "$R/include/tiercache.h" >/dev/null
PC=$(one_file "$LIBDIR/pkgconfig/tiercache.pc")
PLUGIN=$(one_file "$LIBDIR/nbdkit/plugins/nbdkit-tiercache-plugin.so")
UNIT=$(one_file "$R/lib/systemd/system/tiercache.service")
one_file "$R/share/doc/tiercache/tiercache.conf.example" >/dev/null
for page in tiercache tiercache-serve tiercache-create tiercache-array tiercache-status \
	nbdkit-tiercache-plugin; do
	one_file "$R/share/man/man1/$page.1" >/dev/null
done

# The unit names the installed command and the configuration of this prefix.
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
case $exec_start in
"$prefix/bin/tiercache serve --foreground --config "*/tiercache/tiercache.conf) ;;
*) fail "unit's ExecStart is not the installed command with --config: $exec_start" ;;
esac
grep -q '^KillSignal=SIGTERM$' "$UNIT" || fail "unit does not stop with SIGTERM"
grep -q '^RuntimeDirectory=tiercache$' "$UNIT" || fail "unit does not create /run/tiercache"
if command -v systemd-analyze >/dev/null 2>&1; then
	# The paths in the unit are those of the real install, not of $DEST: verify the
	# syntax only (unknown keys and sections are what it reports first).
	# syntax and the command (the pages are checked above, not in the system's man).
	sed "s|$prefix/bin/tiercache|$BIN|" "$UNIT" >tiercache.service
	systemd-analyze verify --man=no ./tiercache.service >verify.log 2>&1 || true
	[ ! -s verify.log ] || fail "systemd-analyze verify: $(cat verify.log)"
fi

# A program against the installed library, found through pkg-config.
cat >prog.c <<'PROG'
#include <stdio.h>
#include <tiercache.h>
int main(void)
{
	struct tc_ctx_opts o = { .mode = TC_CTX_DETERMINISTIC };
	tc_ctx *ctx;
	tc_dev *d;
	struct tc_dev_info info;
	if (tc_ctx_new(&o, &ctx) || tc_dev_new_memory(ctx, 1 << 20, &d))
		return 1;
	tc_dev_info(d, &info);
	printf("%llu\n", (unsigned long long)info.size);
	tc_dev_close(d);
	tc_ctx_free(ctx);
	return 0;
}
PROG
flags=$(PKG_CONFIG_PATH=$(dirname "$PC") PKG_CONFIG_SYSROOT_DIR=$DEST pkg-config --cflags --libs tiercache) ||
	fail "pkg-config tiercache failed"
# shellcheck disable=SC2086
cc -o prog prog.c $flags 2>cc.log || fail "build against the installed library: $(cat cc.log)"
[ "$(LD_LIBRARY_PATH=$LIBDIR ./prog)" = 1048576 ] || fail "the program against the installed library"

# The installed command serves what a configuration names, as the unit starts it.
export LD_LIBRARY_PATH="$LIBDIR"
export TC_NBDKIT_PLUGIN="$PLUGIN"
"$BIN" create backing hdd.img --name db --size 256M >/dev/null
"$BIN" create cache ssd.img --size 64M --unprotected-writeback >/dev/null
"$BIN" attach --cache ssd.img --backing hdd.img --device hdd.img >/dev/null
cat >tiercache.conf <<CONF
# as /etc/tiercache/tiercache.conf would be
[serve]
device = $T/ssd.img
device = $T/hdd.img
socket = $SOCK
control = $CTL
threads = 4
CONF
cmd=$(echo "$exec_start" | sed "s|^$prefix/bin/tiercache|$BIN|; s|--config .*|--config $T/tiercache.conf|")
# shellcheck disable=SC2086
$cmd >"$LOG" 2>&1 &
SERVER_PID=$!
answers() { "$BIN" status --control "$CTL" >/dev/null 2>&1; }
wait_until 30 answers
"$BIN" status --control "$CTL" --json | json_get - volumes 0 name | grep -qx db ||
	fail "volume db not served: $("$BIN" status --control "$CTL" 2>&1)"
if command -v nbdinfo >/dev/null 2>&1; then
	size=$("$BIN" status --control "$CTL" --json | json_get - volumes 0 size)
	nbdinfo --size "nbd+unix:///db?socket=$SOCK" | grep -qx "$size" ||
		fail "export db: $(nbdinfo --size "nbd+unix:///db?socket=$SOCK" 2>&1)"
fi
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[ "$rc" -eq 0 ] || fail "the server exited $rc on SIGTERM (the unit's stop)"
[ ! -e "$CTL" ] || fail "control socket left behind after SIGTERM"

# A bad configuration: the file, the line and the key, and nothing started.
printf '[serve]\ndevice = %s/hdd.img\nthreads = lots\n' "$T" >bad.conf
expect_fail 1 "config $T/bad.conf: line 3: threads = \"lots\" is not a number" \
	"$BIN" serve --config "$T/bad.conf" --control "$CTL"
[ ! -e "$CTL" ] || fail "a refused configuration started a server"
log "installed parts, pkg-config, the unit's command and its stop: ok"
