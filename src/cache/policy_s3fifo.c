/* SPDX-License-Identifier: MIT */
/*
 * policy_s3fifo.c - S3-FIFO replacement: three FIFO queues, lock-free hits.
 *
 * Source: Juncheng Yang, Yazhuo Zhang, Ziyue Qiu, Yao Yue, Rashmi Vinayak, "FIFO
 * queues are all you need for cache eviction", SOSP'23, Algorithm 1; the parameters
 * follow its reference implementation in libCacheSim (S3FIFO.c): small queue 10 % of
 * the cache, ghost queue as large as the main queue (90 %), 2-bit frequency, S's tail
 * evicted while S holds more than 10 %; the move-to-main threshold is discussed at
 * S3_MOVE_TO_MAIN below.
 *
 *              insert (key not in G)                         evicted from S
 *                   |                                    (key remembered in G)
 *                   v                                              ^
 *   S (small) [head ......................... tail] --freq == 0---+
 *     ~10 %                                    |
 *                                         freq >= 2: move to M's head, freq = 0
 *                                              |
 *              insert (key in G)               v
 *                   |                          |
 *                   v                          v
 *   M (main)  [head ........................................ tail] --freq == 0--> evicted
 *     ~90 %      ^                                            |
 *                +------------ freq > 0: reinsert, freq - 1 --+
 *
 *   G (ghost) [newest ........ oldest]  keys only, as many as M's capacity; a miss whose
 *                                        key is in G goes straight to M.
 *
 * Why: most blocks of a block workload are touched once (one-hit wonders).  S filters
 * them out after a short stay, so a long scan only churns S and the hot lines in M
 * survive it; G catches lines that S dropped too early.  A hit only bumps a 2-bit
 * counter in the line's flags with an atomic compare-and-swap, never a list: unlike
 * LRU (policy_lru.c) there is no cache-wide lock on the hit path.  The price is that
 * eviction walks queues and may reinsert objects, which costs O(1) amortized.
 *
 * Per-slot state: uint32 prev[] and next[] (8 bytes; both queues are threaded through
 * the same arrays, a slot is in at most one) plus, in TC_LINE_POLICY_MASK of
 * lines[slot].flags:  bit 6 = queue (0 = S, 1 = M), bits 5..4 = frequency 0..3.
 * Ghost state: a ring of uint64 keys (cap * 5/4 entries, 8 bytes each) and an
 * open-addressing (linear probing) table of uint32 ring positions, load factor <= 1/2,
 * for membership: about 19 bytes per cache slot in all, reported by mem().
 *
 * Thread-safety: one mutex protects the queues and the ghosts; insert, remove and
 * victim take it (the engine also holds its allocator lock around them).  touch()
 * takes no lock: it only changes the frequency bits, with a CAS on the flags byte that
 * preserves every other bit.  The queue bit is written only under the mutex.
 *
 * Deviation from libCacheSim: can_evict() may refuse a line (dirty, in use).  A refused
 * line goes back to the head of its queue (counted in rejected); a queue from which a
 * whole pass has been refused is left for the other one, and victim() gives up with
 * -ENOSPC once both are exhausted, so it never calls can_evict() more than twice per
 * resident slot.  It also gives up after TC_REPL_MAX_REFUSALS (policy.h) refusals in
 * one call, so that a cache whose lines are nearly all dirty answers at once; the
 * refused lines went to the heads, so the next call looks at the lines behind them.
 * A victim's key is read before can_evict() is asked, because a slot it accepts is
 * unmapped on the spot.  And the engine calls victim() before insert(), so a missing
 * key is looked up in G after the victim's key joined it (libCacheSim looks first):
 * only when the missing key was the very oldest ghost does that cost a ghost hit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"

#define S3_UNQUEUED (TC_SLOT_NONE - 1)   /* prev[] value of a slot in no queue */

#define S3_FREQ_SHIFT 4
#define S3_FREQ_MASK 0x30u
#define S3_FREQ_MAX 3u
#define S3_IN_MAIN 0x40u
_Static_assert(((S3_FREQ_MASK | S3_IN_MAIN) & ~TC_LINE_POLICY_MASK) == 0,
	       "S3-FIFO bits must stay inside TC_LINE_POLICY_MASK");

