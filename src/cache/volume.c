/* SPDX-License-Identifier: MIT */
/*
 * volume.c - a volume's life on an open cache: attach (with the staleness check of
 * the backing's attach generation), settings, flushing its dirty data, detach.
 *
 * Each operation changes the durable state in a fixed order, so that a failure or a
 * crash between two steps leaves something a later open understands
 * (docs/format.md, "update protocol").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

void tc_volume_free(struct tc_volume *v)
{
	tc_seq_fini(&v->seq);
	free(v->release_buf);
	free(v);
}

/* ---- the volume's lines ----------------------------------------------------------- */

static void vol_count_lines(struct tc_cache *c, struct tc_volume *v)
{
	uint64_t dirty = 0, valid = 0;
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line l = tc_line_peek(&c->lines[i]);
		if (l.vol != v->id)
			continue;
		dirty += tc_popcount16(l.dirty);
		valid += tc_popcount16(l.valid);
	}
	atomic_store(&v->dirty_units, dirty);
	atomic_store(&v->valid_units, valid);
}

/* Drop every line of volume @id (it must be offline or quiesced): valid and dirty bits
 * cleared; slots stay mapped empty until a commit makes that durable. */
static void drop_volume_lines(struct tc_cache *c, uint8_t id)
{
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line *l = &c->lines[i];
		struct tc_line peek = tc_line_peek(l);
		if (peek.vol != id)
			continue;
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(id, peek.line_no));
		pthread_mutex_lock(&s->lock);
		if (l->vol == id && (l->valid || l->dirty))
			tc_line_set_bits(c, i, 0, 0);
		pthread_mutex_unlock(&s->lock);
	}
}

/* After a commit made the drop durable: unmap the volume's slots into the free list. */
static void free_volume_slots(struct tc_cache *c, uint8_t id)
{
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line *l = &c->lines[i];
		struct tc_line peek = tc_line_peek(l);
		if (peek.vol != id)
			continue;
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(id, peek.line_no));
		pthread_mutex_lock(&s->lock);
		bool mine = l->vol == id && !l->dirty &&
			    !(tc_line_flags_load(l) & TC_LINE_DISK_DIRTY);
		if (mine)
			tc_line_unmap(c, i);
		pthread_mutex_unlock(&s->lock);
		if (mine)
			tc_slot_free(c, i);
	}
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

