/* SPDX-License-Identifier: MIT */
/*
 * inspect.c - looking at a cache without changing it: tc_cache_inspect() reads a
 * closed cache (superblock copies, metadata damage, what each volume record holds),
 * tc_cache_volumes() reports the volume records of an open one, and
 * tc_volume_valid_bytes() tells how much of a range of an online volume the cache
 * holds (residency).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

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
	r = tc_cache_setup(ctx, dev, &c);
	if (r)
		return r;
	c->meta.inspecting = true;
	c->readonly = true;   /* nothing below writes; a regression would fail -EROFS */
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
	tc_cache_free(c);
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

