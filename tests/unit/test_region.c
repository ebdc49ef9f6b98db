/* SPDX-License-Identifier: MIT */
/*
 * test_region.c - ranges of a volume with cache attributes (tc_volume_region_set,
 * region.c) on memory devices in deterministic mode, two volumes on one cache of 16
 * KiB lines: pinned lines survive a neighbour's scans and writes and the volume's own
 * scans at its cap (while unpinned they do not), and go back to eviction once unpinned;
 * an uncacheable range is never filled, its writes go around the cache, and setting it
 * live writes back and drops what the cache held; a range's own write policy is
 * followed; conflicting, unaligned and oversized ranges are refused with nothing
 * changed; ranges survive a restart; random workloads with live changes of pins keep
 * the data and the pins; threads doing I/O while ranges change.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "two_volumes.h"


/* Volume "a" (@a_wp) and "b" (write-back) on a cache of about a hundred lines. */
static void env_up_mode(struct t2_env *e, uint8_t a_wp, enum tc_ctx_mode mode)
{
	t2_up(e, mode, 7, a_wp, TC_WP_WB, TC_FLUSH_MEDIUM);
	assert_true(e->lines >= 64);
}

static void env_up(struct t2_env *e, uint8_t a_wp)
{
	env_up_mode(e, a_wp, TC_CTX_DETERMINISTIC);
}

static struct tc_volume_stats stats(tc_volume *v)
{
	struct tc_volume_stats st;
	tc_volume_stats(v, &st);
	return st;
}

static int pin(tc_volume *v, uint64_t first_line, uint64_t nlines, uint8_t kind, uint8_t wp)
{
	struct tc_region r = { .offset = first_line * T2_LINE, .length = nlines * T2_LINE,
			       .kind = kind, .write_policy = wp };
	return tc_volume_region_set(v, &r);
}

/* Volume b reads and writes ten times the cache's lines, each once. */
static void thrash(struct t2_env *e, uint64_t from)
{
	for (uint64_t i = 0; i < 10 * e->lines; i++) {
		if (i % 2)
			t2_wr(e->b, (from + i) % 4096);
		else
			t2_rd(e->b, (from + i) % 4096);
	}
}

/* How many of lines [0, n) of @v are resident (every one of their units valid). */
static uint64_t resident_of(tc_volume *v, uint64_t n)
{
	uint64_t k = 0;
	for (uint64_t l = 0; l < n; l++)
		if (tc_volume_valid_bytes(v, l * T2_LINE, T2_LINE) == T2_LINE)
			k++;
	return k;
}

static void fill_lines(tc_volume *v, uint64_t first, uint64_t n)
{
	uint8_t buf[T2_LINE];
	for (uint64_t l = first; l < first + n; l++)
		assert_int_equal(tc_volume_pread(v, buf, T2_LINE, l * T2_LINE), 0);
}

static void test_pins_survive(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	uint64_t hot = e.lines / 4;
	fill_lines(e.a, 0, hot);
	assert_int_equal(resident_of(e.a, hot), hot);
	/* Unpinned, the neighbour's traffic takes them. */
	thrash(&e, 0);
	assert_true(resident_of(e.a, hot) < hot);

	/* Pinned (set after they are resident, and lines filled afterwards): they stay. */
	fill_lines(e.a, 0, hot / 2);
	assert_int_equal(pin(e.a, 0, hot, TC_REGION_PINNED, 0), 0);
	fill_lines(e.a, hot / 2, hot - hot / 2);
	assert_int_equal(tc_volume_pinned_bytes(e.a), hot * T2_LINE);
	thrash(&e, 1000);
	assert_int_equal(resident_of(e.a, hot), hot);
	uint64_t misses = stats(e.a).read_misses;
	fill_lines(e.a, 0, hot);
	assert_int_equal(stats(e.a).read_misses, misses);

	/* Volume a at a cap: its own scan of other lines evicts only its unpinned ones. */
	struct tc_volume_settings s;
	tc_volume_get(e.a, &s);
	s.cap = (hot + 4) * T2_LINE;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), 0);
	for (uint64_t l = hot; l < hot + 10 * e.lines; l++) {
		t2_rd(e.a, l % 4096 < hot ? l % 4096 + hot : l % 4096);
		assert_true(stats(e.a).resident_bytes <= (hot + 4) * T2_LINE);
	}
	assert_int_equal(resident_of(e.a, hot), hot);

	/* Unpinned: evictable again. */
	s.cap = 0;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), 0);
	assert_int_equal(tc_volume_region_clear(e.a, 0, hot * T2_LINE, TC_REGION_PINNED), 0);
	assert_int_equal(tc_volume_pinned_bytes(e.a), 0);
	thrash(&e, 2000);
	assert_true(resident_of(e.a, hot) < hot);
	t2_down(&e);
}

