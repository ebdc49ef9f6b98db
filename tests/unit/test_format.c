/* SPDX-License-Identifier: MIT */
/*
 * test_format.c - the on-disk codec (src/cache/format.c): round trips, geometry, and
 * the exact refusal for every field of every structure.
 *
 * The corruption tests walk a table of {field, offset, size, bad value} built from the
 * packed on-disk structs, and first check that the table covers every byte of the
 * structure exactly once, so a field added to format.h without a row here fails the
 * test instead of going untested.  For each row:
 *   (a) each byte of the field flipped, checksum left alone -> BAD_CHECKSUM (BAD_MAGIC
 *       for the magic, BAD_VERSION for the version);
 *   (b) the field set to an out-of-range value and the checksum recomputed -> BAD_FIELD
 *       with a message naming the structure, the field and the value; or, for fields
 *       where every value is legal, decode succeeds and re-encoding reproduces the bytes
 *       (reserved bytes: reproduces the original, since they are ignored).
 * Finally every byte position of every structure is flipped once: decode never says OK.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "format.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
#define TIB (1024ull * GIB)

/* ---- helpers ------------------------------------------------------------------- */

/* xorshift64*: deterministic varied values; the state lives in the caller. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi) /* inclusive */
{
	return lo + rnd(s) % (hi - lo + 1);
}

/* Recompute the checksum of an encoded structure of @size bytes, as an attacker or a
 * bug that writes a consistent but wrong structure would. */
static void rechecksum(void *buf, size_t size)
{
	uint64_t c = htole64(XXH64(buf, size - 8, 0));

	memcpy((uint8_t *)buf + size - 8, &c, 8);
}

static void put_le(void *p, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)p)[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const void *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)((const uint8_t *)p)[i] << (8 * i);
	return v;
}

static void rnd_uuid(uint64_t *s, uint8_t u[16])
{
	for (int i = 0; i < 16; i++)
		u[i] = (uint8_t)rnd(s);
	u[0] |= 1; /* never all zero */
}

