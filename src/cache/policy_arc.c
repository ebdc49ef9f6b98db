/* SPDX-License-Identifier: MIT */
/*
 * policy_arc.c - ARC, the adaptive replacement cache.
 *
 * Source: Nimrod Megiddo, Dharmendra S. Modha, "ARC: a self-tuning, low overhead
 * replacement cache", USENIX FAST'03, Figure 4 (cases I-IV and REPLACE); the order of
 * operations follows libCacheSim's ARC.c (J. Yang et al.): on a ghost hit p adapts,
 * REPLACE runs, and the ghost entry is dropped; on a miss in no list the cases of
 * |T1| + |B1| = c and of a full directory (2c) drop a ghost tail first, or evict T1's
 * LRU without a ghost when B1 is empty.
 *
 *   T1 [MRU .... LRU] -> B1 [MRU .... LRU]     seen once recently (recency)
 *   T2 [MRU .... LRU] -> B2 [MRU .... LRU]     seen at least twice (frequency)
 *   |T1| + |T2| <= c (the cache), |T1| + |B1| <= c, all four <= 2c.
 *
 *   hit in T1 or T2        -> MRU of T2
 *   miss, key in B1        -> p += max(|B2| / |B1|, 1) (at most c); REPLACE; MRU of T2
 *   miss, key in B2        -> p -= max(|B1| / |B2|, 1) (at least 0); REPLACE; MRU of T2
 *   miss, key in neither   -> (cache full) trim a ghost list as above, REPLACE; MRU of T1
 *   REPLACE: if |T1| > 0 and (|T1| > p or (key in B2 and |T1| = p)) T1's LRU goes to
 *            B1's MRU, else T2's LRU goes to B2's MRU.
 *
 * p is the target size of T1 in lines: a ghost hit in B1 says T1 was too small (a
 * recency workload), one in B2 that T2 was (a frequency workload).
 *
 * The engine asks for a victim before it inserts, and REPLACE depends on the key being
 * inserted: the optional miss() op (policy.h) tells the policy that key first.
 *
 * Per-slot state: uint32 prev[] and next[] (8 bytes; T1 and T2 share them) and bit 6
 * of lines[slot].flags (1 = T2).  Ghosts: a pool of c entries of policy_ghost.h (21
 * bytes each plus a 4-byte hash bucket), which holds B1 and B2: |B1| + |B2| <= c.
 *
 * Thread-safety: one mutex protects lists, ghosts and p; every op takes it, touch()
 * included (a hit moves the line to T2's MRU, as LRU's does: policy_lru.c).
 *
 * Deviation from the paper (as in every policy here): can_evict() may refuse a line
 * (dirty, in use).  REPLACE then moves the refused line to the MRU end of its own list
 * and looks at the next LRU line, of the other list once one list has been refused
 * entirely; it gives up with -ENOSPC after TC_REPL_MAX_REFUSALS refusals.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "policy.h"
#include "policy_ghost.h"
#include "policy_list.h"

#define ARC_IN_T2 0x40u
_Static_assert((ARC_IN_T2 & ~TC_LINE_POLICY_MASK) == 0, "ARC bit in policy mask");

enum { T1 = 0, T2 = 1 };       /* resident lists */
enum { B1 = 0, B2 = 1 };       /* ghost lists (tc_gset list ids) */

struct tc_repl {
	pthread_mutex_t lock;      /* everything below */
	struct tc_line *lines;
	uint32_t *prev, *next;
	struct tc_rq t[2];
	struct tc_gset ghost;      /* B1, B2 */
	uint32_t c;                /* nslots */
	uint64_t p;                /* target size of T1, in 1/unit lines, 0..c * unit */
	uint32_t unit;             /* 1 (the paper); see tc_repl_arc_set_unit() */
	uint64_t pending;          /* key of the miss being served (miss()), or NOKEY */
	uint64_t adapted;          /* key whose ghost hit victim() consumed, or NOKEY */
	uint64_t rejected;
};

#define ARC_NOKEY UINT64_MAX

static int arc_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	rc = tc_rq_policy_init(&r->lock, &r->prev, &r->next, lines, nslots);
	if (rc) {
		free(r);
		return rc;
	}
	if (tc_gset_init(&r->ghost, nslots)) {
		tc_rq_policy_fini(&r->lock, r->prev, r->next);
		free(r);
		return -ENOMEM;
	}
	r->lines = lines;
	r->c = nslots;
	r->pending = r->adapted = ARC_NOKEY;
	r->unit = 1;
	tc_rq_init(&r->t[T1]);
	tc_rq_init(&r->t[T2]);
	*out = r;
	return 0;
}

static void arc_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	tc_gset_fini(&r->ghost);
	tc_rq_policy_fini(&r->lock, r->prev, r->next);
	free(r);
}

static int arc_list_of(const struct tc_repl *r, uint32_t slot)
{
	return (tc_rq_bits(&r->lines[slot]) & ARC_IN_T2) ? T2 : T1;
}

