/* SPDX-License-Identifier: MIT */
/*
 * region.c - cache attributes of byte ranges of a volume: pinned, uncacheable, its own
 * write policy (docs/isolation.md, "Pinned and uncacheable ranges").  The idea is the
 * ARM MPU's per-region memory attributes (cacheable or not, write-back or
 * write-through per region), which block caches do not offer.
 *
 * Tables.  The cache superblock holds every volume's ranges (tc_cache_sb.regions,
 * format.md "Range table"); an online volume keeps its own copy in two forms: the
 * byte ranges (tc_volume.region_tab, management only, under region_lock) and their
 * lines (tc_volume.regions: line spans and attributes, read lock-free by the I/O path
 * under a sequence lock, tc_region_of).  Attributes apply to whole cache lines.
 *
 * Pinned lines are not in the replacement policy at all.  A pinned line's slot carries
 * TC_LINE_PINNED and is taken out of the policy's queues when it is allocated (alloc.c)
 * or when a pin covers it later; the policy's victim walk thus never meets one, so
 * eviction costs what it costs without pins (no scan past pinned lines; the walk stays
 * bounded by TC_REPL_MAX_REFUSALS as before).  Unpinning puts the slot back in the
 * policy as a new line.  A change of the table is published under the allocator lock,
 * so an allocation sees either the old table (and its slot is then fixed by the walk
 * that follows) or the new one; the walk visits every slot of the volume once, taking
 * its shard lock then the allocator lock (the engine's lock order), so O(slots) per
 * change and nothing on the I/O path.
 *
 * Uncacheable ranges and ranges leaving write-back are written back (range.c's flush)
 * after the new table is stored; an uncacheable range's copies are then dropped
 * (range.c's invalidation).  Failure puts the old table back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

const char *tc_region_kind_name(unsigned kind)
{
	switch (kind) {
	case TC_REGION_PINNED: return "pinned";
	case TC_REGION_UNCACHEABLE: return "uncacheable";
	case TC_REGION_POLICY: return "policy";
	default: return NULL;
	}
}

/* ---- the I/O path's view -------------------------------------------------------- */

static inline uint64_t span_pack(uint32_t lo, uint32_t last)
{
	return (uint64_t)lo << 32 | last;
}

unsigned tc_region_lookup(struct tc_volume *v, uint32_t line_no, uint8_t *wp)
{
	for (;;) {
		uint32_t s0 = atomic_load_explicit(&v->region_seq, memory_order_acquire);
		if (s0 & 1)
			continue;   /* a writer is in the middle: it only stores a few words */
		unsigned n = atomic_load_explicit(&v->nregions, memory_order_relaxed);
		unsigned kind = 0;
		uint8_t w = 0;
		for (unsigned i = 0; i < n && i < TC_VOL_REGIONS_MAX; i++) {
			uint64_t sp = atomic_load_explicit(&v->regions[i].span, memory_order_relaxed);
			if (line_no >= (uint32_t)(sp >> 32) && line_no <= (uint32_t)sp) {
				uint32_t a = atomic_load_explicit(&v->regions[i].attr,
								  memory_order_relaxed);
				kind = a & 0xff;
				w = (uint8_t)(a >> 8);
				break;
			}
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&v->region_seq, memory_order_relaxed) == s0) {
			if (wp)
				*wp = w;
			return kind;
		}
	}
}

bool tc_region_any(struct tc_volume *v, uint32_t first, uint32_t last, unsigned kind)
{
	if (!atomic_load_explicit(&v->nregions, memory_order_relaxed))
		return false;
	for (;;) {
		uint32_t s0 = atomic_load_explicit(&v->region_seq, memory_order_acquire);
		if (s0 & 1)
			continue;
		unsigned n = atomic_load_explicit(&v->nregions, memory_order_relaxed);
		bool any = false;
		for (unsigned i = 0; i < n && i < TC_VOL_REGIONS_MAX && !any; i++) {
			uint64_t sp = atomic_load_explicit(&v->regions[i].span, memory_order_relaxed);
			uint32_t a = atomic_load_explicit(&v->regions[i].attr, memory_order_relaxed);
			any = (a & 0xff) == kind && first <= (uint32_t)sp && last >= (uint32_t)(sp >> 32);
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&v->region_seq, memory_order_relaxed) == s0)
			return any;
	}
}

