/* SPDX-License-Identifier: MIT */
/*
 * test_raid_rebuild.c - hot spares, online rebuild, replace and check (src/raid/
 * rebuild.c) on arrays of memory members in deterministic contexts: a spare takes a
 * failed member's place at once and is rebuilt while random writes go on, the data
 * read back matching a reference buffer during and after the rebuild, and the rebuilt
 * member then standing in for others that fail; RAID 6 rebuilding two members in one
 * pass (the survivors read once); a survivor's read error during a RAID 6 rebuild
 * rebuilt from the second parity; the rates (ceiling when idle, floor under load,
 * priority, a live change) on the virtual clock; replace keeping the redundancy and
 * falling back to reconstruction where the old member does not read; check counting
 * mismatches injected through the members and repair clearing them; the refusals;
 * the persist hook called at state changes and every 1/16 of a rebuild, and a rebuild
 * resumed from a recorded position (what assembly does, array_rebuild_resume).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dev.h"
#include "tiercache-test.h"
#include "raid/raid.h"
#include "raid_common.h"

#define CHUNK 4096u
#define MEMBER (64u * CHUNK)

static char last_err[512];

static void keep_log(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	if (level == TC_LOG_ERROR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
}

static int events_redundant, events_degraded;

static void watch(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	(void)opaque;
	(void)dev;
	if (ev == TC_DEV_REDUNDANT)
		events_redundant++;
	if (ev == TC_DEV_DEGRADED)
		events_degraded++;
}

static uint64_t array_size(struct raid_fx *fx)
{
	struct tc_dev_info info;

	tc_dev_info(fx->array, &info);
	return info.size;
}

static uint8_t *fill_array(struct raid_fx *fx, uint64_t seed)
{
	uint64_t size = array_size(fx);
	uint8_t *data = malloc(size);

	assert_non_null(data);
	raid_fill(data, size, &seed);
	assert_int_equal(tc_dev_pwrite(fx->array, data, size, 0, 0), 0);
	return data;
}

static void check_data(struct raid_fx *fx, const uint8_t *data)
{
	uint64_t size = array_size(fx);
	uint8_t *back = malloc(size);

	assert_non_null(back);
	assert_int_equal(tc_dev_pread(fx->array, back, size, 0), 0);
	assert_memory_equal(back, data, size);
	free(back);
}

/* Random writes of 1 to 12 sectors, applied to @data too. */
static void random_writes(struct raid_fx *fx, uint8_t *data, unsigned count, uint64_t *seed)
{
	uint64_t size = array_size(fx);
	uint8_t buf[12 * TC_SECTOR_SIZE];

	for (unsigned i = 0; i < count; i++) {
		uint64_t len = (1 + raid_rand(seed) % 12) * TC_SECTOR_SIZE;
		uint64_t off = raid_rand(seed) % (size / TC_SECTOR_SIZE) * TC_SECTOR_SIZE;
		if (off + len > size)
			off = size - len;
		raid_fill(buf, len, seed);
		assert_int_equal(tc_dev_pwrite(fx->array, buf, len, off, 0), 0);
		memcpy(data + off, buf, len);
	}
}

static tc_dev *new_member(struct raid_fx *fx, uint64_t size)
{
	tc_dev *d;

	assert_int_equal(tc_dev_new_memory(fx->ctx, size, &d), 0);
	return d;
}

static void set_rate(struct raid_fx *fx, uint64_t lo, uint64_t hi, unsigned prio)
{
	struct tc_array_rebuild_opts o = { .min_rate = lo, .max_rate = hi, .priority = prio };

	assert_int_equal(tc_array_set_rebuild(fx->array, &o), 0);
}

/* ---- spare takeover and rebuild under writes --------------------------------------- */

