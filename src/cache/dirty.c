/* SPDX-License-Identifier: MIT */
/*
 * dirty.c - a volume's dirty index: for each group of lines of its backing (a full
 * stripe where the backing has one, else TC_DIRTY_GROUP_LINES lines) that holds dirty
 * data, the number of its dirty 4 KiB units.
 *
 * The cleaner finds the dirty data here instead of scanning every cache line (the
 * scan cost O(lines of the cache) per batch of candidates, however little was
 * dirty), and on a parity backing it tells full dirty stripes, written first, from
 * partial ones.  bcache keeps the same count per stripe (stripe_sectors_dirty in
 * drivers/md/bcache/writeback.c) in a dense array over the whole backing, 4 bytes per
 * stripe; this one holds only the groups with dirty data, so its memory follows the
 * dirty data, not the backing's size.
 *
 * The table: open addressing with linear probing over entries of 8 bytes (group
 * number, dirty units), an entry with 0 units being empty; a group whose count falls
 * to 0 is deleted by shifting the entries after it back (Knuth's algorithm R, vol. 3,
 * 6.4), so there are no tombstones.  The table doubles above a load of 1/2 and halves
 * below 1/8.  A table that cannot grow (out of memory) marks the index lost: the
 * cleaner scans the lines again until the next attach rebuilds it.
 *
 * Locking: the index's mutex, taken inside a line's shard lock by tc_line_set_bits()
 * (map.c) and alone by the cleaner and the request planner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"
#include "tiercache-test.h"

#define DIRTY_MIN_CAP 64u

static inline uint32_t slot_of(const struct tc_dirty_index *d, uint32_t group)
{
	/* Fibonacci hashing: consecutive groups spread over the table. */
	return (uint32_t)(((uint64_t)group * 0x9e3779b97f4a7c15ull) >> 32) & (d->cap - 1);
}

int tc_dirty_init(struct tc_dirty_index *d, uint32_t group_lines, uint32_t group_units,
		  uint32_t shift)
{
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->group_lines = group_lines ? group_lines : 1;
	d->group_units = group_units;
	d->shift = shift;
	d->cap = DIRTY_MIN_CAP;
	d->tab = calloc(d->cap, sizeof(*d->tab));
	if (!d->tab) {
		pthread_mutex_destroy(&d->lock);
		return -ENOMEM;
	}
	d->ready = true;
	return 0;
}

void tc_dirty_fini(struct tc_dirty_index *d)
{
	if (!d->ready)
		return;
	free(d->tab);
	d->tab = NULL;
	d->ready = false;
	pthread_mutex_destroy(&d->lock);
}

/* Move every entry into a table of @cap entries; false (table unchanged) when there
 * is no memory for it. */
static bool resize(struct tc_dirty_index *d, uint32_t cap)
{
	struct tc_dirty_group *old = d->tab, *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return false;
	uint32_t ocap = d->cap;
	d->tab = tab;
	d->cap = cap;
	for (uint32_t i = 0; i < ocap; i++) {
		if (!old[i].units)
			continue;
		uint32_t s = slot_of(d, old[i].group);
		while (tab[s].units)
			s = (s + 1) & (cap - 1);
		tab[s] = old[i];
	}
	free(old);
	return true;
}

/* Delete the entry at @s, shifting back the entries of its probe run that would
 * otherwise become unreachable. */
static void delete_at(struct tc_dirty_index *d, uint32_t s)
{
	uint32_t mask = d->cap - 1, hole = s;
	for (uint32_t i = (s + 1) & mask; d->tab[i].units; i = (i + 1) & mask) {
		uint32_t home = slot_of(d, d->tab[i].group);
		/* Entry i may fill the hole unless its home lies cyclically in (hole, i]. */
		bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
		if (stays)
			continue;
		d->tab[hole] = d->tab[i];
		hole = i;
	}
	d->tab[hole].units = 0;
	d->tab[hole].group = 0;
}

void tc_dirty_add(struct tc_dirty_index *d, uint32_t line_no, int64_t units)
{
	if (!units || !d->ready)
		return;
	uint32_t group = (uint32_t)(((uint64_t)line_no + d->shift) / d->group_lines);
	pthread_mutex_lock(&d->lock);
	if (d->lost)
		goto out;
	uint32_t mask = d->cap - 1, s = slot_of(d, group);
	while (d->tab[s].units && d->tab[s].group != group)
		s = (s + 1) & mask;
	uint32_t was = d->tab[s].units;
	if (!was && units < 0) {
		d->lost = true;   /* a count gone wrong: never trusted again until rebuilt */
		goto out;
	}
	int64_t now = (int64_t)was + units;
	if (now < 0) {
		d->lost = true;
		goto out;
	}
	if (d->group_units) {
		if (was == d->group_units)
			d->full--;
		if (now == d->group_units)
			d->full++;
	}
	if (!was) {
		d->tab[s].group = group;
		d->tab[s].units = (uint32_t)now;
		d->count++;
		if (d->count * 2 > d->cap && !resize(d, d->cap * 2))
			d->lost = true;
	} else if (now == 0) {
		delete_at(d, s);
		d->count--;
		if (d->cap > DIRTY_MIN_CAP && d->count * 8 < d->cap)
			resize(d, d->cap / 2);   /* no memory to shrink: keep the larger table */
	} else {
		d->tab[s].units = (uint32_t)now;
	}
out:
	pthread_mutex_unlock(&d->lock);
}