/*
 * A tail object of S with at least this frequency (hits while in S) moves to M.  Two
 * hits, as in the paper's Algorithm 1 ("if t.freq > 1") and libCacheSim's S3FIFO.c
 * ("move-to-main-threshold=2").  Measured on the CloudPhysics trace at 4 KiB pages and
 * a cache of 10 % of its pages (tests/unit/test_policy_s3fifo.c): miss ratio .8110
 * with 2, exactly libCacheSim's published figure, against .8204 with 1.
 */
#define S3_MOVE_TO_MAIN 2u

#define GHOST_NOKEY UINT64_MAX            /* empty ring entry; no key reaches 2^40 */
#define GHOST_NOPOS UINT32_MAX            /* empty table entry */

enum { QS = 0, QM = 1 };

struct s3_queue {
	uint32_t head, tail;   /* head = newest, tail = next to leave; TC_SLOT_NONE if empty */
	uint32_t size;
};

/*
 * The ghost FIFO: keys in a ring, oldest at tail, newest just before head.  A ghost
 * hit erases its key and leaves a hole that no longer counts against @cap, as in
 * libCacheSim where the ghost is a FIFO cache of its own; the ring has room for
 * GHOST_SLACK holes beyond @cap keys, and only when holes exceed that is a present key
 * forgotten early.
 */
struct s3_ghost {
	uint64_t *ring;        /* [rsize] keys, GHOST_NOKEY in holes and unused entries */
	uint32_t rsize;        /* cap + slack */
	uint32_t head, tail;   /* next entry to write; oldest entry in use */
	uint32_t used;         /* entries from tail to head, holes included */
	uint32_t cap;          /* most keys remembered: M's capacity */
	uint32_t count;        /* keys present */
	uint32_t *table;       /* [mask + 1] ring positions, GHOST_NOPOS = empty */
	uint32_t mask;
};

/* Ring entries beyond the capacity, for holes: a quarter of the capacity. */
#define GHOST_SLACK(cap) ((cap) / 4 + 1)

struct tc_repl {
	pthread_mutex_t lock;  /* queues, links, ghosts, counters */
	struct tc_line *lines; /* the engine's array; we own TC_LINE_POLICY_MASK bits */
	uint32_t *prev;        /* [nslots] towards the head; S3_UNQUEUED if not queued */
	uint32_t *next;        /* [nslots] towards the tail */
	struct s3_queue q[2];  /* QS, QM */
	uint32_t nslots;
	uint32_t small_target; /* S's share: 10 % of nslots rounded up, at least 1 */
	struct s3_ghost ghost;
	uint64_t rejected;     /* can_evict() refusals since create */
};

/* ---- flags byte ----------------------------------------------------------------- */

static unsigned s3_freq(uint8_t flags)
{
	return (flags & S3_FREQ_MASK) >> S3_FREQ_SHIFT;
}

/* s3_set_bits - replace the policy bits of @slot by @bits, atomically with respect to
 * the engine's bits and to concurrent touch(). */
