/* SPDX-License-Identifier: MIT */
/*
 * hist.c - log-linear histogram (see hist.h for the layout and its error bound).
 *
 * Bucket index of v, with S = HIST_SUB_BITS and H = 2^(S-1):
 *   v < 2^S:  v itself (exact buckets of width 1);
 *   else:     g = msb(v) - S + 1 (>= 1), m = v >> g (in [H, 2H)), index g*H + m,
 *             a bucket of width 2^g holding [m << g, (m + 1) << g).
 * The indexes are contiguous: g = 1 starts at 2^S, right after the exact buckets.
 */
#include <string.h>

#include "hist.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned hist_bucket(uint64_t v)
{
	if (v < (1u << HIST_SUB_BITS))
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned g = msb - HIST_SUB_BITS + 1;
	return g * HIST_HALF + (unsigned)(v >> g);
}

uint64_t hist_bucket_low(unsigned idx)
{
	if (idx < (1u << HIST_SUB_BITS))
		return idx;
	unsigned g = idx / HIST_HALF - 1;
	uint64_t m = idx - g * HIST_HALF;
	return m << g;
}

uint64_t hist_bucket_high(unsigned idx)
{
	if (idx < (1u << HIST_SUB_BITS))
		return idx;
	unsigned g = idx / HIST_HALF - 1;
	return hist_bucket_low(idx) + ((1ull << g) - 1);
}

void hist_record_n(struct hist *h, uint64_t v, uint64_t n)
{
	if (!n)
		return;
	h->b[hist_bucket(v)] += n;
	h->count += n;
	h->sum += (long double)v * (long double)n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_record(struct hist *h, uint64_t v)
{
	hist_record_n(h, v, 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (!src->count)
		return;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
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
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t v = hist_bucket_high(i);
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)(h->sum / (long double)h->count) : 0;
}

uint64_t hist_count_below(const struct hist *h, uint64_t v)
{
	unsigned end = hist_bucket(v);
	uint64_t n = 0;

	for (unsigned i = 0; i < end; i++)
		n += h->b[i];
	return n;
}
