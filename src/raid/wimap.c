/* SPDX-License-Identifier: MIT */
/*
 * wimap.c - the write-intent map of an array (docs/raid.md, "The write hole"): one bit
 * per region of the members, set and durable on every member before the first write
 * to the region, cleared lazily once the region has been idle and its writes are
 * durable.  After an unclean stop the resync (rebuild.c) visits only the regions
 * whose bit is set.
 *
 * The design is Linux md's write-intent bitmap (drivers/md/md-bitmap.c: a counter
 * of writes in flight per region, bits written to every member before the write,
 * cleared by the bitmap daemon every daemon_sleep seconds once the counter is zero
 * and a flush made the writes durable); the code is ours.
 *
 * Regions are member bytes (relative to data_offset), the same on every member, so a
 * region is also a run of whole stripes.  Region size: the largest power of two that
 * still gives RAID_MAP_MIN_REGIONS (64) regions, capped at 64 MiB (md's usual bitmap
 * chunk for large disks) and at least one chunk.  A 16 TB HDD has 250,000 regions of
 * 64 MiB: 31 KB of bits, 8 blocks of the 3 MiB area; the bit of a region stays set
 * while writes keep coming, so the map costs one small FUA write per member for the
 * first write to an idle region and one (after a flush) to clear it.
 *
 * A second plane (arrays made with RAID_SB_WRITTEN, whatever their consistency
 * policy) records the regions ever written: a region's written bit is set with its
 * first write-intent bit (in the same map write, durable before the write goes out)
 * and never cleared, so a region whose bit is clear still holds the zeros the array
 * was created with on every member, and a rebuild writes zeros to the new member
 * there instead of reading every survivor (md's llbitmap calls it Unwritten).  On an
 * array with the partial-parity log the map has this plane only.
 *
 * On the member, 1 MiB .. 4 MiB: block 0 | block 1 | ... each RAID_MAP_BLOCK bytes,
 * the write-intent plane's nblocks blocks first, then the written plane's:
 *   0 magic u32 "TCWM", 4 version u32, 8 uuid[16], 24 index u32 (in its plane),
 *   28 nblocks u32 (per plane), 32 region_shift u32, 36 plane u32 (0 write-intent,
 *   1 written), 40 nregions u64, 48..63 reserved (zero),
 *   64..4087 bits (region index * RAID_MAP_BITS_PER_BLOCK + r is bit r, LSB first),
 *   4088 XXH64 (seed 0) of bytes 0..4087.
 * Every member holds the same map; at assembly a bit set in any valid copy counts, and
 * a block with no valid copy anywhere counts as all set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <xxhash.h>

#include "ctx.h"
#include "raid.h"

#define MAP_OFF_BITS RAID_MAP_HDR
#define MAP_BITS_BYTES (RAID_MAP_BLOCK - RAID_MAP_HDR - 8u)
#define MAP_OFF_CSUM (RAID_MAP_BLOCK - 8u)

#define put32 raid_put32
#define put64 raid_put64
#define get32 raid_get32
#define get64 raid_get64

unsigned raid_map_region_shift(uint64_t member_size, uint32_t chunk)
{
	unsigned shift = RAID_MAP_MAX_REGION_SHIFT, cshift = (unsigned)__builtin_ctz(chunk);

	while (shift > cshift && (member_size >> shift) < RAID_MAP_MIN_REGIONS)
		shift--;
	return shift;
}

void raid_map_block_encode(const struct raid_map_block *b, void *buf)
{
	uint8_t *p = buf;

	memset(p, 0, RAID_MAP_BLOCK);
	put32(p + 0, RAID_MAP_MAGIC);
	put32(p + 4, RAID_MAP_VERSION);
	memcpy(p + 8, b->uuid, 16);
	put32(p + 24, b->index);
	put32(p + 28, b->nblocks);
	put32(p + 32, b->region_shift);
	put32(p + 36, b->plane);
	put64(p + 40, b->nregions);
	memcpy(p + MAP_OFF_BITS, b->bits, MAP_BITS_BYTES);
	put64(p + MAP_OFF_CSUM, XXH64(p, MAP_OFF_CSUM, 0));
}

static const char *plane_name(uint32_t plane)
{
	return plane ? "written map" : "write-intent map";
}

/* A refusal naming block @index of plane @plane (a GNU statement expression: the
 * prefix is built on the caller's stack). */
#define refuse(st, why, whylen, plane, index, ...) ({                                  \
	char pfx_[48];                                                                  \
	snprintf(pfx_, sizeof(pfx_), "%s block %u: ", plane_name(plane),                \
		 (unsigned)(index));                                                    \
	raid_refuse(st, why, whylen, pfx_, __VA_ARGS__);                                \
})

static uint32_t map_nblocks(uint64_t nregions)
{
	return (uint32_t)((nregions + RAID_MAP_BITS_PER_BLOCK - 1) / RAID_MAP_BITS_PER_BLOCK);
}

