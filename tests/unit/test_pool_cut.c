/* SPDX-License-Identifier: MIT */
/*
 * test_pool_cut.c - a power cut at every device request of a cache pool's degrade to
 * write-through and its return to write-back (src/cache/protect.c over src/raid/):
 * a write-back volume holds dirty data on a pool (RAID 1 of two members, RAID 5 of
 * three, RAID 10 of four) with a hot spare; a member fails, write-back is held (the
 * volume runs write-through and its dirty data is written back flat out), a write
 * arrives meanwhile, the spare takes the slot and is rebuilt, the volume returns to
 * write-back, and a client's FLUSH commits the cache's metadata (the written-back
 * lines recorded clean).  The whole sequence runs on crash devices behind the cutter of cut_dev.h, which lets N requests through
 * (counted over the pool's members, its spare and the backing together) and fails the
 * later ones; the crash devices then keep a seed-chosen part of what was not flushed.
 * For N = 0, 1, 2, ... until the sequence completes uncut, the files are "rebooted":
 * the pool assembled from the devices holding its member superblocks, the cache opened
 * on it, the backing attached, and checked:
 *   - the pool assembles and the cache opens on it; the state is named: old (the
 *     failure not recorded, the first member in the slot), rebuilding (the spare in the
 *     slot, its rebuild resumed at assembly) or new (the spare active in the slot);
 *   - the volume's stored policy is still write-back, whatever the hold did;
 *   - the dirty data written before the failure reads back, and so does the write
 *     (FUA) made while write-back was held once it had completed;
 *   - after the restart's rebuild the pool is whole and the volume runs write-back
 *     again; then the other first member fails too, and every byte still reads back,
 *     now from the spare's copy alone;
 *   - once the cache has written everything back, the backing alone holds the data
 *     (no line was marked clean before its data was durable there).
 * Deterministic contexts (the seed of a run is its N).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"
#include "helpers.h"
#include "tiercache.h"
#include "tiercache-test.h"
#include "cut_dev.h"

#define MIB (1024u * 1024u)
#define POOL_DATA (8u * MIB)                          /* pool data per member */
#define MSIZE (TC_ARRAY_DATA_OFFSET + POOL_DATA)      /* member files, sparse */
#define HDD_SIZE (16u * MIB)
#define MAXDEV CUT_FILES
/* The pool of the run: its level and members; device g_members is its hot spare,
 * the next one the backing. */
static enum tc_raid_level_id g_level;
static unsigned g_members;
#define NPOOL (g_members + 1)   /* the members and the hot spare */
#define NDEV (NPOOL + 1)        /* and the backing */
#define HDD NPOOL
#define SPARE g_members
#define VICTIM 0u               /* the member that fails */
#define MAX_CUTS 3000
#define DIRTY_OFF (1u * MIB)        /* the dirty data before the failure */
#define DIRTY_LEN (256u * 1024u)
#define HELD_OFF (6u * MIB)         /* the write made while write-back is held */
#define HELD_LEN (64u * 1024u)

struct fx {
	struct cut_files cf;     /* the device files, and as prepare() left them */
	struct t_log log;
};

static uint8_t dirty_data[DIRTY_LEN], held_data[HELD_LEN];

static tc_dev *open_file(tc_ctx *ctx, const char *path, uint64_t size, unsigned flags)
{
	tc_dev *d;
	assert_int_equal(tc_dev_open_file(ctx, path, flags | TC_DEV_BUFFERED, size, &d), 0);
	return d;
}

/* Let the engine run, the clock moving 10 ms a step, for @steps steps. */
static void run_steps(tc_ctx *ctx, unsigned steps)
{
	for (unsigned i = 0; i < steps; i++) {
		while (tc_ctx_poll(ctx, 256) > 0)
			;
		tc_ctx_advance(ctx, 10000000ull);
	}
	while (tc_ctx_poll(ctx, 256) > 0)
		;
}

/* The files before the sequence: the pool "pool" (RAID 1 of devices 0 and 1, device 2
 * its hot spare) formatted as a protected cache, the backing attached in write-back
 * with the dirty data in the cache only (the flush rate low, the clock stopped), every
 * device closed clean. */
