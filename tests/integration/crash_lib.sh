# crash_lib.sh - what the end-to-end crash tests share (test-crash-kill.sh,
# test-crash-power.sh): the tc-crash-client's life around a crash, and the checks after
# the restart.  Sourced after lib.sh.
: "${TC_CRASH_CLIENT:?TC_CRASH_CLIENT must name tc-crash-client (run through meson test)}"

# The exit trap also stops the client (lib.sh's cleanup stops the server, removes $T).
CPID=
crash_cleanup() {
	rc=$?
	set +e
	[ -z "$CPID" ] || kill -KILL "$CPID" 2>/dev/null
	(exit "$rc")
	cleanup
}
trap crash_cleanup EXIT

# wait_client SECONDS: the client exits by itself once the server is gone.
wait_client() {
	for _ in $(seq 1 $(($1 * 4))); do
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$CPID" 2>/dev/null; then
		kill -KILL "$CPID"
		fail "tc-crash-client still running $1 s after the server died"
	fi
	wait "$CPID" || fail "tc-crash-client write: exit $?: $(cat "$T/write.out")"
	CPID=
}

# wait_prefill: until the client logged the end of its pre-fill (at most 60 s).
wait_prefill() {
	for _ in $(seq 1 240); do
		grep -q '^P$' "$T/write.log" 2>/dev/null && return 0
		kill -0 "$CPID" 2>/dev/null || fail "tc-crash-client died: $(cat "$T/write.out")"
		sleep 0.25
	done
	fail "tc-crash-client: no pre-fill within 60 s"
}

# check_result FILE: the verify saw enough activity to mean something.
check_result() {
	res=$(sed -n 's/^RESULT //p' "$1")
	acked=$(echo "$res" | sed -n 's/.*writes_acked=\([0-9]*\).*/\1/p')
	flushes=$(echo "$res" | sed -n 's/.*flushes_completed=\([0-9]*\).*/\1/p')
	units=$(echo "$res" | sed -n 's/.*units=\([0-9]*\).*/\1/p')
	[ -n "$acked" ] || fail "no RESULT line in $(cat "$1")"
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged before the crash"
	[ "$flushes" -gt 3 ] || fail "only $flushes flushes completed before the crash"
	[ "$units" -gt 1000 ] || fail "only $units units checked"
}

# check_served POLICY: after the crash the volume is served through its cache again,
# with its write policy (a cache that failed to open would leave it uncached).
check_served() {
	ctl status --json >"$T/status.json"
	st=$(json_get "$T/status.json" volumes 0 state)
	wp=$(json_get "$T/status.json" volumes 0 settings write_policy)
	fb=$(json_get "$T/status.json" volumes 0 fallback)
	[ "$st" = cached ] && [ "$wp" = "$1" ] && [ "$fb" = False ] ||
		fail "after the crash: volume $st, policy $wp, fallback $fb (expected cached, $1)"
	log "served again: cached, $wp, $(json_get "$T/status.json" volumes 0 dirty_bytes)" \
		"dirty bytes recovered"
}

