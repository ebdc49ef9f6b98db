/* SPDX-License-Identifier: MIT */
/*
 * test_hist.c - the log-linear latency histogram of the library (src/hist.c, tc_hist_* in tiercache.h): bucket geometry
 * (contiguous, every value inside its bucket, width at most 1/128 of the value),
 * percentiles against exact ranks, mean/min/max, merging, counting below a value.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tiercache.h"

static struct tc_hist *hist_new(void)
{
	struct tc_hist *h = malloc(sizeof(*h));

	assert_non_null(h);
	tc_hist_init(h);
	return h;
}

static void test_geometry(void **state)
{
	/* Exact below 2^8. */
	for (uint64_t v = 0; v < 256; v++) {
		assert_int_equal(tc_hist_bucket(v), v);
		assert_int_equal(tc_hist_bucket_low((unsigned)v), v);
		assert_int_equal(tc_hist_bucket_high((unsigned)v), v);
	}
	/* Contiguous buckets covering all of uint64_t. */
	for (unsigned i = 1; i < TC_HIST_BUCKETS; i++)
		assert_int_equal(tc_hist_bucket_low(i), tc_hist_bucket_high(i - 1) + 1);
	assert_int_equal(tc_hist_bucket_low(0), 0);
	assert_int_equal(tc_hist_bucket_high(TC_HIST_BUCKETS - 1), UINT64_MAX);
	assert_int_equal(tc_hist_bucket(UINT64_MAX), TC_HIST_BUCKETS - 1);
	/* Every power of two starts a bucket; width at most value / 128. */
	for (unsigned k = 8; k < 64; k++) {
		uint64_t p = 1ull << k;
		unsigned b = tc_hist_bucket(p);
		assert_int_equal(tc_hist_bucket_low(b), p);
		assert_int_equal(tc_hist_bucket(p - 1), b - 1);
	}
	uint64_t x = 12345;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t v = x >> (x % 60);
		unsigned b = tc_hist_bucket(v);
		uint64_t lo = tc_hist_bucket_low(b), hi = tc_hist_bucket_high(b);
		assert_true(lo <= v && v <= hi);
		if (v >= 256)
			assert_true((hi - lo + 1) * 128 <= lo);
	}
}

static void test_small_exact(void **state)
{
	struct tc_hist *h = hist_new();

	assert_int_equal(tc_hist_percentile(h, 50), 0);
	assert_true(tc_hist_mean(h) == 0);
	for (uint64_t v = 1; v <= 100; v++)
		tc_hist_record(h, v);
	assert_int_equal(h->count, 100);
	assert_int_equal(h->min, 1);
	assert_int_equal(h->max, 100);
	assert_true(fabs(tc_hist_mean(h) - 50.5) < 1e-9);
	assert_int_equal(tc_hist_percentile(h, 0), 1);
	assert_int_equal(tc_hist_percentile(h, 1), 1);
	assert_int_equal(tc_hist_percentile(h, 50), 50);
	assert_int_equal(tc_hist_percentile(h, 50.5), 51);
	assert_int_equal(tc_hist_percentile(h, 99), 99);
	assert_int_equal(tc_hist_percentile(h, 99.9), 100);
	assert_int_equal(tc_hist_percentile(h, 100), 100);
	assert_int_equal(tc_hist_percentile(h, 150), 100);
	assert_int_equal(tc_hist_percentile(h, -3), 1);
	assert_int_equal(tc_hist_count_below(h, 1), 0);
	assert_int_equal(tc_hist_count_below(h, 11), 10);
	assert_int_equal(tc_hist_count_below(h, 1000), 100);
	free(h);
}

/* Latencies in ns from 10 us to ~10 s: each percentile within 1/128 of the exact rank
 * value, and never below it. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void test_percentiles(void **state)
{
	enum { N = 100000 };
	struct tc_hist *h = hist_new();
	uint64_t *v = malloc(N * sizeof(*v)), x = 99;
	long double sum = 0;

	assert_non_null(v);
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		/* log-uniform over 10^4 .. 10^10 ns */
		double e = 4 + 6 * (double)(x >> 11) / 9007199254740992.0;
		v[i] = (uint64_t)pow(10, e);
		tc_hist_record(h, v[i]);
		sum += v[i];
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	static const double ps[] = { 1, 10, 50, 90, 99, 99.9, 99.99 };
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t rank = (uint64_t)ceil(ps[i] / 100 * N);
		uint64_t exact = v[rank - 1];
		uint64_t got = tc_hist_percentile(h, ps[i]);
		assert_true(got >= exact);
		assert_true((double)(got - exact) <= (double)exact / 128.0);
	}
	assert_int_equal(tc_hist_percentile(h, 100), v[N - 1]);
	assert_int_equal(h->min, v[0]);
	assert_true(fabsl((long double)tc_hist_mean(h) - sum / N) < 1e-6L * (sum / N));
	/* Below a power of two is exact. */
	uint64_t below = 0;
	while (below < N && v[below] < (1ull << 20))
		below++;
	assert_int_equal(tc_hist_count_below(h, 1ull << 20), below);
	free(v);
	free(h);
}

static void test_merge_and_n(void **state)
{
	struct tc_hist *a = hist_new(), *b = hist_new(), *c = hist_new();

	tc_hist_record_n(a, 1000, 3);
	tc_hist_record_n(a, 5, 0);                 /* nothing */
	tc_hist_record(b, 7);
	tc_hist_record(b, 1ull << 40);
	for (int i = 0; i < 3; i++)
		tc_hist_record(c, 1000);
	tc_hist_record(c, 7);
	tc_hist_record(c, 1ull << 40);
	tc_hist_merge(a, b);
	assert_int_equal(a->count, 5);
	assert_int_equal(a->min, 7);
	assert_int_equal(a->max, 1ull << 40);
	for (unsigned i = 0; i < TC_HIST_BUCKETS; i++)
		assert_int_equal(a->b[i], c->b[i]);
	assert_true(tc_hist_mean(a) == tc_hist_mean(c));
	assert_int_equal(tc_hist_percentile(a, 20), 7);
	/* 1000 is in the bucket [1000, 1003]: its highest value is reported. */
	assert_int_equal(tc_hist_percentile(a, 60), tc_hist_bucket_high(tc_hist_bucket(1000)));
	assert_int_equal(tc_hist_percentile(a, 60), 1003);
	assert_int_equal(tc_hist_percentile(a, 100), 1ull << 40);
	/* Merging an empty one changes nothing; re-init empties. */
	tc_hist_init(b);
	tc_hist_merge(a, b);
	assert_int_equal(a->count, 5);
	assert_int_equal(a->min, 7);
	tc_hist_init(a);
	assert_int_equal(a->count, 0);
	assert_int_equal(a->min, UINT64_MAX);
	assert_int_equal(tc_hist_percentile(a, 99), 0);
	tc_hist_record(a, UINT64_MAX);
	assert_int_equal(tc_hist_percentile(a, 50), UINT64_MAX);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_geometry),
		cmocka_unit_test(test_small_exact),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_merge_and_n),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
