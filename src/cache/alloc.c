/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - slot allocation and eviction: the free list first, then a victim from the
 * replacement policy (policy_lru.c, policy_s3fifo.c, policy_*.c), which asks can_evict() for each
 * candidate.  A line may go only when it is clean in memory and in the committed
 * metadata and no request holds or waits for it; when nothing may go, the allocation
 * fails, and the cleaner and a commit are asked to make lines evictable.
 *
 * Partitions (docs/isolation.md): a volume's lines are counted (tc_volume.lines), and
 * when some volume has a reserve or a cap (tc_cache.shares):
 *   - a volume at its cap takes no free slot and evicts only its own lines (above
 *     it, after a cap was lowered, two per allocation: it shrinks to the cap); when
 *     none of them is evictable (dirty), the cleaner writes it back at full rate
 *     (cap_pressure) until an allocation finds it below its cap again;
 *   - a neighbour's line is never evicted while that neighbour holds no more lines
 *     than its reserve;
 *   - a volume at or above its own reserve leaves the free slots that volumes below
 *     theirs still miss (their deficit): it evicts instead.
 * Victims thus come from volumes above their reserve (or with none).  A refused
 * allocation is one that finds nothing evictable: the request writes around or skips
 * its fill, as when every line is dirty.
 *
 * Pinned lines (region.c) never enter the replacement policy: a slot allocated for a
 * line of a pinned range carries TC_LINE_PINNED instead, so victim walks never see it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "cache_priv.h"

/* A share in lines: a percentage of the cache's lines or bytes over the line size;
 * rounded up for a reserve, down (to at least one line) for a cap. */
uint64_t tc_share_lines(struct tc_cache *c, uint64_t share, bool up)
{
	if (!share)
		return 0;
	uint64_t n;
	if (share & TC_SHARE_PCT) {
		uint64_t p = share & ~TC_SHARE_PCT;
		n = ((uint64_t)c->nslots * p + (up ? 99 : 0)) / 100;
	} else {
		n = (share + (up ? c->line_size - 1 : 0)) / c->line_size;
	}
	if (!up && !n)
		n = 1;
	return n > c->nslots ? c->nslots : n;
}

void tc_shares_update(struct tc_cache *c, struct tc_volume *v)
{
	if (v) {
		atomic_store(&v->res_lines, tc_share_lines(c, TC_SET(v, reserve), true));
		atomic_store(&v->cap_lines, tc_share_lines(c, TC_SET(v, cap), false));
	}
	bool any = false;
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		struct tc_volume *w = c->vols[i];
		if (w && (atomic_load(&w->res_lines) || atomic_load(&w->cap_lines)))
			any = true;
	}
	if (v && (atomic_load(&v->res_lines) || atomic_load(&v->cap_lines)))
		any = true;
	pthread_mutex_unlock(&c->mgmt_lock);
	atomic_store(&c->shares, any);
}

/* A share as the user gave it: "25%" or "1048576 bytes". */
static const char *share_text(uint64_t share, char *buf, size_t len)
{
	if (share & TC_SHARE_PCT)
		snprintf(buf, len, "%" PRIu64 "%%", share & ~TC_SHARE_PCT);
	else
		snprintf(buf, len, "%" PRIu64 " bytes", share);
	return buf;
}

int tc_shares_check(struct tc_cache *c, uint8_t id, const char *name,
		    const struct tc_volume_settings *s)
{
	uint64_t lsz = c->line_size, size = (uint64_t)c->nslots * lsz;
	char a[48], b[48];
	if (!(s->reserve & TC_SHARE_PCT) && s->reserve > size) {
		tc_err(c->ctx, "volume \"%s\": reserve %s is more than the cache (%" PRIu64
		       " bytes)", name, share_text(s->reserve, a, sizeof(a)), size);
		return -EINVAL;
	}
	uint64_t res = tc_share_lines(c, s->reserve, true), cap = tc_share_lines(c, s->cap, false);
	if (res && s->cap && cap < res) {
		tc_err(c->ctx, "volume \"%s\": reserve %s (%" PRIu64 " bytes of lines) is above "
		       "the cap of %s (%" PRIu64 " bytes)", name, share_text(s->reserve, a, sizeof(a)),
		       res * lsz, share_text(s->cap, b, sizeof(b)), cap * lsz);
		return -EINVAL;
	}
	uint64_t total = res, claimed = 0;
	pthread_mutex_lock(&c->sb_lock);
	/* Pinned lines (region.c) are held like a reservation: a volume claims the larger
	 * of its reserve and its pins, and its cap may not be below its pins. */
	uint64_t pins = tc_regions_pinned_lines(c, id);
	claimed = res > pins ? res : pins;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (c->sb.vols[i].id && c->sb.vols[i].id != id) {
			uint64_t r = tc_share_lines(c, c->sb.vols[i].settings.reserve, true);
			uint64_t p = tc_regions_pinned_lines(c, c->sb.vols[i].id);
			total += r;
			claimed += r > p ? r : p;
		}
	pthread_mutex_unlock(&c->sb_lock);
	if (s->cap && cap < pins) {
		tc_err(c->ctx, "volume \"%s\": cap %s (%" PRIu64 " bytes of lines) is below the "
		       "%" PRIu64 " bytes its pinned ranges hold; unpin first", name,
		       share_text(s->cap, b, sizeof(b)), cap * lsz, pins * lsz);
		return -EINVAL;
	}
	if (total <= c->nslots && claimed > c->nslots) {
		tc_err(c->ctx, "volume \"%s\": reserve %s: the reservations and pinned ranges of "
		       "the cache's volumes would claim %" PRIu64 " bytes, more than the cache's "
		       "%" PRIu64 " bytes", name, share_text(s->reserve, a, sizeof(a)),
		       claimed * lsz, size);
		return -EINVAL;
	}
	if (total > c->nslots) {
		tc_err(c->ctx, "volume \"%s\": reserve %s: the reservations of the cache's "
		       "volumes would add up to %" PRIu64 " bytes, more than the cache's %" PRIu64
		       " bytes", name, share_text(s->reserve, a, sizeof(a)), total * lsz, size);
		return -EINVAL;
	}
	return 0;
}

