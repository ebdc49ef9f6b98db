/* SPDX-License-Identifier: MIT */
/*
 * test_range.c - maintenance of a byte range of a volume (tc_volume_flush_range,
 * tc_volume_invalidate_range) on memory devices: after an invalidation the range's
 * copies are gone and reads see what was written to the backing behind the cache; a
 * range holding dirty data is refused with nothing changed, or its dirty bytes are
 * discarded and counted when asked; a range flush writes back exactly the range's
 * dirty lines onto the backing and leaves the rest dirty; bad ranges are refused;
 * and threads doing I/O in the range while it is flushed and invalidated over and
 * over always read what they wrote last (threaded context).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "helpers.h"

#define MIB (1024u * 1024u)
#define LINE 16384u
#define UNIT 4096u

struct env {
	tc_ctx *ctx;
	tc_dev *cd, *bd;
	tc_cache *c;
	tc_volume *v;
	struct t_log log;
};

static void env_up(struct env *e, enum tc_ctx_mode mode, uint8_t wp)
{
	memset(e, 0, sizeof(*e));
	e->ctx = t_ctx(mode, 11, TC_LOG_WARN, &e->log);
	assert_int_equal(tc_dev_new_memory(e->ctx, 8 * MIB, &e->cd), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, 32 * MIB, &e->bd), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = LINE;
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.seq_cutoff = 0;
	s.write_policy = wp;
	s.flush_rate = TC_FLUSH_LOW;    /* the cleaner waits for 1 s of idleness */
	co.unprotected_writeback = true;   /* single memory devices: write-back by override */
	assert_int_equal(tc_cache_format(e->ctx, e->cd, &co), 0);
	assert_int_equal(tc_backing_format(e->ctx, e->bd, "vol", &s), 0);
	assert_int_equal(tc_cache_open(e->ctx, e->cd, &e->c), 0);
	assert_int_equal(tc_cache_attach(e->c, e->bd, NULL, 0, &e->v), 0);
}

static void env_down(struct env *e)
{
	assert_int_equal(tc_cache_close(e->c), 0);
	tc_dev_close(e->cd);
	tc_dev_close(e->bd);
	tc_ctx_free(e->ctx);
}

/* @tag's pattern for the bytes at volume offset @off: each 512-byte sector's own. */
static void fill(uint8_t *p, size_t len, unsigned tag, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(tag * 37 + (off + i) / 512 + 1);
}

static void wr(struct env *e, uint64_t off, size_t len, unsigned tag)
{
	uint8_t *b = malloc(len);
	fill(b, len, tag, off);
	assert_int_equal(tc_volume_pwrite(e->v, b, len, off, 0), 0);
	free(b);
}

/* Write @tag's pattern to the backing device directly, behind the cache. */
static void wr_behind(struct env *e, uint64_t off, size_t len, unsigned tag)
{
	uint8_t *b = malloc(len);
	fill(b, len, tag, off);
	assert_int_equal(tc_dev_pwrite(e->bd, b, len, TC_BACKING_DATA_OFFSET + off, 0), 0);
	free(b);
}

/* The volume (@backing false) or the backing device (true) holds @tag's pattern. */
static void expect(struct env *e, bool backing, uint64_t off, size_t len, unsigned tag)
{
	uint8_t *b = malloc(len), *want = malloc(len);
	fill(want, len, tag, off);
	if (backing)
		assert_int_equal(tc_dev_pread(e->bd, b, len, TC_BACKING_DATA_OFFSET + off), 0);
	else
		assert_int_equal(tc_volume_pread(e->v, b, len, off), 0);
	assert_memory_equal(b, want, len);
	free(b);
	free(want);
}

static struct tc_volume_stats vstats(struct env *e)
{
	struct tc_volume_stats st;
	tc_volume_stats(e->v, &st);
	return st;
}

