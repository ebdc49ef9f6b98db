/* SPDX-License-Identifier: MIT */
/*
 * hist.c - the log-linear histogram of the library (struct tc_hist in
 * include/tiercache.h describes the layout and its error bound); the volumes' latency
 * histograms (stats.c) and the replay tool's report use it.
 *
 * Bucket index of v, with S = TC_HIST_SUB_BITS and H = 2^(S-1):
 *   v < 2^S:  v itself (exact buckets of width 1);
 *   else:     g = msb(v) - S + 1 (>= 1), m = v >> g (in [H, 2H)), index g*H + m,
 *             a bucket of width 2^g holding [m << g, (m + 1) << g).
 * The indexes are contiguous: g = 1 starts at 2^S, right after the exact buckets.
 */
#include <string.h>

#include "tiercache.h"

void tc_hist_init(struct tc_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned tc_hist_bucket(uint64_t v)
{
	if (v < (1u << TC_HIST_SUB_BITS))
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned g = msb - TC_HIST_SUB_BITS + 1;
	return g * TC_HIST_HALF + (unsigned)(v >> g);
}

uint64_t tc_hist_bucket_low(unsigned idx)
{
	if (idx < (1u << TC_HIST_SUB_BITS))
		return idx;
	unsigned g = idx / TC_HIST_HALF - 1;
	uint64_t m = idx - g * TC_HIST_HALF;
	return m << g;
}

uint64_t tc_hist_bucket_high(unsigned idx)
{
	if (idx < (1u << TC_HIST_SUB_BITS))
		return idx;
	unsigned g = idx / TC_HIST_HALF - 1;
	return tc_hist_bucket_low(idx) + ((1ull << g) - 1);
}

void tc_hist_record_n(struct tc_hist *h, uint64_t v, uint64_t n)
{
	if (!n)
		return;
	h->b[tc_hist_bucket(v)] += n;
	h->count += n;
	h->sum += (long double)v * (long double)n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void tc_hist_record(struct tc_hist *h, uint64_t v)
{
	tc_hist_record_n(h, v, 1);
}

void tc_hist_merge(struct tc_hist *dst, const struct tc_hist *src)
{
	if (!src->count)
		return;
	for (unsigned i = 0; i < TC_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t tc_hist_percentile(const struct tc_hist *h, double p)
{
	if (!h->count)
		return 0;
	if (!(p > 0))                      /* also NaN */
		return h->min;
	if (p >= 100)
		return h->max;
	long double exact = (long double)p / 100.0L * (long double)h->count;
	uint64_t rank = (uint64_t)exact;
	if ((long double)rank < exact)
		rank++;                    /* ceil */
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < TC_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t v = tc_hist_bucket_high(i);
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double tc_hist_mean(const struct tc_hist *h)
{
	return h->count ? (double)(h->sum / (long double)h->count) : 0;
}

uint64_t tc_hist_count_below(const struct tc_hist *h, uint64_t v)
{
	unsigned end = tc_hist_bucket(v);
	uint64_t n = 0;

	for (unsigned i = 0; i < end; i++)
		n += h->b[i];
	return n;
}