/* The lines [lo, last] a byte range touches. */
static void range_lines(struct tc_cache *c, const struct tc_region *r, uint32_t *lo,
			uint32_t *last)
{
	*lo = (uint32_t)(r->offset >> c->line_shift);
	*last = (uint32_t)((r->offset + r->length - 1) >> c->line_shift);
}

/* Publish @n ranges @tab as the I/O path's view (allocator lock held by the caller
 * when pins change, so that allocations see the table before or after). */
static void publish(struct tc_volume *v, const struct tc_region *tab, unsigned n)
{
	struct tc_cache *c = v->cache;
	atomic_fetch_add_explicit(&v->region_seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (unsigned i = 0; i < n; i++) {
		uint32_t lo, last;
		range_lines(c, &tab[i], &lo, &last);
		atomic_store_explicit(&v->regions[i].span, span_pack(lo, last),
				      memory_order_relaxed);
		atomic_store_explicit(&v->regions[i].attr,
				      (uint32_t)tab[i].kind | (uint32_t)tab[i].write_policy << 8,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&v->nregions, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&v->region_seq, 1, memory_order_release);
	memcpy(v->region_tab, tab, n * sizeof(*tab));
	v->region_n = n;
}

/*
 * Make every resident slot of @v agree with the published table: a slot of a pinned
 * line leaves the replacement policy and carries TC_LINE_PINNED; a slot no longer
 * pinned goes back into the policy.  Shard lock, then allocator lock, per slot.
 */
void tc_regions_reconcile(struct tc_volume *v)
{
	struct tc_cache *c = v->cache;
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line p = tc_line_peek(&c->lines[i]);
		if (p.vol != v->id)
			continue;
		bool want = tc_region_of(v, p.line_no, NULL) == TC_REGION_PINNED;
		if (want == !!(p.flags & TC_LINE_PINNED))
			continue;
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(v->id, p.line_no));
		pthread_mutex_lock(&s->lock);
		pthread_mutex_lock(&c->alloc_lock);
		struct tc_line *l = &c->lines[i];
		/* Still the same line (not evicted or freed meanwhile)? */
		if (l->vol == v->id && l->line_no == p.line_no) {
			want = tc_region_of(v, l->line_no, NULL) == TC_REGION_PINNED;
			bool have = tc_line_flags_load(l) & TC_LINE_PINNED;
			if (want && !have) {
				c->repl_ops->remove(c->repl, i);
				tc_line_flags_set(l, TC_LINE_PINNED);
				atomic_fetch_add(&v->pinned_lines, 1);
			} else if (!want && have) {
				tc_line_flags_clear(l, TC_LINE_PINNED);
				atomic_fetch_sub(&v->pinned_lines, 1);
				c->repl_ops->insert(c->repl, i);
			}
		}
		pthread_mutex_unlock(&c->alloc_lock);
		pthread_mutex_unlock(&s->lock);
	}
}

static void sort_tab(struct tc_region *tab, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && tab[j - 1].offset > tab[j].offset; j--) {
			struct tc_region t = tab[j];
			tab[j] = tab[j - 1];
			tab[j - 1] = t;
		}
}

/* Volume @id's ranges in the cache superblock into @tab, sorted by offset (as the
 * management code keeps them); returns how many. */
static unsigned sb_regions_of(struct tc_cache *c, uint8_t id,
			      struct tc_region tab[TC_VOL_REGIONS_MAX])
{
	unsigned n = 0;
	for (unsigned i = 0; i < c->sb.nregions && n < TC_VOL_REGIONS_MAX; i++)
		if (c->sb.regions[i].vol == id)
			tab[n++] = c->sb.regions[i].r;
	sort_tab(tab, n);
	return n;
}

void tc_regions_load(struct tc_volume *v)
{
	struct tc_region tab[TC_VOL_REGIONS_MAX];
	unsigned n = sb_regions_of(v->cache, v->id, tab);
	publish(v, tab, n);
}