/* A sequential stream through a pinned range fills it, past the cutoff and nhit. */
static void test_pins_fill_past_admission(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	struct tc_volume_settings s;
	tc_volume_get(e.a, &s);
	s.seq_cutoff = 64 * 1024;
	s.admission = TC_ADMIT_NHIT;
	s.nhit = 3;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), 0);
	uint8_t *buf = malloc(16 * T2_LINE);
	assert_int_equal(tc_volume_pread(e.a, buf, 16 * T2_LINE, 100 * T2_LINE), 0);
	assert_int_equal(resident_of(e.a, 116) , 0);
	assert_int_equal(pin(e.a, 0, 16, TC_REGION_PINNED, 0), 0);
	assert_int_equal(tc_volume_pread(e.a, buf, 16 * T2_LINE, 0), 0);
	assert_int_equal(resident_of(e.a, 16), 16);
	free(buf);
	t2_down(&e);
}

static void test_uncacheable(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WB);
	/* Lines 0..7 dirty and 8..15 clean in the cache, then the range goes uncacheable
	 * live: written back and dropped. */
	for (uint64_t l = 0; l < 8; l++)
		t2_wr(e.a, l);
	fill_lines(e.a, 8, 8);
	assert_true(stats(e.a).dirty_bytes > 0);
	assert_int_equal(pin(e.a, 0, 16, TC_REGION_UNCACHEABLE, 0), 0);
	assert_int_equal(stats(e.a).dirty_bytes, 0);
	assert_int_equal(tc_volume_valid_bytes(e.a, 0, 16 * T2_LINE), 0);
	/* Reads never fill it, writes leave nothing in the cache. */
	uint64_t prom = stats(e.a).promotions;
	fill_lines(e.a, 0, 16);
	for (uint64_t l = 0; l < 16; l++)
		t2_wr(e.a, l + 1);   /* the line after each: all inside 0..16 but the last */
	assert_int_equal(tc_volume_valid_bytes(e.a, 0, 16 * T2_LINE), 0);
	assert_int_equal(stats(e.a).dirty_bytes > 0, true);   /* line 16 is outside */
	assert_int_equal(tc_volume_valid_bytes(e.a, 16 * T2_LINE, T2_LINE), 4096);
	assert_int_equal(stats(e.a).promotions, prom + 1);
	/* The data is what was written last. */
	uint8_t buf[4096], want[4096];
	for (uint64_t l = 1; l <= 16; l++) {
		memset(want, (int)(l & 0xff), sizeof(want));
		assert_int_equal(tc_volume_pread(e.a, buf, sizeof(buf), l * T2_LINE), 0);
		assert_memory_equal(buf, want, sizeof(buf));
	}
	/* Cacheable again: fills resume. */
	assert_int_equal(tc_volume_region_clear(e.a, 0, 16 * T2_LINE, TC_REGION_UNCACHEABLE), 0);
	fill_lines(e.a, 0, 4);
	assert_int_equal(resident_of(e.a, 4), 4);
	t2_down(&e);
}

