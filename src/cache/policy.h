/* SPDX-License-Identifier: MIT */
/*
 * policy.h - replacement and admission policies behind small ops tables.
 *
 * Replacement (which resident line to evict):
 *   policy_lru.c     exact LRU: a doubly linked list under one policy mutex.  The
 *                    baseline: every hit takes that cache-wide lock.
 *   policy_s3fifo.c  S3-FIFO (Juncheng Yang et al., "FIFO queues are all you need for
 *                    cache eviction", SOSP'23): small FIFO (10 %), main FIFO, ghost
 *                    FIFO of evicted keys; a hit only bumps a 2-bit frequency in the
 *                    line's flags with an atomic op (no lock).
 *   policy_arc.c     ARC (Megiddo & Modha, FAST'03): T1/T2 resident LRUs, B1/B2
 *                    ghost LRUs, target p adapted on ghost hits.  Hits take the lock.
 *   policy_2q.c      full 2Q (Johnson & Shasha, VLDB'94): A1in FIFO (25 %), A1out
 *                    ghost FIFO (50 %), Am LRU.  Only Am hits take the lock.
 *   policy_sieve.c   SIEVE (Zhang et al., NSDI'24): one FIFO, a hand that spares
 *                    visited lines; a hit sets one bit without a lock.
 *   policy_wtinylfu.c  W-TinyLFU (Einziger et al., ACM ToS 2017): 1 % window LRU,
 *                    main SLRU 20/80, admission by a frequency sketch.  One lock.
 *                    wtinylfu-hc: the same, its window sized by Caffeine's hill
 *                    climber (Einziger et al., Middleware 2018).
 *   policy_lirs.c    LIRS (Jiang & Zhang, SIGMETRICS 2002): recency stack S of LIR,
 *                    resident and non-resident HIR entries (at most 2 x the lines),
 *                    resident HIR list Q (1 %).  One lock.
 *   policy_ghost.c   the ghost key lists ARC and 2Q share (policy_ghost.h), and the
 *                    queue arrays of policy_list.h.
 * Admission (whether a read miss deserves a fill), admission.c:
 *   always, and nhit: fill on the Nth access within a window, counted in a count-min
 *   sketch with periodic halving (the aging of TinyLFU, Einziger et al., ACM ToS 2017).
 * Sequential-stream detector, admission.c: a small table of recent streams per volume
 * (as bcache's sequential_cutoff); a request continuing a stream whose length reaches
 * the cutoff bypasses the cache.
 */
#ifndef TC_POLICY_H
#define TC_POLICY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "line.h"

struct tc_repl;

/* Key of a resident line: (vol << 32) | line_no. */
static inline uint64_t tc_line_key(uint8_t vol, uint32_t line_no)
{
	return ((uint64_t)vol << 32) | line_no;
}

/*
 * Refusals after which one victim() call gives up, in every policy.  A cache whose
 * lines are nearly all dirty (write-back) or busy answers an allocation at once, after
 * a bounded amount of work: the engine then writes around or skips the fill and kicks
 * the cleaner and a commit (alloc.c), which make lines evictable.  Without the bound a
 * walk past every dirty line on every miss made a small write-back cache spend most of
 * its CPU in can_evict().  256 is far more than the lines busy at once (requests in
 * flight) and small next to a cache's lines.
 */
#define TC_REPL_MAX_REFUSALS 256u

/* Evictability check supplied by the engine: true if @slot may be evicted now (clean,
 * not in use, not dirty in durable metadata).  Called with the allocator lock held. */
typedef bool (*tc_can_evict_fn)(void *arg, uint32_t slot);