void tc_regions_drop_record(struct tc_cache_sb *sb, uint8_t id)
{
	unsigned k = 0;
	for (unsigned i = 0; i < sb->nregions; i++)
		if (sb->regions[i].vol != id)
			sb->regions[k++] = sb->regions[i];
	memset(&sb->regions[k], 0, (sb->nregions - k) * sizeof(sb->regions[0]));
	sb->nregions = k;
}

/* ---- bounds ---------------------------------------------------------------------- */

/* Lines pinned by @n ranges @tab: the union of the lines they touch. */
static uint64_t pinned_lines_of(struct tc_cache *c, const struct tc_region *tab, unsigned n)
{
	uint64_t total = 0;
	int64_t prev_last = -1;
	/* @tab is sorted by offset, so the line spans are sorted by their first line. */
	for (unsigned i = 0; i < n; i++) {
		if (tab[i].kind != TC_REGION_PINNED)
			continue;
		uint32_t lo, last;
		range_lines(c, &tab[i], &lo, &last);
		int64_t a = (int64_t)lo > prev_last ? (int64_t)lo : prev_last + 1;
		if ((int64_t)last >= a)
			total += (uint64_t)((int64_t)last - a + 1);
		if ((int64_t)last > prev_last)
			prev_last = last;
	}
	return total;
}

uint64_t tc_regions_pinned_lines(struct tc_cache *c, uint8_t id)
{
	struct tc_region tab[TC_VOL_REGIONS_MAX];
	unsigned n = sb_regions_of(c, id, tab);
	return pinned_lines_of(c, tab, n);
}

static const char *range_text(const struct tc_region *r, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 ":%" PRIu64, r->offset, r->length);
	return buf;
}

static const char *attr_text(const struct tc_region *r, char *buf, size_t len)
{
	if (r->kind == TC_REGION_POLICY)
		snprintf(buf, len, "write policy %s", tc_write_policy_name(r->write_policy));
	else
		snprintf(buf, len, "%s", tc_region_kind_name(r->kind));
	return buf;
}

/*
 * Whether volume @v may hold the @n ranges @tab (sorted): the counts, and the pin
 * bounds of tc_volume_region_set.  sb_lock held (the other volumes' ranges and
 * shares).  0 or -ENOSPC with a message.
 */
static int check_bounds(struct tc_volume *v, const struct tc_region *tab, unsigned n)
{
	struct tc_cache *c = v->cache;
	uint64_t lsz = c->line_size;
	if (n > TC_VOL_REGIONS_MAX) {
		tc_err(c->ctx, "volume \"%s\": %u ranges with attributes, more than the %u a "
		       "volume may have; nothing changed", v->name, n, TC_VOL_REGIONS_MAX);
		return -ENOSPC;
	}
	unsigned others = 0;
	for (unsigned i = 0; i < c->sb.nregions; i++)
		if (c->sb.regions[i].vol != v->id)
			others++;
	if (others + n > TC_REGIONS_MAX) {
		tc_err(c->ctx, "volume \"%s\": the cache's volumes would have %u ranges with "
		       "attributes, more than the %u its superblock holds; nothing changed",
		       v->name, others + n, TC_REGIONS_MAX);
		return -ENOSPC;
	}
	uint64_t mine = pinned_lines_of(c, tab, n);
	uint64_t all = mine, limit = (uint64_t)c->nslots * TC_PIN_MAX_PCT / 100;
	uint64_t claimed = 0;   /* sum over volumes of max(reserve, pinned), lines */
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		const struct tc_vol_rec *rec = &c->sb.vols[i];
		if (!rec->id)
			continue;
		uint64_t pins = rec->id == v->id ? mine : tc_regions_pinned_lines(c, rec->id);
		if (rec->id != v->id)
			all += pins;
		uint64_t res = tc_share_lines(c, rec->settings.reserve, true);
		claimed += res > pins ? res : pins;
	}
	if (all > limit) {
		tc_err(c->ctx, "volume \"%s\": pins would hold %" PRIu64 " bytes of the cache "
		       "(%" PRIu64 " of them this volume's), more than the %u%% allowed "
		       "(%" PRIu64 " bytes of %" PRIu64 "); nothing changed", v->name, all * lsz,
		       mine * lsz, TC_PIN_MAX_PCT, limit * lsz, (uint64_t)c->nslots * lsz);
		return -ENOSPC;
	}
	uint64_t cap = atomic_load(&v->cap_lines);
	if (cap && mine > cap) {
		tc_err(c->ctx, "volume \"%s\": pins would hold %" PRIu64 " bytes, more than "
		       "the volume's cap of %" PRIu64 " bytes; nothing changed", v->name,
		       mine * lsz, cap * lsz);
		return -ENOSPC;
	}
	if (claimed > c->nslots) {
		tc_err(c->ctx, "volume \"%s\": pins (%" PRIu64 " bytes) and the reservations of "
		       "the cache's volumes would claim %" PRIu64 " bytes, more than the "
		       "cache's %" PRIu64 "; nothing changed", v->name, mine * lsz,
		       claimed * lsz, (uint64_t)c->nslots * lsz);
		return -ENOSPC;
	}
	return 0;
}

