/* SPDX-License-Identifier: MIT */
/*
 * hist.h - a log-linear histogram of non-negative integer values (latencies in ns),
 * after HdrHistogram (Gil Tene): values below 2^TC_HIST_SUB_BITS are counted exactly;
 * above, every power-of-two range [2^k, 2^(k+1)) is split into 2^(TC_HIST_SUB_BITS-1)
 * equal buckets, so a bucket's width is at most 1/128 of its values (relative error
 * below 0.8 %) over the whole 64-bit range, in a fixed 58 KiB array.
 *
 * Percentiles report the highest value of the bucket holding that rank (clamped to the
 * exact maximum), as HdrHistogram's getValueAtPercentile() does; count, sum, min and
 * max are exact.  A histogram is plain memory: no allocation, not thread-safe.
 */
#ifndef TC_HIST_H
#define TC_HIST_H

#include <stdint.h>

#define TC_HIST_SUB_BITS 8
#define TC_HIST_HALF (1u << (TC_HIST_SUB_BITS - 1))            /* 128 */
#define TC_HIST_BUCKETS ((64 - TC_HIST_SUB_BITS + 2) * TC_HIST_HALF) /* 7424 */

struct tc_hist {
	uint64_t count;
	uint64_t min, max;       /* exact; min is UINT64_MAX while empty */
	long double sum;         /* of the values: exact while below 2^64 */
	uint64_t b[TC_HIST_BUCKETS];
};

/* tc_hist_init - empty @h (also resets one in use). */
void tc_hist_init(struct tc_hist *h);

/* tc_hist_record - count @v once (tc_hist_record_n: @n times). */
void tc_hist_record(struct tc_hist *h, uint64_t v);
void tc_hist_record_n(struct tc_hist *h, uint64_t v, uint64_t n);

/* tc_hist_merge - add every count of @src into @dst. */
void tc_hist_merge(struct tc_hist *dst, const struct tc_hist *src);

/*
 * tc_hist_percentile - the value at or below which @p percent of the values fall,
 * @p in [0, 100] (out-of-range values are clamped): the highest value of the bucket
 * that holds the ceil(p/100 * count)-th smallest value (at least the first), clamped to
 * [min, max].  0 for an empty histogram.
 */
uint64_t tc_hist_percentile(const struct tc_hist *h, double p);

/* tc_hist_mean - the exact mean, 0 when empty. */
double tc_hist_mean(const struct tc_hist *h);

/* tc_hist_count_below - how many values are < @v, counting whole buckets: exact when
 * @v is a bucket boundary (every power of two is one), else up to one bucket off. */
uint64_t tc_hist_count_below(const struct tc_hist *h, uint64_t v);

/* Bucket geometry, for tests and for printing: the bucket of @v, and the lowest and
 * highest value a bucket holds. */
unsigned tc_hist_bucket(uint64_t v);
uint64_t tc_hist_bucket_low(unsigned idx);
uint64_t tc_hist_bucket_high(unsigned idx);

#endif /* TC_HIST_H */
