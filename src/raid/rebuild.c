/* SPDX-License-Identifier: MIT */
/*
 * rebuild.c - an array's background pass: hot spares taking over faulty members, the
 * rebuild of members (spares, a replace's successor), the consistency check and
 * repair (the controllers' patrol read, md's "check" and "repair" sync actions), and
 * their rates.
 *
 * One pass at a time, in windows: a row of chunks (member offsets [r x chunk, (r + 1)
 * x chunk)) for a rebuild and for a RAID 5/6 check, an array chunk for a RAID 1/10
 * check.  The level runs a window (level->sync: raid56.c under its stripe lock, the
 * mapped levels here under the array chunk lock that their writes take), so that no
 * foreground write of those rows runs between the window's reads and its writes.
 * Windows follow one another from a context timer: the window's completion arms the
 * timer at the time the rate allows, and the timer's callback starts the next window.
 * Nothing blocks in the I/O path and no thread of its own runs, so a deterministic
 * context drives a rebuild as it drives the cache's cleaner: in tc_ctx_poll(), on its
 * virtual clock, the same seed giving the same interleaving.
 *
 * Rebuilding members are written everywhere by foreground writes (the stripe engine
 * writes them the whole rows it touches, rebuilt or new), read only below rebuild_pos;
 * so a window that ends leaves its rows valid whatever writes follow, and the position
 * moves forward only past rows copied under the lock.  A replace's successor differs:
 * its old member serves the offsets at or above rebuild_pos (array.c routes requests
 * so), the array keeps all its redundancy, and the position moves before the window's
 * lock is released (array_sync_advance), since writes at or above it go to the old
 * member only.  Writes below it go to both (md's replacement), so that a copy resumed
 * after a crash from a checkpoint below the position copies rows the old member
 * holds the latest writes of.
 *
 * Members taken over while a pass runs (rebuild_pos > 0, or a window in flight) wait
 * for the next pass ("pending": written, never read), so that one rebuild position
 * describes every member of the pass; members taken over before the first window of a
 * pass join it, which is how RAID 6 rebuilds two members in one pass.
 *
 * Rates (md's rule, drivers/md/md.c is_mddev_idle / speed_limit_min / _max): the next
 * window starts when the bytes done so far allow at the rate in force, the ceiling
 * when no foreground request reached the array since the last window, else
 * min + (max - min) x priority / 100.  Checkpoints: a->persist after every state
 * change, and during a rebuild every 1/16 of the members or every 5 s (ctx clock),
 * whichever comes first: a restart repeats at most that much, for at most a
 * superblock write per 5 s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raid.h"

/* The parent of every resync and rebuild request (its buffers are flat, so only its
 * class is read): background work, TC_PRIO_BULK on the members' queues. */
static const struct tc_io sync_bulk = { .prio = TC_PRIO_BULK };

#define SYNC_PERSIST_NS (5ull * 1000 * 1000 * 1000)
#define SYNC_RATE_NS (1000ull * 1000 * 1000)
#define SYNC_MAX_DEPTH 64u
/* Windows in flight by default: 8 rows, 2 MiB per member at the default chunk (md
 * keeps many stripes in flight in its resync too). */
#define SYNC_DEPTH_DEFAULT 8u
/* Foreground requests this recent mean load (md looks at I/O since its last check). */
#define SYNC_IDLE_NS (50ull * 1000 * 1000)

struct array_sync {
	struct tc_timer timer;          /* first */
	struct tc_array *a;
	/* Under a->lock: */
	enum tc_array_sync action;
	bool scheduled;                 /* the timer armed */
	unsigned inflight;              /* windows in flight */
	enum array_sync_kind inflight_kind;     /* of these */
	bool stopped;                   /* rebuild: a row could not be rebuilt */
	bool closing;
	bool persist_wanted;
	bool persisting;                /* a->persist running (a nested tick skips it) */
	uint32_t targets;               /* rebuild: the members of the pass */
	uint64_t check_pos, check_end;  /* check: windows done, in the pass */
	uint64_t check_next;            /* check: the next window to start */
	bool resync;                    /* the repair pass is a resync: the write-intent
	                                 * map's regions only */
	uint64_t issue_row;             /* rebuild: the next row to start */
	uint64_t done_mask;             /* rebuild: rows done from rebuild_pos on (bit 0) */
	uint64_t next_due;              /* ns: the next window's start at the rate */
	struct array_sync_win wins[SYNC_MAX_DEPTH];
	_Atomic unsigned depth;
	uint64_t checked, mismatches;
	bool check_stopped;             /* the last check ended early (degraded) */
	uint64_t win_start, last_fg;
	uint64_t rate_now;              /* the rate of the last window, bytes/s */
	uint64_t fg_ns;                 /* when foreground requests were last seen */
	bool marked;                    /* mark_ns, mark_bytes: the rate's reference */
	bool fg_seen;
	uint64_t mark_ns, mark_bytes, bytes_done, rate;
	/* The same over rebuilt rows that were ever written, the ones that read the
	 * survivors and are paced (the ETA's rate: a never-written row costs a write of
	 * zeros only). */
	uint64_t mark_wbytes, wbytes_done, wrate;
	uint64_t persist_pos, persist_ns;
	uint64_t readd_skipped;         /* re-add: member bytes the pass jumped over */
	volatile bool window_gone;      /* closing: the window in flight ended */
	_Atomic uint64_t min_rate, max_rate;
	_Atomic unsigned priority;
};

static void sync_tick(struct tc_timer *t);
static void sync_check_begin(struct tc_array *a, enum tc_array_sync action, bool resync);

int array_sync_init(struct tc_array *a)
{
	struct array_sync *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	ret = array_locks_new(&a->locks);
	if (ret < 0) {
		free(s);
		return ret;
	}
	s->a = a;
	s->timer.fn = sync_tick;
	atomic_init(&s->min_rate, TC_ARRAY_REBUILD_MIN_DEFAULT);
	atomic_init(&s->max_rate, TC_ARRAY_REBUILD_MAX_DEFAULT);
	atomic_init(&s->priority, 0);
	atomic_init(&s->depth, SYNC_DEPTH_DEFAULT);
	a->sync = s;
	return 0;
}

void array_sync_fini(struct tc_array *a)
{
	struct array_sync *s = a->sync;

	if (!s)
		return;
	if (a->dev.ctx) {
		pthread_mutex_lock(&a->lock);
		s->closing = true;
		bool window = s->inflight > 0;
		pthread_mutex_unlock(&a->lock);
		tc_ctx_timer_cancel(a->dev.ctx, &s->timer);
		if (window)
			tc_ctx_wait_until(a->dev.ctx, (const volatile bool *)&s->window_gone);
		tc_ctx_timer_cancel(a->dev.ctx, &s->timer);
	}
	/* The stripe-lock table stays: the close's member flushes run the context, and
	 * a foreground write still in flight releases its lock when it completes
	 * (array_close frees the table last). */
	free(s);
	a->sync = NULL;
}

/* Whether window @w of a resync is in a region of the write-intent map to resync:
 * a parity array's window is a row (member offset w chunks); a mirror's an array
 * chunk, whose copies the near layout puts on one row or two. */
static bool sync_window_needs(struct tc_array *a, uint64_t w)
{
	if (a->level->parity)
		return raid_map_needs_sync(a, w << a->chunk_shift);
	struct raid_extent ext;
	a->level->map(a, w << a->chunk_shift, a->chunk, &ext);
	for (unsigned i = 0; i < ext.ncopies; i++)
		if (raid_map_needs_sync(a, ext.copy[i].offset))
			return true;
	return false;
}

/* Under a->lock: whether every member in @targets was re-added (tc_array_re_add),
 * so that the pass visits only the write-intent map's regions. */
static bool sync_readd_only(struct tc_array *a, uint32_t targets)
{
	if (!targets)
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (targets & (1u << i) && !atomic_load(&a->m[i].readd))
			return false;
	return true;
}

/* Under a->lock: run the tick soon. */
static void sync_schedule(struct tc_array *a)
{
	struct array_sync *s = a->sync;

	if (s->closing || s->scheduled)
		return;
	s->scheduled = true;
	tc_ctx_timer_arm(a->dev.ctx, &s->timer, tc_ctx_now(a->dev.ctx));
}

/* Under a->lock: members rebuilding, and of these the ones not pending. */
static uint32_t sync_rebuilding(struct tc_array *a, bool pending_too)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < a->n; i++)
		if (atomic_load(&a->m[i].state) == TC_MEMBER_REBUILDING &&
		    (pending_too || !atomic_load(&a->m[i].pending)))
			m |= 1u << i;
	return m;
}

static bool sync_replacing(struct tc_array *a)
{
	for (unsigned i = 0; i < a->n; i++)
		if (atomic_load(&a->m[i].old))
			return true;
	return false;
}

