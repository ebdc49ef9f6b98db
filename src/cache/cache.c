/* SPDX-License-Identifier: MIT */
/*
 * cache.c - the cache object's life: defaults, format, open (in-memory structures
 * from the superblock, then recovery of the line metadata), close and abandon.  The
 * pieces of a cache live elsewhere: the map (map.c), the line lock (lock.c), slot
 * allocation (alloc.c), metadata commits and recovery (metadata.c), the request paths
 * (request.c, plan.c), the cleaner (cleaner.c), volumes (volume.c), a backing on its
 * own (backing.c).
 *
 * Format and open are tables of named steps run by tc_steps_run() (steps.h): a failing
 * step's predecessors are undone in reverse, in one place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache_priv.h"
#include "steps.h"
#include "tiercache-test.h"

/* ---- defaults ----------------------------------------------------------------------- */

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

/* The state of one tc_cache_format(), shared by its steps. */
struct format_op {
	tc_ctx *ctx;
	tc_dev *dev;
	struct tc_cache_opts o;
	struct tc_cache_sb *sb;          /* the superblock being made */
	/* Over an old cache of the same metadata layout: its newest superblock copy, and
	 * whether the format keeps its metadata intact until the point of no return. */
	bool over_old;
	int old_latest;
	uint8_t old_uuid[16];
};

static int format_check(void *arg)
{
	struct format_op *op = arg;
	return check_opts(op->ctx, op->dev->name, &op->o);
}

static int format_layout(void *arg)
{
	struct format_op *op = arg;
	tc_dev *dev = op->dev;
	struct tc_cache_sb *sb = op->sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	int r = tc_fmt_cache_geometry(dev->size, op->o.line_size, sb);
	if (r) {
		tc_err(op->ctx, "cache %s: device size %" PRIu64 " too small for %u lines of %u "
		       "bytes plus metadata", dev->name, dev->size, TC_MIN_LINES, op->o.line_size);
		return r;
	}
	tc_fmt_uuid_generate(sb->uuid);
	sb->generation = 1;
	sb->line_size = op->o.line_size;
	sb->dev_size = dev->size;
	sb->commit_interval_ms = op->o.commit_interval_ms;
	sb->replacement = op->o.replacement;
	sb->dirty_low_pct = op->o.dirty_low_pct;
	sb->dirty_high_pct = op->o.dirty_high_pct;
	sb->csum_off = !op->o.checksums;
	sb->wb_guard = op->o.unprotected_writeback ? TC_WB_GUARD_OVERRIDE :
		       TC_WB_GUARD_PROTECTED;
	sb->clean_shutdown = 1;
	return 0;
}

/*
 * A format over an old cache is all-or-nothing when both lay out the metadata alike
 * (same device size and line size, the usual re-create): the new empty blocks go first
 * only into the copy of each block the old cache does not use (its newest valid copy
 * stays), then the new superblock, one generation above the old, into the copy the old
 * does not use: that write is the point of no return.  Before it the old cache opens
 * as it was (a block copy of another cache is ignored); after it the new one does.
 * Then the other copies are written.  With another layout the old cache is simply
 * overwritten (a cut in the middle leaves a cache that is refused as damaged).
 */
static int format_find_old(void *arg)
{
	struct format_op *op = arg;
	struct tc_cache_sb *sb = op->sb;
	uint8_t *buf = tc_alloc_buf(2 * TC_CACHE_SB_SIZE);
	struct tc_cache_sb *old = calloc(1, sizeof(*old)), *tmp = calloc(1, sizeof(*tmp));
	int best = -1;
	if (!buf || !old || !tmp) {
		free(buf);
		free(old);
		free(tmp);
		return -ENOMEM;
	}
	/* An unreadable or foreign device has no old cache to keep. */
	if (!tc_dev_pread(op->dev, buf, 2 * TC_CACHE_SB_SIZE, 0)) {
		for (int i = 0; i < 2; i++) {
			char why[200];
			if (tc_fmt_cache_sb_decode(buf + i * TC_CACHE_SB_SIZE, tmp, why,
						   sizeof(why)) == TC_FMT_OK &&
			    (best < 0 || tmp->generation > old->generation)) {
				*old = *tmp;
				best = i;
			}
		}
	}
	if (best >= 0) {
		sb->generation = old->generation + 1;
		op->over_old = old->md_offset == sb->md_offset &&
			       old->md_blocks == sb->md_blocks && old->line_size == sb->line_size;
		op->old_latest = best;
		if (op->over_old)
			memcpy(op->old_uuid, old->uuid, 16);
	}
	free(buf);
	free(old);
	free(tmp);
	return 0;
}