struct tc_repl_ops {
	const char *name;  /* "lru", "s3fifo", "arc", "2q", "sieve", "wtinylfu", "lirs", "wtinylfu-hc" */
	/* Allocate state for @nslots slots of @lines (the engine's array; the policy may
	 * use the TC_LINE_POLICY_MASK bits of lines[i].flags).  Returns 0 or -ENOMEM. */
	int (*create)(struct tc_repl **out, struct tc_line *lines, uint32_t nslots);
	void (*destroy)(struct tc_repl *r);
	/* @slot was just filled for (lines[slot].vol, lines[slot].line_no).  The policy
	 * consults its ghosts for that key.  Allocator lock held. */
	void (*insert)(struct tc_repl *r, uint32_t slot);
	/* A hit on resident @slot.  No engine lock held: must be thread-safe against
	 * concurrent hits, inserts, removes and victim selection. */
	void (*touch)(struct tc_repl *r, uint32_t slot);
	/* @slot stops being resident for a reason other than eviction (invalidation,
	 * detach).  Allocator lock held.  After it returns, the slot is not queued. */
	void (*remove)(struct tc_repl *r, uint32_t slot);
	/* Choose and dequeue a victim among resident slots for which @can_evict says yes;
	 * remember its key as a ghost where the algorithm has ghosts (read it before
	 * calling @can_evict: a slot it accepts is unmapped on the spot).  Calls
	 * @can_evict at most TC_REPL_MAX_REFUSALS times, and refused slots must not
	 * hide the ones behind them from the next call (they are moved aside).
	 * Allocator lock held.  Returns 0 and *@slot, or -ENOSPC. */
	int (*victim)(struct tc_repl *r, tc_can_evict_fn can_evict, void *arg, uint32_t *slot);
	/* Optional (NULL: never called).  A miss on @key (tc_line_key()) is about to
	 * take a slot: victim() if none is free, then insert() of that slot.  Policies
	 * whose choice of victim depends on the incoming key (ARC: in B2 or not; 2Q: in
	 * A1out or not) remember it here.  The allocation may still fail (victim()
	 * -ENOSPC): insert() must check that its slot holds the remembered key.
	 * Allocator lock held. */
	void (*miss)(struct tc_repl *r, uint64_t key);
	/* Memory: bytes per slot of per-line state, and total bytes of ghost state. */
	void (*mem)(struct tc_repl *r, size_t *per_slot, size_t *ghost_total);
};

extern const struct tc_repl_ops tc_repl_lru;
extern const struct tc_repl_ops tc_repl_s3fifo;
extern const struct tc_repl_ops tc_repl_arc;
extern const struct tc_repl_ops tc_repl_2q;
extern const struct tc_repl_ops tc_repl_sieve;
extern const struct tc_repl_ops tc_repl_wtinylfu;
extern const struct tc_repl_ops tc_repl_lirs;
extern const struct tc_repl_ops tc_repl_wtinylfu_hc;

/* tc_repl_ops_get - ops for enum tc_replacement @id, or NULL. */
const struct tc_repl_ops *tc_repl_ops_get(unsigned id);

/* ---- admission ---------------------------------------------------------------- */

/*
 * Count-min sketch of recent accesses per key (4 rows of 8-bit counters, halved every
 * @window accesses).  Thread-safe without locks (relaxed atomics: an occasional lost
 * increment only delays a promotion).
 */
struct tc_admit {
	uint8_t *counters;       /* 4 * width */
	uint32_t width;          /* power of two */
	uint64_t window;         /* accesses between halvings */
	uint64_t accesses;       /* atomic */
	pthread_mutex_t age_lock;/* held (trylock) only while halving */
};

/* tc_admit_init - sketch sized for @nslots cache lines (width = next power of two of
 * 4 * nslots, at least 1024; window = 8 * nslots).  Returns 0 or -ENOMEM. */
int tc_admit_init(struct tc_admit *a, uint32_t nslots);
void tc_admit_fini(struct tc_admit *a);
/* tc_admit_access - count an access to @key and return the estimated count (1..255)
 * including this one. */
unsigned tc_admit_access(struct tc_admit *a, uint64_t key);
size_t tc_admit_mem(const struct tc_admit *a);  /* bytes */

#define TC_SEQ_STREAMS 16
#define TC_SEQ_REORDER 4   /* a stream tolerates reordering within 4 request lengths */
/*
 * Sequential detector of one volume.  A request starting where a tracked stream ended
 * extends it; otherwise it replaces the least recently used stream.  Thread-safety: a
 * mutex taken with trylock; a request that finds it busy is treated as random (never
 * blocks the I/O path).
 */
struct tc_seq {
	pthread_mutex_t lock;
	struct { uint64_t end, len, last_use; } s[TC_SEQ_STREAMS];
	uint64_t clock;
};

void tc_seq_init(struct tc_seq *q);
void tc_seq_fini(struct tc_seq *q);
/* tc_seq_check - record a request [@off, @off + @len) (bytes) and return true if it is
 * part of a stream whose length, this request included, is >= @cutoff bytes.
 * @cutoff == 0 disables detection (returns false without recording). */
bool tc_seq_check(struct tc_seq *q, uint64_t off, uint64_t len, uint64_t cutoff);

#endif /* TC_POLICY_H */
