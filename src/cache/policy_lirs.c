/* SPDX-License-Identifier: MIT */
/*
 * policy_lirs.c - LIRS, the low inter-reference recency set replacement.
 *
 * Source: Song Jiang, Xiaodong Zhang, "LIRS: an efficient low inter-reference recency
 * set replacement policy to improve buffer cache performance", ACM SIGMETRICS 2002,
 * section 3.3 (stack S, list Q, stack pruning, the three cases of a reference); sizes
 * as the paper recommends and libCacheSim's LIRS.c (J. Yang et al.) sets them: the
 * resident HIR set (Q) holds 1 % of the cache (at least one line), the LIR set the
 * rest, and stack S is kept to at most 2 x the cache's lines by forgetting the
 * non-resident HIR entries that became non-resident first (libCacheSim's limitStack).
 *
 *   S [top .... bottom]  recency stack: LIR lines, resident HIR lines and non-resident
 *                        HIR keys (ghosts), most recent at the top; its bottom is
 *                        always an LIR line ("pruning" drops HIR entries below it).
 *   Q [end .... front]   resident HIR lines, the next victim at the front.
 *
 *   hit on an LIR line           -> top of S (pruning if it was the bottom)
 *   hit on a resident HIR in S   -> becomes LIR at the top of S and leaves Q; the
 *                                   bottom LIR becomes HIR at the end of Q; pruning
 *   hit on a resident HIR not in S -> top of S, end of Q (stays HIR)
 *   victim                       -> Q's front; if it is in S its key stays there as a
 *                                   non-resident HIR entry (in its place in S)
 *   miss, key non-resident in S  -> LIR at the top of S (the ghost is dropped); the
 *                                   bottom LIR becomes HIR at the end of Q; pruning
 *   miss, key unknown            -> HIR at the top of S and the end of Q; while the
 *                                   LIR set is not full (warm-up) LIR at the top of S
 *
 * Why: a line's inter-reference recency (IRR, the number of other lines referenced
 * between its last two references) predicts its next one better than its recency; the
 * LIR set holds the lines of lowest IRR, so a line referenced once (a scan, a loop
 * longer than the cache) stays HIR and leaves through the small Q, while a line whose
 * second reference came before the oldest LIR line's last one joins the LIR set.
 *
 * Per-slot state (the 16-byte budget): uint32 S links and Q links (prev/next each,
 * 16 bytes) and bit 6 of lines[slot].flags (1 = LIR).  History, counted in mem() and
 * bounded: S's non-resident entries are nodes nslots .. 3 x nslots of S's link arrays
 * (8 bytes each) whose keys live in a policy_ghost.h pool of 2 x nslots entries (21
 * bytes each plus a 4-byte hash bucket), its one list in the order the keys became
 * non-resident (the order in which the 2c bound forgets them).  About 66 bytes of
 * history per line at most.
 *
 * Thread-safety: one mutex for everything; every op takes it, touch() included (a hit
 * moves the line to the top of S, as LRU's does).
 *
 * Deviations: (1) a line can_evict() refuses goes to the end of Q; once Q has been
 * refused entirely the bottom LIR line of S is the victim (refused: to the top of S);
 * -ENOSPC after TC_REPL_MAX_REFUSALS refusals.  (2) libCacheSim's LIRS.c, on a hit on
 * a resident HIR line that is not in S, also moves the bottom LIR line to Q and
 * evicts Q's front (its hit_RD_HIRinQ calls evictLIR while the LIR set is full); the
 * paper does not, and neither does this file (a policy cannot evict on a hit here).
 * docs/policy.md gives the effect of that on cloudPhysicsIO.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "policy.h"
#include "policy_ghost.h"
#include "policy_list.h"

#define LIRS_LIR 0x40u
_Static_assert((LIRS_LIR & ~TC_LINE_POLICY_MASK) == 0, "LIRS bit in policy mask");

#define NH 0u                      /* the ghost list: non-resident keys in S */

