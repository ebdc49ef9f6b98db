/* SPDX-License-Identifier: MIT */
/*
 * array.c - the "array" backend: a device over N member devices, with a RAID level
 * (raid.h's ops tables: raid0.c, raid1.c, raid10.c, raid56.c) deciding where data and
 * parity go.
 *
 * What every level shares is here: the member table and member states (active,
 * faulty), child requests to members (each a struct array_child, its completion
 * calling the level back, as fault.c's child requests do), FLUSH to every active
 * member, the limits an array publishes (io_min = chunk, io_opt = chunk x data
 * members), and health: a member whose write (or flush) fails becomes faulty, the
 * array then reports TC_DEV_DEGRADED while it still serves every byte and
 * TC_DEV_FAILED past its redundancy, after which every request fails with -EIO.  A
 * failed read is the level's to repair (md's read-error correction: reconstruct the
 * data, rewrite it to the member, and fail the member only if that rewrite fails).
 *
 * The mapped engine for the levels without parity (RAID 0, 1, 10) is here too: a
 * request is cut into runs that map contiguously (level->map), a write goes to every
 * active copy of each run (it succeeds while one copy was written: the members that
 * failed are faulty from then on), a read goes to one copy (the active one with the
 * fewest requests in flight) and on an I/O error to the next, whose data is then
 * rewritten to the member that failed.  On redundant levels DISCARD becomes
 * WRITE_ZEROES, so that the copies never disagree.
 *
 * Nothing blocks: every step runs from a member's completion, on whatever thread
 * completes it.  A request is never completed inside tc_dev_submit(): a thread-local
 * depth counter tells array_complete() to go through a context work item when an
 * array submit is on the stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid.h"
#include "parity.h"

static const struct tc_dev_ops array_ops;

bool array_is_array(const tc_dev *dev)
{
	return dev->ops == &array_ops;
}

static _Thread_local unsigned array_submit_depth;

static const struct tc_raid_level *const array_levels[] = {
	&raid0_level, &raid1_level, &raid5_level, &raid6_level, &raid10_level,
};

static const struct tc_raid_level *array_level_of(unsigned id)
{
	for (size_t i = 0; i < sizeof(array_levels) / sizeof(array_levels[0]); i++)
		if ((unsigned)array_levels[i]->id == id)
			return array_levels[i];
	return NULL;
}

const char *tc_raid_level_name(unsigned level)
{
	const struct tc_raid_level *l = array_level_of(level);

	return l ? l->name : NULL;
}

int tc_raid_level_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(array_levels) / sizeof(array_levels[0]); i++) {
		const struct tc_raid_level *l = array_levels[i];
		if (!strcasecmp(s, l->name) || !strcmp(s, l->name + 4))
			return (int)l->id;
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------------------------
 * Health.
 */

/* Member failures survivable now: the level's, plus the least of the active members'
 * own (an array of arrays); negative when failed. */
static int array_redundancy_now(struct tc_array *a, uint32_t faulty)
{
	int r = a->level->redundancy(a, faulty);
	int least = 255;

	if (r < 0)
		return r;
	for (unsigned i = 0; i < a->n; i++) {
		if (faulty & (1u << i))
			continue;
		struct tc_dev_limits l;
		tc_dev_limits(a->m[i].dev, &l);
		if (l.redundancy < least)
			least = l.redundancy;
	}
	r += least;
	return r > 255 ? 255 : r;
}

/* Recompute the redundancy with the current faulty set and report a change. */
void array_health_changed(struct tc_array *a)
{
	pthread_mutex_lock(&a->lock);
	uint32_t faulty = atomic_load(&a->faulty);
	int r = array_redundancy_now(a, faulty);
	int was = a->redundancy;
	a->redundancy = r;
	if (r < 0 && was >= 0) {
		atomic_store_explicit(&a->failed, true, memory_order_release);
		tc_err(a->dev.ctx, "array %s: failed: %u of %u members faulty, past its "
		       "redundancy; every request fails with EIO", a->dev.name,
		       (unsigned)__builtin_popcount(faulty), a->n);
		tc_dev_event(&a->dev, TC_DEV_FAILED, 0);
	} else if (r >= 0 && r < was) {
		tc_dev_event(&a->dev, TC_DEV_DEGRADED, (uint8_t)r);
	} else if (r >= 0 && r > was && was >= 0) {
		tc_dev_event(&a->dev, TC_DEV_REDUNDANT, (uint8_t)r);
	}
	pthread_mutex_unlock(&a->lock);
}

static bool member_fail(struct tc_array *a, unsigned i, const char *why, int err,
			enum tc_log_level level);

bool array_member_fail(struct tc_array *a, unsigned i, const char *why, int err)
{
	return member_fail(a, i, why, err, TC_LOG_ERROR);
}

bool array_member_absent(struct tc_array *a, unsigned i, const char *why)
{
	return member_fail(a, i, why, 0, TC_LOG_WARN);
}

/* The successor of a replace of slot @i failed (@why, @err) while the old member has
 * not: the old member, which took every write of the replace (below the copy position
 * as well as above it), keeps the slot and the array its redundancy; the successor is
 * retired faulty into the room the replace reserved (md gives up a failed replacement
 * so).  The slot's device is switched before the old pointer is cleared, so that a
 * request submitted meanwhile goes to the old member, at worst twice.  Returns false
 * (nothing done) when slot @i is no replace with a working old member. */
static bool successor_fail(struct tc_array *a, unsigned i, const char *why, int err)
{
	pthread_mutex_lock(&a->lock);
	struct array_disk *old = atomic_load(&a->m[i].old);
	if (!old || atomic_load(&a->m[i].old_failed) ||
	    atomic_load(&a->m[i].state) != TC_MEMBER_REBUILDING) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	struct array_disk *succ = atomic_load(&a->m[i].disk);
	atomic_store(&a->m[i].disk, old);
	a->m[i].dev = old->dev;
	atomic_store(&a->m[i].old, NULL);
	atomic_store(&a->m[i].pending, false);
	atomic_store(&a->m[i].state, TC_MEMBER_ACTIVE);
	old->state = TC_MEMBER_ACTIVE;
	succ->state = TC_MEMBER_FAULTY;
	if (a->ngone < TC_ARRAY_MAX_EXTRA)
		a->gone[a->ngone++] = succ;
	pthread_mutex_unlock(&a->lock);
	tc_err(a->dev.ctx, "array %s: replace of member %u stopped: its successor %s "
	       "failed (%s%s%s); %s keeps the slot", a->dev.name, i, succ->dev->name, why,
	       err ? ": " : "", err ? strerror(err) : "", old->dev->name);
	array_health_changed(a);
	if (a->persist)
		array_sb_changed(a);
	if (a->sync)
		array_sync_kick(a);     /* the pass ends: nothing left to copy to */
	raid_map_whole(a);              /* every slot may be active again */
	return true;
}

