/* SPDX-License-Identifier: MIT */
/*
 * volume.c - a volume's life on an open cache: attach (with the staleness check of
 * the backing's attach generation), settings, flushing its dirty data, detach.
 *
 * Each operation is a table of named steps run by tc_steps_run() (steps.h), which on
 * a failure undoes the completed steps in reverse.  The durable state changes in a
 * fixed order, so that a failure or a crash between two steps leaves something a
 * later open understands (docs/format.md, "update protocol").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"
#include "steps.h"

void tc_volume_free(struct tc_volume *v)
{
	tc_seq_fini(&v->seq);
	tc_dirty_fini(&v->dirty_ix);
	pthread_mutex_destroy(&v->region_lock);
	free(v->release_buf);
	free(v->lat);
	free(v);
}

/* ---- the volume's lines ----------------------------------------------------------- */

static void vol_count_lines(struct tc_cache *c, struct tc_volume *v)
{
	uint64_t dirty = 0, valid = 0, lines = 0;
	tc_dirty_reset(&v->dirty_ix);
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line l = tc_line_peek(&c->lines[i]);
		if (l.vol != v->id)
			continue;
		tc_dirty_add(&v->dirty_ix, l.line_no, tc_popcount16(l.dirty));
		dirty += tc_popcount16(l.dirty);
		valid += tc_popcount16(l.valid);
		lines++;
	}
	atomic_store(&v->dirty_units, dirty);
	atomic_store(&v->valid_units, valid);
	atomic_store(&v->lines, lines);
}

/*
 * Visit every slot that peeks as volume @id's, under the line's shard lock: @fn
 * checks the slot is still the volume's and changes it; returning true, it has
 * unmapped the slot, which then goes back to the free list (shard lock dropped).
 */
static void each_volume_slot(struct tc_cache *c, uint8_t id,
			     bool (*fn)(struct tc_cache *c, uint32_t slot, uint8_t id))
{
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line peek = tc_line_peek(&c->lines[i]);
		if (peek.vol != id)
			continue;
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(id, peek.line_no));
		pthread_mutex_lock(&s->lock);
		bool freed = fn(c, i, id);
		pthread_mutex_unlock(&s->lock);
		if (freed)
			tc_slot_free(c, i);
	}
}

static bool drop_line(struct tc_cache *c, uint32_t slot, uint8_t id)
{
	struct tc_line *l = &c->lines[slot];
	if (l->vol == id && (l->valid || l->dirty))
		tc_line_set_bits(c, slot, 0, 0);
	return false;
}

/* Drop every line of volume @id (it must be offline or quiesced): valid and dirty bits
 * cleared; slots stay mapped empty until a commit makes that durable. */
static void drop_volume_lines(struct tc_cache *c, uint8_t id)
{
	each_volume_slot(c, id, drop_line);
}

static bool unmap_line(struct tc_cache *c, uint32_t slot, uint8_t id)
{
	struct tc_line *l = &c->lines[slot];
	bool mine = l->vol == id && !l->dirty && !(tc_line_flags_load(l) & TC_LINE_DISK_DIRTY);
	if (mine)
		tc_line_unmap(c, slot);
	return mine;
}

/* After a commit made the drop durable: unmap the volume's slots into the free list. */
static void free_volume_slots(struct tc_cache *c, uint8_t id)
{
	each_volume_slot(c, id, unmap_line);
}

static uint64_t count_dirty_of(struct tc_cache *c, uint8_t id)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line l = tc_line_peek(&c->lines[i]);
		if (l.vol == id && l.dirty)
			n++;
	}
	return n;
}

/* ---- attach ----------------------------------------------------------------------- */

static int check_protection(struct tc_cache *c, const char *name, tc_dev *backing,
			    uint64_t stripe, unsigned old, unsigned want);
static uint64_t volume_stripe(tc_dev *dev, const struct tc_backing_sb *b);

/* The state of one tc_cache_attach(), shared by its steps. */
struct attach_op {
	struct tc_cache *c;
	tc_dev *dev;
	const struct tc_volume_settings *settings;   /* NULL: keep what is stored */
	unsigned flags;
	struct tc_backing_sb b;          /* the backing's newest superblock */
	int latest;                      /* its copy */
	bool sb_locked;                  /* c->sb_lock held */
	struct tc_vol_rec *rec;          /* the cache's record of the volume */
	bool fresh;                      /* no record before this attach */
	bool stale;                      /* a record, but the backing moved on without us */
	struct tc_volume *v;
};