/* What an allocation for volume @vol allows can_evict() to take. */
struct evict_arg {
	struct tc_cache *c;
	uint8_t vol;
	bool shares;               /* partitions in force */
	bool own_only;             /* @vol is at its cap: only its own lines */
};

/*
 * The policy asks whether @slot may go.  It may if the line is clean in memory, no
 * durable or committing metadata records dirty data in it (TC_LINE_DISK_DIRTY), and no
 * request holds or waits for it.  Saying yes evicts it on the spot (the policy returns
 * the first slot accepted), under the victim's shard lock, taken with trylock because
 * the allocator lock is held (lock order: shard before allocator).
 */
static bool can_evict(void *arg, uint32_t slot)
{
	struct evict_arg *ea = arg;
	struct tc_cache *c = ea->c;
	struct tc_line *l = &c->lines[slot];
	struct tc_line peek = tc_line_peek(l);
	uint8_t vol = peek.vol;
	uint32_t line_no = peek.line_no;
	if (!vol)
		return !ea->own_only;   /* already free: a new line, beyond a cap */
	if (ea->shares && vol != ea->vol) {
		struct tc_volume *w = c->vols[vol];
		if (ea->own_only)
			return false;
		if (w && atomic_load(&w->lines) <= atomic_load(&w->res_lines))
			return false;   /* within its reservation: not for a neighbour */
	}
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

/* Whether @v may take a free slot now (alloc_lock held; partitions in force): not at
 * its cap (at it, @ea is told to take only @v's own lines), and, at or above its own
 * reserve, not one of those the volumes below their reserve still miss. */
static bool may_take_free(struct tc_cache *c, struct tc_volume *v, struct evict_arg *ea)
{
	uint64_t mine = atomic_load(&v->lines), cap = atomic_load(&v->cap_lines);
	if (cap && mine >= cap) {
		ea->own_only = true;
		return false;
	}
	if (mine < atomic_load(&v->res_lines))
		return true;
	uint64_t owed = 0;
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		struct tc_volume *w = c->vols[i];
		if (!w || w == v)
			continue;
		uint64_t have = atomic_load(&w->lines), res = atomic_load(&w->res_lines);
		if (have < res)
			owed += res - have;
	}
	return c->nfree > owed;
}

uint32_t tc_slot_alloc(struct tc_cache *c, uint8_t vol, uint32_t line_no)
{
	uint32_t slot = TC_SLOT_NONE;
	struct tc_volume *v = c->vols[vol];
	struct evict_arg ea = { .c = c, .vol = vol, .shares = v && atomic_load(&c->shares) };
	pthread_mutex_lock(&c->alloc_lock);
	if (c->repl_ops->miss)
		c->repl_ops->miss(c->repl, tc_line_key(vol, line_no));
	/* Asked even without free slots: it tells whether the volume is at its cap. */
	bool may_free = !ea.shares || may_take_free(c, v, &ea);
	bool use_free = c->nfree && may_free;
	if (use_free) {
		slot = c->free_head;
		c->free_head = c->lines[slot].hnext;
		c->nfree--;
		atomic_fetch_add(&c->used_lines, 1);
	} else if (c->repl_ops->victim(c->repl, can_evict, &ea, &slot) < 0) {
		pthread_mutex_unlock(&c->alloc_lock);
		/* At its cap, a volume cleans its own lines to make room, at full rate. */
		if (ea.own_only)
			atomic_store(&v->cap_pressure, true);
		/* Clean lines may only wait for a commit to become evictable: ask for one
		 * (once per starvation episode), and let the cleaner know. */
		if (!atomic_exchange(&c->alloc_starved, true))
			tc_meta_kick(c);
		tc_cleaner_kick(c);
		return TC_SLOT_NONE;
	}
	/* Above its cap (lowered live): one more of its own lines goes back to the free
	 * list, so the volume gives back a line per allocation until it is at the cap. */
	if (v && !ea.own_only)
		atomic_store(&v->cap_pressure, false);
	uint32_t extra;
	if (ea.own_only && atomic_load(&v->lines) >= atomic_load(&v->cap_lines) &&
	    c->repl_ops->victim(c->repl, can_evict, &ea, &extra) == 0) {
		tc_slot_free_push(c, extra);
		atomic_fetch_sub(&c->used_lines, 1);
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
	if (v)
		atomic_fetch_add(&v->lines, 1);
	/* A line of a pinned range stays out of the policy: no victim walk meets it. */
	if (v && tc_region_of(v, line_no, NULL) == TC_REGION_PINNED) {
		tc_line_flags_set(l, TC_LINE_PINNED);
		atomic_fetch_add(&v->pinned_lines, 1);
	} else {
		tc_line_flags_clear(l, TC_LINE_PINNED);
		c->repl_ops->insert(c->repl, slot);
	}
	pthread_mutex_unlock(&c->alloc_lock);
	return slot;
}

/* Return a mapped-out slot to the free list (policy forgets it). */
void tc_slot_free(struct tc_cache *c, uint32_t slot)
{
	pthread_mutex_lock(&c->alloc_lock);
	c->repl_ops->remove(c->repl, slot);
	tc_slot_free_push(c, slot);
	atomic_fetch_sub(&c->used_lines, 1);
	pthread_mutex_unlock(&c->alloc_lock);
}
