/* SPDX-License-Identifier: MIT */
/*
 * admission.c - should a read miss fill the cache?  Two independent helpers.
 *
 * 1. Access-frequency sketch for TC_ADMIT_NHIT (fill on the Nth access).
 *
 *      key --splitmix64(key ^ seed[i])--> column of row i, i = 0..3
 *
 *      row 0 [ 0 | 3 | 0 | 1 | 0 | ... ]   width = 2^k uint8 counters per row
 *      row 1 [ 1 | 0 | 0 | 3 | 0 | ... ]   estimate = min over the 4 rows
 *      row 2 [ 0 | 0 | 3 | 0 | 2 | ... ]   (a count-min sketch: Cormode and
 *      row 3 [ 3 | 0 | 1 | 0 | 0 | ... ]    Muthukrishnan, J. Algorithms 2005)
 *
 *    A count-min sketch never underestimates; collisions only overestimate, and with
 *    width >= 4 * nslots they are rare among the keys that matter.  Every `window`
 *    accesses all counters are halved, the "reset" of TinyLFU (Einziger, Friedman,
 *    Manes, ACM ToS 2017), so old popularity fades and a line needs its N accesses
 *    within roughly one window.  Memory: 4 bytes per column, 16 per cache line or so,
 *    instead of a per-key history.
 *
 * 2. Sequential-stream detector (as bcache's sequential_cutoff): per volume, the last
 *    TC_SEQ_STREAMS streams (end offset, bytes so far).  A request that starts where a
 *    stream ended extends it; once a stream reaches the cutoff its requests bypass the
 *    cache, because a large sequential transfer is served as fast by the disks and
 *    would only flush useful lines out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"

#define ADMIT_ROWS 4
#define ADMIT_MIN_WIDTH 1024u
#define ADMIT_COUNTER_MAX 255u

/* Odd 64-bit constants, one per row: the rows hash the same key independently. */
static const uint64_t admit_seed[ADMIT_ROWS] = {
	0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
	0x94d049bb133111ebull, 0xd6e8feb86659fd93ull,
};

/* splitmix64 (Steele, Lea, Flood, OOPSLA 2014): a bijective 64-bit mix. */
static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * tc_admit_init - a zeroed sketch for a cache of @nslots lines: width = the next power
 * of two of 4 * nslots (at least 1024) counters per row, 4 rows, halving every
 * 8 * nslots accesses.  Returns 0, or -ENOMEM (also when the width would not fit).
 * Not thread-safe against other calls on @a.
 */
int tc_admit_init(struct tc_admit *a, uint32_t nslots)
{
	uint64_t width = ADMIT_MIN_WIDTH;

	memset(a, 0, sizeof(*a));
	while (width < 4 * (uint64_t)nslots)
		width <<= 1;
	if (width > UINT32_MAX / 2 + 1)
		return -ENOMEM;
	a->counters = calloc(ADMIT_ROWS, (size_t)width);
	if (!a->counters)
		return -ENOMEM;
	if (pthread_mutex_init(&a->age_lock, NULL) != 0) {
		free(a->counters);
		a->counters = NULL;
		return -ENOMEM;
	}
	a->width = (uint32_t)width;
	a->window = 8 * (uint64_t)(nslots ? nslots : 1);
	return 0;
}

/* tc_admit_fini - free the counters; @a may be zeroed or already finished. */
void tc_admit_fini(struct tc_admit *a)
{
	if (!a->counters)
		return;
	pthread_mutex_destroy(&a->age_lock);
	free(a->counters);
	a->counters = NULL;
}

/* admit_halve - divide every counter by two.  Concurrent increments may be lost or
 * halved twice; either only shifts one estimate by one step. */
static void admit_halve(struct tc_admit *a)
{
	size_t n = (size_t)ADMIT_ROWS * a->width;

	for (size_t i = 0; i < n; i++) {
		uint8_t v = __atomic_load_n(&a->counters[i], __ATOMIC_RELAXED);

		if (v)
			__atomic_store_n(&a->counters[i], (uint8_t)(v >> 1), __ATOMIC_RELAXED);
	}
}

