/* SPDX-License-Identifier: MIT */
/*
 * policy_2q.c - 2Q replacement (the full version, with A1in, A1out and Am).
 *
 * Source: Theodore Johnson, Dennis Shasha, "2Q: a low overhead high performance
 * buffer management replacement algorithm", VLDB'94, section 2.1 ("full version");
 * sizes as the paper recommends and libCacheSim's TwoQ.c (J. Yang et al.) sets them:
 * Kin = 25 % of the cache, Kout = 50 %.
 *
 *   miss, key not in A1out  -> A1in's head (FIFO)
 *   miss, key in A1out      -> Am's head (LRU); the ghost is dropped
 *   hit in A1in             -> nothing (a correlated reference: FIFO order kept)
 *   hit in Am               -> Am's head
 *   victim: |A1in| > Kin    -> A1in's tail, its key to A1out's head (A1out keeps
 *                              Kout keys, oldest forgotten first)
 *           otherwise       -> Am's tail (no ghost)
 *
 * As in libCacheSim, Am has a capacity of its own (c - Kin): a fill that goes to Am
 * while Am is full takes its victim from Am.  (libCacheSim then also evicts from
 * A1in if A1in is above Kin, leaving a slot free; one fill here evicts one line.)
 *
 * Why: a line referenced once (a scan, a one-hit wonder) leaves through A1in after a
 * short stay without disturbing Am; a line referenced again after it left is, by
 * A1out, known to be reused at a distance longer than A1in and earns a place in Am.
 *
 * Per-slot state: uint32 prev[] and next[] (8 bytes; A1in and Am share them) and bit 6
 * of lines[slot].flags (1 = Am).  Ghosts: a pool of Kout entries of policy_ghost.h (21
 * bytes each plus a 4-byte hash bucket).
 *
 * Thread-safety: one mutex for queues and ghosts (insert, remove, victim, miss).
 * touch() reads the Am bit without a lock and returns at once for an A1in line, the
 * common case of one-hit and correlated references; an Am hit takes the mutex to move
 * the line (and re-checks the bit under it).
 *
 * Deviation (as in every policy here): a line can_evict() refuses goes back to the
 * head of its queue; once a queue has been refused entirely the other one is used;
 * -ENOSPC after TC_REPL_MAX_REFUSALS refusals.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "policy.h"
#include "policy_ghost.h"
#include "policy_list.h"

#define Q2_IN_AM 0x40u
_Static_assert((Q2_IN_AM & ~TC_LINE_POLICY_MASK) == 0, "2Q bit in policy mask");

enum { A1IN = 0, AM = 1 };
#define A1OUT 0u                /* ghost list id */
#define Q2_NOKEY UINT64_MAX

struct tc_repl {
	pthread_mutex_t lock;
	struct tc_line *lines;
	uint32_t *prev, *next;
	struct tc_rq q[2];          /* A1IN, AM */
	struct tc_gset out;         /* A1out */
	uint32_t c, kin, kout, am_cap;
	uint64_t pending;           /* key announced by miss() */
	uint64_t rejected;
};

static int q2_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->c = nslots;
	r->kin = nslots / 4;       /* 25 %, rounded down as libCacheSim's int64 cast */
	r->kout = nslots / 2;      /* 50 % */
	r->am_cap = nslots - r->kin;
	rc = tc_rq_policy_init(&r->lock, &r->prev, &r->next, lines, nslots);
	if (rc) {
		free(r);
		return rc;
	}
	if (tc_gset_init(&r->out, r->kout)) {
		tc_rq_policy_fini(&r->lock, r->prev, r->next);
		free(r);
		return -ENOMEM;
	}
	r->lines = lines;
	r->pending = Q2_NOKEY;
	tc_rq_init(&r->q[A1IN]);
	tc_rq_init(&r->q[AM]);
	*out = r;
	return 0;
}

static void q2_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	tc_gset_fini(&r->out);
	tc_rq_policy_fini(&r->lock, r->prev, r->next);
	free(r);
}

static int q2_queue_of(const struct tc_repl *r, uint32_t slot)
{
	return (tc_rq_bits(&r->lines[slot]) & Q2_IN_AM) ? AM : A1IN;
}

static void q2_push(struct tc_repl *r, int qi, uint32_t slot)
{
	tc_rq_set_bits(&r->lines[slot], qi == AM ? Q2_IN_AM : 0);
	tc_rq_push_head(r->prev, r->next, &r->q[qi], slot);
}

static void q2_miss(struct tc_repl *r, uint64_t key)
{
	pthread_mutex_lock(&r->lock);
	r->pending = key;
	pthread_mutex_unlock(&r->lock);
}

/* q2_first_queue - where the victim comes from: Am when the pending fill goes to a
 * full Am; else A1in while it is above Kin; else Am.  An empty queue is never chosen
 * while the other has lines. */
