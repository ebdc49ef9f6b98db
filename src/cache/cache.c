/* SPDX-License-Identifier: MIT */
/*
 * cache.c - the cache object: the map (hash index over the flat line array), in-flight
 * records, slot allocation and eviction, and the management operations in lifecycle
 * order: format, open (with recovery), attach, settings, flush, detach, close.
 *
 * Management operations are written as ordered steps with the durable state changing
 * in one place, so that a failure or a crash between steps leaves something a later
 * open understands (docs/format.md, "update protocol").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache_priv.h"
#include "tiercache-test.h"

/* ---- map ------------------------------------------------------------------------- */

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
		atomic_fetch_add(&v->dirty_units, (uint64_t)dd);
		atomic_fetch_add(&v->valid_units, (uint64_t)dv);
	}
}

void tc_line_unmap(struct tc_cache *c, uint32_t slot)
{
	struct tc_line *l = &c->lines[slot];
	if (l->valid || l->dirty)
		tc_line_set_bits(c, slot, 0, 0);
	tc_map_remove(c, slot);
	uint32_t blk = slot / TC_MD_ENTRIES_PER_BLOCK;
	pthread_mutex_lock(&c->meta.block_locks[blk]);
	l->vol = 0;
	l->line_no = 0;
	pthread_mutex_unlock(&c->meta.block_locks[blk]);
	tc_meta_mark(c, slot);
}

/* ---- in-flight records ------------------------------------------------------------ */

struct tc_inflight *tc_inflight_get(struct tc_cache *c, struct tc_lock_shard *s,
				    uint64_t key, bool create)
{
	for (struct tc_inflight *i = s->inflight; i; i = i->next)
		if (i->key == key) {
			i->refs++;
			return i;
		}
	if (!create)
		return NULL;
	struct tc_inflight *i = s->spare;
	if (i) {
		s->spare = NULL;
		memset(i, 0, sizeof(*i));
	} else if (!(i = calloc(1, sizeof(*i)))) {
		return NULL;
	}
	i->key = key;
	i->refs = 1;
	i->next = s->inflight;
	s->inflight = i;
	return i;
}

void tc_inflight_put(struct tc_cache *c, struct tc_lock_shard *s, struct tc_inflight *inf)
{
	if (--inf->refs)
		return;
	for (struct tc_inflight **p = &s->inflight; *p; p = &(*p)->next)
		if (*p == inf) {
			*p = inf->next;
			break;
		}
	if (!s->spare)
		s->spare = inf;
	else
		free(inf);
}

/* ---- allocation and eviction ---------------------------------------------------------- */

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
	bool busy = false;
	for (struct tc_inflight *i = s->inflight; i; i = i->next)
		if (i->key == key)
			busy = true;
	bool ok = l->vol == vol && l->line_no == line_no && !l->dirty &&
		  !(tc_line_flags_load(l) & TC_LINE_DISK_DIRTY) && !busy;
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
static void slot_free(struct tc_cache *c, uint32_t slot)
{
	pthread_mutex_lock(&c->alloc_lock);
	c->repl_ops->remove(c->repl, slot);
	c->free_slots[c->nfree++] = slot;
	atomic_fetch_sub(&c->used_lines, 1);
	pthread_mutex_unlock(&c->alloc_lock);
}

/* ---- waiting in management paths --------------------------------------------------- */

/* Let the engine run until @pred holds: poll (deterministic mode, advancing the virtual
 * clock by a tick when idle) or sleep 1 ms (threaded mode). */