/*
 * tc_admit_access - count one access to @key and return the estimated number of
 * accesses in the current window, this one included: 1..255 (the minimum of the 4
 * counters, each saturating at 255).  The access that completes a window halves all
 * counters afterwards, in O(4 * width), unless another thread is already halving
 * (pthread_mutex_trylock; the others do not wait).  Thread-safe, lock-free otherwise:
 * relaxed atomic compare-and-swap per counter.
 */
unsigned tc_admit_access(struct tc_admit *a, uint64_t key)
{
	unsigned est = ADMIT_COUNTER_MAX;
	uint64_t n;

	for (unsigned i = 0; i < ADMIT_ROWS; i++) {
		uint32_t col = (uint32_t)splitmix64(key ^ admit_seed[i]) & (a->width - 1);
		uint8_t *c = &a->counters[(size_t)i * a->width + col];
		uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

		while (v < ADMIT_COUNTER_MAX &&
		       !__atomic_compare_exchange_n(c, &v, (uint8_t)(v + 1), true,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		if (v < ADMIT_COUNTER_MAX)
			v++;
		if (v < est)
			est = v;
	}
	n = __atomic_add_fetch(&a->accesses, 1, __ATOMIC_RELAXED);
	if (n % a->window == 0 && pthread_mutex_trylock(&a->age_lock) == 0) {
		admit_halve(a);
		pthread_mutex_unlock(&a->age_lock);
	}
	return est;
}

/* tc_admit_mem - bytes of counters (4 * width). */
size_t tc_admit_mem(const struct tc_admit *a)
{
	return (size_t)ADMIT_ROWS * a->width;
}

/* ---- sequential detector -------------------------------------------------------- */

/* tc_seq_init - no streams tracked.  Not thread-safe against other calls on @q. */
void tc_seq_init(struct tc_seq *q)
{
	memset(q->s, 0, sizeof(q->s));
	q->clock = 0;
	pthread_mutex_init(&q->lock, NULL);
}

void tc_seq_fini(struct tc_seq *q)
{
	pthread_mutex_destroy(&q->lock);
}

/*
 * tc_seq_check - see policy.h.  A request extends the stream whose end it starts near:
 * within TC_SEQ_REORDER request lengths after the end (a request overtook this one on
 * its way in) or before it (this one was overtaken), since clients with several
 * requests in flight, and the server's threads, reorder a stream slightly; the end
 * only moves forward.  Without one, the least recently used of the TC_SEQ_STREAMS
 * entries starts a new stream (so a single request of >= @cutoff bytes counts as
 * sequential, as in bcache).  O(TC_SEQ_STREAMS) under the detector's mutex, held for
 * those few comparisons only.
 */
bool tc_seq_check(struct tc_seq *q, uint64_t off, uint64_t len, uint64_t cutoff)
{
	unsigned i, lru = 0;
	bool seq;
	uint64_t window = TC_SEQ_REORDER * len;

	if (cutoff == 0)
		return false;
	pthread_mutex_lock(&q->lock);
	q->clock++;
	for (i = 0; i < TC_SEQ_STREAMS; i++) {
		uint64_t end = q->s[i].end;
		if (q->s[i].len && off <= end + window && off + window >= end)
			break;
		if (q->s[i].last_use < q->s[lru].last_use)
			lru = i;
	}
	if (i == TC_SEQ_STREAMS) {
		i = lru;
		q->s[i].len = 0;
		q->s[i].end = 0;
	}
	if (off + len > q->s[i].end)
		q->s[i].end = off + len;
	q->s[i].len += len;
	q->s[i].last_use = q->clock;
	seq = q->s[i].len >= cutoff;
	pthread_mutex_unlock(&q->lock);
	return seq;
}