static void check_takeover(enum tc_raid_level_id level, unsigned n, uint64_t seed)
{
	struct raid_fx fx;
	struct tc_array_status st;

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, seed, level, n, CHUNK,
				      MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	events_redundant = events_degraded = 0;
	tc_dev_watch(fx.array, watch, NULL);
	uint8_t *data = fill_array(&fx, seed);
	tc_dev *spare = new_member(&fx, MEMBER);
	struct tc_dev_info si;
	tc_dev_info(spare, &si);
	assert_int_equal(tc_array_add_spare(fx.array, spare), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.spares, 1);
	assert_int_equal(st.extra[0].state, TC_MEMBER_SPARE);

	/* Slow enough that the writes below run during the rebuild (virtual clock). */
	set_rate(&fx, 1000000, 4 * CHUNK * 1000, 100);
	unsigned victim = 1;
	assert_int_equal(tc_array_fail_member(fx.array, victim), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].state, TC_MEMBER_REBUILDING);
	assert_string_equal(st.member[victim].name, si.name);
	assert_int_equal(st.spares, 0);
	assert_int_equal(st.nextra, 1);
	assert_int_equal(st.extra[0].state, TC_MEMBER_FAULTY);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_REBUILD);
	assert_int_equal(events_degraded, 1);

	uint64_t wseed = seed * 31 + 7;
	bool seen_mid = false;
	for (unsigned round = 0; round < 40; round++) {
		random_writes(&fx, data, 8, &wseed);
		tc_ctx_advance(fx.ctx, 200000);         /* 200 us: a window or so */
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		if (st.sync == TC_ARRAY_SYNC_REBUILD && st.sync_pos > 0 &&
		    st.sync_pos < st.sync_end) {
			seen_mid = true;
			check_data(&fx, data);  /* during the rebuild */
			assert_true(st.sync_rate > 0);
			assert_true(st.sync_eta_ns > 0);
		}
	}
	assert_true(seen_mid);
	assert_int_equal(tc_array_wait(fx.array), 0);
	random_writes(&fx, data, 20, &wseed);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_IDLE);
	assert_int_equal(st.member[victim].state, TC_MEMBER_ACTIVE);
	assert_false(st.degraded);
	assert_int_equal(st.faulty, 0);
	assert_int_equal(events_redundant, 1);
	check_data(&fx, data);
	/* The rebuilt member stands in for the others: fail as many as the level allows,
	 * all but the rebuilt one for RAID 1. */
	unsigned fail = level == TC_RAID6 ? 2 : level == TC_RAID1 ? n - 1 : 1;
	for (unsigned i = 0, done = 0; i < n && done < fail; i++) {
		if (i == victim || (level == TC_RAID10 && i != (victim ^ 1)))
			continue;
		assert_int_equal(tc_array_fail_member(fx.array, i), 0);
		done++;
	}
	check_data(&fx, data);
	tc_dev_unwatch(fx.array, watch, NULL);
	free(data);
	raid_fx_close(&fx);
}

static void test_takeover_raid1(void **state)
{
	(void)state;
	check_takeover(TC_RAID1, 3, 1);
}

static void test_takeover_raid10(void **state)
{
	(void)state;
	check_takeover(TC_RAID10, 4, 2);
}

static void test_takeover_raid5(void **state)
{
	(void)state;
	check_takeover(TC_RAID5, 4, 3);
	check_takeover(TC_RAID5, 3, 4);
}

static void test_takeover_raid6(void **state)
{
	(void)state;
	check_takeover(TC_RAID6, 6, 5);
}

/* A spare added to an array already degraded takes over at once. */
static void test_spare_into_degraded(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 9, TC_RAID5, 4, CHUNK,
				      MEMBER), 0);
	uint8_t *data = fill_array(&fx, 9);
	assert_int_equal(tc_array_fail_member(fx.array, 3), 0);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[3].state, TC_MEMBER_REBUILDING);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[3].state, TC_MEMBER_ACTIVE);
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	check_data(&fx, data);
	free(data);
	raid_fx_close(&fx);
}

/* ---- RAID 6: two members in one pass; a survivor's read error ---------------------- */

