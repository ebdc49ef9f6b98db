/* SPDX-License-Identifier: MIT */
/*
 * test_protect.c - write-back only on a protected cache (architecture invariant 4,
 * src/cache/protect.c) and instant write-back (plan.c):
 *   - refusals: wb and instwb on a cache without redundancy and without the override,
 *     at attach and at set, naming the volume, the cache, its redundancy and the way
 *     out, changing nothing; instwb on a backing without a stripe;
 *   - the override stored in the superblock (format option, tc_cache_set_unprotected_
 *     writeback), kept across a reopen, refused to be taken back while write-back runs
 *     on the device; a superblock from before the field counts as overridden; a
 *     refused attach of a stale backing drops none of its lines;
 *   - a cache on a RAID 1 of two memory devices: a member fails, the write-back volume
 *     runs write-through at once (the stored policy unchanged), its dirty data reaches
 *     the backing, new writes reach the backing when they complete; the second member
 *     fails: pass-through, and nothing written is lost;
 *   - a cache device whose redundancy the test controls: degraded, then redundant
 *     again: the volume returns to write-back; the override ends a hold and keeps
 *     later degrades from holding;
 *   - a pool member whose reads fail (fault layer), corrected by the mirror: 10 read
 *     errors in the window hold write-back as a degrade does, 9 do not; the hold
 *     ends once they age out;
 *   - the same on a threaded context, the member failing while two threads write and
 *     read back their own blocks: no error, every block right, the dirty data written
 *     back (run under ThreadSanitizer too);
 *   - instwb: whole aligned full stripes become dirty at once past the sequential
 *     cutoff, where wb sends the stream around; partial stripes do not; none once the
 *     cache's dirty lines reach dirty_low_pct; none while write-back is held;
 *   - wb: a write of whole aligned stripes of which nothing is cached goes to the
 *     backing in one request, uncached; cached lines, unaligned writes and backings
 *     without a stripe take the per-line path; so does wt;
 *   - the service-rate rule: how a path's rate is kept (a request that switched path
 *     not sampled, a mean, then EWMA weights); on emulated devices of chosen write
 *     rates, an instwb stream goes to the backing where the cache is slower, into the
 *     cache where it is faster, after a warm-up burst on each; every stripe reads back.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include <cmocka.h>

#include "dev.h"
#include "format.h"
#include "cache_priv.h"
#include "request.h"
#include "tiercache-test.h"
#include "helpers.h"

#define MIB (1ull << 20)
#define LINE 65536u

static struct t_log tlog;

static tc_ctx *new_ctx(void)
{
	memset(&tlog, 0, sizeof(tlog));
	return t_ctx(TC_CTX_DETERMINISTIC, 7, TC_LOG_WARN, &tlog);
}

/* Let the engine run (cleaner ticks included) until the volume has no dirty data, for
 * at most @ticks ticks of 10 ms.  Returns the dirty bytes left. */
static uint64_t run_until_clean(tc_ctx *ctx, tc_volume *vol, unsigned ticks)
{
	struct tc_volume_stats st;
	for (unsigned i = 0; i < ticks; i++) {
		tc_volume_stats(vol, &st);
		if (!st.dirty_bytes)
			return 0;
		while (tc_ctx_poll(ctx, 256) > 0)
			;
		tc_ctx_advance(ctx, 10000000ull);
	}
	tc_volume_stats(vol, &st);
	return st.dirty_bytes;
}

static void drain_work(tc_ctx *ctx)
{
	while (tc_ctx_poll(ctx, 256) > 0)
		;
}

static void fmt_backing(tc_ctx *ctx, tc_dev *bdev, unsigned wp, uint32_t stripe)
{
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = (uint8_t)wp;
	s.flush_rate = TC_FLUSH_LOW;
	assert_int_equal(tc_backing_format_striped(ctx, bdev, "vol", &s, stripe), 0);
}

static void fmt_cache(tc_ctx *ctx, tc_dev *cdev, bool unprotected)
{
	struct tc_cache_opts o;
	tc_cache_opts_default(&o);
	o.unprotected_writeback = unprotected;
	assert_int_equal(tc_cache_format(ctx, cdev, &o), 0);
}

static void set_policy(tc_volume *vol, unsigned wp, int expect)
{
	struct tc_volume_settings s;
	tc_volume_get(vol, &s);
	s.write_policy = (uint8_t)wp;
	assert_int_equal(tc_volume_set(vol, &s, NULL, NULL), expect);
}

static unsigned stored_policy(tc_volume *vol)
{
	struct tc_volume_settings s;
	tc_volume_get(vol, &s);
	return s.write_policy;
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7 + (i >> 12));
}

/* ---- refusals and the override -------------------------------------------------- */

static void test_refusals_and_override(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_probe p;
	struct tc_cache_stats cs;
	struct tc_volume_settings s;

	assert_int_equal(tc_dev_new_memory(ctx, 8 * MIB, &cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &bdev), 0);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_WB, 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);

	/* A new volume stored as wb: refused before anything is written. */
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), -EPERM);
	assert_non_null(strstr(tlog.last, "volume \"vol\": write policy wb refused"));
	assert_non_null(strstr(tlog.last, "has redundancy 0"));
	assert_non_null(strstr(tlog.last, "--unprotected-writeback"));
	assert_null(tc_cache_find(cache, "vol"));
	assert_int_equal(tc_dev_probe(ctx, bdev, &p), 0);
	assert_string_equal(p.cache_uuid, "");

	/* Asked for explicitly: refused too. */
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	assert_int_equal(tc_cache_attach(cache, bdev, &s, 0, &vol), -EPERM);
	s.write_policy = TC_WP_WT;
	assert_int_equal(tc_cache_attach(cache, bdev, &s, 0, &vol), 0);

	/* set: wb refused, instwb refused for want of a stripe, the setting unchanged. */
	set_policy(vol, TC_WP_WB, -EPERM);
	assert_int_equal(stored_policy(vol), TC_WP_WT);
	set_policy(vol, TC_WP_INSTWB, -EINVAL);
	assert_non_null(strstr(tlog.last, "instwb refused: backing"));
	assert_non_null(strstr(tlog.last, "--stripe-size"));
	assert_int_equal(stored_policy(vol), TC_WP_WT);

	tc_cache_stats(cache, &cs);
	assert_int_equal(cs.redundancy, 0);
	assert_false(cs.unprotected_writeback);
	assert_true(cs.writeback_held);

	/* The override: write-back allowed, and the warning's flag raised. */
	assert_int_equal(tc_cache_set_unprotected_writeback(cache, true), 0);
	set_policy(vol, TC_WP_WB, 0);
	tc_cache_stats(cache, &cs);
	assert_true(cs.unprotected_writeback);
	assert_false(cs.writeback_held);
	struct tc_volume_stats st;
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);
	assert_string_equal(st.policy_reason, "");

	/* Taking it back while wb runs on a device without redundancy: refused. */
	assert_int_equal(tc_cache_set_unprotected_writeback(cache, false), -EBUSY);
	assert_non_null(strstr(tlog.last, "volume \"vol\" runs wb"));
	tc_cache_stats(cache, &cs);
	assert_true(cs.unprotected_writeback);

	/* Stored: kept across a reopen; the volume comes back in wb. */
	assert_int_equal(tc_cache_close(cache), 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	assert_int_equal(stored_policy(vol), TC_WP_WB);
	tc_cache_stats(cache, &cs);
	assert_true(cs.unprotected_writeback);
	set_policy(vol, TC_WP_WT, 0);
	assert_int_equal(tc_cache_set_unprotected_writeback(cache, false), 0);
	set_policy(vol, TC_WP_WB, -EPERM);

	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

/* A superblock written before the guard existed (the byte 0) keeps write-back. */
static void test_legacy_superblock(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_cache_stats cs;
	struct tc_cache_sb *sb = calloc(1, sizeof(*sb));
	uint8_t *buf = aligned_alloc(4096, TC_CACHE_SB_SIZE);

	assert_int_equal(tc_dev_new_memory(ctx, 8 * MIB, &cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &bdev), 0);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_WB, 0);
	for (unsigned copy = 0; copy < 2; copy++) {
		uint64_t off = copy * TC_CACHE_SB_SIZE;
		assert_int_equal(tc_dev_pread(cdev, buf, TC_CACHE_SB_SIZE, off), 0);
		assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, NULL, 0), TC_FMT_OK);
		assert_int_equal(sb->wb_guard, TC_WB_GUARD_PROTECTED);
		sb->wb_guard = TC_WB_GUARD_LEGACY;
		tc_fmt_cache_sb_encode(sb, buf);
		assert_int_equal(tc_dev_pwrite(cdev, buf, TC_CACHE_SB_SIZE, off, 0), 0);
	}
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	assert_int_equal(stored_policy(vol), TC_WP_WB);
	tc_cache_stats(cache, &cs);
	assert_true(cs.unprotected_writeback);
	assert_false(cs.writeback_held);

	assert_int_equal(tc_cache_close(cache), 0);
	free(sb);
	free(buf);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