static int attach_read_backing(void *arg)
{
	struct attach_op *op = arg;
	return tc_backing_sb_read(op->c->ctx, op->dev, &op->b, &op->latest);
}

static int attach_check_owner(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	char uuid_s[37], cuuid_s[37];
	tc_fmt_uuid_str(c->sb.uuid, cuuid_s);
	if (!tc_fmt_uuid_is_zero(op->b.cache_uuid) && memcmp(op->b.cache_uuid, c->sb.uuid, 16)) {
		tc_fmt_uuid_str(op->b.cache_uuid, uuid_s);
		tc_err(c->ctx, "backing %s (volume \"%s\"): attached to cache %s, not to cache %s "
		       "(%s)", op->dev->name, op->b.name, uuid_s, cuuid_s, c->dev->name);
		return -EBUSY;
	}
	return 0;
}

/* A remote backing's own record of the cache holding its dirty data (remote.c). */
static int attach_check_remote(void *arg)
{
	struct attach_op *op = arg;
	return tc_remote_check_owner(op->c, op->dev, op->b.name);
}

/* In write-back, the remote backing records this cache before any write is dirty. */
static int attach_mark_remote(void *arg)
{
	struct attach_op *op = arg;
	unsigned wp = op->settings ? op->settings->write_policy : op->v->set.write_policy;
	if (!tc_write_policy_is_wb(wp) && !tc_write_policy_is_wb(op->v->set.write_policy))
		return 0;
	return tc_remote_mark_dirty(op->c, op->dev, true);
}

static int attach_check_settings(void *arg)
{
	struct attach_op *op = arg;
	char why[160];
	if (op->settings && tc_fmt_settings_check(op->settings, why, sizeof(why))) {
		tc_err(op->c->ctx, "volume \"%s\": %s", op->b.name, why);
		return -EINVAL;
	}
	return 0;
}

static int attach_lock(void *arg)
{
	struct attach_op *op = arg;
	pthread_mutex_lock(&op->c->sb_lock);
	op->sb_locked = true;
	return 0;
}

static void attach_unlock(void *arg)
{
	struct attach_op *op = arg;
	if (op->sb_locked)
		pthread_mutex_unlock(&op->c->sb_lock);
	op->sb_locked = false;
}

/* The volume's record, if the cache has one; refuses a volume already online and a
 * name the cache gives another backing. */
static int attach_find_record(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (c->sb.vols[i].id && !memcmp(c->sb.vols[i].backing_uuid, op->b.uuid, 16))
			op->rec = &c->sb.vols[i];
	pthread_mutex_lock(&c->mgmt_lock);
	bool online = op->rec && c->vols[op->rec->id];
	pthread_mutex_unlock(&c->mgmt_lock);
	if (online) {
		tc_err(c->ctx, "volume \"%s\": already attached (backing %s)", op->b.name,
		       op->dev->name);
		return -EEXIST;
	}
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (c->sb.vols[i].id && &c->sb.vols[i] != op->rec &&
		    !strcmp(c->sb.vols[i].name, op->b.name)) {
			tc_err(c->ctx, "volume \"%s\": the cache %s already has a volume of that "
			       "name on another backing", op->b.name, c->dev->name);
			return -EEXIST;
		}
	op->fresh = !op->rec;
	return 0;
}

/* Whether the record found is stale: its backing was written without this cache. */
static bool record_stale(const struct attach_op *op)
{
	return op->rec && (memcmp(op->b.cache_uuid, op->c->sb.uuid, 16) ||
			   op->b.attach_gen != op->rec->backing_gen);
}

/* Before anything is written or dropped: a new (or stale) volume starts in no write
 * policy and takes the backing's stored settings, a known one keeps its record's
 * (check_protection). */
static int attach_check_protection(void *arg)
{
	struct attach_op *op = arg;
	bool known = op->rec && !record_stale(op);
	unsigned old = known ? op->rec->settings.write_policy : TC_WP_WT;
	unsigned stored = known ? op->rec->settings.write_policy : op->b.settings.write_policy;
	unsigned want = op->settings ? op->settings->write_policy : stored;
	if (known && want == old)
		return 0;
	return check_protection(op->c, op->b.name, op->dev, volume_stripe(op->dev, &op->b),
				old, want);
}