static void test_raid6_double(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 11, TC_RAID6, 6, CHUNK,
				      MEMBER), 0);
	uint8_t *data = fill_array(&fx, 11);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	struct tc_dev_stats before[6];
	for (unsigned i = 0; i < 6; i++)
		tc_dev_stats(fx.member[i], &before[i]);
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 4), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_REBUILDING);
	assert_int_equal(st.member[4].state, TC_MEMBER_REBUILDING);
	assert_int_equal(st.redundancy, 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	/* One pass: every survivor read once over. */
	for (unsigned i = 1; i < 6; i++) {
		if (i == 4)
			continue;
		struct tc_dev_stats after;
		tc_dev_stats(fx.member[i], &after);
		assert_int_equal(after.bytes_read - before[i].bytes_read, MEMBER);
	}
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[4].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.redundancy, 2);
	assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 2), 0);
	check_data(&fx, data);
	free(data);
	raid_fx_close(&fx);
}

static void test_raid6_survivor_read_error(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 13, TC_RAID6, 6,
					     CHUNK, MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t *data = fill_array(&fx, 13);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	/* Member 2 fails one read a third of the way through the rebuild. */
	struct tc_fault f = { .op = TC_FAULT_READ, .after = 20, .error = EIO,
			      .transient = true };
	assert_int_equal(tc_fault_arm(fx.fault[2], &f), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 5), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	struct tc_fault_state fs;
	assert_int_equal(tc_fault_get(fx.fault[2], &fs), 0);
	assert_int_equal(fs.failed, 1);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[5].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[2].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[2].read_errors, 1);
	assert_int_equal(st.member[2].corrected, 1);
	/* The rebuilt member and the one that failed to read hold the right data. */
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
	check_data(&fx, data);
	free(data);
	raid_fx_close(&fx);
}

/* ---- rates --------------------------------------------------------------------------- */

/* Virtual ns a rebuild of member 1 takes, with a foreground read every @load_ns (0:
 * idle). */
static uint64_t rebuild_time(uint64_t lo, uint64_t hi, unsigned prio, uint64_t load_ns)
{
	struct raid_fx fx;
	struct tc_array_status st;
	uint8_t buf[CHUNK];

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 17, TC_RAID5, 4, CHUNK,
				      MEMBER), 0);
	set_rate(&fx, lo, hi, prio);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	uint64_t t0 = tc_ctx_now(fx.ctx);
	assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
	if (!load_ns) {
		assert_int_equal(tc_array_wait(fx.array), 0);
	} else {
		uint64_t seed = 5;
		for (;;) {
			assert_int_equal(tc_array_status(fx.array, &st), 0);
			if (st.sync == TC_ARRAY_SYNC_IDLE)
				break;
			uint64_t off = raid_rand(&seed) % (array_size(&fx) / CHUNK) * CHUNK;
			assert_int_equal(tc_dev_pread(fx.array, buf, CHUNK, off), 0);
			/* The clock in 20 us steps, the windows due in each run. */
			for (uint64_t t = 0; t < load_ns; t += 20000) {
				tc_ctx_advance(fx.ctx, 20000);
				while (tc_ctx_poll(fx.ctx, 256))
					;
			}
		}
	}
	uint64_t t = tc_ctx_now(fx.ctx) - t0;
	raid_fx_close(&fx);
	return t;
}

static void test_rates(void **state)
{
	(void)state;
	const uint64_t lo = 1000000, hi = 50000000;     /* bytes/s */
	double expect_hi = (double)MEMBER / hi * 1e9, expect_lo = (double)MEMBER / lo * 1e9;

	uint64_t idle = rebuild_time(lo, hi, 0, 0);
	assert_true(idle >= 0.8 * expect_hi && idle <= 1.25 * expect_hi);
	/* Under load (a read every 0.5 ms): the floor. */
	uint64_t loaded = rebuild_time(lo, hi, 0, 500000);
	assert_true(loaded >= 0.8 * expect_lo && loaded <= 1.25 * expect_lo);
	/* Priority 50: half way between. */
	double expect_mid = (double)MEMBER / (lo + (hi - lo) / 2) * 1e9;
	uint64_t mid = rebuild_time(lo, hi, 50, 500000);
	assert_true(mid >= 0.8 * expect_mid && mid <= 1.25 * expect_mid);
}