void array_sync_kick(struct tc_array *a)
{
	pthread_mutex_lock(&a->lock);
	if (sync_rebuilding(a, true) && a->sync->action != TC_ARRAY_SYNC_REBUILD) {
		if (a->sync->action != TC_ARRAY_SYNC_IDLE)
			a->sync->check_stopped = true;
		a->sync->action = TC_ARRAY_SYNC_REBUILD;
		a->sync->stopped = false;
	}
	sync_schedule(a);
	pthread_mutex_unlock(&a->lock);
}

int array_rebuild_resume(struct tc_array *a)
{
	uint64_t pos = atomic_load(&a->rebuild_pos);

	pthread_mutex_lock(&a->lock);
	uint32_t r = sync_rebuilding(a, true);
	pthread_mutex_unlock(&a->lock);
	if (!r) {
		tc_err(a->dev.ctx, "array %s: no member is rebuilding: nothing to resume",
		       a->dev.name);
		return -EINVAL;
	}
	if (pos > a->member_size || pos % a->chunk) {
		tc_err(a->dev.ctx, "array %s: rebuild position %" PRIu64 " is not a whole "
		       "chunk within the members' %" PRIu64 " bytes", a->dev.name, pos,
		       a->member_size);
		return -EINVAL;
	}
	tc_info(a->dev.ctx, "array %s: resuming the rebuild at %" PRIu64 " of %" PRIu64
		" bytes", a->dev.name, pos, a->member_size);
	pthread_mutex_lock(&a->lock);
	a->sync->persist_pos = pos;
	pthread_mutex_unlock(&a->lock);
	array_sync_kick(a);
	return 0;
}

/* Under a->lock, which it lets go: @d takes faulty slot @i (state REBUILDING) and
 * the pass starts or takes it; @drop (the slot's device before, or NULL) is closed.
 * @readd: @d is the slot's own member back (tc_array_re_add), rebuilt only where the
 * write-intent map says it missed writes. */
static void slot_take(struct tc_array *a, unsigned i, struct array_disk *d,
		      struct array_disk *drop, bool readd)
{
	struct array_sync *s = a->sync;

	/* Pending when a pass is under way: its position does not describe this one.  At
	 * assembly the pass resumed from the superblocks has not started yet (the action
	 * is still idle), but its position already counts for the members recorded
	 * rebuilding: a spare taking a slot then must not share it (seed 25 of tc-stress
	 * --arrays: the spare's rows below the checkpoint were read as rebuilt, zeros). */
	bool pending = (s->action == TC_ARRAY_SYNC_REBUILD &&
			(atomic_load(&a->rebuild_pos) > 0 || s->inflight || sync_replacing(a))) ||
		       (sync_rebuilding(a, true) && atomic_load(&a->rebuild_pos) > 0);
	if (s->action != TC_ARRAY_SYNC_REBUILD) {
		/* A check stops: nothing to compare against while degraded. */
		if (s->action != TC_ARRAY_SYNC_IDLE)
			tc_warn(a->dev.ctx, "array %s: %s stopped at window %" PRIu64 " of %"
				PRIu64 ": member %u failed", a->dev.name,
				s->action == TC_ARRAY_SYNC_CHECK ? "check" : "repair",
				s->check_pos, s->check_end, i);
		if (s->action != TC_ARRAY_SYNC_IDLE)
			s->check_stopped = true;
		s->action = TC_ARRAY_SYNC_REBUILD;
		s->stopped = false;
		if (!sync_rebuilding(a, true))
			atomic_store(&a->rebuild_pos, 0);
	}
	atomic_store(&a->m[i].pending, pending);
	atomic_store(&a->m[i].readd, readd);
	atomic_store(&a->m[i].disk, d);
	a->m[i].dev = d->dev;
	atomic_store(&a->m[i].old_failed, false);
	atomic_store(&a->m[i].state, TC_MEMBER_REBUILDING);
	s->persist_wanted = true;
	sync_schedule(a);
	pthread_mutex_unlock(&a->lock);
	if (drop) {
		tc_dev_unwatch(drop->dev, array_member_event_fn, a);
		tc_dev_close(drop->dev);
		free(drop);
	}
	if (readd)
		tc_info(a->dev.ctx, "array %s: member %s back in slot %u%s", a->dev.name,
			d->dev->name, i, pending ? " (resynced after the pass under way)" :
			"; resyncing the regions written since it left");
	else
		tc_info(a->dev.ctx, "array %s: spare %s takes the place of member %u%s",
			a->dev.name, d->dev->name, i, pending ?
			" (rebuilt after the pass under way)" : "; rebuilding");
	raid_map_rewrite(a);    /* the new device holds no copy of the region map yet */
}

void array_takeover(struct tc_array *a, unsigned i)
{
	struct array_sync *s = a->sync;

	/* No sync state: the array is closing (a member flush failing at close). */
	if (!s)
		return;
	pthread_mutex_lock(&a->lock);
	if (!a->nspares || atomic_load(&a->m[i].state) != TC_MEMBER_FAULTY || s->closing) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	struct array_disk *old = atomic_load(&a->m[i].disk);
	if (old && a->ngone == TC_ARRAY_MAX_EXTRA) {
		pthread_mutex_unlock(&a->lock);
		tc_err(a->dev.ctx, "array %s: member %u faulty, but %u retired members wait for "
		       "removal: remove one for a spare to take over", a->dev.name, i,
		       a->ngone);
		return;
	}
	struct array_disk *sp = a->spare[0], *drop = NULL;
	memmove(&a->spare[0], &a->spare[1], --a->nspares * sizeof(a->spare[0]));
	/* The place of a member missing since the assembly is no device to keep for
	 * removal: closed once the spare has the slot (nothing is sent to a faulty
	 * slot, so none of its requests is in flight but by chance: then kept). */
	if (old && !strcmp(old->dev->ops->name, "missing") && !atomic_load(&old->inflight)) {
		drop = old;
	} else if (old) {
		old->state = TC_MEMBER_FAULTY;
		a->gone[a->ngone++] = old;
	}
	slot_take(a, i, sp, drop, false);
}

/* A rebuild pass ended (under a->lock): its members are active; pending ones start
 * the next pass.  Returns whether the redundancy may have changed. */
static void sync_rebuild_end(struct tc_array *a)
{
	struct array_sync *s = a->sync;
	uint32_t t = s->targets;

	for (unsigned i = 0; i < a->n; i++) {
		if (!(t & (1u << i)) ||
		    atomic_load(&a->m[i].state) != TC_MEMBER_REBUILDING)
			continue;
		struct array_disk *old = atomic_exchange(&a->m[i].old, NULL);
		if (old) {
			old->state = TC_MEMBER_REPLACED;
			a->gone[a->ngone++] = old;      /* room reserved by the replace */
			tc_info(a->dev.ctx, "array %s: member %u replaced: %s in, %s retired",
				a->dev.name, i, a->m[i].dev->name, old->dev->name);
		} else if (atomic_load(&a->m[i].readd)) {
			tc_info(a->dev.ctx, "array %s: member %u (%s) resynced; %" PRIu64 " of "
				"its %" PRIu64 " bytes skipped (the write-intent map had no write "
				"there since it left)", a->dev.name, i, a->m[i].dev->name,
				s->readd_skipped, a->member_size);
		} else {
			tc_info(a->dev.ctx, "array %s: member %u (%s) rebuilt", a->dev.name, i,
				a->m[i].dev->name);
		}
		atomic_store(&a->m[i].readd, false);
		atomic_store(&a->m[i].state, TC_MEMBER_ACTIVE);
		atomic_fetch_and(&a->faulty, ~(1u << i));
	}
	uint32_t pend = sync_rebuilding(a, true);
	atomic_store(&a->rebuild_pos, 0);
	for (unsigned i = 0; i < a->n; i++)
		if (pend & (1u << i))
			atomic_store(&a->m[i].pending, false);
	s->targets = 0;
	s->persist_pos = 0;
	s->readd_skipped = 0;
	s->persist_wanted = true;
	if (!pend)
		s->action = TC_ARRAY_SYNC_IDLE;
	raid_map_whole(a);      /* whole again: the map's bits kept meanwhile may go */
	/* A mirror with its copies not resynced since a crash: now (degraded too). */
	if (!pend && atomic_load(&a->unsynced))
		sync_check_begin(a, TC_ARRAY_SYNC_REPAIR, true);
}

/* Under a->lock: the rate for the next window (md's rule: foreground requests in the
 * last SYNC_IDLE_NS mean load). */