static void rnd_name(uint64_t *s, char name[TC_NAME_MAX])
{
	static const char set[] = "ABCXYZabcxyz0189._-";
	size_t len = rnd_range(s, 1, TC_NAME_MAX - 1);

	memset(name, 0, TC_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		name[i] = set[rnd(s) % (sizeof(set) - 1)];
}

static void rnd_settings(uint64_t *s, struct tc_volume_settings *st)
{
	st->read_cache = rnd(s) & 1;
	st->write_policy = (uint8_t)rnd_range(s, 0, 4);
	st->flush_rate = (uint8_t)rnd_range(s, 0, 2);
	st->admission = (uint8_t)rnd_range(s, 0, 1);
	st->fill = (uint8_t)rnd_range(s, 0, 1);
	st->nhit = (uint32_t)rnd_range(s, 1, 255);
	st->seq_cutoff = rnd(s);
}

static void default_settings(struct tc_volume_settings *st)
{
	memset(st, 0, sizeof(*st));
	st->read_cache = true;
	st->write_policy = TC_WP_WB;
	st->flush_rate = TC_FLUSH_MEDIUM;
	st->admission = TC_ADMIT_ALWAYS;
	st->fill = TC_FILL_SECTORS;
	st->nhit = 2;
	st->seq_cutoff = 4 * MIB;
}

/* A valid cache superblock with random values; the @nused record indexes in @used are
 * in use, the others free. */
static void make_cache_sb(uint64_t *s, struct tc_cache_sb *sb, uint32_t line_size,
			  uint64_t dev_size, const uint8_t *used, unsigned nused)
{
	memset(sb, 0, sizeof(*sb));
	assert_int_equal(tc_fmt_cache_geometry(dev_size, line_size, sb), 0);
	sb->generation = rnd(s);
	rnd_uuid(s, sb->uuid);
	sb->line_size = line_size;
	sb->dev_size = dev_size;
	sb->commit_interval_ms = (uint32_t)rnd_range(s, 1, 3600000);
	sb->replacement = (uint8_t)rnd_range(s, 0, 1);
	sb->dirty_high_pct = (uint8_t)rnd_range(s, 1, 100);
	sb->dirty_low_pct = (uint8_t)rnd_range(s, 0, sb->dirty_high_pct - 1u);
	sb->clean_shutdown = rnd(s) & 1;
	sb->commit_seq = rnd(s);
	sb->csum_off = rnd(s) & 1;
	sb->wb_guard = (uint8_t)rnd_range(s, 0, 2);
	for (unsigned k = 0; k < nused; k++) {
		struct tc_vol_rec *v = &sb->vols[used[k]];

		v->id = (uint8_t)(used[k] + 1);
		rnd_uuid(s, v->backing_uuid);
		rnd_name(s, v->name);
		v->size = rnd_range(s, 0, ((uint64_t)line_size << 32) / 4096) * 4096;
		v->backing_gen = rnd(s);
		rnd_settings(s, &v->settings);
	}
}

static void make_backing_sb(uint64_t *s, struct tc_backing_sb *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->generation = rnd(s);
	rnd_uuid(s, sb->uuid);
	rnd_name(s, sb->name);
	sb->dev_size = rnd_range(s, TC_BACKING_DATA_OFFSET, 100 * TIB);
	sb->data_offset = TC_BACKING_DATA_OFFSET;
	sb->size = (sb->dev_size - sb->data_offset) / 4096 * 4096;
	if (rnd(s) & 1)
		rnd_uuid(s, sb->cache_uuid);
	sb->attach_gen = rnd(s);
	rnd_settings(s, &sb->settings);
	sb->stripe_size = rnd(s) & 1 ? 0 : 4096u << rnd_range(s, 0, 12);
}

/* Entries: every 7th of the first @nentries is a free slot, the rest random. */
static void make_md_block(uint64_t *s, struct tc_md_block *b, uint32_t index,
			  unsigned nentries, unsigned units)
{
	uint16_t mask = units >= 16 ? 0xffff : (uint16_t)((1u << units) - 1);

	memset(b, 0, sizeof(*b));
	b->index = index;
	b->seq = rnd(s);
	rnd_uuid(s, b->cache_uuid);
	b->nentries = (uint16_t)nentries;
	for (unsigned i = 0; i < nentries; i++) {
		struct tc_md_entry *e = &b->e[i];

		if (i % 7 == 3)
			continue;
		e->vol = (uint8_t)rnd_range(s, 1, TC_MAX_VOLUMES);
		e->line_no = rnd(s) & UINT32_MAX;
		e->valid = (uint16_t)(rnd(s) & mask);
		e->dirty = (uint16_t)(rnd(s) & e->valid);
	}
}

/* ---- a generic view of the three codecs ------------------------------------------ */

enum kind { CACHE_SB, BACKING_SB, MD_BLOCK };

union host {
	struct tc_cache_sb c;
	struct tc_backing_sb b;
	struct tc_md_block m;
};

struct codec {
	enum kind kind;
	const char *what;  /* the structure's name in refusal messages */
	size_t size;
	uint32_t md_index; /* md blocks: expected index and units per line */
	unsigned md_units;
};

static enum tc_fmt_status decode(const struct codec *c, const void *buf, union host *out,
				 char *why, size_t whylen)
{
	switch (c->kind) {
	case CACHE_SB:
		return tc_fmt_cache_sb_decode(buf, &out->c, why, whylen);
	case BACKING_SB:
		return tc_fmt_backing_sb_decode(buf, &out->b, why, whylen);
	case MD_BLOCK:
		return tc_fmt_md_block_decode(buf, c->md_index, c->md_units, &out->m, why,
					      whylen);
	}
	fail();
	return TC_FMT_OK;
}

static void encode(const struct codec *c, const union host *in, void *buf)
{
	switch (c->kind) {
	case CACHE_SB:
		tc_fmt_cache_sb_encode(&in->c, buf);
		return;
	case BACKING_SB:
		tc_fmt_backing_sb_encode(&in->b, buf);
		return;
	case MD_BLOCK:
		tc_fmt_md_block_encode(&in->m, buf);
		return;
	}
	fail();
}

/* ---- the field table --------------------------------------------------------------- */

enum bad_kind {
	BAD_INT,     /* write @bad little-endian into the field */
	BAD_ZERO,    /* zero the whole field (uuids, names) */
	BAD_ANYBYTE, /* unused volume record: a non-zero byte anywhere is refused */
	FREE,        /* every value is legal */
	RESERVED,    /* every value is legal and ignored */
	CHECKSUM,    /* the checksum itself: only (a) applies */
};

struct field {
	char name[24];   /* the field as the refusal message spells it */
	char where[40];  /* the sub-record the message must also name, "" if none */
	size_t off, size;
	enum bad_kind kind;
	uint64_t bad;
	bool alt;        /* another bad value of a field with a row already */
	enum tc_fmt_status flip_st; /* (a) */
	enum tc_fmt_status bad_st;  /* (b) */
};

struct table {
	struct field f[2048];
	unsigned n;
};

static struct field *add(struct table *t, const char *name, size_t off, size_t size,
			 enum bad_kind kind, uint64_t bad)
{
	struct field *f;

	assert_true(t->n < sizeof(t->f) / sizeof(t->f[0]));
	f = &t->f[t->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->off = off;
	f->size = size;
	f->kind = kind;
	f->bad = bad;
	f->flip_st = TC_FMT_BAD_CHECKSUM;
	f->bad_st = (kind == FREE || kind == RESERVED) ? TC_FMT_OK : TC_FMT_BAD_FIELD;
	return f;
}

/* One row for member @m of on-disk struct @type placed at @base. */
#define ROW(t, base, type, m, kind, bad) \
	add(t, #m, (base) + offsetof(struct type, m), sizeof(((struct type *)0)->m), kind, bad)

static struct field *alt(struct field *f)
{
	f->alt = true;
	return f;
}

static struct field *where(struct field *f, const char *w)
{
	snprintf(f->where, sizeof(f->where), "%s", w);
	return f;
}

static void settings_rows(struct table *t, size_t base, const char *w)
{
	where(ROW(t, base, tc_settings_disk, read_cache, BAD_INT, 2), w);
	alt(where(ROW(t, base, tc_settings_disk, read_cache, BAD_INT, 255), w));
	where(ROW(t, base, tc_settings_disk, write_policy, BAD_INT, 5), w);
	where(ROW(t, base, tc_settings_disk, flush_rate, BAD_INT, 3), w);
	where(ROW(t, base, tc_settings_disk, admission, BAD_INT, 2), w);
	where(ROW(t, base, tc_settings_disk, fill, BAD_INT, 2), w);
	where(ROW(t, base, tc_settings_disk, pad, RESERVED, 0), w);
	where(ROW(t, base, tc_settings_disk, nhit, BAD_INT, 0), w);
	alt(where(ROW(t, base, tc_settings_disk, nhit, BAD_INT, 256), w));
	where(ROW(t, base, tc_settings_disk, pad2, RESERVED, 0), w);
	where(ROW(t, base, tc_settings_disk, seq_cutoff, FREE, 0), w);
}

static struct field *magic_row(struct field *f)
{
	f->flip_st = f->bad_st = TC_FMT_BAD_MAGIC;
	return f;
}

static struct field *version_row(struct field *f)
{
	f->flip_st = f->bad_st = TC_FMT_BAD_VERSION;
	return f;
}

/* The base cache superblock of the field tests: 1 GiB, 64 KiB lines, volumes 1, 2, 6
 * and 64 in use, the others free. */
static const uint8_t base_used[] = { 0, 1, 5, 63 };

static void base_cache_sb(struct tc_cache_sb *sb)
{
	uint64_t s = 0x5eed;

	make_cache_sb(&s, sb, 64 * KIB, GIB, base_used, sizeof(base_used));
	sb->dirty_low_pct = 40;
	sb->dirty_high_pct = 70;
	/* Two ranges with attributes, of volumes 1 and 2 (made 1 GiB for them). */
	sb->vols[0].size = sb->vols[1].size = GIB;
	sb->nregions = 2;
	sb->regions[0].vol = 1;
	sb->regions[0].r = (struct tc_region){ .offset = 64 * KIB, .length = 1 * MIB,
					       .kind = TC_REGION_PINNED };
	sb->regions[1].vol = 2;
	sb->regions[1].r = (struct tc_region){ .offset = 0, .length = 4 * KIB,
					       .kind = TC_REGION_POLICY,
					       .write_policy = TC_WP_WT };
}

static void cache_sb_table(const struct tc_cache_sb *sb, struct table *t)
{
	const size_t b = 0;
	uint64_t end = sb->data_offset + (uint64_t)sb->nslots * sb->line_size;

	t->n = 0;
	magic_row(ROW(t, b, tc_cache_sb_disk, magic, BAD_INT, 0x12345678));
	version_row(ROW(t, b, tc_cache_sb_disk, version, BAD_INT, 2));
	alt(version_row(ROW(t, b, tc_cache_sb_disk, version, BAD_INT, 0)));
	ROW(t, b, tc_cache_sb_disk, generation, FREE, 0);
	ROW(t, b, tc_cache_sb_disk, uuid, BAD_ZERO, 0);
	ROW(t, b, tc_cache_sb_disk, line_size, BAD_INT, 12288);
	alt(ROW(t, b, tc_cache_sb_disk, line_size, BAD_INT, 2048));
	alt(ROW(t, b, tc_cache_sb_disk, line_size, BAD_INT, 128 * KIB));
	alt(ROW(t, b, tc_cache_sb_disk, line_size, BAD_INT, 0));
	ROW(t, b, tc_cache_sb_disk, nslots, BAD_INT, TC_MIN_LINES - 1);
	alt(ROW(t, b, tc_cache_sb_disk, nslots, BAD_INT, 0));
	ROW(t, b, tc_cache_sb_disk, md_offset, BAD_INT, 4096);
	ROW(t, b, tc_cache_sb_disk, md_blocks, BAD_INT, sb->md_blocks + 1);
	alt(ROW(t, b, tc_cache_sb_disk, md_blocks, BAD_INT, sb->md_blocks - 1));
	ROW(t, b, tc_cache_sb_disk, data_offset, BAD_INT, sb->data_offset + 4096);
	/* aligned but overlapping the last metadata block pair */
	alt(ROW(t, b, tc_cache_sb_disk, data_offset, BAD_INT, sb->data_offset - 64 * KIB));
	ROW(t, b, tc_cache_sb_disk, dev_size, BAD_INT, end - 1);
	alt(ROW(t, b, tc_cache_sb_disk, dev_size, BAD_INT, 0));
	ROW(t, b, tc_cache_sb_disk, commit_interval_ms, BAD_INT, 0);
	alt(ROW(t, b, tc_cache_sb_disk, commit_interval_ms, BAD_INT, 3600001));
	ROW(t, b, tc_cache_sb_disk, replacement, BAD_INT, TC_REPL_WTINYLFU_HC + 1);
	ROW(t, b, tc_cache_sb_disk, dirty_low_pct, BAD_INT, 70);
	alt(ROW(t, b, tc_cache_sb_disk, dirty_low_pct, BAD_INT, 255));
	ROW(t, b, tc_cache_sb_disk, dirty_high_pct, BAD_INT, 101);
	alt(ROW(t, b, tc_cache_sb_disk, dirty_high_pct, BAD_INT, 40));
	ROW(t, b, tc_cache_sb_disk, clean_shutdown, BAD_INT, 2);
	ROW(t, b, tc_cache_sb_disk, commit_seq, FREE, 0);
	ROW(t, b, tc_cache_sb_disk, csum_off, BAD_INT, 2);
	ROW(t, b, tc_cache_sb_disk, wb_guard, BAD_INT, 3);
	ROW(t, b, tc_cache_sb_disk, reserved, RESERVED, 0);
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		size_t r = offsetof(struct tc_cache_sb_disk, vols) +
			   i * sizeof(struct tc_vol_rec_disk);
		char w[40];

		snprintf(w, sizeof(w), "volume record %u", i);
		if (sb->vols[i].id == 0) {
			where(add(t, "volume record", r, sizeof(struct tc_vol_rec_disk),
				  BAD_ANYBYTE, 0), w);
			continue;
		}
		where(ROW(t, r, tc_vol_rec_disk, id, BAD_INT, i + 2), w);
		alt(where(ROW(t, r, tc_vol_rec_disk, id, BAD_INT, i == 0 ? 64 : 1), w));
		where(ROW(t, r, tc_vol_rec_disk, priority, BAD_INT, 3), w);
		where(ROW(t, r, tc_vol_rec_disk, pad, RESERVED, 0), w);
		where(ROW(t, r, tc_vol_rec_disk, backing_uuid, BAD_ZERO, 0), w);
		where(ROW(t, r, tc_vol_rec_disk, name, BAD_ZERO, 0), w);
		where(ROW(t, r, tc_vol_rec_disk, size, BAD_INT, 4097), w);
		alt(where(ROW(t, r, tc_vol_rec_disk, size, BAD_INT,
			      ((uint64_t)sb->line_size << 32) + 4096), w));
		where(ROW(t, r, tc_vol_rec_disk, backing_gen, FREE, 0), w);
		settings_rows(t, r + offsetof(struct tc_vol_rec_disk, settings), w);
		where(ROW(t, r, tc_vol_rec_disk, share_reserve, BAD_INT, 0x80000000u | 101), w);
		where(ROW(t, r, tc_vol_rec_disk, share_cap, BAD_INT, 0x80000000u | 255), w);
	}
	/* The range table: header, used entries, then unused ones (all zero). */
	const size_t rt = offsetof(struct tc_cache_sb_disk, regions);
	ROW(t, rt, tc_region_tab_disk, magic, BAD_INT, 0x12345678);
	ROW(t, rt, tc_region_tab_disk, version, BAD_INT, 2)->bad_st = TC_FMT_BAD_VERSION;
	ROW(t, rt, tc_region_tab_disk, count, BAD_INT, TC_REGIONS_MAX + 1);
	ROW(t, rt, tc_region_tab_disk, reserved, RESERVED, 0);
	for (unsigned i = 0; i < TC_REGIONS_MAX; i++) {
		size_t e = rt + offsetof(struct tc_region_tab_disk, e) +
			   i * sizeof(struct tc_region_disk);
		char w[40];

		snprintf(w, sizeof(w), "entry %u", i);
		if (i >= sb->nregions) {
			where(add(t, "entry", e, sizeof(struct tc_region_disk), BAD_ANYBYTE, 0), w);
			continue;
		}
		where(ROW(t, e, tc_region_disk, vol, BAD_INT, 3), w);
		alt(where(ROW(t, e, tc_region_disk, vol, BAD_INT, 0), w));
		alt(where(ROW(t, e, tc_region_disk, vol, BAD_INT, TC_MAX_VOLUMES + 1), w));
		where(ROW(t, e, tc_region_disk, kind, BAD_INT, 4), w);
		alt(where(ROW(t, e, tc_region_disk, kind, BAD_INT, 0), w));
		where(ROW(t, e, tc_region_disk, write_policy, BAD_INT, i ? TC_WP_INSTWB : 1), w);
		where(ROW(t, e, tc_region_disk, pad, RESERVED, 0), w);
		where(ROW(t, e, tc_region_disk, offset, BAD_INT, 100), w);
		alt(where(ROW(t, e, tc_region_disk, offset, BAD_INT, GIB), w));
		where(ROW(t, e, tc_region_disk, length, BAD_INT, 0), w);
		alt(where(ROW(t, e, tc_region_disk, length, BAD_INT, GIB + 4 * KIB), w));
	}
	ROW(t, b, tc_cache_sb_disk, pad, RESERVED, 0);
	ROW(t, b, tc_cache_sb_disk, checksum, CHECKSUM, 0);
}

static void base_backing_sb(struct tc_backing_sb *sb)
{
	uint64_t s = 0xbac;

	make_backing_sb(&s, sb);
	sb->dev_size = 10 * GIB + MIB;
	sb->size = 10 * GIB;
}

static void backing_sb_table(const struct tc_backing_sb *sb, struct table *t)
{
	const size_t b = 0;

	t->n = 0;
	magic_row(ROW(t, b, tc_backing_sb_disk, magic, BAD_INT, TC_CACHE_MAGIC));
	version_row(ROW(t, b, tc_backing_sb_disk, version, BAD_INT, 2));
	ROW(t, b, tc_backing_sb_disk, generation, FREE, 0);
	ROW(t, b, tc_backing_sb_disk, uuid, BAD_ZERO, 0);
	ROW(t, b, tc_backing_sb_disk, name, BAD_ZERO, 0);
	ROW(t, b, tc_backing_sb_disk, dev_size, BAD_INT, TC_BACKING_DATA_OFFSET - 1);
	alt(ROW(t, b, tc_backing_sb_disk, dev_size, BAD_INT, 0));
	ROW(t, b, tc_backing_sb_disk, data_offset, BAD_INT, 0);
	alt(ROW(t, b, tc_backing_sb_disk, data_offset, BAD_INT, 2 * MIB));
	ROW(t, b, tc_backing_sb_disk, size, BAD_INT, sb->size + 4096);
	alt(ROW(t, b, tc_backing_sb_disk, size, BAD_INT, 4097));
	ROW(t, b, tc_backing_sb_disk, cache_uuid, FREE, 0);
	ROW(t, b, tc_backing_sb_disk, attach_gen, FREE, 0);
	settings_rows(t, offsetof(struct tc_backing_sb_disk, settings), "settings");
	ROW(t, b, tc_backing_sb_disk, stripe_size, BAD_INT, 3 * 4096);
	alt(ROW(t, b, tc_backing_sb_disk, stripe_size, BAD_INT, 2048));
	alt(ROW(t, b, tc_backing_sb_disk, stripe_size, BAD_INT, TC_STRIPE_MAX * 2));
	ROW(t, b, tc_backing_sb_disk, pad, RESERVED, 0);
	ROW(t, b, tc_backing_sb_disk, checksum, CHECKSUM, 0);
}

#define MD_BASE_INDEX 7u
#define MD_BASE_NENTRIES 200u
#define MD_BASE_UNITS 4u

static void base_md_block(struct tc_md_block *b)
{
	uint64_t s = 0x3d;

	make_md_block(&s, b, MD_BASE_INDEX, MD_BASE_NENTRIES, MD_BASE_UNITS);
}

static void md_block_table(const struct tc_md_block *blk, struct table *t)
{
	const size_t b = 0;

	t->n = 0;
	magic_row(ROW(t, b, tc_md_block_disk, magic, BAD_INT, TC_BACKING_MAGIC));
	version_row(ROW(t, b, tc_md_block_disk, version, BAD_INT, 2));
	ROW(t, b, tc_md_block_disk, nentries, BAD_INT, 254);
	alt(ROW(t, b, tc_md_block_disk, nentries, BAD_INT, 65535));
	ROW(t, b, tc_md_block_disk, index, BAD_INT, MD_BASE_INDEX + 1);
	alt(ROW(t, b, tc_md_block_disk, index, BAD_INT, 0));
	ROW(t, b, tc_md_block_disk, reserved, RESERVED, 0);
	ROW(t, b, tc_md_block_disk, seq, FREE, 0);
	ROW(t, b, tc_md_block_disk, cache_uuid, BAD_ZERO, 0);
	for (unsigned i = 0; i < TC_MD_ENTRIES_PER_BLOCK; i++) {
		size_t e = offsetof(struct tc_md_block_disk, e) +
			   i * sizeof(struct tc_md_entry_disk);
		const struct tc_md_entry *h = &blk->e[i];
		char w[40];

		snprintf(w, sizeof(w), "entry %u", i);
		if (i < blk->nentries && h->vol != 0) {
			where(ROW(t, e, tc_md_entry_disk, line_no, BAD_INT, 1ull << 32), w);
			where(ROW(t, e, tc_md_entry_disk, vol, BAD_INT, TC_MAX_VOLUMES + 1), w);
			alt(where(ROW(t, e, tc_md_entry_disk, vol, BAD_INT, 255), w));
			where(ROW(t, e, tc_md_entry_disk, valid, BAD_INT, h->valid | 0x10), w);
			alt(where(ROW(t, e, tc_md_entry_disk, valid, BAD_INT, 0x8000), w));
			where(ROW(t, e, tc_md_entry_disk, dirty, BAD_INT, 0x10), w);
		} else {
			/* free slot, or beyond nentries: everything must stay zero */
			where(ROW(t, e, tc_md_entry_disk, line_no, BAD_INT, 5), w);
			where(ROW(t, e, tc_md_entry_disk, vol,
				  BAD_INT, i < blk->nentries ? TC_MAX_VOLUMES + 1 : 1), w);
			where(ROW(t, e, tc_md_entry_disk, valid, BAD_INT, 1), w);
			where(ROW(t, e, tc_md_entry_disk, dirty, BAD_INT, 1), w);
		}
		where(ROW(t, e, tc_md_entry_disk, reserved, RESERVED, 0), w);
		where(ROW(t, e, tc_md_entry_disk, reserved2, RESERVED, 0), w);
	}
	ROW(t, b, tc_md_block_disk, checksum, CHECKSUM, 0);
}

/* ---- the corruption walk ---------------------------------------------------------- */

/* @needle occurs in @hay not followed by a digit ("entry 1" must not match "entry 12"). */
static bool has_word(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		if (p[n] < '0' || p[n] > '9')
			return true;
	return false;
}

/* The message of a BAD_INT refusal shows the value after the field's name, in decimal
 * or hex. */
static bool names_value(const char *why, const char *name, uint64_t v)
{
	char a[64], b[64], c[64];

	snprintf(a, sizeof(a), "%s %" PRIu64, name, v);
	snprintf(b, sizeof(b), "%s=0x%" PRIx64, name, v);
	snprintf(c, sizeof(c), "%s 0x%08" PRIx64, name, v);
	return has_word(why, a) || has_word(why, b) || has_word(why, c);
}

static void check_refusal(const struct codec *c, const struct field *f, const char *why,
			  uint64_t bad)
{
	if (!strstr(why, c->what) || !strstr(why, f->name) ||
	    (f->where[0] && !has_word(why, f->where)) ||
	    (f->kind == BAD_INT && !names_value(why, f->name, bad)))
		fail_msg("%s: field %s (%s) bad value %" PRIu64 ": message \"%s\" does not "
			 "name the structure, the field and the value", c->what, f->name,
			 f->where, bad, why);
}

/* Every byte of the structure belongs to exactly one (non-alternate) row. */
static void check_coverage(const struct codec *c, const struct table *t)
{
	uint8_t *cov = calloc(1, c->size);

	assert_non_null(cov);
	for (unsigned i = 0; i < t->n; i++) {
		if (t->f[i].alt)
			continue;
		for (size_t k = 0; k < t->f[i].size; k++)
			cov[t->f[i].off + k]++;
	}
	for (size_t k = 0; k < c->size; k++)
		if (cov[k] != 1)
			fail_msg("%s: byte %zu is in %u rows of the field table", c->what, k,
				 cov[k]);
	free(cov);
}

static void run_table(const struct codec *c, const uint8_t *good, const struct table *t)
{
	uint8_t *buf = malloc(c->size), *re = malloc(c->size);
	union host *h = malloc(sizeof(*h));
	char why[512];
	enum tc_fmt_status st;

	assert_non_null(buf);
	assert_non_null(re);
	assert_non_null(h);
	check_coverage(c, t);
	assert_int_equal(decode(c, good, h, why, sizeof(why)), TC_FMT_OK);

	for (unsigned i = 0; i < t->n; i++) {
		const struct field *f = &t->f[i];

		/* (a) each byte flipped, checksum not fixed */
		for (size_t k = 0; k < f->size && !f->alt; k++) {
			memcpy(buf, good, c->size);
			buf[f->off + k] ^= 0xff;
			st = decode(c, buf, h, why, sizeof(why));
			if (st != f->flip_st)
				fail_msg("%s: %s %s byte %zu flipped: %s, expected %s", c->what,
					 f->where, f->name, k, tc_fmt_status_name(st),
					 tc_fmt_status_name(f->flip_st));
		}

		/* (b) out of range (or any value) with a correct checksum */
		memcpy(buf, good, c->size);
		switch (f->kind) {
		case CHECKSUM:
			continue;
		case BAD_ANYBYTE:
			for (size_t k = 0; k < f->size; k++) {
				memcpy(buf, good, c->size);
				buf[f->off + k] = 0x01;
				rechecksum(buf, c->size);
				why[0] = '\0';
				assert_int_equal(decode(c, buf, h, why, sizeof(why)),
						 TC_FMT_BAD_FIELD);
				check_refusal(c, f, why, 0);
			}
			continue;
		case BAD_INT:
			put_le(buf + f->off, f->size, f->bad);
			/* the row must really change the value */
			assert_true(memcmp(buf + f->off, good + f->off, f->size) != 0);
			break;
		case BAD_ZERO:
			memset(buf + f->off, 0, f->size);
			break;
		case FREE:
		case RESERVED:
			for (size_t k = 0; k < f->size; k++)
				buf[f->off + k] ^= 0xff;
			break;
		}
		rechecksum(buf, c->size);
		why[0] = '\0';
		st = decode(c, buf, h, why, sizeof(why));
		if (st != f->bad_st)
			fail_msg("%s: %s %s set out of range: %s (\"%s\"), expected %s", c->what,
				 f->where, f->name, tc_fmt_status_name(st), why,
				 tc_fmt_status_name(f->bad_st));
		if (st == TC_FMT_BAD_FIELD) {
			check_refusal(c, f, why, f->bad);
		} else if (st == TC_FMT_OK) {
			/* a free field round-trips; reserved bytes are dropped */
			encode(c, h, re);
			assert_memory_equal(re, f->kind == FREE ? buf : good, c->size);
		} else {
			assert_non_null(strstr(why, f->name));
		}
	}
	free(buf);
	free(re);
	free(h);
}

static void test_cache_sb_fields(void **state)
{
	struct table *t = calloc(1, sizeof(*t));
	struct codec c = { CACHE_SB, "cache superblock", TC_CACHE_SB_SIZE, 0, 0 };
	struct tc_cache_sb sb;
	uint8_t good[TC_CACHE_SB_SIZE];

	assert_non_null(t);
	base_cache_sb(&sb);
	tc_fmt_cache_sb_encode(&sb, good);
	cache_sb_table(&sb, t);
	run_table(&c, good, t);
	free(t);
}

static void test_backing_sb_fields(void **state)
{
	struct table *t = calloc(1, sizeof(*t));
	struct codec c = { BACKING_SB, "backing superblock", TC_BACKING_SB_SIZE, 0, 0 };
	struct tc_backing_sb sb;
	uint8_t good[TC_BACKING_SB_SIZE];

	assert_non_null(t);
	base_backing_sb(&sb);
	tc_fmt_backing_sb_encode(&sb, good);
	backing_sb_table(&sb, t);
	run_table(&c, good, t);
	free(t);
}

static void test_md_block_fields(void **state)
{
	struct table *t = calloc(1, sizeof(*t));
	struct codec c = { MD_BLOCK, "md block 7", TC_MD_BLOCK_SIZE, MD_BASE_INDEX,
			   MD_BASE_UNITS };
	struct tc_md_block b;
	uint8_t good[TC_MD_BLOCK_SIZE];

	assert_non_null(t);
	base_md_block(&b);
	tc_fmt_md_block_encode(&b, good);
	md_block_table(&b, t);
	run_table(&c, good, t);
	free(t);
}

/* ---- every byte flipped ----------------------------------------------------------- */

static void flip_every_byte(const struct codec *c, const uint8_t *good, size_t magic_size,
			    size_t version_off, size_t version_size)
{
	static const uint8_t patterns[] = { 0x01, 0x80, 0xff };
	uint8_t *buf = malloc(c->size);
	union host *h = malloc(sizeof(*h));

	assert_non_null(buf);
	assert_non_null(h);
	for (size_t p = 0; p < sizeof(patterns); p++) {
		for (size_t k = 0; k < c->size; k++) {
			enum tc_fmt_status expect = TC_FMT_BAD_CHECKSUM, st;

			if (k < magic_size)
				expect = TC_FMT_BAD_MAGIC;
			else if (k >= version_off && k < version_off + version_size)
				expect = TC_FMT_BAD_VERSION;
			memcpy(buf, good, c->size);
			buf[k] ^= patterns[p];
			st = decode(c, buf, h, NULL, 0);
			if (st != expect)
				fail_msg("%s: byte %zu ^ 0x%02x: %s, expected %s", c->what, k,
					 patterns[p], tc_fmt_status_name(st),
					 tc_fmt_status_name(expect));
		}
	}
	free(buf);
	free(h);
}

static void test_flip_every_byte(void **state)
{
	struct codec cc = { CACHE_SB, "cache superblock", TC_CACHE_SB_SIZE, 0, 0 };
	struct codec bc = { BACKING_SB, "backing superblock", TC_BACKING_SB_SIZE, 0, 0 };
	struct codec mc = { MD_BLOCK, "md block 7", TC_MD_BLOCK_SIZE, MD_BASE_INDEX,
			    MD_BASE_UNITS };
	union host *h = malloc(sizeof(*h));
	uint8_t *buf = malloc(TC_CACHE_SB_SIZE);

	assert_non_null(h);
	assert_non_null(buf);
	base_cache_sb(&h->c);
	tc_fmt_cache_sb_encode(&h->c, buf);
	flip_every_byte(&cc, buf, 4, 4, 4);
	base_backing_sb(&h->b);
	tc_fmt_backing_sb_encode(&h->b, buf);
	flip_every_byte(&bc, buf, 4, 4, 4);
	base_md_block(&h->m);
	tc_fmt_md_block_encode(&h->m, buf);
	flip_every_byte(&mc, buf, 4, 4, 2);
	free(h);
	free(buf);
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_cache_sb_roundtrip(void **state)
{
	uint64_t s = 42;
	struct tc_cache_sb *in = malloc(sizeof(*in)), *out = malloc(sizeof(*out));
	uint8_t *buf = malloc(TC_CACHE_SB_SIZE + 1), *re = malloc(TC_CACHE_SB_SIZE);
	char why[256];

	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(buf);
	assert_non_null(re);
	for (int iter = 0; iter < 200; iter++) {
		uint32_t line_size = 4096u << rnd_range(&s, 0, 4);
		uint64_t dev_size = rnd_range(&s, 2 * MIB, 64 * TIB);
		uint8_t used[TC_MAX_VOLUMES];
		unsigned nused = 0;

		for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
			if (rnd(&s) % 4 == 0 || iter == 0)
				used[nused++] = (uint8_t)i;
		make_cache_sb(&s, in, line_size, dev_size, used, nused);

		/* odd address: the codec must not depend on the buffer's alignment */
		tc_fmt_cache_sb_encode(in, buf + 1);
		memset(out, 0xa5, sizeof(*out));
		assert_int_equal(tc_fmt_cache_sb_decode(buf + 1, out, why, sizeof(why)),
				 TC_FMT_OK);
		assert_memory_equal(in, out, sizeof(*in));
		tc_fmt_cache_sb_encode(out, re);
		assert_memory_equal(buf + 1, re, TC_CACHE_SB_SIZE);
	}
	free(in);
	free(out);
	free(buf);
	free(re);
}

/* The byte layout is pinned: little-endian at the offsets format.h states. */
static void test_cache_sb_layout(void **state)
{
	uint64_t s = 7;
	struct tc_cache_sb *in = malloc(sizeof(*in)), *out = malloc(sizeof(*out));
	uint8_t *buf = malloc(TC_CACHE_SB_SIZE);
	const size_t rec = offsetof(struct tc_cache_sb_disk, vols);
	const uint8_t used[] = { 2 };

	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(buf);
	make_cache_sb(&s, in, 16 * KIB, 4 * GIB, used, 1);
	in->clean_shutdown = 1;
	in->generation = 0x0102030405060708ull;
	/* garbage in an unused host record must not reach the disk */
	in->vols[9].id = 0;
	strcpy(in->vols[9].name, "ghost");
	in->vols[9].size = 12345;
	in->vols[9].backing_uuid[3] = 9;
	tc_fmt_cache_sb_encode(in, buf);

	assert_memory_equal(buf, "TCCA", 4);
	assert_int_equal(get_le(buf + 4, 4), TC_FORMAT_VERSION);
	assert_memory_equal(buf + 8, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
	assert_int_equal(get_le(buf + 32, 4), 16 * KIB);
	assert_int_equal(get_le(buf + 36, 4), in->nslots);
	assert_int_equal(get_le(buf + 40, 8), TC_MD_OFFSET);
	assert_int_equal(buf[79], 1);
	assert_int_equal(buf[rec + 2 * 104], 3);
	assert_string_equal((const char *)buf + rec + 2 * 104 + 24, in->vols[2].name);
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		uint8_t zero[104] = { 0 };

		if (i != 2)
			assert_memory_equal(buf + rec + i * 104, zero, 104);
	}
	assert_int_equal(get_le(buf + TC_CACHE_SB_SIZE - 8, 8),
			 XXH64(buf, TC_CACHE_SB_SIZE - 8, 0));

	/* the unused record decodes as all zeros */
	assert_int_equal(tc_fmt_cache_sb_decode(buf, out, NULL, 0), TC_FMT_OK);
	assert_int_equal(out->vols[9].id, 0);
	assert_int_equal(out->vols[9].size, 0);
	assert_string_equal(out->vols[9].name, "");
	assert_true(tc_fmt_uuid_is_zero(out->vols[9].backing_uuid));
	assert_string_equal(out->vols[2].name, in->vols[2].name);
	free(in);
	free(out);
	free(buf);
}

static void test_backing_sb_roundtrip(void **state)
{
	uint64_t s = 99;
	struct tc_backing_sb in, out;
	uint8_t buf[TC_BACKING_SB_SIZE + 3], re[TC_BACKING_SB_SIZE];
	char why[256];

	for (int iter = 0; iter < 500; iter++) {
		make_backing_sb(&s, &in);
		if (iter % 3 == 0)
			in.size = rnd_range(&s, 0, in.size / 4096) * 4096;
		tc_fmt_backing_sb_encode(&in, buf + 3);
		memset(&out, 0x5a, sizeof(out));
		assert_int_equal(tc_fmt_backing_sb_decode(buf + 3, &out, why, sizeof(why)),
				 TC_FMT_OK);
		assert_memory_equal(&in, &out, sizeof(in));
		tc_fmt_backing_sb_encode(&out, re);
		assert_memory_equal(buf + 3, re, sizeof(re));
	}
	/* pinned bytes */
	tc_fmt_backing_sb_encode(&in, buf);
	assert_memory_equal(buf, "TCBK", 4);
	assert_string_equal((const char *)buf + 32, in.name);
	assert_int_equal(get_le(buf + 72, 8), TC_BACKING_DATA_OFFSET);
	assert_int_equal(get_le(buf + 104, 8), in.attach_gen);
	assert_int_equal(get_le(buf + 136, 4), in.stripe_size);
}

static void test_md_block_roundtrip(void **state)
{
	uint64_t s = 5;
	struct tc_md_block *in = malloc(sizeof(*in)), *out = malloc(sizeof(*out));
	uint8_t buf[TC_MD_BLOCK_SIZE + 5], re[TC_MD_BLOCK_SIZE];
	char why[256];

	assert_non_null(in);
	assert_non_null(out);
	for (int iter = 0; iter < 500; iter++) {
		unsigned units = (unsigned)rnd_range(&s, 1, 16);
		unsigned n = iter < 2 ? (unsigned)iter * TC_MD_ENTRIES_PER_BLOCK
				      : (unsigned)rnd_range(&s, 0, TC_MD_ENTRIES_PER_BLOCK);
		uint32_t index = (uint32_t)rnd(&s);

		make_md_block(&s, in, index, n, units);
		tc_fmt_md_block_encode(in, buf + 5);
		memset(out, 0x77, sizeof(*out));
		assert_int_equal(tc_fmt_md_block_decode(buf + 5, index, units, out, why,
							sizeof(why)), TC_FMT_OK);
		assert_memory_equal(in, out, sizeof(*in));
		tc_fmt_md_block_encode(out, re);
		assert_memory_equal(buf + 5, re, sizeof(re));
	}

	/* entries past nentries are not encoded, whatever the host array holds */
	make_md_block(&s, in, 3, 10, 16);
	in->e[10].vol = 4;
	in->e[10].line_no = 77;
	in->e[252].valid = 1;
	tc_fmt_md_block_encode(in, buf);
	for (size_t k = 40 + 10 * 16; k < TC_MD_BLOCK_SIZE - 8; k++)
		assert_int_equal(buf[k], 0);
	assert_int_equal(tc_fmt_md_block_decode(buf, 3, 16, out, why, sizeof(why)),
			 TC_FMT_OK);
	assert_int_equal(out->nentries, 10);
	assert_int_equal(out->e[10].vol, 0);
	assert_memory_equal(buf, "TCMD", 4);
	assert_int_equal(get_le(buf + 6, 2), 10);
	assert_int_equal(get_le(buf + 8, 4), 3);
	free(in);
	free(out);
}

/* ---- refusal order and messages --------------------------------------------------- */

static void test_check_order(void **state)
{
	struct tc_cache_sb *sb = malloc(sizeof(*sb));
	uint8_t *buf = malloc(TC_CACHE_SB_SIZE);
	char why[256];

	assert_non_null(sb);
	assert_non_null(buf);

	/* all zeros (never written): bad magic for all three */
	memset(buf, 0, TC_CACHE_SB_SIZE);
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, sizeof(why)), TC_FMT_BAD_MAGIC);
	assert_string_equal(why, "cache superblock: magic 0x00000000 is not 0x41434354");
	assert_int_equal(tc_fmt_backing_sb_decode(buf, (struct tc_backing_sb *)sb, why,
						  sizeof(why)), TC_FMT_BAD_MAGIC);
	assert_int_equal(tc_fmt_md_block_decode(buf, 0, 16, (struct tc_md_block *)sb, why,
						sizeof(why)), TC_FMT_BAD_MAGIC);
	assert_string_equal(why, "md block 0: magic 0x00000000 is not 0x444d4354");

	base_cache_sb(sb);
	tc_fmt_cache_sb_encode(sb, buf);
	/* a cache superblock is not a backing superblock */
	assert_int_equal(tc_fmt_backing_sb_decode(buf, (struct tc_backing_sb *)sb, why,
						  sizeof(why)), TC_FMT_BAD_MAGIC);

	/* a bad field with a stale checksum is damage, reported as such */
	tc_fmt_cache_sb_encode(sb, buf);
	put_le(buf + 32, 4, 12288);
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, sizeof(why)),
			 TC_FMT_BAD_CHECKSUM);
	assert_non_null(strstr(why, "cache superblock: checksum 0x"));
	rechecksum(buf, TC_CACHE_SB_SIZE);
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, sizeof(why)), TC_FMT_BAD_FIELD);
	assert_string_equal(why, "cache superblock: line_size 12288 is not a power of two "
				 "between 4096 and 65536");

	/* bad version and bad checksum: version first; bad magic beats both */
	put_le(buf + 4, 4, 9);
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, sizeof(why)),
			 TC_FMT_BAD_VERSION);
	assert_string_equal(why, "cache superblock: version 9 is not the supported version 1");
	buf[0] ^= 1;
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, sizeof(why)), TC_FMT_BAD_MAGIC);

	/* why may be NULL or short; a short one is truncated and terminated */
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, NULL, 0), TC_FMT_BAD_MAGIC);
	memset(why, 'x', sizeof(why));
	assert_int_equal(tc_fmt_cache_sb_decode(buf, sb, why, 6), TC_FMT_BAD_MAGIC);
	assert_string_equal(why, "cache");
	assert_int_equal(why[6], 'x');
	free(sb);
	free(buf);
}