static void test_range_policy(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WB);
	for (uint64_t l = 0; l < 4; l++)
		t2_wr(e.a, l);
	uint64_t dirty = stats(e.a).dirty_bytes;
	assert_int_equal(dirty, 4 * 4096);
	/* Lines 0..3 write-through: their dirty data is written back, and later writes
	 * there stay clean while the rest of the volume is write-back. */
	assert_int_equal(pin(e.a, 0, 4, TC_REGION_POLICY, TC_WP_WT), 0);
	assert_int_equal(stats(e.a).dirty_bytes, 0);
	for (uint64_t l = 0; l < 8; l++)
		t2_wr(e.a, l);
	assert_int_equal(stats(e.a).dirty_bytes, 4 * 4096);
	assert_int_equal(tc_volume_valid_bytes(e.a, 0, 4 * T2_LINE), 4 * 4096);
	/* Volume wt, range wb: the range's writes are dirty. */
	t2_close(&e);
	t2_open(&e);
	struct tc_volume_settings s;
	tc_volume_get(e.b, &s);
	s.write_policy = TC_WP_WT;
	assert_int_equal(tc_volume_set(e.b, &s, NULL, NULL), 0);
	assert_int_equal(pin(e.b, 10, 2, TC_REGION_POLICY, TC_WP_WB), 0);
	t2_wr(e.b, 10);
	t2_wr(e.b, 20);
	assert_int_equal(stats(e.b).dirty_bytes, 4096);
	/* instwb is a volume's policy only. */
	assert_int_equal(pin(e.b, 30, 2, TC_REGION_POLICY, TC_WP_INSTWB), -EINVAL);
	t2_down(&e);
}

static unsigned nregions(tc_volume *v)
{
	struct tc_region r[TC_VOL_REGIONS_MAX];
	return tc_volume_regions(v, r, TC_VOL_REGIONS_MAX);
}

static void test_refusals(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	assert_int_equal(pin(e.a, 0, 8, TC_REGION_PINNED, 0), 0);
	/* Overlapping, or sharing a line, with another kind. */
	assert_int_equal(pin(e.a, 4, 8, TC_REGION_UNCACHEABLE, 0), -EINVAL);
	assert_non_null(strstr(e.log.last, "overlaps range 0:131072 (pinned)"));
	struct tc_region r = { .offset = 8 * T2_LINE - 4096, .length = 4096,
			       .kind = TC_REGION_POLICY, .write_policy = TC_WP_WA };
	assert_int_equal(tc_volume_region_set(e.a, &r), -EINVAL);
	/* Bad ranges. */
	r.offset = 100;
	assert_int_equal(tc_volume_region_set(e.a, &r), -EINVAL);
	r.offset = 64 * T2_MIB;
	assert_int_equal(tc_volume_region_set(e.a, &r), -EINVAL);
	r.offset = 0;
	r.length = 0;
	assert_int_equal(tc_volume_region_set(e.a, &r), -EINVAL);
	r.length = 4096;
	r.kind = 9;
	assert_int_equal(tc_volume_region_set(e.a, &r), -EINVAL);
	/* More than half the cache pinned, by one volume or by both. */
	uint64_t half = e.lines * TC_PIN_MAX_PCT / 100;
	assert_int_equal(pin(e.a, 1000, half + 1, TC_REGION_PINNED, 0), -ENOSPC);
	assert_non_null(strstr(e.log.last, "more than the 50% allowed"));
	assert_int_equal(pin(e.b, 0, half - 8, TC_REGION_PINNED, 0), 0);
	assert_int_equal(pin(e.a, 1000, 1, TC_REGION_PINNED, 0), -ENOSPC);
	assert_int_equal(tc_volume_region_clear(e.b, 0, (half - 8) * T2_LINE, TC_REGION_PINNED), 0);
	/* A pin above the cap, a cap below the pins. */
	struct tc_volume_settings s;
	tc_volume_get(e.a, &s);
	s.cap = 16 * T2_LINE;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), 0);
	assert_int_equal(pin(e.a, 100, 9, TC_REGION_PINNED, 0), -ENOSPC);
	s.cap = 4 * T2_LINE;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), -EINVAL);
	assert_non_null(strstr(e.log.last, "below the"));
	/* Reservations and pins together above the cache. */
	s.cap = 0;
	assert_int_equal(tc_volume_set(e.a, &s, NULL, NULL), 0);
	tc_volume_get(e.b, &s);
	s.reserve = (e.lines - 4) * T2_LINE;
	assert_int_equal(tc_volume_set(e.b, &s, NULL, NULL), -EINVAL);
	/* Nothing to clear. */
	assert_int_equal(tc_volume_region_clear(e.a, 0, T2_LINE, TC_REGION_UNCACHEABLE), -ENOENT);
	/* Nothing changed by any of these. */
	assert_int_equal(nregions(e.a), 1);
	assert_int_equal(nregions(e.b), 0);
	struct tc_region got;
	assert_int_equal(tc_volume_regions(e.a, &got, 1), 1);
	assert_int_equal(got.offset, 0);
	assert_int_equal(got.length, 8 * T2_LINE);
	assert_int_equal(got.kind, TC_REGION_PINNED);
	/* Too many ranges. */
	for (unsigned i = 1; i < TC_VOL_REGIONS_MAX; i++)
		assert_int_equal(pin(e.a, 100 + 4 * i, 1, TC_REGION_UNCACHEABLE, 0), 0);
	assert_int_equal(pin(e.a, 500, 1, TC_REGION_UNCACHEABLE, 0), -ENOSPC);
	/* Splitting one in two would make one too many as well. */
	assert_int_equal(tc_volume_region_clear(e.a, 2 * T2_LINE, T2_LINE, TC_REGION_PINNED), -ENOSPC);
	assert_int_equal(nregions(e.a), TC_VOL_REGIONS_MAX);
	t2_down(&e);
}

