/* SPDX-License-Identifier: MIT */
/*
 * map.c - the map: the chained hash index from (volume, line number) to cache slots
 * over the flat line array, and the changes of a line's valid and dirty bits, which
 * keep the cache's and the volume's counters and mark the line's metadata block
 * changed for the next commit.  Everything here runs under the lock shard of the line
 * (cache_priv.h); the entries' fields that a commit snapshots also take the md block
 * lock.
 */
#include "cache_priv.h"

static inline uint32_t bucket_of(struct tc_cache *c, uint64_t key)
{
	return tc_hash_key(key) & c->bucket_mask;
}

uint32_t tc_map_lookup(struct tc_cache *c, uint64_t key)
{
	uint32_t s = c->buckets[bucket_of(c, key)];
	uint8_t vol = (uint8_t)(key >> 32);
	uint32_t line_no = (uint32_t)key;
	while (s != TC_SLOT_NONE) {
		const struct tc_line *l = &c->lines[s];
		if (l->line_no == line_no && l->vol == vol)
			return s;
		s = l->hnext;
	}
	return TC_SLOT_NONE;
}

void tc_map_insert(struct tc_cache *c, uint32_t slot)
{
	struct tc_line *l = &c->lines[slot];
	uint32_t b = bucket_of(c, tc_line_key(l->vol, l->line_no));
	l->hnext = c->buckets[b];
	c->buckets[b] = slot;
}

void tc_map_remove(struct tc_cache *c, uint32_t slot)
{
	struct tc_line *l = &c->lines[slot];
	uint32_t b = bucket_of(c, tc_line_key(l->vol, l->line_no));
	uint32_t prev = TC_SLOT_NONE, cur = c->buckets[b];
	while (cur != TC_SLOT_NONE && cur != slot) {
		prev = cur;
		cur = c->lines[cur].hnext;
	}
	if (cur == slot) {
		if (prev == TC_SLOT_NONE)
			c->buckets[b] = l->hnext;
		else
			c->lines[prev].hnext = l->hnext;
	}
	l->hnext = TC_SLOT_NONE;
}

void tc_line_set_bits(struct tc_cache *c, uint32_t slot, uint16_t valid, uint16_t dirty)
{
	struct tc_line *l = &c->lines[slot];
	struct tc_volume *v = c->vols[l->vol];
	uint32_t blk = slot / TC_MD_ENTRIES_PER_BLOCK;
	int64_t dd = (int64_t)tc_popcount16(dirty) - tc_popcount16(l->dirty);
	int64_t dv = (int64_t)tc_popcount16(valid) - tc_popcount16(l->valid);
	if (!l->dirty && dirty)
		atomic_fetch_add(&c->dirty_lines, 1);
	else if (l->dirty && !dirty)
		atomic_fetch_sub(&c->dirty_lines, 1);
	pthread_mutex_lock(&c->meta.block_locks[blk]);
	l->valid = valid;
	l->dirty = dirty;
	pthread_mutex_unlock(&c->meta.block_locks[blk]);
	tc_meta_mark(c, slot);
	if (v) {
		tc_dirty_add(&v->dirty_ix, l->line_no, dd);
		atomic_fetch_add(&v->dirty_units, (uint64_t)dd);
		atomic_fetch_add(&v->valid_units, (uint64_t)dv);
	}
}

void tc_line_unmap(struct tc_cache *c, uint32_t slot)
{
	struct tc_line *l = &c->lines[slot];
	if (l->valid || l->dirty)
		tc_line_set_bits(c, slot, 0, 0);
	struct tc_volume *v = l->vol ? c->vols[l->vol] : NULL;
	if (v)
		atomic_fetch_sub(&v->lines, 1);
	/* A pinned line dropped (invalidation, detach): its slot is an ordinary one. */
	if (tc_line_flags_load(l) & TC_LINE_PINNED) {
		tc_line_flags_clear(l, TC_LINE_PINNED);
		if (v)
			atomic_fetch_sub(&v->pinned_lines, 1);
	}
	tc_map_remove(c, slot);
	uint32_t blk = slot / TC_MD_ENTRIES_PER_BLOCK;
	pthread_mutex_lock(&c->meta.block_locks[blk]);
	l->vol = 0;
	l->line_no = 0;
	pthread_mutex_unlock(&c->meta.block_locks[blk]);
	tc_meta_mark(c, slot);
}
