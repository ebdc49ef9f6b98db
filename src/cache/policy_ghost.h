/* SPDX-License-Identifier: MIT */
/*
 * policy_ghost.h - ghost key lists for the replacement policies that remember evicted
 * keys in order (ARC's B1 and B2, 2Q's A1out): up to TC_GSET_LISTS doubly linked
 * lists of keys drawn from one pool of @cap entries, with a chained hash for
 * membership.  Every operation is O(1) expected; no allocation after init.
 *
 * Memory: per entry a uint64 key, uint32 prev, next and hash-chain links and a uint8
 * list id (21 bytes), plus a uint32 bucket per entry rounded up to a power of two.
 *
 * Not thread-safe: the policy's own mutex protects it.
 */
#ifndef TC_POLICY_GHOST_H
#define TC_POLICY_GHOST_H

#include <stddef.h>
#include <stdint.h>

#define TC_GSET_LISTS 2
#define TC_GSET_NONE UINT32_MAX

struct tc_gset {
	uint64_t *key;       /* [cap] */
	uint32_t *prev;      /* [cap] towards the head (newest) */
	uint32_t *next;      /* [cap] towards the tail (oldest); free-list link when free */
	uint32_t *hnext;     /* [cap] hash chain */
	uint8_t *list;       /* [cap] list id */
	uint32_t *bucket;    /* [mask + 1] first entry of each chain */
	uint32_t mask;
	uint32_t cap;
	uint32_t free_head;  /* free entries, linked through next[] */
	uint32_t head[TC_GSET_LISTS], tail[TC_GSET_LISTS], size[TC_GSET_LISTS];
};

/* tc_gset_init - empty lists over a pool of @cap entries (may be 0: every push then
 * fails).  Returns 0 or -ENOMEM. */
int tc_gset_init(struct tc_gset *g, uint32_t cap);
void tc_gset_fini(struct tc_gset *g);
/* tc_gset_find - the entry holding @key, or TC_GSET_NONE. */
uint32_t tc_gset_find(const struct tc_gset *g, uint64_t key);
/* tc_gset_erase - drop entry @e (from tc_gset_find) from its list and the hash. */
void tc_gset_erase(struct tc_gset *g, uint32_t e);
/* tc_gset_pop_tail - drop the oldest key of @list; no-op on an empty list. */
void tc_gset_pop_tail(struct tc_gset *g, unsigned list);
/* tc_gset_push - @key becomes the newest of @list.  The caller makes room first
 * (pop_tail) and never pushes a key already present.  Returns 0, or -ENOSPC when the
 * pool is full (nothing changes). */
int tc_gset_push(struct tc_gset *g, unsigned list, uint64_t key);
/* tc_gset_total - keys in all lists. */
uint32_t tc_gset_total(const struct tc_gset *g);
/* tc_gset_mem - bytes allocated. */
size_t tc_gset_mem(const struct tc_gset *g);

#endif /* TC_POLICY_GHOST_H */