static uint64_t sync_rate(struct tc_array *a, uint64_t now)
{
	struct array_sync *s = a->sync;
	uint64_t lo = atomic_load(&s->min_rate), hi = atomic_load(&s->max_rate);
	unsigned prio = atomic_load(&s->priority);
	uint64_t fg = atomic_load(&a->fg_requests);

	if (fg != s->last_fg) {
		s->fg_ns = now;
		s->fg_seen = true;
	}
	s->last_fg = fg;
	if (!s->fg_seen || now - s->fg_ns >= SYNC_IDLE_NS)
		return hi;
	return hi == UINT64_MAX ? (prio ? hi : lo)
		: lo + (uint64_t)((double)(hi - lo) * prio / 100);
}

/* Under a->lock: a window of @bytes per member starts now; the next one is due when
 * the rate allows. */
static void sync_pace(struct tc_array *a, uint64_t now, uint64_t bytes)
{
	struct array_sync *s = a->sync;
	uint64_t rate = sync_rate(a, now);

	if (s->next_due < now)
		s->next_due = now;
	if (rate != UINT64_MAX && rate)
		s->next_due += (uint64_t)((double)bytes * 1e9 / (double)rate);
}

static void sync_tick(struct tc_timer *t)
{
	struct array_sync *s = (struct array_sync *)t;
	struct tc_array *a = s->a;
	tc_ctx *ctx = a->dev.ctx;
	bool health = false, again = false;     /* again: tick once more at once */
	uint64_t limit = UINT64_MAX;            /* rebuild: the row the window ends at */
	struct array_sync_win *start[SYNC_MAX_DEPTH];
	unsigned nstart = 0;

	pthread_mutex_lock(&a->lock);
	s->scheduled = false;
	if (s->closing) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	uint64_t now = tc_ctx_now(ctx);
	if (array_failed(a) && s->action != TC_ARRAY_SYNC_IDLE && !s->inflight) {
		tc_err(ctx, "array %s: failed: background pass stopped", a->dev.name);
		s->action = TC_ARRAY_SYNC_IDLE;
	}
	unsigned depth = atomic_load(&s->depth);
	bool more = false;              /* windows left to start */
	if (s->action == TC_ARRAY_SYNC_REBUILD) {
		uint64_t pos = atomic_load(&a->rebuild_pos), rows = a->member_size >> a->chunk_shift;
		bool ordered = sync_replacing(a);
		if (!s->inflight) {
			if (pos == 0 && !ordered)
				for (unsigned i = 0; i < a->n; i++)     /* join the pass */
					atomic_store(&a->m[i].pending, false);
			s->targets = sync_rebuilding(a, false);
			s->issue_row = pos >> a->chunk_shift;
			s->done_mask = 0;
		}
		if (ordered)
			depth = 1;      /* the position moves row by row under the lock */
		if (s->inflight) {
			/* A check's windows still in flight (a member failed): the pass
			 * starts once they are done. */
			more = !s->stopped && s->inflight_kind == SYNC_REBUILD;
		} else if (s->stopped) {
			s->action = TC_ARRAY_SYNC_IDLE;         /* an unreadable row */
		} else if (pos >= a->member_size || !s->targets) {
			if (s->targets || sync_rebuilding(a, true)) {
				sync_rebuild_end(a);
				health = true;
				more = s->action != TC_ARRAY_SYNC_IDLE;
			} else {
				/* The members of the pass failed (or a replace gave up its
				 * successor): nothing is left to rebuild.  A mirror's resync
				 * that waited for the rebuild runs now, degraded (tc-stress
				 * --arrays --write-hole seed 120: it never ran, and a copy
				 * still holding a write lost at the crash came back once the
				 * copy read meanwhile was lost). */
				atomic_store(&a->rebuild_pos, 0);
				s->persist_pos = 0;
				s->action = TC_ARRAY_SYNC_IDLE;
				if (atomic_load(&a->unsynced))
					sync_check_begin(a, TC_ARRAY_SYNC_REPAIR, true);
				more = s->action != TC_ARRAY_SYNC_IDLE;
			}
		} else {
			more = true;
			if (a->persist && (pos - s->persist_pos >= a->member_size / 16 ||
					   (now - s->persist_ns >= SYNC_PERSIST_NS &&
					    pos != s->persist_pos)))
				s->persist_wanted = true;
		}
		bool readd = more && !ordered && sync_readd_only(a, s->targets);
		while (more && !health && s->inflight + nstart < depth &&
		       s->issue_row < rows &&
		       s->issue_row - (pos >> a->chunk_shift) < depth && now >= s->next_due) {
			/* A re-added member holds every row of the regions the write-intent
			 * map has clear: the position jumps over them, once the windows
			 * before them are done (it moves over rows done in order). */
			if (readd) {
				uint64_t next = raid_map_intent_next(a, s->issue_row << a->chunk_shift);
				if (next > s->issue_row << a->chunk_shift) {
					if (s->inflight || nstart)
						break;
					if (next > a->member_size)
						next = a->member_size;
					s->readd_skipped += next - pos;
					pos = next;
					atomic_store(&a->rebuild_pos, pos);
					s->issue_row = pos >> a->chunk_shift;
					if (pos >= a->member_size)
						again = true;   /* the pass ends on the next tick */
					continue;
				}
			}
			struct array_sync_win *w = &s->wins[s->issue_row % SYNC_MAX_DEPTH];
			memset(w, 0, sizeof(*w));
			w->a = a;
			w->kind = SYNC_REBUILD;
			w->row = s->issue_row++;
			w->targets = s->targets;
			w->ordered = ordered;
			start[nstart++] = w;
			/* A row never written costs a write of zeros to the targets and no
			 * read of the others: the rate limit (which spares the survivors
			 * for the foreground) does not hold it back. */
			w->unwritten = !raid_map_written(a, w->row << a->chunk_shift);
			if (!w->unwritten)
				sync_pace(a, now, a->chunk);
		}
		if (s->issue_row >= rows)
			more = false;
		limit = (pos >> a->chunk_shift) + depth;
	} else if (s->action != TC_ARRAY_SYNC_IDLE) {
		/* A mirror's resync runs degraded (not while a rebuild waits: that first). */
		bool degraded_ok = s->resync && atomic_load(&a->unsynced);
		if ((atomic_load(&a->faulty) && !degraded_ok) || sync_rebuilding(a, true)) {
			if (!s->inflight) {
				tc_warn(ctx, "array %s: check stopped at window %" PRIu64 " of %"
					PRIu64 ": the array is degraded", a->dev.name,
					s->check_pos, s->check_end);
				s->check_stopped = true;
				s->action = sync_rebuilding(a, true) ? TC_ARRAY_SYNC_REBUILD
					: TC_ARRAY_SYNC_IDLE;
				again = s->action == TC_ARRAY_SYNC_REBUILD;
				s->next_due = now;
			}
		} else if (s->check_next >= s->check_end) {
			if (!s->inflight && s->resync) {
				if (a->level->parity)
					tc_info(ctx, "array %s: resync done: %" PRIu64 " stripes of "
						"the write-intent map's regions, %" PRIu64 " with parity "
						"rewritten", a->dev.name, s->checked, s->mismatches);
				else
					tc_info(ctx, "array %s: resync done: %" PRIu64 " chunks, %"
						PRIu64 " with copies rewritten", a->dev.name, s->checked,
						s->mismatches);
				s->resync = false;
				raid_map_resync_done(a);
				atomic_store(&a->unsynced, false);
				s->action = TC_ARRAY_SYNC_IDLE;
			} else if (!s->inflight) {
				tc_info(ctx, "array %s: %s done: %" PRIu64 " mismatches in %" PRIu64
					" %s", a->dev.name, s->action == TC_ARRAY_SYNC_CHECK ?
					"check" : "repair", s->mismatches, s->checked,
					a->level->parity ? "stripes" : "chunks");
				/* A whole repair makes the copies agree as a resync does. */
				if (s->action == TC_ARRAY_SYNC_REPAIR)
					atomic_store(&a->unsynced, false);
				s->action = TC_ARRAY_SYNC_IDLE;
			}
		} else {
			more = true;
			while (s->inflight + nstart < depth && s->check_next < s->check_end &&
			       now >= s->next_due) {
				/* A resync skips what the write-intent map says is in sync. */
				if (s->resync && !sync_window_needs(a, s->check_next)) {
					s->check_next++;
					s->check_pos++;
					continue;
				}
				struct array_sync_win *w = &s->wins[s->check_next % SYNC_MAX_DEPTH];
				memset(w, 0, sizeof(*w));
				w->a = a;
				w->kind = s->action == TC_ARRAY_SYNC_CHECK ? SYNC_CHECK : SYNC_REPAIR;
				w->row = s->check_next++;
				start[nstart++] = w;
				sync_pace(a, now, a->level->parity ? a->chunk
					  : a->chunk * a->copies / a->n);
			}
			more = s->check_next < s->check_end;
			/* A resync that skipped to the end: finish on the next tick. */
			if (!more && !nstart && !s->inflight)
				again = true;
		}
	}
	s->inflight += nstart;
	if (nstart)
		s->inflight_kind = start[0]->kind;
	if (nstart && !s->marked) {
		s->marked = true;
		s->mark_ns = now;
		s->mark_bytes = s->bytes_done;
		s->mark_wbytes = s->wbytes_done;
	}
	/* A tick nested in a->persist's own waits (deterministic contexts run timers
	 * there) leaves the record to the running one and asks for another. */
	bool persist = s->persist_wanted && a->persist && !s->persisting;
	if (persist) {
		s->persist_wanted = false;
		s->persisting = true;
	}
	uint64_t pos = atomic_load(&a->rebuild_pos);
	pthread_mutex_unlock(&a->lock);
	if (health)
		array_health_changed(a);
	if (persist) {
		/* The persist thread (sb.c), or its work item in a deterministic
		 * context, writes the record; else (read-only) a->persist says why not. */
		int ret = array_sb_changed(a) ? 0 : a->persist(a);
		if (ret < 0 && ret != -EROFS)   /* -EROFS: assembled read-only, on purpose */
			tc_err(ctx, "array %s: recording the member states failed (%s)",
			       a->dev.name, strerror(-ret));
	}
	for (unsigned i = 0; i < nstart; i++)
		a->level->sync(a, start[i]);
	pthread_mutex_lock(&a->lock);
	if (persist) {
		s->persisting = false;
		s->persist_pos = pos;
		s->persist_ns = now;
	}
	/* The next start: at once after a state change, else when the rate allows if
	 * that is what holds the next window back; when the windows in flight are what
	 * does, the end of one re-arms (a timer re-armed at a time already due would run
	 * again in the same tc_ctx_poll()). */
	bool rate_held = more && s->inflight < depth && s->next_due > now &&
			 (limit == UINT64_MAX || s->issue_row < limit);
	if ((health || again || rate_held) && !s->closing && !s->scheduled) {
		s->scheduled = true;
		tc_ctx_timer_arm(ctx, &s->timer, health || again ? now : s->next_due);
	}
	pthread_mutex_unlock(&a->lock);
}