/* ---- management ------------------------------------------------------------------ */

static int check_args(struct tc_volume *v, const char *what, uint64_t off, uint64_t len)
{
	struct tc_cache *c = v->cache;
	if (c->readonly) {
		tc_err(c->ctx, "volume \"%s\": %s refused: cache %s is open read-only for "
		       "inspection", v->name, what, c->dev->name);
		return -EROFS;
	}
	if (!len || off % TC_UNIT_SIZE || len % TC_UNIT_SIZE || off > v->size ||
	    len > v->size - off) {
		tc_err(c->ctx, "volume \"%s\": %s: the range %" PRIu64 ":%" PRIu64 " is empty, "
		       "not aligned to %u bytes or past the volume's end (%" PRIu64 " bytes)",
		       v->name, what, off, len, TC_UNIT_SIZE, v->size);
		return -EINVAL;
	}
	return 0;
}

static bool same_attr(const struct tc_region *a, const struct tc_region *b)
{
	return a->kind == b->kind &&
	       (a->kind != TC_REGION_POLICY || a->write_policy == b->write_policy);
}

/* Store the volume's table @tab in the cache superblock (sb_lock held); on failure the
 * superblock in memory is as it was. */
static int store(struct tc_volume *v, const struct tc_region *tab, unsigned n)
{
	struct tc_cache *c = v->cache;
	uint32_t old_n = c->sb.nregions;
	struct tc_region_rec old[TC_REGIONS_MAX];
	memcpy(old, c->sb.regions, sizeof(old));
	tc_regions_drop_record(&c->sb, v->id);
	for (unsigned i = 0; i < n; i++) {
		c->sb.regions[c->sb.nregions].vol = v->id;
		c->sb.regions[c->sb.nregions].r = tab[i];
		c->sb.nregions++;
	}
	int r = tc_cache_sb_write(c);
	if (r) {
		memcpy(c->sb.regions, old, sizeof(old));
		c->sb.nregions = old_n;
		tc_err(c->ctx, "volume \"%s\": storing its ranges on cache %s failed: %s; "
		       "nothing changed", v->name, c->dev->name, strerror(-r));
	}
	return r;
}

/* Put @tab in force: publish (under the allocator lock) and fix the slots. */
static void apply(struct tc_volume *v, const struct tc_region *tab, unsigned n)
{
	struct tc_cache *c = v->cache;
	pthread_mutex_lock(&c->alloc_lock);
	publish(v, tab, n);
	pthread_mutex_unlock(&c->alloc_lock);
	tc_regions_reconcile(v);
}

/* Whether bytes of the range @r are, under table (@tab, @n), written back to the
 * backing by the cleaner only (write-back), the volume's policy being @vol_wp. */
static bool range_left_wb(const struct tc_region *r, unsigned vol_wp)
{
	if (r->kind == TC_REGION_UNCACHEABLE)
		return true;
	if (r->kind == TC_REGION_POLICY)
		return !tc_write_policy_is_wb(r->write_policy);
	return !tc_write_policy_is_wb(vol_wp);
}

/*
 * Common tail of set and clear: check, store, put in force, then write back (and for
 * an uncacheable range drop) the bytes @done names; on failure the old table again.
 * region_lock held.
 */