/* Encode the empty block @b of the new cache at @out. */
static void encode_empty_block(const struct tc_cache_sb *sb, struct tc_md_block *blk,
			       uint64_t b, uint8_t *out)
{
	memset(blk, 0, sizeof(*blk));
	blk->index = (uint32_t)b;
	blk->seq = 0;
	memcpy(blk->cache_uuid, sb->uuid, 16);
	uint64_t first = b * TC_MD_ENTRIES_PER_BLOCK;
	uint64_t left = sb->nslots - first;
	blk->nentries = (uint16_t)(left < TC_MD_ENTRIES_PER_BLOCK ? left : TC_MD_ENTRIES_PER_BLOCK);
	tc_fmt_md_block_encode(blk, out);
}

/* The old cache's newest valid copy of block @b (0 or 1), from its two copies at
 * @pair; -1 when neither is valid. */
static int old_newest_copy(const struct format_op *op, const uint8_t *pair, uint64_t b,
			   struct tc_md_block *blk)
{
	char why[200];
	unsigned units = op->sb->line_size / TC_UNIT_SIZE;
	uint64_t seq[2];
	bool ok[2];
	for (int c = 0; c < 2; c++) {
		ok[c] = tc_fmt_md_block_decode(pair + (size_t)c * TC_MD_BLOCK_SIZE, (uint32_t)b,
					       units, blk, why, sizeof(why)) == TC_FMT_OK &&
			!memcmp(blk->cache_uuid, op->old_uuid, 16);
		seq[c] = blk->seq;
	}
	if (ok[0] && (!ok[1] || seq[0] >= seq[1]))
		return 0;
	return ok[1] ? 1 : -1;
}

/* Empty metadata blocks, seq 0, in 1 MiB writes: into both copies, or (@spare_only)
 * only into the copy the old cache does not use. */
static int write_metadata(struct format_op *op, bool spare_only)
{
	struct tc_cache_sb *sb = op->sb;
	const uint32_t per_write = 256;   /* block copies */
	uint8_t *buf = tc_alloc_buf((size_t)per_write * TC_MD_BLOCK_SIZE);
	struct tc_md_block *blk = calloc(1, sizeof(*blk));
	if (!buf || !blk) {
		free(buf);
		free(blk);
		return -ENOMEM;
	}
	int r = 0;
	uint64_t total = sb->md_blocks * 2;
	for (uint64_t i = 0; i < total && !r; i += per_write) {
		uint32_t n = (uint32_t)(total - i < per_write ? total - i : per_write);
		uint64_t off = sb->md_offset + i * TC_MD_BLOCK_SIZE;
		if (spare_only)
			r = tc_dev_pread(op->dev, buf, (uint64_t)n * TC_MD_BLOCK_SIZE, off);
		for (uint32_t j = 0; j < n && !r; j += 2) {
			uint64_t b = (i + j) / 2;
			uint8_t *pair = buf + (size_t)j * TC_MD_BLOCK_SIZE;
			int keep = spare_only ? old_newest_copy(op, pair, b, blk) : -1;
			for (int c = 0; c < 2; c++)
				if (c != keep)
					encode_empty_block(sb, blk, b,
							   pair + (size_t)c * TC_MD_BLOCK_SIZE);
		}
		if (!r)
			r = tc_dev_pwrite(op->dev, buf, (uint64_t)n * TC_MD_BLOCK_SIZE, off, 0);
	}
	free(blk);
	free(buf);
	if (r)
		tc_err(op->ctx, "cache %s: format failed: %s", op->dev->name, strerror(-r));
	return r;
}

static int format_metadata(void *arg)
{
	struct format_op *op = arg;
	return write_metadata(op, op->over_old);
}

static int format_superblocks(void *arg)
{
	struct format_op *op = arg;
	tc_dev *dev = op->dev;
	int r;
	uint8_t *sbuf = tc_alloc_buf(TC_CACHE_SB_SIZE);
	if (!sbuf) {
		r = -ENOMEM;
	} else {
		tc_fmt_cache_sb_encode(op->sb, sbuf);
		if (op->over_old) {
			/* The point of no return, then the old cache's copies. */
			int spare = !op->old_latest;
			r = tc_dev_pwrite(dev, sbuf, TC_CACHE_SB_SIZE,
					  (uint64_t)spare * TC_CACHE_SB_SIZE, 0);
			if (!r)
				r = tc_dev_flush(dev);
			if (!r)
				r = write_metadata(op, false);
			if (!r)
				r = tc_dev_pwrite(dev, sbuf, TC_CACHE_SB_SIZE,
						  (uint64_t)op->old_latest * TC_CACHE_SB_SIZE, 0);
			if (!r)
				r = tc_dev_flush(dev);
		} else {
			r = tc_sb_write_both(dev, sbuf, TC_CACHE_SB_SIZE);
		}
		free(sbuf);
	}
	if (r)
		tc_err(op->ctx, "cache %s: format failed: %s", dev->name, strerror(-r));
	return r;
}