int tc_cache_attach(tc_cache *c, tc_dev *dev, const struct tc_volume_settings *settings,
		    unsigned flags, tc_volume **out)
{
	struct tc_backing_sb b;
	int latest = 0;
	int r = tc_backing_sb_read(c->ctx, dev, &b, &latest);
	if (r)
		return r;
	char uuid_s[37], cuuid_s[37];
	tc_fmt_uuid_str(c->sb.uuid, cuuid_s);
	if (!tc_fmt_uuid_is_zero(b.cache_uuid) && memcmp(b.cache_uuid, c->sb.uuid, 16)) {
		tc_fmt_uuid_str(b.cache_uuid, uuid_s);
		tc_err(c->ctx, "backing %s (volume \"%s\"): attached to cache %s, not to cache %s "
		       "(%s)", dev->name, b.name, uuid_s, cuuid_s, c->dev->name);
		return -EBUSY;
	}
	if (settings) {
		char why[160];
		if (tc_fmt_settings_check(settings, why, sizeof(why))) {
			tc_err(c->ctx, "volume \"%s\": %s", b.name, why);
			return -EINVAL;
		}
	}
	pthread_mutex_lock(&c->sb_lock);
	struct tc_vol_rec *rec = NULL;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (c->sb.vols[i].id && !memcmp(c->sb.vols[i].backing_uuid, b.uuid, 16))
			rec = &c->sb.vols[i];
	pthread_mutex_lock(&c->mgmt_lock);
	bool online = rec && c->vols[rec->id];
	pthread_mutex_unlock(&c->mgmt_lock);
	if (online) {
		tc_err(c->ctx, "volume \"%s\": already attached (backing %s)", b.name, dev->name);
		r = -EEXIST;
		goto out;
	}
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		if (c->sb.vols[i].id && &c->sb.vols[i] != rec && !strcmp(c->sb.vols[i].name, b.name)) {
			tc_err(c->ctx, "volume \"%s\": the cache %s already has a volume of that "
			       "name on another backing", b.name, c->dev->name);
			r = -EEXIST;
			goto out;
		}
	bool fresh = !rec;
	bool stale = false;
	if (rec) {
		stale = memcmp(b.cache_uuid, c->sb.uuid, 16) || b.attach_gen != rec->backing_gen;
		if (stale) {
			uint64_t nd = count_dirty_of(c, rec->id);
			if (nd && !(flags & TC_ATTACH_DISCARD_DIRTY)) {
				tc_err(c->ctx, "volume \"%s\": backing %s was written without cache %s "
				       "(generation %" PRIu64 ", cache saw %" PRIu64 "), and the cache "
				       "holds %" PRIu64 " dirty lines for it; refusing (discard them "
				       "explicitly to attach)", b.name, dev->name, c->dev->name,
				       b.attach_gen, rec->backing_gen, nd);
				r = -ESTALE;
				goto out;
			}
			tc_warn(c->ctx, "volume \"%s\": stale cache contents dropped (backing %s "
				"generation %" PRIu64 ", cache saw %" PRIu64 ")", b.name, dev->name,
				b.attach_gen, rec->backing_gen);
			drop_volume_lines(c, rec->id);
			r = tc_meta_commit_sync(c);
			if (r)
				goto out;
			free_volume_slots(c, rec->id);
		}
	} else {
		for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
			if (!c->sb.vols[i].id) {
				rec = &c->sb.vols[i];
				break;
			}
		if (!rec) {
			tc_err(c->ctx, "volume \"%s\": cache %s already serves %u volumes", b.name,
			       c->dev->name, TC_MAX_VOLUMES);
			r = -ENOSPC;
			goto out;
		}
	}
	if (b.size > ((uint64_t)UINT32_MAX << c->line_shift)) {
		tc_err(c->ctx, "volume \"%s\": size %" PRIu64 " exceeds 2^32 lines of %u bytes",
		       b.name, b.size, c->line_size);
		r = -EFBIG;
		goto out;
	}
	struct tc_volume *v = calloc(1, sizeof(*v));
	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	v->cache = c;
	v->backing = dev;
	pthread_mutex_init(&v->release_lock, NULL);
	v->id = (uint8_t)(rec - c->sb.vols) + 1;
	v->size = b.size;
	v->bsb = b;
	v->bsb_latest = latest;
	snprintf(v->name, sizeof(v->name), "%s", b.name);
	v->set = fresh || stale ? b.settings : rec->settings;
	tc_seq_init(&v->seq);

	/* Durable order: the backing first names this cache (and moves its generation
	 * when the cache link is new or stale), then the cache records the volume.  A
	 * crash in between leaves a backing whose cache has no record of it: attached
	 * again as a new volume with no lines. */
	if (fresh || stale) {
		memcpy(v->bsb.cache_uuid, c->sb.uuid, 16);
		v->bsb.attach_gen++;
		r = tc_backing_sb_write(v);
		if (r) {
			tc_volume_free(v);
			goto out;
		}
		struct tc_vol_rec nrec;
		memset(&nrec, 0, sizeof(nrec));
		nrec.id = v->id;
		memcpy(nrec.backing_uuid, b.uuid, 16);
		snprintf(nrec.name, sizeof(nrec.name), "%s", b.name);
		nrec.size = b.size;
		nrec.backing_gen = v->bsb.attach_gen;
		nrec.settings = v->set;
		struct tc_vol_rec old = *rec;
		*rec = nrec;
		r = tc_cache_sb_write(c);
		if (r) {
			*rec = old;
			tc_volume_free(v);
			goto out;
		}
	}
	vol_count_lines(c, v);
	atomic_store(&v->last_io_ns, tc_ctx_now(c->ctx));
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[v->id] = v;
	pthread_mutex_unlock(&c->mgmt_lock);
	pthread_mutex_unlock(&c->sb_lock);
	struct tc_volume_settings now;
	tc_volume_get(v, &now);
	if (settings && memcmp(settings, &now, sizeof(*settings))) {
		r = tc_volume_set(v, settings, NULL, NULL);
		if (r) {
			pthread_mutex_lock(&c->mgmt_lock);
			c->vols[v->id] = NULL;
			pthread_mutex_unlock(&c->mgmt_lock);
			tc_volume_free(v);
			return r;
		}
	}
	*out = v;
	return 0;
out:
	pthread_mutex_unlock(&c->sb_lock);
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
}