static bool member_fail(struct tc_array *a, unsigned i, const char *why, int err,
			enum tc_log_level level)
{
	int expect = TC_MEMBER_ACTIVE;

	if (!atomic_compare_exchange_strong(&a->m[i].state, &expect, TC_MEMBER_FAULTY)) {
		if (expect == TC_MEMBER_REBUILDING && successor_fail(a, i, why, err))
			return true;
		/* A member being rebuilt (a spare, a replace's successor) fails too. */
		if (expect != TC_MEMBER_REBUILDING ||
		    !atomic_compare_exchange_strong(&a->m[i].state, &expect, TC_MEMBER_FAULTY))
			return false;
		struct array_disk *old = atomic_exchange(&a->m[i].old, NULL);
		if (old) {
			/* Both devices of a replace failed (successor_fail() keeps the old
			 * one while it has not). */
			pthread_mutex_lock(&a->lock);
			old->state = TC_MEMBER_FAULTY;
			if (a->ngone < TC_ARRAY_MAX_EXTRA)
				a->gone[a->ngone++] = old;
			pthread_mutex_unlock(&a->lock);
		}
	}
	atomic_fetch_or(&a->faulty, 1u << i);
	atomic_fetch_add(&a->fail_count, 1);
	atomic_fetch_add(&a->health, 1);
	const char *name = a->m[i].dev ? a->m[i].dev->name : "removed";
	if (err)
		tc_log(a->dev.ctx, level, "array %s: member %u (%s) faulty after a %s (%s)",
		       a->dev.name, i, name, why, strerror(err));
	else
		tc_log(a->dev.ctx, level, "array %s: member %u (%s) faulty: %s", a->dev.name, i,
		       name, why);
	array_health_changed(a);
	if (a->persist)
		array_sb_changed(a);
	if (!array_failed(a))
		array_takeover(a, i);
	return true;
}

/* A request to @d, which served slot @i when it was submitted, failed after @d left
 * the slot (a spare took the place of a member failed by an earlier request, or a
 * replace gave up its successor): the slot's device now is not to blame. */
static void disk_gone_fail(struct tc_array *a, unsigned i, const struct array_disk *d,
			   const char *why, int err)
{
	tc_info(a->dev.ctx, "array %s: %s, no longer member %u, failed a request sent "
		"before it left: %s (%s)", a->dev.name, d->dev->name, i, why, strerror(err));
}

/* The old member @d of slot @i's replace failed a request (@why, @err): given up.  If
 * the replace ended meanwhile, the request is the slot's own when @d kept it. */
static void array_old_fail(struct tc_array *a, unsigned i, const struct array_disk *d,
			   const char *why, int err)
{
	if (atomic_load(&a->m[i].old) != d) {
		if (atomic_load(&a->m[i].disk) == d)
			array_member_fail(a, i, why, err);
		else
			disk_gone_fail(a, i, d, why, err);
		return;
	}
	if (atomic_exchange(&a->m[i].old_failed, true))
		return;
	/* The replace goes on, by reconstruction: the slot holds valid data below the
	 * rebuild position only, as after a spare's takeover. */
	tc_err(a->dev.ctx, "array %s: member %u being replaced (%s) failed after a %s (%s); "
	       "rebuilding its successor from the other members", a->dev.name, i,
	       d->dev->name, why, strerror(err));
	atomic_fetch_or(&a->faulty, 1u << i);
	array_health_changed(a);
}

void array_child_fail(struct array_child *c, const char *why, int err)
{
	if (c->to_old)
		array_old_fail(c->a, c->member, c->disk, why, err);
	else if (atomic_load(&c->a->m[c->member].disk) == c->disk)
		array_member_fail(c->a, c->member, why, err);
	else
		disk_gone_fail(c->a, c->member, c->disk, why, err);
}

/* A member's own health change (an array of arrays, a fault layer). */
static void array_member_event(void *opaque, tc_dev *member, enum tc_dev_event ev)
{
	struct tc_array *a = opaque;

	for (unsigned i = 0; i < a->n; i++) {
		if (!a->m[i].dev || a->m[i].dev != member)
			continue;
		/* A part of the member failed (a leg lost a member of its own). */
		if (ev == TC_DEV_DEGRADED || ev == TC_DEV_FAILED)
			atomic_fetch_add(&a->health, 1);
		if (ev == TC_DEV_FAILED)
			array_member_fail(a, i, "failure it reported", 0);
		else
			array_health_changed(a);
		return;
	}
}

void array_member_event_fn(void *opaque, tc_dev *member, enum tc_dev_event ev)
{
	array_member_event(opaque, member, ev);
}

tc_dev *tc_array_member(tc_dev *dev, unsigned i)
{
	if (!array_is_array(dev))
		return NULL;
	struct tc_array *a = (struct tc_array *)dev;
	if (i >= a->n)
		return NULL;
	return atomic_load(&a->m[i].dev);   /* NULL: emptied by tc_array_remove */
}

int tc_array_level(tc_dev *dev)
{
	return array_is_array(dev) ? (int)((struct tc_array *)dev)->level->id : -EINVAL;
}

int tc_array_fail_member(tc_dev *dev, unsigned i)
{
	if (dev->ops != &array_ops) {
		tc_err(dev->ctx, "device %s: failing a member needs an array, not %s",
		       dev->name, dev->ops->name);
		return -EINVAL;
	}
	struct tc_array *a = (struct tc_array *)dev;
	if (i >= a->n) {
		tc_err(dev->ctx, "array %s: no member %u (it has %u)", dev->name, i, a->n);
		return -EINVAL;
	}
	return array_member_fail(a, i, "failed by request", 0) ? 0 : 1;
}

int tc_array_fail_survives(tc_dev *dev, unsigned i)
{
	if (dev->ops != &array_ops)
		return -EINVAL;
	struct tc_array *a = (struct tc_array *)dev;
	if (i >= a->n)
		return -EINVAL;
	uint32_t faulty = atomic_load(&a->faulty) | (1u << i);
	return array_redundancy_now(a, faulty) >= 0;
}