void array_sync_window_done(struct tc_array *a, struct array_sync_win *w)
{
	struct array_sync *s = a->sync;
	tc_ctx *ctx = a->dev.ctx;
	uint64_t now = tc_ctx_now(ctx);

	pthread_mutex_lock(&a->lock);
	if (w->kind == SYNC_REBUILD) {
		uint64_t pos = atomic_load(&a->rebuild_pos);
		if (w->result < 0 && (sync_rebuilding(a, false) & w->targets) == w->targets &&
		    !array_failed(a)) {
			tc_err(ctx, "array %s: rebuild stopped at %" PRIu64 " of %" PRIu64
			       " bytes: row %" PRIu64 " cannot be rebuilt (%s)", a->dev.name, pos,
			       a->member_size, w->row, strerror(-w->result));
			s->stopped = true;
		} else if (w->result == 0 && !w->ordered) {
			/* The position moves over the rows done from it on. */
			uint64_t prow = pos >> a->chunk_shift;
			s->done_mask |= 1ull << (w->row - prow);
			while (s->done_mask & 1) {
				s->done_mask >>= 1;
				prow++;
			}
			atomic_store(&a->rebuild_pos, prow << a->chunk_shift);
		}
	} else if (w->result == 0) {
		s->check_pos++;
		s->checked++;
		s->mismatches += w->mismatches;
	} else if (w->result != -EBUSY) {
		tc_err(ctx, "array %s: check window %" PRIu64 " failed (%s); skipped",
		       a->dev.name, w->row, strerror(-w->result));
		s->check_pos++;
	}
	s->bytes_done += w->bytes;
	if (!w->unwritten)
		s->wbytes_done += w->bytes;
	if (now - s->mark_ns >= SYNC_RATE_NS) {
		s->rate = (s->bytes_done - s->mark_bytes) * 1000000000ull / (now - s->mark_ns);
		s->wrate = (s->wbytes_done - s->mark_wbytes) * 1000000000ull /
			   (now - s->mark_ns);
		s->mark_ns = now;
		s->mark_bytes = s->bytes_done;
		s->mark_wbytes = s->wbytes_done;
	}
	s->inflight--;
	if (s->closing) {
		if (!s->inflight) {
			__atomic_store_n(&s->window_gone, true, __ATOMIC_RELEASE);   /* read by tc_ctx_wait_until */
			pthread_mutex_unlock(&a->lock);
			tc_ctx_wake(ctx);
			return;
		}
		pthread_mutex_unlock(&a->lock);
		return;
	}
	if (!s->scheduled) {
		s->scheduled = true;
		tc_ctx_timer_arm(ctx, &s->timer, s->next_due > now ? s->next_due : now);
	}
	pthread_mutex_unlock(&a->lock);
}

void array_sync_status(struct tc_array *a, struct tc_array_status *st)
{
	struct array_sync *s = a->sync;
	uint64_t now = tc_ctx_now(a->dev.ctx);

	pthread_mutex_lock(&a->lock);
	st->nextra = 0;
	for (unsigned i = 0; i < a->nspares; i++) {
		struct tc_array_member_status *e = &st->extra[st->nextra++];
		e->state = TC_MEMBER_SPARE;
		e->name = a->spare[i]->dev->name;
		e->size = a->spare[i]->dev->size;
	}
	st->spares = a->nspares;
	for (unsigned i = 0; i < a->ngone && st->nextra < TC_ARRAY_MAX_EXTRA; i++) {
		struct tc_array_member_status *e = &st->extra[st->nextra++];
		e->state = a->gone[i]->state;
		e->name = a->gone[i]->dev->name;
		e->size = a->gone[i]->dev->size;
	}
	st->sync = s->action;
	if (s->action == TC_ARRAY_SYNC_REBUILD) {
		st->sync_pos = atomic_load(&a->rebuild_pos);
		st->sync_end = a->member_size;
	} else if (s->action != TC_ARRAY_SYNC_IDLE) {
		uint64_t per = a->level->parity ? a->chunk : a->chunk * a->copies / a->n;
		st->sync_pos = s->check_pos * per;
		st->sync_end = s->check_end * per;
	}
	uint64_t rate = s->rate;
	if (!rate && s->marked && now > s->mark_ns && s->bytes_done > s->mark_bytes)
		rate = (s->bytes_done - s->mark_bytes) * 1000000000ull / (now - s->mark_ns);
	st->sync_rate = s->action != TC_ARRAY_SYNC_IDLE ? rate : 0;
	/* A rebuild's time left is that of the written rows left, at their own rate:
	 * the never-written ones (zeros only, not paced) take next to nothing, and
	 * counting them at the mean rate overstated the ETA of a mostly empty array. */
	uint64_t wrate = s->wrate;
	if (!wrate && s->marked && now > s->mark_ns && s->wbytes_done > s->mark_wbytes)
		wrate = (s->wbytes_done - s->mark_wbytes) * 1000000000ull / (now - s->mark_ns);
	/* Paced rows go no faster than the maximum rate, whatever a short window
	 * measured. */
	uint64_t cap = atomic_load(&s->max_rate);
	if (cap && wrate > cap)
		wrate = cap;
	/* No written row done yet (a rebuild starts in never-written rows): the
	 * maximum rate, when one is set, is the estimate (unlimited: unknown). */
	if (!wrate && cap && cap != UINT64_MAX)
		wrate = cap;
	bool rebuild = s->action == TC_ARRAY_SYNC_REBUILD;
	st->sync_written_rate = rebuild && s->wbytes_done ? wrate : 0;
	st->mismatches = s->mismatches;
	st->checked = s->checked;
	st->check_stopped = s->check_stopped;
	st->check_windows = s->check_end;
	st->rebuild.min_rate = atomic_load(&s->min_rate);
	st->rebuild.max_rate = atomic_load(&s->max_rate);
	st->rebuild.priority = atomic_load(&s->priority);
	st->rebuild.depth = atomic_load(&s->depth);
	pthread_mutex_unlock(&a->lock);
	/* (The map's lock is not taken under the array's.) */
	uint64_t left = st->sync_end > st->sync_pos ? st->sync_end - st->sync_pos : 0;
	uint64_t wleft;
	if (rebuild && wrate && raid_map_written_from(a, st->sync_pos, &wleft) && wleft)
		st->sync_eta_ns = (uint64_t)((double)wleft * 1e9 / (double)wrate);
	else if (st->sync_rate && left)
		st->sync_eta_ns = (uint64_t)((double)left * 1e9 / (double)st->sync_rate);
}