enum raid_sb_status raid_map_block_decode(const void *buf, size_t len, const uint8_t *uuid,
					  uint32_t plane, uint32_t index, uint64_t nregions,
					  unsigned shift, struct raid_map_block *out, char *why,
					  size_t whylen)
{
	const uint8_t *p = buf;
	struct raid_map_block b;

	char pfx[48];
	snprintf(pfx, sizeof(pfx), "%s block %u: ", plane_name(plane), (unsigned)index);
	enum raid_sb_status hs = raid_check_header(p, len, RAID_MAP_BLOCK, RAID_MAP_MAGIC,
						   RAID_MAP_VERSION, pfx, why, whylen);
	if (hs != RAID_SB_OK)
		return hs;
	memset(&b, 0, sizeof(b));
	memcpy(b.uuid, p + 8, 16);
	b.index = get32(p + 24);
	b.nblocks = get32(p + 28);
	b.region_shift = get32(p + 32);
	b.plane = get32(p + 36);
	b.nregions = get64(p + 40);
	memcpy(b.bits, p + MAP_OFF_BITS, MAP_BITS_BYTES);
	if (b.plane != plane)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "plane %u is not its place (%u)", b.plane, plane);
	if (memcmp(b.uuid, uuid, 16))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "uuid is another array's");
	if (b.index != index)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "index %u is not its place (%u)", b.index, index);
	if (b.region_shift != shift)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "region_shift %u is not the array's %u", b.region_shift, shift);
	if (b.nregions != nregions)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "nregions %" PRIu64 " is not the array's %" PRIu64, b.nregions,
			      nregions);
	if (b.nblocks != map_nblocks(nregions))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "nblocks %u is not %u for %" PRIu64 " regions", b.nblocks,
			      map_nblocks(nregions), nregions);
	if (get64(p + 48) || get64(p + 56))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
			      "reserved bytes are not zero");
	uint64_t first = (uint64_t)index * RAID_MAP_BITS_PER_BLOCK;
	for (uint64_t r = 0; r < RAID_MAP_BITS_PER_BLOCK; r++)
		if (first + r >= nregions && (b.bits[r / 8] >> (r % 8) & 1))
			return refuse(RAID_SB_BAD_FIELD, why, whylen, plane, index,
				      "bit of region %" PRIu64 " set beyond the %" PRIu64
				      " regions", first + r, nregions);
	if (out)
		*out = b;
	return RAID_SB_OK;
}

/* ---- the map of a running array ---------------------------------------------------- */

struct raid_map {
	struct tc_timer timer;          /* first: the daemon */
	struct tc_array *a;
	uint8_t uuid[16];
	unsigned shift;
	uint64_t nregions;
	uint32_t nblocks;               /* per plane */
	unsigned planes;                /* RAID_MAP_INTENT | RAID_MAP_WRITTEN */
	bool readonly;
	pthread_mutex_t lock;
	/* Under lock: */
	uint8_t *bits;                  /* write-intent bits the members are to hold
	                                 * (nblocks blocks of MAP_BITS_BYTES) */
	uint8_t *sync;                  /* regions to resync (set at assembly) */
	uint8_t *written;               /* written bits (RAID_MAP_WRITTEN) */
	uint32_t *inflight;             /* writes in flight per region */
	uint64_t *idle_since;           /* ns: when the last write of the region ended */
	bool *changed;                  /* per block of both planes (2 nblocks): differs
	                                 * from what was last written */
	uint64_t gen, written_gen;      /* changes made; changes on the members */
	/* Write-intent bits the daemon cleared in memory whose map write has not gone
	 * out yet (their regions still count as set for a re-add), and the array's
	 * member failures when it decided to. */
	uint8_t *clearing;
	uint64_t clear_fails;
	bool writing, armed, closing, resyncing;
	volatile bool idle;             /* no map write in flight (close waits on it) */
	uint64_t ndirty;                /* write-intent bits set */
	uint64_t nwritten;              /* written bits set */
	struct raid_map_wait *wait_head, *wait_tail;
};

/* One map write: optionally a FLUSH of every member, then the changed blocks. */
struct map_write {
	struct raid_map *mp;
	uint64_t gen;
	bool flush_first;
	bool clears;                    /* the daemon's: write-intent bits cleared */
	atomic_uint pending;
	uint32_t nblk;
	uint32_t *blk;                  /* block numbers (both planes: the written
	                                 * plane's from nblocks on) */
	uint8_t *buf;                   /* nblk encoded blocks */
	struct array_child *child;      /* a->n * (nblk + 1) */
};

static bool bit_get(const uint8_t *bits, uint64_t r)
{
	return bits[r / 8] >> (r % 8) & 1;
}

static void bit_put(uint8_t *bits, uint64_t r, bool v)
{
	if (v)
		bits[r / 8] |= (uint8_t)(1u << (r % 8));
	else
		bits[r / 8] &= (uint8_t)~(1u << (r % 8));
}

