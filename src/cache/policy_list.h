/* SPDX-License-Identifier: MIT */
/*
 * policy_list.h - resident-slot queues threaded through two uint32 arrays indexed by
 * slot (prev[], next[]), as policy_lru.c and policy_s3fifo.c keep theirs: head =
 * newest, tail = next to leave; several queues may share the arrays (a slot is in at
 * most one).  A slot in no queue has prev[slot] == TC_RQ_UNQUEUED.  Static inline,
 * O(1), no locking (the policy's mutex is held).
 */
#ifndef TC_POLICY_LIST_H
#define TC_POLICY_LIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "line.h"

#define TC_RQ_UNQUEUED (TC_SLOT_NONE - 1)

struct tc_rq {
	uint32_t head, tail;   /* TC_SLOT_NONE when empty */
	uint32_t size;
};

static inline void tc_rq_init(struct tc_rq *q)
{
	q->head = q->tail = TC_SLOT_NONE;
	q->size = 0;
}

static inline bool tc_rq_queued(const uint32_t *prev, uint32_t slot)
{
	return prev[slot] != TC_RQ_UNQUEUED;
}

static inline void tc_rq_unlink(uint32_t *prev, uint32_t *next, struct tc_rq *q,
				uint32_t slot)
{
	uint32_t p = prev[slot], n = next[slot];

	if (p != TC_SLOT_NONE)
		next[p] = n;
	else
		q->head = n;
	if (n != TC_SLOT_NONE)
		prev[n] = p;
	else
		q->tail = p;
	prev[slot] = TC_RQ_UNQUEUED;
	next[slot] = TC_SLOT_NONE;
	q->size--;
}

static inline void tc_rq_push_head(uint32_t *prev, uint32_t *next, struct tc_rq *q,
				   uint32_t slot)
{
	prev[slot] = TC_SLOT_NONE;
	next[slot] = q->head;
	if (q->head != TC_SLOT_NONE)
		prev[q->head] = slot;
	else
		q->tail = slot;
	q->head = slot;
	q->size++;
}

/* tc_rq_arrays - prev[] and next[] for @nslots slots, all unqueued.  Returns 0 or
 * -ENOMEM (nothing allocated then). */
int tc_rq_arrays(uint32_t **prev, uint32_t **next, uint32_t nslots);

/*
 * tc_rq_policy_init - what create() of every queue policy does first: refuse @nslots
 * >= TC_RQ_UNQUEUED (-EINVAL), allocate prev[] and next[] for @nslots slots (all
 * unqueued, tc_rq_arrays()), initialise @lock and clear the TC_LINE_POLICY_MASK bits
 * of @lines[0 .. @nslots).  Returns 0, -EINVAL or -ENOMEM (nothing allocated then).
 */
int tc_rq_policy_init(pthread_mutex_t *lock, uint32_t **prev, uint32_t **next,
		      struct tc_line *lines, uint32_t nslots);
/* tc_rq_policy_fini - undo tc_rq_policy_init(): destroy @lock, free the arrays. */
void tc_rq_policy_fini(pthread_mutex_t *lock, uint32_t *prev, uint32_t *next);

/* tc_rq_set_bits - replace the TC_LINE_POLICY_MASK bits of @l by @bits, atomically
 * with respect to the engine's bits and to lock-free hits. */
static inline void tc_rq_set_bits(struct tc_line *l, uint8_t bits)
{
	uint8_t old = __atomic_load_n(&l->flags, __ATOMIC_RELAXED), new;

	do
		new = (uint8_t)((old & ~TC_LINE_POLICY_MASK) | bits);
	while (!__atomic_compare_exchange_n(&l->flags, &old, new, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
}

static inline uint8_t tc_rq_bits(const struct tc_line *l)
{
	return __atomic_load_n(&l->flags, __ATOMIC_RELAXED) & TC_LINE_POLICY_MASK;
}

#endif /* TC_POLICY_LIST_H */