static int change(struct tc_volume *v, struct tc_region *tab, unsigned n,
		  const struct tc_region *done, bool flush, bool drop)
{
	struct tc_cache *c = v->cache;
	struct tc_region old[TC_VOL_REGIONS_MAX];
	unsigned old_n = v->region_n;
	memcpy(old, v->region_tab, sizeof(old));
	sort_tab(tab, n);
	pthread_mutex_lock(&c->sb_lock);
	int r = check_bounds(v, tab, n);
	if (!r)
		r = store(v, tab, n);
	pthread_mutex_unlock(&c->sb_lock);
	if (r)
		return r;
	apply(v, tab, n);
	if (flush)
		r = tc_volume_flush_range(v, done->offset, done->length, NULL, NULL, NULL);
	if (!r && drop) {
		struct tc_range_result res;
		/* Writes to the range go around the cache now (pass-through drops clean
		 * copies; a dirty line is updated as in write-around and stays dirty):
		 * write back what such a write left dirty, and try again. */
		for (int tries = 0; tries < 8; tries++) {
			r = tc_volume_invalidate_range(v, done->offset, done->length, 0, &res);
			if (r != -EBUSY)
				break;
			r = tc_volume_flush_range(v, done->offset, done->length, NULL, NULL, NULL);
			if (r)
				break;
			r = -EBUSY;
		}
	}
	if (r) {
		tc_err(c->ctx, "volume \"%s\": range %" PRIu64 ":%" PRIu64 " could not be "
		       "written back or dropped (%s): its attributes are put back as they were",
		       v->name, done->offset, done->length, strerror(-r));
		pthread_mutex_lock(&c->sb_lock);
		int r2 = store(v, old, old_n);
		pthread_mutex_unlock(&c->sb_lock);
		if (!r2)
			apply(v, old, old_n);
	}
	return r;
}

int tc_volume_region_set(tc_volume *v, const struct tc_region *nr)
{
	struct tc_cache *c = v->cache;
	char a[48], b[48], x[48], y[48];
	int r = check_args(v, "range attribute", nr->offset, nr->length);
	if (r)
		return r;
	if (!tc_region_kind_name(nr->kind)) {
		tc_err(c->ctx, "volume \"%s\": range %s: kind %u is not pinned (1), "
		       "uncacheable (2) or policy (3)", v->name, range_text(nr, a, sizeof(a)),
		       nr->kind);
		return -EINVAL;
	}
	struct tc_region want = *nr;
	if (want.kind != TC_REGION_POLICY)
		want.write_policy = 0;
	else if (want.write_policy > TC_WP_PT) {
		tc_err(c->ctx, "volume \"%s\": range %s: write policy %u is not wt, wb, wa or "
		       "pt (instant write-back is a volume's policy only)", v->name,
		       range_text(nr, a, sizeof(a)), nr->write_policy);
		return -EINVAL;
	}
	if (want.kind == TC_REGION_POLICY && tc_write_policy_is_wb(want.write_policy) &&
	    !tc_write_policy_is_wb(TC_SET(v, write_policy))) {
		r = tc_protect_check(c, v->name, want.write_policy);
		if (r)
			return r;
	}
	pthread_mutex_lock(&v->region_lock);
	struct tc_region tab[TC_VOL_REGIONS_MAX + 1];
	unsigned n = 0;
	uint32_t lo, last;
	range_lines(c, &want, &lo, &last);
	uint64_t wend = want.offset + want.length;
	for (unsigned i = 0; i < v->region_n; i++) {
		const struct tc_region *e = &v->region_tab[i];
		uint32_t elo, elast;
		range_lines(c, e, &elo, &elast);
		uint64_t eend = e->offset + e->length;
		bool share_line = elo <= last && elast >= lo;
		if (share_line && !same_attr(e, &want)) {
			tc_err(c->ctx, "volume \"%s\": range %s (%s) overlaps range %s (%s), or "
			       "shares a %u-byte cache line with it; attributes apply to whole "
			       "lines: clear the other range first; nothing changed", v->name,
			       range_text(&want, a, sizeof(a)), attr_text(&want, x, sizeof(x)),
			       range_text(e, b, sizeof(b)), attr_text(e, y, sizeof(y)),
			       c->line_size);
			pthread_mutex_unlock(&v->region_lock);
			return -EINVAL;
		}
		if (same_attr(e, &want) && e->offset <= wend && eend >= want.offset) {
			/* Overlapping or adjacent, same attribute: one range. */
			uint64_t s = e->offset < want.offset ? e->offset : want.offset;
			uint64_t t = eend > wend ? eend : wend;
			want.offset = s;
			want.length = t - s;
			wend = t;
			range_lines(c, &want, &lo, &last);
			continue;
		}
		tab[n++] = *e;
	}
	tab[n++] = want;
	if (n > TC_VOL_REGIONS_MAX) {
		pthread_mutex_unlock(&v->region_lock);
		tc_err(c->ctx, "volume \"%s\": range %s: the volume has %u ranges with "
		       "attributes already, the most it may have; nothing changed", v->name,
		       range_text(nr, a, sizeof(a)), TC_VOL_REGIONS_MAX);
		return -ENOSPC;
	}
	bool flush = range_left_wb(nr, TC_SET(v, write_policy)) &&
		     nr->kind != TC_REGION_PINNED;
	r = change(v, tab, n, nr, flush, nr->kind == TC_REGION_UNCACHEABLE);
	pthread_mutex_unlock(&v->region_lock);
	if (!r)
		tc_info(c->ctx, "volume \"%s\": range %s is %s", v->name,
			range_text(nr, a, sizeof(a)), attr_text(nr, x, sizeof(x)));
	return r;
}