/* A rate changed live takes effect on the next window. */
static void test_rate_live(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 19, TC_RAID1, 2, CHUNK,
				      MEMBER), 0);
	set_rate(&fx, 1000, 4096, 0);           /* a chunk a second */
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	for (unsigned i = 0; i < 3; i++) {
		while (tc_ctx_poll(fx.ctx, 256))
			;
		tc_ctx_advance(fx.ctx, 1000000000ull);
	}
	while (tc_ctx_poll(fx.ctx, 256))
		;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_true(st.sync_pos >= 2 * CHUNK && st.sync_pos <= 5 * CHUNK);
	assert_int_equal(st.rebuild.max_rate, 4096);
	uint64_t t0 = tc_ctx_now(fx.ctx);
	set_rate(&fx, 0, 0, 0);                 /* md's defaults: 200 MB/s */
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_true(tc_ctx_now(fx.ctx) - t0 < 100000000ull);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_ACTIVE);
	raid_fx_close(&fx);
}

/* ---- replace ------------------------------------------------------------------------- */

static void check_replace(enum tc_raid_level_id level, unsigned n, bool read_errors)
{
	struct raid_fx fx;
	struct tc_array_status st;

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 23, level, n, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t *data = fill_array(&fx, 23);
	unsigned victim = 2;
	struct tc_dev_info oi, ni;
	tc_dev_info(fx.fault[victim], &oi);
	tc_dev *nd = new_member(&fx, MEMBER);
	tc_dev_info(nd, &ni);
	if (read_errors) {
		struct tc_fault f = { .op = TC_FAULT_READ, .after = 10, .error = EIO,
				      .transient = true };
		assert_int_equal(tc_fault_arm(fx.fault[victim], &f), 0);
	}
	set_rate(&fx, 1000000, 8 * CHUNK * 1000, 100);
	assert_int_equal(tc_array_replace(fx.array, victim, nd), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].state, TC_MEMBER_REBUILDING);
	assert_string_equal(st.member[victim].name, ni.name);
	assert_string_equal(st.member[victim].replacing, oi.name);
	assert_false(st.degraded);
	uint64_t seed = 99;
	for (unsigned round = 0; round < 20; round++) {
		random_writes(&fx, data, 6, &seed);
		tc_ctx_advance(fx.ctx, 200000);
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_int_equal(st.redundancy, level == TC_RAID1 ? (int)n - 1 :
				 level == TC_RAID6 ? 2 : 1);
	}
	check_data(&fx, data);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].state, TC_MEMBER_ACTIVE);
	assert_null(st.member[victim].replacing);
	assert_int_equal(st.nextra, 1);
	assert_int_equal(st.extra[0].state, TC_MEMBER_REPLACED);
	assert_string_equal(st.extra[0].name, oi.name);
	check_data(&fx, data);
	/* The successor holds the data: fail another member. */
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	check_data(&fx, data);
	assert_int_equal(tc_array_remove(fx.array, oi.name), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.nextra, 0);
	free(data);
	raid_fx_close(&fx);
}

static void test_replace(void **state)
{
	(void)state;
	check_replace(TC_RAID5, 4, false);
	check_replace(TC_RAID1, 3, false);
	check_replace(TC_RAID6, 5, false);
}

static void test_replace_read_errors(void **state)
{
	(void)state;
	check_replace(TC_RAID5, 4, true);
	check_replace(TC_RAID10, 4, true);
}

/* A replace whose successor fails: the old member, which took every write of the
 * replace (below the copy position too), keeps the slot, and the array its redundancy
 * (md gives up a failed replacement the same way). */