/* ------------------------------------------------------------------------------------
 * The mapped levels' windows (RAID 1, 10).  Rebuild: for each target member, the
 * array chunk its row holds (md's near layout: slot row x n + member, chunk slot /
 * copies), copied under that chunk's lock from the old member (a replace) or from
 * another readable copy, the next copy on a read error.  Check: the copies of one
 * array chunk compared with the first readable one; repair writes it over the others;
 * a copy that fails to read is rewritten from a good one.
 */

struct msync {
	struct array_lock lk;           /* first */
	struct tc_array *a;
	struct array_sync_win *w;
	uint32_t left;                  /* rebuild: targets still to copy */
	unsigned target;
	uint32_t tried;                 /* copies tried (bit per copy; bit 31: the old) */
	struct raid_extent ext;
	uint8_t *buf;                   /* chunk x copies */
	int result;
	uint32_t bad, differ;           /* check: copies that failed to read / differ */
	uint32_t skip;                  /* resync of a degraded mirror: copies not readable
	                                 * (in bad too, never written) */
	atomic_uint pending;
	struct array_child child[TC_ARRAY_MAX_MEMBERS];
};

static void ms_end(struct msync *m)
{
	struct tc_array *a = m->a;
	struct array_sync_win *w = m->w;

	if (m->lk.locked)
		array_lock_release(a->locks, &m->lk);
	w->result = m->result;
	free(m->buf);
	free(m);
	array_sync_window_done(a, w);
}

static void ms_next_target(struct msync *m);
static void ms_read_source(struct msync *m);

static void ms_written(struct array_child *c, int result)
{
	struct msync *m = c->owner;

	if (result < 0) {
		array_child_fail(c, "write error", -result);
		m->result = -EIO;
	}
	if (!m->left && m->result == 0)
		array_sync_advance(m->a, m->w);  /* before the last lock goes */
	if (m->lk.locked)
		array_lock_release(m->a->locks, &m->lk);
	ms_next_target(m);
}

static void ms_read_done(struct array_child *c, int result)
{
	struct msync *m = c->owner;
	struct tc_array *a = m->a;

	if (result < 0) {
		ms_read_source(m);      /* the next copy */
		return;
	}
	array_child_submit_to(a, &m->child[0], m->target, 1, TC_OP_WRITE, 0,
			      m->w->row << a->chunk_shift, a->chunk, m->buf, &sync_bulk, 0,
			      ms_written, m);
}

static void ms_read_source(struct msync *m)
{
	struct tc_array *a = m->a;
	unsigned j = m->target;

	if (!(m->tried & (1u << 31))) {
		m->tried |= 1u << 31;
		if (atomic_load(&a->m[j].old) && !atomic_load(&a->m[j].old_failed)) {
			array_child_submit_to(a, &m->child[0], j, 2, TC_OP_READ, 0,
					      m->w->row << a->chunk_shift, a->chunk, m->buf, &sync_bulk,
					      0, ms_read_done, m);
			return;
		}
	}
	for (unsigned c = 0; c < m->ext.ncopies; c++) {
		unsigned mem = m->ext.copy[c].member;
		if ((m->tried & (1u << c)) || mem == j || (m->w->targets & (1u << mem)) ||
		    !array_member_readable(a, mem, m->ext.copy[c].offset))
			continue;
		m->tried |= 1u << c;
		array_child_submit_to(a, &m->child[0], mem, 0, TC_OP_READ, 0,
				      m->ext.copy[c].offset, a->chunk, m->buf, &sync_bulk, 0,
				      ms_read_done, m);
		return;
	}
	tc_err(a->dev.ctx, "array %s: no readable copy of array chunk %" PRIu64 " to rebuild "
	       "member %u from", a->dev.name, m->lk.key, j);
	m->result = -EIO;
	m->left = 0;
	if (m->lk.locked)
		array_lock_release(a->locks, &m->lk);
	ms_end(m);
}

static void ms_locked(struct array_lock *l)
{
	struct msync *m = (struct msync *)l;
	struct tc_array *a = m->a;

	/* A region never written holds zeros on every copy: the target gets zeros and
	 * nothing is read.  Asked under the chunk's lock: a first write to the region
	 * sets its bit before it takes the lock. */
	if (!raid_map_written(a, m->w->row << a->chunk_shift)) {
		array_child_submit_to(a, &m->child[0], m->target, 1, TC_OP_WRITE_ZEROES, 0,
				      m->w->row << a->chunk_shift, a->chunk, NULL, &sync_bulk, 0,
				      ms_written, m);
		return;
	}
	ms_read_source(m);
}

static void ms_next_target(struct msync *m)
{
	struct tc_array *a = m->a;

	while (m->left && m->result == 0) {
		/* The old member of a replace last: the position moves before its lock
		 * goes (array_sync_advance). */
		unsigned j = UINT32_MAX;
		for (unsigned i = 0; i < a->n; i++)
			if ((m->left & (1u << i)) && (j == UINT32_MAX || !atomic_load(&a->m[i].old)))
				j = i;
		m->left &= ~(1u << j);
		uint64_t chunk = (m->w->row * a->n + j) / a->copies;
		if (chunk >= a->dev.size >> a->chunk_shift) {
			if (!m->left)
				array_sync_advance(a, m->w);
			continue;       /* a slot past the last chunk: unused */
		}
		m->target = j;
		m->tried = 0;
		a->level->map(a, chunk << a->chunk_shift, a->chunk, &m->ext);
		m->lk.key = chunk;
		m->lk.on_lock = ms_locked;
		if (array_lock_take(a->locks, &m->lk))
			ms_locked(&m->lk);
		return;
	}
	ms_end(m);
}

static void ms_check_written(struct array_child *c, int result)
{
	struct msync *m = c->owner;

	if (result < 0)
		array_child_fail(c, "write error", -result);
	else if (m->bad & (1u << (unsigned)(c - m->child)))
		atomic_fetch_add(&m->a->m[c->member].corrected, 1);
	if (atomic_fetch_sub(&m->pending, 1) == 1)
		ms_end(m);
}

static void ms_check_read(struct array_child *c, int result)
{
	struct msync *m = c->owner;
	struct tc_array *a = m->a;

	if (result < 0)
		m->bad |= 1u << (unsigned)(c - m->child);     /* under pending: one writer */
	if (atomic_fetch_sub(&m->pending, 1) != 1)
		return;
	unsigned ref = UINT32_MAX;
	for (unsigned i = 0; i < m->ext.ncopies && ref == UINT32_MAX; i++)
		if (!(m->bad & (1u << i)))
			ref = i;
	if (ref == UINT32_MAX) {
		m->result = -EIO;
		ms_end(m);
		return;
	}
	uint8_t *rb = m->buf + a->chunk * ref;
	for (unsigned i = 0; i < m->ext.ncopies; i++)
		if (!(m->bad & (1u << i)) && memcmp(rb, m->buf + a->chunk * i, a->chunk))
			m->differ |= 1u << i;
	if (m->differ)
		m->w->mismatches++;
	uint32_t write = (m->bad & ~m->skip) | (m->w->kind == SYNC_REPAIR ? m->differ : 0);
	atomic_store(&m->pending, 1);
	/* FUA: after a crash reads take the first readable copy before the resync has
	 * run, and what they returned must stay once the resync has made the copies
	 * agree; a rewrite left in a member's cache and lost in a later crash let the
	 * loss of the first copy's member take it back (tc-stress --arrays
	 * --write-hole seed 188, a RAID 10).  Rewrites are few: only where copies
	 * differ, or a read failed. */
	for (unsigned i = 0; i < m->ext.ncopies; i++) {
		if (!(write & (1u << i)))
			continue;
		atomic_fetch_add(&m->pending, 1);
		array_child_submit_to(a, &m->child[i], m->ext.copy[i].member, 0, TC_OP_WRITE,
				      TC_IO_FUA,
				      m->ext.copy[i].offset, a->chunk, rb, &sync_bulk, 0,
				      ms_check_written, m);
	}
	if (atomic_fetch_sub(&m->pending, 1) == 1)
		ms_end(m);
}

static void ms_check_locked(struct array_lock *l)
{
	struct msync *m = (struct msync *)l;
	struct tc_array *a = m->a;

	/* A mirror's resync after a crash goes on degraded, over the copies there are
	 * (md's raid10 resyncs degraded too): the longer it waits, the likelier the
	 * copy reads take fails before the others agree with it, and they flip. */
	bool degraded_ok = atomic_load(&a->unsynced);
	m->skip = 0;
	for (unsigned i = 0; i < m->ext.ncopies; i++)
		if (!array_member_readable(a, m->ext.copy[i].member, m->ext.copy[i].offset)) {
			if (!degraded_ok) {
				m->result = -EBUSY;
				ms_end(m);
				return;
			}
			m->skip |= 1u << i;
		}
	m->bad = m->skip;
	atomic_init(&m->pending, 1);
	for (unsigned i = 0; i < m->ext.ncopies; i++) {
		if (m->skip & (1u << i))
			continue;
		atomic_fetch_add(&m->pending, 1);
		array_child_submit_to(a, &m->child[i], m->ext.copy[i].member, 0, TC_OP_READ, 0,
				      m->ext.copy[i].offset, a->chunk, m->buf + a->chunk * i,
				      &sync_bulk, 0, ms_check_read, m);
	}
	if (atomic_fetch_sub(&m->pending, 1) == 1)
		ms_end(m);
}

