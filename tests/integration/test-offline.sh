#!/bin/sh
# test-offline.sh - the volume commands offline with only the cache device: a cache that
# holds dirty data of a write-back volume whose backing is not given shows that volume
# in `status` (state no-backing, its dirty bytes as `check` counts them, the cache row's
# dirty bytes the same) in the table and in --json; `stats VOL` gives what the cache
# knows with a note that the backing is not present.  The dirty data stays where it is
# (the backing is unchanged, the cache still holds it).
. "$(dirname "$0")/lib.sh"
need fio qemu-io
cd "$T"

tc create cache ssd.img --unprotected-writeback --size 128M >/dev/null
tc create backing hdd.img --name db --size 512M >/dev/null
tc attach --cache ssd.img --backing hdd.img --write-policy wb --flush-rate low \
	--device hdd.img >/dev/null

serve ssd.img hdd.img
keepalive_start db      # the low-rate cleaner writes nothing back while it runs
# 3 x 1 MiB at scattered offsets (each below the sequential cutoff): 48 dirty units.
qio "$(uri db)" 'write -P 0x5a 100M 1M' 'write -P 0x5a 10M 1M' 'write -P 0x5a 300M 1M'
[ "$(status_get db dirty_bytes)" -eq 3145728 ] ||
	fail "dirty after the writes: $(status_get db dirty_bytes), expected 3145728"
stop_server
keepalive_stop

want=$(tc check --json ssd.img | json_get - devices 0 volumes name=db dirty_bytes)
[ "$want" -gt 0 ] || fail "check counts no dirty data for db"
before=$(sums hdd.img)

tc status --device ssd.img --json >st.json
[ "$(json_get st.json volumes name=db state)" = no-backing ] ||
	fail "status --device CACHE: db state $(json_get st.json volumes name=db state)"
[ "$(json_get st.json volumes name=db dirty_bytes)" -eq "$want" ] ||
	fail "status --device CACHE: db dirty $(json_get st.json volumes name=db dirty_bytes), check says $want"
[ "$(json_get st.json volumes name=db backing)" = None ] || fail "db has a backing"
[ "$(json_get st.json volumes name=db settings write_policy)" = wb ] || fail "db not wb"
[ "$(json_get st.json caches 0 dirty_bytes)" -eq "$want" ] ||
	fail "status --device CACHE: cache dirty $(json_get st.json caches 0 dirty_bytes), check says $want"

tc status --device ssd.img >st.txt
grep -Eq '^db +[0-9.]+ MiB +no-backing +wb +on +low +3\.0 MiB +- +no +ssd\.img$' st.txt ||
	{ cat st.txt >&2; fail "status table: no row for db with its dirty bytes"; }
grep -q 'backing device is not present' st.txt || fail "status table: no note on no-backing"

tc stats db --device ssd.img --json >stats.json
[ "$(json_get stats.json dirty_bytes)" -eq "$want" ] || fail "stats --device CACHE: dirty"
grep -q 'is not present' stats.json || fail "stats --device CACHE: no note on the backing"
tc stats db --device ssd.img | grep -q '^note: .*backing .* is not present' ||
	fail "stats --device CACHE (text): no note"
expect_fail 1 'volume "nosuch": no such volume' tc stats nosuch --device ssd.img

[ "$(sums hdd.img)" = "$before" ] || fail "the offline commands changed the backing"
[ "$(tc check --json ssd.img | json_get - devices 0 volumes name=db dirty_bytes)" -eq "$want" ] ||
	fail "the offline commands changed the cache's dirty data"

# With the backing too: cached, the same dirty bytes, no note.
tc status --device ssd.img --device hdd.img --json >st2.json
[ "$(json_get st2.json volumes name=db state)" = cached ] || fail "with the backing: not cached"
[ "$(json_get st2.json volumes name=db dirty_bytes)" -eq "$want" ] || fail "with the backing: dirty"
# JSON prints paths as they are (no "\/"); the tables keep their columns aligned
# whatever the length of the device names.
tc status --device "$T/ssd.img" --device "$T/hdd.img" --json >st3.json
grep -qF "\"$T/ssd.img\"" st3.json || { cat st3.json >&2; fail "status --json: the path is escaped"; }
tc stats db --device "$T/ssd.img" --device "$T/hdd.img" --json | grep -qF '\/' &&
	fail "stats --json: a path has escaped slashes"
tc check --json "$T/ssd.img" | grep -qF '\/' && fail "check --json: a path has escaped slashes"
tc status --device "$T/ssd.img" --device "$T/hdd.img" >st3.txt
hdr=$(grep '^VOLUME' st3.txt) row=$(grep '^db ' st3.txt)
[ "${hdr%%CACHE*}" != "$hdr" ] || fail "status table: no CACHE column"
[ "$(printf '%s' "${hdr%%CACHE*}" | wc -c)" -eq "$(printf '%s' "${row%%"$T"/ssd.img*}" | wc -c)" ] ||
	{ cat st3.txt >&2; fail "status table: the CACHE column is not aligned"; }
chdr=$(grep '^CACHE ' st3.txt) crow=$(grep "^$T/ssd.img " st3.txt)
[ "${#chdr}" -eq "${#crow}" ] || { cat st3.txt >&2; fail "status table: the cache columns are not aligned"; }

log "offline status and stats of a volume whose backing is absent: dirty $want bytes"