static void check_replace_successor_fails(enum tc_raid_level_id level, unsigned n)
{
	struct raid_fx fx;
	struct tc_array_status st;

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 29, level, n, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t *data = fill_array(&fx, 29);
	unsigned victim = 1;
	struct tc_dev_info oi, ni;
	tc_dev_info(fx.fault[victim], &oi);
	tc_dev *nd;
	assert_int_equal(tc_dev_new_fault(fx.ctx, new_member(&fx, MEMBER), &nd), 0);
	tc_dev_info(nd, &ni);
	set_rate(&fx, 1000000, 8 * CHUNK * 1000, 100);
	assert_int_equal(tc_array_replace(fx.array, victim, nd), 0);
	uint64_t seed = 41;
	for (unsigned round = 0; round < 8; round++) {
		random_writes(&fx, data, 6, &seed);
		tc_ctx_advance(fx.ctx, 200000);
	}
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_REBUILD);
	assert_true(st.sync_pos > 0 && st.sync_pos < st.sync_end);
	struct tc_fault f = { .op = TC_FAULT_ALL, .error = EIO };
	assert_int_equal(tc_fault_arm(nd, &f), 0);
	for (unsigned round = 0; round < 8; round++) {
		random_writes(&fx, data, 6, &seed);
		tc_ctx_advance(fx.ctx, 200000);
	}
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].state, TC_MEMBER_ACTIVE);
	assert_string_equal(st.member[victim].name, oi.name);
	assert_null(st.member[victim].replacing);
	assert_false(st.degraded);
	assert_int_equal(st.faulty, 0);
	assert_int_equal(st.redundancy, level == TC_RAID6 ? 2 : 1);
	assert_int_equal(st.nextra, 1);
	assert_int_equal(st.extra[0].state, TC_MEMBER_FAULTY);
	assert_string_equal(st.extra[0].name, ni.name);
	check_data(&fx, data);
	/* The old member holds every write: fail another member and read it all. */
	assert_int_equal(tc_array_fail_member(fx.array, victim == 0 ? 1 : 0), 0);
	check_data(&fx, data);
	free(data);
	raid_fx_close(&fx);
}

static void test_replace_successor_fails(void **state)
{
	(void)state;
	check_replace_successor_fails(TC_RAID5, 4);
	check_replace_successor_fails(TC_RAID6, 5);
	check_replace_successor_fails(TC_RAID1, 2);
}

/* A member failing with several writes in flight fails once: the errors of its other
 * writes, completing after a spare took its place, are not the spare's. */
static void test_late_errors_after_takeover(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 31, TC_RAID5, 4, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t *data = fill_array(&fx, 31);
	tc_dev *spare = new_member(&fx, MEMBER);
	struct tc_dev_info si;
	tc_dev_info(spare, &si);
	assert_int_equal(tc_array_add_spare(fx.array, spare), 0);
	struct tc_fault f = { .op = TC_FAULT_WRITE, .error = EIO };
	assert_int_equal(tc_fault_arm(fx.fault[2], &f), 0);
	/* Full stripes (3 data chunks), each writing every member, all in flight. */
	enum { NW = 8 };
	struct raid_pending p[NW];
	uint8_t *buf = malloc(NW * 3 * CHUNK);
	assert_non_null(buf);
	uint64_t seed = 43;
	raid_fill(buf, NW * 3 * CHUNK, &seed);
	for (unsigned w = 0; w < NW; w++) {
		uint64_t off = (uint64_t)(2 * w + 1) * 3 * CHUNK;
		raid_pending_submit(fx.ctx, fx.array, &p[w], TC_OP_WRITE, buf + w * 3 * CHUNK,
				    3 * CHUNK, off);
		memcpy(data + off, buf + w * 3 * CHUNK, 3 * CHUNK);
	}
	for (unsigned w = 0; w < NW; w++)
		assert_int_equal(raid_pending_wait(&p[w]), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_string_equal(st.member[2].name, si.name);
	assert_int_not_equal(st.member[2].state, TC_MEMBER_FAULTY);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[2].state, TC_MEMBER_ACTIVE);
	assert_false(st.degraded);
	assert_int_equal(st.nextra, 1);
	assert_int_equal(st.extra[0].state, TC_MEMBER_FAULTY);
	check_data(&fx, data);
	free(buf);
	free(data);
	raid_fx_close(&fx);
}