int tc_array_status(tc_dev *dev, struct tc_array_status *st)
{
	if (dev->ops != &array_ops) {
		tc_err(dev->ctx, "device %s: array status needs an array, not %s", dev->name,
		       dev->ops->name);
		return -EINVAL;
	}
	struct tc_array *a = (struct tc_array *)dev;
	memset(st, 0, sizeof(*st));
	st->level = a->level->id;
	st->chunk = (uint32_t)a->chunk;
	st->members = a->n;
	st->data_members = a->level->data_members(a);
	st->copies = a->copies;
	st->parity = a->level->parity;
	st->size = a->dev.size;
	st->member_size = a->member_size;
	st->data_offset = a->data_offset;
	st->stripe_writes_full = atomic_load(&a->wplan[WPLAN_FULL]);
	st->stripe_writes_rcw = atomic_load(&a->wplan[WPLAN_RCW]);
	st->stripe_writes_rmw = atomic_load(&a->wplan[WPLAN_RMW]);
	st->stripe_writes_degraded = atomic_load(&a->wplan[WPLAN_DEGRADED]);
	pthread_mutex_lock(&a->lock);
	st->redundancy = a->redundancy < 0 ? -1 : a->redundancy;
	pthread_mutex_unlock(&a->lock);
	for (unsigned i = 0; i < a->n; i++) {
		struct tc_array_member_status *ms = &st->member[i];
		ms->state = atomic_load(&a->m[i].state);
		ms->name = a->m[i].dev ? a->m[i].dev->name : "(removed)";
		ms->size = a->m[i].dev ? a->m[i].dev->size : 0;
		struct array_disk *old = atomic_load(&a->m[i].old);
		ms->replacing = old ? old->dev->name : NULL;
		ms->read_errors = atomic_load(&a->m[i].read_errors);
		ms->corrected = atomic_load(&a->m[i].corrected);
		if (ms->state == TC_MEMBER_FAULTY)
			st->faulty++;
	}
	st->failed = array_failed(a);
	st->degraded = !st->failed && (atomic_load(&a->faulty) != 0);
	array_sync_status(a, st);
	st->ppl = a->ppl;
	raid_map_counts(a, &st->map_regions, &st->map_dirty, &st->map_region_size);
	raid_map_written_counts(a, &st->written_map_regions, &st->written_regions,
				&st->written_region_size);
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

int array_check(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members,
		unsigned n, const struct tc_raid_level **levelp, uint32_t *chunkp,
		unsigned *copiesp)
{
	const struct tc_raid_level *l = array_level_of((unsigned)o->level);
	uint32_t chunk = o->chunk ? o->chunk : TC_ARRAY_CHUNK_DEFAULT;
	unsigned copies = 1, min;

	if (!l) {
		tc_err(ctx, "array: unknown RAID level %u (raid0, raid1, raid5, raid6, raid10)",
		       (unsigned)o->level);
		return -EINVAL;
	}
	/* RAID 0 takes any multiple of 4 KiB (md's raid0 does too): the outer array of a
	 * RAID 50 / 60 needs a chunk of one leg stripe, ten chunks of a RAID 6 of twelve.
	 * The levels with redundancy keep powers of two (their region map and stripe
	 * arithmetic shift by the chunk). */
	if (l->id == TC_RAID0 ? chunk % TC_ARRAY_CHUNK_MIN || chunk < TC_ARRAY_CHUNK_MIN ||
	    chunk > TC_ARRAY_CHUNK_MAX : chunk & (chunk - 1) || chunk < TC_ARRAY_CHUNK_MIN ||
	    chunk > TC_ARRAY_CHUNK_MAX) {
		if (l->id == TC_RAID0)
			tc_err(ctx, "array: chunk %" PRIu32 " bytes is not a multiple of %u from "
			       "%u to %u", chunk, TC_ARRAY_CHUNK_MIN, TC_ARRAY_CHUNK_MIN,
			       TC_ARRAY_CHUNK_MAX);
		else
			tc_err(ctx, "array: chunk %" PRIu32 " bytes is not a power of two from %u "
			       "to %u (%s; RAID 0 takes any multiple of %u)", chunk,
			       TC_ARRAY_CHUNK_MIN, TC_ARRAY_CHUNK_MAX, l->name, TC_ARRAY_CHUNK_MIN);
		return -EINVAL;
	}
	min = l->min_members;
	if (l->id == TC_RAID10) {
		copies = o->copies ? o->copies : 2;
		if (copies < 2 || copies > TC_ARRAY_MAX_MEMBERS) {
			tc_err(ctx, "array: %u copies for raid10 (2 to %u)", copies,
			       TC_ARRAY_MAX_MEMBERS);
			return -EINVAL;
		}
		if (copies > min)
			min = copies;
	} else if (o->copies) {
		tc_err(ctx, "array: copies %u given for %s (raid10 only)", o->copies, l->name);
		return -EINVAL;
	} else if (l->id == TC_RAID1) {
		copies = n;
	}
	if (n < min || n > TC_ARRAY_MAX_MEMBERS) {
		tc_err(ctx, "array: %u members for %s (it needs %u to %u)", n, l->name, min,
		       TC_ARRAY_MAX_MEMBERS);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!members[i]) {
			tc_err(ctx, "array: member %u is missing (NULL)", i);
			return -EINVAL;
		}
		if (members[i]->lbs != members[0]->lbs) {
			tc_err(ctx, "array: member %u (%s) has block size %" PRIu32 ", member 0 "
			       "(%s) %" PRIu32, i, members[i]->name, members[i]->lbs,
			       members[0]->name, members[0]->lbs);
			return -EINVAL;
		}
		if (members[i]->size < chunk) {
			tc_err(ctx, "array: member %u (%s) of %" PRIu64 " bytes is smaller than "
			       "one chunk (%" PRIu32 ")", i, members[i]->name, members[i]->size,
			       chunk);
			return -EINVAL;
		}
	}
	if (chunk < members[0]->lbs || chunk % members[0]->lbs) {
		tc_err(ctx, "array: chunk %" PRIu32 " is not a whole number of the members' "
		       "blocks of %" PRIu32 " bytes", chunk, members[0]->lbs);
		return -EINVAL;
	}
	*levelp = l;
	*chunkp = chunk;
	*copiesp = copies;
	return 0;
}

static void array_close_members(tc_dev **members, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		tc_dev_close(members[i]);
}

static void array_name(char *buf, size_t size, const struct tc_raid_level *l,
		       tc_dev **members, unsigned n)
{
	size_t used = (size_t)snprintf(buf, size, "%s(", l->name);

	for (unsigned i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "",
					 members[i]->name);
	if (used < size)
		snprintf(buf + used, size - used, ")");
}

int tc_dev_new_array(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members,
		     unsigned n, tc_dev **out)
{
	return array_open(ctx, o, members, n, NULL, 0, 0, out);
}