/* Names through the backing superblock: patch the raw field, fix the checksum. */
static enum tc_fmt_status decode_with_name(const void *raw, char *why, size_t whylen)
{
	struct tc_backing_sb sb;
	uint8_t buf[TC_BACKING_SB_SIZE];

	base_backing_sb(&sb);
	tc_fmt_backing_sb_encode(&sb, buf);
	memcpy(buf + offsetof(struct tc_backing_sb_disk, name), raw, TC_NAME_MAX);
	rechecksum(buf, sizeof(buf));
	return tc_fmt_backing_sb_decode(buf, &sb, why, whylen);
}

static void test_names(void **state)
{
	static const struct {
		const char *name;
		bool ok;
		const char *msg; /* refusal message tail */
	} cases[] = {
		{ "a", true, NULL },
		{ "db-01.prod_A", true, NULL },
		{ "0123456789012345678901234567890", true, NULL }, /* 31 bytes */
		{ "", false, "name is empty" },
		{ "a/b", false, "name has byte 0x2f at position 1, outside [A-Za-z0-9._-]" },
		{ "a b", false, "name has byte 0x20 at position 1" },
		{ "caf\xc3\xa9", false, "name has byte 0xc3 at position 3" },
		{ "\n", false, "name has byte 0x0a at position 0" },
	};
	char raw[TC_NAME_MAX], why[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(raw, 0, sizeof(raw));
		memcpy(raw, cases[i].name, strlen(cases[i].name));
		why[0] = '\0';
		assert_int_equal(decode_with_name(raw, why, sizeof(why)),
				 cases[i].ok ? TC_FMT_OK : TC_FMT_BAD_FIELD);
		if (!cases[i].ok && !strstr(why, cases[i].msg))
			fail_msg("name \"%s\": \"%s\" lacks \"%s\"", cases[i].name, why,
				 cases[i].msg);
	}

	/* 32 bytes, no terminator */
	memset(raw, 'a', sizeof(raw));
	assert_int_equal(decode_with_name(raw, why, sizeof(why)), TC_FMT_BAD_FIELD);
	assert_non_null(strstr(why, "backing superblock: name is not NUL-terminated"));

	/* bytes after the terminator must be zero, as the encoder writes them */
	memset(raw, 0, sizeof(raw));
	strcpy(raw, "db");
	raw[20] = 'x';
	assert_int_equal(decode_with_name(raw, why, sizeof(why)), TC_FMT_BAD_FIELD);
	assert_non_null(strstr(why, "name \"db\" has non-zero bytes after its terminator"));

	/* the encoder cuts a too-long host name at 31 bytes and pads with zeros */
	{
		struct tc_backing_sb sb, out;
		uint8_t buf[TC_BACKING_SB_SIZE];

		base_backing_sb(&sb);
		memset(sb.name, 'z', sizeof(sb.name));
		tc_fmt_backing_sb_encode(&sb, buf);
		assert_int_equal(tc_fmt_backing_sb_decode(buf, &out, why, sizeof(why)),
				 TC_FMT_OK);
		assert_int_equal(strlen(out.name), TC_NAME_MAX - 1);
	}
}