/* A record whose backing was written without this cache since: its lines are stale.
 * Dropped (durably) unless dirty ones are among them and the caller did not say to
 * discard them. */
static int attach_drop_stale(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	struct tc_vol_rec *rec = op->rec;
	if (!rec)
		return 0;
	op->stale = record_stale(op);
	if (!op->stale)
		return 0;
	uint64_t nd = count_dirty_of(c, rec->id);
	if (nd && !(op->flags & TC_ATTACH_DISCARD_DIRTY)) {
		tc_err(c->ctx, "volume \"%s\": backing %s was written without cache %s "
		       "(generation %" PRIu64 ", cache saw %" PRIu64 "), and the cache "
		       "holds %" PRIu64 " dirty lines for it; refusing (discard them "
		       "explicitly to attach)", op->b.name, op->dev->name, c->dev->name,
		       op->b.attach_gen, rec->backing_gen, nd);
		return -ESTALE;
	}
	tc_warn(c->ctx, "volume \"%s\": stale cache contents dropped (backing %s "
		"generation %" PRIu64 ", cache saw %" PRIu64 ")", op->b.name, op->dev->name,
		op->b.attach_gen, rec->backing_gen);
	drop_volume_lines(c, rec->id);
	int r = tc_meta_commit_sync(c);
	if (r)
		return r;
	free_volume_slots(c, rec->id);
	return 0;
}

static int attach_claim_record(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	if (op->rec)
		return 0;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (!c->sb.vols[i].id) {
			op->rec = &c->sb.vols[i];
			return 0;
		}
	tc_err(c->ctx, "volume \"%s\": cache %s already serves %u volumes", op->b.name,
	       c->dev->name, TC_MAX_VOLUMES);
	return -ENOSPC;
}

static int attach_check_size(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	if (op->b.size > ((uint64_t)UINT32_MAX << c->line_shift)) {
		tc_err(c->ctx, "volume \"%s\": size %" PRIu64 " exceeds 2^32 lines of %u bytes",
		       op->b.name, op->b.size, c->line_size);
		return -EFBIG;
	}
	return 0;
}

/* The backing's full stripe: what its superblock stores (given at create, for an array
 * that does not say it), else what the device reports when partial stripes cost it a
 * read-modify-write (an md or hardware RAID volume, a tiercache array). */
static uint64_t volume_stripe(tc_dev *dev, const struct tc_backing_sb *b)
{
	struct tc_dev_limits l;

	if (b->stripe_size)
		return b->stripe_size;
	tc_dev_limits(dev, &l);
	return l.partial_stripe_expensive ? l.io_opt : 0;
}

static int attach_new_volume(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	struct tc_volume *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->lat = calloc(TC_LAT__COUNT, sizeof(*v->lat));
	if (!v->lat) {
		free(v);
		return -ENOMEM;
	}
	v->cache = c;
	v->backing = op->dev;
	pthread_mutex_init(&v->release_lock, NULL);
	pthread_mutex_init(&v->region_lock, NULL);
	v->id = (uint8_t)(op->rec - c->sb.vols) + 1;
	v->size = op->b.size;
	v->bsb = op->b;
	v->bsb_latest = op->latest;
	v->stripe = volume_stripe(op->dev, &op->b);
	v->stripe_skew = v->stripe ? TC_BACKING_DATA_OFFSET % v->stripe : 0;
	/* The dirty index counts by stripe where the cleaner writes whole stripes. */
	uint32_t lps = tc_cleaner_stripe_lines(c, v->stripe);
	if (tc_dirty_init(&v->dirty_ix, lps ? lps : TC_DIRTY_GROUP_LINES,
			  lps ? lps * c->units : 0,
			  lps ? (uint32_t)(v->stripe_skew >> c->line_shift) : 0)) {
		free(v->lat);
		free(v);
		return -ENOMEM;
	}
	snprintf(v->name, sizeof(v->name), "%s", op->b.name);
	v->set = op->fresh || op->stale ? op->b.settings : op->rec->settings;
	if (!op->fresh)
		tc_regions_load(v);   /* pins and other range attributes (region.c) */
	tc_seq_init(&v->seq);
	op->v = v;
	return 0;
}