struct tc_repl {
	pthread_mutex_t lock;
	struct tc_line *lines;
	uint32_t *sprev, *snext;       /* [3c] S links: slots, then ghost nodes c + entry */
	uint32_t *qprev, *qnext;       /* [c] Q links */
	struct tc_rq s, q;
	struct tc_gset nh;             /* keys of the ghost nodes, 2c entries */
	uint32_t c, lir_cap, nlir;     /* lines, LIR set capacity, LIR lines */
	uint64_t rejected;
};

static bool lirs_is_lir(const struct tc_repl *r, uint32_t slot)
{
	return tc_rq_bits(&r->lines[slot]) & LIRS_LIR;
}

static uint32_t lirs_ghost_node(const struct tc_repl *r, uint32_t e)
{
	return r->c + e;
}

static int lirs_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r = calloc(1, sizeof(*r));
	uint64_t hir;
	int rc;

	if (!r)
		return -ENOMEM;
	if ((uint64_t)nslots * 3 >= TC_RQ_UNQUEUED) {
		free(r);
		return -EINVAL;
	}
	rc = tc_rq_policy_init(&r->lock, &r->qprev, &r->qnext, lines, nslots);
	if (rc) {
		free(r);
		return rc;
	}
	if (tc_rq_arrays(&r->sprev, &r->snext, nslots * 3) ||
	    tc_gset_init(&r->nh, nslots * 2)) {
		free(r->sprev);
		free(r->snext);
		tc_rq_policy_fini(&r->lock, r->qprev, r->qnext);
		free(r);
		return -ENOMEM;
	}
	r->lines = lines;
	r->c = nslots;
	hir = (uint64_t)nslots / 100;  /* 1 %, at least one line (libCacheSim) */
	if (hir < 1)
		hir = 1;
	r->lir_cap = nslots > hir ? nslots - (uint32_t)hir : 0;
	tc_rq_init(&r->s);
	tc_rq_init(&r->q);
	*out = r;
	return 0;
}

static void lirs_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	tc_gset_fini(&r->nh);
	free(r->sprev);
	free(r->snext);
	tc_rq_policy_fini(&r->lock, r->qprev, r->qnext);
	free(r);
}

/* lirs_drop_ghost - forget ghost entry @e: out of S and of the pool. */
static void lirs_drop_ghost(struct tc_repl *r, uint32_t e)
{
	tc_rq_unlink(r->sprev, r->snext, &r->s, lirs_ghost_node(r, e));
	tc_gset_erase(&r->nh, e);
}

/* lirs_prune - "stack pruning": drop the HIR entries at the bottom of S until an LIR
 * line is there (resident HIR lines stay in Q, ghosts are forgotten). */
static void lirs_prune(struct tc_repl *r)
{
	while (r->s.tail != TC_SLOT_NONE) {
		uint32_t n = r->s.tail;

		if (n >= r->c) {
			lirs_drop_ghost(r, n - r->c);
			continue;
		}
		if (lirs_is_lir(r, n))
			break;
		tc_rq_unlink(r->sprev, r->snext, &r->s, n);
	}
}

/* lirs_limit - S holds at most 2c entries: forget the oldest non-resident keys. */
static void lirs_limit(struct tc_repl *r)
{
	while (r->s.size > 2 * (uint64_t)r->c && r->nh.size[NH])
		lirs_drop_ghost(r, r->nh.tail[NH]);
}

/* lirs_demote_bottom - the bottom LIR line of S becomes HIR at the end of Q; then
 * pruning.  No-op if S holds no line. */
static void lirs_demote_bottom(struct tc_repl *r)
{
	uint32_t b = r->s.tail;

	if (b == TC_SLOT_NONE || b >= r->c || !lirs_is_lir(r, b))
		return;
	tc_rq_unlink(r->sprev, r->snext, &r->s, b);
	tc_rq_set_bits(&r->lines[b], 0);
	r->nlir--;
	tc_rq_push_head(r->qprev, r->qnext, &r->q, b);
	lirs_prune(r);
}

/* lirs_make_lir - resident @slot (already at the top of S, not in Q) joins the LIR
 * set; if that overfills it, the bottom LIR line leaves it. */