static void prepare(struct fx *f)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 1, TC_LOG_ERROR, &f->log);
	tc_dev *m[MAXDEV], *pool, *hdd;
	tc_cache *c;
	tc_volume *v;
	struct tc_array_opts o = { .level = g_level };

	for (unsigned i = 0; i < NDEV; i++)
		unlink(f->cf.path[i]);
	for (unsigned i = 0; i < NPOOL; i++)
		m[i] = open_file(ctx, f->cf.path[i], MSIZE, TC_DEV_CREATE);
	assert_int_equal(tc_array_create(ctx, "pool", &o, m, g_members, &m[SPARE], 1, 0,
					 &pool), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	assert_int_equal(tc_cache_format(ctx, pool, &co), 0);
	hdd = open_file(ctx, f->cf.path[HDD], HDD_SIZE, TC_DEV_CREATE);
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	s.flush_rate = TC_FLUSH_LOW;
	assert_int_equal(tc_backing_format(ctx, hdd, "vol", &s), 0);
	assert_int_equal(tc_cache_open(ctx, pool, &c), 0);
	assert_int_equal(tc_cache_attach(c, hdd, NULL, 0, &v), 0);
	assert_int_equal(tc_volume_pwrite(v, dirty_data, DIRTY_LEN, DIRTY_OFF, TC_IO_FUA), 0);
	struct tc_volume_stats vs;
	tc_volume_stats(v, &vs);
	assert_int_equal(vs.dirty_bytes, DIRTY_LEN);
	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(pool);
	tc_ctx_free(ctx);
}

/* The run's devices: crash devices over the files (seeds from @n), each behind a
 * cutter spending @b. */
struct run {
	tc_ctx *ctx;
	struct cut_budget b;
	tc_dev *crash[MAXDEV], *cut[MAXDEV];
};

/* Whether the sequence has ended: the spare active in the victim's slot, the pool
 * whole and idle, write-back no longer held, the dirty data written back (by the
 * hold's flat-out cleaning, or after it at the volume's low flush rate). */
static bool sequence_ended(tc_dev *pool, tc_cache *c, tc_volume *v, const char *spare)
{
	struct tc_array_status st;
	struct tc_cache_stats cs;
	struct tc_volume_stats vs;
	assert_int_equal(tc_array_status(pool, &st), 0);
	tc_cache_stats(c, &cs);
	tc_volume_stats(v, &vs);
	return !st.degraded && st.sync == TC_ARRAY_SYNC_IDLE && st.member[VICTIM].name &&
	       !strcmp(st.member[VICTIM].name, spare) &&
	       st.member[VICTIM].state == TC_MEMBER_ACTIVE && !cs.writeback_held &&
	       vs.dirty_bytes == 0;
}

/* Run the sequence with the power cut after @n requests; true when it completed
 * uncut.  *@held_done: the write made while write-back was held completed. */
static bool run_cut(struct fx *f, uint64_t n, bool *held_done)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	r.ctx = t_ctx(TC_CTX_DETERMINISTIC, n + 1, TC_LOG_ERROR, &f->log);
	atomic_store(&r.b.limit, UINT64_MAX);
	for (unsigned i = 0; i < NDEV; i++) {
		assert_int_equal(tc_dev_new_crash(r.ctx, f->cf.path[i], 0, 0, n * NDEV + i + 1,
						  &r.crash[i]), 0);
		r.cut[i] = cut_new(r.ctx, r.crash[i], &r.b);
	}
	char spare[320];
	snprintf(spare, sizeof(spare), "%s", r.cut[SPARE]->name);

	/* As a host starts it: the pool assembled (rebuilds at full speed on the virtual
	 * clock), the cache opened on it, the volume attached; durable before the cut. */
	tc_dev *pool;
	tc_cache *c;
	tc_volume *v;
	assert_int_equal(tc_array_assemble(r.ctx, r.cut, NPOOL, 0, &pool), 0);
	struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX, .priority = 100 };
	assert_int_equal(tc_array_set_rebuild(pool, &ro), 0);
	assert_int_equal(tc_cache_open(r.ctx, pool, &c), 0);
	assert_int_equal(tc_cache_attach(c, r.cut[HDD], NULL, 0, &v), 0);
	for (unsigned i = 0; i < NDEV; i++)
		assert_int_equal(tc_dev_flush(r.crash[i]), 0);

	cut_budget_start(&r.b, n);
	*held_done = false;
	bool ok = tc_array_fail_member(pool, VICTIM) == 0;
	if (ok) {
		struct tc_volume_stats vs;
		tc_volume_stats(v, &vs);
		/* Held at once: the write goes through to the backing. */
		if (vs.effective_policy != TC_WP_WT && cut_budget_within(&r.b, n))
			fail_msg("cut after %llu requests: a pool member failed but the volume "
				 "runs policy %u, not write-through", (unsigned long long)n,
				 vs.effective_policy);
		*held_done = tc_volume_pwrite(v, held_data, HELD_LEN, HELD_OFF,
					      TC_IO_FUA) == 0;
		ok = *held_done;
	}
	for (unsigned i = 0; ok && i < 1000 && !sequence_ended(pool, c, v, spare); i++) {
		if (tc_array_wait(pool) < 0)
			ok = false;
		run_steps(r.ctx, 10);
	}
	/* A client's FLUSH: the cache's commit records the written-back lines clean. */
	ok = ok && sequence_ended(pool, c, v, spare) &&
	     tc_volume_io(v, TC_OP_FLUSH, 0, NULL, 0, 0) == 0;
	bool done = cut_budget_done(&r.b, n) && ok;

	/* The power fails: nothing more reaches the files, then each crash device keeps
	 * its seed's choice of what was not flushed.  The engine's queued work runs out
	 * against failing devices before the cache is abandoned (process death): closing
	 * the pool polls the context, which must then hold nothing of the cache's. */
	for (unsigned i = 0; i < NDEV; i++)
		assert_true(tc_crash_power_cut(r.crash[i]) >= 0);
	while (tc_ctx_poll(r.ctx, 256) > 0)
		;
	tc_cache_abandon(c);
	tc_dev_close(r.cut[HDD]);
	tc_dev_close(pool);
	for (unsigned i = 0; i < NDEV; i++)
		tc_dev_close(r.crash[i]);
	tc_ctx_free(r.ctx);
	return done;
}