static void test_invalidate_clean(void **state)
{
	struct env e;
	env_up(&e, TC_CTX_DETERMINISTIC, TC_WP_WT);
	wr(&e, 0, 8 * LINE, 1);                 /* lines 0..7 resident, clean */
	assert_int_equal(tc_volume_valid_bytes(e.v, 0, 8 * LINE), 8 * LINE);
	/* The backing changes behind the cache: the cache still answers with its copy. */
	wr_behind(&e, 2 * LINE, 3 * LINE + UNIT, 2);
	expect(&e, false, 2 * LINE, 3 * LINE, 1);

	/* Lines 2..4 and the first unit of line 5. */
	struct tc_range_result res;
	assert_int_equal(tc_volume_invalidate_range(e.v, 2 * LINE, 3 * LINE + UNIT, 0, &res), 0);
	assert_int_equal(res.dropped_bytes, 3 * LINE + UNIT);
	assert_int_equal(res.discarded_dirty_bytes, 0);
	assert_int_equal(tc_volume_valid_bytes(e.v, 2 * LINE, 3 * LINE + UNIT), 0);
	/* Outside the range nothing moved. */
	assert_int_equal(tc_volume_valid_bytes(e.v, 0, 2 * LINE), 2 * LINE);
	assert_int_equal(tc_volume_valid_bytes(e.v, 5 * LINE + UNIT, 3 * LINE - UNIT),
			 3 * LINE - UNIT);
	assert_int_equal(vstats(&e).cached_bytes, 8 * LINE - (3 * LINE + UNIT));
	/* Reads of the range now see the backing's new data, the rest the old. */
	expect(&e, false, 2 * LINE, 3 * LINE + UNIT, 2);
	expect(&e, false, 0, 2 * LINE, 1);
	expect(&e, false, 5 * LINE + UNIT, 3 * LINE - UNIT, 1);
	/* A range with nothing cached: nothing to do. */
	assert_int_equal(tc_volume_invalidate_range(e.v, 100 * LINE, 4 * LINE, 0, &res), 0);
	assert_int_equal(res.dropped_bytes, 0);
	env_down(&e);
}

static void test_invalidate_dirty(void **state)
{
	struct env e;
	env_up(&e, TC_CTX_DETERMINISTIC, TC_WP_WB);
	wr(&e, 0, 4 * LINE, 1);                  /* dirty lines 0..3 */
	wr_behind(&e, 0, 4 * LINE, 2);
	uint64_t dirty0 = vstats(&e).dirty_bytes;
	assert_int_equal(dirty0, 4 * LINE);

	/* Refused, nothing changed; the message says how many dirty bytes. */
	struct tc_range_result res = { 99, 99, 99 };
	assert_int_equal(tc_volume_invalidate_range(e.v, LINE, LINE + UNIT, 0, &res), -EBUSY);
	assert_non_null(strstr(e.log.last, "20480 dirty bytes"));
	assert_non_null(strstr(e.log.last, "\"vol\""));
	assert_int_equal(res.dropped_bytes, 99);
	assert_int_equal(vstats(&e).dirty_bytes, dirty0);
	assert_int_equal(tc_volume_valid_bytes(e.v, 0, 4 * LINE), 4 * LINE);
	expect(&e, false, 0, 4 * LINE, 1);

	/* Told to: the dirty bytes go, counted; the backing's data shows through. */
	assert_int_equal(tc_volume_invalidate_range(e.v, LINE, LINE + UNIT,
						    TC_INVALIDATE_DISCARD_DIRTY, &res), 0);
	assert_int_equal(res.discarded_dirty_bytes, LINE + UNIT);
	assert_int_equal(res.dropped_bytes, 0);
	assert_int_equal(vstats(&e).dirty_bytes, dirty0 - (LINE + UNIT));
	expect(&e, false, LINE, LINE + UNIT, 2);
	expect(&e, false, 0, LINE, 1);
	expect(&e, false, 2 * LINE + UNIT, 2 * LINE - UNIT, 1);
	env_down(&e);
}