static void wait_for(struct tc_cache *c, bool (*pred)(struct tc_cache *c, void *arg),
		     void *arg)
{
	while (!pred(c, arg)) {
		if (tc_ctx_deterministic(c->ctx)) {
			if (tc_ctx_poll(c->ctx, 256) == 0)
				tc_ctx_advance(c->ctx, TC_TICK_NS);
		} else {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

static bool no_requests(struct tc_cache *c, void *arg)
{
	struct tc_volume *v = arg;
	return v ? atomic_load(&v->inflight_reqs) == 0 : atomic_load(&c->inflight_reqs) == 0;
}

static bool background_idle(struct tc_cache *c, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&c->meta.lock);
	bool idle = !c->meta.running && !c->cleaner.busy;
	pthread_mutex_unlock(&c->meta.lock);
	return idle && !atomic_load(&c->kick_queued);
}

/* ---- settings ----------------------------------------------------------------------- */

void tc_volume_settings_default(struct tc_volume_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->read_cache = true;
	s->write_policy = TC_WP_WB;
	s->flush_rate = TC_FLUSH_MEDIUM;
	s->admission = TC_ADMIT_ALWAYS;
	s->fill = TC_FILL_LINE;   /* measured: docs/benchmarks.md, "Read-miss fill policy" */
	s->nhit = 2;
	s->seq_cutoff = 4u << 20;
}

void tc_cache_opts_default(struct tc_cache_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->line_size = 65536;
	o->replacement = TC_REPL_S3FIFO;
	o->commit_interval_ms = 1000;
	o->dirty_low_pct = 40;
	o->dirty_high_pct = 70;
	o->checksums = true;
}

/* ---- format ------------------------------------------------------------------------- */

static int check_opts(tc_ctx *ctx, const char *dev, const struct tc_cache_opts *o)
{
	if (o->line_size < 4096 || o->line_size > 65536 || (o->line_size & (o->line_size - 1))) {
		tc_err(ctx, "cache %s: line size %u is not a power of two from 4096 to 65536",
		       dev, o->line_size);
		return -EINVAL;
	}
	if (!tc_repl_ops_get(o->replacement)) {
		tc_err(ctx, "cache %s: unknown replacement policy %u", dev, o->replacement);
		return -EINVAL;
	}
	if (o->commit_interval_ms < 1 || o->commit_interval_ms > 3600000) {
		tc_err(ctx, "cache %s: commit interval %u ms outside 1..3600000", dev,
		       o->commit_interval_ms);
		return -EINVAL;
	}
	if (o->dirty_low_pct >= o->dirty_high_pct || o->dirty_high_pct > 100) {
		tc_err(ctx, "cache %s: dirty watermarks low %u%% high %u%%: need low < high <= 100",
		       dev, o->dirty_low_pct, o->dirty_high_pct);
		return -EINVAL;
	}
	return 0;
}

int tc_cache_format(tc_ctx *ctx, tc_dev *dev, const struct tc_cache_opts *opts)
{
	struct tc_cache_opts o;
	if (opts)
		o = *opts;
	else
		tc_cache_opts_default(&o);
	int r = check_opts(ctx, dev->name, &o);
	if (r)
		return r;
	struct tc_cache_sb *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	r = tc_fmt_cache_geometry(dev->size, o.line_size, sb);
	if (r) {
		tc_err(ctx, "cache %s: device size %" PRIu64 " too small for %u lines of %u bytes "
		       "plus metadata", dev->name, dev->size, TC_MIN_LINES, o.line_size);
		free(sb);
		return r;
	}
	tc_fmt_uuid_generate(sb->uuid);
	sb->generation = 1;
	sb->line_size = o.line_size;
	sb->dev_size = dev->size;
	sb->commit_interval_ms = o.commit_interval_ms;
	sb->replacement = o.replacement;
	sb->dirty_low_pct = o.dirty_low_pct;
	sb->dirty_high_pct = o.dirty_high_pct;
	sb->csum_off = !o.checksums;
	sb->clean_shutdown = 1;

	/* Empty metadata blocks, both copies, seq 0, in 1 MiB writes. */
	const uint32_t per_write = 256;
	uint8_t *buf = tc_alloc_buf((size_t)per_write * TC_MD_BLOCK_SIZE);
	struct tc_md_block *blk = calloc(1, sizeof(*blk));
	if (!buf || !blk) {
		free(buf);
		free(blk);
		free(sb);
		return -ENOMEM;
	}
	uint64_t total = sb->md_blocks * 2;
	for (uint64_t i = 0; i < total && !r; i += per_write) {
		uint32_t n = (uint32_t)(total - i < per_write ? total - i : per_write);
		for (uint32_t j = 0; j < n; j++) {
			uint64_t b = (i + j) / 2;
			memset(blk, 0, sizeof(*blk));
			blk->index = (uint32_t)b;
			blk->seq = 0;
			memcpy(blk->cache_uuid, sb->uuid, 16);
			uint64_t first = b * TC_MD_ENTRIES_PER_BLOCK;
			uint64_t left = sb->nslots - first;
			blk->nentries = (uint16_t)(left < TC_MD_ENTRIES_PER_BLOCK ? left :
						   TC_MD_ENTRIES_PER_BLOCK);
			tc_fmt_md_block_encode(blk, buf + (size_t)j * TC_MD_BLOCK_SIZE);
		}
		r = tc_dev_pwrite(dev, buf, (uint64_t)n * TC_MD_BLOCK_SIZE,
				  sb->md_offset + i * TC_MD_BLOCK_SIZE, 0);
	}
	free(blk);
	free(buf);
	if (!r) {
		uint8_t *sbuf = tc_alloc_buf(TC_CACHE_SB_SIZE);
		if (!sbuf) {
			r = -ENOMEM;
		} else {
			tc_fmt_cache_sb_encode(sb, sbuf);
			r = tc_dev_pwrite(dev, sbuf, TC_CACHE_SB_SIZE, 0, 0);
			if (!r)
				r = tc_dev_pwrite(dev, sbuf, TC_CACHE_SB_SIZE, TC_CACHE_SB_SIZE, 0);
			if (!r)
				r = tc_dev_flush(dev);
			free(sbuf);
		}
	}
	if (r)
		tc_err(ctx, "cache %s: format failed: %s", dev->name, strerror(-r));
	else
		tc_info(ctx, "cache %s: formatted, %u lines of %u bytes", dev->name, sb->nslots,
			sb->line_size);
	free(sb);
	return r;
}

int tc_backing_format(tc_ctx *ctx, tc_dev *dev, const char *name,
		      const struct tc_volume_settings *settings)
{
	return tc_backing_format_striped(ctx, dev, name, settings, 0);
}

int tc_backing_format_striped(tc_ctx *ctx, tc_dev *dev, const char *name,
			      const struct tc_volume_settings *settings, uint32_t stripe_size)
{
	if (stripe_size && (stripe_size & (stripe_size - 1) || stripe_size < TC_UNIT_SIZE ||
			    stripe_size > TC_STRIPE_MAX)) {
		tc_err(ctx, "backing %s: stripe size %u is not a power of two from %u to %u",
		       dev->name, stripe_size, TC_UNIT_SIZE, TC_STRIPE_MAX);
		return -EINVAL;
	}
	if (!tc_volume_name_valid(name)) {
		tc_err(ctx, "backing %s: volume name %s%s%s must be 1-%d characters of "
		       "[A-Za-z0-9._-], not \".\", \"..\" or starting with '-'", dev->name,
		       name ? "\"" : "", name ? name : "(null)", name ? "\"" : "",
		       TC_NAME_MAX - 1);
		return -EINVAL;
	}
	if (dev->size < TC_BACKING_DATA_OFFSET + 4096) {
		tc_err(ctx, "backing %s: device size %" PRIu64 " too small (need more than %u)",
		       dev->name, dev->size, TC_BACKING_DATA_OFFSET);
		return -ENOSPC;
	}
	struct tc_backing_sb b;
	memset(&b, 0, sizeof(b));
	if (settings) {
		char why[160];
		if (tc_fmt_settings_check(settings, why, sizeof(why))) {
			tc_err(ctx, "backing %s: %s", dev->name, why);
			return -EINVAL;
		}
		b.settings = *settings;
	} else {
		tc_volume_settings_default(&b.settings);
	}
	b.generation = 1;
	tc_fmt_uuid_generate(b.uuid);
	snprintf(b.name, sizeof(b.name), "%s", name);
	b.dev_size = dev->size;
	b.data_offset = TC_BACKING_DATA_OFFSET;
	b.size = (dev->size - TC_BACKING_DATA_OFFSET) & ~(uint64_t)4095;
	b.attach_gen = 1;
	b.stripe_size = stripe_size;
	uint8_t *buf = tc_alloc_buf(TC_BACKING_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	tc_fmt_backing_sb_encode(&b, buf);
	int r = tc_dev_pwrite(dev, buf, TC_BACKING_SB_SIZE, 0, 0);
	if (!r)
		r = tc_dev_pwrite(dev, buf, TC_BACKING_SB_SIZE, TC_BACKING_SB_SIZE, 0);
	if (!r)
		r = tc_dev_flush(dev);
	free(buf);
	if (r)
		tc_err(ctx, "backing %s: format failed: %s", dev->name, strerror(-r));
	return r;
}

/* ---- superblock reading ----------------------------------------------------------- */

/* Read both copies; pick the valid one with the highest generation. */
static int read_cache_sb(tc_ctx *ctx, tc_dev *dev, struct tc_cache_sb *sb, int *latest)
{
	uint8_t *buf = tc_alloc_buf(2 * TC_CACHE_SB_SIZE);
	struct tc_cache_sb *tmp = calloc(1, sizeof(*tmp));
	if (!buf || !tmp) {
		free(buf);
		free(tmp);
		return -ENOMEM;
	}
	int r = tc_dev_pread(dev, buf, 2 * TC_CACHE_SB_SIZE, 0);
	if (r) {
		tc_err(ctx, "cache %s: cannot read superblocks: %s", dev->name, strerror(-r));
		goto out;
	}
	char why[2][200];
	int best = -1;
	enum tc_fmt_status st[2];
	for (int i = 0; i < 2; i++) {
		st[i] = tc_fmt_cache_sb_decode(buf + i * TC_CACHE_SB_SIZE, tmp, why[i],
					       sizeof(why[i]));
		if (st[i] == TC_FMT_OK && (best < 0 || tmp->generation > sb->generation)) {
			*sb = *tmp;
			best = i;
		}
	}
	if (best < 0) {
		if (st[0] == TC_FMT_BAD_MAGIC && st[1] == TC_FMT_BAD_MAGIC) {
			tc_err(ctx, "cache %s: no tiercache cache superblock (not formatted as a "
			       "cache)", dev->name);
			r = -EINVAL;
		} else {
			tc_err(ctx, "cache %s: both superblock copies refused: copy 0: %s; copy 1: %s",
			       dev->name, why[0], why[1]);
			r = -EUCLEAN;
		}
		goto out;
	}
	if (st[!best] != TC_FMT_OK)
		tc_warn(ctx, "cache %s: superblock copy %d refused (%s); using copy %d",
			dev->name, !best, why[!best], best);
	*latest = best;
	if (sb->dev_size > dev->size) {
		tc_err(ctx, "cache %s: device is %" PRIu64 " bytes, the cache was formatted for %"
		       PRIu64, dev->name, dev->size, sb->dev_size);
		r = -EINVAL;
	}
out:
	free(tmp);
	free(buf);
	return r;
}

static int read_backing_sb(tc_ctx *ctx, tc_dev *dev, struct tc_backing_sb *b, int *latest)
{
	uint8_t *buf = tc_alloc_buf(2 * TC_BACKING_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	int r = dev->size >= 2 * TC_BACKING_SB_SIZE ?
		tc_dev_pread(dev, buf, 2 * TC_BACKING_SB_SIZE, 0) : -EINVAL;
	if (r) {
		tc_err(ctx, "backing %s: cannot read superblocks: %s", dev->name, strerror(-r));
		free(buf);
		return r;
	}
	char why[2][200];
	enum tc_fmt_status st[2];
	struct tc_backing_sb tmp;
	int best = -1;
	for (int i = 0; i < 2; i++) {
		st[i] = tc_fmt_backing_sb_decode(buf + i * TC_BACKING_SB_SIZE, &tmp, why[i],
						 sizeof(why[i]));
		if (st[i] == TC_FMT_OK && (best < 0 || tmp.generation > b->generation)) {
			*b = tmp;
			best = i;
		}
	}
	free(buf);
	if (best < 0) {
		if (st[0] == TC_FMT_BAD_MAGIC && st[1] == TC_FMT_BAD_MAGIC) {
			tc_err(ctx, "backing %s: no tiercache backing superblock", dev->name);
			return -EINVAL;
		}
		tc_err(ctx, "backing %s: both superblock copies refused: copy 0: %s; copy 1: %s",
		       dev->name, why[0], why[1]);
		return -EUCLEAN;
	}
	if (b->dev_size > dev->size) {
		tc_err(ctx, "backing %s: device is %" PRIu64 " bytes, formatted for %" PRIu64,
		       dev->name, dev->size, b->dev_size);
		return -EINVAL;
	}
	*latest = best;
	return 0;
}

/* Write @b (read from copy @latest) to the other copy, one generation on, and flush. */
static int backing_sb_rewrite(tc_ctx *ctx, tc_dev *dev, struct tc_backing_sb *b, int latest)
{
	b->generation++;
	uint8_t *buf = tc_alloc_buf(TC_BACKING_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	tc_fmt_backing_sb_encode(b, buf);
	int r = tc_dev_pwrite(dev, buf, TC_BACKING_SB_SIZE, (uint64_t)!latest * TC_BACKING_SB_SIZE,
			      0);
	if (!r)
		r = tc_dev_flush(dev);
	free(buf);
	if (r)
		tc_err(ctx, "backing %s (volume \"%s\"): superblock write failed: %s", dev->name,
		       b->name, strerror(-r));
	return r;
}

int tc_backing_use_uncached(tc_ctx *ctx, tc_dev *dev)
{
	struct tc_backing_sb b;
	int latest;
	int r = read_backing_sb(ctx, dev, &b, &latest);
	if (r)
		return r;
	b.attach_gen++;
	return backing_sb_rewrite(ctx, dev, &b, latest);
}

int tc_backing_forget_cache(tc_ctx *ctx, tc_dev *dev, char cache_uuid[37])
{
	struct tc_backing_sb b;
	int latest;
	int r = read_backing_sb(ctx, dev, &b, &latest);
	if (r)
		return r;
	if (tc_fmt_uuid_is_zero(b.cache_uuid)) {
		tc_err(ctx, "backing %s (volume \"%s\"): no cache attached, nothing to forget",
		       dev->name, b.name);
		return -ENOENT;
	}
	if (cache_uuid)
		tc_fmt_uuid_str(b.cache_uuid, cache_uuid);
	memset(b.cache_uuid, 0, sizeof(b.cache_uuid));
	b.attach_gen++;
	return backing_sb_rewrite(ctx, dev, &b, latest);
}

/* ---- open ------------------------------------------------------------------------- */

static void cache_tick(struct tc_timer *t)
{
	struct tc_cache *c = (struct tc_cache *)((char *)t - offsetof(struct tc_cache, tick));
	uint64_t now = tc_ctx_now(c->ctx);
	tc_meta_tick(c, now);
	tc_cleaner_tick(c, now);
	if (!c->closing)
		tc_ctx_timer_arm(c->ctx, &c->tick, now + TC_TICK_NS);
}

static void cache_free(struct tc_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		struct tc_volume *v = c->vols[i];
		if (!v)
			continue;
		tc_seq_fini(&v->seq);
		free(v->release_buf);
		free(v);
	}
	tc_cleaner_fini(c);
	tc_meta_fini(c);
	if (c->repl)
		c->repl_ops->destroy(c->repl);
	tc_admit_fini(&c->admit);
	if (c->shards) {
		for (uint32_t i = 0; i <= c->shard_mask; i++) {
			struct tc_inflight *n, *inf = c->shards[i].inflight;
			for (; inf; inf = n) {
				n = inf->next;
				free(inf);
			}
			free(c->shards[i].spare);
			pthread_mutex_destroy(&c->shards[i].lock);
		}
	}
	free(c->shards);
	free(c->buckets);
	free(c->free_slots);
	free(c->lines);
	free((void *)c->csum);
	pthread_mutex_destroy(&c->alloc_lock);
	for (unsigned i = 0; i < TC_LIVE_SHARDS; i++)
		pthread_mutex_destroy(&c->live[i].lock);
	pthread_mutex_destroy(&c->mgmt_lock);
	pthread_mutex_destroy(&c->sb_lock);
	free(c);
}

static int cache_alloc_structs(struct tc_cache *c)
{
	uint32_t n = c->nslots;
	c->lines = calloc(n, sizeof(*c->lines));
	c->free_slots = malloc(sizeof(uint32_t) * n);
	uint32_t nb = 1;
	while (nb * 2 <= n / 2)
		nb *= 2;
	c->buckets = malloc(sizeof(uint32_t) * nb);
	c->bucket_mask = nb - 1;
	uint32_t ns = nb < 1024 ? nb : 1024;
	c->shards = calloc(ns, sizeof(*c->shards));
	c->shard_mask = ns - 1;
	if (!c->sb.csum_off)
		c->csum = calloc((size_t)n * c->units, sizeof(*c->csum));
	if (!c->lines || !c->free_slots || !c->buckets || !c->shards ||
	    (!c->sb.csum_off && !c->csum))
		return -ENOMEM;
	for (uint32_t i = 0; i < nb; i++)
		c->buckets[i] = TC_SLOT_NONE;
	for (uint32_t i = 0; i < ns; i++)
		pthread_mutex_init(&c->shards[i].lock, NULL);
	for (uint32_t i = 0; i < n; i++)
		c->lines[i].hnext = TC_SLOT_NONE;
	c->repl_ops = tc_repl_ops_get(c->sb.replacement);
	if (!c->repl_ops)
		return -EINVAL;
	int r = c->repl_ops->create(&c->repl, c->lines, n);
	if (r)
		return r;
	r = tc_admit_init(&c->admit, n);
	if (r)
		return r;
	r = tc_meta_init(c);
	if (r)
		return r;
	return tc_cleaner_init(c);
}

/* A cache's in-memory structures from its newest valid superblock, nothing loaded or
 * written yet (shared by open and inspection).  Returns 0 and *@out, or -errno. */
static int cache_setup(tc_ctx *ctx, tc_dev *dev, struct tc_cache **out)
{
	struct tc_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ctx = ctx;
	c->dev = dev;
	pthread_mutex_init(&c->sb_lock, NULL);
	for (unsigned i = 0; i < TC_LIVE_SHARDS; i++)
		pthread_mutex_init(&c->live[i].lock, NULL);
	pthread_mutex_init(&c->mgmt_lock, NULL);
	pthread_mutex_init(&c->alloc_lock, NULL);
	int r = read_cache_sb(ctx, dev, &c->sb, &c->sb_latest);
	if (r) {
		cache_free(c);
		return r;
	}
	c->line_size = c->sb.line_size;
	c->line_shift = (unsigned)__builtin_ctz(c->line_size);
	c->units = c->line_size / TC_UNIT_SIZE;
	c->unit_mask_all = tc_units_mask(0, c->units);
	c->nslots = c->sb.nslots;
	r = cache_alloc_structs(c);
	if (r) {
		tc_err(ctx, "cache %s: cannot set up %u lines: %s", dev->name, c->nslots,
		       strerror(-r));
		cache_free(c);
		return r;
	}
	*out = c;
	return 0;
}

int tc_cache_open(tc_ctx *ctx, tc_dev *dev, tc_cache **out)
{
	struct tc_cache *c;
	uint64_t t0 = tc_ctx_deterministic(ctx) ? 0 : tc_ctx_now(ctx);
	int r = cache_setup(ctx, dev, &c);
	if (r)
		return r;
	r = tc_meta_load(c, c->sb.clean_shutdown == 1);
	if (r) {
		cache_free(c);
		return r;
	}
	if (!tc_ctx_deterministic(ctx))
		c->recovery_ns = tc_ctx_now(ctx) - t0;
	/* In use from now on: a crash must not be taken for a clean shutdown. */
	c->sb.clean_shutdown = 0;
	r = tc_cache_sb_write(c);
	if (r) {
		cache_free(c);
		return r;
	}
	c->tick.fn = cache_tick;
	tc_ctx_timer_arm(ctx, &c->tick, tc_ctx_now(ctx) + TC_TICK_NS);
	*out = c;
	return 0;
}

uint64_t tc_volume_valid_bytes(tc_volume *v, uint64_t off, uint64_t len)
{
	struct tc_cache *c = v->cache;
	uint64_t pos = off, got = 0, end;

	if (off >= v->size)
		return 0;
	end = len > v->size - off ? v->size : off + len;

	while (pos < end) {
		uint32_t line_no = (uint32_t)(pos >> c->line_shift);
		uint64_t lstart = (uint64_t)line_no << c->line_shift;
		uint64_t lend = lstart + c->line_size < end ? lstart + c->line_size : end;
		uint64_t key = tc_line_key(v->id, line_no);
		struct tc_lock_shard *st = tc_shard_of(c, key);
		uint16_t valid = 0;

		pthread_mutex_lock(&st->lock);
		uint32_t slot = tc_map_lookup(c, key);
		if (slot != TC_SLOT_NONE)
			valid = c->lines[slot].valid;
		pthread_mutex_unlock(&st->lock);
		for (uint64_t p = pos; p < lend;) {
			uint64_t unit = (p - lstart) / TC_UNIT_SIZE;
			uint64_t uend = lstart + (unit + 1) * TC_UNIT_SIZE;
			uint64_t e = uend < lend ? uend : lend;

			if (valid & (1u << unit))
				got += e - p;
			p = e;
		}
		pos = lend;
	}
	return got;
}

/* ---- inspection ------------------------------------------------------------------- */

/* Both cache superblock copies decoded one by one, for the report. */
static void inspect_sb_copies(tc_dev *dev, struct tc_cache_report *rep)
{
	uint8_t *buf = tc_alloc_buf(2 * TC_CACHE_SB_SIZE);
	struct tc_cache_sb *tmp = calloc(1, sizeof(*tmp));
	if (buf && tmp && !tc_dev_pread(dev, buf, 2 * TC_CACHE_SB_SIZE, 0)) {
		for (int i = 0; i < 2; i++) {
			enum tc_fmt_status st = tc_fmt_cache_sb_decode(buf + i * TC_CACHE_SB_SIZE,
				tmp, rep->sb_damage[i], sizeof(rep->sb_damage[i]));
			if (st == TC_FMT_OK) {
				rep->sb_copies_ok++;
				rep->sb_damage[i][0] = 0;
			}
		}
	}
	free(tmp);
	free(buf);
}

int tc_cache_inspect(tc_ctx *ctx, tc_dev *dev, struct tc_cache_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	int r = tc_dev_probe(ctx, dev, &rep->probe);
	if (r)
		return r;
	inspect_sb_copies(dev, rep);
	struct tc_cache *c;
	r = cache_setup(ctx, dev, &c);
	if (r)
		return r;
	c->meta.inspecting = true;
	r = tc_meta_load(c, c->sb.clean_shutdown == 1);
	rep->md_blocks = c->sb.md_blocks;
	rep->md_copies_damaged = c->meta.copies_damaged;
	rep->md_blocks_lost = c->meta.blocks_lost;
	if (r)
		goto out;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		const struct tc_vol_rec *rec = &c->sb.vols[i];
		if (!rec->id || rep->nvolumes >= TC_INSPECT_MAX_VOLUMES)
			continue;
		struct tc_inspect_volume *iv = &rep->volumes[rep->nvolumes++];
		snprintf(iv->name, sizeof(iv->name), "%s", rec->name);
		tc_fmt_uuid_str(rec->backing_uuid, iv->backing_uuid);
		iv->size = rec->size;
		iv->settings = rec->settings;
		for (uint32_t s = 0; s < c->nslots; s++) {
			const struct tc_line *l = &c->lines[s];
			if (l->vol != rec->id)
				continue;
			iv->dirty_bytes += (uint64_t)tc_popcount16(l->dirty) * TC_UNIT_SIZE;
			iv->cached_bytes += (uint64_t)tc_popcount16(l->valid) * TC_UNIT_SIZE;
		}
	}
	for (uint32_t s = 0; s < c->nslots; s++) {
		rep->lines_used += c->lines[s].vol != 0;
		rep->lines_dirty += c->lines[s].dirty != 0;
	}
	if (rep->md_blocks_lost)
		r = -EUCLEAN;
out:
	cache_free(c);
	return r;
}

/* The volume records of an open cache, online or not, with the dirty and valid bytes
 * its lines hold for each (a racy peek at the lines: a moment of a moving state). */
unsigned tc_cache_volumes(tc_cache *c, struct tc_inspect_volume *out, unsigned max)
{
	uint8_t ids[TC_MAX_VOLUMES];
	unsigned n = 0;
	pthread_mutex_lock(&c->sb_lock);
	for (unsigned i = 0; i < TC_MAX_VOLUMES && n < max; i++) {
		const struct tc_vol_rec *rec = &c->sb.vols[i];
		if (!rec->id)
			continue;
		struct tc_inspect_volume *iv = &out[n];
		memset(iv, 0, sizeof(*iv));
		snprintf(iv->name, sizeof(iv->name), "%s", rec->name);
		tc_fmt_uuid_str(rec->backing_uuid, iv->backing_uuid);
		iv->size = rec->size;
		iv->settings = rec->settings;
		ids[n++] = rec->id;
	}
	pthread_mutex_unlock(&c->sb_lock);
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned k = 0; k < n; k++)
		out[k].online = c->vols[ids[k]] != NULL;
	pthread_mutex_unlock(&c->mgmt_lock);
	for (uint32_t s = 0; s < c->nslots; s++) {
		struct tc_line l = tc_line_peek(&c->lines[s]);
		if (!l.vol)
			continue;
		for (unsigned k = 0; k < n; k++) {
			if (ids[k] != l.vol)
				continue;
			out[k].dirty_bytes += (uint64_t)tc_popcount16(l.dirty) * TC_UNIT_SIZE;
			out[k].cached_bytes += (uint64_t)tc_popcount16(l.valid) * TC_UNIT_SIZE;
			break;
		}
	}
	return n;
}

/* ---- attach ----------------------------------------------------------------------- */

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
			slot_free(c, i);
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
	int r = read_backing_sb(c->ctx, dev, &b, &latest);
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
			tc_seq_fini(&v->seq);
			free(v);
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
			tc_seq_fini(&v->seq);
			free(v);
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
			tc_seq_fini(&v->seq);
			free(v);
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
	wait_for(c, no_requests, v);
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
	wait_for(c, background_idle, NULL);
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
	tc_seq_fini(&v->seq);
	free(v->release_buf);
	free(v);
	return 0;
}

/* ---- close ------------------------------------------------------------------------ */

int tc_cache_close(tc_cache *c)
{
	wait_for(c, no_requests, NULL);
	c->closing = true;
	tc_ctx_timer_cancel(c->ctx, &c->tick);
	wait_for(c, background_idle, NULL);
	/* Clean lines are trusted at the next open only if the backings hold what the
	 * cache calls clean: write-through and write-around writes must be durable. */
	int r = 0;
	for (unsigned i = 1; i <= TC_MAX_VOLUMES && !r; i++)
		if (c->vols[i])
			r = tc_dev_flush(c->vols[i]->backing);
	if (!r)
		r = tc_meta_commit_sync(c);
	if (!r) {
		c->sb.clean_shutdown = 1;
		r = tc_cache_sb_write(c);
	}
	if (r)
		tc_err(c->ctx, "cache %s: clean shutdown failed (%s); the next open recovers as "
		       "after a crash", c->dev->name, strerror(-r));
	cache_free(c);
	return r;
}

void tc_cache_abandon(tc_cache *c)
{
	c->closing = true;
	tc_ctx_timer_cancel(c->ctx, &c->tick);
	if (!tc_ctx_deterministic(c->ctx)) {
		/* Device threads may still complete requests into this memory: let them
		 * finish (after a power cut they fail at once), then free. */
		wait_for(c, no_requests, NULL);
		wait_for(c, background_idle, NULL);
	}
	tc_requests_abandon(c);
	cache_free(c);
}

/* ---- synchronous request helpers ----------------------------------------------------- */

struct sync_io {
	struct tc_io io;
	struct iovec iov;
	struct tc_waiter w;
};

static void sync_done(struct tc_io *io, int result)
{
	tc_waiter_done(&((struct sync_io *)io)->w, result);   /* last: on its stack */
}

int tc_volume_io(tc_volume *v, enum tc_op op, unsigned flags, void *buf, uint64_t len,
		 uint64_t off)
{
	struct sync_io s;
	memset(&s, 0, sizeof(s));
	tc_waiter_init(&s.w, v->cache->ctx);
	s.iov.iov_base = buf;
	s.iov.iov_len = len;
	s.io.op = (uint8_t)op;
	s.io.flags = (uint8_t)flags;
	s.io.offset = off;
	s.io.length = len;
	if (op == TC_OP_READ || op == TC_OP_WRITE) {
		s.io.iov = &s.iov;
		s.io.iovcnt = 1;
	}
	s.io.done = sync_done;
	tc_volume_submit(v, &s.io);
	return tc_waiter_wait(&s.w);
}

int tc_volume_pread(tc_volume *v, void *buf, uint64_t len, uint64_t off)
{
	return tc_volume_io(v, TC_OP_READ, 0, buf, len, off);
}

int tc_volume_pwrite(tc_volume *v, const void *buf, uint64_t len, uint64_t off,
		     unsigned flags)
{
	return tc_volume_io(v, TC_OP_WRITE, flags, (void *)buf, len, off);
}

uint64_t tc_volume_size(tc_volume *v)
{
	return v->size;
}

const char *tc_volume_name(tc_volume *v)
{
	return v->name;
}