/* A refused attach of a stale backing drops none of the cache's lines for it. */
static void test_refused_stale_attach(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_cache_stats cs;
	struct tc_volume_settings s;
	struct tc_backing_sb *b = calloc(1, sizeof(*b));
	uint8_t *buf = aligned_alloc(4096, MIB);

	assert_int_equal(tc_dev_new_memory(ctx, 8 * MIB, &cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &bdev), 0);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_WT, 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	fill(buf, MIB, 3);
	assert_int_equal(tc_volume_pwrite(vol, buf, MIB, 0, 0), 0);   /* clean lines */
	assert_int_equal(tc_cache_close(cache), 0);

	/* The backing moves on without the cache (both superblock copies). */
	for (unsigned copy = 0; copy < 2; copy++) {
		assert_int_equal(tc_dev_pread(bdev, buf, 4096, copy * 4096), 0);
		assert_int_equal(tc_fmt_backing_sb_decode(buf, b, NULL, 0), TC_FMT_OK);
		b->attach_gen++;
		b->generation++;
		tc_fmt_backing_sb_encode(b, buf);
		assert_int_equal(tc_dev_pwrite(bdev, buf, 4096, copy * 4096, 0), 0);
	}
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	tc_cache_stats(cache, &cs);
	uint64_t used = cs.lines_used;
	assert_true(used > 0);
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	assert_int_equal(tc_cache_attach(cache, bdev, &s, 0, &vol), -EPERM);
	tc_cache_stats(cache, &cs);
	assert_int_equal(cs.lines_used, used);
	/* Accepted in wt: now the stale lines go. */
	s.write_policy = TC_WP_WT;
	assert_int_equal(tc_cache_attach(cache, bdev, &s, 0, &vol), 0);
	tc_cache_stats(cache, &cs);
	assert_int_equal(cs.lines_used, 0);

	assert_int_equal(tc_cache_close(cache), 0);
	free(b);
	free(buf);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

/* ---- degrade to write-through --------------------------------------------------- */

/* A write-back volume on a backing of @bsize bytes (memory), cached on a RAID 1 of the
 * two members @m (a protected cache). */
static void raid1_pool_env(tc_ctx *ctx, tc_dev **m, uint64_t bsize, tc_dev **cdev,
			   tc_dev **bdev, tc_cache **cache, tc_volume **vol)
{
	struct tc_array_opts ao = { .level = TC_RAID1 };
	assert_int_equal(tc_dev_new_array(ctx, &ao, m, 2, cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, bsize, bdev), 0);
	fmt_cache(ctx, *cdev, false);       /* protected: the mirror is the protection */
	fmt_backing(ctx, *bdev, TC_WP_WB, 0);
	assert_int_equal(tc_cache_open(ctx, *cdev, cache), 0);
	assert_int_equal(tc_cache_attach(*cache, *bdev, NULL, 0, vol), 0);
}

static void test_raid1_member_fails(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *m[2], *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	const size_t len = 2 * MIB;
	uint8_t *a = aligned_alloc(4096, len), *b = aligned_alloc(4096, len);
	uint8_t *chk = aligned_alloc(4096, len);

	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[0]), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[1]), 0);
	raid1_pool_env(ctx, m, 64 * MIB, &cdev, &bdev, &cache, &vol);

	/* Write-back: dirty in the cache, not on the backing. */
	fill(a, len, 1);
	assert_int_equal(tc_volume_pwrite(vol, a, len, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, len);
	assert_int_equal(st.effective_policy, TC_WP_WB);
	assert_int_equal(tc_dev_pread(bdev, chk, len, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_not_equal(chk, a, len);

	/* A member fails: write-through at once, the stored policy kept, a reason. */
	assert_int_equal(tc_array_fail_member(cdev, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	assert_int_equal(st.write_policy, TC_WP_WB);
	assert_string_equal(st.policy_reason, "cache degraded");
	assert_int_equal(stored_policy(vol), TC_WP_WB);
	drain_work(ctx);
	assert_non_null(strstr(tlog.last, "volume \"vol\": write-back held"));

	/* The dirty data reaches the backing (the volume's flush rate is low: held
	 * write-back is written back flat out regardless). */
	assert_int_equal(run_until_clean(ctx, vol, 100), 0);
	assert_int_equal(tc_dev_pread(bdev, chk, len, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_equal(chk, a, len);

	/* New writes are on the backing when they complete, and hit the cache. */
	fill(b, len, 99);
	assert_int_equal(tc_volume_pwrite(vol, b, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(tc_dev_pread(bdev, chk, MIB, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_equal(chk, b, MIB);
	assert_int_equal(tc_volume_pread(vol, chk, MIB, 0), 0);
	assert_memory_equal(chk, b, MIB);

	/* The second member fails: pass-through, nothing lost. */
	assert_int_equal(tc_array_fail_member(cdev, 1), 0);
	tc_volume_stats(vol, &st);
	assert_true(st.fallback_pt);
	assert_int_equal(st.effective_policy, TC_WP_PT);
	assert_string_equal(st.policy_reason, "cache failed");
	assert_int_equal(tc_volume_pread(vol, chk, len, 0), 0);
	assert_memory_equal(chk, b, MIB);
	assert_memory_equal(chk + MIB, a + MIB, len - MIB);

	tc_cache_close(cache);   /* the cache device failed: may report an error */
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	free(a);
	free(b);
	free(chk);
	tc_ctx_free(ctx);
}

/*
 * Survivors first: a write-back volume cached on a RAID 10 of four (near layout, 64
 * KiB chunks: array chunk i has its copies on members 2i mod 4 and 2i + 1 mod 4, so
 * even chunks on the pair 0-1, odd ones on 2-3).  Member 0 fails: the lines in even
 * chunks have one copy left, the others two (tc_dev_range_redundancy says so).  The
 * held write-back drains the one-copy lines first: by the time a quarter of the
 * others is written back, none of them is still dirty.  (Without the rule the
 * cleaner's elevator order interleaves the two: 160 of 192 of each left after the
 * first batch.)
 */
/* Dirty lines in even array chunks (the pair that lost member 0) and in odd ones. */
static void count_dirty(struct tc_cache *c, unsigned *exposed, unsigned *other)
{
	*exposed = *other = 0;
	for (uint32_t s = 0; s < c->nslots; s++)
		if (c->lines[s].vol && c->lines[s].dirty) {
			if ((c->sb.data_offset + (uint64_t)s * LINE) / LINE % 2 == 0)
				(*exposed)++;
			else
				(*other)++;
		}
}

static void test_survivors_first(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *m[4], *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	const size_t len = 8 * MIB;
	uint8_t *a = aligned_alloc(4096, len), *chk = aligned_alloc(4096, len);

	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(tc_dev_new_memory(ctx, 32 * MIB, &m[i]), 0);
	struct tc_array_opts ao = { .level = TC_RAID10, .chunk = LINE, .copies = 2 };
	assert_int_equal(tc_dev_new_array(ctx, &ao, m, 4, &cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 64 * MIB, &bdev), 0);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_WB, 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	/* 384 lines, every other 64 KiB of 48 MiB of the volume in a scattered order (no
	 * stream), six batches of the cleaner's. */
	fill(a, len, 5);
	for (uint64_t i = 0; i < 384; i++)
		assert_int_equal(tc_volume_pwrite(vol, a + (i % 128) * LINE, LINE,
						  2 * (i * 37 % 384) * LINE, 0), 0);
	struct tc_cache *c = (struct tc_cache *)cache;
	assert_int_equal(tc_array_fail_member(cdev, 0), 0);
	assert_int_equal(tc_dev_range_redundancy(cdev, 0, LINE), 0);
	assert_int_equal(tc_dev_range_redundancy(cdev, LINE, LINE), 1);
	assert_int_equal(tc_dev_range_redundancy(cdev, 0, 2 * LINE), 0);

	unsigned exp_total = 0, other_total = 0;
	count_dirty(c, &exp_total, &other_total);
	assert_true(exp_total >= 128 && other_total >= 128);
	bool checked = false;
	for (unsigned t = 0; t < 2000; t++) {
		unsigned exp_dirty = 0, other_dirty = 0;
		count_dirty(c, &exp_dirty, &other_dirty);
		if (!exp_dirty && !other_dirty)
			break;
		if (4 * (other_total - other_dirty) >= other_total) {
			assert_int_equal(exp_dirty, 0);
			checked = true;
		}
		(void)tc_ctx_poll(ctx, 1);
		tc_ctx_advance(ctx, 2000000ull);
	}
	assert_true(checked);
	assert_int_equal(run_until_clean(ctx, vol, 200), 0);
	/* A second member fails, in the other pair: the redundancy was 0 already (no
	 * event), but the device's health count moves, which makes the cleaner look
	 * again (a RAID 10 of six would have a third pair to put after). */
	assert_int_equal(tc_dev_health_gen(cdev), 1);
	assert_int_equal(tc_array_fail_member(cdev, 2), 0);
	assert_int_equal(tc_dev_health_gen(cdev), 2);
	assert_int_equal(tc_dev_range_redundancy(cdev, LINE, LINE), 0);
	for (uint64_t i = 0; i < 384; i++) {
		assert_int_equal(tc_dev_pread(bdev, chk, LINE, TC_BACKING_DATA_OFFSET +
					      2 * (i * 37 % 384) * LINE), 0);
		assert_memory_equal(chk, a + (i % 128) * LINE, LINE);
	}
	tc_cache_close(cache);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	free(a);
	free(chk);
	tc_ctx_free(ctx);
}

/* A cache device whose redundancy the test sets: degraded, then rebuilt. */
/* A log sink keeping the last line about the hold (the array's own lines about each
 * read error come after it). */
static char hold_line[1024];
static void hold_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	t_log_sink(opaque, level, msg);
	if (strstr(msg, "write-back held") || strstr(msg, "back to write policy"))
		snprintf(hold_line, sizeof(hold_line), "%s", msg);
}

/* Move the clock @secs seconds, a second at a time, letting the engine run. */
static void advance_secs(tc_ctx *ctx, unsigned secs)
{
	for (unsigned i = 0; i < secs; i++) {
		tc_ctx_advance(ctx, 1000000000ull);
		drain_work(ctx);
	}
}

/* Read 4 KiB hits of @vol (the first MiB) until member 0 of @cdev has @want read
 * errors; every read returns @a's data. */
static void read_until_errors(tc_volume *vol, tc_dev *cdev, const uint8_t *a,
			      uint64_t want)
{
	struct tc_array_status as;
	uint8_t *chk = aligned_alloc(4096, 4096);
	for (unsigned i = 0; i < 400; i++) {
		assert_int_equal(tc_array_status(cdev, &as), 0);
		if (as.member[0].read_errors >= want)
			break;
		uint64_t off = (uint64_t)(i % 256) * 4096;
		assert_int_equal(tc_volume_pread(vol, chk, 4096, off), 0);
		assert_memory_equal(chk, a + off, 4096);
	}
	assert_int_equal(tc_array_status(cdev, &as), 0);
	assert_int_equal(as.member[0].read_errors, want);
	assert_int_equal(as.faulty, 0);     /* corrected: the member is kept */
	free(chk);
}

/* The error-rate rule (protect.c, tc_protect_tick): a pool member whose reads fail
 * (the fault layer), each corrected by the mirror and the member kept, holds
 * write-back once it has TC_ERR_HOLD errors in the window: write-through, the dirty
 * data written back, status and log say why; the hold ends once the errors in the
 * window fall to TC_ERR_CLEAR.  Fewer errors hold nothing. */
static void test_error_rate_hold(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *inner, *m[2], *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	const size_t len = MIB;
	uint8_t *a = aligned_alloc(4096, len), *chk = aligned_alloc(4096, len);
	tc_ctx_set_log(ctx, hold_sink, &tlog, TC_LOG_INFO);
	hold_line[0] = 0;

	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &inner), 0);
	assert_int_equal(tc_dev_new_fault(ctx, inner, &m[0]), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[1]), 0);
	raid1_pool_env(ctx, m, 64 * MIB, &cdev, &bdev, &cache, &vol);
	/* 1 MiB cached and clean (so that the cleaner reads nothing meanwhile). */
	fill(a, len, 5);
	assert_int_equal(tc_volume_pwrite(vol, a, len, 0, 0), 0);
	assert_int_equal(tc_volume_flush_dirty(vol, NULL, NULL), 0);

	/* Member 0's reads fail from now on; the mirror corrects each one. */
	struct tc_fault f = { .op = TC_FAULT_READ, .error = EIO };
	assert_int_equal(tc_fault_arm(m[0], &f), 0);
	read_until_errors(vol, cdev, a, TC_ERR_HOLD - 1);
	advance_secs(ctx, 2);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);    /* under the threshold */
	/* Dirty data (its own copy of the data) while write-back still runs. */
	uint8_t *d = aligned_alloc(4096, 65536);
	fill(d, 65536, 7);
	assert_int_equal(tc_volume_pwrite(vol, d, 65536, 2 * MIB, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 65536);

	read_until_errors(vol, cdev, a, TC_ERR_HOLD);
	advance_secs(ctx, 1);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	assert_int_equal(st.write_policy, TC_WP_WB);
	assert_string_equal(st.policy_reason, "cache member errors");
	assert_non_null(strstr(hold_line, "volume \"vol\": write-back held"));
	assert_non_null(strstr(hold_line, "member 0 had 10 read errors in 60 s"));
	/* Written back flat out (the flush rate is low), and new writes go through. */
	assert_int_equal(run_until_clean(ctx, vol, 100), 0);
	assert_int_equal(tc_dev_pread(bdev, chk, 65536, TC_BACKING_DATA_OFFSET + 2 * MIB), 0);
	assert_memory_equal(chk, d, 65536);
	free(d);
	fill(a, 65536, 6);
	assert_int_equal(tc_volume_pwrite(vol, a, 65536, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 0);

	/* The member heals; the errors age out of the window: back to write-back. */
	assert_true(tc_fault_heal(m[0]) >= 0);
	advance_secs(ctx, 30);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WT);    /* still in the window */
	advance_secs(ctx, 40);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);
	assert_string_equal(st.policy_reason, "");
	assert_non_null(strstr(hold_line, "back to write policy wb"));
	assert_int_equal(tc_volume_pwrite(vol, a, 65536, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 65536);

	tc_cache_close(cache);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	free(a);
	free(chk);
	tc_ctx_free(ctx);
}

static void test_redundant_again(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	struct tc_dev_limits l = { .redundancy = 1 };
	uint8_t *a = aligned_alloc(4096, MIB), *chk = aligned_alloc(4096, MIB);

	assert_int_equal(tc_dev_new_memory(ctx, 8 * MIB, &cdev), 0);
	tc_dev_set_limits(cdev, &l);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &bdev), 0);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_WB, 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);

	/* Redundant again without having degraded: nothing changes. */
	tc_dev_event(cdev, TC_DEV_REDUNDANT, 1);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);

	tc_dev_event(cdev, TC_DEV_DEGRADED, 0);
	drain_work(ctx);
	fill(a, MIB, 5);
	assert_int_equal(tc_volume_pwrite(vol, a, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	/* Setting wb while held: refused (redundancy 0, no override), nothing changed. */
	set_policy(vol, TC_WP_WT, 0);
	set_policy(vol, TC_WP_WB, -EPERM);
	assert_int_equal(stored_policy(vol), TC_WP_WT);

	/* The admin's choice back to wb is refused only while unprotected... */
	tc_dev_event(cdev, TC_DEV_REDUNDANT, 1);
	drain_work(ctx);
	set_policy(vol, TC_WP_WB, 0);
	/* ...and once redundant, write-back resumes: the write stays in the cache. */
	fill(a, MIB, 6);
	assert_int_equal(tc_volume_pwrite(vol, a, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, MIB);
	assert_int_equal(st.effective_policy, TC_WP_WB);
	assert_string_equal(st.policy_reason, "");
	assert_int_equal(tc_dev_pread(bdev, chk, MIB, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_not_equal(chk, a, MIB);

	/* Degraded and rebuilt with the policy left alone: wt meanwhile, wb after. */
	tc_dev_event(cdev, TC_DEV_DEGRADED, 0);
	assert_int_equal(run_until_clean(ctx, vol, 100), 0);
	tc_dev_event(cdev, TC_DEV_REDUNDANT, 1);
	drain_work(ctx);
	assert_int_equal(tc_volume_pwrite(vol, a, 65536, 4 * MIB, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, 65536);

	/* The override given while degraded ends the hold, and later degrades keep it. */
	tc_dev_event(cdev, TC_DEV_DEGRADED, 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	assert_int_equal(tc_cache_set_unprotected_writeback(cache, true), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);
	tc_dev_event(cdev, TC_DEV_REDUNDANT, 1);
	tc_dev_event(cdev, TC_DEV_DEGRADED, 0);
	drain_work(ctx);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WB);

	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	free(a);
	free(chk);
	tc_ctx_free(ctx);
}

/* ---- degrade while threads write ------------------------------------------------- */

#define TW_BLOCKS 64u          /* 64 KiB blocks per thread */
#define TW_BLOCK 65536u

struct tworker {
	tc_volume *vol;
	unsigned id;
	uint8_t gen[TW_BLOCKS];  /* the last generation written to each block */
	atomic_bool *stop;
	int err;
};

static void tw_fill(uint8_t *buf, unsigned id, unsigned blk, uint8_t gen)
{
	for (unsigned i = 0; i < TW_BLOCK; i += 8) {
		buf[i] = (uint8_t)id;
		buf[i + 1] = (uint8_t)blk;
		buf[i + 2] = gen;
		memset(buf + i + 3, (uint8_t)(i >> 3), 5);
	}
}

static uint64_t tw_off(unsigned id, unsigned blk)
{
	return ((uint64_t)id * TW_BLOCKS + blk) * TW_BLOCK;
}

static void *tw_main(void *arg)
{
	struct tworker *w = arg;
	uint8_t *buf = aligned_alloc(4096, TW_BLOCK), *chk = aligned_alloc(4096, TW_BLOCK);
	uint64_t x = 0x9e3779b97f4a7c15ull * (w->id + 1);
	for (unsigned n = 0; !atomic_load(w->stop) && !w->err; n++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned blk = (unsigned)(x % TW_BLOCKS);
		uint8_t g = (uint8_t)(w->gen[blk] + 1);
		tw_fill(buf, w->id, blk, g);
		w->err = tc_volume_pwrite(w->vol, buf, TW_BLOCK, tw_off(w->id, blk), 0);
		if (w->err)
			break;
		w->gen[blk] = g;
		w->err = tc_volume_pread(w->vol, chk, TW_BLOCK, tw_off(w->id, blk));
		if (!w->err && memcmp(buf, chk, TW_BLOCK))
			w->err = -EILSEQ;
	}
	free(buf);
	free(chk);
	return NULL;
}

static void test_degrade_under_load(void **state)
{
	(void)state;
	memset(&tlog, 0, sizeof(tlog));
	tc_ctx *ctx = t_ctx(TC_CTX_THREADED, 3, TC_LOG_ERROR, &tlog);
	tc_dev *m[2], *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	struct tworker w[2];
	pthread_t th[2];
	atomic_bool stop = false;

	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[0]), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[1]), 0);
	raid1_pool_env(ctx, m, 32 * MIB, &cdev, &bdev, &cache, &vol);

	for (unsigned i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].vol = vol;
		w[i].id = i;
		w[i].stop = &stop;
		assert_int_equal(pthread_create(&th[i], NULL, tw_main, &w[i]), 0);
	}
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL);
	assert_int_equal(tc_array_fail_member(cdev, 1), 0);
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].err, 0);
	}
	tc_volume_stats(vol, &st);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	assert_int_equal(st.errors, 0);
	/* The held write-back is written back without being asked (up to 10 s). */
	for (unsigned i = 0; i < 1000 && st.dirty_bytes; i++) {
		struct timespec t10 = { 0, 10000000 };
		nanosleep(&t10, NULL);
		tc_volume_stats(vol, &st);
	}
	assert_int_equal(st.dirty_bytes, 0);
	uint8_t *buf = aligned_alloc(4096, TW_BLOCK), *chk = aligned_alloc(4096, TW_BLOCK);
	for (unsigned i = 0; i < 2; i++)
		for (unsigned b = 0; b < TW_BLOCKS; b++) {
			if (!w[i].gen[b])
				continue;
			tw_fill(buf, i, b, w[i].gen[b]);
			assert_int_equal(tc_dev_pread(bdev, chk, TW_BLOCK, TC_BACKING_DATA_OFFSET +
						      tw_off(i, b)), 0);
			assert_memory_equal(buf, chk, TW_BLOCK);
		}
	free(buf);
	free(chk);
	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

/* ---- instant write-back --------------------------------------------------------- */

#define STRIPE (256u << 10)

/* Write @n bytes sequentially from @off in @req-byte requests. */
static void seq_write(tc_volume *vol, uint8_t *buf, uint64_t off, uint64_t n, uint64_t req)
{
	for (uint64_t o = 0; o < n; o += req) {
		fill(buf, req, (uint8_t)(o >> 16));
		assert_int_equal(tc_volume_pwrite(vol, buf, req, off + o, 0), 0);
	}
}

static void instwb_env(tc_ctx *ctx, unsigned wp, uint32_t stripe, tc_dev **cdev,
		       tc_dev **bdev, tc_cache **cache, tc_volume **vol)
{
	struct tc_dev_limits l = { .redundancy = 1 };
	assert_int_equal(tc_dev_new_memory(ctx, 32 * MIB, cdev), 0);
	tc_dev_set_limits(*cdev, &l);
	assert_int_equal(tc_dev_new_memory(ctx, 128 * MIB, bdev), 0);
	fmt_cache(ctx, *cdev, false);
	fmt_backing(ctx, *bdev, TC_WP_WT, stripe);
	assert_int_equal(tc_cache_open(ctx, *cdev, cache), 0);
	assert_int_equal(tc_cache_attach(*cache, *bdev, NULL, 0, vol), 0);
	set_policy(*vol, wp, 0);
}

static void instwb_env_close(tc_ctx *ctx, tc_dev *cdev, tc_dev *bdev, tc_cache *cache)
{
	(void)ctx;
	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
}

static void test_instwb_full_stripes(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	struct tc_cache_stats cs;
	uint8_t *buf = aligned_alloc(4096, MIB);
	const uint64_t n = 8 * MIB;   /* twice the default 4 MiB sequential cutoff */

	/* wb: past the cutoff the stream goes around the cache. */
	instwb_env(ctx, TC_WP_WB, STRIPE, &cdev, &bdev, &cache, &vol);
	seq_write(vol, buf, 0, n, MIB);
	tc_volume_stats(vol, &st);
	uint64_t wb_dirty = st.dirty_bytes;
	assert_true(wb_dirty < n);
	assert_int_equal(st.instant_bytes, 0);
	instwb_env_close(ctx, cdev, bdev, cache);

	/* instwb: every full stripe dirty at once, and read back. */
	instwb_env(ctx, TC_WP_INSTWB, STRIPE, &cdev, &bdev, &cache, &vol);
	seq_write(vol, buf, 0, n, MIB);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.dirty_bytes, n);
	assert_int_equal(st.instant_bytes, n);
	assert_int_equal(st.bypassed_seq, 0);
	uint8_t *chk = aligned_alloc(4096, MIB);
	fill(buf, MIB, (uint8_t)((n - MIB) >> 16));
	assert_int_equal(tc_volume_pread(vol, chk, MIB, n - MIB), 0);
	assert_memory_equal(chk, buf, MIB);

	/* A write covering no whole aligned stripe is not instant. */
	assert_int_equal(tc_volume_pwrite(vol, buf, STRIPE, n + 65536, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.instant_bytes, n);
	/* One covering one stripe and parts of two: the stripe only. */
	assert_int_equal(tc_volume_pwrite(vol, buf, 3 * STRIPE, 2 * n + STRIPE / 2, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.instant_bytes, n + 2 * STRIPE);

	/* At dirty_low_pct of the cache's lines (40 %), instant write-back stops. */
	tc_cache_stats(cache, &cs);
	uint64_t limit = cs.lines * 40 / 100 * LINE;
	uint64_t before = st.instant_bytes;
	seq_write(vol, buf, 16 * MIB, 16 * MIB, MIB);
	tc_volume_stats(vol, &st);
	tc_cache_stats(cache, &cs);
	assert_true(st.instant_bytes > before);
	assert_true(st.instant_bytes - before < 16 * MIB);
	assert_true(cs.lines_dirty * LINE <= limit + 2 * MIB);
	assert_true(st.bypassed_seq > 0);
	instwb_env_close(ctx, cdev, bdev, cache);

	/* Held write-back: instwb writes go through, none instant. */
	instwb_env(ctx, TC_WP_INSTWB, STRIPE, &cdev, &bdev, &cache, &vol);
	tc_dev_event(cdev, TC_DEV_DEGRADED, 0);
	drain_work(ctx);
	seq_write(vol, buf, 0, 2 * MIB, MIB);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.instant_bytes, 0);
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(st.effective_policy, TC_WP_WT);
	assert_int_equal(tc_dev_pread(bdev, chk, MIB, TC_BACKING_DATA_OFFSET + MIB), 0);
	assert_memory_equal(chk, buf, MIB);
	instwb_env_close(ctx, cdev, bdev, cache);

	/* The stripe from the backing's limits (a parity array), none stored. */
	struct tc_dev_limits bl = { .io_min = 65536, .io_opt = STRIPE,
				    .partial_stripe_expensive = true };
	assert_int_equal(tc_dev_new_memory(ctx, 32 * MIB, &cdev), 0);
	struct tc_dev_limits cl = { .redundancy = 1 };
	tc_dev_set_limits(cdev, &cl);
	assert_int_equal(tc_dev_new_memory(ctx, 128 * MIB, &bdev), 0);
	tc_dev_set_limits(bdev, &bl);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_INSTWB, 0);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	seq_write(vol, buf, 0, MIB, MIB);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.backing_stripe, STRIPE);
	assert_int_equal(st.instant_bytes, MIB);
	instwb_env_close(ctx, cdev, bdev, cache);

	free(buf);
	free(chk);
	tc_ctx_free(ctx);
}