/* Valid bits beyond the line's units are refused at each line size. */
static void test_md_units(void **state)
{
	struct tc_md_block *b = malloc(sizeof(*b)), *out = malloc(sizeof(*out));
	uint8_t buf[TC_MD_BLOCK_SIZE];
	char why[256];

	assert_non_null(b);
	assert_non_null(out);
	for (unsigned units = 1; units <= 16; units *= 2) {
		uint16_t top = (uint16_t)(1u << (units - 1));

		memset(b, 0, sizeof(*b));
		b->index = 1;
		b->cache_uuid[0] = 1;
		b->nentries = 1;
		b->e[0].vol = 1;
		b->e[0].line_no = UINT32_MAX;
		b->e[0].valid = top;
		b->e[0].dirty = top;
		tc_fmt_md_block_encode(b, buf);
		assert_int_equal(tc_fmt_md_block_decode(buf, 1, units, out, why, sizeof(why)),
				 TC_FMT_OK);
		assert_int_equal(out->e[0].line_no, UINT32_MAX);
		if (units == 16)
			continue;
		b->e[0].valid = (uint16_t)(top << 1);
		b->e[0].dirty = 0;
		tc_fmt_md_block_encode(b, buf);
		assert_int_equal(tc_fmt_md_block_decode(buf, 1, units, out, why, sizeof(why)),
				 TC_FMT_BAD_FIELD);
		assert_non_null(strstr(why, "md block 1: entry 0: valid=0x"));
	}
	/* the example of format.h, word for word */
	b->index = 7;
	b->e[0].valid = 0x3;
	b->e[0].dirty = 0x7;
	tc_fmt_md_block_encode(b, buf);
	assert_int_equal(tc_fmt_md_block_decode(buf, 7, 16, out, why, sizeof(why)),
			 TC_FMT_BAD_FIELD);
	assert_string_equal(why, "md block 7: entry 0: valid=0x3 dirty=0x7: dirty bits "
				 "outside valid bits");
	/* a block read from the wrong place */
	assert_int_equal(tc_fmt_md_block_decode(buf, 8, 16, out, why, sizeof(why)),
			 TC_FMT_BAD_FIELD);
	assert_string_equal(why, "md block 8: index 7 is not the expected 8");
	free(b);
	free(out);
}