static void lirs_make_lir(struct tc_repl *r, uint32_t slot)
{
	tc_rq_set_bits(&r->lines[slot], LIRS_LIR);
	r->nlir++;
	if (r->nlir > r->lir_cap)
		lirs_demote_bottom(r);
}

static void lirs_to_top(struct tc_repl *r, uint32_t node)
{
	if (tc_rq_queued(r->sprev, node))
		tc_rq_unlink(r->sprev, r->snext, &r->s, node);
	tc_rq_push_head(r->sprev, r->snext, &r->s, node);
}

/* lirs_unlink_slot - @slot leaves S and Q (LIR count kept right); no pruning. */
static void lirs_unlink_slot(struct tc_repl *r, uint32_t slot)
{
	if (tc_rq_queued(r->sprev, slot))
		tc_rq_unlink(r->sprev, r->snext, &r->s, slot);
	if (tc_rq_queued(r->qprev, slot))
		tc_rq_unlink(r->qprev, r->qnext, &r->q, slot);
	if (lirs_is_lir(r, slot))
		r->nlir--;
	tc_rq_set_bits(&r->lines[slot], 0);
}

/* lirs_insert - a miss filled @slot: see the file comment. */
static void lirs_insert(struct tc_repl *r, uint32_t slot)
{
	uint64_t key = tc_line_key(r->lines[slot].vol, r->lines[slot].line_no);
	uint32_t e;

	pthread_mutex_lock(&r->lock);
	lirs_unlink_slot(r, slot);
	e = tc_gset_find(&r->nh, key);
	if (e != TC_GSET_NONE) {
		lirs_drop_ghost(r, e);
		lirs_to_top(r, slot);
		lirs_make_lir(r, slot);
		lirs_prune(r);
	} else if (r->nlir < r->lir_cap) {
		lirs_to_top(r, slot);
		lirs_make_lir(r, slot);
	} else {
		lirs_to_top(r, slot);
		tc_rq_push_head(r->qprev, r->qnext, &r->q, slot);
	}
	lirs_limit(r);
	pthread_mutex_unlock(&r->lock);
}

/* lirs_touch - a hit: see the file comment.  Takes the mutex. */
static void lirs_touch(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (lirs_is_lir(r, slot)) {
		bool bottom = r->s.tail == slot;

		lirs_to_top(r, slot);
		if (bottom)
			lirs_prune(r);
	} else if (tc_rq_queued(r->sprev, slot)) {
		if (tc_rq_queued(r->qprev, slot))
			tc_rq_unlink(r->qprev, r->qnext, &r->q, slot);
		lirs_to_top(r, slot);
		lirs_make_lir(r, slot);
	} else if (tc_rq_queued(r->qprev, slot)) {
		lirs_to_top(r, slot);
		tc_rq_unlink(r->qprev, r->qnext, &r->q, slot);
		tc_rq_push_head(r->qprev, r->qnext, &r->q, slot);
	}
	lirs_limit(r);
	pthread_mutex_unlock(&r->lock);
}

static void lirs_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	lirs_unlink_slot(r, slot);
	lirs_prune(r);
	pthread_mutex_unlock(&r->lock);
}

/* lirs_evict_hir - @slot (Q's front, unlinked from Q, accepted) leaves; if it is in S
 * a ghost node with its key takes its place there. */
static void lirs_evict_hir(struct tc_repl *r, uint32_t slot, uint64_t key)
{
	if (tc_rq_queued(r->sprev, slot)) {
		uint32_t p = r->sprev[slot], n = r->snext[slot], g;

		if (r->nh.size[NH] >= r->nh.cap)
			lirs_drop_ghost(r, r->nh.tail[NH]);
		/* the pop above may have changed the neighbours: read them again */
		p = r->sprev[slot];
		n = r->snext[slot];
		if (tc_gset_push(&r->nh, NH, key) == 0) {
			g = lirs_ghost_node(r, r->nh.head[NH]);
			r->sprev[g] = p;
			r->snext[g] = n;
			if (p != TC_SLOT_NONE)
				r->snext[p] = g;
			else
				r->s.head = g;
			if (n != TC_SLOT_NONE)
				r->sprev[n] = g;
			else
				r->s.tail = g;
			r->sprev[slot] = TC_RQ_UNQUEUED;
			r->snext[slot] = TC_SLOT_NONE;
		} else {
			tc_rq_unlink(r->sprev, r->snext, &r->s, slot);
		}
	}
	tc_rq_set_bits(&r->lines[slot], 0);
	lirs_prune(r);
}