void array_sync_mapped(struct tc_array *a, struct array_sync_win *w)
{
	struct msync *m = calloc(1, sizeof(*m));
	unsigned copies = w->kind == SYNC_REBUILD ? 1 : a->copies;

	if (m)
		m->buf = aligned_alloc(4096, a->chunk * copies);
	if (!m || !m->buf) {
		free(m);
		w->result = -ENOMEM;
		array_sync_window_done(a, w);
		return;
	}
	m->a = a;
	m->w = w;
	if (w->kind == SYNC_REBUILD) {
		w->bytes = a->chunk;
		m->left = w->targets;
		ms_next_target(m);
		return;
	}
	w->bytes = a->chunk * a->copies / a->n;
	a->level->map(a, w->row << a->chunk_shift, a->chunk, &m->ext);
	m->lk.key = w->row;
	m->lk.on_lock = ms_check_locked;
	if (array_lock_take(a->locks, &m->lk))
		ms_check_locked(&m->lk);
}

uint64_t array_mapped_check_windows(const struct tc_array *a)
{
	return a->dev.size >> a->chunk_shift;
}

/* ------------------------------------------------------------------------------------
 * The public calls.
 */

static struct tc_array *sync_array(tc_dev *dev, const char *what)
{
	if (!array_is_array(dev)) {
		tc_err(dev->ctx, "device %s: %s needs an array, not %s", dev->name, what,
		       dev->ops->name);
		return NULL;
	}
	struct tc_array *a = (struct tc_array *)dev;
	if (!a->level->sync) {
		tc_err(dev->ctx, "array %s: %s: %s has no redundancy", dev->name, what,
		       a->level->name);
		return NULL;
	}
	return a;
}

/* A device fit to hold a member's data. */
static int sync_fits(struct tc_array *a, tc_dev *dev, const char *what)
{
	if (dev->lbs != a->dev.lbs) {
		tc_err(a->dev.ctx, "array %s: %s %s has block size %" PRIu32 ", the array %"
		       PRIu32, a->dev.name, what, dev->name, dev->lbs, a->dev.lbs);
		return -EINVAL;
	}
	if (dev->size < a->member_size + a->data_offset) {
		tc_err(a->dev.ctx, "array %s: %s %s of %" PRIu64 " bytes is smaller than a "
		       "member's %" PRIu64, a->dev.name, what, dev->name, dev->size,
		       a->member_size + a->data_offset);
		return -EINVAL;
	}
	return 0;
}

/* The superblocks written now, after @dev (a @what) joined @a; on failure the persist
 * timer tries again. */
static void sync_persist_now(struct tc_array *a, const char *what, const char *dev)
{
	if (!a->persist)
		return;
	int r = a->persist(a);
	if (r) {
		tc_warn(a->dev.ctx, "array %s: %s %s added, but the superblocks could not be "
			"updated yet: %s", a->dev.name, what, dev, strerror(-r));
		pthread_mutex_lock(&a->lock);
		a->sync->persist_wanted = true;
		sync_schedule(a);
		pthread_mutex_unlock(&a->lock);
	}
}

int tc_array_add_spare(tc_dev *array, tc_dev *spare)
{
	struct tc_array *a = sync_array(array, "a spare");

	if (!a) {
		tc_dev_close(spare);
		return -EINVAL;
	}
	int ret = array_spare_add(a, spare, NULL, true);
	/* Its superblock at once, as mdadm --add writes the new device's before adding
	 * it: once the call returns, an assembly from the devices finds it a spare of
	 * the array (or the member it took over), not a blank device that the assembly
	 * refuses (seed 63 of tc-stress --arrays: a spare added and removed before the
	 * persist timer ran had none). */
	if (ret == 0) {
		array_sb_left_back(a, spare);
		sync_persist_now(a, "spare", spare->name);
	}
	return ret;
}

/* Under a->lock: why slot @i cannot take a member back now (logged), or 0: its state
 * must be faulty, its device (if any) idle; a device of another member in it must
 * have room among the retired ones. */
static int readd_slot_ok(struct tc_array *a, unsigned i, const char *name,
			 const uint8_t *uuid)
{
	int st = atomic_load(&a->m[i].state);
	struct array_disk *old = atomic_load(&a->m[i].disk);
	if (st != TC_MEMBER_FAULTY || a->sync->closing) {
		tc_err(a->dev.ctx, "array %s: %s held slot %u, which is %s: nothing to re-add",
		       a->dev.name, name, i, st == TC_MEMBER_ACTIVE ? "active" :
		       st == TC_MEMBER_REBUILDING ? "being rebuilt" : "closing");
		return -EBUSY;
	}
	if (old && atomic_load(&old->inflight)) {
		tc_err(a->dev.ctx, "array %s: slot %u still has requests in flight to its "
		       "faulty device; retry", a->dev.name, i);
		return -EBUSY;
	}
	if (old && strcmp(old->dev->ops->name, "missing") && memcmp(old->uuid, uuid, 16) &&
	    a->ngone == TC_ARRAY_MAX_EXTRA) {
		tc_err(a->dev.ctx, "array %s: slot %u holds faulty %s, and %u retired members "
		       "wait for removal: remove one first", a->dev.name, i, old->dev->name,
		       a->ngone);
		return -ENOSPC;
	}
	return 0;
}

/* Every check of a re-add of @dev into @a, nothing changed: the slot into *@slot, the
 * member uuid into @uuid. */
static int readd_check(struct tc_array *a, tc_dev *dev, unsigned *slot, uint8_t *uuid)
{
	if (!raid_map_has_intent(a)) {
		tc_err(a->dev.ctx, "array %s keeps no write-intent map (consistency policy "
		       "ppl): nothing tells which writes %s missed; " RAID_READD_INSTEAD,
		       a->dev.name, dev->name);
		return -EINVAL;
	}
	int r = sync_fits(a, dev, "member");
	if (!r)
		r = array_sb_member_slot(a, dev, slot, uuid);
	if (!r) {
		pthread_mutex_lock(&a->lock);
		r = readd_slot_ok(a, *slot, dev->name, uuid);
		pthread_mutex_unlock(&a->lock);
	}
	return r;
}

int tc_array_re_add_check(tc_dev *array, tc_dev *dev)
{
	struct tc_array *a = sync_array(array, "a re-add");
	uint8_t uuid[16];
	unsigned i;

	return a ? readd_check(a, dev, &i, uuid) : -EINVAL;
}

int tc_array_re_add(tc_dev *array, tc_dev *dev)
{
	struct tc_array *a = sync_array(array, "a re-add");
	uint8_t uuid[16];
	unsigned i = 0;
	int r = a ? readd_check(a, dev, &i, uuid) : -EINVAL;
	struct array_disk *d = NULL;

	if (!r && !(d = calloc(1, sizeof(*d))))
		r = -ENOMEM;
	if (r) {
		tc_dev_close(dev);
		return r;
	}
	d->dev = dev;
	d->state = TC_MEMBER_REBUILDING;
	memcpy(d->uuid, uuid, 16);
	tc_dev_watch(dev, array_member_event_fn, a);
	pthread_mutex_lock(&a->lock);
	r = readd_slot_ok(a, i, dev->name, uuid);      /* again: the lock was let go */
	if (r) {
		pthread_mutex_unlock(&a->lock);
		tc_dev_unwatch(dev, array_member_event_fn, a);
		tc_dev_close(dev);
		free(d);
		return r;
	}
	/* The slot's faulty device: this member's earlier handle or the placeholder of a
	 * member missing since the assembly is closed (the member is back); another
	 * member's (a spare that took the slot and failed before the records said so)
	 * is retired, to be removed. */
	struct array_disk *old = atomic_load(&a->m[i].disk), *drop = NULL;
	if (old && (!strcmp(old->dev->ops->name, "missing") || !memcmp(old->uuid, uuid, 16))) {
		drop = old;
	} else if (old) {
		old->state = TC_MEMBER_FAULTY;
		a->gone[a->ngone++] = old;
	}
	slot_take(a, i, d, drop, true);
	array_sb_left_back(a, dev);
	sync_persist_now(a, "member", dev->name);
	return 0;
}