static void attach_free_volume(void *arg)
{
	struct attach_op *op = arg;
	tc_volume_free(op->v);
	op->v = NULL;
}

/* Durable order: the backing first names this cache (and moves its generation when
 * the cache link is new or stale), then the cache records the volume.  A crash in
 * between leaves a backing whose cache has no record of it: attached again as a new
 * volume with no lines. */
static int attach_claim_backing(void *arg)
{
	struct attach_op *op = arg;
	if (!op->fresh && !op->stale)
		return 0;
	memcpy(op->v->bsb.cache_uuid, op->c->sb.uuid, 16);
	op->v->bsb.attach_gen++;
	if (op->c->readonly)
		return 0;   /* inspection: the link in memory only, the device untouched */
	return tc_backing_sb_write(op->v);
}

static int attach_write_record(void *arg)
{
	struct attach_op *op = arg;
	struct tc_volume *v = op->v;
	if (!op->fresh && !op->stale)
		return 0;
	struct tc_vol_rec nrec;
	memset(&nrec, 0, sizeof(nrec));
	nrec.id = v->id;
	memcpy(nrec.backing_uuid, op->b.uuid, 16);
	snprintf(nrec.name, sizeof(nrec.name), "%s", op->b.name);
	nrec.size = op->b.size;
	nrec.backing_gen = v->bsb.attach_gen;
	nrec.settings = v->set;
	struct tc_vol_rec old = *op->rec;
	*op->rec = nrec;
	if (op->c->readonly)
		return 0;   /* inspection: the record in memory only */
	int r = tc_cache_sb_write(op->c);
	if (r)
		*op->rec = old;
	return r;
}

static int attach_online(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	struct tc_volume *v = op->v;
	vol_count_lines(c, v);
	atomic_store(&v->last_io_ns, tc_ctx_now(c->ctx));
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[v->id] = v;
	pthread_mutex_unlock(&c->mgmt_lock);
	attach_unlock(op);
	tc_shares_update(c, v);
	tc_regions_reconcile(v);
	return 0;
}

static void attach_offline(void *arg)
{
	struct attach_op *op = arg;
	struct tc_cache *c = op->c;
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[op->v->id] = NULL;
	pthread_mutex_unlock(&c->mgmt_lock);
	tc_shares_update(c, NULL);
}

/* Settings given that differ from the stored ones are applied as tc_volume_set()
 * would, the volume online (leaving write-back drains it). */
static int attach_apply_settings(void *arg)
{
	struct attach_op *op = arg;
	struct tc_volume_settings now;
	tc_volume_get(op->v, &now);
	if (op->settings && memcmp(op->settings, &now, sizeof(*op->settings)))
		return tc_volume_set(op->v, op->settings, NULL, NULL);
	return 0;
}

static const struct tc_step attach_steps[] = {
	{ "read the backing's superblock", attach_read_backing, NULL },
	{ "check the remote backing's dirty record", attach_check_remote, NULL },
	{ "check the backing's cache", attach_check_owner, NULL },
	{ "check the settings", attach_check_settings, NULL },
	{ "lock the superblock", attach_lock, attach_unlock },
	{ "find the volume's record", attach_find_record, NULL },
	{ "check write-back protection", attach_check_protection, NULL },
	{ "drop stale contents", attach_drop_stale, NULL },
	{ "claim a free record", attach_claim_record, NULL },
	{ "check the size", attach_check_size, NULL },
	{ "set up the volume", attach_new_volume, attach_free_volume },
	{ "name the cache on the backing", attach_claim_backing, NULL },
	{ "record the volume on the cache", attach_write_record, NULL },
	{ "record the cache on a remote backing", attach_mark_remote, NULL },
	{ "bring the volume online", attach_online, attach_offline },
	{ "apply the settings", attach_apply_settings, NULL },
};

int tc_cache_attach(tc_cache *c, tc_dev *dev, const struct tc_volume_settings *settings,
		    unsigned flags, tc_volume **out)
{
	struct attach_op op = { .c = c, .dev = dev, .settings = settings, .flags = flags };
	int r = tc_steps_run(c->ctx, "attach", attach_steps, TC_STEPS_N(attach_steps), &op);
	if (!r)
		*out = op.v;
	return r;
}

