/* SPDX-License-Identifier: MIT */
/*
 * range.c - maintenance of a byte range of a volume, online: the clean and invalidate
 * operations of CPU caches, for when the backing changed behind the cache's back.
 *
 * Flush (tc_volume_flush_range): the volume's range_flush window names the lines the
 * range touches; while it is up, writes to those lines go write-through (plan.c,
 * effective_route) and the cleaner writes back only those lines, flat out
 * (cleaner.c).  The call waits, as a drain does, until the window holds no dirty unit
 * and no write-back write is in flight, then commits.  Writes outside the range keep
 * their write policy.
 *
 * Invalidate (tc_volume_invalidate_range): each resident line the range touches is
 * taken exclusively (a read miss filling it, a write or the cleaner's hold finish
 * first), the range's units are dropped from it, and its generation moves so that a
 * writeback batch holding older data does not mark it clean.  Dirty units are dropped
 * only when the caller says so; then a commit makes the drop durable, so that a crash
 * cannot bring the dropped copies back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache_priv.h"

/* The range must be whole 4 KiB units inside the volume: a partial unit cannot be
 * dropped or written back alone.  Messages name the volume and the values. */
static int check_range(struct tc_volume *v, const char *what, uint64_t off, uint64_t len)
{
	struct tc_cache *c = v->cache;
	if (!len) {
		tc_err(c->ctx, "volume \"%s\": %s: the range %" PRIu64 ":0 is empty", v->name,
		       what, off);
		return -EINVAL;
	}
	if (off % TC_UNIT_SIZE || len % TC_UNIT_SIZE) {
		tc_err(c->ctx, "volume \"%s\": %s: the range %" PRIu64 ":%" PRIu64 " is not "
		       "aligned to %u bytes (the cache's unit)", v->name, what, off, len,
		       TC_UNIT_SIZE);
		return -EINVAL;
	}
	if (off > v->size || len > v->size - off) {
		tc_err(c->ctx, "volume \"%s\": %s: the range %" PRIu64 ":%" PRIu64 " ends past "
		       "the volume's end (%" PRIu64 " bytes)", v->name, what, off, len, v->size);
		return -EINVAL;
	}
	return 0;
}

/* The units of line @line_no inside the byte range [@off, @end). */
static uint16_t range_units(struct tc_cache *c, uint64_t line_no, uint64_t off, uint64_t end)
{
	uint64_t ls = line_no << c->line_shift, le = ls + c->line_size;
	uint64_t a = off > ls ? off : ls, b = end < le ? end : le;
	if (a >= b)
		return 0;
	return tc_units_mask((unsigned)((a - ls) / TC_UNIT_SIZE),
			     (unsigned)((b - ls) / TC_UNIT_SIZE));
}

/*
 * Visit every line of the volume in [@lo, @hi) (line numbers) that may be resident:
 * by line when the range has fewer lines than the cache has slots, else by slot.
 * @fn gets the line number; it takes whatever locks it needs.  Stops at the first
 * non-zero return and returns it.
 */
static int each_range_line(struct tc_volume *v, uint64_t lo, uint64_t hi,
			   int (*fn)(struct tc_volume *v, uint32_t line_no, void *arg), void *arg)
{
	struct tc_cache *c = v->cache;
	if (hi - lo <= c->nslots) {
		for (uint64_t l = lo; l < hi; l++) {
			int r = fn(v, (uint32_t)l, arg);
			if (r)
				return r;
		}
		return 0;
	}
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line p = tc_line_peek(&c->lines[i]);
		if (p.vol != v->id || p.line_no < lo || p.line_no >= hi)
			continue;
		int r = fn(v, p.line_no, arg);
		if (r)
			return r;
	}
	return 0;
}

struct count_arg {
	uint64_t off, end;   /* bytes */
	uint64_t dirty;      /* units */
};