/* Under a->lock: whether @a has room for one more spare (else says so, -ENOSPC). */
static int spare_room(struct tc_array *a, const tc_dev *spare)
{
	if (a->nspares + a->ngone < TC_ARRAY_MAX_EXTRA)
		return 0;
	tc_err(a->dev.ctx, "array %s: no room for spare %s: %u spares and %u retired "
	       "members (at most %u; remove some)", a->dev.name, spare->name, a->nspares,
	       a->ngone, TC_ARRAY_MAX_EXTRA);
	return -ENOSPC;
}

int array_spare_add(struct tc_array *a, tc_dev *spare, const uint8_t *uuid, bool takeover)
{
	struct array_disk *d = NULL;
	int ret = sync_fits(a, spare, "spare");

	if (ret == 0) {
		pthread_mutex_lock(&a->lock);
		ret = spare_room(a, spare);
		pthread_mutex_unlock(&a->lock);
	}
	/* A device that was a member of this array before (failed, left out at an
	 * assembly) still holds its log entries, numbered in an earlier session: once
	 * it takes a slot, recovery would replay them over the parity of later updates
	 * (tc-stress --arrays --write-hole seed 44).  Its log is cleared before it can
	 * take a slot, once the checks have passed; an inspection (no @takeover)
	 * writes nothing. */
	if (ret == 0 && takeover && a->ppl)
		ret = raid_ppl_wipe(a->dev.ctx, a->dev.name, &spare, 1);
	if (ret == 0 && !(d = calloc(1, sizeof(*d))))
		ret = -ENOMEM;
	if (ret == 0) {
		pthread_mutex_lock(&a->lock);
		ret = spare_room(a, spare);     /* again: the lock was let go */
		if (ret)
			pthread_mutex_unlock(&a->lock);
	}
	if (ret < 0) {
		free(d);
		tc_dev_close(spare);
		return ret;
	}
	d->dev = spare;
	d->state = TC_MEMBER_SPARE;
	if (uuid)
		memcpy(d->uuid, uuid, sizeof(d->uuid));
	/* No persist queued: both callers write the superblocks right after (the
	 * assembly marking the array in use, tc_array_add_spare). */
	a->spare[a->nspares++] = d;
	pthread_mutex_unlock(&a->lock);
	tc_dev_watch(spare, array_member_event_fn, a);
	tc_info(a->dev.ctx, "array %s: spare %s added", a->dev.name, spare->name);
	for (unsigned i = 0; takeover && i < a->n; i++)
		if (atomic_load(&a->m[i].state) == TC_MEMBER_FAULTY)
			array_takeover(a, i);
	return 0;
}

int tc_array_remove(tc_dev *array, const char *name)
{
	if (!array_is_array(array)) {
		tc_err(array->ctx, "device %s: removing a member needs an array, not %s",
		       array->name, array->ops->name);
		return -EINVAL;
	}
	struct tc_array *a = (struct tc_array *)array;
	struct array_disk *d = NULL;
	int ret = -ENOENT;
	const char *why = NULL;
	bool spare = false;
	char *end;
	unsigned long slot = strtoul(name, &end, 10);
	bool by_slot = *name >= '0' && *name <= '9' && !*end;

	pthread_mutex_lock(&a->lock);
	/* A slot number names the device in that slot; a placeholder (a member missing
	 * at assembly) is no device to take out. */
	char slot_name[4096];   /* a copy: the device may go once the lock is dropped */
	if (by_slot && slot < a->n && a->m[slot].dev) {
		snprintf(slot_name, sizeof(slot_name), "%s", a->m[slot].dev->name);
		name = slot_name;
	}
	for (unsigned i = 0; i < a->n && ret == -ENOENT; i++)
		if (a->m[i].dev && !strcmp(a->m[i].dev->ops->name, "missing") &&
		    !strcmp(a->m[i].dev->name, name)) {
			ret = -EINVAL;
			why = "stands for a member missing since the assembly, not a device: "
			      "nothing to remove (`array add-spare` gives the slot one)";
		}
	for (unsigned i = 0; i < a->nspares && !d && ret == -ENOENT; i++)
		if (!strcmp(a->spare[i]->dev->name, name)) {
			d = a->spare[i];
			spare = true;
			memmove(&a->spare[i], &a->spare[i + 1],
				(--a->nspares - i) * sizeof(a->spare[0]));
		}
	for (unsigned i = 0; i < a->ngone && !d && ret == -ENOENT; i++) {
		if (strcmp(a->gone[i]->dev->name, name))
			continue;
		if (atomic_load(&a->gone[i]->inflight)) {
			ret = -EBUSY;
			why = "has requests in flight (retry)";
			break;
		}
		d = a->gone[i];
		memmove(&a->gone[i], &a->gone[i + 1], (--a->ngone - i) * sizeof(a->gone[0]));
	}
	for (unsigned i = 0; i < a->n && !d && ret == -ENOENT; i++) {
		struct array_disk *old = atomic_load(&a->m[i].old);
		if (old && !strcmp(old->dev->name, name)) {
			ret = -EBUSY;
			why = "is being replaced";
			break;
		}
		if (!a->m[i].dev || strcmp(a->m[i].dev->name, name))
			continue;
		int st = atomic_load(&a->m[i].state);
		struct array_disk *cur = atomic_load(&a->m[i].disk);
		if (a->level->id == TC_RAID0) {
			/* Nothing takes its place, and a host holds a RAID 0's members (the
			 * legs of a RAID 50 / 60) for the array's life: tc_array_member. */
			ret = -EBUSY;
			why = "is a member of a RAID 0, which keeps its members";
		} else if (st != TC_MEMBER_FAULTY) {
			ret = -EBUSY;
			why = st == TC_MEMBER_ACTIVE ? "is active (fail it first)"
				: "is rebuilding (fail it first)";
		} else if (atomic_load(&cur->inflight)) {
			ret = -EBUSY;
			why = "has requests in flight (retry)";
		} else {
			d = cur;
			atomic_store(&a->m[i].disk, NULL);
			a->m[i].dev = NULL;
		}
	}
	if (d) {
		a->sync->persist_wanted = true;
		sync_schedule(a);
	}
	pthread_mutex_unlock(&a->lock);
	if (!d) {
		if (ret == -ENOENT && by_slot)
			tc_err(a->dev.ctx, "array %s: no slot %s with a device (slots 0..%u)",
			       a->dev.name, name, a->n - 1);
		else if (ret == -ENOENT)
			tc_err(a->dev.ctx, "array %s: no member or spare named %s", a->dev.name,
			       name);
		else
			tc_err(a->dev.ctx, "array %s: %s %s%s", a->dev.name, name, why,
			       ret == -EINVAL ? "" : ": not removed");
		return ret;
	}
	tc_dev_unwatch(d->dev, array_member_event_fn, a);
	/* A spare's superblock would bring it back at the next assembly; a retired or
	 * faulty member's is left out there by the records (and kept, for inspection). */
	int r = spare ? array_sb_forget(a, d->dev) : 0;
	if (r)
		tc_warn(a->dev.ctx, "array %s: spare %s: erasing its superblock failed "
			"(%s): the next assembly takes it back as a spare if it is given "
			"(zero its first 8 KiB, or reuse it with --force)", a->dev.name,
			d->dev->name, strerror(-r));
	tc_info(a->dev.ctx, "array %s: %s removed", a->dev.name, d->dev->name);
	tc_dev_close(d->dev);
	free(d);
	return 0;
}

/* Under a->lock: why member @i of @a cannot be replaced now (said, -EBUSY or
 * -ENOSPC), or 0. */
static int replace_refused(struct tc_array *a, unsigned i)
{
	if (atomic_load(&a->m[i].state) != TC_MEMBER_ACTIVE) {
		tc_err(a->dev.ctx, "array %s: member %u (%s) is not active: nothing to copy "
		       "from (add a spare instead)", a->dev.name, i,
		       a->m[i].dev ? a->m[i].dev->name : "removed");
		return -EBUSY;
	}
	if (a->sync->action != TC_ARRAY_SYNC_IDLE || a->sync->inflight) {
		tc_err(a->dev.ctx, "array %s: a %s runs: one pass at a time", a->dev.name,
		       a->sync->action == TC_ARRAY_SYNC_REBUILD ? "rebuild" : "check");
		return -EBUSY;
	}
	if (a->nspares + a->ngone >= TC_ARRAY_MAX_EXTRA) {
		tc_err(a->dev.ctx, "array %s: no room to retire member %u: remove a spare or "
		       "a retired member first", a->dev.name, i);
		return -ENOSPC;
	}
	return 0;
}

