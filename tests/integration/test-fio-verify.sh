#!/bin/sh
# test-fio-verify.sh - invariant 1 (docs/architecture.md) through a real client: for each
# write policy (wt, wb, wa, pt) a cached volume is served and fio writes and reads it over
# NBD (random 4 KiB, then a mix of 4 KiB and 64 KiB, queue depth 16-32, crc32c verify of
# every block written); the server is stopped with SIGTERM, served again from the same
# devices, and fio verifies every block again (--verify_only), so what is read after the
# restart is checked too: in write-back that is dirty data kept in the cache over the
# restart.  The counters must show the policy at work: read hits in wt and wb, no dirty
# data outside wb, no promotions and nothing cached in pt.
. "$(dirname "$0")/lib.sh"
need fio
cd "$T"

# The two workloads, by name: fio options after the common ones.  Random offsets
# (randrepeat, fixed seed) so that --verify_only replays the same blocks; each block is
# written at most once (fio's random map), reads of the mix touch blocks not written.
W1="--offset=0 --size=12m --rw=randrw --rwmixread=40 --bs=4k --iodepth=16"
W2="--offset=64m --size=24m --rw=randrw --rwmixread=40 --bssplit=4k/50:64k/50 --iodepth=32"
COMMON="--verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=4242"

gt0() { [ "$1" -gt 0 ] 2>/dev/null; }

for wp in ${TC_POLICIES:-wt wb wa pt}; do
	log "write policy $wp"
	rm -f hdd.img ssd.img
	make_volume db hdd.img ssd.img
	# Low flush rate: in write-back, dirty data is still in the cache at the restart.
	tc attach --cache ssd.img --backing hdd.img --write-policy "$wp" --flush-rate low \
		--device hdd.img >/dev/null
	serve ssd.img hdd.img
	[ "$(status_get db state)" = cached ] || fail "$wp: volume not cached after serve"
	[ "$(status_get db settings write_policy)" = "$wp" ] ||
		fail "$wp: status shows write policy $(status_get db settings write_policy)"

	# shellcheck disable=SC2086  # the workloads are lists of options
	fio_nbd db "$wp-w1" $W1 $COMMON --do_verify=1
	# shellcheck disable=SC2086
	fio_nbd db "$wp-w2" $W2 $COMMON --do_verify=1

	# The counters, then at once the stop: the cleaner starts after 1 s of idle time.
	ctl stats db --json >"stats-$wp.json"
	stop_server
	hits=$(json_get "stats-$wp.json" read_hits)
	promo=$(json_get "stats-$wp.json" promotions)
	written=$(json_get "stats-$wp.json" bytes_written)
	dirty=$(json_get "stats-$wp.json" dirty_bytes)
	cached=$(json_get "stats-$wp.json" cached_bytes)
	log "$wp: read_hits $hits promotions $promo bytes_written $written dirty $dirty cached $cached"
	gt0 "$written" || fail "$wp: no bytes written according to the counters"
	case $wp in
	wb)
		gt0 "$hits" || fail "wb: no read hits ($hits)"
		gt0 "$dirty" || fail "wb (flush rate low): no dirty data right after the writes"
		;;
	wt)
		gt0 "$hits" || fail "wt: no read hits ($hits)"
		[ "$dirty" -eq 0 ] || fail "wt: $dirty dirty bytes"
		;;
	wa)
		[ "$dirty" -eq 0 ] || fail "wa: $dirty dirty bytes"
		;;
	pt)
		[ "$promo" -eq 0 ] || fail "pt: $promo promotions"
		[ "$hits" -eq 0 ] || fail "pt: $hits read hits"
		[ "$cached" -eq 0 ] || fail "pt: $cached bytes cached"
		[ "$dirty" -eq 0 ] || fail "pt: $dirty dirty bytes"
		;;
	esac

	# What the cache kept over the clean shutdown.
	tc check --json ssd.img >"check-$wp.json" || fail "$wp: check of the cache failed"
	kept=$(json_get "check-$wp.json" devices 0 volumes name=db dirty_bytes)
	case $wp in
	wb) gt0 "$kept" || fail "wb: the clean shutdown kept no dirty data ($kept)" ;;
	*) [ "$kept" -eq 0 ] || fail "$wp: $kept dirty bytes in the cache after shutdown" ;;
	esac

	serve ssd.img hdd.img
	[ "$(status_get db dirty_bytes)" -eq "$kept" ] ||
		fail "$wp: dirty bytes after restart $(status_get db dirty_bytes), check said $kept"
	ctl stats db --reset --json >/dev/null
	# shellcheck disable=SC2086
	fio_nbd db "$wp-v1" $W1 $COMMON --verify_only
	# shellcheck disable=SC2086
	fio_nbd db "$wp-v2" $W2 $COMMON --verify_only
	grep -q 'READ: bw=' "$wp-v2.log" || fail "$wp: the verify pass read nothing"
	ctl stats db --json >"stats2-$wp.json"
	hits=$(json_get "stats2-$wp.json" read_hits)
	promo=$(json_get "stats2-$wp.json" promotions)
	read=$(json_get "stats2-$wp.json" bytes_read)
	log "$wp after restart: read_hits $hits promotions $promo bytes_read $read"
	gt0 "$read" || fail "$wp: verify after restart read nothing"
	case $wp in
	wb | wt) gt0 "$hits" || fail "$wp: no read hits after the restart (cache not warm)" ;;
	pt)
		[ "$promo" -eq 0 ] || fail "pt: $promo promotions after restart"
		[ "$hits" -eq 0 ] || fail "pt: $hits read hits after restart"
		;;
	esac
	stop_server
done
log "ok"