tc_volume *tc_cache_find(tc_cache *c, const char *name)
{
	tc_volume *found = NULL;
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++)
		if (c->vols[i] && !strcmp(c->vols[i]->name, name))
			found = c->vols[i];
	pthread_mutex_unlock(&c->mgmt_lock);
	return found;
}

/* ---- settings, flush, detach ------------------------------------------------------ */

void tc_volume_get(tc_volume *v, struct tc_volume_settings *s)
{
	s->read_cache = TC_SET(v, read_cache);
	s->write_policy = TC_SET(v, write_policy);
	s->flush_rate = TC_SET(v, flush_rate);
	s->admission = TC_SET(v, admission);
	s->fill = TC_SET(v, fill);
	s->nhit = TC_SET(v, nhit);
	s->seq_cutoff = TC_SET(v, seq_cutoff);
	s->reserve = TC_SET(v, reserve);
	s->cap = TC_SET(v, cap);
	s->priority = TC_SET(v, priority);
}

void tc_settings_publish(struct tc_volume *v, const struct tc_volume_settings *s)
{
	__atomic_store_n(&v->set.read_cache, s->read_cache, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.flush_rate, s->flush_rate, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.admission, s->admission, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.fill, s->fill, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.nhit, s->nhit, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.seq_cutoff, s->seq_cutoff, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.reserve, s->reserve, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.cap, s->cap, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.priority, s->priority, __ATOMIC_RELAXED);
	/* Last, and with release: a request that sees the new policy sees the rest. */
	__atomic_store_n(&v->set.write_policy, s->write_policy, __ATOMIC_RELEASE);
	if (v->cache->vols[v->id] == v)
		tc_shares_update(v->cache, v);
}

static int store_settings(struct tc_volume *v)
{
	struct tc_cache *c = v->cache;
	pthread_mutex_lock(&c->sb_lock);
	tc_volume_get(v, &c->sb.vols[v->id - 1].settings);
	int r = tc_cache_sb_write(c);
	if (!r) {
		v->bsb.settings = c->sb.vols[v->id - 1].settings;
		r = tc_backing_sb_write(v);
	}
	pthread_mutex_unlock(&c->sb_lock);
	return r;
}

/*
 * Turning write-back on (from @old to @want, enum tc_write_policy) needs a protected
 * cache (protect.c); instant write-back also needs the backing's full stripe.  A
 * volume already in write-back keeps it (it is held where the cache is not protected).
 */
static int check_protection(struct tc_cache *c, const char *name, tc_dev *backing,
			    uint64_t stripe, unsigned old, unsigned want)
{
	if (want == TC_WP_INSTWB && !stripe) {
		tc_err(c->ctx, "volume \"%s\": write policy instwb refused: backing %s "
		       "reports no full stripe (it is no parity array); give the stripe with "
		       "create backing --stripe-size, or use wb", name, backing->name);
		return -EINVAL;
	}
	if (tc_write_policy_is_wb(old))
		return 0;
	return tc_protect_check(c, name, want);
}

/* The state of one tc_volume_set(), shared by its steps. */
struct set_op {
	struct tc_volume *v;
	const struct tc_volume_settings *s;
	tc_progress_fn fn;
	void *opaque;
	bool leaving_wb;                 /* from write-back to another write policy */
	bool draining;                   /* holds v->draining up */
};

static int set_check(void *arg)
{
	struct set_op *op = arg;
	char why[160];
	if (tc_fmt_settings_check(op->s, why, sizeof(why))) {
		tc_err(op->v->cache->ctx, "volume \"%s\": %s", op->v->name, why);
		return -EINVAL;
	}
	int r = tc_shares_check(op->v->cache, op->v->id, op->v->name, op->s);
	if (r)
		return r;
	struct tc_volume_settings old;
	tc_volume_get(op->v, &old);
	r = check_protection(op->v->cache, op->v->name, op->v->backing, op->v->stripe,
				 old.write_policy, op->s->write_policy);
	if (r)
		return r;
	op->leaving_wb = tc_write_policy_is_wb(old.write_policy) &&
			 !tc_write_policy_is_wb(op->s->write_policy);
	return 0;
}

/* Leaving write-back: writes go write-through while the dirty data drains, and keep
 * doing so until the new policy is in place. */
static int set_drain_begin(void *arg)
{
	struct set_op *op = arg;
	if (op->leaving_wb) {
		atomic_fetch_add(&op->v->draining, 1);
		op->draining = true;
	}
	return 0;
}