/* ---- settings, names of statuses, uuids ------------------------------------------- */

static void test_settings_check(void **state)
{
	struct tc_volume_settings s;
	char why[128];

	default_settings(&s);
	assert_int_equal(tc_fmt_settings_check(&s, why, sizeof(why)), TC_FMT_OK);
	/* the upper and lower ends of every range are legal */
	s.read_cache = false;
	s.write_policy = TC_WP_PT;
	s.flush_rate = TC_FLUSH_HIGH;
	s.admission = TC_ADMIT_NHIT;
	s.fill = TC_FILL_LINE;
	s.nhit = 1;
	s.seq_cutoff = UINT64_MAX;
	assert_int_equal(tc_fmt_settings_check(&s, NULL, 0), TC_FMT_OK);
	s.nhit = 255;
	s.write_policy = TC_WP_WT;
	s.flush_rate = TC_FLUSH_LOW;
	s.seq_cutoff = 0;
	assert_int_equal(tc_fmt_settings_check(&s, NULL, 0), TC_FMT_OK);

#define BAD(field, value, msg)                                                         \
	do {                                                                           \
		default_settings(&s);                                                  \
		s.field = value;                                                       \
		assert_int_equal(tc_fmt_settings_check(&s, why, sizeof(why)),          \
				 TC_FMT_BAD_FIELD);                                    \
		assert_string_equal(why, msg);                                         \
	} while (0)
	BAD(write_policy, 5, "settings: write_policy 5 is not between 0 and 4");
	BAD(write_policy, 255, "settings: write_policy 255 is not between 0 and 4");
	BAD(flush_rate, 3, "settings: flush_rate 3 is not between 0 and 2");
	BAD(admission, 2, "settings: admission 2 is not between 0 and 1");
	BAD(fill, 2, "settings: fill 2 is not between 0 and 1");
	BAD(nhit, 0, "settings: nhit 0 is not between 1 and 255");
	BAD(nhit, 256, "settings: nhit 256 is not between 1 and 255");
#undef BAD
}