int array_open(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members, unsigned n,
	       const char *aname, uint64_t data_offset, uint64_t member_size, tc_dev **out)
{
	const struct tc_raid_level *l;
	struct tc_array *a;
	uint32_t chunk;
	unsigned copies;
	char name[256];
	int ret;

	*out = NULL;
	ret = array_check(ctx, o, members, n, &l, &chunk, &copies);
	if (ret < 0) {
		array_close_members(members, n);
		return ret;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		array_close_members(members, n);
		return -ENOMEM;
	}
	a->level = l;
	a->n = n;
	a->copies = copies;
	a->chunk = chunk;
	/* Only the levels with redundancy shift by it (powers of two, array_check). */
	a->chunk_shift = (unsigned)__builtin_ctz(chunk);
	uint64_t smallest = UINT64_MAX, largest = 0;
	for (unsigned i = 0; i < n; i++) {
		a->m[i].disk = calloc(1, sizeof(*a->m[i].disk));
		if (!a->m[i].disk) {
			for (unsigned j = 0; j < i; j++)
				free(a->m[j].disk);
			free(a);
			array_close_members(members, n);
			return -ENOMEM;
		}
		a->m[i].disk->dev = members[i];
		a->m[i].dev = members[i];
		atomic_init(&a->m[i].state, TC_MEMBER_ACTIVE);
		if (members[i]->size < smallest)
			smallest = members[i]->size;
		if (members[i]->size > largest)
			largest = members[i]->size;
	}
	a->data_offset = data_offset;
	a->member_size = member_size ? member_size
		: smallest > data_offset ? (smallest - data_offset) / chunk * chunk : 0;
	if (aname)
		snprintf(name, sizeof(name), "%s", aname);
	else
		array_name(name, sizeof(name), l, members, n);
	if (largest != smallest && !member_size)
		tc_warn(ctx, "array %s: members of different sizes (%" PRIu64 " to %" PRIu64
			" bytes): %" PRIu64 " bytes of each are used", name, smallest, largest,
			a->member_size);
	pthread_mutex_init(&a->lock, NULL);
	ret = l->init ? l->init(a) : 0;
	if (ret == 0)
		ret = array_sync_init(a);
	if (ret == 0)
		ret = tc_dev_init(&a->dev, &array_ops, ctx, name, 0, members[0]->lbs);
	if (ret < 0) {
		if (l->fini)
			l->fini(a);
		array_sync_fini(a);
		array_locks_free(a->locks);
		pthread_mutex_destroy(&a->lock);
		for (unsigned i = 0; i < n; i++)
			free(a->m[i].disk);
		free(a);
		array_close_members(members, n);
		return ret;
	}
	a->dev.size = l->data_members(a) ? a->member_size * l->data_members(a)
		: a->member_size / chunk * n / copies * chunk;
	for (unsigned i = 0; i < n; i++)
		tc_dev_watch(members[i], array_member_event_fn, a);

	unsigned data = l->data_members(a);
	struct tc_dev_limits lim = {
		.io_min = l->id == TC_RAID1 ? members[0]->lbs : chunk,
		.io_opt = 0,
		.partial_stripe_expensive = l->parity > 0,
	};
	if (l->id != TC_RAID1 && data && (uint64_t)chunk * data <= UINT32_MAX)
		lim.io_opt = chunk * data;
	/* RAID 50 / 60 (RAID 0 over parity legs): a write of one leg's full stripe, on the
	 * leg's grid, is a full-stripe write, anything less a partial one; so the array
	 * is as expensive to write partially as its legs, with their stripe and chunk,
	 * when each outer chunk is a whole number of leg stripes lying on the leg's grid
	 * (docs/raid.md: give the outer array a chunk of a leg's full stripe). */
	struct tc_dev_limits ml;
	tc_dev_limits(members[0], &ml);
	if (l->id == TC_RAID0 && ml.partial_stripe_expensive && ml.io_opt) {
		bool same = true;
		for (unsigned i = 1; i < n; i++) {
			struct tc_dev_limits mi;
			tc_dev_limits(members[i], &mi);
			same &= mi.partial_stripe_expensive && mi.io_opt == ml.io_opt &&
				mi.io_min == ml.io_min;
		}
		if (same && chunk % ml.io_opt == 0 && data_offset % ml.io_opt == 0) {
			lim.partial_stripe_expensive = true;
			lim.io_opt = ml.io_opt;
			lim.io_min = ml.io_min;
		} else {
			tc_warn(ctx, "array %s: chunk %u over members with %s full stripes of %u "
				"bytes%s: every write to them is a partial-stripe write; give a "
				"chunk of a whole number of their stripes", a->dev.name, chunk,
				same ? "" : "unequal", ml.io_opt,
				same && chunk % ml.io_opt == 0 ? " not on their stripe grid "
				"(the data offset)" : "");
		}
	}
	a->redundancy = array_redundancy_now(a, 0);
	lim.redundancy = (uint8_t)a->redundancy;
	tc_dev_set_limits(&a->dev, &lim);
	*out = &a->dev;
	return 0;
}

/* ------------------------------------------------------------------------------------
 * The chunk lock of the mapped levels: a hash of keys held, a FIFO of waiters per key
 * (as raid56.c's stripe lock).
 */

#define ARRAY_LOCK_BUCKETS 256u

struct array_locks {
	pthread_mutex_t lock;
	struct array_lock *bucket[ARRAY_LOCK_BUCKETS];
};