int tc_volume_region_clear(tc_volume *v, uint64_t off, uint64_t len, unsigned kind)
{
	struct tc_cache *c = v->cache;
	int r = check_args(v, "range attribute", off, len);
	if (r)
		return r;
	if (!tc_region_kind_name(kind)) {
		tc_err(c->ctx, "volume \"%s\": range %" PRIu64 ":%" PRIu64 ": kind %u is not "
		       "pinned (1), uncacheable (2) or policy (3)", v->name, off, len, kind);
		return -EINVAL;
	}
	pthread_mutex_lock(&v->region_lock);
	struct tc_region tab[2 * TC_VOL_REGIONS_MAX];
	unsigned n = 0;
	bool hit = false, left_wb = false;
	uint64_t end = off + len;
	for (unsigned i = 0; i < v->region_n; i++) {
		const struct tc_region *e = &v->region_tab[i];
		uint64_t eend = e->offset + e->length;
		if (e->kind != kind || eend <= off || e->offset >= end) {
			tab[n++] = *e;
			continue;
		}
		hit = true;
		/* A write-back range cut: its bytes follow the volume's policy again. */
		if (kind == TC_REGION_POLICY && tc_write_policy_is_wb(e->write_policy))
			left_wb = true;
		if (e->offset < off) {
			tab[n] = *e;
			tab[n++].length = off - e->offset;
		}
		if (eend > end) {
			tab[n] = *e;
			tab[n].offset = end;
			tab[n++].length = eend - end;
		}
	}
	if (!hit) {
		pthread_mutex_unlock(&v->region_lock);
		tc_err(c->ctx, "volume \"%s\": no %s range overlaps %" PRIu64 ":%" PRIu64
		       "; nothing changed", v->name, tc_region_kind_name(kind), off, len);
		return -ENOENT;
	}
	struct tc_region done = { .offset = off, .length = len, .kind = (uint8_t)kind };
	r = change(v, tab, n, &done, left_wb && !tc_write_policy_is_wb(TC_SET(v, write_policy)),
		   false);
	pthread_mutex_unlock(&v->region_lock);
	if (!r)
		tc_info(c->ctx, "volume \"%s\": range %" PRIu64 ":%" PRIu64 " is no longer %s",
			v->name, off, len, tc_region_kind_name(kind));
	return r;
}

unsigned tc_volume_regions(tc_volume *v, struct tc_region *out, unsigned max)
{
	pthread_mutex_lock(&v->region_lock);
	unsigned n = v->region_n;
	for (unsigned i = 0; i < n && i < max; i++)
		out[i] = v->region_tab[i];
	pthread_mutex_unlock(&v->region_lock);
	return n;
}

uint64_t tc_volume_pinned_bytes(tc_volume *v)
{
	return atomic_load(&v->pinned_lines) * v->cache->line_size;
}