/* Region r of a plane is bit r of its bits array: blocks are MAP_BITS_BYTES each,
 * RAID_MAP_BITS_PER_BLOCK bits. */

static void map_daemon(struct tc_timer *t);
static void map_write_start(struct raid_map *mp, bool flush_first);
static void map_child_done(struct array_child *c, int result);

static bool has_intent(const struct raid_map *mp)
{
	return mp->planes & RAID_MAP_INTENT;
}

static bool has_written(const struct raid_map *mp)
{
	return mp->planes & RAID_MAP_WRITTEN;
}

/* Block @blk of the map (the written plane's from nblocks on), encoded at @out. */
static void map_block_image(struct raid_map *mp, uint32_t blk, uint8_t *out)
{
	struct raid_map_block b;
	uint32_t plane = blk >= mp->nblocks;
	uint32_t index = blk - plane * mp->nblocks;

	memset(&b, 0, sizeof(b));
	memcpy(b.uuid, mp->uuid, 16);
	b.plane = plane;
	b.index = index;
	b.nblocks = mp->nblocks;
	b.region_shift = mp->shift;
	b.nregions = mp->nregions;
	memcpy(b.bits, (plane ? mp->written : mp->bits) + (size_t)index * MAP_BITS_BYTES,
	       MAP_BITS_BYTES);
	raid_map_block_encode(&b, out);
}

/* The blocks of the planes in use: [*first, *end). */
static void map_span(const struct raid_map *mp, uint32_t *first, uint32_t *end)
{
	*first = has_intent(mp) ? 0 : mp->nblocks;
	*end = has_written(mp) ? 2 * mp->nblocks : mp->nblocks;
}

/* Write the whole map to every device of @dev synchronously (attach, close). */
static int map_write_sync(struct raid_map *mp, tc_dev *const *dev, unsigned n)
{
	uint32_t first, end;
	map_span(mp, &first, &end);
	uint8_t *buf = aligned_alloc(4096, (size_t)(end - first) * RAID_MAP_BLOCK);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (uint32_t i = first; i < end; i++)
		map_block_image(mp, i, buf + (size_t)(i - first) * RAID_MAP_BLOCK);
	for (unsigned i = 0; i < n; i++) {
		if (!dev[i])
			continue;
		int r = tc_dev_io(dev[i], TC_OP_WRITE, TC_IO_FUA, buf,
				  (uint64_t)(end - first) * RAID_MAP_BLOCK,
				  RAID_MAP_OFFSET + (uint64_t)first * RAID_MAP_BLOCK);
		if (r && !ret)
			ret = r;
	}
	free(buf);
	return ret;
}

/* Read plane @plane from @members into @into: a bit set in any valid copy of a block
 * counts, a block with no valid copy anywhere counts as all set. */
static int map_read_plane(struct raid_map *mp, tc_dev *const *members, uint32_t plane,
			  uint8_t *into, uint8_t *blk)
{
	struct tc_array *a = mp->a;
	char why[200];

	for (uint32_t i = 0; i < mp->nblocks; i++) {
		bool valid = false;
		for (unsigned d = 0; d < a->n; d++) {
			struct raid_map_block b;
			if (!members[d])
				continue;
			int r = tc_dev_io(members[d], TC_OP_READ, 0, blk, RAID_MAP_BLOCK,
					  RAID_MAP_OFFSET + ((uint64_t)plane * mp->nblocks + i) *
					  RAID_MAP_BLOCK);
			if (r)
				return r;
			if (raid_map_block_decode(blk, RAID_MAP_BLOCK, mp->uuid, plane, i,
						  mp->nregions, mp->shift, &b, why, sizeof(why))) {
				tc_warn(a->dev.ctx, "array %s: member %s: %s", a->dev.name,
					members[d]->name, why);
				continue;
			}
			valid = true;
			for (size_t x = 0; x < MAP_BITS_BYTES; x++)
				into[(size_t)i * MAP_BITS_BYTES + x] |= b.bits[x];
		}
		if (!valid) {
			tc_warn(a->dev.ctx, "array %s: %s block %u has no valid copy: %s",
				a->dev.name, plane_name(plane), i, plane ?
				"its regions all count as written" :
				"its regions all count as dirty (resynced after an unclean stop)");
			for (uint64_t x = 0; x < RAID_MAP_BITS_PER_BLOCK; x++) {
				uint64_t reg = (uint64_t)i * RAID_MAP_BITS_PER_BLOCK + x;
				if (reg < mp->nregions)
					bit_put(into, reg, true);
			}
		}
	}
	return 0;
}

static uint64_t bits_count(const uint8_t *bits, uint64_t nregions)
{
	uint64_t n = 0;

	for (uint64_t reg = 0; reg < nregions; reg++)
		n += bit_get(bits, reg);
	return n;
}

static void map_free(struct raid_map *mp)
{
	free(mp->bits);
	free(mp->sync);
	free(mp->clearing);
	free(mp->written);
	free(mp->inflight);
	free(mp->idle_since);
	free(mp->changed);
	free(mp);
}

