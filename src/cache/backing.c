/* SPDX-License-Identifier: MIT */
/*
 * backing.c - a backing device on its own, with no cache open: format, reading the
 * newest valid superblock copy, and the two operations that move its attach generation
 * without a cache (use it uncached; forget a lost cache).  A superblock write goes to
 * the copy that does not hold the newest version, one generation on (docs/format.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

int tc_sb_write_both(tc_dev *dev, const void *buf, uint32_t size)
{
	int r = tc_dev_pwrite(dev, buf, size, 0, 0);
	if (!r)
		r = tc_dev_pwrite(dev, buf, size, size, 0);
	if (!r)
		r = tc_dev_flush(dev);
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
	int r = tc_sb_write_both(dev, buf, TC_BACKING_SB_SIZE);
	free(buf);
	if (r)
		tc_err(ctx, "backing %s: format failed: %s", dev->name, strerror(-r));
	return r;
}


int tc_backing_sb_read(tc_ctx *ctx, tc_dev *dev, struct tc_backing_sb *b, int *latest)
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
	int r = tc_backing_sb_read(ctx, dev, &b, &latest);
	if (r)
		return r;
	if ((r = tc_remote_check_uncached(ctx, dev, b.name)))
		return r;
	b.attach_gen++;
	return backing_sb_rewrite(ctx, dev, &b, latest);
}

int tc_backing_forget_cache(tc_ctx *ctx, tc_dev *dev, char cache_uuid[37])
{
	struct tc_backing_sb b;
	int latest;
	int r = tc_backing_sb_read(ctx, dev, &b, &latest);
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
	r = backing_sb_rewrite(ctx, dev, &b, latest);
	return r ? r : tc_remote_forget(ctx, dev, b.name);
}