int array_locks_new(struct array_locks **out)
{
	struct array_locks *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void array_locks_free(struct array_locks *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

bool array_lock_take(struct array_locks *t, struct array_lock *l)
{
	unsigned b = (unsigned)(l->key % ARRAY_LOCK_BUCKETS);
	bool got = true;

	pthread_mutex_lock(&t->lock);
	for (struct array_lock *h = t->bucket[b]; h; h = h->hnext)
		if (h->key == l->key) {
			l->wnext = NULL;
			if (h->wait_tail)
				h->wait_tail->wnext = l;
			else
				h->wait_head = l;
			h->wait_tail = l;
			got = false;
			break;
		}
	if (got) {
		l->hnext = t->bucket[b];
		t->bucket[b] = l;
		l->wait_head = l->wait_tail = NULL;
		l->locked = true;
	}
	/* A queued @l may be started by another thread once the table is unlocked. */
	pthread_mutex_unlock(&t->lock);
	return got;
}

void array_lock_release(struct array_locks *t, struct array_lock *l)
{
	unsigned b = (unsigned)(l->key % ARRAY_LOCK_BUCKETS);
	struct array_lock *w;

	pthread_mutex_lock(&t->lock);
	for (struct array_lock **p = &t->bucket[b]; *p; p = &(*p)->hnext)
		if (*p == l) {
			*p = l->hnext;
			break;
		}
	w = l->wait_head;
	if (w) {
		w->wait_head = w->wnext;
		w->wait_tail = w->wnext ? l->wait_tail : NULL;
		w->hnext = t->bucket[b];
		t->bucket[b] = w;
		w->locked = true;
	}
	l->locked = false;
	pthread_mutex_unlock(&t->lock);
	if (w)
		w->on_lock(w);
}

/* ------------------------------------------------------------------------------------
 * Child requests.
 */

void array_complete(struct tc_array *a, struct tc_io *io, int result)
{
	/* After a member failure, writes complete once the superblocks record it. */
	if (a->persist && io->op != TC_OP_READ && array_sb_hold(a, io, result))
		return;
	if (array_submit_depth)
		tc_dev_complete_later(&a->dev, io, result);
	else
		tc_dev_complete(&a->dev, io, result);
}

/* One part of @c done: the last one ends @c with the slot device's @result. */
static void array_child_part_done(struct array_child *c, int result)
{
	if (atomic_fetch_sub_explicit(&c->parts, 1, memory_order_acq_rel) != 1)
		return;
	free(c->iovs);
	c->iovs = NULL;
	if (c->disk_old && c->old_result < 0)
		array_old_fail(c->a, c->member, c->disk_old, "write error", -c->old_result);
	c->disk_old = NULL;
	if (result < 0 && c->io.op == TC_OP_READ)
		atomic_fetch_add(&c->a->m[c->member].read_errors, 1);
	c->done(c, result);
}

static void array_child_done(struct tc_io *cio, int result)
{
	struct array_child *c = (struct array_child *)cio;

	atomic_fetch_sub_explicit(&c->a->m[c->member].inflight, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&c->disk->inflight, 1, memory_order_release);
	c->cur_result = result;
	array_child_part_done(c, result);
}

/* The old member's part of a write to both devices of a replace. */
static void array_child_old_done(struct tc_io *oio, int result)
{
	struct array_child *c = (struct array_child *)((char *)oio -
						       offsetof(struct array_child, io_old));

	atomic_fetch_sub_explicit(&c->a->m[c->member].inflight, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&c->disk_old->inflight, 1, memory_order_release);
	c->old_result = result;
	array_child_part_done(c, c->cur_result);
}

void array_child_submit(struct tc_array *a, struct array_child *c, unsigned member,
			unsigned op, unsigned flags, uint64_t off, uint64_t len, void *buf,
			const struct tc_io *parent, uint64_t skip, array_child_fn done,
			void *owner)
{
	array_child_submit_to(a, c, member, 0, op, flags, off, len, buf, parent, skip, done,
			      owner);
}

void array_child_submit_to(struct tc_array *a, struct array_child *c, unsigned member,
			   int route, unsigned op, unsigned flags, uint64_t off, uint64_t len,
			   void *buf, const struct tc_io *parent, uint64_t skip,
			   array_child_fn done, void *owner)
{
	const struct iovec *iov = NULL;
	int iovcnt = 0;
	/* The slot's device first, then the old member: tc_array_replace() stores them
	 * in the other order, so a submit that sees the new device sees the old one. */
	struct array_disk *cur = atomic_load(&a->m[member].disk);
	struct array_disk *old = atomic_load(&a->m[member].old);

	/* A replace: the old member serves what is not copied yet, and takes the writes
	 * of what is (md writes a replacement and the device it replaces alike), so that
	 * a copy resumed from an older checkpoint after a crash copies them again. */
	if (old && atomic_load(&a->m[member].old_failed))
		old = NULL;
	if (route == 0)
		route = old && off >= atomic_load(&a->rebuild_pos) ? 2 :
			op == TC_OP_READ || op == TC_OP_FLUSH ? 1 : 3;
	c->to_old = route == 2 && old;
	c->disk = c->to_old ? old : cur;
	c->disk_old = route == 3 ? old : NULL;
	c->old_result = 0;
	c->a = a;
	c->member = member;
	c->done = done;
	c->owner = owner;
	c->iovs = NULL;
	if (op == TC_OP_READ || op == TC_OP_WRITE) {
		if (buf) {
			c->iov1 = (struct iovec){ .iov_base = buf, .iov_len = len };
			iov = &c->iov1;
			iovcnt = 1;
		} else {
			if (tc_iov_slice(parent->iov, parent->iovcnt, skip, len, NULL, &c->iovs,
					 &iovcnt) < 0)
				iovcnt = -1;
			iov = c->iovs;
		}
	}
	c->io = (struct tc_io){
		.op = (uint8_t)op,
		.flags = (uint8_t)flags,
		.offset = off + a->data_offset,
		.length = len,
		.iov = iov,
		.iovcnt = iovcnt,
		.done = array_child_done,
		.prio = parent ? parent->prio : TC_PRIO_NORMAL,  /* the parent's class */
	};
	if (iovcnt < 0)
		c->disk_old = NULL;
	atomic_store_explicit(&c->parts, c->disk_old ? 2 : 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->m[member].inflight, c->disk_old ? 2 : 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&c->disk->inflight, 1, memory_order_relaxed);
	if (iovcnt < 0) {
		c->iovs = NULL;
		tc_dev_complete_later(&a->dev, &c->io, -ENOMEM);
		return;
	}
	if (c->disk_old) {
		struct array_disk *od = c->disk_old;
		c->io_old = c->io;
		c->io_old.done = array_child_old_done;
		atomic_fetch_add_explicit(&od->inflight, 1, memory_order_relaxed);
		tc_dev_submit(od->dev, &c->io_old);
	}
	tc_dev_submit(c->disk->dev, &c->io);
}

/* ------------------------------------------------------------------------------------
 * FLUSH: every active member.  A member whose flush fails is faulty (what it wrote
 * may not be durable); the flush succeeds while the array has not failed.
 */

struct array_flush {
	struct tc_io *io;
	atomic_uint pending;
	struct array_child child[];
};

static void array_flush_done(struct array_child *c, int result)
{
	struct array_flush *f = c->owner;
	struct tc_array *a = c->a;

	if (result < 0)
		array_child_fail(c, "flush error", -result);
	if (atomic_fetch_sub(&f->pending, 1) != 1)
		return;
	struct tc_io *io = f->io;
	free(f);
	array_complete(a, io, array_failed(a) ? -EIO : 0);
}

void array_flush_members(struct tc_array *a, struct array_child *child, atomic_uint *pending,
			 array_child_fn done, void *owner)
{
	for (unsigned i = 0; i < a->n; i++) {
		if (!array_member_writable(a, i))
			continue;
		atomic_fetch_add(pending, 1);
		array_child_submit_to(a, &child[i], i, 1, TC_OP_FLUSH, 0, 0, 0, NULL, NULL, 0,
				      done, owner);
		if (atomic_load(&a->m[i].old) && !atomic_load(&a->m[i].old_failed)) {
			atomic_fetch_add(pending, 1);
			array_child_submit_to(a, &child[a->n + i], i, 2, TC_OP_FLUSH, 0, 0, 0,
					      NULL, NULL, 0, done, owner);
		}
	}
}

static void array_flush(struct tc_array *a, struct tc_io *io)
{
	struct array_flush *f = calloc(1, sizeof(*f) + 2 * a->n * sizeof(f->child[0]));

	if (!f) {
		array_complete(a, io, -ENOMEM);
		return;
	}
	f->io = io;
	atomic_init(&f->pending, 1);
	array_flush_members(a, f->child, &f->pending, array_flush_done, f);
	/* Drop the submit's own count. */
	if (atomic_fetch_sub(&f->pending, 1) == 1) {
		free(f);
		array_complete(a, io, array_failed(a) ? -EIO : 0);
	}
}

/* ------------------------------------------------------------------------------------
 * The mapped engine (RAID 0, 1, 10).
 */

struct map_req {
	struct tc_io *io;
	struct tc_array *a;
	atomic_uint refs;
	atomic_int result;
};

struct map_seg {
	struct array_lock lk;           /* first: writes hold the array chunk */
	struct map_req *req;
	uint64_t skip, len;     /* the run, in the parent's bytes */
	unsigned op, flags;
	uint32_t tried, bad;    /* read: copies tried, copies that failed (bit per copy) */
	atomic_uint pending;
	atomic_uint ok;         /* write: copies written */
	struct raid_extent ext;
	/* A write of a mirror with the write-intent map: the member bytes its copies
	 * cover (one range: the near layout puts them on one row or two adjacent
	 * ones), counted in the map from before the copies are written to the end. */
	bool mapped;
	uint64_t map_lo, map_len;
	struct raid_map_wait map_wait;
	struct array_child child[];
};

static void map_req_put(struct map_req *r)
{
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	struct tc_io *io = r->io;
	struct tc_array *a = r->a;
	int result = atomic_load(&r->result);
	free(r);
	array_complete(a, io, result);
}

static void map_seg_end(struct map_seg *s, int result)
{
	struct map_req *r = s->req;

	if (result < 0) {
		int zero = 0;
		atomic_compare_exchange_strong(&r->result, &zero, result);
	}
	if (s->lk.locked)
		array_lock_release(r->a->locks, &s->lk);
	if (s->mapped)
		raid_map_end(r->a, s->map_lo, s->map_len);
	free(s);
	map_req_put(r);
}

static void map_read_next(struct map_seg *s);

static void map_repair_done(struct array_child *c, int result)
{
	struct map_seg *s = c->owner;

	if (result < 0)
		array_child_fail(c, "rewrite after a read error", -result);
	else
		atomic_fetch_add(&c->a->m[c->member].corrected, 1);
	if (atomic_fetch_sub(&s->pending, 1) == 1)
		map_seg_end(s, 0);
}

static void map_read_done(struct array_child *c, int result)
{
	struct map_seg *s = c->owner;
	struct tc_array *a = c->a;

	if (result < 0) {
		if (!array_io_error(result)) {
			map_seg_end(s, result);
			return;
		}
		unsigned ci = (unsigned)(c - s->child);
		s->bad |= 1u << ci;
		tc_warn(a->dev.ctx, "array %s: member %u (%s): read error (%s) at %" PRIu64
			", reading another copy", a->dev.name, c->member, a->m[c->member].dev->name,
			strerror(-result), c->io.offset);
		map_read_next(s);
		return;
	}
	if (!array_member_readable(a, c->member, c->io.offset - a->data_offset)) {
		/* The member went faulty while the read was in flight: what it returned is
		 * not used (from tc_array_fail_member's return on, nothing read from a
		 * faulty member is); another copy is read instead. */
		map_read_next(s);
		return;
	}
	if (!s->bad) {
		map_seg_end(s, 0);
		return;
	}
	/* md's read-error correction: rewrite the good data to the copies that failed. */
	atomic_init(&s->pending, 1);
	for (unsigned i = 0; i < s->ext.ncopies; i++) {
		unsigned m = s->ext.copy[i].member;
		if (!(s->bad & (1u << i)) || !array_member_readable(a, m, s->ext.copy[i].offset))
			continue;
		atomic_fetch_add(&s->pending, 1);
		array_child_submit(a, &s->child[i], m, TC_OP_WRITE, 0, s->ext.copy[i].offset,
				   s->len, NULL, s->req->io, s->skip, map_repair_done, s);
	}
	if (atomic_fetch_sub(&s->pending, 1) == 1)
		map_seg_end(s, 0);
}

/* Read the run from the active copy not tried yet with the fewest requests in flight. */
static void map_read_next(struct map_seg *s)
{
	struct tc_array *a = s->req->a;
	unsigned best = UINT32_MAX, best_load = UINT32_MAX;
	/* Copies that may differ (not resynced since a crash): the first readable. */
	bool first = atomic_load_explicit(&a->unsynced, memory_order_relaxed);
	unsigned start = s->ext.ncopies > 1 && !first ?
			 atomic_fetch_add(&a->rr, 1) % s->ext.ncopies : 0;

	for (unsigned j = 0; j < s->ext.ncopies; j++) {
		unsigned i = (start + j) % s->ext.ncopies;
		unsigned m = s->ext.copy[i].member;
		if ((s->tried & (1u << i)) ||
		    !array_member_readable(a, m, s->ext.copy[i].offset))
			continue;
		unsigned load = atomic_load_explicit(&a->m[m].inflight, memory_order_relaxed);
		if (load < best_load) {
			best = i;
			best_load = load;
		}
		if (first)
			break;
	}
	if (best == UINT32_MAX) {
		map_seg_end(s, -EIO);
		return;
	}
	s->tried |= 1u << best;
	array_child_submit(a, &s->child[best], s->ext.copy[best].member, TC_OP_READ, 0,
			   s->ext.copy[best].offset, s->len, NULL, s->req->io, s->skip,
			   map_read_done, s);
}

static void map_write_done(struct array_child *c, int result)
{
	struct map_seg *s = c->owner;

	if (result < 0)
		array_child_fail(c, "write error", -result);
	else if (array_member_readable(c->a, c->member, c->io.offset - c->a->data_offset))
		atomic_fetch_add(&s->ok, 1);    /* a copy that counts (not a rebuild's) */
	if (atomic_fetch_sub(&s->pending, 1) == 1)
		map_seg_end(s, atomic_load(&s->ok) ? 0 : -EIO);
}

static void map_write(struct map_seg *s)
{
	struct tc_array *a = s->req->a;

	atomic_init(&s->pending, 1);
	atomic_init(&s->ok, 0);
	for (unsigned i = 0; i < s->ext.ncopies; i++) {
		unsigned m = s->ext.copy[i].member;
		if (!array_member_writable(a, m))
			continue;
		atomic_fetch_add(&s->pending, 1);
		array_child_submit(a, &s->child[i], m, s->op, s->flags, s->ext.copy[i].offset,
				   s->len, NULL, s->req->io, s->skip, map_write_done, s);
	}
	if (atomic_fetch_sub(&s->pending, 1) == 1)
		map_seg_end(s, atomic_load(&s->ok) ? 0 : -EIO);
}

static void map_write_locked(struct array_lock *l)
{
	map_write((struct map_seg *)l);
}

/* The write's bits are on the members: against a rebuild's copy of this chunk
 * (rebuild.c), the chunk's lock, then the copies. */
static void map_write_lock(void *arg)
{
	struct map_seg *s = arg;
	struct tc_array *a = s->req->a;

	s->lk.on_lock = map_write_locked;
	if (array_lock_take(a->locks, &s->lk))
		map_write(s);
}

/* The member bytes the copies of @e cover: [*@lo, *@hi) from the lowest copy's offset
 * to the highest copy's end (the near layout puts them on one row or two). */
static void ext_span(const struct raid_extent *e, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (unsigned i = 0; i < e->ncopies; i++) {
		if (e->copy[i].offset < *lo)
			*lo = e->copy[i].offset;
		if (e->copy[i].offset + e->len > *hi)
			*hi = e->copy[i].offset + e->len;
	}
}

void array_submit_mapped(struct tc_array *a, struct tc_io *io)
{
	struct map_req *r = malloc(sizeof(*r));
	unsigned op = io->op;

	if (!r) {
		array_complete(a, io, -ENOMEM);
		return;
	}
	if (op == TC_OP_DISCARD && a->copies > 1)
		op = TC_OP_WRITE_ZEROES;
	r->io = io;
	r->a = a;
	atomic_init(&r->refs, 1);
	atomic_init(&r->result, 0);
	for (uint64_t done = 0; done < io->length;) {
		struct raid_extent ext;
		a->level->map(a, io->offset + done, io->length - done, &ext);
		struct map_seg *s = malloc(sizeof(*s) + ext.ncopies * sizeof(s->child[0]));
		if (!s) {
			int zero = 0;
			atomic_compare_exchange_strong(&r->result, &zero, -ENOMEM);
			break;
		}
		s->req = r;
		s->skip = done;
		s->len = ext.len;
		s->op = op;
		s->flags = io->flags;
		s->tried = s->bad = 0;
		s->ext = ext;
		s->lk.locked = false;
		s->mapped = false;
		atomic_fetch_add(&r->refs, 1);
		if (op == TC_OP_READ) {
			map_read_next(s);
		} else if (a->copies > 1) {
			s->lk.key = (io->offset + done) / a->chunk;
			if (a->map) {
				uint64_t lo, hi;
				ext_span(&ext, &lo, &hi);
				s->mapped = true;
				s->map_lo = lo;
				s->map_len = hi - lo;
				s->map_wait.fn = map_write_lock;
				s->map_wait.arg = s;
				if (raid_map_start(a, lo, hi - lo, &s->map_wait))
					map_write_lock(s);
			} else {
				map_write_lock(s);
			}
		} else {
			map_write(s);
		}
		done += ext.len;
	}
	map_req_put(r);
}

/* ---- md's near layout, shared by RAID 0 (1 copy), RAID 1 (n copies) and RAID 10 --- */

void array_near_map(const struct tc_array *a, unsigned copies, uint64_t off, uint64_t len,
		    struct raid_extent *ext)
{
	/* Divisions, not shifts: a RAID 0 chunk need not be a power of two. */
	uint64_t chunk = off / a->chunk, in = off - chunk * a->chunk;

	ext->len = a->chunk - in < len ? a->chunk - in : len;
	ext->ncopies = copies;
	for (unsigned r = 0; r < copies; r++) {
		uint64_t slot = chunk * copies + r;
		ext->copy[r].member = (unsigned)(slot % a->n);
		ext->copy[r].offset = slot / a->n * a->chunk + in;
	}
}

int raid_near_redundancy(unsigned n, unsigned copies, uint32_t faulty, unsigned only)
{
	unsigned g = copies, least = copies;

	for (unsigned t = n; t;) {      /* g = gcd(copies, n): the copy sets start at g's */
		unsigned r = g % t;
		g = t;
		t = r;
	}
	for (unsigned p = 0; p < n; p += g) {
		unsigned active = 0;
		bool in = only >= n;
		for (unsigned r = 0; r < copies; r++) {
			in |= (p + r) % n == only;
			if (!(faulty & (1u << ((p + r) % n))))
				active++;
		}
		if (in && active < least)
			least = active;
	}
	return (int)least - 1;
}

int array_near_redundancy(const struct tc_array *a, unsigned copies, uint32_t faulty)
{
	return raid_near_redundancy(a->n, copies, faulty, a->n);
}

/* ------------------------------------------------------------------------------------
 * Submit and close.
 */

/* Whether array bytes [@off, @off + @len) lie wholly in regions never written, whose
 * members hold zeros already (wimap.c). */
static bool array_unwritten(struct tc_array *a, uint64_t off, uint64_t len)
{
	uint64_t lo, hi, last = off + len - 1;

	if (a->level->parity) {
		uint64_t stripe = a->chunk * (a->n - a->level->parity);
		lo = (off / stripe) << a->chunk_shift;
		hi = (last / stripe + 1) << a->chunk_shift;
	} else {
		/* The near layout's copies move forward with the offset. */
		struct raid_extent first, end;
		uint64_t unused;
		a->level->map(a, off, 1, &first);
		a->level->map(a, last, 1, &end);
		ext_span(&first, &lo, &unused);
		ext_span(&end, &unused, &hi);
	}
	return raid_map_unwritten(a, lo, hi);
}

/* A WRITE_ZEROES or DISCARD cut into the runs that reach written regions. */
struct zsplit {
	struct tc_array *a;
	struct tc_io *parent;
	atomic_uint left;
	atomic_int result;
	struct tc_io child[];
};

static void zsplit_child_done(struct tc_io *io, int result)
{
	struct zsplit *z = io->private_data;
	int zero = 0;

	if (result < 0)
		atomic_compare_exchange_strong(&z->result, &zero, result);
	if (atomic_fetch_sub(&z->left, 1) != 1)
		return;
	/* The children went through array_complete() (held for the superblocks if
	 * need be; a failed one counts in the array's errors, as the parent does);
	 * the parent completes as a device request does. */
	tc_dev_complete_later(&z->a->dev, z->parent, atomic_load(&z->result));
	free(z);
}

/* WRITE_ZEROES and DISCARD skip the regions never written: their members hold zeros.
 * mkfs discards a whole new device, and on RAID 5/6 a discard is a write of zeros
 * (parity included): it wrote every byte of every member, and the record then said
 * every region was written.  The request is walked in units no region boundary
 * crosses (a region's rows of stripes; a chunk on the mapped levels, whose copies'
 * rows follow each other) and cut into runs; the runs that reach written regions go
 * to the level as requests of their own.  Returns false when @io is to go on whole. */
static bool array_zeroes_split(struct tc_array *a, struct tc_io *io)
{
	uint64_t regions, written, rbytes;

	raid_map_written_counts(a, &regions, &written, &rbytes);
	if (!regions || written == regions || !io->length)
		return false;
	/* A unit: the array bytes of one region of member space, whole rows of chunks
	 * (a region holds rbytes / chunk rows).  A row holds n - parity data chunks, or
	 * on mirrors n / copies chunks when the near layout's rows do not wrap (RAID 1:
	 * one, a unit is a region); where they wrap, one chunk at a time. */
	unsigned row_chunks = a->level->parity ? a->n - a->level->parity
		: a->copies && a->n % a->copies == 0 ? a->n / a->copies : 0;
	uint64_t unit = row_chunks ? (rbytes >> a->chunk_shift) * a->chunk * row_chunks : 0;
	if (!unit)
		unit = a->chunk;
	uint64_t end = io->offset + io->length;
	struct { uint64_t lo, hi; } *run = NULL;
	unsigned nruns = 0, cap = 0;
	for (uint64_t x = io->offset; x < end;) {
		uint64_t next = (x / unit + 1) * unit;
		if (next > end)
			next = end;
		if (!array_unwritten(a, x, next - x)) {
			if (nruns && run[nruns - 1].hi == x) {
				run[nruns - 1].hi = next;
			} else {
				if (nruns == cap) {
					cap = cap ? 2 * cap : 8;
					void *p = realloc(run, cap * sizeof(*run));
					if (!p) {
						free(run);
						return false;   /* whole, as without the record */
					}
					run = p;
				}
				run[nruns].lo = x;
				run[nruns++].hi = next;
			}
		}
		x = next;
	}
	if (nruns == 0) {
		array_complete(a, io, 0);
		return true;
	}
	struct zsplit *z = NULL;
	if (nruns > 1 || run[0].lo != io->offset || run[0].hi != end)
		z = calloc(1, sizeof(*z) + nruns * sizeof(z->child[0]));
	if (!z) {
		free(run);
		return false;           /* one run: the whole request; or no memory */
	}
	z->a = a;
	z->parent = io;
	atomic_init(&z->left, nruns);
	atomic_init(&z->result, 0);
	for (unsigned i = 0; i < nruns; i++)
		z->child[i] = (struct tc_io){ .op = io->op, .flags = io->flags, .prio = io->prio,
					      .offset = run[i].lo,
					      .length = run[i].hi - run[i].lo,
					      .done = zsplit_child_done, .private_data = z };
	free(run);
	for (unsigned i = 0; i < nruns; i++)
		a->level->submit(a, &z->child[i]);
	return true;
}

static void array_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct tc_array *a = (struct tc_array *)dev;

	array_submit_depth++;
	atomic_fetch_add_explicit(&a->fg_requests, 1, memory_order_relaxed);
	if (array_failed(a))
		array_complete(a, io, -EIO);
	else if (io->op == TC_OP_FLUSH)
		array_flush(a, io);
	else if ((io->op == TC_OP_DISCARD || io->op == TC_OP_WRITE_ZEROES) && a->map &&
		 (a->level->parity || a->level->map) && array_zeroes_split(a, io))
		;       /* skipped, or cut around the regions never written */
	else
		a->level->submit(a, io);
	array_submit_depth--;
}

static void array_close(struct tc_dev *dev)
{
	struct tc_array *a = (struct tc_array *)dev;

	array_sync_fini(a);
	if (a->persist)
		array_sb_close(a);
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].dev)
			tc_dev_unwatch(a->m[i].dev, array_member_event_fn, a);
	if (a->level->fini)
		a->level->fini(a);
	for (unsigned i = 0; i < a->n; i++) {
		struct array_disk *old = atomic_load(&a->m[i].old);
		if (old) {
			tc_dev_close(old->dev);
			free(old);
		}
		if (a->m[i].dev)
			tc_dev_close(a->m[i].dev);
		free(a->m[i].disk);
	}
	for (unsigned i = 0; i < a->nspares; i++) {
		tc_dev_close(a->spare[i]->dev);
		free(a->spare[i]);
	}
	for (unsigned i = 0; i < a->ngone; i++) {
		tc_dev_close(a->gone[i]->dev);
		free(a->gone[i]);
	}
	array_locks_free(a->locks);
	pthread_mutex_destroy(&a->lock);
	tc_dev_fini(dev);
	free(a);
}