static void test_flush_range(void **state)
{
	struct env e;
	env_up(&e, TC_CTX_DETERMINISTIC, TC_WP_WB);
	wr_behind(&e, 0, 16 * LINE, 9);
	wr(&e, 0, 4 * LINE, 1);                  /* dirty lines 0..3 */
	wr(&e, 10 * LINE, 2 * LINE, 3);          /* dirty lines 10..11 */
	assert_int_equal(vstats(&e).dirty_bytes, 6 * LINE);
	expect(&e, true, 0, 4 * LINE, 9);        /* not written back yet */

	/* The range touches lines 1..2: both written back whole, nothing else. */
	uint64_t flushed = 0;
	assert_int_equal(tc_volume_flush_range(e.v, LINE + UNIT, LINE, NULL, NULL, &flushed),
			 0);
	assert_int_equal(flushed, 2 * LINE);
	assert_int_equal(vstats(&e).dirty_bytes, 4 * LINE);
	expect(&e, true, LINE, 2 * LINE, 1);
	expect(&e, true, 0, LINE, 9);
	expect(&e, true, 3 * LINE, LINE, 9);
	expect(&e, true, 10 * LINE, 2 * LINE, 9);
	/* The lines stay cached, now clean: an invalidation of them is allowed. */
	assert_int_equal(tc_volume_valid_bytes(e.v, LINE, 2 * LINE), 2 * LINE);
	struct tc_range_result res;
	assert_int_equal(tc_volume_invalidate_range(e.v, LINE, 2 * LINE, 0, &res), 0);
	assert_int_equal(res.dropped_bytes, 2 * LINE);
	expect(&e, false, 0, 4 * LINE, 1);

	/* A range without dirty data is flushed at once. */
	assert_int_equal(tc_volume_flush_range(e.v, 20 * LINE, LINE, NULL, NULL, &flushed), 0);
	assert_int_equal(flushed, 0);
	/* The whole volume as one range. */
	assert_int_equal(tc_volume_flush_range(e.v, 0, tc_volume_size(e.v), NULL, NULL,
					       &flushed), 0);
	assert_int_equal(flushed, 4 * LINE);
	assert_int_equal(vstats(&e).dirty_bytes, 0);
	expect(&e, true, 0, 4 * LINE, 1);
	expect(&e, true, 10 * LINE, 2 * LINE, 3);
	env_down(&e);
}