static void test_merge_split_restart(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	assert_int_equal(pin(e.a, 0, 4, TC_REGION_PINNED, 0), 0);
	assert_int_equal(pin(e.a, 2, 4, TC_REGION_PINNED, 0), 0);
	assert_int_equal(pin(e.a, 6, 2, TC_REGION_PINNED, 0), 0);   /* adjacent */
	assert_int_equal(pin(e.a, 20, 2, TC_REGION_UNCACHEABLE, 0), 0);
	assert_int_equal(pin(e.b, 30, 2, TC_REGION_POLICY, TC_WP_WA), 0);
	struct tc_region r[4];
	assert_int_equal(tc_volume_regions(e.a, r, 4), 2);
	assert_int_equal(r[0].offset, 0);
	assert_int_equal(r[0].length, 8 * T2_LINE);
	/* Unpin the middle: two ranges. */
	assert_int_equal(tc_volume_region_clear(e.a, 3 * T2_LINE, 2 * T2_LINE, TC_REGION_PINNED), 0);
	assert_int_equal(tc_volume_regions(e.a, r, 4), 3);
	assert_int_equal(r[0].length, 3 * T2_LINE);
	assert_int_equal(r[1].offset, 5 * T2_LINE);
	assert_int_equal(r[1].length, 3 * T2_LINE);
	assert_int_equal(r[2].kind, TC_REGION_UNCACHEABLE);
	fill_lines(e.a, 0, 8);
	assert_int_equal(tc_volume_pinned_bytes(e.a), 6 * T2_LINE);
	/* A restart keeps the ranges and pins the resident lines again. */
	t2_close(&e);
	t2_open(&e);
	assert_int_equal(tc_volume_regions(e.a, r, 4), 3);
	assert_int_equal(r[1].offset, 5 * T2_LINE);
	assert_int_equal(r[2].offset, 20 * T2_LINE);
	assert_int_equal(r[2].length, 2 * T2_LINE);
	assert_int_equal(tc_volume_regions(e.b, r, 4), 1);
	assert_int_equal(r[0].write_policy, TC_WP_WA);
	assert_int_equal(tc_volume_pinned_bytes(e.a), 6 * T2_LINE);
	thrash(&e, 0);
	assert_int_equal(resident_of(e.a, 3), 3);
	for (uint64_t l = 5; l < 8; l++)
		assert_int_equal(tc_volume_valid_bytes(e.a, l * T2_LINE, T2_LINE), T2_LINE);
	/* Detach takes the volume's ranges with it: attached again, it has none. */
	assert_int_equal(tc_volume_detach(e.a, 0, NULL, NULL), 0);
	assert_int_equal(tc_cache_attach(e.c, e.ad, NULL, 0, &e.a), 0);
	assert_int_equal(nregions(e.a), 0);
	assert_int_equal(nregions(e.b), 1);
	t2_down(&e);
}

