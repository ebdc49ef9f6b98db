/* SPDX-License-Identifier: MIT */
/*
 * policy_sieve.c - SIEVE replacement: one FIFO queue and a moving hand.
 *
 * Source: Yazhuo Zhang, Juncheng Yang, Yao Yue, Ymir Vigfusson, K. V. Rashmi, "SIEVE
 * is simpler than LRU: an efficient turn-key eviction algorithm for web caches",
 * NSDI'24, Figure 3 (the algorithm); behaviour as libCacheSim's Sieve.c (J. Yang et
 * al.): a hit sets the object's visited bit, insertion is at the head with the bit
 * clear, and eviction moves the hand from where it stopped (the tail at first)
 * towards the head, clearing visited bits, and evicts the first object whose bit is
 * clear; the hand then rests on that object's newer neighbour and wraps to the tail
 * when it passes the head.
 *
 *     head (newest)                                     tail (oldest)
 *       [s7] <-> [s2] <-> [s9*] <-> [s4] <-> [s0*] <-> [s5]
 *                           ^ hand walks this way <------ (starts at tail)
 *       * = visited: spared, bit cleared, hand moves on
 *
 * Unlike FIFO-reinsertion (CLOCK), a spared object keeps its place: new objects stay
 * near the head while old popular ones stay behind the hand, which is what sifts
 * one-hit wonders out quickly.
 *
 * Per-slot state: uint32 prev[] and next[] (8 bytes) plus bit 4 of
 * lines[slot].flags (visited).  No ghosts.
 *
 * Thread-safety: one mutex for the queue and the hand (insert, remove, victim; the
 * engine holds its allocator lock around them too).  touch() takes no lock: it sets
 * the visited bit with an atomic OR, and skips the write when the bit is already set
 * (a hot line costs one load).
 *
 * Eviction cost: each step of the hand either clears a bit a hit set, or ends the
 * call, so a walk is O(1) amortized; can_evict() refusals (dirty, in use) leave the
 * line in place and move the hand past it, at most TC_REPL_MAX_REFUSALS per call, and
 * a call stops after two full turns (every bit cleared, every line refused).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "policy.h"
#include "policy_list.h"

#define SV_VISITED 0x10u
_Static_assert((SV_VISITED & ~TC_LINE_POLICY_MASK) == 0, "SIEVE bit in policy mask");

struct tc_repl {
	pthread_mutex_t lock;  /* q, prev, next, hand */
	struct tc_line *lines;
	uint32_t *prev, *next;
	struct tc_rq q;
	uint32_t hand;         /* next slot to examine; TC_SLOT_NONE = start at the tail */
	uint32_t nslots;
	uint64_t rejected;     /* can_evict() refusals since create */
};

static int sv_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
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
	r->lines = lines;
	r->nslots = nslots;
	r->hand = TC_SLOT_NONE;
	tc_rq_init(&r->q);
	*out = r;
	return 0;
}

static void sv_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	tc_rq_policy_fini(&r->lock, r->prev, r->next);
	free(r);
}

/* sv_unlink - dequeue @slot, moving the hand off it first (to its newer neighbour,
 * as libCacheSim's Sieve_remove_obj does). */
static void sv_unlink(struct tc_repl *r, uint32_t slot)
{
	if (r->hand == slot)
		r->hand = r->prev[slot];
	tc_rq_unlink(r->prev, r->next, &r->q, slot);
}

/* sv_insert - @slot at the head, not visited.  O(1); takes the mutex. */
static void sv_insert(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot))
		sv_unlink(r, slot);
	tc_rq_set_bits(&r->lines[slot], 0);
	tc_rq_push_head(r->prev, r->next, &r->q, slot);
	pthread_mutex_unlock(&r->lock);
}

/* sv_touch - a hit: set the visited bit.  Lock-free; a set bit is not written again.
 * A hit racing with the slot's eviction may leave the bit on the free slot: insert()
 * clears it. */
static void sv_touch(struct tc_repl *r, uint32_t slot)
{
	uint8_t *f = &r->lines[slot].flags;

	if (!(__atomic_load_n(f, __ATOMIC_RELAXED) & SV_VISITED))
		__atomic_fetch_or(f, SV_VISITED, __ATOMIC_RELAXED);
}

static void sv_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (tc_rq_queued(r->prev, slot)) {
		sv_unlink(r, slot);
		tc_rq_set_bits(&r->lines[slot], 0);
	}
	pthread_mutex_unlock(&r->lock);
}

/* sv_victim - move the hand: a visited slot loses its bit and is passed; the first
 * unvisited slot that @can_evict accepts is evicted and the hand rests on its newer
 * neighbour.  A refused slot stays where it is (bit clear) and is passed.  Returns 0
 * and *@slot, or -ENOSPC after TC_REPL_MAX_REFUSALS refusals or two full turns.
 * Takes the mutex. */
static int sv_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		     uint32_t *slot)
{
	uint64_t steps, max_steps = 2 * (uint64_t)r->q.size + 2;
	uint32_t refused = 0;
	int rc = -ENOSPC;

	pthread_mutex_lock(&r->lock);
	for (steps = 0; steps < max_steps && r->q.size; steps++) {
		uint32_t s = r->hand == TC_SLOT_NONE ? r->q.tail : r->hand;
		uint8_t *f = &r->lines[s].flags;

		if (__atomic_load_n(f, __ATOMIC_RELAXED) & SV_VISITED) {
			__atomic_fetch_and(f, (uint8_t)~SV_VISITED, __ATOMIC_RELAXED);
			r->hand = r->prev[s];
			continue;
		}
		if (can_evict && !can_evict(arg, s)) {
			r->rejected++;
			r->hand = r->prev[s];
			if (++refused >= TC_REPL_MAX_REFUSALS)
				break;
			continue;
		}
		sv_unlink(r, s);
		tc_rq_set_bits(&r->lines[s], 0);
		*slot = s;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* sv_mem - 8 bytes per slot (prev + next; the visited bit lives in tc_line), no
 * ghosts. */
static void sv_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = 0;
}

const struct tc_repl_ops tc_repl_sieve = {
	.name = "sieve",
	.create = sv_create,
	.destroy = sv_destroy,
	.insert = sv_insert,
	.touch = sv_touch,
	.remove = sv_remove,
	.victim = sv_victim,
	.mem = sv_mem,
};

/* ---- inspection (tests; not part of policy.h) ------------------------------------ */

/*
 * tc_repl_sieve_state - queue position of @slot from the head (0 = newest) or
 * -ENOENT, and its visited bit in *@visited; the hand's slot (TC_SLOT_NONE = tail)
 * in *@hand.  Pointers may be NULL.  O(queue); takes the mutex.
 */
int tc_repl_sieve_state(struct tc_repl *r, uint32_t slot, bool *visited, uint32_t *hand);
int tc_repl_sieve_state(struct tc_repl *r, uint32_t slot, bool *visited, uint32_t *hand)
{
	int pos = -ENOENT, i = 0;

	pthread_mutex_lock(&r->lock);
	for (uint32_t s = r->q.head; s != TC_SLOT_NONE; s = r->next[s], i++)
		if (s == slot) {
			pos = i;
			break;
		}
	if (visited)
		*visited = tc_rq_bits(&r->lines[slot]) & SV_VISITED;
	if (hand)
		*hand = r->hand;
	pthread_mutex_unlock(&r->lock);
	return pos;
}