static void test_bad_ranges(void **state)
{
	struct env e;
	env_up(&e, TC_CTX_DETERMINISTIC, TC_WP_WB);
	wr(&e, 0, 2 * LINE, 1);
	uint64_t size = tc_volume_size(e.v);
	struct {
		uint64_t off, len;
		const char *says;
	} bad[] = {
		{ 0, 0, "empty" },
		{ 512, UNIT, "not aligned" },
		{ 0, UNIT + 512, "not aligned" },
		{ size - UNIT, 2 * UNIT, "past the volume's end" },
		{ size + UNIT, UNIT, "past the volume's end" },
		{ UINT64_MAX - UNIT + 1, UNIT, "past the volume's end" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t flushed = 77;
		assert_int_equal(tc_volume_flush_range(e.v, bad[i].off, bad[i].len, NULL, NULL,
						       &flushed), -EINVAL);
		assert_non_null(strstr(e.log.last, bad[i].says));
		assert_non_null(strstr(e.log.last, "\"vol\""));
		assert_int_equal(flushed, 77);
		assert_int_equal(tc_volume_invalidate_range(e.v, bad[i].off, bad[i].len,
							    TC_INVALIDATE_DISCARD_DIRTY, NULL),
				 -EINVAL);
		assert_non_null(strstr(e.log.last, bad[i].says));
	}
	assert_int_equal(vstats(&e).dirty_bytes, 2 * LINE);
	assert_int_equal(tc_volume_valid_bytes(e.v, 0, 2 * LINE), 2 * LINE);
	env_down(&e);
}

/* ---- concurrent I/O --------------------------------------------------------------- */

#define WORKERS 3
#define BLOCKS 8               /* 4 KiB blocks per worker, interleaved over 6 lines */
#define ROUNDS 400

struct worker {
	struct env *e;
	unsigned id;
	atomic_bool *stop;
	unsigned last[BLOCKS];     /* the tag each block holds */
	int failed;
};

static uint64_t block_off(unsigned id, unsigned b)
{
	return (uint64_t)(b * WORKERS + id) * UNIT;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[UNIT], want[UNIT];
	unsigned tag = w->id * 100000;
	for (unsigned i = 0; !atomic_load(w->stop) || i < ROUNDS; i++) {
		unsigned b = i % BLOCKS;
		uint64_t off = block_off(w->id, b);
		if (i % 3 != 2) {
			fill(buf, UNIT, ++tag, off);
			if (tc_volume_pwrite(w->e->v, buf, UNIT, off, 0)) {
				w->failed = 1;
				break;
			}
			w->last[b] = tag;
		} else {
			if (tc_volume_pread(w->e->v, buf, UNIT, off)) {
				w->failed = 2;
				break;
			}
			fill(want, UNIT, w->last[b], off);
			if (w->last[b] && memcmp(buf, want, UNIT)) {
				w->failed = 3;
				break;
			}
		}
	}
	return NULL;
}

/* Write-back writes and reads in lines 0..5 while the main thread flushes the range
 * and invalidates it (discarding nothing) over and over: every read returns what its
 * thread wrote last; at the end one more flush leaves the range clean and the backing
 * holding the newest data. */
static void test_concurrent_io(void **state)
{
	struct env e;
	env_up(&e, TC_CTX_THREADED, TC_WP_WB);
	tc_ctx_set_log(e.ctx, t_log_sink, &e.log, TC_LOG_ERROR);
	uint64_t span = (uint64_t)BLOCKS * WORKERS * UNIT;
	atomic_bool stop = false;
	struct worker w[WORKERS];
	pthread_t t[WORKERS];
	for (unsigned i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ .e = &e, .id = i, .stop = &stop };
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	unsigned flushes = 0, invalidations = 0, refused = 0;
	for (unsigned r = 0; r < 60; r++) {
		uint64_t off = (r % 3) * LINE, len = span - off;
		assert_int_equal(tc_volume_flush_range(e.v, off, len, NULL, NULL, NULL), 0);
		flushes++;
		int x = tc_volume_invalidate_range(e.v, off, len, 0, NULL);
		assert_true(x == 0 || x == -EBUSY);   /* writes may dirty it again */
		if (x == 0)
			invalidations++;
		else
			refused++;
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].failed, 0);
	}
	uint64_t flushed;
	assert_int_equal(tc_volume_flush_range(e.v, 0, span, NULL, NULL, &flushed), 0);
	uint8_t buf[UNIT], want[UNIT];
	for (unsigned i = 0; i < WORKERS; i++)
		for (unsigned b = 0; b < BLOCKS; b++) {
			uint64_t off = block_off(i, b);
			fill(want, UNIT, w[i].last[b], off);
			assert_int_equal(tc_volume_pread(e.v, buf, UNIT, off), 0);
			assert_memory_equal(buf, want, UNIT);
			assert_int_equal(tc_dev_pread(e.bd, buf, UNIT, TC_BACKING_DATA_OFFSET + off),
					 0);
			assert_memory_equal(buf, want, UNIT);
		}
	assert_int_equal(vstats(&e).dirty_bytes, 0);
	assert_int_equal(flushes, 60);
	assert_true(invalidations + refused == 60);
	/* Invalidations that found the range clean did drop it. */
	assert_int_equal(tc_volume_invalidate_range(e.v, 0, span, 0, NULL), 0);
	assert_int_equal(tc_volume_valid_bytes(e.v, 0, span), 0);
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalidate_clean),
		cmocka_unit_test(test_invalidate_dirty),
		cmocka_unit_test(test_flush_range),
		cmocka_unit_test(test_bad_ranges),
		cmocka_unit_test(test_concurrent_io),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