/* wb: a write of whole aligned stripes the cache holds nothing of goes to the backing
 * in one request; anything else takes the per-line path. */
static void test_wb_full_stripes(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	uint8_t *buf = aligned_alloc(4096, MIB), *chk = aligned_alloc(4096, MIB);

	instwb_env(ctx, TC_WP_WB, STRIPE, &cdev, &bdev, &cache, &vol);
	fill(buf, MIB, 11);
	assert_int_equal(tc_volume_pwrite(vol, buf, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, MIB);
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(st.cached_bytes, 0);
	assert_int_equal(tc_dev_pread(bdev, chk, MIB, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_equal(chk, buf, MIB);
	/* Read back (a miss that fills), then written again: cached now, so write-back. */
	assert_int_equal(tc_volume_pread(vol, chk, MIB, 0), 0);
	assert_memory_equal(chk, buf, MIB);
	fill(buf, MIB, 12);
	assert_int_equal(tc_volume_pwrite(vol, buf, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, MIB);
	assert_int_equal(st.dirty_bytes, MIB);
	assert_int_equal(tc_volume_pread(vol, chk, MIB, 0), 0);
	assert_memory_equal(chk, buf, MIB);
	/* Not stripe-aligned: per line, into the cache. */
	assert_int_equal(tc_volume_pwrite(vol, buf, STRIPE, 4 * MIB + 65536, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, MIB);
	assert_int_equal(st.dirty_bytes, MIB + STRIPE);
	/* A FUA full-stripe write: on the backing when it completes. */
	fill(buf, MIB, 13);
	assert_int_equal(tc_volume_pwrite(vol, buf, 2 * STRIPE, 8 * MIB, TC_IO_FUA), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, MIB + 2 * STRIPE);
	assert_int_equal(tc_dev_pread(bdev, chk, 2 * STRIPE, TC_BACKING_DATA_OFFSET + 8 * MIB),
			 0);
	assert_memory_equal(chk, buf, 2 * STRIPE);
	instwb_env_close(ctx, cdev, bdev, cache);

	/* A backing without a stripe: none. */
	instwb_env(ctx, TC_WP_WB, 0, &cdev, &bdev, &cache, &vol);
	assert_int_equal(tc_volume_pwrite(vol, buf, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, 0);
	assert_int_equal(st.dirty_bytes, MIB);
	instwb_env_close(ctx, cdev, bdev, cache);
	free(buf);
	free(chk);
	tc_ctx_free(ctx);
}

/* Threads: full-stripe writes (wb, to the backing whole) racing with reads (which fill
 * the cache) and 64 KiB writes (which dirty it) of the same blocks; afterwards every
 * block reads as its last write, through the cache and, once flushed, on the backing. */
#define FS_BLOCKS 8u

struct fs_shared {
	tc_volume *vol;
	_Atomic unsigned gen[FS_BLOCKS];   /* last generation written, per block */
	pthread_mutex_t lock[FS_BLOCKS];   /* one writer per block at a time */
	atomic_bool stop;
	_Atomic int err;           /* the first error of any thread */
};

static void fs_fill(uint8_t *buf, size_t len, unsigned blk, unsigned gen)
{
	for (size_t i = 0; i < len; i += 4)
		memcpy(buf + i, &(uint32_t){ (uint32_t)(blk << 24 | gen) }, 4);
}

static void *fs_writer(void *arg)
{
	struct fs_shared *sh = arg;
	uint8_t *buf = aligned_alloc(4096, STRIPE);
	uint64_t x = 88172645463325252ull;
	int e = 0;
	while (!atomic_load(&sh->stop) && !atomic_load(&sh->err) && !e) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned blk = (unsigned)(x % FS_BLOCKS);
		bool whole = (x >> 32) & 1;
		pthread_mutex_lock(&sh->lock[blk]);
		unsigned g = atomic_load(&sh->gen[blk]) + 1;
		fs_fill(buf, STRIPE, blk, g);
		/* Whole stripe, or every line of it in 64 KiB writes (the same content). */
		if (whole)
			e = tc_volume_pwrite(sh->vol, buf, STRIPE, (uint64_t)blk * STRIPE, 0);
		else
			for (unsigned o = 0; o < STRIPE && !e; o += LINE)
				e = tc_volume_pwrite(sh->vol, buf + o, LINE,
						     (uint64_t)blk * STRIPE + o, 0);
		atomic_store(&sh->gen[blk], g);
		pthread_mutex_unlock(&sh->lock[blk]);
	}
	if (e)
		atomic_store(&sh->err, e);
	free(buf);
	return NULL;
}

static void *fs_reader(void *arg)
{
	struct fs_shared *sh = arg;
	uint8_t *buf = aligned_alloc(4096, STRIPE);
	uint64_t x = 0x853c49e6748fea9bull;
	int e = 0;
	while (!atomic_load(&sh->stop) && !atomic_load(&sh->err) && !e) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned blk = (unsigned)(x % FS_BLOCKS);
		unsigned lo = atomic_load(&sh->gen[blk]);
		e = tc_volume_pread(sh->vol, buf, STRIPE, (uint64_t)blk * STRIPE);
		unsigned hi = atomic_load(&sh->gen[blk]) + 1;
		for (unsigned u = 0; u < STRIPE && !e; u += 4096) {
			uint32_t w;
			memcpy(&w, buf + u, 4);
			unsigned g = w & 0xffffff;
			/* Never written yet reads zeros; else a generation in [lo, hi]. */
			if ((w || lo) && ((w >> 24) != blk || g < lo || g > hi))
				e = -EILSEQ;
		}
	}
	if (e)
		atomic_store(&sh->err, e);
	free(buf);
	return NULL;
}

static void test_wb_full_stripes_threads(void **state)
{
	(void)state;
	memset(&tlog, 0, sizeof(tlog));
	tc_ctx *ctx = t_ctx(TC_CTX_THREADED, 5, TC_LOG_ERROR, &tlog);
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	struct fs_shared *sh = calloc(1, sizeof(*sh));
	pthread_t th[3];

	instwb_env(ctx, TC_WP_WB, STRIPE, &cdev, &bdev, &cache, &sh->vol);
	for (unsigned i = 0; i < FS_BLOCKS; i++)
		pthread_mutex_init(&sh->lock[i], NULL);
	assert_int_equal(pthread_create(&th[0], NULL, fs_writer, sh), 0);
	assert_int_equal(pthread_create(&th[1], NULL, fs_writer, sh), 0);
	/* The reader joins once a whole-stripe write has gone to the backing: the
	 * writers' first is one (block 0, whole, see their generator), and it takes that
	 * route only while the cache holds none of its lines and no request has them in
	 * flight, so a reader started with them could fill block 0 first and leave the
	 * route untried (it did on a quiet machine). */
	struct tc_volume_stats st;
	for (unsigned i = 0; i < 10000; i++) {
		tc_volume_stats(sh->vol, &st);
		if (st.full_stripe_bytes > 0 || atomic_load(&sh->err))
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	assert_true(st.full_stripe_bytes > 0);
	assert_int_equal(pthread_create(&th[2], NULL, fs_reader, sh), 0);
	struct timespec ts = { 0, 300000000 };
	nanosleep(&ts, NULL);
	atomic_store(&sh->stop, true);
	for (unsigned i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&sh->err), 0);

	uint8_t *buf = aligned_alloc(4096, STRIPE), *chk = aligned_alloc(4096, STRIPE);
	for (unsigned b = 0; b < FS_BLOCKS; b++) {
		unsigned g = atomic_load(&sh->gen[b]);
		if (!g)
			continue;
		fs_fill(buf, STRIPE, b, g);
		assert_int_equal(tc_volume_pread(sh->vol, chk, STRIPE, (uint64_t)b * STRIPE), 0);
		assert_memory_equal(chk, buf, STRIPE);
	}
	assert_int_equal(tc_volume_flush_dirty(sh->vol, NULL, NULL), 0);
	for (unsigned b = 0; b < FS_BLOCKS; b++) {
		unsigned g = atomic_load(&sh->gen[b]);
		if (!g)
			continue;
		fs_fill(buf, STRIPE, b, g);
		assert_int_equal(tc_dev_pread(bdev, chk, STRIPE, TC_BACKING_DATA_OFFSET +
					      (uint64_t)b * STRIPE), 0);
		assert_memory_equal(chk, buf, STRIPE);
	}
	free(buf);
	free(chk);
	instwb_env_close(ctx, cdev, bdev, cache);
	free(sh);
	tc_ctx_free(ctx);
}

/* ---- the service-rate rule ------------------------------------------------------- */

/* An emulated SSD profile writing at @mb_s MB/s, in @dir. */
static void write_profile(const char *path, unsigned mb_s)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "[device]\ntype = ssd\ndescription = test SSD\n\n[ssd]\nread_us = 50\n"
		"write_us = 20\nparallelism = 4\nread_mb_s = 2000\nwrite_mb_s = %u\n"
		"flush_us = 10\ndiscard_us = 10\n", mb_s);
	fclose(f);
}

/* instwb on emulated devices of chosen write rates (deterministic clock): @n bytes of
 * whole-stripe writes; the volume's counters are left in @st. */
static void srate_run(unsigned cache_mb_s, unsigned backing_mb_s, uint64_t n,
		      struct tc_volume_stats *st)
{
	char dir[] = "/tmp/tc-test-srate-XXXXXX", cp[64], bp[64], cf[64], bf[64];
	assert_non_null(mkdtemp(dir));
	snprintf(cp, sizeof(cp), "%s/cache.conf", dir);
	snprintf(bp, sizeof(bp), "%s/backing.conf", dir);
	snprintf(cf, sizeof(cf), "%s/cache.img", dir);
	snprintf(bf, sizeof(bf), "%s/backing.img", dir);
	write_profile(cp, cache_mb_s);
	write_profile(bp, backing_mb_s);
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	assert_int_equal(tc_dev_new_emu(ctx, cp, cf, TC_DEV_CREATE, 128 * MIB, &cdev), 0);
	assert_int_equal(tc_dev_new_emu(ctx, bp, bf, TC_DEV_CREATE, 128 * MIB, &bdev), 0);
	struct tc_dev_limits l;
	tc_dev_limits(cdev, &l);
	l.redundancy = 1;
	tc_dev_set_limits(cdev, &l);
	fmt_cache(ctx, cdev, false);
	fmt_backing(ctx, bdev, TC_WP_INSTWB, STRIPE);
	assert_int_equal(tc_cache_open(ctx, cdev, &cache), 0);
	assert_int_equal(tc_cache_attach(cache, bdev, NULL, 0, &vol), 0);
	uint8_t *buf = aligned_alloc(4096, MIB), *chk = aligned_alloc(4096, MIB);
	seq_write(vol, buf, 0, n, MIB);
	tc_volume_stats(vol, st);
	/* Wherever each went, every stripe reads back. */
	for (uint64_t o = 0; o < n; o += 7 * MIB) {
		fill(buf, MIB, (uint8_t)(o >> 16));
		assert_int_equal(tc_volume_pread(vol, chk, MIB, o), 0);
		assert_memory_equal(chk, buf, MIB);
	}
	free(buf);
	free(chk);
	instwb_env_close(ctx, cdev, bdev, cache);
	tc_ctx_free(ctx);
	unlink(cp);
	unlink(bp);
	unlink(cf);
	unlink(bf);
	rmdir(dir);
}

/* One sample of a 1 MiB whole-stripe write that took @ns on @path. */
static void srate_sample(struct tc_volume *v, unsigned path, bool probe, bool sw,
			 uint64_t ns)
{
	struct tc_req r;
	memset(&r, 0, sizeof(r));
	r.stripe_path = (uint8_t)path;
	r.stripe_probe = probe;
	r.stripe_switch = sw;
	tc_plan_srate_sample(v, &r, MIB, ns);
}

/* How the service-rate rule keeps a path's rate (plan.c, tc_plan_srate_sample): a
 * request that switched path (it paid the seek to the stream, or a cold device) is
 * not sampled, the next ones are averaged, later ones weigh 1/8, a probe's 1/2.
 * Before, one such request of 6 to 20 ms against 2 ms for the next ones kept the
 * faster path looking the slower for the whole of a stream. */
static void test_srate_samples(void **state)
{
	(void)state;
	struct tc_volume *v = calloc(1, sizeof(*v));
	assert_non_null(v);
	const uint64_t ms = 1000000, r2 = MIB * 1000 / 2, r4 = MIB * 1000 / 4;
	srate_sample(v, TC_SRATE_BACKING, true, true, 15 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), 0);        /* the switch: not sampled */
	assert_int_equal(atomic_load(&v->srate_n[1]), 1);      /* but counted */
	srate_sample(v, TC_SRATE_BACKING, true, false, 2 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), r2);
	srate_sample(v, TC_SRATE_BACKING, true, false, 4 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), r2 - r2 / 2 + r4 / 2);  /* a mean */
	assert_int_equal(atomic_load(&v->srate[0]), 0);        /* the other path untouched */
	for (int i = 0; i < 40; i++)
		srate_sample(v, TC_SRATE_BACKING, false, false, 2 * ms);
	uint64_t settled = atomic_load(&v->srate[1]);
	assert_true(settled > r2 - r2 / 100 && settled <= r2);
	/* A later switch is not sampled either (the seek back to the stream). */
	srate_sample(v, TC_SRATE_BACKING, false, true, 20 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), settled);
	/* Past the warm-up a sample weighs 1/8... */
	srate_sample(v, TC_SRATE_BACKING, false, false, 4 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), settled - settled / 8 + r4 / 8);
	/* ...and a probe's 1/2: the path not taken follows a change within a burst. */
	uint64_t before = atomic_load(&v->srate[1]);
	srate_sample(v, TC_SRATE_BACKING, true, false, 4 * ms);
	assert_int_equal(atomic_load(&v->srate[1]), before - before / 2 + r4 / 2);
	/* No clock (0 ns) and no path tell nothing. */
	before = atomic_load(&v->srate[1]);
	srate_sample(v, TC_SRATE_BACKING, false, false, 0);
	srate_sample(v, TC_SRATE_NONE, false, false, ms);
	assert_int_equal(atomic_load(&v->srate[1]), before);
	free(v);
}

