/* SPDX-License-Identifier: MIT */
/*
 * policy_wtinylfu.c - W-TinyLFU: a small window LRU in front of a segmented-LRU main
 * cache, and an admission filter between them driven by a frequency sketch.
 *
 * Source: Gil Einziger, Roy Friedman, Ben Manes, "TinyLFU: a highly efficient cache
 * admission policy", ACM Transactions on Storage 13(4), 2017, section 4 (W-TinyLFU);
 * parameters and order of operations as libCacheSim's WTinyLFU.c (window 1 % of the
 * cache, main cache SLRU with segments 1:4, i.e. probation 20 % and protected 80 % of
 * the main cache; a minimal-increment counting Bloom filter sized for the main
 * cache's lines at an error rate of 0.001, halved every 32 x main-cache accesses).
 *
 *   miss           -> window's MRU; the key is counted
 *   hit, window    -> window's MRU
 *   hit, main      -> counted; probation -> protected's MRU (protected's LRU is
 *                     demoted to probation's MRU when protected is over its share),
 *                     protected -> protected's MRU
 *   victim         -> the window's LRU is the candidate.  While the main cache has
 *                     room it moves there (lowest segment with room).  Otherwise the
 *                     main cache's victim (probation's LRU, or protected's when
 *                     probation is empty) is compared with the candidate: the
 *                     candidate replaces it only if its estimated count is higher,
 *                     else the candidate itself is evicted.  Either way the
 *                     candidate is counted once more (libCacheSim does).
 *
 * Why: the window gives a new line a short LRU life (bursts hit there); the sketch
 * remembers frequencies far beyond the cache (one-hit wonders cannot push out lines
 * used often), and its halving ages old popularity away.
 *
 * The sketch: W = ceil(14.38 * main) one-byte counters (bits per entry of a Bloom
 * filter at error 0.001: -ln 0.001 / ln^2 2), 10 positions per key (ceil(ln 2 * 14.38))
 * by double hashing; an access increments only the positions holding the minimum
 * (minimal increment, Fan et al.'s conservative update: a count-min sketch in one
 * array), counters saturate at 255; every 32 * main counted main-cache hits all
 * counters are halved (the aging of TinyLFU's section 3.3; O(W) every 32 * main
 * accesses, under 0.5 counter per access amortized).  As libCacheSim, window hits are
 * not counted and the aging period counts main-cache hits only; the paper counts
 * every access.
 *
 * Per-slot state: uint32 prev[] and next[] (8 bytes; three queues share them) and
 * bits 6..5 of lines[slot].flags (0 = window, 1 = probation, 2 = protected).  The
 * sketch is reported as ghost state: about 14.4 bytes per main-cache line.
 *
 * Thread-safety: one mutex protects queues and sketch; every op takes it, touch()
 * included (a hit moves the line, as LRU's does).
 *
 * Deviation (as in every policy here): a candidate or main victim that can_evict()
 * refuses goes back to its queue's MRU end and the next one is tried; -ENOSPC after
 * TC_REPL_MAX_REFUSALS refusals.  libCacheSim may also evict from probation during a
 * promotion when probation is over its share; here probation may exceed it until the
 * next victim() (a promotion only moves lines).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"
#include "policy_list.h"

#define WT_SEG_SHIFT 5
#define WT_SEG_MASK 0x60u
_Static_assert((WT_SEG_MASK & ~TC_LINE_POLICY_MASK) == 0, "W-TinyLFU bits in policy mask");

enum { WIN = 0, PROB = 1, PROT = 2 };

#define WT_HASHES 10
#define WT_CNT_MAX 255u
#define WT_SAMPLE 32u          /* aging period, in main-cache lines */