int raid_map_attach(struct tc_array *a, const uint8_t *uuid, unsigned planes,
		    tc_dev *const *members, bool dirty, bool readonly,
		    uint64_t *dirty_regions)
{
	struct raid_map *mp = calloc(1, sizeof(*mp));
	int r = 0;

	if (dirty_regions)
		*dirty_regions = 0;
	if (!mp)
		return -ENOMEM;
	mp->a = a;
	memcpy(mp->uuid, uuid, 16);
	mp->planes = planes;
	mp->shift = raid_map_region_shift(a->member_size, (uint32_t)a->chunk);
	mp->nregions = (a->member_size + (1ull << mp->shift) - 1) >> mp->shift;
	mp->nblocks = map_nblocks(mp->nregions);
	mp->readonly = readonly;
	__atomic_store_n(&mp->idle, true, __ATOMIC_RELEASE);
	mp->timer.fn = map_daemon;
	if ((uint64_t)mp->nblocks * 2 * RAID_MAP_BLOCK > RAID_MAP_AREA) {
		/* 12 million regions of 64 MiB: members of 790 TB. */
		tc_err(a->dev.ctx, "array %s: %" PRIu64 " regions of %u MiB do not fit the "
		       "region map's %u MiB", a->dev.name, mp->nregions, 1u << (mp->shift - 20),
		       RAID_MAP_AREA >> 20);
		free(mp);
		return -EFBIG;
	}
	size_t bytes = (size_t)mp->nblocks * MAP_BITS_BYTES;
	mp->bits = calloc(1, bytes);
	mp->sync = calloc(1, bytes);
	mp->clearing = calloc(1, bytes);
	mp->written = calloc(1, bytes);
	mp->inflight = calloc(mp->nregions, sizeof(*mp->inflight));
	mp->idle_since = calloc(mp->nregions, sizeof(*mp->idle_since));
	mp->changed = calloc(2 * (size_t)mp->nblocks, sizeof(*mp->changed));
	uint8_t *blk = aligned_alloc(4096, RAID_MAP_BLOCK);
	if (!mp->bits || !mp->sync || !mp->clearing || !mp->written || !mp->inflight ||
	    !mp->idle_since ||
	    !mp->changed || !blk) {
		r = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&mp->lock, NULL);
	if (members && has_written(mp)) {
		r = map_read_plane(mp, members, 1, mp->written, blk);
		if (r)
			goto fail_lock;
		mp->nwritten = bits_count(mp->written, mp->nregions);
	} else if (!has_written(mp)) {
		/* An array made before the written plane: every region may hold data. */
		memset(mp->written, 0xff, bytes);
		mp->nwritten = mp->nregions;
	}
	/* The write-intent plane after a clean stop too: a degraded array keeps its
	 * bits (map_array_whole), which a member re-added later resyncs. */
	if (members && has_intent(mp)) {
		r = map_read_plane(mp, members, 0, mp->bits, blk);
		if (r)
			goto fail_lock;
		uint64_t n = bits_count(mp->bits, mp->nregions);
		mp->ndirty = n;
		if (dirty) {
			memcpy(mp->sync, mp->bits, bytes);
			mp->resyncing = n > 0;
			if (dirty_regions)
				*dirty_regions = n;
		}
	}
	if (!readonly && (mp->planes & (RAID_MAP_INTENT | RAID_MAP_WRITTEN))) {
		tc_dev *dev[TC_ARRAY_MAX_MEMBERS];
		/* Not to a member missing or faulty (a placeholder refuses every
		 * request: a clean assembly without a member failed here). */
		for (unsigned d = 0; d < a->n; d++)
			dev[d] = members ? members[d] : array_member_writable(a, d) ?
				 atomic_load(&a->m[d].dev) : NULL;
		r = map_write_sync(mp, dev, a->n);
		if (r) {
			tc_err(a->dev.ctx, "array %s: writing the region map failed: %s",
			       a->dev.name, strerror(-r));
			goto fail_lock;
		}
	}
	free(blk);
	a->map = mp;
	return 0;
fail_lock:
	pthread_mutex_destroy(&mp->lock);
fail:
	free(blk);
	map_free(mp);
	return r;
}

/* Whether write-intent bits may be cleared: every slot of @a active.  md keeps its
 * bitmap's bits while the array is degraded (md-bitmap.c, bitmap_endwrite), so that
 * a member that comes back resyncs only the regions written since it left
 * (tc_array_re_add); a rebuild or replace under way counts as degraded too.  Reads
 * member states only (atomics): any lock. */
static bool map_array_whole(struct tc_array *a)
{
	for (unsigned i = 0; i < a->n; i++)
		if (atomic_load(&a->m[i].state) != TC_MEMBER_ACTIVE)
			return false;
	return true;
}