static int q2_first_queue(const struct tc_repl *r)
{
	bool to_am = r->pending != Q2_NOKEY &&
		     tc_gset_find(&r->out, r->pending) != TC_GSET_NONE;
	int qi;

	if (to_am && r->q[AM].size >= r->am_cap)
		qi = AM;
	else
		qi = r->q[A1IN].size > r->kin ? A1IN : AM;
	if (!r->q[qi].size)
		qi = !qi;
	return qi;
}

/* q2_victim - "reclaimfor" of the paper.  Returns 0 and *@slot, or -ENOSPC. */
static int q2_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		     uint32_t *slot)
{
	uint32_t rej[2] = { 0, 0 }, refused = 0;
	int rc = -ENOSPC, qi;

	pthread_mutex_lock(&r->lock);
	qi = q2_first_queue(r);
	while (r->q[qi].size > rej[qi] || r->q[!qi].size > rej[!qi]) {
		uint32_t s;
		uint64_t key;

		if (r->q[qi].size <= rej[qi])
			qi = !qi;
		s = r->q[qi].tail;
		key = tc_line_key(r->lines[s].vol, r->lines[s].line_no);
		tc_rq_unlink(r->prev, r->next, &r->q[qi], s);
		if (can_evict && !can_evict(arg, s)) {
			rej[qi]++;
			r->rejected++;
			q2_push(r, qi, s);
			if (++refused >= TC_REPL_MAX_REFUSALS)
				break;
			continue;
		}
		if (qi == A1IN && r->kout) {
			if (r->out.size[A1OUT] >= r->kout)
				tc_gset_pop_tail(&r->out, A1OUT);
			tc_gset_push(&r->out, A1OUT, key);
		}
		tc_rq_set_bits(&r->lines[s], 0);
		*slot = s;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* q2_insert - to Am's head if the key is in A1out (the ghost is dropped), else to
 * A1in's head. */
static void q2_insert(struct tc_repl *r, uint32_t slot)
{
	uint64_t key = tc_line_key(r->lines[slot].vol, r->lines[slot].line_no);
	uint32_t e;
	int qi = A1IN;

	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot))
		tc_rq_unlink(r->prev, r->next, &r->q[q2_queue_of(r, slot)], slot);
	e = tc_gset_find(&r->out, key);
	if (e != TC_GSET_NONE) {
		tc_gset_erase(&r->out, e);
		qi = AM;
	}
	r->pending = Q2_NOKEY;
	q2_push(r, qi, slot);
	pthread_mutex_unlock(&r->lock);
}

/* q2_touch - an Am hit moves the line to Am's head (mutex); an A1in hit does nothing
 * and takes no lock. */
static void q2_touch(struct tc_repl *r, uint32_t slot)
{
	if (!(tc_rq_bits(&r->lines[slot]) & Q2_IN_AM))
		return;
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot) && q2_queue_of(r, slot) == AM &&
	    r->q[AM].head != slot) {
		tc_rq_unlink(r->prev, r->next, &r->q[AM], slot);
		tc_rq_push_head(r->prev, r->next, &r->q[AM], slot);
	}
	pthread_mutex_unlock(&r->lock);
}

static void q2_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot)) {
		tc_rq_unlink(r->prev, r->next, &r->q[q2_queue_of(r, slot)], slot);
		tc_rq_set_bits(&r->lines[slot], 0);
	}
	pthread_mutex_unlock(&r->lock);
}

static void q2_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = tc_gset_mem(&r->out);
}

const struct tc_repl_ops tc_repl_2q = {
	.name = "2q",
	.create = q2_create,
	.destroy = q2_destroy,
	.insert = q2_insert,
	.touch = q2_touch,
	.remove = q2_remove,
	.victim = q2_victim,
	.miss = q2_miss,
	.mem = q2_mem,
};

/* ---- inspection (tests; not part of policy.h) ------------------------------------ */

/*
 * tc_repl_2q_state - which queue @slot is in (0 = A1in, 1 = Am, -ENOENT), whether
 * @key is in A1out (*@ghost), and the sizes of A1in, Am and A1out.  Pointers may be
 * NULL.  Takes the mutex.
 */
int tc_repl_2q_state(struct tc_repl *r, uint32_t slot, uint64_t key, bool *ghost,
		     uint32_t sizes[3]);
int tc_repl_2q_state(struct tc_repl *r, uint32_t slot, uint64_t key, bool *ghost,
		     uint32_t sizes[3])
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = slot < r->c && tc_rq_queued(r->prev, slot) ? q2_queue_of(r, slot) : -ENOENT;
	if (ghost)
		*ghost = tc_gset_find(&r->out, key) != TC_GSET_NONE;
	if (sizes) {
		sizes[0] = r->q[A1IN].size;
		sizes[1] = r->q[AM].size;
		sizes[2] = r->out.size[A1OUT];
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}