struct tc_repl {
	pthread_mutex_t lock;
	struct tc_line *lines;
	uint32_t *prev, *next;
	struct tc_rq q[3];
	uint32_t c, win_cap, main_cap, prob_cap, prot_cap;
	uint8_t *cnt;              /* sketch counters */
	uint32_t width;
	uint64_t counted, period;  /* main-cache hits since the last halving; period */
	uint64_t rejected;
	uint64_t admitted, refused_admission;  /* candidate won / lost */
	/* wtinylfu-hc only: the hill climber (see "Adaptive window" below) */
	bool climb;
	uint64_t hits_s, misses_s;  /* hits and misses in the current sample */
	double prev_hr, step;       /* last sample's hit ratio; next step, in lines */
	uint64_t climbs;            /* samples completed */
};

/*
 * Adaptive window (ops "wtinylfu-hc"): Caffeine's hill climber (Ben Manes, Caffeine's
 * BoundedLocalCache.climb(); Einziger, Eytan, Friedman, Manes, "Adaptive Software Cache
 * Management", Middleware 2018, section 4.2).  After every sample of 10 x c accesses
 * (hits and misses; Caffeine's sample is its sketch's reset period of 10 x maximum),
 * the sample's hit ratio is compared with the previous one: if it did not drop, the
 * window moves again by the step in the same direction, else in the other; the step
 * decays by 0.98 each sample, and a change of the hit ratio by 5 points or more
 * restarts it at 6.25 % of the cache (the workload changed).  The first step is
 * -6.25 % (Caffeine starts by shrinking).  A larger window favours recency (LRU-like
 * workloads), a smaller one frequency (the filter decides more).  The window stays
 * within 0 .. c - 1 lines; the main cache's shares stay 20 % probation, 80 %
 * protected.  Lines move lazily: a smaller main cache gives up its LRU lines in
 * victim() before the window competes, a larger one takes the window's candidates
 * without a contest until it is full (Caffeine moves up to 1000 entries at once).
 */
#define WT_HC_SAMPLE 10u
#define WT_HC_STEP 0.0625
#define WT_HC_DECAY 0.98
#define WT_HC_RESTART 0.05

static void wt_set_window(struct tc_repl *r, uint32_t win)
{
	r->win_cap = win;
	r->main_cap = r->c - win;
	r->prob_cap = (uint32_t)((uint64_t)r->main_cap / 5);
	r->prot_cap = (uint32_t)((uint64_t)r->main_cap * 4 / 5);
}

/* wt_sample - count one access (hit or miss) for the climber and climb after each
 * sample.  Lock held. */
static void wt_sample(struct tc_repl *r, bool hit)
{
	double hr, change, amount;
	int64_t win;

	if (!r->climb)
		return;
	if (hit)
		r->hits_s++;
	else
		r->misses_s++;
	if (r->hits_s + r->misses_s < (uint64_t)WT_HC_SAMPLE * r->c)
		return;
	hr = (double)r->hits_s / (double)(r->hits_s + r->misses_s);
	change = hr - r->prev_hr;
	amount = change >= 0 ? r->step : -r->step;
	r->step = (change >= WT_HC_RESTART || change <= -WT_HC_RESTART)
			  ? WT_HC_STEP * r->c * (amount >= 0 ? 1 : -1)
			  : WT_HC_DECAY * amount;
	r->prev_hr = hr;
	r->hits_s = r->misses_s = 0;
	r->climbs++;
	win = (int64_t)r->win_cap + (int64_t)amount;
	if (win < 0)
		win = 0;
	if (win > (int64_t)r->c - 1)
		win = r->c ? (int64_t)r->c - 1 : 0;
	wt_set_window(r, (uint32_t)win);
}

/* ---- sketch ----------------------------------------------------------------------- */

static uint64_t wt_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static void wt_positions(const struct tc_repl *r, uint64_t key, uint32_t pos[WT_HASHES])
{
	uint64_t h = wt_mix(key + 0x9e3779b97f4a7c15ull);
	uint32_t h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32) | 1;

	for (unsigned i = 0; i < WT_HASHES; i++)
		pos[i] = (uint32_t)(((uint64_t)h1 + (uint64_t)i * h2) % r->width);
}