int tc_array_replace(tc_dev *array, unsigned i, tc_dev *dev)
{
	struct tc_array *a = sync_array(array, "replace");
	struct array_disk *d = NULL;
	int ret = a ? 0 : -EINVAL;

	if (a && i >= a->n) {
		tc_err(a->dev.ctx, "array %s: no member %u to replace (it has %u)", a->dev.name,
		       i, a->n);
		ret = -EINVAL;
	}
	if (ret == 0)
		ret = sync_fits(a, dev, "replacement");
	if (ret == 0) {
		pthread_mutex_lock(&a->lock);
		ret = replace_refused(a, i);
		pthread_mutex_unlock(&a->lock);
	}
	if (ret == 0 && a->ppl)         /* as a spare's (array_spare_add) */
		ret = raid_ppl_wipe(a->dev.ctx, a->dev.name, &dev, 1);
	if (ret == 0 && !(d = calloc(1, sizeof(*d))))
		ret = -ENOMEM;
	if (ret == 0) {
		pthread_mutex_lock(&a->lock);
		ret = replace_refused(a, i);    /* again: the lock was let go */
		if (ret < 0)
			pthread_mutex_unlock(&a->lock);
	}
	if (ret < 0) {
		free(d);
		tc_dev_close(dev);
		return ret;
	}
	d->dev = dev;
	/* The old member first: a submit that sees the new device sees it (array.c). */
	atomic_store(&a->rebuild_pos, 0);
	atomic_store(&a->m[i].old_failed, false);
	atomic_store(&a->m[i].pending, false);
	struct array_disk *was = atomic_load(&a->m[i].disk);
	/* Its name for the log, taken now: once the lock is let go the copy may end at
	 * once and retire it (a NULL old slot: test_threads_spare under ASan). */
	char was_name[256];
	snprintf(was_name, sizeof(was_name), "%s", was->dev->name);
	atomic_store(&a->m[i].old, was);
	atomic_store(&a->m[i].state, TC_MEMBER_REBUILDING);
	atomic_store(&a->m[i].disk, d);
	a->m[i].dev = dev;
	if (a->sync->action != TC_ARRAY_SYNC_IDLE && a->sync->action != TC_ARRAY_SYNC_REBUILD)
		a->sync->check_stopped = true;
	a->sync->action = TC_ARRAY_SYNC_REBUILD;
	a->sync->stopped = false;
	a->sync->persist_wanted = true;
	sync_schedule(a);
	pthread_mutex_unlock(&a->lock);
	tc_dev_watch(dev, array_member_event_fn, a);
	tc_info(a->dev.ctx, "array %s: replacing member %u (%s) by %s", a->dev.name, i,
		was_name, dev->name);
	/* As for a spare: once the call returns, an assembly finds the successor in its
	 * slot (tc-stress --arrays --write-hole seed 174: a cut right after the replace
	 * left it without a superblock, and the assembly refused it). */
	array_sb_left_back(a, dev);
	sync_persist_now(a, "replacement", dev->name);
	return 0;
}

void array_rebuild_get(struct tc_array *a, struct tc_array_rebuild_opts *o)
{
	struct array_sync *s = a->sync;
	uint64_t lo = atomic_load(&s->min_rate), hi = atomic_load(&s->max_rate);
	unsigned depth = atomic_load(&s->depth);

	memset(o, 0, sizeof(*o));
	o->min_rate = lo == TC_ARRAY_REBUILD_MIN_DEFAULT ? 0 : lo;
	o->max_rate = hi == TC_ARRAY_REBUILD_MAX_DEFAULT ? 0 : hi;
	o->priority = atomic_load(&s->priority);
	o->depth = depth == SYNC_DEPTH_DEFAULT ? 0 : depth;
}

int tc_array_set_rebuild(tc_dev *array, const struct tc_array_rebuild_opts *o)
{
	struct tc_array *a = sync_array(array, "rebuild rates");

	if (!a)
		return -EINVAL;
	uint64_t lo = o->min_rate ? o->min_rate : TC_ARRAY_REBUILD_MIN_DEFAULT;
	uint64_t hi = o->max_rate ? o->max_rate : TC_ARRAY_REBUILD_MAX_DEFAULT;
	if (lo > hi) {
		tc_err(a->dev.ctx, "array %s: rebuild floor %.1f MB/s (--min) above the ceiling "
		       "%.1f MB/s (--max)", a->dev.name, (double)lo / 1e6, (double)hi / 1e6);
		return -EINVAL;
	}
	if (o->priority > 100) {
		tc_err(a->dev.ctx, "array %s: rebuild priority %u (0 to 100)", a->dev.name,
		       o->priority);
		return -EINVAL;
	}
	/* Checked before anything is stored: a refused call changes nothing. */
	if (o->depth > SYNC_MAX_DEPTH) {
		tc_err(a->dev.ctx, "array %s: %u rebuild windows in flight (1 to %u)",
		       a->dev.name, o->depth, SYNC_MAX_DEPTH);
		return -EINVAL;
	}
	struct tc_array_rebuild_opts was;
	array_rebuild_get(a, &was);
	atomic_store(&a->sync->min_rate, lo);
	atomic_store(&a->sync->max_rate, hi);
	atomic_store(&a->sync->priority, o->priority);
	atomic_store(&a->sync->depth, o->depth ? o->depth : SYNC_DEPTH_DEFAULT);
	struct tc_array_rebuild_opts now;
	array_rebuild_get(a, &now);
	/* Kept in the superblocks (soon, off this thread), so a restart keeps them. */
	if (memcmp(&was, &now, sizeof(now)) && a->persist) {
		array_sb_keep_rates(a);
		array_sb_changed(a);
	}
	/* A window waiting for a slow rate: start it at the new one. */
	pthread_mutex_lock(&a->lock);
	if (a->sync->scheduled && !a->sync->closing) {
		a->sync->next_due = tc_ctx_now(a->dev.ctx);
		tc_ctx_timer_arm(a->dev.ctx, &a->sync->timer, a->sync->next_due);
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* Under a->lock: a check or repair pass over every window (a @resync: only those of
 * the write-intent map's regions to resync) starts. */
static void sync_check_begin(struct tc_array *a, enum tc_array_sync action, bool resync)
{
	struct array_sync *s = a->sync;

	s->action = action;
	s->resync = resync;
	s->check_pos = s->check_next = 0;
	s->check_end = a->level->check_windows(a);
	s->checked = s->mismatches = 0;
	s->check_stopped = false;
	sync_schedule(a);
}

int tc_array_check(tc_dev *array, bool repair)
{
	struct tc_array *a = sync_array(array, "a check");
	int ret = 0;

	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	struct array_sync *s = a->sync;
	if (s->action != TC_ARRAY_SYNC_IDLE || s->inflight) {
		tc_err(a->dev.ctx, "array %s: a %s runs: one pass at a time", a->dev.name,
		       s->action == TC_ARRAY_SYNC_REBUILD ? "rebuild" : "check");
		ret = -EBUSY;
	} else if (atomic_load(&a->faulty) || sync_rebuilding(a, true)) {
		tc_err(a->dev.ctx, "array %s: degraded: nothing to check against (rebuild "
		       "first)", a->dev.name);
		ret = -EBUSY;
	} else {
		sync_check_begin(a, repair ? TC_ARRAY_SYNC_REPAIR : TC_ARRAY_SYNC_CHECK, false);
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int array_resync_start(struct tc_array *a)
{
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	struct array_sync *s = a->sync;
	bool mirror = atomic_load(&a->unsynced);
	if (s->action != TC_ARRAY_SYNC_IDLE || s->inflight ||
	    (atomic_load(&a->faulty) && !mirror) ||
	    !((a->level->parity && raid_map_has_intent(a)) || mirror))
		ret = -EBUSY;
	else
		sync_check_begin(a, TC_ARRAY_SYNC_REPAIR, true);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int tc_array_wait(tc_dev *array)
{
	if (!array_is_array(array)) {
		tc_err(array->ctx, "device %s: waiting for a rebuild needs an array, not %s",
		       array->name, array->ops->name);
		return -EINVAL;
	}
	struct tc_array *a = (struct tc_array *)array;
	tc_ctx *ctx = a->dev.ctx;

	for (;;) {
		pthread_mutex_lock(&a->lock);
		bool busy = a->sync->action != TC_ARRAY_SYNC_IDLE || a->sync->scheduled ||
			    a->sync->inflight;
		pthread_mutex_unlock(&a->lock);
		if (!busy)
			return 0;
		if (tc_ctx_deterministic(ctx)) {
			if (tc_ctx_poll(ctx, 256))
				continue;
			uint64_t next = tc_ctx_next_deadline(ctx), now = tc_ctx_now(ctx);
			if (next == UINT64_MAX)
				return -EDEADLK;
			tc_ctx_advance(ctx, next > now ? next - now : 0);
		} else {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}