static void arc_push(struct tc_repl *r, int li, uint32_t slot)
{
	tc_rq_set_bits(&r->lines[slot], li == T2 ? ARC_IN_T2 : 0);
	tc_rq_push_head(r->prev, r->next, &r->t[li], slot);
}

static void arc_unlink(struct tc_repl *r, uint32_t slot)
{
	tc_rq_unlink(r->prev, r->next, &r->t[arc_list_of(r, slot)], slot);
}

static uint64_t arc_key(const struct tc_repl *r, uint32_t slot)
{
	return tc_line_key(r->lines[slot].vol, r->lines[slot].line_no);
}

/* arc_adapt - the ghost hit of case II (@list B1) or III (B2): move p by
 * max(|B2| / |B1|, 1) or max(|B1| / |B2|, 1) (integer division, as libCacheSim). */
static void arc_adapt(struct tc_repl *r, unsigned list)
{
	uint32_t b1 = r->ghost.size[B1], b2 = r->ghost.size[B2], d;
	uint64_t pmax = (uint64_t)r->c * r->unit;

	if (list == B1) {
		d = b1 ? b2 / b1 : 1;
		d = d ? d : 1;
		r->p = pmax - r->p < d ? pmax : r->p + d;
	} else {
		d = b2 ? b1 / b2 : 1;
		d = d ? d : 1;
		r->p = r->p < d ? 0 : r->p - d;
	}
}

/* arc_ghost_add - @key joins ghost @list; the pool never overflows because
 * |B1| + |B2| <= c is kept, but a full pool drops B2's, else B1's, oldest. */
static void arc_ghost_add(struct tc_repl *r, unsigned list, uint64_t key)
{
	if (!r->c)
		return;
	if (tc_gset_total(&r->ghost) >= r->ghost.cap)
		tc_gset_pop_tail(&r->ghost, r->ghost.size[B2] ? B2 : B1);
	tc_gset_push(&r->ghost, list, key);
}

/* arc_replace - REPLACE(x, p) with @in_b2 = "x is in B2": one victim from T1 or T2
 * that @can_evict accepts, its key to B1 or B2.  Returns 0 and *@slot, or -ENOSPC. */
static int arc_replace(struct tc_repl *r, bool in_b2, tc_can_evict_fn can_evict,
		       void *arg, uint32_t *slot)
{
	uint32_t rej[2] = { 0, 0 }, refused = 0;

	for (;;) {
		bool t1_ok = r->t[T1].size > rej[T1], t2_ok = r->t[T2].size > rej[T2];
		uint32_t t1 = r->t[T1].size;
		uint64_t t1u = (uint64_t)t1 * r->unit, key;
		int li;
		uint32_t s;

		if (!t1_ok && !t2_ok)
			return -ENOSPC;
		if (t1 > 0 && (t1u > r->p || (t1u == r->p && in_b2)))
			li = t1_ok ? T1 : T2;
		else
			li = t2_ok ? T2 : T1;
		s = r->t[li].tail;
		key = arc_key(r, s);
		tc_rq_unlink(r->prev, r->next, &r->t[li], s);
		if (can_evict && !can_evict(arg, s)) {
			rej[li]++;
			r->rejected++;
			arc_push(r, li, s);
			if (++refused >= TC_REPL_MAX_REFUSALS)
				return -ENOSPC;
			continue;
		}
		arc_ghost_add(r, li == T1 ? B1 : B2, key);
		tc_rq_set_bits(&r->lines[s], 0);
		*slot = s;
		return 0;
	}
}

static void arc_miss(struct tc_repl *r, uint64_t key)
{
	pthread_mutex_lock(&r->lock);
	r->pending = key;
	pthread_mutex_unlock(&r->lock);
}

/* arc_victim - cases II-IV of Figure 4 for the key miss() announced (a key not
 * announced counts as in no list).  Returns 0 and *@slot, or -ENOSPC. */