/* Random reads and writes of both volumes with pins, uncacheable ranges and range
 * changed live: after every request the data is the model's, every pinned line once
 * resident is still resident, and no uncacheable line is. */
static void test_random_live_changes(void **state)
{
	enum { SPAN = 400, STEPS = 6000 };
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct t2_env e;
		env_up(&e, TC_WP_WB);
		uint8_t tags[2][SPAN];
		bool pinned[SPAN], uncache[SPAN], seen[SPAN];
		memset(seen, 0, sizeof(seen));
		memset(tags, 0, sizeof(tags));
		memset(pinned, 0, sizeof(pinned));
		memset(uncache, 0, sizeof(uncache));
		tc_volume *vols[2] = { e.a, e.b };
		uint64_t x = seed * 0x9e3779b97f4a7c15ull;
		for (unsigned step = 0; step < STEPS; step++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			unsigned w = (unsigned)(x & 1);
			uint64_t l = (x >> 8) % SPAN;
			unsigned op = (unsigned)((x >> 32) % 100);
			uint8_t buf[4096];
			if (op < 2 && w == 0) {
				/* pin or unpin 4 lines of volume a */
				uint64_t f = l & ~3ull;
				bool clash = false;
				for (uint64_t k = f; k < f + 4; k++)
					clash |= uncache[k];
				if (!clash && !pinned[f]) {
					if (pin(e.a, f, 4, TC_REGION_PINNED, 0) == 0)
						for (uint64_t k = f; k < f + 4; k++)
							pinned[k] = true;
				} else if (pinned[f]) {
					int r = tc_volume_region_clear(e.a, f * T2_LINE, 4 * T2_LINE,
								       TC_REGION_PINNED);
					assert_true(r == 0 || r == -ENOSPC);   /* a split: one too many */
					for (uint64_t k = f; k < f + 4 && !r; k++)
						pinned[k] = seen[k] = false;
				}
			} else if (op < 3 && w == 0) {
				uint64_t f = l & ~3ull;
				bool clash = false;
				for (uint64_t k = f; k < f + 4; k++)
					clash |= pinned[k];
				if (!clash && !uncache[f]) {
					int r = pin(e.a, f, 4, TC_REGION_UNCACHEABLE, 0);
					assert_true(r == 0 || r == -ENOSPC);   /* 16 ranges already */
					for (uint64_t k = f; k < f + 4 && !r; k++)
						uncache[k] = true;
					if (!r)
						assert_int_equal(tc_volume_valid_bytes(e.a, f * T2_LINE,
										       4 * T2_LINE), 0);
				} else if (uncache[f]) {
					int r = tc_volume_region_clear(e.a, f * T2_LINE, 4 * T2_LINE,
								       TC_REGION_UNCACHEABLE);
					assert_true(r == 0 || r == -ENOSPC);
					for (uint64_t k = f; k < f + 4 && !r; k++)
						uncache[k] = false;
				}
			} else if (op < 55) {
				tags[w][l] = (uint8_t)(step | 1);
				memset(buf, tags[w][l], sizeof(buf));
				assert_int_equal(tc_volume_pwrite(vols[w], buf, sizeof(buf), l * T2_LINE, 0), 0);
			} else {
				assert_int_equal(tc_volume_pread(vols[w], buf, sizeof(buf), l * T2_LINE), 0);
				uint8_t want[4096];
				memset(want, tags[w][l], sizeof(want));
				assert_memory_equal(buf, want, sizeof(buf));
			}
			if (step % 64 == 0) {
				tc_ctx_advance(e.ctx, 10 * 1000 * 1000);
				while (tc_ctx_poll(e.ctx, 256) > 0)
					;
			}
			/* Pinned lines once present stay present; uncacheable ones never are. */
			if (w == 0 && pinned[l] && tc_volume_valid_bytes(e.a, l * T2_LINE, 4096))
				seen[l] = true;   /* resident and pinned: it must stay */
			for (uint64_t k = 0; k < SPAN; k++)
				if (seen[k] && tc_volume_valid_bytes(e.a, k * T2_LINE, 4096) != 4096)
					fail_msg("seed %llu step %u: pinned line %llu was evicted",
						 (unsigned long long)seed, step, (unsigned long long)k);
			if (w == 0 && uncache[l])
				assert_int_equal(tc_volume_valid_bytes(e.a, l * T2_LINE, T2_LINE), 0);
		}
		for (uint64_t l = 0; l < SPAN; l++)
			if (seen[l])
				assert_true(tc_volume_valid_bytes(e.a, l * T2_LINE, 4096) == 4096);
		t2_down(&e);
	}
}

