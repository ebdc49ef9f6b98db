/* SPDX-License-Identifier: MIT */
/*
 * test_latency.c - the volumes' latency histograms (tc_volume_latency): on emulated
 * devices in deterministic mode each request's latency is known exactly (the virtual
 * clock from submit to completion), so the class, the count, the extremes and the
 * bucket of every request are checked against it; reset; the JSON form; and threads
 * completing hits at once lose no count (threaded context, memory devices).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tiercache.h"
#include "tiercache-test.h"
#include "helpers.h"

#define MIB (1024u * 1024u)
#define LINE 16384u

struct env {
	char dir[256], cpath[300], bpath[300];
	tc_ctx *ctx;
	tc_dev *cd, *bd;
	tc_cache *c;
	tc_volume *v;
	struct tc_hist h;
};

static void quiet(void *o, enum tc_log_level l, const char *m)
{
	(void)o;
	(void)l;
	(void)m;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	if (!e || t_mkdtemp(e->dir, sizeof(e->dir), "tc-test-latency"))
		return -1;
	snprintf(e->cpath, sizeof(e->cpath), "%s/cache", e->dir);
	snprintf(e->bpath, sizeof(e->bpath), "%s/backing", e->dir);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	if (e->c)
		assert_int_equal(tc_cache_close(e->c), 0);
	if (e->cd)
		tc_dev_close(e->cd);
	if (e->bd)
		tc_dev_close(e->bd);
	tc_ctx_free(e->ctx);
	unlink(e->cpath);
	unlink(e->bpath);
	rmdir(e->dir);
	free(e);
	return 0;
}

/* A write-back volume (no sequential cutoff) of an emulated HDD behind an emulated
 * NVMe SSD, deterministic: a miss costs milliseconds, a hit tens of microseconds. */
static void env_up(struct env *e)
{
	struct tc_ctx_opts o = { .mode = TC_CTX_DETERMINISTIC, .seed = 7 };
	assert_int_equal(tc_ctx_new(&o, &e->ctx), 0);
	tc_ctx_set_log(e->ctx, quiet, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_dev_new_emu(e->ctx, "nvme-ssd", e->cpath, TC_DEV_CREATE, 8 * MIB,
					&e->cd), 0);
	assert_int_equal(tc_dev_new_emu(e->ctx, "hdd", e->bpath, TC_DEV_CREATE, 64 * MIB,
					&e->bd), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = LINE;
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.seq_cutoff = 0;
	s.write_policy = TC_WP_WB;
	co.unprotected_writeback = true;   /* single memory devices: write-back by override */
	assert_int_equal(tc_cache_format(e->ctx, e->cd, &co), 0);
	assert_int_equal(tc_backing_format(e->ctx, e->bd, "vol", &s), 0);
	assert_int_equal(tc_cache_open(e->ctx, e->cd, &e->c), 0);
	assert_int_equal(tc_cache_attach(e->c, e->bd, NULL, 0, &e->v), 0);
	tc_volume_stats_reset(e->v);
}

/* One synchronous request; returns its latency on the virtual clock, ns. */
static uint64_t timed(struct env *e, enum tc_op op, uint64_t off, uint64_t len)
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	memset(b, 0x5a, len);
	uint64_t t0 = tc_ctx_now(e->ctx);
	assert_int_equal(tc_volume_io(e->v, op, 0, b, len, off), 0);
	uint64_t t1 = tc_ctx_now(e->ctx);
	free(b);
	return t1 - t0;
}

static struct tc_hist *lat(struct env *e, unsigned cls)
{
	assert_int_equal(tc_volume_latency(e->v, cls, &e->h), 0);
	return &e->h;
}

/* The histogram holds exactly the values @v[0..n): count, extremes, sum, buckets. */
static void expect_exact(struct env *e, unsigned cls, const uint64_t *v, unsigned n)
{
	struct tc_hist want;
	tc_hist_init(&want);
	for (unsigned i = 0; i < n; i++)
		tc_hist_record(&want, v[i]);
	struct tc_hist *h = lat(e, cls);
	assert_int_equal(h->count, n);
	assert_true(h->sum == want.sum);
	if (n) {
		assert_int_equal(h->min, want.min);
		assert_int_equal(h->max, want.max);
	} else {
		assert_int_equal(h->max, 0);
	}
	assert_memory_equal(h->b, want.b, sizeof(want.b));
}

