/* SPDX-License-Identifier: MIT */
/*
 * plan.c - what a sub-request will do, decided under the shard lock with the line
 * held (request.c runs it): the effective route of a write from the volume's write
 * policy and the cache's state (effective_route), whether a read miss fills the cache
 * (admit_fill: read caching, admission, sequential bypass), and the units each device
 * reads and writes (tc_plan_read, tc_plan_write, tc_plan_discard), and whether the
 * sub-request is a hit for the replacement policy (repl_hit: it uses a resident line;
 * request.c tells the policy).  A plan ends by naming the path's first step (enum
 * sub_step_id).  The sequential detector's verdict on a whole request comes first
 * (tc_plan_seq_bypass).
 *
 * Policies are cases here: a write policy is one case of effective_route() and the
 * route it picks is one branch of tc_plan_write(); the request paths of request.c are
 * shared by all of them.
 */
#include "cache_priv.h"
#include "request.h"

bool tc_plan_seq_bypass(struct tc_volume *v, const struct tc_io *io)
{
	uint64_t cutoff = TC_SET(v, seq_cutoff);
	if ((io->op != TC_OP_READ && io->op != TC_OP_WRITE) || !cutoff ||
	    !tc_seq_check(&v->seq, io->offset, io->length, cutoff))
		return false;
	tc_stat_add(v, ST_BYPASS_SEQ, 1);
	/* Writes go around the cache whole; reads only where they miss (admit_fill). */
	if (io->op == TC_OP_WRITE)
		tc_stat_add(v, ST_BYPASS_BYTES, io->length);
	return true;
}

static uint8_t effective_route(struct tc_sub *s)
{
	struct tc_volume *v = s->vol;
	if (atomic_load(&s->c->failed))
		return ROUTE_PT;
	uint8_t wp = __atomic_load_n(&v->set.write_policy, __ATOMIC_ACQUIRE);
	if (s->req->seq_bypass && wp != TC_WP_PT)
		return ROUTE_PT;
	switch (wp) {
	case TC_WP_WB:
		/* Announce the write-back write before looking at draining; a drain raises
		 * draining before reading wb_inflight, so one of the two sees the other. */
		atomic_fetch_add(&v->wb_inflight, 1);
		if (!atomic_load(&v->draining))
			return ROUTE_WB;
		atomic_fetch_sub(&v->wb_inflight, 1);
		return ROUTE_WT;
	case TC_WP_WT:
		return ROUTE_WT;
	case TC_WP_WA:
		return ROUTE_WA;
	default:
		return ROUTE_PT;
	}
}

/* Drop the shard lock, allocate a slot for the line, retake the lock and install it. */
static void plan_alloc(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	pthread_mutex_unlock(&s->shard->lock);
	uint32_t slot = tc_slot_alloc(c, s->vol->id, s->line_no);
	pthread_mutex_lock(&s->shard->lock);
	if (slot == TC_SLOT_NONE)
		return;
	tc_map_insert(c, slot);
	s->slot = slot;
	tc_stat_add(s->vol, ST_PROMOTIONS, 1);
}

static bool admit_fill(struct tc_sub *s)
{
	struct tc_volume *v = s->vol;
	if (!TC_SET(v, read_cache) || TC_SET(v, write_policy) == TC_WP_PT ||
	    atomic_load(&s->c->failed))
		return false;
	if (s->req->seq_bypass) {
		tc_stat_add(v, ST_BYPASS_BYTES, s->len);
		return false;
	}
	if (TC_SET(v, admission) == TC_ADMIT_NHIT &&
	    tc_admit_access(&s->c->admit, s->key) < TC_SET(v, nhit)) {
		tc_stat_add(v, ST_BYPASS_ADMIT, 1);
		return false;
	}
	return true;
}