/* ---- check and repair ----------------------------------------------------------- */

static void check_scrub(enum tc_raid_level_id level, unsigned n)
{
	struct raid_fx fx;
	struct tc_array_status st;
	uint8_t junk[CHUNK];

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 29, level, n, CHUNK,
				      MEMBER), 0);
	uint8_t *data = fill_array(&fx, 29);
	assert_int_equal(tc_array_check(fx.array, false), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.mismatches, 0);
	assert_true(st.checked > 0);
	/* Garbage in three chunks of two members, written to the members directly (no two
	 * in one stripe or one mirrored chunk). */
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(tc_dev_pwrite(fx.member[1], junk, CHUNK, 3 * CHUNK, 0), 0);
	assert_int_equal(tc_dev_pwrite(fx.member[1], junk, CHUNK, 10 * CHUNK, 0), 0);
	assert_int_equal(tc_dev_pwrite(fx.member[2 % n], junk, CHUNK, 20 * CHUNK, 0), 0);
	assert_int_equal(tc_array_check(fx.array, false), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_true(st.sync == TC_ARRAY_SYNC_CHECK);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.mismatches, 3);
	/* Check changed nothing. */
	assert_int_equal(tc_array_check(fx.array, false), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.mismatches, 3);
	assert_int_equal(tc_array_check(fx.array, true), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.mismatches, 3);
	assert_int_equal(tc_array_check(fx.array, false), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.mismatches, 0);
	assert_false(st.check_stopped);                 /* a whole pass */
	assert_int_equal(st.checked, st.check_windows);
	/* Repaired consistently: whatever the array reads now survives a member loss. */
	uint64_t size = array_size(&fx);
	uint8_t *now = malloc(size);
	assert_int_equal(tc_dev_pread(fx.array, now, size, 0), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
	check_data(&fx, now);
	free(now);
	free(data);
	raid_fx_close(&fx);
}

static void test_check_repair(void **state)
{
	(void)state;
	check_scrub(TC_RAID5, 4);
	check_scrub(TC_RAID6, 5);
	check_scrub(TC_RAID1, 2);
	check_scrub(TC_RAID10, 4);
}

/* A member failing during a check: the check stops, the spare is rebuilt. */
static void test_check_then_failure(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	for (unsigned lv = 0; lv < 2; lv++) {
		assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 43,
					      lv ? TC_RAID10 : TC_RAID5, 4, CHUNK, MEMBER), 0);
		tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
		uint8_t *data = fill_array(&fx, 43);
		assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
		set_rate(&fx, 1000, 16 * CHUNK, 100);   /* 16 windows a second */
		assert_int_equal(tc_array_check(fx.array, false), 0);
		for (unsigned i = 0; i < 10; i++) {
			tc_ctx_advance(fx.ctx, 100000000ull);
			while (tc_ctx_poll(fx.ctx, 256))
				;
		}
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_int_equal(st.sync, TC_ARRAY_SYNC_CHECK);
		assert_true(st.checked > 0 && st.sync_pos < st.sync_end);
		/* The next window started, its reads queued: fail a member under it. */
		tc_ctx_advance(fx.ctx, 100000000ull);
		tc_ctx_poll(fx.ctx, 1);
		assert_true(tc_ctx_pending(fx.ctx) > 0);
		assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_int_equal(st.sync, TC_ARRAY_SYNC_REBUILD);
		set_rate(&fx, 0, UINT64_MAX, 100);
		assert_int_equal(tc_array_wait(fx.array), 0);
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
		/* The check is reported as stopped, not as a whole pass. */
		assert_true(st.check_stopped);
		assert_true(st.checked < st.check_windows);
		assert_int_equal(tc_array_fail_member(fx.array, lv ? 0 : 2), 0);
		check_data(&fx, data);
		free(data);
		raid_fx_close(&fx);
	}
}