/* Threads reading and writing volume a (each its own lines, checking its data) while
 * the test thread pins, unpins, marks uncacheable and clears ranges over them: the data
 * stays right, and once every pin is gone no slot counts as pinned; pinned again and
 * read whole, the range's lines are resident and counted once each. */
struct worker {
	tc_volume *v;
	unsigned id;
	atomic_bool *stop;
	int err;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t tags[16] = { 0 }, buf[4096], want[4096];
	uint64_t x = 0x1234567 + w->id;
	unsigned n = 0;
	while (!atomic_load(w->stop) || n < 200) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uint64_t l = w->id * 16 + x % 16;   /* lines 16*id .. 16*id+15 */
		if (x >> 40 & 1) {
			tags[l % 16] = (uint8_t)(n | 1);
			memset(buf, tags[l % 16], sizeof(buf));
			if (tc_volume_pwrite(w->v, buf, sizeof(buf), l * T2_LINE, 0))
				w->err = 1;
		} else {
			if (tc_volume_pread(w->v, buf, sizeof(buf), l * T2_LINE))
				w->err = 1;
			memset(want, tags[l % 16], sizeof(want));
			if (memcmp(buf, want, sizeof(buf)))
				w->err = 2;
		}
		n++;
	}
	return NULL;
}

static void test_threads_live_changes(void **state)
{
	struct t2_env e;
	env_up_mode(&e, TC_WP_WB, TC_CTX_THREADED);
	enum { NT = 3 };
	pthread_t t[NT];
	struct worker w[NT];
	atomic_bool stop = false;
	for (unsigned i = 0; i < NT; i++) {
		w[i] = (struct worker){ .v = e.a, .id = i, .stop = &stop };
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (unsigned k = 0; k < 40; k++) {
		uint64_t f = (k * 8) % (NT * 16);
		assert_int_equal(pin(e.a, f, 8, TC_REGION_PINNED, 0), 0);
		assert_int_equal(pin(e.a, (f + 16) % (NT * 16), 4, TC_REGION_UNCACHEABLE, 0), 0);
		assert_int_equal(pin(e.a, (f + 28) % (NT * 16), 4, TC_REGION_POLICY, TC_WP_WT), 0);
		assert_int_equal(tc_volume_region_clear(e.a, f * T2_LINE, 8 * T2_LINE, TC_REGION_PINNED), 0);
		assert_int_equal(tc_volume_region_clear(e.a, 0, NT * 16 * T2_LINE,
							TC_REGION_UNCACHEABLE), 0);
		assert_int_equal(tc_volume_region_clear(e.a, 0, NT * 16 * T2_LINE,
							TC_REGION_POLICY), 0);
	}
	assert_int_equal(tc_volume_pinned_bytes(e.a), 0);
	assert_int_equal(pin(e.a, 0, NT * 16, TC_REGION_PINNED, 0), 0);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < NT; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].err, 0);
	}
	/* Each line counts once as pinned: read every line of the range (b is idle, so
	 * each fills), then all of them are resident and pinned, no more, no less. */
	fill_lines(e.a, 0, NT * 16);
	assert_int_equal(resident_of(e.a, NT * 16), NT * 16);
	assert_int_equal(tc_volume_pinned_bytes(e.a), NT * 16 * T2_LINE);
	assert_int_equal(tc_volume_region_clear(e.a, 0, NT * 16 * T2_LINE, TC_REGION_PINNED), 0);
	assert_int_equal(tc_volume_pinned_bytes(e.a), 0);
	t2_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pins_survive),
		cmocka_unit_test(test_pins_fill_past_admission),
		cmocka_unit_test(test_uncacheable),
		cmocka_unit_test(test_range_policy),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_merge_split_restart),
		cmocka_unit_test(test_random_live_changes),
		cmocka_unit_test(test_threads_live_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