static void set_drain_end(void *arg)
{
	struct set_op *op = arg;
	if (op->draining)
		atomic_fetch_sub(&op->v->draining, 1);
	op->draining = false;
}

static int set_drain(void *arg)
{
	struct set_op *op = arg;
	return op->leaving_wb ? tc_cleaner_drain(op->v, op->fn, op->opaque) : 0;
}

static int set_publish(void *arg)
{
	struct set_op *op = arg;
	tc_settings_publish(op->v, op->s);
	set_drain_end(op);
	return 0;
}

/* A remote backing records the cache while the volume is in write-back (remote.c):
 * entering write-back before the new policy is published, leaving it after the drain. */
static int set_mark_remote(void *arg)
{
	struct set_op *op = arg;
	if (!tc_write_policy_is_wb(op->s->write_policy))
		return 0;
	return tc_remote_mark_dirty(op->v->cache, op->v->backing, true);
}

static int set_unmark_remote(void *arg)
{
	struct set_op *op = arg;
	if (!op->leaving_wb)
		return 0;
	int r = tc_remote_mark_dirty(op->v->cache, op->v->backing, false);
	if (r)
		tc_warn(op->v->cache->ctx, "volume \"%s\": clean, but its remote backing still "
			"records the cache as holding dirty data: %s", op->v->name, strerror(-r));
	return 0;
}

static int set_store(void *arg)
{
	struct set_op *op = arg;
	int r = store_settings(op->v);
	if (r) {
		tc_err(op->v->cache->ctx, "volume \"%s\": settings applied but not stored: %s",
		       op->v->name, strerror(-r));
	}
	return r;
}

static const struct tc_step set_steps[] = {
	{ "check the settings", set_check, NULL },
	{ "send writes through", set_drain_begin, set_drain_end },
	{ "write back dirty data", set_drain, NULL },
	{ "record the cache on a remote backing", set_mark_remote, NULL },
	{ "publish the settings", set_publish, NULL },
	{ "store the settings", set_store, NULL },
	{ "clear a remote backing's dirty record", set_unmark_remote, NULL },
};

/* Management of a volume of a read-only cache (inspection): refused before anything
 * runs, since draining would write to the backing. */
static int refuse_readonly(struct tc_volume *v, const char *what)
{
	if (!v->cache->readonly)
		return 0;
	tc_err(v->cache->ctx, "volume \"%s\": %s refused: cache %s is open read-only for "
	       "inspection", v->name, what, v->cache->dev->name);
	return -EROFS;
}

int tc_volume_set(tc_volume *v, const struct tc_volume_settings *s, tc_progress_fn fn,
		  void *opaque)
{
	int r = refuse_readonly(v, "set");
	if (r)
		return r;
	struct set_op op = { .v = v, .s = s, .fn = fn, .opaque = opaque };
	return tc_steps_run(v->cache->ctx, "set", set_steps, TC_STEPS_N(set_steps), &op);
}

int tc_volume_flush_dirty(tc_volume *v, tc_progress_fn fn, void *opaque)
{
	int r = refuse_readonly(v, "flush");
	if (r)
		return r;
	atomic_fetch_add(&v->draining, 1);
	r = tc_cleaner_drain(v, fn, opaque);
	atomic_fetch_sub(&v->draining, 1);
	return r;
}

/* The state of one tc_volume_detach(), shared by its steps. */
struct detach_op {
	struct tc_volume *v;
	unsigned flags;
	tc_progress_fn fn;
	void *opaque;
	struct tc_backing_sb bsb_old;   /* the backing's superblock before its release */
};

/* Discarding: the cleaner must not write back the data the caller throws away (a
 * drain would run it flat out while we wait for the requests below). */
static int detach_stop_writeback(void *arg)
{
	struct detach_op *op = arg;
	if (op->flags & TC_DETACH_DISCARD_DIRTY)
		atomic_store(&op->v->discarding, true);
	return 0;
}

static void detach_resume_writeback(void *arg)
{
	struct detach_op *op = arg;
	atomic_store(&op->v->discarding, false);
}

static int detach_drain_begin(void *arg)
{
	struct detach_op *op = arg;
	atomic_fetch_add(&op->v->draining, 1);
	return 0;
}

static void detach_drain_end(void *arg)
{
	struct detach_op *op = arg;
	atomic_fetch_sub(&op->v->draining, 1);
}