static void test_classes_exact(void **state)
{
	struct env *e = *state;
	env_up(e);
	uint64_t rmiss[2], rhit[3], wmiss[2], whit[2];

	rmiss[0] = timed(e, TC_OP_READ, 0, 4096);            /* miss, fills the line */
	rhit[0] = timed(e, TC_OP_READ, 0, 4096);             /* hit */
	rhit[1] = timed(e, TC_OP_READ, 4096, 8192);          /* hit: the line was filled */
	rmiss[1] = timed(e, TC_OP_READ, LINE - 4096, 8192);  /* one line hit, one missed */
	wmiss[0] = timed(e, TC_OP_WRITE, 40 * LINE, 4096);   /* write-back miss */
	whit[0] = timed(e, TC_OP_WRITE, 0, 4096);            /* into a resident line */
	whit[1] = timed(e, TC_OP_WRITE_ZEROES, 40 * LINE, 4096);
	wmiss[1] = timed(e, TC_OP_WRITE, 60 * LINE, 2 * LINE);
	rhit[2] = timed(e, TC_OP_READ, 40 * LINE, 4096);      /* the dirty line */
	/* A flush and a discard are in no histogram. */
	assert_int_equal(tc_volume_io(e->v, TC_OP_FLUSH, 0, NULL, 0, 0), 0);

	expect_exact(e, TC_LAT_READ_MISS, rmiss, 2);
	expect_exact(e, TC_LAT_READ_HIT, rhit, 3);
	expect_exact(e, TC_LAT_WRITE_MISS, wmiss, 2);
	expect_exact(e, TC_LAT_WRITE_HIT, whit, 2);
	/* The HDD behind the first miss (a seek) is slower than the SSD of a hit by an
	 * order of magnitude at least. */
	assert_true(rmiss[0] > 10 * lat(e, TC_LAT_READ_HIT)->max);
	/* Percentiles: the worst of two misses is p99 and the maximum. */
	struct tc_hist *h = lat(e, TC_LAT_READ_MISS);
	uint64_t worst = rmiss[0] > rmiss[1] ? rmiss[0] : rmiss[1];
	assert_int_equal(tc_hist_percentile(h, 99), worst);
	assert_int_equal(h->max, worst);

	/* Reset: every class empty; recording goes on after it. */
	tc_volume_stats_reset(e->v);
	for (unsigned c = 0; c < TC_LAT__COUNT; c++)
		expect_exact(e, c, NULL, 0);
	rhit[0] = timed(e, TC_OP_READ, 0, 4096);
	expect_exact(e, TC_LAT_READ_HIT, rhit, 1);
	assert_int_equal(lat(e, TC_LAT_READ_HIT)->min, rhit[0]);

	/* Recording off (the benchmark's switch): nothing counted, then on again. */
	tc_volume_set_latency_stats(e->v, false);
	timed(e, TC_OP_READ, 0, 4096);
	expect_exact(e, TC_LAT_READ_HIT, rhit, 1);
	tc_volume_set_latency_stats(e->v, true);
	rhit[1] = timed(e, TC_OP_READ, 0, 4096);
	expect_exact(e, TC_LAT_READ_HIT, rhit, 2);

	/* A class that does not exist. */
	e->h.count = 12345;
	assert_int_equal(tc_volume_latency(e->v, TC_LAT__COUNT, &e->h), -EINVAL);
	assert_int_equal(e->h.count, 12345);
	assert_null(tc_lat_class_name(TC_LAT__COUNT));
	assert_string_equal(tc_lat_class_name(TC_LAT_WRITE_MISS), "write_miss");
}

static uint64_t ju64(json_object *o, const char *k)
{
	json_object *v;
	assert_true(json_object_object_get_ex(o, k, &v));
	return json_object_get_uint64(v);
}