static void test_status_names(void **state)
{
	assert_string_equal(tc_fmt_status_name(TC_FMT_OK), "ok");
	assert_string_equal(tc_fmt_status_name(TC_FMT_BAD_MAGIC), "bad magic");
	assert_string_equal(tc_fmt_status_name(TC_FMT_BAD_VERSION), "bad version");
	assert_string_equal(tc_fmt_status_name(TC_FMT_BAD_CHECKSUM), "bad checksum");
	assert_string_equal(tc_fmt_status_name(TC_FMT_BAD_FIELD), "bad field");
	assert_string_equal(tc_fmt_status_name((enum tc_fmt_status)42), "unknown status");
}

static void test_uuid(void **state)
{
	static const uint8_t seq[16] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
					 0x08, 0x09, 0x0a, 0x0b, 0xfc, 0xdd, 0xae, 0xff };
	uint8_t a[16], b[16], zero[16] = { 0 };
	char str[37];

	tc_fmt_uuid_str(seq, str);
	assert_string_equal(str, "00010203-0405-0607-0809-0a0bfcddaeff");
	assert_int_equal(strlen(str), 36);
	assert_true(tc_fmt_uuid_is_zero(zero));
	zero[15] = 1;
	assert_false(tc_fmt_uuid_is_zero(zero));

	tc_fmt_uuid_generate(a);
	tc_fmt_uuid_generate(b);
	assert_false(tc_fmt_uuid_is_zero(a));
	assert_true(memcmp(a, b, 16) != 0);
	assert_int_equal(a[6] >> 4, 4);         /* version 4 */
	assert_int_equal(a[8] >> 6, 2);         /* RFC 4122 variant */
	tc_fmt_uuid_str(a, str);
	assert_int_equal(str[14], '4');
	assert_true(str[19] == '8' || str[19] == '9' || str[19] == 'a' || str[19] == 'b');
}