/* Dirty units of one line inside the range, under its shard lock. */
static int count_dirty(struct tc_volume *v, uint32_t line_no, void *arg)
{
	struct count_arg *a = arg;
	struct tc_cache *c = v->cache;
	uint64_t key = tc_line_key(v->id, line_no);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	pthread_mutex_lock(&s->lock);
	uint32_t slot = tc_map_lookup(c, key);
	if (slot != TC_SLOT_NONE)
		a->dirty += tc_popcount16(c->lines[slot].dirty &
					  range_units(c, line_no, a->off, a->end));
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static uint64_t range_dirty_bytes(struct tc_volume *v, uint64_t off, uint64_t end)
{
	struct tc_cache *c = v->cache;
	struct count_arg a = { .off = off, .end = end };
	each_range_line(v, off >> c->line_shift, ((end - 1) >> c->line_shift) + 1,
			count_dirty, &a);
	return a.dirty * TC_UNIT_SIZE;
}

int tc_volume_flush_range(tc_volume *v, uint64_t off, uint64_t len, tc_progress_fn fn,
			  void *opaque, uint64_t *flushed)
{
	struct tc_cache *c = v->cache;
	int r = check_range(v, "flush", off, len);
	if (r)
		return r;
	if (atomic_exchange(&v->range_busy, true)) {
		tc_err(c->ctx, "volume \"%s\": flush of %" PRIu64 ":%" PRIu64 ": another range "
		       "flush or invalidation of this volume is running", v->name, off, len);
		return -EBUSY;
	}
	/* Whole lines: the cleaner writes back lines, and the dirty units of the lines at
	 * the range's edges may as well go too.  The window is published before the flag
	 * and the flag before wb_inflight is read (effective_route's order, reversed). */
	uint64_t end = off + len;
	uint64_t lo = off >> c->line_shift, hi = ((end - 1) >> c->line_shift) + 1;
	uint64_t loff = lo << c->line_shift, lend = hi << c->line_shift;
	atomic_store(&v->range_lo, lo);
	atomic_store(&v->range_hi, hi);
	atomic_store(&v->range_flush, true);
	tc_cleaner_kick(c);   /* now, not at the timer's next tick */
	uint64_t start = range_dirty_bytes(v, loff, lend), last_report = UINT64_MAX;
	uint64_t errs0 = atomic_load(&v->st[ST_BACKING_ERRORS]) +
			 atomic_load(&v->st[ST_CACHE_ERRORS]);
	r = 0;
	for (;;) {
		/* wb_inflight first: see tc_cleaner_drain. */
		bool wb_writes = atomic_load(&v->wb_inflight) != 0;
		uint64_t left = range_dirty_bytes(v, loff, lend);
		bool busy_here = tc_cleaner_busy(c, v);
		if (left == 0 && !busy_here && !wb_writes)
			break;
		if (fn && left != last_report) {
			last_report = left;
			if (fn(opaque, left, start)) {
				tc_info(c->ctx, "volume \"%s\": flush of %" PRIu64 ":%" PRIu64
					" interrupted with %" PRIu64 " dirty bytes left", v->name,
					off, len, left);
				r = -EINTR;
				break;
			}
		}
		uint64_t errs = atomic_load(&v->st[ST_BACKING_ERRORS]) +
				atomic_load(&v->st[ST_CACHE_ERRORS]);
		if (errs >= errs0 + 3) {
			tc_err(c->ctx, "volume \"%s\": flush of %" PRIu64 ":%" PRIu64 ": cannot "
			       "write back %" PRIu64 " dirty bytes: repeated I/O errors", v->name,
			       off, len, left);
			r = -EIO;
			break;
		}
		if (tc_ctx_deterministic(c->ctx)) {
			tc_cleaner_wait_step(c);
		} else {
			tc_cleaner_tick(c, tc_ctx_now(c->ctx));
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	atomic_store(&v->range_flush, false);
	atomic_store(&v->range_busy, false);
	if (r)
		return r;
	if (fn)
		fn(opaque, 0, start);
	if (flushed)
		*flushed = start;
	return tc_meta_commit_sync(c);
}

/* ---- invalidate ------------------------------------------------------------------- */

struct inval_arg {
	uint64_t off, end;         /* bytes */
	bool discard_dirty;
	uint64_t dropped, discarded, kept;   /* units: clean dropped, dirty dropped, dirty kept */
};

struct sync_hold {
	struct tc_line_hold h;
	struct tc_waiter w;
};

static void sync_hold_resume(struct tc_work *w)
{
	struct sync_hold *sh = (struct sync_hold *)((char *)w -
						    offsetof(struct sync_hold, h.resume));
	tc_waiter_done(&sh->w, 0);
}

static int inval_line(struct tc_volume *v, uint32_t line_no, void *arg)
{
	struct inval_arg *a = arg;
	struct tc_cache *c = v->cache;
	uint64_t key = tc_line_key(v->id, line_no);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	uint16_t mask = range_units(c, line_no, a->off, a->end);
	pthread_mutex_lock(&s->lock);
	if (tc_map_lookup(c, key) == TC_SLOT_NONE && !tc_inflight_exists(s, key)) {
		/* Not resident and nothing in flight: nothing to drop; a request arriving
		 * later reads the backing as it is now. */
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	struct sync_hold sh;
	memset(&sh, 0, sizeof(sh));
	tc_waiter_init(&sh.w, c->ctx);
	sh.h.want_excl = true;
	sh.h.resume.fn = sync_hold_resume;
	bool got = tc_line_acquire(c, s, key, &sh.h);
	bool oom = !sh.h.inf;
	pthread_mutex_unlock(&s->lock);
	if (oom)
		return -ENOMEM;
	if (!got) {
		int r = tc_waiter_wait(&sh.w);
		if (r)
			return r;
	}
	pthread_mutex_lock(&s->lock);
	uint32_t slot = tc_map_lookup(c, key);
	if (slot != TC_SLOT_NONE) {
		struct tc_line *l = &c->lines[slot];
		uint16_t dirty_in = l->dirty & mask;
		uint16_t keep = a->discard_dirty ? 0 : l->dirty;
		uint16_t drop = l->valid & mask & (uint16_t)~keep;
		a->dropped += tc_popcount16(drop & (uint16_t)~l->dirty);
		if (a->discard_dirty)
			a->discarded += tc_popcount16(dirty_in);
		else
			a->kept += tc_popcount16(dirty_in);
		if (drop)
			tc_line_set_bits(c, slot, l->valid & (uint16_t)~drop,
					 a->discard_dirty ? l->dirty & (uint16_t)~mask : l->dirty);
	}
	/* Whatever the cleaner read of this line before now is no longer the line. */
	sh.h.inf->gen++;
	struct tc_line_hold *g = tc_line_release_locked(c, s, &sh.h);
	pthread_mutex_unlock(&s->lock);
	tc_line_resume(c, g);
	return 0;
}

int tc_volume_invalidate_range(tc_volume *v, uint64_t off, uint64_t len, unsigned flags,
			       struct tc_range_result *res)
{
	struct tc_cache *c = v->cache;
	int r = check_range(v, "invalidate", off, len);
	if (r)
		return r;
	uint64_t end = off + len;
	bool discard = flags & TC_INVALIDATE_DISCARD_DIRTY;
	if (!discard) {
		uint64_t dirty = range_dirty_bytes(v, off, end);
		if (dirty) {
			tc_err(c->ctx, "volume \"%s\": invalidate of %" PRIu64 ":%" PRIu64 ": the "
			       "range holds %" PRIu64 " dirty bytes, newer than the backing: flush "
			       "the range first, or discard them (TC_INVALIDATE_DISCARD_DIRTY, "
			       "--discard-dirty); nothing was changed", v->name, off, len, dirty);
			return -EBUSY;
		}
	}
	if (atomic_exchange(&v->range_busy, true)) {
		tc_err(c->ctx, "volume \"%s\": invalidate of %" PRIu64 ":%" PRIu64 ": another "
		       "range flush or invalidation of this volume is running", v->name, off, len);
		return -EBUSY;
	}
	struct inval_arg a = { .off = off, .end = end, .discard_dirty = discard };
	r = each_range_line(v, off >> c->line_shift, ((end - 1) >> c->line_shift) + 1,
			    inval_line, &a);
	atomic_store(&v->range_busy, false);
	if (!r && (a.dropped || a.discarded))
		r = tc_meta_commit_sync(c);
	if (res) {
		memset(res, 0, sizeof(*res));
		res->dropped_bytes = a.dropped * TC_UNIT_SIZE;
		res->discarded_dirty_bytes = a.discarded * TC_UNIT_SIZE;
		res->kept_dirty_bytes = a.kept * TC_UNIT_SIZE;
	}
	if (a.discarded)
		tc_warn(c->ctx, "volume \"%s\": invalidate of %" PRIu64 ":%" PRIu64 " discarded "
			"%" PRIu64 " dirty bytes: the backing's older data is what reads return "
			"there now", v->name, off, len, a.discarded * TC_UNIT_SIZE);
	return r;
}