void tc_settings_publish(struct tc_volume *v, const struct tc_volume_settings *s)
{
	__atomic_store_n(&v->set.read_cache, s->read_cache, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.flush_rate, s->flush_rate, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.admission, s->admission, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.fill, s->fill, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.nhit, s->nhit, __ATOMIC_RELAXED);
	__atomic_store_n(&v->set.seq_cutoff, s->seq_cutoff, __ATOMIC_RELAXED);
	/* Last, and with release: a request that sees the new policy sees the rest. */
	__atomic_store_n(&v->set.write_policy, s->write_policy, __ATOMIC_RELEASE);
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

int tc_volume_set(tc_volume *v, const struct tc_volume_settings *s, tc_progress_fn fn,
		  void *opaque)
{
	struct tc_cache *c = v->cache;
	char why[160];
	if (tc_fmt_settings_check(s, why, sizeof(why))) {
		tc_err(c->ctx, "volume \"%s\": %s", v->name, why);
		return -EINVAL;
	}
	struct tc_volume_settings old;
	tc_volume_get(v, &old);
	if (old.write_policy == TC_WP_WB && s->write_policy != TC_WP_WB) {
		/* Leaving write-back: writes go write-through while the dirty data drains,
		 * and keep doing so until the new policy is in place. */
		atomic_fetch_add(&v->draining, 1);
		int r = tc_cleaner_drain(v, fn, opaque);
		if (r) {
			atomic_fetch_sub(&v->draining, 1);
			return r;
		}
		tc_settings_publish(v, s);
		atomic_fetch_sub(&v->draining, 1);
	} else {
		tc_settings_publish(v, s);
	}
	int r = store_settings(v);
	if (r) {
		tc_err(c->ctx, "volume \"%s\": settings applied but not stored: %s", v->name,
		       strerror(-r));
	}
	return r;
}

int tc_volume_flush_dirty(tc_volume *v, tc_progress_fn fn, void *opaque)
{
	atomic_fetch_add(&v->draining, 1);
	int r = tc_cleaner_drain(v, fn, opaque);
	atomic_fetch_sub(&v->draining, 1);
	return r;
}

int tc_volume_detach(tc_volume *v, unsigned flags, tc_progress_fn fn, void *opaque)
{
	struct tc_cache *c = v->cache;
	int r;
	/* Discarding: the cleaner must not write back the data the caller throws away
	 * (a drain would run it flat out while we wait for the requests below). */
	if (flags & TC_DETACH_DISCARD_DIRTY)
		atomic_store(&v->discarding, true);
	atomic_fetch_add(&v->draining, 1);
	if (!(flags & TC_DETACH_DISCARD_DIRTY)) {
		r = tc_cleaner_drain(v, fn, opaque);
		if (r) {
			atomic_fetch_sub(&v->draining, 1);
		atomic_store(&v->discarding, false);
			return r;
		}
	}
	tc_mngt_wait_requests(c, v);
	r = tc_dev_flush(v->backing);
	if (r) {
		tc_err(c->ctx, "volume \"%s\": flush of backing %s failed: %s", v->name,
		       v->backing->name, strerror(-r));
		atomic_fetch_sub(&v->draining, 1);
		atomic_store(&v->discarding, false);
		return r;
	}
	/* Take the volume away from the cleaner, then let its last batch finish. */
	pthread_mutex_lock(&c->mgmt_lock);
	c->vols[v->id] = NULL;
	pthread_mutex_unlock(&c->mgmt_lock);
	tc_mngt_wait_idle(c);
	/* The lines' accounting no longer has a volume: do it here. */
	drop_volume_lines(c, v->id);
	r = tc_meta_commit_sync(c);
	if (r) {
		pthread_mutex_lock(&c->mgmt_lock);
		c->vols[v->id] = v;
		pthread_mutex_unlock(&c->mgmt_lock);
		atomic_fetch_sub(&v->draining, 1);
		atomic_store(&v->discarding, false);
		vol_count_lines(c, v);
		return r;
	}
	free_volume_slots(c, v->id);
	pthread_mutex_lock(&c->sb_lock);
	struct tc_vol_rec old = c->sb.vols[v->id - 1];
	memset(&c->sb.vols[v->id - 1], 0, sizeof(old));
	r = tc_cache_sb_write(c);
	if (r)
		c->sb.vols[v->id - 1] = old;
	pthread_mutex_unlock(&c->sb_lock);
	if (r) {
		pthread_mutex_lock(&c->mgmt_lock);
		c->vols[v->id] = v;
		pthread_mutex_unlock(&c->mgmt_lock);
		atomic_fetch_sub(&v->draining, 1);
		atomic_store(&v->discarding, false);
		vol_count_lines(c, v);
		return r;
	}
	/* The backing is on its own now; its generation moves so that this cache, if it
	 * ever met the backing again, would know its contents are stale. */
	memset(v->bsb.cache_uuid, 0, 16);
	v->bsb.attach_gen++;
	r = tc_backing_sb_write(v);
	if (r)
		tc_warn(c->ctx, "volume \"%s\": detached, but the backing superblock update "
			"failed: %s", v->name, strerror(-r));
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
