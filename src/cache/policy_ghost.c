/* SPDX-License-Identifier: MIT */
/*
 * policy_ghost.c - ghost key lists shared by ARC (policy_arc.c) and 2Q
 * (policy_2q.c); see policy_ghost.h.  A pool of entries, a free list through next[],
 * lists with head = newest and tail = oldest, and chained hashing on a MurmurHash3
 * finalizer.  Also the queue arrays of policy_list.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "policy_ghost.h"

/* Finalizer of MurmurHash3 (Austin Appleby): a full-avalanche 64-bit mix. */
static uint32_t gs_hash(const struct tc_gset *g, uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return (uint32_t)k & g->mask;
}

int tc_gset_init(struct tc_gset *g, uint32_t cap)
{
	uint64_t nb = 1;
	size_t n = cap ? cap : 1;

	memset(g, 0, sizeof(*g));
	while (nb < cap)
		nb <<= 1;
	g->cap = cap;
	g->mask = (uint32_t)(nb - 1);
	g->key = malloc(sizeof(uint64_t) * n);
	g->prev = malloc(sizeof(uint32_t) * n);
	g->next = malloc(sizeof(uint32_t) * n);
	g->hnext = malloc(sizeof(uint32_t) * n);
	g->list = malloc(n);
	g->bucket = malloc(sizeof(uint32_t) * nb);
	if (!g->key || !g->prev || !g->next || !g->hnext || !g->list || !g->bucket) {
		tc_gset_fini(g);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < nb; i++)
		g->bucket[i] = TC_GSET_NONE;
	for (uint32_t i = 0; i < cap; i++)
		g->next[i] = i + 1 < cap ? i + 1 : TC_GSET_NONE;
	g->free_head = cap ? 0 : TC_GSET_NONE;
	for (unsigned l = 0; l < TC_GSET_LISTS; l++)
		g->head[l] = g->tail[l] = TC_GSET_NONE;
	return 0;
}

void tc_gset_fini(struct tc_gset *g)
{
	free(g->key);
	free(g->prev);
	free(g->next);
	free(g->hnext);
	free(g->list);
	free(g->bucket);
	memset(g, 0, sizeof(*g));
}

uint32_t tc_gset_find(const struct tc_gset *g, uint64_t key)
{
	if (!g->cap)
		return TC_GSET_NONE;
	for (uint32_t e = g->bucket[gs_hash(g, key)]; e != TC_GSET_NONE; e = g->hnext[e])
		if (g->key[e] == key)
			return e;
	return TC_GSET_NONE;
}

void tc_gset_erase(struct tc_gset *g, uint32_t e)
{
	unsigned l = g->list[e];
	uint32_t *pp = &g->bucket[gs_hash(g, g->key[e])];

	while (*pp != e)
		pp = &g->hnext[*pp];
	*pp = g->hnext[e];
	if (g->prev[e] != TC_GSET_NONE)
		g->next[g->prev[e]] = g->next[e];
	else
		g->head[l] = g->next[e];
	if (g->next[e] != TC_GSET_NONE)
		g->prev[g->next[e]] = g->prev[e];
	else
		g->tail[l] = g->prev[e];
	g->size[l]--;
	g->next[e] = g->free_head;
	g->free_head = e;
}

void tc_gset_pop_tail(struct tc_gset *g, unsigned list)
{
	if (g->tail[list] != TC_GSET_NONE)
		tc_gset_erase(g, g->tail[list]);
}

int tc_gset_push(struct tc_gset *g, unsigned list, uint64_t key)
{
	uint32_t e = g->free_head, h;

	if (e == TC_GSET_NONE)
		return -ENOSPC;
	g->free_head = g->next[e];
	g->key[e] = key;
	g->list[e] = (uint8_t)list;
	h = gs_hash(g, key);
	g->hnext[e] = g->bucket[h];
	g->bucket[h] = e;
	g->prev[e] = TC_GSET_NONE;
	g->next[e] = g->head[list];
	if (g->head[list] != TC_GSET_NONE)
		g->prev[g->head[list]] = e;
	else
		g->tail[list] = e;
	g->head[list] = e;
	g->size[list]++;
	return 0;
}

uint32_t tc_gset_total(const struct tc_gset *g)
{
	uint32_t n = 0;

	for (unsigned l = 0; l < TC_GSET_LISTS; l++)
		n += g->size[l];
	return n;
}

size_t tc_gset_mem(const struct tc_gset *g)
{
	return (size_t)g->cap * (sizeof(uint64_t) + 3 * sizeof(uint32_t) + 1) +
	       sizeof(uint32_t) * ((size_t)g->mask + 1);
}

/* ---- resident queues (policy_list.h) --------------------------------------------- */

#include "policy_list.h"

int tc_rq_arrays(uint32_t **prev, uint32_t **next, uint32_t nslots)
{
	size_t n = nslots ? nslots : 1;

	*prev = malloc(sizeof(uint32_t) * n);
	*next = malloc(sizeof(uint32_t) * n);
	if (!*prev || !*next) {
		free(*prev);
		free(*next);
		*prev = *next = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nslots; i++) {
		(*prev)[i] = TC_RQ_UNQUEUED;
		(*next)[i] = TC_SLOT_NONE;
	}
	return 0;
}

int tc_rq_policy_init(pthread_mutex_t *lock, uint32_t **prev, uint32_t **next,
		      struct tc_line *lines, uint32_t nslots)
{
	if (nslots >= TC_RQ_UNQUEUED)
		return -EINVAL;
	if (tc_rq_arrays(prev, next, nslots))
		return -ENOMEM;
	if (pthread_mutex_init(lock, NULL) != 0) {
		free(*prev);
		free(*next);
		*prev = *next = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nslots; i++)
		tc_rq_set_bits(&lines[i], 0);
	return 0;
}

void tc_rq_policy_fini(pthread_mutex_t *lock, uint32_t *prev, uint32_t *next)
{
	pthread_mutex_destroy(lock);
	free(prev);
	free(next);
}