static const struct tc_step format_steps[] = {
	{ "check the options", format_check, NULL },
	{ "lay out the device", format_layout, NULL },
	{ "find an old cache", format_find_old, NULL },
	{ "write empty metadata", format_metadata, NULL },
	{ "write the superblocks", format_superblocks, NULL },
};

int tc_cache_format(tc_ctx *ctx, tc_dev *dev, const struct tc_cache_opts *opts)
{
	struct format_op op = { .ctx = ctx, .dev = dev };
	if (opts)
		op.o = *opts;
	else
		tc_cache_opts_default(&op.o);
	int r = tc_steps_run(ctx, "format", format_steps, TC_STEPS_N(format_steps), &op);
	if (!r)
		tc_info(ctx, "cache %s: formatted, %u lines of %u bytes", dev->name,
			op.sb->nslots, op.sb->line_size);
	free(op.sb);
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

/* ---- open ------------------------------------------------------------------------- */

static void cache_tick(struct tc_timer *t)
{
	struct tc_cache *c = (struct tc_cache *)((char *)t - offsetof(struct tc_cache, tick));
	uint64_t now = tc_ctx_now(c->ctx);
	tc_meta_tick(c, now);
	tc_protect_tick(c, now);
	tc_cleaner_tick(c, now);
	if (!c->closing)
		tc_ctx_timer_arm(c->ctx, &c->tick, now + TC_TICK_NS);
}

static void cache_dev_event(void *opaque, tc_dev *dev, enum tc_dev_event ev);

void tc_cache_free(struct tc_cache *c)
{
	if (!c)
		return;
	if (c->dev)
		tc_dev_unwatch(c->dev, cache_dev_event, c);   /* -ENOENT if never watched */
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		if (c->vols[i])
			tc_volume_free(c->vols[i]);
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
	c->free_head = TC_SLOT_NONE;
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
	if (!c->lines || !c->buckets || !c->shards ||
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
int tc_cache_setup(tc_ctx *ctx, tc_dev *dev, struct tc_cache **out)
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
		tc_cache_free(c);
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
		tc_cache_free(c);
		return r;
	}
	*out = c;
	return 0;
}

/* The state of one tc_cache_open(), shared by its steps. */
struct open_op {
	tc_ctx *ctx;
	tc_dev *dev;
	struct tc_cache *c;
	uint64_t t0;                     /* ns, when the open started (threaded mode) */
};

static int open_setup(void *arg)
{
	struct open_op *op = arg;
	op->t0 = tc_ctx_deterministic(op->ctx) ? 0 : tc_ctx_now(op->ctx);
	return tc_cache_setup(op->ctx, op->dev, &op->c);
}

static void open_free(void *arg)
{
	struct open_op *op = arg;
	tc_cache_free(op->c);
	op->c = NULL;
}

static int open_load(void *arg)
{
	struct open_op *op = arg;
	struct tc_cache *c = op->c;
	int r = tc_meta_load(c, c->sb.clean_shutdown == 1);
	if (!r && !tc_ctx_deterministic(op->ctx))
		c->recovery_ns = tc_ctx_now(op->ctx) - op->t0;
	return r;
}

/* In use from now on: a crash must not be taken for a clean shutdown. */
static int open_mark_in_use(void *arg)
{
	struct open_op *op = arg;
	op->c->sb.clean_shutdown = 0;
	return tc_cache_sb_write(op->c);
}

/*
 * Entries naming a volume the superblock no longer records (a detach cut between its
 * record's removal and the commit dropping its lines) were dropped in memory; on the
 * device they stay until their blocks are written again.  That happens now, before an
 * attach can give the id to a new volume: a crash after that attach would otherwise
 * load the old entries as the new volume's lines.
 */
static int open_drop_orphans(void *arg)
{
	struct open_op *op = arg;
	struct tc_cache *c = op->c;
	if (!c->recovered_orphans)
		return 0;
	tc_info(c->ctx, "cache %s: %" PRIu64 " metadata entries of detached volumes dropped; "
		"committing", c->dev->name, c->recovered_orphans);
	return tc_meta_commit_sync(c);
}

static int open_start_timer(void *arg)
{
	struct open_op *op = arg;
	op->c->tick.fn = cache_tick;
	tc_ctx_timer_arm(op->ctx, &op->c->tick, tc_ctx_now(op->ctx) + TC_TICK_NS);
	return 0;
}

/*
 * The cache device's health: a device that reports it failed (an array past its
 * redundancy, a lost remote connection) puts every volume into pass-through at once,
 * as too many I/O errors do (tc_cache_error), instead of after the errors pile up.
 * Losing and regaining redundancy is logged here and holds or releases write-back
 * (protect.c).
 */
static void cache_dev_event(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	struct tc_cache *c = opaque;
	struct tc_dev_limits l;

	tc_dev_limits(dev, &l);
	switch (ev) {
	case TC_DEV_FAILED:
		if (!atomic_exchange(&c->failed, true))
			tc_err(c->ctx, "cache %s: the device reports it failed; every volume falls "
			       "back to pass-through, dirty data stays readable from the cache "
			       "where possible", c->dev->name);
		break;
	case TC_DEV_DEGRADED:
		tc_warn(c->ctx, "cache %s: the device is degraded (it survives %u more failures)",
			c->dev->name, l.redundancy);
		tc_protect_event(c, ev);
		break;
	case TC_DEV_REDUNDANT:
		tc_info(c->ctx, "cache %s: the device is redundant again (it survives %u "
			"failures)", c->dev->name, l.redundancy);
		tc_protect_event(c, ev);
		break;
	}
}

static int open_watch(void *arg)
{
	struct open_op *op = arg;
	tc_protect_init(op->c);
	return tc_dev_watch(op->dev, cache_dev_event, op->c);
}

static void open_unwatch(void *arg)
{
	struct open_op *op = arg;
	tc_dev_unwatch(op->dev, cache_dev_event, op->c);
}

static const struct tc_step open_steps[] = {
	{ "set up from the superblock", open_setup, open_free },
	{ "watch the device's health", open_watch, open_unwatch },
	{ "load the line metadata", open_load, NULL },
	{ "mark the cache in use", open_mark_in_use, NULL },
	{ "drop entries of detached volumes", open_drop_orphans, NULL },
	{ "start the timer", open_start_timer, NULL },
};

int tc_cache_open(tc_ctx *ctx, tc_dev *dev, tc_cache **out)
{
	struct open_op op = { .ctx = ctx, .dev = dev };
	int r = tc_steps_run(ctx, "open", open_steps, TC_STEPS_N(open_steps), &op);
	if (!r)
		*out = op.c;
	return r;
}

/* Read-only from the first step on: the superblock is not marked in use and no timer
 * runs (no metadata commit, no cleaning); tc_cache_sb_write(), tc_backing_sb_write()
 * and commits refuse with -EROFS. */
static int open_set_readonly(void *arg)
{
	struct open_op *op = arg;
	op->c->readonly = true;
	return 0;
}

/* What status reports of write-back protection (the stored guard, the device's
 * redundancy now), as an open for service sees it; nothing is watched or written. */
static int open_guard(void *arg)
{
	struct open_op *op = arg;
	tc_protect_init(op->c);
	return 0;
}

static const struct tc_step open_readonly_steps[] = {
	{ "set up from the superblock", open_setup, open_free },
	{ "refuse every write", open_set_readonly, NULL },
	{ "read the write-back guard", open_guard, NULL },
	{ "load the line metadata", open_load, NULL },
};

int tc_cache_open_readonly(tc_ctx *ctx, tc_dev *dev, tc_cache **out)
{
	struct open_op op = { .ctx = ctx, .dev = dev };
	int r = tc_steps_run(ctx, "open read-only", open_readonly_steps,
			     TC_STEPS_N(open_readonly_steps), &op);
	if (!r)
		*out = op.c;
	return r;
}

bool tc_cache_is_readonly(tc_cache *c)
{
	return c->readonly;
}

/* ---- close ------------------------------------------------------------------------ */

int tc_cache_close(tc_cache *c)
{
	if (c->readonly) {
		/* Nothing to commit or mark: what is on the device stays as it was. */
		tc_mngt_wait_requests(c, NULL);
		c->closing = true;
		tc_mngt_wait_idle(c);
		tc_cache_free(c);
		return 0;
	}
	tc_mngt_wait_requests(c, NULL);
	c->closing = true;
	tc_ctx_timer_cancel(c->ctx, &c->tick);
	tc_mngt_wait_idle(c);
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
	tc_cache_free(c);
	return r;
}

void tc_cache_abandon(tc_cache *c)
{
	c->closing = true;
	tc_ctx_timer_cancel(c->ctx, &c->tick);
	if (!tc_ctx_deterministic(c->ctx)) {
		/* Device threads may still complete requests into this memory: let them
		 * finish (after a power cut they fail at once), then free. */
		tc_mngt_wait_requests(c, NULL);
		tc_mngt_wait_idle(c);
	}
	tc_requests_abandon(c);
	tc_cache_free(c);
}