/* The mapped levels count the copies of each run of the range that can be read now
 * (a rebuilding member below its position, a replace's old member above it), the
 * members' own redundancy left out; the parity levels lose redundancy for every
 * stripe alike: the array's. */
static int array_range_redundancy(struct tc_dev *dev, uint64_t off, uint64_t len)
{
	struct tc_array *a = (struct tc_array *)dev;
	struct tc_dev_limits l;

	tc_dev_limits(dev, &l);
	if (array_failed(a))
		return -1;
	if (!a->level->map || !len)
		return l.redundancy;
	int least = 255;
	for (uint64_t done = 0; done < len && off + done < a->dev.size;) {
		struct raid_extent ext;
		a->level->map(a, off + done, len - done, &ext);
		/* Copies readable, plus the least redundancy of a member holding one (a
		 * RAID 0 over mirrors: the mirror's), as array_redundancy_now counts. */
		int readable = 0, inner = 255;
		for (unsigned c = 0; c < ext.ncopies; c++) {
			unsigned mb = ext.copy[c].member;
			if (!array_member_readable(a, mb, ext.copy[c].offset))
				continue;
			readable++;
			tc_dev *md = atomic_load(&a->m[mb].dev);
			int r = md ? tc_dev_range_redundancy(md, ext.copy[c].offset + a->data_offset,
							     ext.len) : 0;
			if (r < inner)
				inner = r < 0 ? 0 : r;
		}
		int here = readable ? readable - 1 + inner : -1;
		if (here < least)
			least = here;
		done += ext.len ? ext.len : len - done;
	}
	return least;
}

/* Member failures here, and member arrays' degraded or failed events. */
static uint64_t array_health_gen(struct tc_dev *dev)
{
	return atomic_load(&((struct tc_array *)dev)->health);
}

static const struct tc_dev_ops array_ops = {
	.name = "array",
	.submit = array_submit,
	.close = array_close,
	.range_redundancy = array_range_redundancy,
	.health_gen = array_health_gen,
};