static int lirs_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		       uint32_t *slot)
{
	uint32_t refused = 0, qrej = 0, srej = 0;
	int rc = -ENOSPC;

	pthread_mutex_lock(&r->lock);
	while (refused < TC_REPL_MAX_REFUSALS) {
		uint32_t s;
		uint64_t key;

		if (r->q.size > qrej) {
			s = r->q.tail;
			key = tc_line_key(r->lines[s].vol, r->lines[s].line_no);
			tc_rq_unlink(r->qprev, r->qnext, &r->q, s);
			if (can_evict && !can_evict(arg, s)) {
				tc_rq_push_head(r->qprev, r->qnext, &r->q, s);
				qrej++;
				refused++;
				r->rejected++;
				continue;
			}
			lirs_evict_hir(r, s, key);
			*slot = s;
			rc = 0;
			break;
		}
		/* Q empty or wholly refused: the bottom LIR line (S's bottom after pruning). */
		s = r->s.tail;
		if (s == TC_SLOT_NONE || srej >= r->nlir)
			break;
		if (can_evict && !can_evict(arg, s)) {
			lirs_to_top(r, s);
			lirs_prune(r);
			srej++;
			refused++;
			r->rejected++;
			continue;
		}
		lirs_unlink_slot(r, s);
		lirs_prune(r);
		*slot = s;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* lirs_mem - 16 bytes per slot (S and Q links); history: the ghost pool and the ghost
 * nodes' S links. */
static void lirs_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 4 * sizeof(uint32_t);
	*ghost_total = tc_gset_mem(&r->nh) + (size_t)r->c * 2 * 2 * sizeof(uint32_t);
}

const struct tc_repl_ops tc_repl_lirs = {
	.name = "lirs",
	.create = lirs_create,
	.destroy = lirs_destroy,
	.insert = lirs_insert,
	.touch = lirs_touch,
	.remove = lirs_remove,
	.victim = lirs_victim,
	.mem = lirs_mem,
};

/* ---- inspection (tests; not part of policy.h) ------------------------------------ */

/*
 * tc_repl_lirs_state - the status of @slot (0 = resident HIR, 1 = LIR, -ENOENT not
 * resident) and whether it is in S (*@in_s); whether @key is a non-resident entry of
 * S (*@ghost); sizes[0..3] = LIR lines, Q's lines, S's entries, ghosts.  Pointers may
 * be NULL.  Takes the mutex.
 */
int tc_repl_lirs_state(struct tc_repl *r, uint32_t slot, bool *in_s, uint64_t key,
		       bool *ghost, uint32_t sizes[4]);
int tc_repl_lirs_state(struct tc_repl *r, uint32_t slot, bool *in_s, uint64_t key,
		       bool *ghost, uint32_t sizes[4])
{
	int rc = -ENOENT;

	pthread_mutex_lock(&r->lock);
	if (slot < r->c && (tc_rq_queued(r->sprev, slot) || tc_rq_queued(r->qprev, slot)))
		rc = lirs_is_lir(r, slot) ? 1 : 0;
	if (in_s)
		*in_s = slot < r->c && tc_rq_queued(r->sprev, slot);
	if (ghost)
		*ghost = tc_gset_find(&r->nh, key) != TC_GSET_NONE;
	if (sizes) {
		sizes[0] = r->nlir;
		sizes[1] = r->q.size;
		sizes[2] = r->s.size;
		sizes[3] = r->nh.size[NH];
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}
