/* SPDX-License-Identifier: MIT */
/*
 * policy_lru.c - exact LRU replacement: the baseline the other policies are measured
 * against.
 *
 *        head (most recently used)                       tail (least recently used)
 *          |                                                  |
 *          v                                                  v
 *        [s7] <-> [s2] <-> [s9] <-> ... <-> [s4] <-> [s0] <-> [s5]
 *          ^                                                  |
 *          +-- insert() and touch() put a slot here           +-- victim() starts here
 *
 * The list is threaded through two uint32 arrays indexed by slot (prev[], next[]), so
 * the whole per-line cost is 8 bytes and there is no allocation after create().  A slot
 * that is not queued has prev[slot] == LRU_UNQUEUED.
 *
 * The trade-off: LRU is exact, but every hit moves its slot to the head, which writes
 * shared list heads and needs one cache-wide mutex on the hit path.  That is the very lock
 * the engine avoids everywhere else (docs/architecture.md, performance model); it is
 * accepted here only because this policy is the baseline.  S3-FIFO (policy_s3fifo.c)
 * replaces the move on hit by an atomic bump of a 2-bit counter.
 *
 * This policy uses no bit of tc_line.flags.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "policy.h"

#define LRU_UNQUEUED (TC_SLOT_NONE - 1)   /* prev[] value of a slot not in the list */

struct tc_repl {
	pthread_mutex_t lock;   /* protects everything below */
	uint32_t *prev;         /* [nslots] towards the head, TC_SLOT_NONE at the head */
	uint32_t *next;         /* [nslots] towards the tail, TC_SLOT_NONE at the tail */
	uint32_t head, tail;    /* TC_SLOT_NONE when empty */
	uint32_t nslots;
	uint32_t resident;      /* slots in the list */
};

/* ---- list primitives (lock held) ---------------------------------------------- */

static bool lru_queued(const struct tc_repl *r, uint32_t slot)
{
	return r->prev[slot] != LRU_UNQUEUED;
}

static void lru_unlink(struct tc_repl *r, uint32_t slot)
{
	uint32_t p = r->prev[slot], n = r->next[slot];

	if (p != TC_SLOT_NONE)
		r->next[p] = n;
	else
		r->head = n;
	if (n != TC_SLOT_NONE)
		r->prev[n] = p;
	else
		r->tail = p;
	r->prev[slot] = LRU_UNQUEUED;
	r->next[slot] = TC_SLOT_NONE;
	r->resident--;
}

static void lru_push_head(struct tc_repl *r, uint32_t slot)
{
	r->prev[slot] = TC_SLOT_NONE;
	r->next[slot] = r->head;
	if (r->head != TC_SLOT_NONE)
		r->prev[r->head] = slot;
	else
		r->tail = slot;
	r->head = slot;
	r->resident++;
}

/* ---- ops ------------------------------------------------------------------------ */

/* lru_create - an empty list for @nslots slots; @lines is not used.  Returns 0 or
 * -ENOMEM (or -EINVAL for @nslots too large to leave room for the markers). */
static int lru_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r;

	if (nslots >= LRU_UNQUEUED)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->prev = malloc(sizeof(uint32_t) * (nslots ? nslots : 1));
	r->next = malloc(sizeof(uint32_t) * (nslots ? nslots : 1));
	if (!r->prev || !r->next || pthread_mutex_init(&r->lock, NULL) != 0) {
		free(r->prev);
		free(r->next);
		free(r);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nslots; i++) {
		r->prev[i] = LRU_UNQUEUED;
		r->next[i] = TC_SLOT_NONE;
	}
	r->head = r->tail = TC_SLOT_NONE;
	r->nslots = nslots;
	*out = r;
	return 0;
}

static void lru_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r->prev);
	free(r->next);
	free(r);
}

/* lru_insert - @slot becomes the most recently used.  Inserting a slot that is
 * already queued moves it to the head (idempotent).  O(1), takes the policy lock. */
static void lru_insert(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (lru_queued(r, slot))
		lru_unlink(r, slot);
	lru_push_head(r, slot);
	pthread_mutex_unlock(&r->lock);
}

/* lru_touch - a hit: move @slot to the head.  A slot that is not queued (the hit raced
 * with its eviction or invalidation) is left alone.  O(1), takes the policy lock. */
static void lru_touch(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (lru_queued(r, slot) && r->head != slot) {
		lru_unlink(r, slot);
		lru_push_head(r, slot);
	}
	pthread_mutex_unlock(&r->lock);
}

/* lru_remove - dequeue @slot if queued.  O(1), takes the policy lock. */
static void lru_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (lru_queued(r, slot))
		lru_unlink(r, slot);
	pthread_mutex_unlock(&r->lock);
}

/* lru_splice_to_head - move the run from @first (nearest the head) to the tail to the
 * head, in its order: O(1).  The run must not be the whole list. */
static void lru_splice_to_head(struct tc_repl *r, uint32_t first)
{
	uint32_t last = r->tail, before = r->prev[first];

	r->next[before] = TC_SLOT_NONE;
	r->tail = before;
	r->prev[first] = TC_SLOT_NONE;
	r->next[last] = r->head;
	r->prev[r->head] = last;
	r->head = first;
}

/* lru_victim - the least recently used slot that @can_evict accepts.  Walks from the
 * tail towards the head; refused slots keep their place, so a line that is dirty or
 * busy for a moment is the next victim once it may go, as exact LRU wants.  After
 * TC_REPL_MAX_REFUSALS refusals it gives up, and the refused run (the tail up to the
 * last one refused) moves to the head in one splice, so the next call looks at the
 * lines behind it instead of asking the same ones again: a cache full of dirty lines
 * costs each allocation at most TC_REPL_MAX_REFUSALS can_evict() calls, and a clean
 * line is found within resident / TC_REPL_MAX_REFUSALS + 1 calls.  Returns 0 and
 * *@slot (dequeued), or -ENOSPC.  Policy lock held. */
static int lru_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		      uint32_t *slot)
{
	uint32_t refused = 0, s, n;
	int rc = -ENOSPC;

	pthread_mutex_lock(&r->lock);
	for (s = r->tail, n = 0; s != TC_SLOT_NONE && n < r->resident; s = r->prev[s], n++) {
		if (can_evict && !can_evict(arg, s)) {
			if (++refused < TC_REPL_MAX_REFUSALS)
				continue;
			if (r->prev[s] != TC_SLOT_NONE)
				lru_splice_to_head(r, s);
			break;
		}
		lru_unlink(r, s);
		*slot = s;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* lru_mem - 8 bytes per slot (prev + next), no ghosts. */
static void lru_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = 0;
}

const struct tc_repl_ops tc_repl_lru = {
	.name = "lru",
	.create = lru_create,
	.destroy = lru_destroy,
	.insert = lru_insert,
	.touch = lru_touch,
	.remove = lru_remove,
	.victim = lru_victim,
	.mem = lru_mem,
};