/* Under mp->lock: the daemon runs RAID_MAP_DAEMON_NS from now if not armed. */
static void map_arm(struct raid_map *mp)
{
	if (mp->armed || mp->closing || mp->readonly || !has_intent(mp))
		return;
	mp->armed = true;
	tc_ctx_timer_arm(mp->a->dev.ctx, &mp->timer,
			 tc_ctx_now(mp->a->dev.ctx) + RAID_MAP_DAEMON_NS);
}

bool raid_map_start(struct tc_array *a, uint64_t moff, uint64_t len,
		    struct raid_map_wait *w)
{
	struct raid_map *mp = a->map;
	uint64_t first = moff >> mp->shift, last = (moff + len - 1) >> mp->shift;
	bool set = false, intent = has_intent(mp);

	pthread_mutex_lock(&mp->lock);
	for (uint64_t r = first; r <= last && r < mp->nregions; r++) {
		/* Writes in flight matter to the write-intent daemon only. */
		if (intent)
			mp->inflight[r]++;
		if (intent && !bit_get(mp->bits, r)) {
			bit_put(mp->bits, r, true);
			mp->changed[r / RAID_MAP_BITS_PER_BLOCK] = true;
			mp->ndirty++;
			set = true;
		}
		/* The first write ever to the region: its written bit goes out with the
		 * write-intent bit (written bits are all set without that plane). */
		if (!bit_get(mp->written, r)) {
			bit_put(mp->written, r, true);
			mp->changed[mp->nblocks + r / RAID_MAP_BITS_PER_BLOCK] = true;
			mp->nwritten++;
			set = true;
		}
	}
	if (set)
		mp->gen++;
	/* Not yet on the members: set now, or by a write still in flight. */
	if (mp->readonly || mp->written_gen >= mp->gen) {
		pthread_mutex_unlock(&mp->lock);
		return true;
	}
	w->gen = mp->gen;
	w->next = NULL;
	if (mp->wait_tail)
		mp->wait_tail->next = w;
	else
		mp->wait_head = w;
	mp->wait_tail = w;
	bool start = !mp->writing;
	if (start)
		mp->writing = true;
	map_arm(mp);
	pthread_mutex_unlock(&mp->lock);
	if (start)
		map_write_start(mp, false);
	return false;
}

void raid_map_end(struct tc_array *a, uint64_t moff, uint64_t len)
{
	struct raid_map *mp = a->map;
	uint64_t first = moff >> mp->shift, last = (moff + len - 1) >> mp->shift;

	if (!has_intent(mp))
		return;         /* the written plane has nothing to do when a write ends */
	uint64_t now = tc_ctx_now(a->dev.ctx);
	pthread_mutex_lock(&mp->lock);
	for (uint64_t r = first; r <= last && r < mp->nregions; r++) {
		mp->inflight[r]--;
		mp->idle_since[r] = now;
	}
	pthread_mutex_unlock(&mp->lock);
}

static void map_write_free(struct map_write *mw)
{
	free(mw->blk);
	free(mw->buf);
	free(mw->child);
	free(mw);
}