/* Read @len bytes at @off of @v and compare them with @want. */
static void check_range(tc_volume *v, const uint8_t *want, uint64_t len, uint64_t off,
			uint64_t n, const char *state, const char *what, const char *when)
{
	static uint8_t back[DIRTY_LEN];
	assert_true(len <= sizeof(back));
	int r = tc_volume_pread(v, back, len, off);
	if (r)
		fail_msg("cut after %llu requests (%s): %s: reading %s fails (%d)",
			 (unsigned long long)n, state, when, what, r);
	for (uint64_t s = 0; s < len; s += TC_SECTOR_SIZE)
		if (memcmp(back + s, want + s, TC_SECTOR_SIZE))
			fail_msg("cut after %llu requests (%s): %s: %s: the sector at %llu reads "
				 "other data than was written", (unsigned long long)n, state, when,
				 what, (unsigned long long)(off + s));
}

/* The same on the backing @hdd itself, under the cache. */
static void check_backing(tc_dev *hdd, const uint8_t *want, uint64_t len, uint64_t off,
			  uint64_t n, const char *state, const char *what)
{
	static uint8_t back[DIRTY_LEN];
	assert_true(len <= sizeof(back));
	assert_int_equal(tc_dev_pread(hdd, back, len, TC_BACKING_DATA_OFFSET + off), 0);
	for (uint64_t s = 0; s < len; s += TC_SECTOR_SIZE)
		if (memcmp(back + s, want + s, TC_SECTOR_SIZE))
			fail_msg("cut after %llu requests (%s): %s: the sector at %llu of the "
				 "backing reads other data than was written, with no dirty data "
				 "left in the cache (a line marked clean before its data was "
				 "durable on the backing)", (unsigned long long)n, state, what,
				 (unsigned long long)(off + s));
}

static void check_data(tc_volume *v, bool held_done, uint64_t n, const char *state,
		       const char *when)
{
	check_range(v, dirty_data, DIRTY_LEN, DIRTY_OFF, n, state,
		    "the dirty data written before the failure", when);
	if (held_done)
		check_range(v, held_data, HELD_LEN, HELD_OFF, n, state,
			    "the write completed while write-back was held", when);
}

/* After the cut: the pool assembles, the cache opens, old state or rebuilding or new,
 * the data right, whole and with the other first member failed. */