/* ---- geometry --------------------------------------------------------------------- */

static uint64_t g_align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The layout rule, written out independently of format.c. */
static uint64_t g_data_offset(uint64_t nslots, uint32_t line_size)
{
	uint64_t md_blocks = (nslots + 252) / 253;

	return g_align_up(65536 + md_blocks * 8192, line_size > 65536 ? line_size : 65536);
}

static void check_geometry(uint64_t dev_size, uint32_t line_size)
{
	struct tc_cache_sb *sb = calloc(1, sizeof(*sb)), *out = malloc(sizeof(*sb));
	uint8_t *buf = malloc(TC_CACHE_SB_SIZE);
	char why[256];
	int rc;

	assert_non_null(sb);
	assert_non_null(out);
	assert_non_null(buf);
	rc = tc_fmt_cache_geometry(dev_size, line_size, sb);
	if (rc == -ENOSPC) {
		/* then not even TC_MIN_LINES fit */
		assert_true(g_data_offset(TC_MIN_LINES, line_size) +
			    (uint64_t)TC_MIN_LINES * line_size > dev_size);
		goto out;
	}
	assert_int_equal(rc, 0);
	assert_true(sb->nslots >= TC_MIN_LINES);
	assert_int_equal(sb->md_offset, TC_MD_OFFSET);
	assert_int_equal(sb->md_blocks, (sb->nslots + 252ull) / 253);
	assert_int_equal(sb->data_offset, g_data_offset(sb->nslots, line_size));
	assert_int_equal(sb->data_offset % line_size, 0);
	assert_int_equal(sb->data_offset % 65536, 0);
	assert_true(sb->data_offset >= TC_MD_OFFSET + sb->md_blocks * 2 * TC_MD_BLOCK_SIZE);
	assert_true(sb->data_offset + (uint64_t)sb->nslots * line_size <= dev_size);
	/* largest: one more line does not fit (unless the 32-bit count is exhausted) */
	if (sb->nslots != UINT32_MAX)
		assert_true(g_data_offset(sb->nslots + 1ull, line_size) +
			    (sb->nslots + 1ull) * line_size > dev_size);

	/* what the geometry produces, the decoder accepts */
	sb->line_size = line_size;
	sb->dev_size = dev_size;
	sb->uuid[0] = 1;
	sb->commit_interval_ms = 1000;
	sb->dirty_low_pct = 40;
	sb->dirty_high_pct = 70;
	tc_fmt_cache_sb_encode(sb, buf);
	if (tc_fmt_cache_sb_decode(buf, out, why, sizeof(why)) != TC_FMT_OK)
		fail_msg("geometry of %" PRIu64 " / %u refused: %s", dev_size, line_size, why);
out:
	free(sb);
	free(out);
	free(buf);
}