/* Where the service-rate rule sends each whole-stripe write (plan.c,
 * tc_plan_stream_path): the warm-up (with the very first request, three into the
 * cache, then three to the backing), then the favoured path with bursts of three
 * probing the other, the first 64 decisions after the choice, each next one twice as
 * far while the choice holds, up to 1024; a change of the favoured path brings them
 * back to 64.  Before, a burst came every 64 decisions: with the array's positioning
 * when the stream came back, about 10 % of a stream the cache absorbs more slowly. */
static void test_srate_probes(void **state)
{
	(void)state;
	struct tc_volume *v = calloc(1, sizeof(*v));
	assert_non_null(v);
	bool probe;
	assert_int_equal(tc_plan_stream_path(v, &probe), TC_SRATE_CACHE);   /* the first */
	assert_false(probe);
	atomic_store(&v->srate_n[0], 1);            /* it completed */
	const unsigned warm[5] = { TC_SRATE_CACHE, TC_SRATE_CACHE, TC_SRATE_BACKING,
				   TC_SRATE_BACKING, TC_SRATE_BACKING };
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(tc_plan_stream_path(v, &probe), warm[i]);
		assert_true(probe);
	}
	/* The backing measured the faster. */
	atomic_store(&v->srate[0], 100);
	atomic_store(&v->srate[1], 200);
	/* Decision 5 is the first choice; bursts start 64 decisions later, then each
	 * 3 + 128, 3 + 256, ... 3 + 1024 after the previous one's start. */
	const unsigned start[6] = { 69, 69 + 131, 200 + 259, 459 + 515, 974 + 1027,
				    2001 + 1027 };
	unsigned bursts = 0;
	for (unsigned n = 5; bursts < 6; n++) {
		unsigned path = tc_plan_stream_path(v, &probe);
		if (!probe) {
			assert_int_equal(path, TC_SRATE_BACKING);
			continue;
		}
		assert_int_equal(path, TC_SRATE_CACHE);
		assert_int_equal(n, start[bursts]);
		for (unsigned i = 1; i < 3; i++, n++) {   /* the rest of the burst */
			assert_int_equal(tc_plan_stream_path(v, &probe), TC_SRATE_CACHE);
			assert_true(probe);
		}
		bursts++;
	}
	/* The cache turns out the faster: it is taken at once, and the backing is
	 * probed 64 decisions later. */
	atomic_store(&v->srate[0], 300);
	for (unsigned i = 0; i < 64; i++) {
		assert_int_equal(tc_plan_stream_path(v, &probe), TC_SRATE_CACHE);
		assert_false(probe);
	}
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(tc_plan_stream_path(v, &probe), TC_SRATE_BACKING);
		assert_true(probe);
	}
	assert_int_equal(tc_plan_stream_path(v, &probe), TC_SRATE_CACHE);
	free(v);
}