static unsigned wt_estimate(const struct tc_repl *r, uint64_t key)
{
	uint32_t pos[WT_HASHES];
	unsigned m = WT_CNT_MAX;

	wt_positions(r, key, pos);
	for (unsigned i = 0; i < WT_HASHES; i++)
		if (r->cnt[pos[i]] < m)
			m = r->cnt[pos[i]];
	return m;
}

static void wt_count(struct tc_repl *r, uint64_t key)
{
	uint32_t pos[WT_HASHES];
	unsigned m = WT_CNT_MAX;

	wt_positions(r, key, pos);
	for (unsigned i = 0; i < WT_HASHES; i++)
		if (r->cnt[pos[i]] < m)
			m = r->cnt[pos[i]];
	if (m == WT_CNT_MAX)
		return;
	for (unsigned i = 0; i < WT_HASHES; i++)
		if (r->cnt[pos[i]] == m)
			r->cnt[pos[i]]++;
}

static void wt_age(struct tc_repl *r)
{
	for (uint32_t i = 0; i < r->width; i++)
		r->cnt[i] >>= 1;
}

/* ---- queues ----------------------------------------------------------------------- */

static int wt_seg(const struct tc_repl *r, uint32_t slot)
{
	return (tc_rq_bits(&r->lines[slot]) & WT_SEG_MASK) >> WT_SEG_SHIFT;
}

static void wt_push(struct tc_repl *r, int qi, uint32_t slot)
{
	tc_rq_set_bits(&r->lines[slot], (uint8_t)(qi << WT_SEG_SHIFT));
	tc_rq_push_head(r->prev, r->next, &r->q[qi], slot);
}

static void wt_unlink(struct tc_repl *r, uint32_t slot)
{
	tc_rq_unlink(r->prev, r->next, &r->q[wt_seg(r, slot)], slot);
}

static uint64_t wt_key(const struct tc_repl *r, uint32_t slot)
{
	return tc_line_key(r->lines[slot].vol, r->lines[slot].line_no);
}

static uint32_t wt_main_size(const struct tc_repl *r)
{
	return r->q[PROB].size + r->q[PROT].size;
}

/* wt_main_insert - @slot enters the main cache in the lowest segment with room
 * (libCacheSim's SLRU_insert; probation when both are full). */
static void wt_main_insert(struct tc_repl *r, uint32_t slot)
{
	int qi = PROB;

	if (r->q[PROB].size >= r->prob_cap && r->q[PROT].size < r->prot_cap)
		qi = PROT;
	wt_push(r, qi, slot);
}

static int wt_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->c = nslots;
	/* window 1 %, rounded down; main SLRU 1:4 */
	wt_set_window(r, (uint32_t)((uint64_t)nslots / 100));
	r->step = -WT_HC_STEP * nslots;
	/* ceil(14.37759 * main): -ln 0.001 / ln^2 2 counters per entry, in integers. */
	r->width = (uint32_t)(((uint64_t)(r->main_cap ? r->main_cap : 1) * 1437759 + 99999) /
			      100000);
	r->period = (uint64_t)WT_SAMPLE * (r->main_cap ? r->main_cap : 1);
	r->cnt = calloc(r->width, sizeof(*r->cnt));
	rc = r->cnt ? tc_rq_policy_init(&r->lock, &r->prev, &r->next, lines, nslots)
		    : -ENOMEM;
	if (rc) {
		free(r->cnt);
		free(r);
		return rc;
	}
	r->lines = lines;
	for (int i = 0; i < 3; i++)
		tc_rq_init(&r->q[i]);
	*out = r;
	return 0;
}

static void wt_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	free(r->cnt);
	tc_rq_policy_fini(&r->lock, r->prev, r->next);
	free(r);
}

/* wt_insert - a filled line enters the window's MRU end and its key is counted. */
static void wt_insert(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot))
		wt_unlink(r, slot);
	wt_push(r, WIN, slot);
	wt_count(r, wt_key(r, slot));
	wt_sample(r, false);
	pthread_mutex_unlock(&r->lock);
}