void tc_plan_read(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	uint16_t valid = s->slot != TC_SLOT_NONE ? c->lines[s->slot].valid : 0;
	/* A resident line is referenced, hit or partial: the policy hears of it. */
	s->repl_hit = s->slot != TC_SLOT_NONE;
	/* A failed cache device is trusted with nothing the backing holds as well: clean
	 * units come from the backing, dirty ones (the only copy) from the slot. */
	if (valid && atomic_load(&c->failed))
		valid &= c->lines[s->slot].dirty;

	if ((s->touched & ~valid) == 0) {
		tc_stat_add(s->vol, ST_READ_HITS, 1);
		s->from_cache = s->touched;
		s->step = STEP_HIT_READ;
		return;
	}
	if (!s->hold.excl) {
		s->hold.want_excl = true;
		s->step = STEP_UPGRADE;
		return;
	}
	tc_stat_add(s->vol, (s->touched & valid) ? ST_READ_PARTIAL : ST_READ_MISSES, 1);
	s->fill = 0;
	if (admit_fill(s)) {
		if (s->slot == TC_SLOT_NONE)
			plan_alloc(s);
		if (s->slot != TC_SLOT_NONE) {
			valid = c->lines[s->slot].valid;
			uint16_t want = TC_SET(s->vol, fill) == TC_FILL_LINE ?
				(uint16_t)c->unit_mask_all : s->touched;
			s->fill = want & (uint16_t)~valid;
		}
	}
	uint16_t need = (uint16_t)((s->touched & ~valid) | s->fill);
	s->bspan_lo = (uint32_t)__builtin_ctz(need);
	s->bspan_hi = 32u - (uint32_t)__builtin_clz(need);
	s->from_cache = s->touched & valid;
	s->step = STEP_MISS_BACKING_READ;
}

void tc_plan_write(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	s->route = effective_route(s);
	bool resident = s->slot != TC_SLOT_NONE;
	uint16_t partial = s->touched & (uint16_t)~s->full;
	uint16_t valid = s->slot != TC_SLOT_NONE ? c->lines[s->slot].valid : 0;
	uint16_t dirty = s->slot != TC_SLOT_NONE ? c->lines[s->slot].dirty : 0;

	/* Pass-through drops the cached units it overwrites.  Where the line is dirty, or
	 * clean in memory but still dirty in the committed metadata (cleaned since the
	 * last commit), recovery after a crash would trust the slot copy: update it
	 * instead of dropping it (write-around), so that it holds the new data too. */
	bool disk_dirty = s->slot != TC_SLOT_NONE && (valid & s->touched) &&
			  (tc_line_flags_load(&c->lines[s->slot]) & TC_LINE_DISK_DIRTY);
	if (s->route == ROUTE_PT && ((dirty & s->touched) || disk_dirty))
		s->route = ROUTE_WA;
	bool hit = (s->touched & ~valid) == 0;
	tc_stat_add(s->vol, hit ? ST_WRITE_HITS : (s->touched & valid) ? ST_WRITE_PARTIAL :
		    ST_WRITE_MISSES, 1);

	if (s->route == ROUTE_WB) {
		if (s->slot == TC_SLOT_NONE)
			plan_alloc(s);
		if (s->slot == TC_SLOT_NONE) {
			s->route = ROUTE_WA;   /* nothing evictable: write around this time */
			atomic_fetch_sub(&s->vol->wb_inflight, 1);
		} else {
			valid = c->lines[s->slot].valid;
			s->rmw_cache = partial & valid;
			s->rmw_backing = partial & (uint16_t)~valid;
			s->cache_write = s->touched;
			s->backing_write = false;
			s->repl_hit = resident;
			s->step = STEP_WRITE_RMW_READS;
			return;
		}
	}
	if (s->route == ROUTE_WT && s->slot == TC_SLOT_NONE && !s->req->seq_bypass)
		plan_alloc(s);
	s->backing_write = true;
	s->rmw_backing = 0;
	if (s->route == ROUTE_PT || s->slot == TC_SLOT_NONE) {
		s->cache_write = 0;
		s->rmw_cache = 0;
	} else {
		valid = c->lines[s->slot].valid;
		s->rmw_cache = partial & valid;
		s->cache_write = s->touched & (uint16_t)~(partial & ~valid);
	}
	/* A write into a resident line is a hit for the replacement policy, as a read is;
	 * pass-through, which only drops cached units, is not. */
	s->repl_hit = resident && s->cache_write;
	s->step = STEP_WRITE_RMW_READS;
}

void tc_plan_discard(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	if (s->slot != TC_SLOT_NONE) {
		/* Clean units touched go: the backing zeroes the discarded sectors, and a
		 * clean copy must never differ from the backing (it would be trusted
		 * after a clean restart, then dropped after a crash: old data first,
		 * zeros later).  Dirty units stay: dropping them would let the backing's
		 * older copy come back if the crash lands before the backing's discard
		 * is durable; kept, their writeback restores the backing's copy, and
		 * "old data" is what a discard allows. */
		struct tc_line *l = &c->lines[s->slot];
		uint16_t inval = s->touched & (uint16_t)~l->dirty;
		if (l->valid & inval)
			tc_line_set_bits(c, s->slot, l->valid & (uint16_t)~inval, l->dirty);
	}
	s->hold.inf->gen++;
	s->step = STEP_DISCARD;
}