/* A stream the cache absorbs more slowly than the backing goes to the backing; one it
 * absorbs faster is made dirty at once; the other path is probed now and then. */
static void test_service_rate(void **state)
{
	(void)state;
	struct tc_volume_stats st;
	const uint64_t n = 32 * MIB;

	/* Cache 50 MB/s, backing 500 MB/s: the warm-up's burst of three into the cache
	 * (the very first request and two more; the 32 requests reach no probe burst,
	 * the first 64 decisions after the warm-up), the rest to the backing. */
	srate_run(50, 500, n, &st);
	assert_true(st.stream_rate_cache > 0 && st.stream_rate_backing > 0);
	assert_true(st.stream_rate_cache < st.stream_rate_backing);
	assert_int_equal(st.instant_bytes, 3 * MIB);
	assert_int_equal(st.instant_bytes + st.full_stripe_bytes, n);
	assert_int_equal(st.dirty_bytes, st.instant_bytes);

	/* Cache 500 MB/s, backing 50 MB/s: the warm-up's burst of three to the backing,
	 * the rest into the cache. */
	srate_run(500, 50, n, &st);
	assert_true(st.stream_rate_cache > st.stream_rate_backing);
	assert_true(st.stream_rate_backing > 0);
	assert_int_equal(st.full_stripe_bytes, 3 * MIB);
	assert_int_equal(st.instant_bytes + st.full_stripe_bytes, n);

	/* wt: whole stripes of which nothing is cached go to the backing whole too (no
	 * read-modify-write per line), uncached. */
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	uint8_t *buf = aligned_alloc(4096, MIB), *chk = aligned_alloc(4096, MIB);
	instwb_env(ctx, TC_WP_WT, STRIPE, &cdev, &bdev, &cache, &vol);
	fill(buf, MIB, 21);
	assert_int_equal(tc_volume_pwrite(vol, buf, MIB, 0, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes, MIB);
	assert_int_equal(st.cached_bytes, 0);
	assert_int_equal(tc_dev_pread(bdev, chk, MIB, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_equal(chk, buf, MIB);
	instwb_env_close(ctx, cdev, bdev, cache);
	free(buf);
	free(chk);
	tc_ctx_free(ctx);
}

/* A write-back volume on a parity array of @n memory members (@level, @chunk bytes),
 * through a fault layer when @fault is not NULL (*@fault: the layer), cached on a
 * memory device with the unprotected-write-back override; *@arr: the array. */
static void parity_env(tc_ctx *ctx, enum tc_raid_level_id level, unsigned n, uint32_t chunk,
		       tc_dev **arr, tc_dev **fault, tc_dev **cdev, tc_cache **cache,
		       tc_volume **vol)
{
	tc_dev *m[8];
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(tc_dev_new_memory(ctx, 16 * MIB, &m[i]), 0);
	struct tc_array_opts ao = { .level = level, .chunk = chunk };
	assert_int_equal(tc_dev_new_array(ctx, &ao, m, n, arr), 0);
	tc_dev *bdev = *arr;
	if (fault) {
		assert_int_equal(tc_dev_new_fault(ctx, *arr, fault), 0);
		bdev = *fault;
	}
	assert_int_equal(tc_dev_new_memory(ctx, 8 * MIB, cdev), 0);
	fmt_cache(ctx, *cdev, true);
	fmt_backing(ctx, bdev, TC_WP_WB, 0);
	assert_int_equal(tc_cache_open(ctx, *cdev, cache), 0);
	assert_int_equal(tc_cache_attach(*cache, bdev, NULL, 0, vol), 0);
}

/* Close what parity_env made: the cache, its device, the backing @bdev, the context. */
static void parity_env_close(tc_ctx *ctx, tc_cache *cache, tc_dev *cdev, tc_dev *bdev)
{
	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

/*
 * The cleaner completes a stripe from the backing: on a RAID 6 of six (64 KiB chunks,
 * 256 KiB stripes, four lines), eight dirty 4 KiB units 32 KiB apart in a stripe of
 * which the cache holds nothing else (eight partial-stripe writes otherwise) go back
 * as one full-stripe write, what the cache lacks read from the array.  When that read
 * fails (a fault layer over the array), the dirty units go back alone.  Either way
 * the array ends up with its old data and the writes over it.
 */
static void test_cleaner_reconstructs_stripes(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *arr, *bdev, *cdev;
	tc_cache *cache;
	tc_volume *vol;
	const uint64_t stripe = 4 * LINE;
	parity_env(ctx, TC_RAID6, 6, LINE, &arr, &bdev, &cdev, &cache, &vol);
	/* The array's old data: two stripes (the volume's dirty data is none of it). */
	uint8_t *want = aligned_alloc(4096, 2 * stripe), *got = aligned_alloc(4096, 2 * stripe);
	fill(want, 2 * stripe, 3);
	assert_int_equal(tc_dev_pwrite(bdev, want, 2 * stripe, TC_BACKING_DATA_OFFSET, 0), 0);
	struct tc_volume_stats st0, st;
	tc_volume_stats(vol, &st0);
	assert_int_equal(st0.backing_stripe, stripe);
	for (unsigned round = 0; round < 2; round++) {
		uint64_t base = round * stripe;
		for (unsigned k = 0; k < 8; k++) {
			fill(want + base + k * 32768, 4096, 10 + round * 8 + k);
			assert_int_equal(tc_volume_pwrite(vol, want + base + k * 32768, 4096,
							  base + k * 32768, 0), 0);
		}
		struct tc_array_status a0, a1;
		assert_int_equal(tc_array_status(arr, &a0), 0);
		tc_volume_stats(vol, &st0);
		if (round == 1) {
			struct tc_fault f = { .op = TC_FAULT_READ, .error = EIO, .transient = true };
			assert_int_equal(tc_fault_arm(bdev, &f), 0);
		}
		assert_int_equal(tc_volume_flush_dirty(vol, NULL, NULL), 0);
		assert_int_equal(tc_array_status(arr, &a1), 0);
		tc_volume_stats(vol, &st);
		assert_int_equal(st.dirty_bytes, 0);
		assert_int_equal(st.writeback_bytes - st0.writeback_bytes, 8 * 4096);
		uint64_t partial = a1.stripe_writes_rmw + a1.stripe_writes_rcw -
				   a0.stripe_writes_rmw - a0.stripe_writes_rcw;
		if (round == 0) {
			assert_int_equal(st.writeback_stripes_reconstructed -
					 st0.writeback_stripes_reconstructed, 1);
			/* One read, from the first unit the cache lacks to the last. */
			assert_int_equal(st.writeback_backing_read_bytes -
					 st0.writeback_backing_read_bytes, stripe - 4096);
			assert_int_equal(a1.stripe_writes_full - a0.stripe_writes_full, 1);
			assert_int_equal(partial, 0);
		} else {
			assert_int_equal(st.writeback_stripes_reconstructed,
					 st0.writeback_stripes_reconstructed);
			/* The read failed, the writeback did not: no backing error. */
			struct tc_fault_state fs;
			assert_int_equal(tc_fault_get(bdev, &fs), 0);
			assert_int_equal(fs.failed, 1);
			assert_int_equal(st.backing_errors, st0.backing_errors);
			assert_int_equal(a1.stripe_writes_full, a0.stripe_writes_full);
			assert_int_equal(partial, 8);
		}
		assert_int_equal(tc_dev_pread(bdev, got, 2 * stripe, TC_BACKING_DATA_OFFSET), 0);
		assert_memory_equal(got, want, 2 * stripe);
	}
	free(want);
	free(got);
	parity_env_close(ctx, cache, cdev, bdev);
}

/*
 * A backing whose stripes do not divide the volume's start on it (TC_BACKING_DATA_
 * OFFSET, 1 MiB): a RAID 5 of four with 64 KiB chunks has 192 KiB stripes, so the
 * volume starts 64 KiB into one, and the stripes lie on the array's grid, not the
 * volume's (tc_stripe_pos).  A write-back write of one grid stripe goes to the array
 * as one full-stripe write; the cleaner writes a grid stripe made dirty line by line
 * as one, and completes one with scattered dirty units from the array; the array does
 * no partial-stripe write for any of it, and holds every write.
 */
static void test_stripes_off_the_volume_grid(void **state)
{
	(void)state;
	tc_ctx *ctx = new_ctx();
	tc_dev *bdev, *cdev;
	tc_cache *cache;
	tc_volume *vol;
	const uint64_t stripe = 3 * LINE, skew = MIB % stripe;
	parity_env(ctx, TC_RAID5, 4, LINE, &bdev, NULL, &cdev, &cache, &vol);
	struct tc_volume_stats st0, st;
	tc_volume_stats(vol, &st0);
	assert_int_equal(st0.backing_stripe, stripe);
	assert_int_equal(skew, LINE);
	const uint64_t len = 5 * stripe;
	uint8_t *want = aligned_alloc(4096, len), *got = aligned_alloc(4096, len);
	memset(want, 0, len);
	struct tc_array_status a0, a1;
	assert_int_equal(tc_array_status(bdev, &a0), 0);
	/* Grid stripe 1 (volume 128 KiB to 320 KiB) in one write: to the array whole. */
	uint64_t s1 = stripe - skew;
	fill(want + s1, stripe, 21);
	assert_int_equal(tc_volume_pwrite(vol, want + s1, stripe, s1, 0), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.full_stripe_bytes - st0.full_stripe_bytes, stripe);
	assert_int_equal(st.dirty_bytes, 0);
	/* Grid stripe 2 made dirty a line at a time, and grid stripe 3 in 4 KiB units
	 * 16 KiB apart: the cleaner writes both whole. */
	uint64_t s2 = s1 + stripe, s3 = s2 + stripe;
	for (unsigned l = 0; l < 3; l++) {
		fill(want + s2 + l * LINE, LINE, (uint8_t)(30 + l));
		assert_int_equal(tc_volume_pwrite(vol, want + s2 + l * LINE, LINE,
						  s2 + l * LINE, 0), 0);
	}
	for (uint64_t o = 0; o < stripe; o += 16384) {
		fill(want + s3 + o, 4096, (uint8_t)(40 + o / 16384));
		assert_int_equal(tc_volume_pwrite(vol, want + s3 + o, 4096, s3 + o, 0), 0);
	}
	tc_volume_stats(vol, &st0);
	assert_int_equal(tc_volume_flush_dirty(vol, NULL, NULL), 0);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.writeback_full_stripes - st0.writeback_full_stripes, 2);
	assert_int_equal(st.writeback_stripes_reconstructed -
			 st0.writeback_stripes_reconstructed, 1);
	assert_int_equal(tc_array_status(bdev, &a1), 0);
	assert_int_equal(a1.stripe_writes_full - a0.stripe_writes_full, 3);
	assert_int_equal(a1.stripe_writes_rmw + a1.stripe_writes_rcw,
			 a0.stripe_writes_rmw + a0.stripe_writes_rcw);
	assert_int_equal(tc_dev_pread(bdev, got, len, TC_BACKING_DATA_OFFSET), 0);
	assert_memory_equal(got, want, len);
	free(want);
	free(got);
	parity_env_close(ctx, cache, cdev, bdev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_and_override),
		cmocka_unit_test(test_legacy_superblock),
		cmocka_unit_test(test_refused_stale_attach),
		cmocka_unit_test(test_raid1_member_fails),
		cmocka_unit_test(test_redundant_again),
		cmocka_unit_test(test_survivors_first),
		cmocka_unit_test(test_error_rate_hold),
		cmocka_unit_test(test_degrade_under_load),
		cmocka_unit_test(test_instwb_full_stripes),
		cmocka_unit_test(test_wb_full_stripes),
		cmocka_unit_test(test_wb_full_stripes_threads),
		cmocka_unit_test(test_srate_samples),
		cmocka_unit_test(test_srate_probes),
		cmocka_unit_test(test_service_rate),
		cmocka_unit_test(test_cleaner_reconstructs_stripes),
		cmocka_unit_test(test_stripes_off_the_volume_grid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