/* wt_touch - a hit; see the file comment.  Takes the mutex. */
static void wt_touch(struct tc_repl *r, uint32_t slot)
{
	int qi;

	pthread_mutex_lock(&r->lock);
	if (!tc_rq_queued(r->prev, slot))
		goto out;
	qi = wt_seg(r, slot);
	wt_sample(r, true);
	tc_rq_unlink(r->prev, r->next, &r->q[qi], slot);
	if (qi == WIN) {
		wt_push(r, WIN, slot);
		goto out;
	}
	wt_push(r, PROT, slot);
	if (qi == PROB) {
		while (r->q[PROT].size > r->prot_cap) {
			uint32_t d = r->q[PROT].tail;

			tc_rq_unlink(r->prev, r->next, &r->q[PROT], d);
			wt_push(r, PROB, d);
		}
	}
	wt_count(r, wt_key(r, slot));
	if (++r->counted >= r->period) {
		r->counted = 0;
		wt_age(r);
	}
out:
	pthread_mutex_unlock(&r->lock);
}

static void wt_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot)) {
		wt_unlink(r, slot);
		tc_rq_set_bits(&r->lines[slot], 0);
	}
	pthread_mutex_unlock(&r->lock);
}

/* wt_take - try to evict @s (dequeued by the caller) from queue @qi: 0 if
 * @can_evict accepts, else it goes back to @qi's MRU end and -EAGAIN. */
static int wt_take(struct tc_repl *r, int qi, uint32_t s, tc_can_evict_fn can_evict,
		   void *arg)
{
	if (can_evict && !can_evict(arg, s)) {
		r->rejected++;
		wt_push(r, qi, s);
		return -EAGAIN;
	}
	tc_rq_set_bits(&r->lines[s], 0);
	return 0;
}