static int detach_drain(void *arg)
{
	struct detach_op *op = arg;
	if (op->flags & TC_DETACH_DISCARD_DIRTY)
		return 0;
	return tc_cleaner_drain(op->v, op->fn, op->opaque);
}

static int detach_quiesce(void *arg)
{
	struct detach_op *op = arg;
	tc_mngt_wait_requests(op->v->cache, op->v);
	return 0;
}

static int detach_flush_backing(void *arg)
{
	struct detach_op *op = arg;
	struct tc_volume *v = op->v;
	int r = tc_dev_flush(v->backing);
	if (r)
		tc_err(v->cache->ctx, "volume \"%s\": flush of backing %s failed: %s", v->name,
		       v->backing->name, strerror(-r));
	return r;
}

/* Take the volume away from the cleaner, then let its last batch finish. */
static int detach_offline(void *arg)
{
	struct detach_op *op = arg;
	struct tc_cache *c = op->v->cache;
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[op->v->id] = NULL;
	pthread_mutex_unlock(&c->mgmt_lock);
	tc_shares_update(c, NULL);
	tc_mngt_wait_idle(c);
	return 0;
}

static void detach_online(void *arg)
{
	struct detach_op *op = arg;
	struct tc_cache *c = op->v->cache;
	/* Counted before the volume is back in vols[], as at attach: a line change in
	 * between then leaves the dirty index short, which it detects (lost), never
	 * counted twice. */
	vol_count_lines(c, op->v);
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[op->v->id] = op->v;
	pthread_mutex_unlock(&c->mgmt_lock);
	tc_shares_update(c, op->v);
}

/*
 * Once the superblock no longer records the volume, a later open drops every
 * metadata entry still naming its id (unknown volume): for a drained detach this is
 * the point of no return.  The record goes before the lines are dropped, so that a
 * failed write here leaves the volume and every line as they were (the steps before
 * are undone).
 */
static int detach_remove_record(void *arg)
{
	struct detach_op *op = arg;
	struct tc_cache *c = op->v->cache;
	struct tc_vol_rec *rec = &c->sb.vols[op->v->id - 1];
	pthread_mutex_lock(&c->sb_lock);
	struct tc_vol_rec old = *rec;
	uint32_t old_nregions = c->sb.nregions;
	struct tc_region_rec old_regions[TC_REGIONS_MAX];
	memcpy(old_regions, c->sb.regions, sizeof(old_regions));
	memset(rec, 0, sizeof(old));
	tc_regions_drop_record(&c->sb, op->v->id);   /* its ranges go with it */
	int r = tc_cache_sb_write(c);
	if (r) {
		*rec = old;
		memcpy(c->sb.regions, old_regions, sizeof(old_regions));
		c->sb.nregions = old_nregions;
	}
	pthread_mutex_unlock(&c->sb_lock);
	return r;
}

/* The lines' accounting no longer has a volume: do it here.  The commit makes the
 * drop durable, so that the id can serve another volume; if it fails, the slots whose
 * durable entries still record dirty data stay mapped (never reused) and the next
 * open drops those entries (tc_meta_load, orphaned entries).  Past the point of no
 * return, a failure is only reported. */
static int detach_drop_lines(void *arg)
{
	struct detach_op *op = arg;
	struct tc_cache *c = op->v->cache;
	drop_volume_lines(c, op->v->id);
	int r = tc_meta_commit_sync(c);
	if (r)
		tc_warn(c->ctx, "volume \"%s\": detached, but the commit dropping its lines "
			"failed (%s); the next open of cache %s drops them", op->v->name,
			strerror(-r), c->dev->name);
	return 0;
}

static int detach_free_slots(void *arg)
{
	struct detach_op *op = arg;
	free_volume_slots(op->v->cache, op->v->id);
	return 0;
}

/* The backing stops naming this cache and its generation moves, so that this cache,
 * if it ever met the backing again, would know its contents are stale. */
static int release_backing(struct tc_volume *v)
{
	memset(v->bsb.cache_uuid, 0, 16);
	v->bsb.attach_gen++;
	return tc_backing_sb_write(v);
}