static void check_after(struct fx *f, uint64_t n, bool done, bool held_done)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, n + 1, TC_LOG_ERROR, &f->log);
	tc_dev *devs[MAXDEV], *pool, *hdd;
	unsigned k = 0;
	for (unsigned i = 0; i < NPOOL; i++) {
		tc_dev *d = open_file(ctx, f->cf.path[i], MSIZE, 0);
		struct tc_array_member_info mi;
		if (tc_array_examine(ctx, d, &mi) == 1 && !strcmp(mi.name, "pool"))
			devs[k++] = d;
		else
			tc_dev_close(d);
	}
	int r = tc_array_assemble(ctx, devs, k, 0, &pool);
	if (r)
		fail_msg("cut after %llu requests: the pool does not assemble from its %u "
			 "devices (%d: %s)", (unsigned long long)n, k, r, f->log.last);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(pool, &st), 0);
	const char *spare = f->cf.path[SPARE];
	bool in_slot = st.member[VICTIM].name && !strcmp(st.member[VICTIM].name, spare);
	const char *state = !in_slot ? "old"
		: st.member[VICTIM].state == TC_MEMBER_ACTIVE ? "new" : "rebuilding (resumed)";
	if (done && strcmp(state, "new"))
		fail_msg("the sequence completed uncut but the restart finds the pool %s",
			 state);

	tc_cache *c;
	tc_volume *v;
	r = tc_cache_open(ctx, pool, &c);
	if (r)
		fail_msg("cut after %llu requests (%s): the cache does not open on the pool "
			 "(%d: %s)", (unsigned long long)n, state, r, f->log.last);
	hdd = open_file(ctx, f->cf.path[HDD], HDD_SIZE, 0);
	r = tc_cache_attach(c, hdd, NULL, 0, &v);
	if (r)
		fail_msg("cut after %llu requests (%s): the volume does not attach (%d: %s)",
			 (unsigned long long)n, state, r, f->log.last);
	struct tc_volume_settings s;
	tc_volume_get(v, &s);
	if (s.write_policy != TC_WP_WB)
		fail_msg("cut after %llu requests (%s): the stored write policy is %u, not wb: "
			 "the hold changed what the admin chose", (unsigned long long)n, state,
			 s.write_policy);
	check_data(v, held_done, n, state, "at assembly");

	/* The restart's pass: the pool whole again, the volume back in write-back. */
	struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX, .priority = 100 };
	assert_int_equal(tc_array_set_rebuild(pool, &ro), 0);
	assert_int_equal(tc_array_wait(pool), 0);
	run_steps(ctx, 200);   /* the protection tick: once a second */
	assert_int_equal(tc_array_status(pool, &st), 0);
	struct tc_volume_stats vs;
	tc_volume_stats(v, &vs);
	if (st.degraded || vs.effective_policy != TC_WP_WB)
		fail_msg("cut after %llu requests (%s): after the restart's pass the pool is "
			 "%s and the volume runs policy %u (%s), not wb", (unsigned long long)n,
			 state, st.degraded ? "degraded" : "whole", vs.effective_policy,
			 vs.policy_reason);
	check_data(v, held_done, n, state, "after the restart's pass");

	/* The other first member fails: the data now comes from the slot's new copy (or
	 * from the backing, where it was written back). */
	unsigned other = 1;
	assert_int_equal(tc_array_fail_member(pool, other), 0);
	check_data(v, held_done, n, state, "the other first member failed");

	/* A clean line holds what the backing holds: written back (and flushed there)
	 * before it was marked clean.  Everything written back now, the backing alone
	 * must read the data. */
	assert_int_equal(tc_volume_flush_dirty(v, NULL, NULL), 0);
	check_backing(hdd, dirty_data, DIRTY_LEN, DIRTY_OFF, n, state,
		      "the dirty data written before the failure");
	if (held_done)
		check_backing(hdd, held_data, HELD_LEN, HELD_OFF, n, state,
			      "the write completed while write-back was held");

	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(pool);
	tc_ctx_free(ctx);
}

static void cut_every_request(struct fx *f, enum tc_raid_level_id level, unsigned members)
{
	g_level = level;
	g_members = members;
	for (size_t i = 0; i < sizeof(dirty_data); i++)
		dirty_data[i] = (uint8_t)(i * 7 + 3 + (i >> 12));
	for (size_t i = 0; i < sizeof(held_data); i++)
		held_data[i] = (uint8_t)(i * 13 + 5 + (i >> 12));
	prepare(f);
	cut_files_save(&f->cf, NDEV);
	uint64_t n;
	for (n = 0; n < MAX_CUTS; n++) {
		cut_files_restore(&f->cf, NDEV);
		bool held_done;
		bool done = run_cut(f, n, &held_done);
		if (getenv("TC_CUT_VERBOSE"))
			fprintf(stderr, "%s pool degrade: cut after %llu: %s%s\n",
				tc_raid_level_name(level), (unsigned long long)n, done ? "completed" : "cut",
				held_done ? " (held write done)" : "");
		check_after(f, n, done, held_done);
		if (done)
			break;
	}
	assert_true(n < MAX_CUTS);
	print_message("  %s pool of %u: degrade to write-through, rebuild onto the spare, "
		      "return to write-back: cut at each of its %llu requests, nothing lost\n",
		      tc_raid_level_name(level), members, (unsigned long long)n);
}

static void test_degrade_and_return(void **state)
{
	cut_every_request(*state, TC_RAID1, 2);
	cut_every_request(*state, TC_RAID5, 3);
	cut_every_request(*state, TC_RAID10, 4);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	cut_files_setup(&f->cf, "tc-pool-cut");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	assert_int_equal(t_rm_rf(f->cf.dir), 0);
	free(f);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_degrade_and_return, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
