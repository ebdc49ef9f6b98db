/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - slot allocation and eviction: the free list first, then a victim from the
 * replacement policy (policy_lru.c, policy_s3fifo.c), which asks can_evict() for each
 * candidate.  A line may go only when it is clean in memory and in the committed
 * metadata and no request holds or waits for it; when nothing may go, the allocation
 * fails, and the cleaner and a commit are asked to make lines evictable.
 */
#include "cache_priv.h"

/*
 * The policy asks whether @slot may go.  It may if the line is clean in memory, no
 * durable or committing metadata records dirty data in it (TC_LINE_DISK_DIRTY), and no
 * request holds or waits for it.  Saying yes evicts it on the spot (the policy returns
 * the first slot accepted), under the victim's shard lock, taken with trylock because
 * the allocator lock is held (lock order: shard before allocator).
 */
static bool can_evict(void *arg, uint32_t slot)
{
	struct tc_cache *c = arg;
	struct tc_line *l = &c->lines[slot];
	struct tc_line peek = tc_line_peek(l);
	uint8_t vol = peek.vol;
	uint32_t line_no = peek.line_no;
	if (!vol)
		return true;   /* already free */
	uint64_t key = tc_line_key(vol, line_no);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	if (pthread_mutex_trylock(&s->lock))
		return false;
	/* The in-flight records last: their list is the one costly check, and in a cache
	 * full of dirty lines most candidates fail the others. */
	bool ok = l->vol == vol && l->line_no == line_no && !l->dirty &&
		  !(tc_line_flags_load(l) & TC_LINE_DISK_DIRTY) &&
		  !tc_inflight_exists(s, key);
	if (ok) {
		struct tc_volume *v = c->vols[vol];
		if (v)
			tc_stat_add(v, ST_EVICTIONS, 1);
		tc_line_unmap(c, slot);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

uint32_t tc_slot_alloc(struct tc_cache *c, uint8_t vol, uint32_t line_no)
{
	uint32_t slot = TC_SLOT_NONE;
	pthread_mutex_lock(&c->alloc_lock);
	if (c->nfree) {
		slot = c->free_slots[--c->nfree];
		atomic_fetch_add(&c->used_lines, 1);
	} else if (c->repl_ops->victim(c->repl, can_evict, c, &slot) < 0) {
		pthread_mutex_unlock(&c->alloc_lock);
		/* Clean lines may only wait for a commit to become evictable: ask for one
		 * (once per starvation episode), and let the cleaner know. */
		if (!atomic_exchange(&c->alloc_starved, true))
			tc_meta_kick(c);
		tc_cleaner_kick(c);
		return TC_SLOT_NONE;
	}
	struct tc_line *l = &c->lines[slot];
	uint32_t blk = slot / TC_MD_ENTRIES_PER_BLOCK;
	pthread_mutex_lock(&c->meta.block_locks[blk]);
	l->vol = vol;
	l->line_no = line_no;
	l->valid = l->dirty = 0;
	l->hnext = TC_SLOT_NONE;
	pthread_mutex_unlock(&c->meta.block_locks[blk]);
	tc_meta_mark(c, slot);
	c->repl_ops->insert(c->repl, slot);
	pthread_mutex_unlock(&c->alloc_lock);
	return slot;
}

/* Return a mapped-out slot to the free list (policy forgets it). */
void tc_slot_free(struct tc_cache *c, uint32_t slot)
{
	pthread_mutex_lock(&c->alloc_lock);
	c->repl_ops->remove(c->repl, slot);
	c->free_slots[c->nfree++] = slot;
	atomic_fetch_sub(&c->used_lines, 1);
	pthread_mutex_unlock(&c->alloc_lock);
}
