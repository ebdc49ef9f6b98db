/* SPDX-License-Identifier: MIT */
/*
 * hist.h - a log-linear histogram of non-negative integer values (latencies in ns),
 * after HdrHistogram (Gil Tene): values below 2^HIST_SUB_BITS are counted exactly;
 * above, every power-of-two range [2^k, 2^(k+1)) is split into 2^(HIST_SUB_BITS-1)
 * equal buckets, so a bucket's width is at most 1/128 of its values (relative error
 * below 0.8 %) over the whole 64-bit range, in a fixed 58 KiB array.
 *
 * Percentiles report the highest value of the bucket holding that rank (clamped to the
 * exact maximum), as HdrHistogram's getValueAtPercentile() does; count, sum, min and
 * max are exact.  A histogram is plain memory: no allocation, not thread-safe.
 */
#ifndef HIST_H
#define HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 8
#define HIST_HALF (1u << (HIST_SUB_BITS - 1))            /* 128 */
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 2) * HIST_HALF) /* 7424 */

struct hist {
	uint64_t count;
	uint64_t min, max;       /* exact; min is UINT64_MAX while empty */
	long double sum;         /* of the values: exact while below 2^64 */
	uint64_t b[HIST_BUCKETS];
};

/* hist_init - empty @h (also resets one in use). */
void hist_init(struct hist *h);

/* hist_record - count @v once (hist_record_n: @n times). */
void hist_record(struct hist *h, uint64_t v);
void hist_record_n(struct hist *h, uint64_t v, uint64_t n);

/* hist_merge - add every count of @src into @dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * hist_percentile - the value at or below which @p percent of the values fall,
 * @p in [0, 100] (out-of-range values are clamped): the highest value of the bucket
 * that holds the ceil(p/100 * count)-th smallest value (at least the first), clamped to
 * [min, max].  0 for an empty histogram.
 */
uint64_t hist_percentile(const struct hist *h, double p);

/* hist_mean - the exact mean, 0 when empty. */
double hist_mean(const struct hist *h);

/* hist_count_below - how many values are < @v, counting whole buckets: exact when
 * @v is a bucket boundary (every power of two is one), else up to one bucket off. */
uint64_t hist_count_below(const struct hist *h, uint64_t v);

/* Bucket geometry, for tests and for printing: the bucket of @v, and the lowest and
 * highest value a bucket holds. */
unsigned hist_bucket(uint64_t v);
uint64_t hist_bucket_low(unsigned idx);
uint64_t hist_bucket_high(unsigned idx);

#endif /* HIST_H */