/*
 * Discarding dirty data, the backing is released first: that write is the point of no
 * return.  Before it, a power cut leaves the volume attached with its dirty data (the
 * old state); after it, the backing assembles on its own, without the discarded data
 * (the new state), whatever the cache's record and lines still say: the next attach
 * of that backing finds them stale (-ESTALE, or dropped with TC_ATTACH_DISCARD_DIRTY).
 * Removing the record first would instead leave a backing that still names the cache
 * and is attached again as a new volume, its dirty data gone: neither state.
 */
static int detach_release_backing_first(void *arg)
{
	struct detach_op *op = arg;
	struct tc_volume *v = op->v;
	if (!(op->flags & TC_DETACH_DISCARD_DIRTY))
		return 0;
	op->bsb_old = v->bsb;
	int r = release_backing(v);
	if (r)
		tc_err(v->cache->ctx, "volume \"%s\": release of backing %s failed: %s; the "
		       "volume stays attached with its dirty data", v->name, v->backing->name,
		       strerror(-r));
	return r;
}

/* A later step failed: the backing names the cache again, at the attach generation
 * the cache's record holds (nothing used the backing meanwhile: we hold it). */
static void detach_reclaim_backing(void *arg)
{
	struct detach_op *op = arg;
	struct tc_volume *v = op->v;
	if (!(op->flags & TC_DETACH_DISCARD_DIRTY))
		return;
	uint64_t gen = v->bsb.generation;
	v->bsb = op->bsb_old;
	v->bsb.generation = gen;
	if (tc_backing_sb_write(v))
		tc_err(v->cache->ctx, "volume \"%s\": the detach failed and backing %s could "
		       "not be made to name the cache again; the next attach will find the "
		       "cache's contents stale", v->name, v->backing->name);
}

/* Drained: the backing holds all the volume's data, it is released last.  A failure is
 * only reported: the cache no longer records the volume. */
static int detach_release_backing(void *arg)
{
	struct detach_op *op = arg;
	struct tc_volume *v = op->v;
	if (op->flags & TC_DETACH_DISCARD_DIRTY)
		return 0;
	int r = release_backing(v);
	if (r)
		tc_warn(v->cache->ctx, "volume \"%s\": detached, but the backing superblock "
			"update failed: %s", v->name, strerror(-r));
	return 0;
}

/* Every dirty byte is on the backing and flushed: a remote one stops naming the cache.
 * A failure is only reported (the record then refuses other openers until removed). */
static int detach_unmark_remote(void *arg)
{
	struct detach_op *op = arg;
	int r = tc_remote_mark_dirty(op->v->cache, op->v->backing, false);
	if (r)
		tc_warn(op->v->cache->ctx, "volume \"%s\": detached, but its remote backing "
			"still records the cache as holding dirty data: %s", op->v->name,
			strerror(-r));
	return 0;
}

static const struct tc_step detach_steps[] = {
	{ "stop writeback of discarded data", detach_stop_writeback, detach_resume_writeback },
	{ "send writes through", detach_drain_begin, detach_drain_end },
	{ "write back dirty data", detach_drain, NULL },
	{ "wait for requests", detach_quiesce, NULL },
	{ "flush the backing", detach_flush_backing, NULL },
	{ "take the volume offline", detach_offline, detach_online },
	{ "release the backing (discarding)", detach_release_backing_first,
	  detach_reclaim_backing },
	{ "remove the volume's record", detach_remove_record, NULL },
	{ "drop the volume's lines", detach_drop_lines, NULL },
	{ "free the volume's slots", detach_free_slots, NULL },
	{ "release the backing", detach_release_backing, NULL },
	{ "clear a remote backing's dirty record", detach_unmark_remote, NULL },
};

int tc_volume_detach(tc_volume *v, unsigned flags, tc_progress_fn fn, void *opaque)
{
	struct tc_cache *c = v->cache;
	struct detach_op op = { .v = v, .flags = flags, .fn = fn, .opaque = opaque };
	int r = refuse_readonly(v, "detach");
	if (r)
		return r;
	r = tc_steps_run(c->ctx, "detach", detach_steps, TC_STEPS_N(detach_steps), &op);
	if (r)
		return r;
	tc_info(c->ctx, "volume \"%s\": detached from cache %s", v->name, c->dev->name);
	tc_volume_free(v);
	return 0;
}

uint64_t tc_volume_size(tc_volume *v)
{
	return v->size;
}

const char *tc_volume_name(tc_volume *v)
{
	return v->name;
}