/* wt_victim - see the file comment.  Returns 0 and *@slot, or -ENOSPC. */
static int wt_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		     uint32_t *slot)
{
	uint32_t refused = 0, rej_win = 0, rej_main = 0;
	uint64_t steps, max_steps = 2 * (uint64_t)r->c + 2;
	int rc = -ENOSPC;

	pthread_mutex_lock(&r->lock);
	for (steps = 0; steps < max_steps && refused < TC_REPL_MAX_REFUSALS; steps++) {
		uint32_t cand, mv;
		uint64_t ckey;
		int mq;

		if (r->q[WIN].size > rej_win &&
		    (wt_main_size(r) <= r->main_cap || rej_main >= wt_main_size(r))) {
			cand = r->q[WIN].tail;
			ckey = wt_key(r, cand);
			if (wt_main_size(r) < r->main_cap) {
				tc_rq_unlink(r->prev, r->next, &r->q[WIN], cand);
				wt_main_insert(r, cand);
				wt_count(r, ckey);
				continue;
			}
			mq = r->q[PROB].size ? PROB : PROT;
			if (!r->q[mq].size || rej_main >= wt_main_size(r) ||
			    wt_estimate(r, ckey) <=
			    wt_estimate(r, wt_key(r, r->q[mq].tail))) {
				/* The candidate loses (or nothing in main may go). */
				tc_rq_unlink(r->prev, r->next, &r->q[WIN], cand);
				if (wt_take(r, WIN, cand, can_evict, arg)) {
					rej_win++;
					refused++;
					continue;
				}
				r->refused_admission++;
				wt_count(r, ckey);
				*slot = cand;
				rc = 0;
				break;
			}
			mv = r->q[mq].tail;
			tc_rq_unlink(r->prev, r->next, &r->q[mq], mv);
			if (wt_take(r, mq, mv, can_evict, arg)) {
				rej_main++;
				refused++;
				continue;
			}
			tc_rq_unlink(r->prev, r->next, &r->q[WIN], cand);
			wt_main_insert(r, cand);
			r->admitted++;
			wt_count(r, ckey);
			*slot = mv;
			rc = 0;
			break;
		}
		/* Window empty (or wholly refused): the main cache's victim. */
		mq = r->q[PROB].size ? PROB : PROT;
		if (!r->q[mq].size || rej_main >= wt_main_size(r))
			break;
		mv = r->q[mq].tail;
		tc_rq_unlink(r->prev, r->next, &r->q[mq], mv);
		if (wt_take(r, mq, mv, can_evict, arg)) {
			rej_main++;
			refused++;
			continue;
		}
		*slot = mv;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* wt_mem - 8 bytes per slot; the sketch (one byte per counter) as ghost state. */
static void wt_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = r->width;
}

const struct tc_repl_ops tc_repl_wtinylfu = {
	.name = "wtinylfu",
	.create = wt_create,
	.destroy = wt_destroy,
	.insert = wt_insert,
	.touch = wt_touch,
	.remove = wt_remove,
	.victim = wt_victim,
	.mem = wt_mem,
};

static int wt_create_hc(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	int rc = wt_create(out, lines, nslots);

	if (rc == 0)
		(*out)->climb = true;
	return rc;
}

const struct tc_repl_ops tc_repl_wtinylfu_hc = {
	.name = "wtinylfu-hc",
	.create = wt_create_hc,
	.destroy = wt_destroy,
	.insert = wt_insert,
	.touch = wt_touch,
	.remove = wt_remove,
	.victim = wt_victim,
	.mem = wt_mem,
};

/*
 * tc_repl_wtinylfu_window - the window's capacity in lines now and the climber's
 * samples so far (*@climbs, may be NULL).  Takes the mutex.
 */
uint32_t tc_repl_wtinylfu_window(struct tc_repl *r, uint64_t *climbs);
uint32_t tc_repl_wtinylfu_window(struct tc_repl *r, uint64_t *climbs)
{
	uint32_t w;

	pthread_mutex_lock(&r->lock);
	w = r->win_cap;
	if (climbs)
		*climbs = r->climbs;
	pthread_mutex_unlock(&r->lock);
	return w;
}

/* ---- inspection (tests; not part of policy.h) ------------------------------------ */

/*
 * tc_repl_wtinylfu_set_width - make the sketch @mult times wider (fewer collisions)
 * and clear it.  libCacheSim sizes its filter for the main cache's bytes, 4096 times
 * the lines at 4 KiB pages, so its counts are nearly exact; a wide sketch reproduces
 * that.  Tests only; call before use.  Returns 0 or -ENOMEM (the old sketch stays).
 */
int tc_repl_wtinylfu_set_width(struct tc_repl *r, uint32_t mult);
int tc_repl_wtinylfu_set_width(struct tc_repl *r, uint32_t mult)
{
	uint64_t w = (uint64_t)r->width * (mult ? mult : 1);
	uint8_t *cnt;

	if (w > UINT32_MAX)
		return -ENOMEM;
	cnt = calloc(w, 1);
	if (!cnt)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	free(r->cnt);
	r->cnt = cnt;
	r->width = (uint32_t)w;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/*
 * tc_repl_wtinylfu_state - which queue @slot is in (0 window, 1 probation,
 * 2 protected, -ENOENT), the sketch's estimate for @key (*@est), the queue sizes and
 * the admission decisions so far (*@admitted: candidate replaced the main victim;
 * *@lost: candidate evicted).  Pointers may be NULL.  Takes the mutex.
 */
int tc_repl_wtinylfu_state(struct tc_repl *r, uint32_t slot, uint64_t key, unsigned *est,
			   uint32_t sizes[3], uint64_t *admitted, uint64_t *lost);
int tc_repl_wtinylfu_state(struct tc_repl *r, uint32_t slot, uint64_t key, unsigned *est,
			   uint32_t sizes[3], uint64_t *admitted, uint64_t *lost)
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = slot < r->c && tc_rq_queued(r->prev, slot) ? wt_seg(r, slot) : -ENOENT;
	if (est)
		*est = wt_estimate(r, key);
	if (sizes)
		for (int i = 0; i < 3; i++)
			sizes[i] = r->q[i].size;
	if (admitted)
		*admitted = r->admitted;
	if (lost)
		*lost = r->refused_admission;
	pthread_mutex_unlock(&r->lock);
	return rc;
}