static void test_json(void **state)
{
	struct env *e = *state;
	env_up(e);
	uint64_t miss = timed(e, TC_OP_READ, 0, 4096);
	uint64_t hit = timed(e, TC_OP_READ, 0, 4096);
	char *js = tc_volume_stats_json(e->v);
	json_object *o = json_tokener_parse(js), *l, *c, *b;
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "latency", &l));
	assert_true(json_object_object_get_ex(l, "read_miss", &c));
	assert_int_equal(ju64(c, "count"), 1);
	assert_int_equal(ju64(c, "max_ns"), miss);
	assert_int_equal(ju64(c, "min_ns"), miss);
	assert_int_equal(ju64(c, "p9999_ns"), miss);
	assert_true(json_object_object_get_ex(c, "buckets", &b));
	assert_int_equal(json_object_array_length(b), 1);
	json_object *b0 = json_object_array_get_idx(b, 0);
	assert_int_equal(ju64(b0, "count"), 1);
	assert_true(ju64(b0, "ge_ns") <= miss && miss < ju64(b0, "lt_ns"));
	assert_int_equal(ju64(b0, "lt_ns"), 2 * ju64(b0, "ge_ns"));
	assert_true(json_object_object_get_ex(l, "read_hit", &c));
	assert_int_equal(ju64(c, "p50_ns"), hit);
	assert_true(json_object_object_get_ex(l, "write_hit", &c));
	assert_int_equal(ju64(c, "count"), 0);
	assert_int_equal(ju64(c, "max_ns"), 0);
	assert_true(json_object_object_get_ex(c, "buckets", &b));
	assert_int_equal(json_object_array_length(b), 0);
	json_object_put(o);
	free(js);
}

/* Threads completing hits at the same time: no count is lost, the maximum is the
 * largest any of them saw (threaded context, memory devices). */
#define THREADS 4
#define PER_THREAD 2000

struct worker {
	tc_volume *v;
	tc_ctx *ctx;
	unsigned id;
	uint64_t max_seen;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[4096];
	for (unsigned i = 0; i < PER_THREAD; i++) {
		uint64_t off = (uint64_t)((w->id * 7 + i) % 32) * LINE;
		if (tc_volume_pread(w->v, buf, sizeof(buf), off))
			return (void *)1;
	}
	return NULL;
}

static void test_threads_lose_nothing(void **state)
{
	struct env *e = *state;
	struct tc_ctx_opts o = { .mode = TC_CTX_THREADED };
	assert_int_equal(tc_ctx_new(&o, &e->ctx), 0);
	tc_ctx_set_log(e->ctx, quiet, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_dev_new_memory(e->ctx, 8 * MIB, &e->cd), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, 32 * MIB, &e->bd), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = LINE;
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.seq_cutoff = 0;
	co.unprotected_writeback = true;   /* single memory devices: write-back by override */
	assert_int_equal(tc_cache_format(e->ctx, e->cd, &co), 0);
	assert_int_equal(tc_backing_format(e->ctx, e->bd, "vol", &s), 0);
	assert_int_equal(tc_cache_open(e->ctx, e->cd, &e->c), 0);
	assert_int_equal(tc_cache_attach(e->c, e->bd, NULL, 0, &e->v), 0);
	uint8_t buf[4096];
	for (unsigned l = 0; l < 32; l++)    /* make every line resident */
		assert_int_equal(tc_volume_pread(e->v, buf, sizeof(buf), (uint64_t)l * LINE), 0);
	tc_volume_stats_reset(e->v);

	pthread_t t[THREADS];
	struct worker w[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .v = e->v, .ctx = e->ctx, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		assert_null(r);
	}
	struct tc_volume_stats st;
	tc_volume_stats(e->v, &st);
	struct tc_hist *h = lat(e, TC_LAT_READ_HIT);
	assert_int_equal(st.read_hits, THREADS * PER_THREAD);
	assert_int_equal(h->count, THREADS * PER_THREAD);
	assert_int_equal(lat(e, TC_LAT_READ_MISS)->count, 0);
	h = lat(e, TC_LAT_READ_HIT);
	assert_true(h->min <= h->max);
	assert_true(h->max > 0);
	assert_int_equal(tc_hist_percentile(h, 100), h->max);
	/* The top bucket in use holds the maximum. */
	unsigned top = 0;
	for (unsigned i = 0; i < TC_HIST_BUCKETS; i++)
		if (h->b[i])
			top = i;
	assert_int_equal(top, tc_hist_bucket(h->max));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_classes_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_lose_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