static int arc_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		      uint32_t *slot)
{
	uint32_t e = TC_GSET_NONE;
	int rc;

	pthread_mutex_lock(&r->lock);
	if (r->pending != ARC_NOKEY)
		e = tc_gset_find(&r->ghost, r->pending);
	if (e != TC_GSET_NONE) {
		/* Cases II and III. */
		unsigned list = r->ghost.list[e];
		uint64_t p0 = r->p;

		arc_adapt(r, list);
		rc = arc_replace(r, list == B2, can_evict, arg, slot);
		if (rc == 0) {
			/* REPLACE's ghost may have pushed the key out of a full pool. */
			e = tc_gset_find(&r->ghost, r->pending);
			if (e != TC_GSET_NONE)
				tc_gset_erase(&r->ghost, e);
			r->adapted = r->pending;
		} else {
			r->p = p0;   /* a failed allocation changes nothing */
		}
		goto out;
	}
	/* Case IV with a full cache. */
	if (r->t[T1].size + r->ghost.size[B1] >= r->c) {
		if (r->t[T1].size < r->c) {
			tc_gset_pop_tail(&r->ghost, B1);
			rc = arc_replace(r, false, can_evict, arg, slot);
		} else {
			/* B1 empty, T1 the whole cache: T1's LRU goes without a ghost. */
			uint32_t refused = 0;

			rc = -ENOSPC;
			while (r->t[T1].size && refused < TC_REPL_MAX_REFUSALS &&
			       refused < r->t[T1].size) {
				uint32_t s = r->t[T1].tail;

				tc_rq_unlink(r->prev, r->next, &r->t[T1], s);
				if (can_evict && !can_evict(arg, s)) {
					refused++;
					r->rejected++;
					arc_push(r, T1, s);
					continue;
				}
				tc_rq_set_bits(&r->lines[s], 0);
				*slot = s;
				rc = 0;
				break;
			}
		}
	} else {
		if (r->t[T1].size + r->t[T2].size + tc_gset_total(&r->ghost) >= 2 * r->c)
			tc_gset_pop_tail(&r->ghost, B2);
		rc = arc_replace(r, false, can_evict, arg, slot);
	}
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* arc_insert - @slot was filled: to T2's MRU if its key's ghost hit was consumed by
 * victim() or is still in B1/B2 (a fill from the free list: p adapts here), else to
 * T1's MRU.  Keeps |T1| + |B1| <= c and the directory <= 2c by dropping ghost tails. */
static void arc_insert(struct tc_repl *r, uint32_t slot)
{
	uint64_t key = arc_key(r, slot);
	int li = T1;
	uint32_t e;

	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot))
		arc_unlink(r, slot);
	if (key == r->adapted) {
		li = T2;
	} else if ((e = tc_gset_find(&r->ghost, key)) != TC_GSET_NONE) {
		arc_adapt(r, r->ghost.list[e]);
		tc_gset_erase(&r->ghost, e);
		li = T2;
	}
	r->adapted = r->pending = ARC_NOKEY;
	arc_push(r, li, slot);
	while (r->ghost.size[B1] && r->t[T1].size + r->ghost.size[B1] > r->c)
		tc_gset_pop_tail(&r->ghost, B1);
	while (r->ghost.size[B2] &&
	       r->t[T1].size + r->t[T2].size + tc_gset_total(&r->ghost) > 2 * r->c)
		tc_gset_pop_tail(&r->ghost, B2);
	pthread_mutex_unlock(&r->lock);
}

/* arc_touch - a hit: to T2's MRU.  Takes the mutex; an unqueued slot is left alone. */
static void arc_touch(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot)) {
		arc_unlink(r, slot);
		arc_push(r, T2, slot);
	}
	pthread_mutex_unlock(&r->lock);
}

static void arc_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot)) {
		arc_unlink(r, slot);
		tc_rq_set_bits(&r->lines[slot], 0);
	}
	pthread_mutex_unlock(&r->lock);
}

/* arc_mem - 8 bytes per slot; the ghost pool of c entries. */
static void arc_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = tc_gset_mem(&r->ghost);
}

const struct tc_repl_ops tc_repl_arc = {
	.name = "arc",
	.create = arc_create,
	.destroy = arc_destroy,
	.insert = arc_insert,
	.touch = arc_touch,
	.remove = arc_remove,
	.victim = arc_victim,
	.miss = arc_miss,
	.mem = arc_mem,
};

/* ---- inspection (tests; not part of policy.h) ------------------------------------ */

/*
 * tc_repl_arc_set_unit - count p in 1/@unit lines (p's step stays the paper's
 * max(|B2| / |B1|, 1), so p moves @unit times slower).  1, the default, is the
 * paper's ARC.  @unit = 4096 reproduces libCacheSim's ARC.c on objects of 4096 bytes:
 * it keeps p in bytes but adds the step in objects.  Tests only; call before use.
 */
void tc_repl_arc_set_unit(struct tc_repl *r, uint32_t unit);
void tc_repl_arc_set_unit(struct tc_repl *r, uint32_t unit)
{
	pthread_mutex_lock(&r->lock);
	r->unit = unit ? unit : 1;
	r->p = 0;
	pthread_mutex_unlock(&r->lock);
}

/*
 * tc_repl_arc_state - p and the sizes of T1, T2, B1, B2 (lines / keys); which list
 * @slot is in (0 = T1, 1 = T2, -ENOENT) is returned.  Pointers may be NULL.  Takes
 * the mutex.
 */
int tc_repl_arc_state(struct tc_repl *r, uint32_t slot, uint32_t *p, uint32_t sizes[4]);
int tc_repl_arc_state(struct tc_repl *r, uint32_t slot, uint32_t *p, uint32_t sizes[4])
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = slot < r->c && tc_rq_queued(r->prev, slot) ? arc_list_of(r, slot) : -ENOENT;
	if (p)
		*p = (uint32_t)(r->p / r->unit);
	if (sizes) {
		sizes[0] = r->t[T1].size;
		sizes[1] = r->t[T2].size;
		sizes[2] = r->ghost.size[B1];
		sizes[3] = r->ghost.size[B2];
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}