void tc_dirty_reset(struct tc_dirty_index *d)
{
	if (!d->ready)
		return;
	pthread_mutex_lock(&d->lock);
	struct tc_dirty_group *tab = d->cap != DIRTY_MIN_CAP ?
				     calloc(DIRTY_MIN_CAP, sizeof(*tab)) : NULL;
	if (tab) {
		free(d->tab);
		d->tab = tab;
		d->cap = DIRTY_MIN_CAP;
	} else {
		memset(d->tab, 0, sizeof(*d->tab) * d->cap);
	}
	d->count = d->full = 0;
	d->lost = false;
	pthread_mutex_unlock(&d->lock);
}

bool tc_dirty_any(struct tc_dirty_index *d, uint32_t first_line, uint32_t last_line)
{
	if (!d->ready)
		return false;
	bool any = false;
	pthread_mutex_lock(&d->lock);
	if (!d->lost && d->count) {
		uint32_t mask = d->cap - 1;
		uint32_t g0 = (uint32_t)(((uint64_t)first_line + d->shift) / d->group_lines);
		uint32_t g1 = (uint32_t)(((uint64_t)last_line + d->shift) / d->group_lines);
		for (uint32_t g = g0; g <= g1 && !any; g++) {
			uint32_t s = slot_of(d, g);
			while (d->tab[s].units && d->tab[s].group != g)
				s = (s + 1) & mask;
			any = d->tab[s].units != 0;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return any;
}

int64_t tc_dirty_collect(struct tc_dirty_index *d, uint64_t **out, uint32_t *nfull)
{
	*out = NULL;
	*nfull = 0;
	if (!d->ready)
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	if (d->lost) {
		pthread_mutex_unlock(&d->lock);
		return -ENOENT;
	}
	uint64_t *keys = d->count ? malloc(sizeof(*keys) * d->count) : NULL;
	if (d->count && !keys) {
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < d->cap; i++)
		if (d->tab[i].units)
			keys[n++] = ((uint64_t)d->tab[i].group << 32) | d->tab[i].units;
	*nfull = d->full;
	pthread_mutex_unlock(&d->lock);
	*out = keys;
	return n;
}

size_t tc_dirty_mem(struct tc_dirty_index *d)
{
	if (!d->ready)
		return 0;
	pthread_mutex_lock(&d->lock);
	size_t bytes = (size_t)d->cap * sizeof(*d->tab);
	pthread_mutex_unlock(&d->lock);
	return bytes;
}

bool tc_dirty_lost(struct tc_dirty_index *d)
{
	if (!d->ready)
		return true;
	pthread_mutex_lock(&d->lock);
	bool lost = d->lost;
	pthread_mutex_unlock(&d->lock);
	return lost;
}

uint32_t tc_dirty_full(struct tc_dirty_index *d)
{
	if (!d->ready)
		return 0;
	pthread_mutex_lock(&d->lock);
	uint32_t full = d->lost ? 0 : d->full;
	pthread_mutex_unlock(&d->lock);
	return full;
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int tc_volume_check_dirty_index(tc_volume *v)
{
	struct tc_cache *c = v->cache;
	struct tc_dirty_index *d = &v->dirty_ix, ref;
	if (tc_dirty_init(&ref, d->group_lines, d->group_units, d->shift))
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tc_line l = tc_line_peek(&c->lines[i]);
		if (l.vol == v->id)
			tc_dirty_add(&ref, l.line_no, tc_popcount16(l.dirty));
	}
	uint64_t *want = NULL, *have = NULL;
	uint32_t want_full = 0, have_full = 0;
	int64_t nw = tc_dirty_collect(&ref, &want, &want_full);
	int64_t nh = tc_dirty_collect(d, &have, &have_full);
	int r = 0;
	if (nw < 0 || nh < 0) {
		r = nh == -ENOENT ? -ENOENT : -ENOMEM;
		goto out;
	}
	if (nw > 1)
		qsort(want, (size_t)nw, sizeof(*want), cmp_key);
	if (nh > 1)
		qsort(have, (size_t)nh, sizeof(*have), cmp_key);
	int64_t i = 0;
	while (i < nw && i < nh && want[i] == have[i])
		i++;
	if (i < nw || i < nh || want_full != have_full) {
		uint64_t w = i < nw ? want[i] : 0, h = i < nh ? have[i] : 0;
		tc_err(c->ctx, "volume \"%s\": dirty index wrong: group %u has %u dirty units "
		       "in the lines, %u in the index (group %u there); %u full groups, "
		       "%u in the index", v->name, (unsigned)(w >> 32), (unsigned)w,
		       (unsigned)h, (unsigned)(h >> 32), want_full, have_full);
		r = -EIO;
	}
out:
	free(want);
	free(have);
	tc_dirty_fini(&ref);
	return r;
}