/* ---- refusals ---------------------------------------------------------------------- */

static void test_refusals(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 31, TC_RAID0, 2, CHUNK,
				      MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), -EINVAL);
	assert_non_null(strstr(last_err, "raid0"));
	assert_int_equal(tc_array_check(fx.array, false), -EINVAL);
	raid_fx_close(&fx);

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 31, TC_RAID5, 3, CHUNK,
				      MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER / 2)), -EINVAL);
	assert_non_null(strstr(last_err, "131072 bytes"));
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.nextra, 0);
	assert_int_equal(tc_array_remove(fx.array, "nothing-of-that-name"), -ENOENT);
	assert_non_null(strstr(last_err, "nothing-of-that-name"));
	struct tc_dev_info mi;
	tc_dev_info(fx.member[0], &mi);
	assert_int_equal(tc_array_remove(fx.array, mi.name), -EBUSY);
	assert_non_null(strstr(last_err, "active"));
	struct tc_array_rebuild_opts o = { .min_rate = 10, .max_rate = 5 };
	assert_int_equal(tc_array_set_rebuild(fx.array, &o), -EINVAL);
	o = (struct tc_array_rebuild_opts){ .priority = 101 };
	assert_int_equal(tc_array_set_rebuild(fx.array, &o), -EINVAL);
	assert_non_null(strstr(last_err, "101"));
	assert_int_equal(tc_array_replace(fx.array, 7, new_member(&fx, MEMBER)), -EINVAL);
	assert_non_null(strstr(last_err, "member 7"));
	/* A spare is removed; a failed member with no spare is removed from its slot. */
	tc_dev *sp = new_member(&fx, MEMBER);
	struct tc_dev_info si;
	tc_dev_info(sp, &si);
	assert_int_equal(tc_array_add_spare(fx.array, sp), 0);
	assert_int_equal(tc_array_remove(fx.array, si.name), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 0), 0);
	assert_int_equal(tc_array_check(fx.array, false), -EBUSY);
	assert_non_null(strstr(last_err, "degraded"));
	assert_int_equal(tc_array_replace(fx.array, 0, new_member(&fx, MEMBER)), -EBUSY);
	/* By its slot number too. */
	assert_int_equal(tc_array_remove(fx.array, "3"), -ENOENT);
	assert_non_null(strstr(last_err, "no slot 3"));
	assert_int_equal(tc_array_remove(fx.array, "0"), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_string_equal(st.member[0].name, "(removed)");
	/* The empty slot takes the next spare. */
	uint64_t seed = 3;
	uint8_t buf[2 * CHUNK];
	raid_fill(buf, sizeof(buf), &seed);
	assert_int_equal(tc_dev_pwrite(fx.array, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_REBUILDING);
	assert_int_equal(tc_array_replace(fx.array, 1, new_member(&fx, MEMBER)), -EBUSY);
	assert_int_equal(tc_array_check(fx.array, false), -EBUSY);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
	uint8_t back[sizeof(buf)];
	assert_int_equal(tc_dev_pread(fx.array, back, sizeof(back), 0), 0);
	assert_memory_equal(back, buf, sizeof(buf));
	raid_fx_close(&fx);
}

/* ---- checkpoints and resume ---------------------------------------------------- */

static unsigned persist_calls;
static uint64_t persist_pos[64];

static int persist(struct tc_array *a)
{
	if (persist_calls < 64)
		persist_pos[persist_calls] = atomic_load(&a->rebuild_pos);
	persist_calls++;
	return 0;
}

static void test_checkpoints(void **state)
{
	struct raid_fx fx;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 37, TC_RAID5, 4, CHUNK,
				      MEMBER), 0);
	struct tc_array *a = (struct tc_array *)fx.array;
	a->persist = persist;
	persist_calls = 0;
	uint8_t *data = fill_array(&fx, 37);
	assert_int_equal(tc_array_add_spare(fx.array, new_member(&fx, MEMBER)), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	assert_int_equal(persist_calls, 1);             /* the spare added */
	assert_int_equal(tc_array_fail_member(fx.array, 2), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	/* The takeover, 15 checkpoints (every 1/16), the end. */
	assert_int_equal(persist_calls, 1 + 1 + 15 + 1);
	for (unsigned i = 2; i < 17; i++) {
		assert_true(persist_pos[i] > persist_pos[i - 1]);
		assert_true(persist_pos[i] - persist_pos[i - 1] >= MEMBER / 16);
	}
	assert_int_equal(persist_pos[17], 0);           /* no member rebuilding */
	check_data(&fx, data);
	free(data);
	raid_fx_close(&fx);
}

static void test_resume(void **state)
{
	struct raid_fx fx;
	struct tc_array_status st;

	(void)state;
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 41, TC_RAID6, 5, CHUNK,
				      MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	struct tc_array *a = (struct tc_array *)fx.array;
	uint8_t *data = fill_array(&fx, 41);
	uint8_t *img = malloc(MEMBER), *back = malloc(MEMBER), junk[CHUNK];
	assert_int_equal(tc_dev_pread(fx.member[3], img, MEMBER, 0), 0);
	assert_int_equal(array_rebuild_resume(a), -EINVAL);     /* nothing rebuilding */
	/* As assembly leaves it: member 3 rebuilding, valid below 24 chunks only. */
	memset(junk, 0xa5, sizeof(junk));
	for (uint64_t c = 24; c < MEMBER / CHUNK; c++)
		assert_int_equal(tc_dev_pwrite(fx.member[3], junk, CHUNK, c * CHUNK, 0), 0);
	atomic_store(&a->rebuild_pos, 24 * CHUNK);
	atomic_store(&a->m[3].state, TC_MEMBER_REBUILDING);
	atomic_fetch_or(&a->faulty, 1u << 3);
	array_health_changed(a);
	check_data(&fx, data);          /* member 3 read below 24 chunks only */
	atomic_store(&a->rebuild_pos, 5 * CHUNK + 1);
	assert_int_equal(array_rebuild_resume(a), -EINVAL);
	assert_non_null(strstr(last_err, "whole chunk"));
	atomic_store(&a->rebuild_pos, 24 * CHUNK);
	struct tc_dev_stats before, after;
	tc_dev_stats(fx.member[0], &before);
	assert_int_equal(array_rebuild_resume(a), 0);
	assert_int_equal(tc_array_wait(fx.array), 0);
	tc_dev_stats(fx.member[0], &after);
	/* Only the rows from the position on were read. */
	assert_int_equal(after.bytes_read - before.bytes_read, MEMBER - 24 * CHUNK);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[3].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.redundancy, 2);
	assert_int_equal(tc_dev_pread(fx.member[3], back, MEMBER, 0), 0);
	assert_memory_equal(back, img, MEMBER);
	free(img);
	free(back);
	free(data);
	raid_fx_close(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_takeover_raid1),
		cmocka_unit_test(test_takeover_raid10),
		cmocka_unit_test(test_takeover_raid5),
		cmocka_unit_test(test_takeover_raid6),
		cmocka_unit_test(test_spare_into_degraded),
		cmocka_unit_test(test_raid6_double),
		cmocka_unit_test(test_raid6_survivor_read_error),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_rate_live),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_replace_read_errors),
		cmocka_unit_test(test_replace_successor_fails),
		cmocka_unit_test(test_late_errors_after_takeover),
		cmocka_unit_test(test_check_repair),
		cmocka_unit_test(test_check_then_failure),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_checkpoints),
		cmocka_unit_test(test_resume),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