static void map_write_done(struct map_write *mw)
{
	struct raid_map *mp = mw->mp;
	struct raid_map_wait *ready = NULL, **tail = &ready;
	bool again;

	pthread_mutex_lock(&mp->lock);
	if (mw->gen > mp->written_gen)
		mp->written_gen = mw->gen;
	/* Waiters in order of their gen, which grows along the queue. */
	while (mp->wait_head && mp->wait_head->gen <= mp->written_gen) {
		struct raid_map_wait *w = mp->wait_head;
		mp->wait_head = w->next;
		if (!mp->wait_head)
			mp->wait_tail = NULL;
		w->next = NULL;
		*tail = w;
		tail = &w->next;
	}
	again = mp->gen > mp->written_gen;
	if (!again) {
		mp->writing = false;
		__atomic_store_n(&mp->idle, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mp->lock);
	map_write_free(mw);
	if (!again)
		tc_ctx_wake(mp->a->dev.ctx);
	while (ready) {
		struct raid_map_wait *w = ready;
		ready = w->next;
		w->fn(w->arg);
	}
	if (again)
		map_write_start(mp, false);
}

/* The daemon's clear, after the flush of every member: when a member failed since
 * the daemon decided (its flush may have failed, so its writes of those regions may
 * not be durable), the cleared bits are set again and the blocks go out with them, so
 * that a re-add of the member resyncs those regions. */
static void map_clear_confirm(struct map_write *mw)
{
	struct raid_map *mp = mw->mp;
	struct tc_array *a = mp->a;
	uint64_t restored = 0;

	pthread_mutex_lock(&mp->lock);
	if (atomic_load(&a->fail_count) != mp->clear_fails || !map_array_whole(a)) {
		for (uint64_t r = 0; r < mp->nregions; r++)
			if (bit_get(mp->clearing, r) && !bit_get(mp->bits, r)) {
				bit_put(mp->bits, r, true);
				mp->ndirty++;
				restored++;
			}
		for (uint32_t b = 0; b < mw->nblk; b++)
			if (mw->blk[b] < mp->nblocks)
				map_block_image(mp, mw->blk[b], mw->buf + (size_t)b * RAID_MAP_BLOCK);
	}
	memset(mp->clearing, 0, (size_t)mp->nblocks * MAP_BITS_BYTES);
	pthread_mutex_unlock(&mp->lock);
	if (restored)
		tc_info(a->dev.ctx, "array %s: a member failed while the write-intent map was "
			"being cleared: %" PRIu64 " regions stay set", a->dev.name, restored);
}

static void map_put(struct map_write *mw)
{
	if (atomic_fetch_sub(&mw->pending, 1) != 1)
		return;
	if (mw->flush_first) {
		/* The writes of the regions being cleared are durable: now the blocks. */
		struct tc_array *a = mw->mp->a;
		mw->flush_first = false;
		if (mw->clears)
			map_clear_confirm(mw);
		atomic_store(&mw->pending, 1);
		for (unsigned i = 0; i < a->n; i++) {
			if (!array_member_writable(a, i))
				continue;
			for (uint32_t b = 0; b < mw->nblk; b++) {
				atomic_fetch_add(&mw->pending, 1);
				/* Member offsets are shifted by data_offset: undo it (mod 2^64).
				 * Written bits also to the old member of a replace (route 3),
				 * which takes the slot back if its successor fails: a bit it
				 * lacked would let a later rebuild zero a written region.
				 * Write-intent bits to the slot's device only: a cleared bit
				 * there follows a flush of that device alone. */
				array_child_submit_to(a, &mw->child[i * (mw->nblk + 1) + b], i,
						      mw->blk[b] >= mw->mp->nblocks ? 3 : 1,
						      TC_OP_WRITE, TC_IO_FUA,
						      RAID_MAP_OFFSET + (uint64_t)mw->blk[b] *
						      RAID_MAP_BLOCK - a->data_offset, RAID_MAP_BLOCK,
						      mw->buf + (size_t)b * RAID_MAP_BLOCK, NULL, 0,
						      map_child_done, mw);
			}
		}
		map_put(mw);    /* the count of this step */
		return;
	}
	map_write_done(mw);
}

static void map_child_done(struct array_child *c, int result)
{
	struct map_write *mw = c->owner;

	if (result < 0)
		array_child_fail(c, c->io.op == TC_OP_FLUSH ? "flush error (region map)"
				 : "write error (region map)", -result);
	map_put(mw);
}

/* Write the changed blocks (after a FLUSH of every member when @flush_first), then
 * wake the waiters of what they hold.  mp->writing is set by the caller. */
static void map_write_start(struct raid_map *mp, bool flush_first)
{
	struct tc_array *a = mp->a;
	struct map_write *mw = calloc(1, sizeof(*mw));
	uint32_t nb = 2 * mp->nblocks;

	if (mw) {
		mw->blk = calloc(nb, sizeof(*mw->blk));
		mw->buf = aligned_alloc(4096, (size_t)nb * RAID_MAP_BLOCK);
		mw->child = calloc((size_t)a->n * (nb + 1), sizeof(*mw->child));
	}
	if (!mw || !mw->blk || !mw->buf || !mw->child) {
		/* Without memory for the write the waiters cannot go on: retry from the
		 * daemon (or, without one, from the next write that sets a bit). */
		if (mw)
			map_write_free(mw);
		tc_err(a->dev.ctx, "array %s: region map: no memory for a map write; "
		       "retrying", a->dev.name);
		pthread_mutex_lock(&mp->lock);
		/* A clear that does not go out: its bits are set again (a later write
		 * without the flush must not carry them cleared). */
		for (uint64_t r = 0; flush_first && r < mp->nregions; r++)
			if (bit_get(mp->clearing, r) && !bit_get(mp->bits, r)) {
				bit_put(mp->bits, r, true);
				mp->ndirty++;
			}
		if (flush_first)
			memset(mp->clearing, 0, (size_t)mp->nblocks * MAP_BITS_BYTES);
		mp->writing = false;
		__atomic_store_n(&mp->idle, true, __ATOMIC_RELEASE);
		map_arm(mp);
		pthread_mutex_unlock(&mp->lock);
		return;
	}
	mw->mp = mp;
	pthread_mutex_lock(&mp->lock);
	__atomic_store_n(&mp->idle, false, __ATOMIC_RELEASE);
	mw->gen = mp->gen;
	for (uint32_t b = 0; b < nb; b++)
		if (mp->changed[b]) {
			mp->changed[b] = false;
			map_block_image(mp, b, mw->buf + (size_t)mw->nblk * RAID_MAP_BLOCK);
			mw->blk[mw->nblk++] = b;
		}
	pthread_mutex_unlock(&mp->lock);
	/* Step one: the flush (or nothing), then map_child_done writes the blocks. */
	mw->flush_first = true;
	mw->clears = flush_first;
	atomic_init(&mw->pending, 1);
	if (flush_first)
		for (unsigned i = 0; i < a->n; i++)
			if (array_member_writable(a, i)) {
				atomic_fetch_add(&mw->pending, 1);
				array_child_submit_to(a, &mw->child[i * (mw->nblk + 1) + mw->nblk], i,
						      1, TC_OP_FLUSH, 0, 0, 0, NULL, NULL, 0,
						      map_child_done, mw);
			}
	map_put(mw);
}

/* md's bitmap daemon: clear the bits of regions idle for RAID_MAP_DAEMON_NS (none in
 * flight), after a flush of every member made their writes durable. */
static void map_daemon(struct tc_timer *t)
{
	struct raid_map *mp = (struct raid_map *)t;
	uint64_t now = tc_ctx_now(mp->a->dev.ctx);
	bool cleared = false;

	pthread_mutex_lock(&mp->lock);
	mp->armed = false;
	if (mp->closing) {
		pthread_mutex_unlock(&mp->lock);
		return;
	}
	/* A map write in flight: the clear waits for the next round (it needs a write
	 * of its own, after the flush).  Degraded: the bits stay (map_array_whole). */
	bool whole = map_array_whole(mp->a);
	uint64_t fails = atomic_load(&mp->a->fail_count);
	for (uint64_t r = 0; whole && !mp->writing && r < mp->nregions; r++) {
		if (!bit_get(mp->bits, r) || mp->inflight[r] ||
		    now - mp->idle_since[r] < RAID_MAP_DAEMON_NS ||
		    (mp->resyncing && bit_get(mp->sync, r)))
			continue;
		bit_put(mp->bits, r, false);
		bit_put(mp->clearing, r, true);
		mp->changed[r / RAID_MAP_BITS_PER_BLOCK] = true;
		mp->ndirty--;
		cleared = true;
	}
	bool start = false;
	if (cleared) {
		mp->clear_fails = fails;        /* the clear's own, until it is confirmed */
		mp->gen++;
		mp->writing = start = true;
	}
	/* Degraded, the daemon sleeps: raid_map_whole() wakes it. */
	if (mp->ndirty && whole)
		map_arm(mp);
	pthread_mutex_unlock(&mp->lock);
	if (start)
		map_write_start(mp, true);
}

void raid_map_whole(struct tc_array *a)
{
	struct raid_map *mp = a->map;

	if (!mp)
		return;
	pthread_mutex_lock(&mp->lock);
	if (mp->ndirty)
		map_arm(mp);
	pthread_mutex_unlock(&mp->lock);
}

uint64_t raid_map_intent_next(struct tc_array *a, uint64_t moff)
{
	struct raid_map *mp = a->map;

	if (!mp || !has_intent(mp))
		return moff;
	pthread_mutex_lock(&mp->lock);
	uint64_t r = moff >> mp->shift;
	while (r < mp->nregions && !bit_get(mp->bits, r) && !bit_get(mp->clearing, r)) {
		/* Whole bytes of clear bits at a time. */
		if (r % 8 == 0 && r + 8 <= mp->nregions && !mp->bits[r / 8] &&
		    !mp->clearing[r / 8])
			r += 8;
		else
			r++;
	}
	pthread_mutex_unlock(&mp->lock);
	uint64_t next = r << mp->shift;
	return next > moff ? next : moff;
}

void raid_map_rewrite(struct tc_array *a)
{
	struct raid_map *mp = a->map;
	uint32_t first, end;

	if (!mp || mp->readonly)
		return;
	map_span(mp, &first, &end);
	pthread_mutex_lock(&mp->lock);
	if (mp->closing) {
		pthread_mutex_unlock(&mp->lock);
		return;
	}
	for (uint32_t b = first; b < end; b++)
		mp->changed[b] = true;
	mp->gen++;
	bool start = !mp->writing;
	if (start) {
		mp->writing = true;
		__atomic_store_n(&mp->idle, false, __ATOMIC_RELEASE);       /* a close from now on waits for it */
	}
	pthread_mutex_unlock(&mp->lock);
	if (start)
		map_write_start(mp, false);
}

bool raid_map_has_intent(struct tc_array *a)
{
	return a->map && has_intent(a->map);
}

bool raid_map_needs_sync(struct tc_array *a, uint64_t moff)
{
	struct raid_map *mp = a->map;
	bool r;

	if (!mp || !has_intent(mp))
		return true;
	pthread_mutex_lock(&mp->lock);
	r = mp->resyncing && (moff >> mp->shift) < mp->nregions &&
	    bit_get(mp->sync, moff >> mp->shift);
	pthread_mutex_unlock(&mp->lock);
	return r;
}

bool raid_map_written(struct tc_array *a, uint64_t moff)
{
	struct raid_map *mp = a->map;
	bool r;

	if (!mp || !has_written(mp))
		return true;
	pthread_mutex_lock(&mp->lock);
	r = (moff >> mp->shift) >= mp->nregions || bit_get(mp->written, moff >> mp->shift);
	pthread_mutex_unlock(&mp->lock);
	return r;
}

bool raid_map_unwritten(struct tc_array *a, uint64_t lo, uint64_t hi)
{
	struct raid_map *mp = a->map;
	bool r = true;

	if (!mp || !has_written(mp) || hi <= lo)
		return false;
	pthread_mutex_lock(&mp->lock);
	for (uint64_t reg = lo >> mp->shift; r && reg <= (hi - 1) >> mp->shift; reg++)
		r = reg < mp->nregions && !bit_get(mp->written, reg);
	pthread_mutex_unlock(&mp->lock);
	return r;
}

bool raid_map_written_from(struct tc_array *a, uint64_t moff, uint64_t *bytes)
{
	struct raid_map *mp = a->map;

	if (!mp || !has_written(mp))
		return false;
	uint64_t n = 0, rb = 1ull << mp->shift;
	pthread_mutex_lock(&mp->lock);
	for (uint64_t reg = moff >> mp->shift; reg < mp->nregions; reg++) {
		if (!bit_get(mp->written, reg))
			continue;
		uint64_t lo = reg << mp->shift, hi = lo + rb;
		if (hi > a->member_size)
			hi = a->member_size;
		if (lo < moff)
			lo = moff;
		n += hi > lo ? hi - lo : 0;
	}
	pthread_mutex_unlock(&mp->lock);
	*bytes = n;
	return true;
}

bool raid_map_resync_pending(struct tc_array *a)
{
	struct raid_map *mp = a->map;
	bool r;

	if (!mp)
		return false;
	pthread_mutex_lock(&mp->lock);
	r = mp->resyncing;
	pthread_mutex_unlock(&mp->lock);
	return r;
}

void raid_map_resync_done(struct tc_array *a)
{
	struct raid_map *mp = a->map;

	if (!mp)
		return;
	pthread_mutex_lock(&mp->lock);
	if (mp->resyncing) {
		mp->resyncing = false;
		uint64_t now = tc_ctx_now(a->dev.ctx);
		for (uint64_t r = 0; r < mp->nregions; r++)
			if (bit_get(mp->sync, r) && !mp->inflight[r])
				mp->idle_since[r] = now;
		memset(mp->sync, 0, (size_t)mp->nblocks * MAP_BITS_BYTES);
		if (mp->ndirty)
			map_arm(mp);
	}
	pthread_mutex_unlock(&mp->lock);
}

/* Of plane @plane (RAID_MAP_INTENT or RAID_MAP_WRITTEN): regions, bits set, region
 * bytes; zeros without that plane. */
static void plane_counts(struct tc_array *a, unsigned plane, uint64_t *regions,
			 uint64_t *set, uint64_t *region_bytes)
{
	struct raid_map *mp = a->map;

	*regions = *set = *region_bytes = 0;
	if (!mp || !(mp->planes & plane))
		return;
	pthread_mutex_lock(&mp->lock);
	*regions = mp->nregions;
	*set = plane == RAID_MAP_INTENT ? mp->ndirty : mp->nwritten;
	*region_bytes = 1ull << mp->shift;
	pthread_mutex_unlock(&mp->lock);
}

void raid_map_counts(struct tc_array *a, uint64_t *regions, uint64_t *dirty,
		     uint64_t *region_bytes)
{
	plane_counts(a, RAID_MAP_INTENT, regions, dirty, region_bytes);
}

void raid_map_written_counts(struct tc_array *a, uint64_t *regions, uint64_t *written,
			     uint64_t *region_bytes)
{
	plane_counts(a, RAID_MAP_WRITTEN, regions, written, region_bytes);
}

void raid_map_close(struct tc_array *a, bool clean)
{
	struct raid_map *mp = a->map;

	if (!mp)
		return;
	pthread_mutex_lock(&mp->lock);
	mp->closing = true;
	pthread_mutex_unlock(&mp->lock);
	tc_ctx_timer_cancel(a->dev.ctx, &mp->timer);
	tc_ctx_wait_until(a->dev.ctx, &mp->idle);
	if (clean && !mp->readonly) {
		/* The written plane as it is (every bit of it durable already): the
		 * whole map goes out, so a member that joined holds it too. */
		tc_dev *dev[TC_ARRAY_MAX_MEMBERS];
		/* Degraded: the bits stay for a re-add (map_array_whole). */
		if (map_array_whole(a))
			memset(mp->bits, 0, (size_t)mp->nblocks * MAP_BITS_BYTES);
		for (unsigned i = 0; i < a->n; i++)
			dev[i] = array_member_active(a, i) ? atomic_load(&a->m[i].dev) : NULL;
		int r = map_write_sync(mp, dev, a->n);
		if (r)
			tc_warn(a->dev.ctx, "array %s: clearing the write-intent map failed: %s",
				a->dev.name, strerror(-r));
	}
	a->map = NULL;
	pthread_mutex_destroy(&mp->lock);
	map_free(mp);
}