static void s3_set_bits(struct tc_repl *r, uint32_t slot, uint8_t bits)
{
	uint8_t *f = &r->lines[slot].flags;
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED), new;

	do
		new = (uint8_t)((old & ~TC_LINE_POLICY_MASK) | bits);
	while (!__atomic_compare_exchange_n(f, &old, new, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
}

/* s3_freq_dec - frequency - 1 (caller saw it > 0; touch() only raises it). */
static void s3_freq_dec(struct tc_repl *r, uint32_t slot)
{
	uint8_t *f = &r->lines[slot].flags;
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED), new;

	do {
		if (s3_freq(old) == 0)
			return;
		new = (uint8_t)(old - (1u << S3_FREQ_SHIFT));
	} while (!__atomic_compare_exchange_n(f, &old, new, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/* ---- queues (lock held) --------------------------------------------------------- */

static bool s3_queued(const struct tc_repl *r, uint32_t slot)
{
	return r->prev[slot] != S3_UNQUEUED;
}

static int s3_queue_of(const struct tc_repl *r, uint32_t slot)
{
	return (__atomic_load_n(&r->lines[slot].flags, __ATOMIC_RELAXED) & S3_IN_MAIN) ? QM : QS;
}

static void s3_unlink(struct tc_repl *r, int qi, uint32_t slot)
{
	struct s3_queue *q = &r->q[qi];
	uint32_t p = r->prev[slot], n = r->next[slot];

	if (p != TC_SLOT_NONE)
		r->next[p] = n;
	else
		q->head = n;
	if (n != TC_SLOT_NONE)
		r->prev[n] = p;
	else
		q->tail = p;
	r->prev[slot] = S3_UNQUEUED;
	r->next[slot] = TC_SLOT_NONE;
	q->size--;
}

static void s3_push_head(struct tc_repl *r, int qi, uint32_t slot)
{
	struct s3_queue *q = &r->q[qi];

	r->prev[slot] = TC_SLOT_NONE;
	r->next[slot] = q->head;
	if (q->head != TC_SLOT_NONE)
		r->prev[q->head] = slot;
	else
		q->tail = slot;
	q->head = slot;
	q->size++;
}

/* ---- ghosts (lock held) --------------------------------------------------------- */

/* Finalizer of MurmurHash3 (Austin Appleby): a full-avalanche 64-bit mix. */
static uint64_t s3_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static uint32_t ghost_home(const struct s3_ghost *g, uint64_t key)
{
	return (uint32_t)s3_mix(key) & g->mask;
}

/* ghost_lookup - table index holding @key, or GHOST_NOPOS. */
static uint32_t ghost_lookup(const struct s3_ghost *g, uint64_t key)
{
	if (!g->cap)
		return GHOST_NOPOS;
	for (uint32_t h = ghost_home(g, key);; h = (h + 1) & g->mask) {
		uint32_t pos = g->table[h];

		if (pos == GHOST_NOPOS)
			return GHOST_NOPOS;
		if (g->ring[pos] == key)
			return h;
	}
}

/* ghost_erase - drop table entry @h and its ring key.  Linear probing with backward
 * shift (Knuth, TAOCP vol. 3, 6.4 Algorithm R): no tombstones, so lookups stay short. */
static void ghost_erase(struct s3_ghost *g, uint32_t h)
{
	g->ring[g->table[h]] = GHOST_NOKEY;
	g->count--;
	for (;;) {
		uint32_t j = h;

		g->table[h] = GHOST_NOPOS;
		for (;;) {
			uint32_t home;

			j = (j + 1) & g->mask;
			if (g->table[j] == GHOST_NOPOS)
				return;
			home = ghost_home(g, g->ring[g->table[j]]);
			/* The entry at j may stay if its home lies cyclically in (h, j]. */
			if (h <= j ? (h < home && home <= j) : (h < home || home <= j))
				continue;
			g->table[h] = g->table[j];
			h = j;
			break;
		}
	}
}

/* ghost_drop_tail - forget the oldest ring entry (a key or a hole). */
static void ghost_drop_tail(struct s3_ghost *g)
{
	if (g->ring[g->tail] != GHOST_NOKEY)
		ghost_erase(g, ghost_lookup(g, g->ring[g->tail]));
	g->tail = g->tail + 1 == g->rsize ? 0 : g->tail + 1;
	g->used--;
}

/* ghost_add - remember @key as the newest ghost, forgetting the oldest beyond cap. */
static void ghost_add(struct s3_ghost *g, uint64_t key)
{
	uint32_t h;

	if (!g->cap)
		return;
	h = ghost_lookup(g, key);
	if (h != GHOST_NOPOS)
		ghost_erase(g, h);
	while (g->used && g->ring[g->tail] == GHOST_NOKEY)
		ghost_drop_tail(g);           /* holes at the tail cost nothing */
	while (g->count >= g->cap || g->used == g->rsize)
		ghost_drop_tail(g);
	g->ring[g->head] = key;
	for (h = ghost_home(g, key); g->table[h] != GHOST_NOPOS; h = (h + 1) & g->mask)
		;
	g->table[h] = g->head;
	g->count++;
	g->used++;
	g->head = g->head + 1 == g->rsize ? 0 : g->head + 1;
}

/* ghost_init - an empty ghost FIFO of @cap keys (cap < 2^31).  Table: a power of two
 * >= 2 * cap entries, so linear probing stays at load factor <= 1/2. */
static int ghost_init(struct s3_ghost *g, uint32_t cap)
{
	uint64_t tsize = 1;

	while (tsize < 2 * (uint64_t)cap)
		tsize <<= 1;
	memset(g, 0, sizeof(*g));
	g->cap = cap;
	g->rsize = cap + GHOST_SLACK(cap);
	g->mask = (uint32_t)(tsize - 1);
	g->ring = malloc(sizeof(uint64_t) * g->rsize);
	g->table = malloc(sizeof(uint32_t) * tsize);
	if (!g->ring || !g->table) {
		free(g->ring);
		free(g->table);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < g->rsize; i++)
		g->ring[i] = GHOST_NOKEY;
	for (uint64_t i = 0; i < tsize; i++)
		g->table[i] = GHOST_NOPOS;
	return 0;
}

/* ---- ops ------------------------------------------------------------------------ */

/* s3_create - empty queues for @nslots slots of @lines: S's share is 10 % rounded up
 * (at least 1 slot), G remembers 90 % rounded down (M's capacity).  Clears the policy
 * bits of every line.  Returns 0, -EINVAL (@nslots >= 2^31, beyond the ghost ring's
 * uint32 positions) or -ENOMEM.  Not thread-safe (nothing else can hold @out yet). */
static int s3_create(struct tc_repl **out, struct tc_line *lines, uint32_t nslots)
{
	struct tc_repl *r;

	if (nslots >= (1u << 31))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->lines = lines;
	r->nslots = nslots;
	r->small_target = (uint32_t)(((uint64_t)nslots + 9) / 10);
	if (!r->small_target)
		r->small_target = 1;
	r->prev = malloc(sizeof(uint32_t) * (nslots ? nslots : 1));
	r->next = malloc(sizeof(uint32_t) * (nslots ? nslots : 1));
	if (!r->prev || !r->next)
		goto fail;
	if (ghost_init(&r->ghost, (uint32_t)((uint64_t)nslots * 9 / 10)))
		goto fail;
	if (pthread_mutex_init(&r->lock, NULL) != 0) {
		free(r->ghost.ring);
		free(r->ghost.table);
		goto fail;
	}
	for (uint32_t i = 0; i < nslots; i++) {
		r->prev[i] = S3_UNQUEUED;
		r->next[i] = TC_SLOT_NONE;
		s3_set_bits(r, i, 0);
	}
	for (int qi = QS; qi <= QM; qi++)
		r->q[qi].head = r->q[qi].tail = TC_SLOT_NONE;
	*out = r;
	return 0;
fail:
	free(r->prev);
	free(r->next);
	free(r);
	return -ENOMEM;
}

static void s3_destroy(struct tc_repl *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r->ghost.ring);
	free(r->ghost.table);
	free(r->prev);
	free(r->next);
	free(r);
}

/* s3_insert - @slot was filled for (lines[slot].vol, lines[slot].line_no): to M's head
 * if that key is a ghost (the ghost is consumed), else to S's head; frequency 0.
 * Re-inserting a queued slot first dequeues it.  O(1) expected; takes the mutex. */
static void s3_insert(struct tc_repl *r, uint32_t slot)
{
	const struct tc_line *l = &r->lines[slot];
	uint32_t h;
	int qi = QS;

	pthread_mutex_lock(&r->lock);
	if (s3_queued(r, slot))
		s3_unlink(r, s3_queue_of(r, slot), slot);
	h = ghost_lookup(&r->ghost, tc_line_key(l->vol, l->line_no));
	if (h != GHOST_NOPOS) {
		ghost_erase(&r->ghost, h);
		qi = QM;
	}
	s3_set_bits(r, slot, qi == QM ? S3_IN_MAIN : 0);
	s3_push_head(r, qi, slot);
	pthread_mutex_unlock(&r->lock);
}

/* s3_touch - a hit: frequency + 1, saturating at 3.  Lock-free (CAS loop on the flags
 * byte, other bits preserved); a saturated counter costs one load and no write.  A hit
 * racing with the slot's eviction may leave a count on the free slot: insert resets it. */
static void s3_touch(struct tc_repl *r, uint32_t slot)
{
	uint8_t *f = &r->lines[slot].flags;
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED), new;

	do {
		if (s3_freq(old) >= S3_FREQ_MAX)
			return;
		new = (uint8_t)(old + (1u << S3_FREQ_SHIFT));
	} while (!__atomic_compare_exchange_n(f, &old, new, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/* s3_remove - dequeue @slot (invalidation, detach) without making it a ghost.  O(1). */
static void s3_remove(struct tc_repl *r, uint32_t slot)
{
	pthread_mutex_lock(&r->lock);
	if (s3_queued(r, slot)) {
		s3_unlink(r, s3_queue_of(r, slot), slot);
		s3_set_bits(r, slot, 0);
	}
	pthread_mutex_unlock(&r->lock);
}

/* s3_pick_queue - which tail to examine next: S while it holds its 10 % share (or M is
 * empty), else M; a queue whose every object @can_evict refused in this call (@rej
 * >= its size) is skipped.  -1 when both are exhausted. */
static int s3_pick_queue(const struct tc_repl *r, const uint32_t rej[2])
{
	bool s_ok = r->q[QS].size > 0 && rej[QS] < r->q[QS].size;
	bool m_ok = r->q[QM].size > 0 && rej[QM] < r->q[QM].size;

	if (r->q[QS].size >= r->small_target || r->q[QM].size == 0)
		return s_ok ? QS : m_ok ? QM : -1;
	return m_ok ? QM : s_ok ? QS : -1;
}

/* s3_victim - Algorithm 1 of the SOSP'23 paper, one eviction per call:
 *   from S: tail with freq >= S3_MOVE_TO_MAIN moves to M's head (freq 0); else it is
 *           evicted and its key becomes the newest ghost;
 *   from M: tail with freq > 0 goes back to M's head with freq - 1; else it is evicted.
 * A tail that @can_evict refuses goes to the head of its own queue.  Returns 0 and
 * *@slot (dequeued), or -ENOSPC when no resident slot is evictable or
 * TC_REPL_MAX_REFUSALS were refused.  Amortized O(1); can_evict() runs at most twice
 * per resident slot and at most TC_REPL_MAX_REFUSALS times in all.  Takes the mutex. */
static int s3_victim(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg,
		     uint32_t *slot)
{
	uint32_t rej[2] = { 0, 0 };
	uint64_t steps, max_steps;
	int rc = -ENOSPC;

	pthread_mutex_lock(&r->lock);
	/* Moves and decrements are bounded by 4 per object (S->M, then freq 3..1) unless
	 * hits keep raising counters during the walk; the cap guards against that. */
	max_steps = 8 * ((uint64_t)r->q[QS].size + r->q[QM].size) + 8;
	for (steps = 0; steps < max_steps; steps++) {
		int qi = s3_pick_queue(r, rej);
		uint32_t s;
		uint64_t key;
		unsigned freq;

		if (qi < 0)
			break;
		s = r->q[qi].tail;
		freq = s3_freq(__atomic_load_n(&r->lines[s].flags, __ATOMIC_RELAXED));
		if (qi == QS && freq >= S3_MOVE_TO_MAIN) {
			s3_unlink(r, QS, s);
			s3_set_bits(r, s, S3_IN_MAIN);
			s3_push_head(r, QM, s);
			continue;
		}
		if (qi == QM && freq > 0) {
			s3_unlink(r, QM, s);
			s3_freq_dec(r, s);
			s3_push_head(r, QM, s);
			continue;
		}
		s3_unlink(r, qi, s);
		/* The key first: an accepted slot is unmapped by can_evict() itself (its vol
		 * and line_no cleared), so afterwards it names no line. */
		key = tc_line_key(r->lines[s].vol, r->lines[s].line_no);
		if (can_evict && !can_evict(arg, s)) {
			rej[qi]++;
			r->rejected++;
			s3_push_head(r, qi, s);
			if (rej[QS] + rej[QM] >= TC_REPL_MAX_REFUSALS)
				break;
			continue;
		}
		if (qi == QS)
			ghost_add(&r->ghost, key);
		s3_set_bits(r, s, 0);
		*slot = s;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* s3_mem - 8 bytes per slot (prev + next; the flag bits live in tc_line); ghosts:
 * 8 bytes per ring entry plus 4 per table entry. */
static void s3_mem(struct tc_repl *r, size_t *per_slot, size_t *ghost_total)
{
	*per_slot = 2 * sizeof(uint32_t);
	*ghost_total = sizeof(uint64_t) * (size_t)r->ghost.rsize +
		       sizeof(uint32_t) * ((size_t)r->ghost.mask + 1);
}

const struct tc_repl_ops tc_repl_s3fifo = {
	.name = "s3fifo",
	.create = s3_create,
	.destroy = s3_destroy,
	.insert = s3_insert,
	.touch = s3_touch,
	.remove = s3_remove,
	.victim = s3_victim,
	.mem = s3_mem,
};

/* ---- inspection (tests and debugging; not part of policy.h) --------------------- */

/*
 * tc_repl_s3fifo_slot - where @slot is: 0 = S, 1 = M, -ENOENT = in no queue; its
 * frequency (0..3) in *@freq if non-NULL.  Takes the mutex.
 */
int tc_repl_s3fifo_slot(struct tc_repl *r, uint32_t slot, unsigned *freq);
int tc_repl_s3fifo_slot(struct tc_repl *r, uint32_t slot, unsigned *freq)
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = s3_queued(r, slot) ? s3_queue_of(r, slot) : -ENOENT;
	if (freq)
		*freq = s3_freq(__atomic_load_n(&r->lines[slot].flags, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/*
 * tc_repl_s3fifo_check - verify the invariants: both queues are well-linked lists of
 * their recorded sizes, every queued slot is in exactly one queue and carries that
 * queue's bit, unqueued slots are marked so, every ghost is findable and counted.
 * Fills the sizes of S, M and G, and the can_evict refusals so far (any pointer may be
 * NULL).  Returns 0, -EUCLEAN on the first broken invariant, or -ENOMEM.  Takes the
 * mutex; O(nslots + ghost table).
 */
int tc_repl_s3fifo_check(struct tc_repl *r, uint32_t *nsmall, uint32_t *nmain,
			 uint32_t *nghost, uint64_t *rejected);
int tc_repl_s3fifo_check(struct tc_repl *r, uint32_t *nsmall, uint32_t *nmain,
			 uint32_t *nghost, uint64_t *rejected)
{
	uint8_t *seen = calloc(r->nslots ? r->nslots : 1, 1);
	const struct s3_ghost *g = &r->ghost;
	uint32_t ng = 0;
	int rc = 0;

	if (!seen)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	for (int qi = QS; qi <= QM && !rc; qi++) {
		uint32_t n = 0, p = TC_SLOT_NONE;

		for (uint32_t s = r->q[qi].head; s != TC_SLOT_NONE; p = s, s = r->next[s]) {
			if (s >= r->nslots || seen[s] || r->prev[s] != p ||
			    s3_queue_of(r, s) != qi || ++n > r->q[qi].size) {
				rc = -EUCLEAN;
				break;
			}
			seen[s] = 1;
		}
		if (!rc && (n != r->q[qi].size || r->q[qi].tail != p))
			rc = -EUCLEAN;
	}
	for (uint32_t s = 0; s < r->nslots && !rc; s++)
		if (!seen[s] && s3_queued(r, s))
			rc = -EUCLEAN;
	for (uint32_t h = 0; h <= g->mask && !rc; h++) {
		uint32_t pos = g->table[h];

		if (pos == GHOST_NOPOS)
			continue;
		if (pos >= g->rsize || g->ring[pos] == GHOST_NOKEY ||
		    ghost_lookup(g, g->ring[pos]) != h)
			rc = -EUCLEAN;
		ng++;
	}
	if (!rc && ng != g->count)
		rc = -EUCLEAN;
	if (nsmall)
		*nsmall = r->q[QS].size;
	if (nmain)
		*nmain = r->q[QM].size;
	if (nghost)
		*nghost = g->count;
	if (rejected)
		*rejected = r->rejected;
	pthread_mutex_unlock(&r->lock);
	free(seen);
	return rc;
}