static void test_geometry_exact(void **state)
{
	static const struct {
		uint64_t dev_size;
		uint32_t line_size;
		uint32_t nslots;
		uint64_t md_blocks, data_offset;
	} cases[] = {
		/* 16374 lines: ceil(16374/253) = 65 blocks, 64 KiB + 65 * 8 KiB = 598016,
		 * aligned up to 655360; 655360 + 16374 * 65536 = 1 GiB exactly. */
		{ GIB, 65536, 16374, 65, 655360 },
		/* ceil(260064/253) = 1028 blocks: 65536 + 1028 * 8192 = 8486912 -> 8519680;
		 * 8519680 + 260064 * 4096 = 1 GiB exactly; 260065 lines would not fit. */
		{ GIB, 4096, 260064, 1028, 8519680 },
		/* smallest caches: one block pair, data at 128 KiB, 16 lines */
		{ 131072 + 16 * 65536, 65536, 16, 1, 131072 },
		{ 131072 + 16 * 4096, 4096, 16, 1, 131072 },
		/* 17 lines of 4 KiB need 4 KiB more */
		{ 131072 + 17 * 4096 - 1, 4096, 16, 1, 131072 },
		{ 131072 + 17 * 4096, 4096, 17, 1, 131072 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tc_cache_sb sb;

		memset(&sb, 0, sizeof(sb));
		assert_int_equal(tc_fmt_cache_geometry(cases[i].dev_size, cases[i].line_size,
						       &sb), 0);
		assert_int_equal(sb.nslots, cases[i].nslots);
		assert_int_equal(sb.md_blocks, cases[i].md_blocks);
		assert_int_equal(sb.data_offset, cases[i].data_offset);
		assert_int_equal(sb.md_offset, TC_MD_OFFSET);
		check_geometry(cases[i].dev_size, cases[i].line_size);
	}
}

static void test_geometry_errors(void **state)
{
	struct tc_cache_sb sb;

	memset(&sb, 0, sizeof(sb));
	assert_int_equal(tc_fmt_cache_geometry(131072 + 16 * 65536 - 1, 65536, &sb), -ENOSPC);
	assert_int_equal(tc_fmt_cache_geometry(131072 + 16 * 4096 - 1, 4096, &sb), -ENOSPC);
	assert_int_equal(tc_fmt_cache_geometry(0, 4096, &sb), -ENOSPC);
	assert_int_equal(tc_fmt_cache_geometry(65536, 4096, &sb), -ENOSPC);
	assert_int_equal(sb.nslots, 0); /* untouched on error */
	assert_int_equal(tc_fmt_cache_geometry(GIB, 12288, &sb), -EINVAL);
	assert_int_equal(tc_fmt_cache_geometry(GIB, 2048, &sb), -EINVAL);
	assert_int_equal(tc_fmt_cache_geometry(GIB, 128 * 1024, &sb), -EINVAL);
	assert_int_equal(tc_fmt_cache_geometry(GIB, 0, &sb), -EINVAL);
}

static void test_geometry_invariants(void **state)
{
	uint64_t s = 2024;

	for (uint32_t line_size = 4096; line_size <= 65536; line_size *= 2) {
		uint64_t min = g_data_offset(TC_MIN_LINES, line_size) +
			       (uint64_t)TC_MIN_LINES * line_size;

		/* around the minimum, and around every block boundary of the first ones */
		for (uint64_t d = min - 3 * 4096; d <= min + 300 * (uint64_t)line_size;
		     d += 4096)
			check_geometry(d, line_size);
		/* odd sizes (not multiples of 512) and many scales */
		for (int i = 0; i < 300; i++) {
			uint64_t d = rnd_range(&s, min - 1, 4 * TIB >> (rnd(&s) % 30));

			check_geometry(d, line_size);
		}
		/* where the 32-bit line count runs out */
		check_geometry(((uint64_t)line_size << 32) + GIB, line_size);
		check_geometry(UINT64_MAX, line_size);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_sb_roundtrip),
		cmocka_unit_test(test_cache_sb_layout),
		cmocka_unit_test(test_backing_sb_roundtrip),
		cmocka_unit_test(test_md_block_roundtrip),
		cmocka_unit_test(test_cache_sb_fields),
		cmocka_unit_test(test_backing_sb_fields),
		cmocka_unit_test(test_md_block_fields),
		cmocka_unit_test(test_flip_every_byte),
		cmocka_unit_test(test_check_order),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_md_units),
		cmocka_unit_test(test_settings_check),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_uuid),
		cmocka_unit_test(test_geometry_exact),
		cmocka_unit_test(test_geometry_errors),
		cmocka_unit_test(test_geometry_invariants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
