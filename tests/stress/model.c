/* SPDX-License-Identifier: MIT */
/*
 * model.c - the reference model of tests/stress (see model.h for the rules).
 *
 * Storage: one struct sector per 512-byte sector.  Its history is a small vector of
 * entries, inline while it holds a single entry (the common case once a base rises),
 * on the heap otherwise:
 *
 *   sector:  [ e0 | e1 | ... | e_base | ... | e_n-1 ]     busy: e_n-1 is in flight
 *                              ^ durable point
 *
 * An entry is a 32-bit value and the completion sequence of its request.  The value
 * is a write id (>= 1) or 0 for zeros; TC_MAYBE_PREV on top means "or the previous
 * value" (DISCARD is zeros | TC_MAYBE_PREV, a failed write is its id | TC_MAYBE_PREV).
 * So resolving an entry walks back through TC_MAYBE_PREV entries to the first plain
 * one, and compaction keeps the base's chain: everything before the last plain entry
 * at or below the base is dropped.
 *
 * Completion sequences: every completed request takes the next number of a counter of
 * the model.  A flush remembers the counter at submission; at completion each sector
 * raises its base to its newest entry numbered at or below it.  Writes to one sector
 * never overlap, so a sector's entries complete in order and the numbers rise along it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "model.h"

#define TC_MAYBE_PREV 0x80000000u   /* value flag: or the previous value */
#define TC_VALUE_MASK 0x7fffffffu
#define TC_SEQ_INFLIGHT UINT32_MAX

struct entry {
	uint32_t value;     /* write id, 0 = zeros; | TC_MAYBE_PREV */
	uint32_t seq;       /* completion sequence; TC_SEQ_INFLIGHT while in flight */
};

struct sector {
	union {
		struct entry one;       /* cap == 0: the only entry */
		struct entry *vec;      /* cap > 0 */
	} h;
	uint32_t n;         /* entries */
	uint32_t cap;       /* heap capacity, 0 = inline */
	uint32_t base;      /* index of the durable entry */
	uint32_t busy;      /* 1: the last entry is in flight */
};

struct volume {
	uint64_t nsectors;
	struct sector *s;
};

struct tc_model {
	unsigned nvolumes;
	struct volume *vols;
	uint32_t next_write_id;
	uint32_t seq;       /* completed requests so far */
};

/* ---- data pattern -------------------------------------------------------------- */

struct pattern_header {
	uint32_t magic;
	uint32_t vol;
	uint64_t sector;
	uint32_t write_id;
	uint32_t write_id_inv;  /* ~write_id: one more sanity check on the header */
	uint64_t checksum;      /* XXH64 of the 512 bytes with this field zero */
};
_Static_assert(sizeof(struct pattern_header) == 32, "pattern header is 32 bytes");

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tc_model_pattern(unsigned vol, uint64_t sector, uint32_t write_id, uint8_t *out)
{
	struct pattern_header h = {
		.magic = TC_MODEL_MAGIC,
		.vol = vol,
		.sector = sector,
		.write_id = write_id,
		.write_id_inv = ~write_id,
		.checksum = 0,
	};
	uint64_t state = sector * 0x100000001b3ull ^ ((uint64_t)vol << 56) ^
			 ((uint64_t)write_id << 20);

	memcpy(out, &h, sizeof(h));
	for (size_t off = sizeof(h); off < TC_MODEL_SECTOR; off += 8) {
		uint64_t x = splitmix64(&state);

		memcpy(out + off, &x, 8);
	}
	h.checksum = XXH64(out, TC_MODEL_SECTOR, 0);
	memcpy(out + offsetof(struct pattern_header, checksum), &h.checksum, 8);
}

void tc_model_fill(unsigned vol, uint64_t first_sector, uint64_t nsectors,
		   uint32_t write_id, uint8_t *buf)
{
	for (uint64_t i = 0; i < nsectors; i++)
		tc_model_pattern(vol, first_sector + i, write_id, buf + i * TC_MODEL_SECTOR);
}

static bool all_zero(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

void tc_model_identify(const uint8_t *buf, struct tc_found *out)
{
	struct pattern_header h;
	uint8_t expect[TC_MODEL_SECTOR];

	memset(out, 0, sizeof(*out));
	if (all_zero(buf, TC_MODEL_SECTOR)) {
		out->kind = TC_FOUND_ZEROES;
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != TC_MODEL_MAGIC) {
		out->kind = TC_FOUND_GARBAGE;
		return;
	}
	out->vol = h.vol;
	out->sector = h.sector;
	out->write_id = h.write_id;
	tc_model_pattern(h.vol, h.sector, h.write_id, expect);
	out->kind = memcmp(buf, expect, TC_MODEL_SECTOR) == 0 ? TC_FOUND_WRITE
							      : TC_FOUND_DAMAGED;
}

/* ---- model storage ------------------------------------------------------------- */

static struct entry *entries(struct sector *s)
{
	return s->cap ? s->h.vec : &s->h.one;
}

static const struct entry *centries(const struct sector *s)
{
	return s->cap ? s->h.vec : &s->h.one;
}

static void oom(void)
{
	fprintf(stderr, "model: out of memory\n");
	exit(2);
}

static void push(struct sector *s, struct entry e)
{
	if (s->cap == 0 && s->n == 0) {
		s->h.one = e;
		s->n = 1;
		return;
	}
	if (s->n >= s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 4;
		struct entry *v;

		if (s->cap == 0) {
			v = malloc(cap * sizeof(*v));
			if (!v)
				oom();
			v[0] = s->h.one;
		} else {
			v = realloc(s->h.vec, cap * sizeof(*v));
			if (!v)
				oom();
		}
		s->h.vec = v;
		s->cap = cap;
	}
	s->h.vec[s->n++] = e;
}

/* Back to a single inline entry. */
static void reset(struct sector *s, struct entry e)
{
	if (s->cap)
		free(s->h.vec);
	s->cap = 0;
	s->h.one = e;
	s->n = 1;
	s->base = 0;
	s->busy = 0;
}

/* Raise the base to @idx (never lower it), then drop what no rule can reach. */
static void raise_base(struct sector *s, uint32_t idx)
{
	struct entry *e;
	uint32_t keep;

	if (idx <= s->base)
		return;
	s->base = idx;
	e = entries(s);
	keep = idx;
	while (keep > 0 && (e[keep].value & TC_MAYBE_PREV))
		keep--;
	if (keep == 0)
		return;
	if (s->n - keep == 1) {
		reset(s, e[keep]);
		return;
	}
	memmove(e, e + keep, (s->n - keep) * sizeof(*e));
	s->n -= keep;
	s->base -= keep;
}

struct tc_model *tc_model_new(unsigned nvolumes, const uint64_t *sizes)
{
	struct tc_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->vols = calloc(nvolumes, sizeof(*m->vols));
	if (!m->vols) {
		free(m);
		return NULL;
	}
	m->nvolumes = nvolumes;
	m->next_write_id = 1;
	for (unsigned v = 0; v < nvolumes; v++) {
		struct volume *vol = &m->vols[v];

		vol->nsectors = sizes[v] / TC_MODEL_SECTOR;
		vol->s = calloc(vol->nsectors ? vol->nsectors : 1, sizeof(*vol->s));
		if (!vol->s) {
			tc_model_free(m);
			return NULL;
		}
		/* Entry 0: the initial zeros, durable. */
		for (uint64_t i = 0; i < vol->nsectors; i++)
			vol->s[i].n = 1;
	}
	return m;
}

void tc_model_free(struct tc_model *m)
{
	if (!m)
		return;
	for (unsigned v = 0; v < m->nvolumes; v++) {
		struct volume *vol = &m->vols[v];

		if (!vol->s)
			continue;
		for (uint64_t i = 0; i < vol->nsectors; i++)
			if (vol->s[i].cap)
				free(vol->s[i].h.vec);
		free(vol->s);
	}
	free(m->vols);
	free(m);
}

unsigned tc_model_volumes(const struct tc_model *m)
{
	return m->nvolumes;
}

uint64_t tc_model_sectors(const struct tc_model *m, unsigned vol)
{
	return m->vols[vol].nsectors;
}

unsigned tc_model_history_len(const struct tc_model *m, unsigned vol, uint64_t sector)
{
	return m->vols[vol].s[sector].n;
}

/* ---- driving ------------------------------------------------------------------- */

uint32_t tc_model_new_write_id(struct tc_model *m)
{
	uint32_t id = m->next_write_id++;

	if (m->next_write_id > TC_VALUE_MASK) {
		fprintf(stderr, "model: write ids exhausted\n");
		exit(2);
	}
	return id;
}

static struct sector *sector_of(struct tc_model *m, unsigned vol, uint64_t sector)
{
	if (vol >= m->nvolumes || sector >= m->vols[vol].nsectors) {
		fprintf(stderr, "model: volume %u sector %" PRIu64 " out of range\n", vol,
			sector);
		exit(2);
	}
	return &m->vols[vol].s[sector];
}

void tc_model_submit(struct tc_model *m, unsigned vol, uint64_t first, uint64_t nsectors,
		     enum tc_model_kind kind, uint32_t write_id)
{
	uint32_t value = kind == TC_MODEL_WRITE ? write_id
		       : kind == TC_MODEL_ZEROES ? 0 : TC_MAYBE_PREV;

	for (uint64_t i = 0; i < nsectors; i++) {
		struct sector *s = sector_of(m, vol, first + i);

		if (s->busy) {
			fprintf(stderr, "model: volume %u sector %" PRIu64
				": overlapping writes submitted\n", vol, first + i);
			exit(2);
		}
		push(s, (struct entry){ .value = value, .seq = TC_SEQ_INFLIGHT });
		s->busy = 1;
	}
}

void tc_model_complete(struct tc_model *m, unsigned vol, uint64_t first, uint64_t nsectors,
		       int result, bool fua)
{
	uint32_t seq = ++m->seq;

	for (uint64_t i = 0; i < nsectors; i++) {
		struct sector *s = sector_of(m, vol, first + i);
		struct entry *last = &entries(s)[s->n - 1];

		if (!s->busy) {
			fprintf(stderr, "model: volume %u sector %" PRIu64
				": completion without a write in flight\n", vol, first + i);
			exit(2);
		}
		s->busy = 0;
		last->seq = seq;
		if (result != 0)
			last->value |= TC_MAYBE_PREV;
		else if (fua)
			raise_base(s, s->n - 1);
	}
}

bool tc_model_busy(const struct tc_model *m, unsigned vol, uint64_t first,
		   uint64_t nsectors)
{
	for (uint64_t i = 0; i < nsectors; i++)
		if (m->vols[vol].s[first + i].busy)
			return true;
	return false;
}

uint64_t tc_model_flush_begin(struct tc_model *m, unsigned vol)
{
	(void)vol;
	return m->seq;
}

void tc_model_flush_end(struct tc_model *m, unsigned vol, uint64_t token, int result)
{
	struct volume *v = &m->vols[vol];

	if (result != 0)
		return;
	for (uint64_t i = 0; i < v->nsectors; i++) {
		struct sector *s = &v->s[i];
		const struct entry *e;
		uint32_t j;

		if (s->n == 1)
			continue;
		e = entries(s);
		j = s->n - 1 - s->busy;
		while (j > s->base && e[j].seq > token)
			j--;
		raise_base(s, j);
	}
}

void tc_model_collapse(struct tc_model *m, unsigned vol, uint64_t sector,
		       const uint8_t *buf)
{
	struct sector *s = sector_of(m, vol, sector);
	struct tc_found f;

	tc_model_identify(buf, &f);
	reset(s, (struct entry){
		.value = f.kind == TC_FOUND_WRITE ? f.write_id : 0,
		.seq = 0,
	});
}

/* ---- checking ------------------------------------------------------------------ */

/* Calls @fn for every value (write id or 0 for zeros) sector @s may hold under
 * @rule, possibly more than once; stops early when @fn returns true and returns true. */
static bool for_each_allowed(const struct sector *s, enum tc_model_rule rule,
			     bool (*fn)(void *arg, uint32_t value), void *arg)
{
	const struct entry *e = centries(s);
	uint32_t start = rule == TC_MODEL_CURRENT ? s->n - 1 : s->base;

	/* The start entry, resolved through "or the previous value" links. */
	for (uint32_t i = start;; i--) {
		if (fn(arg, e[i].value & TC_VALUE_MASK))
			return true;
		if (!(e[i].value & TC_MAYBE_PREV) || i == 0)
			break;
	}
	if (rule == TC_MODEL_RECOVERED)
		for (uint32_t i = s->base + 1; i < s->n; i++)
			if (fn(arg, e[i].value & TC_VALUE_MASK))
				return true;
	return false;
}

static bool value_equals(void *arg, uint32_t value)
{
	return *(const uint32_t *)arg == value;
}

struct list_builder {
	char *out;
	size_t len, used;
	unsigned count;
	uint32_t seen[16];      /* values already listed (dedup for short lists) */
};

static bool list_add(void *arg, uint32_t value)
{
	struct list_builder *b = arg;
	int n;

	for (unsigned i = 0; i < b->count && i < 16; i++)
		if (b->seen[i] == value)
			return false;
	if (b->count < 16)
		b->seen[b->count] = value;
	b->count++;
	if (b->used >= b->len || b->count > 17)
		return false;
	if (b->count == 17)
		n = snprintf(b->out + b->used, b->len - b->used, ", ...");
	else if (value)
		n = snprintf(b->out + b->used, b->len - b->used, "%swrite %" PRIu32,
			     b->count > 1 ? ", " : "", value);
	else
		n = snprintf(b->out + b->used, b->len - b->used, "%szeros",
			     b->count > 1 ? ", " : "");
	if (n > 0)
		b->used += (size_t)n;
	return false;
}

static void build_list(const struct sector *s, enum tc_model_rule rule,
		       struct list_builder *b, char *out, size_t outlen)
{
	memset(b, 0, sizeof(*b));
	b->out = out;
	b->len = outlen;
	if (outlen)
		out[0] = '\0';
	for_each_allowed(s, rule, list_add, b);
}

void tc_model_allowed(const struct tc_model *m, unsigned vol, uint64_t sector,
		      enum tc_model_rule rule, char *out, size_t outlen)
{
	struct list_builder b;

	build_list(&m->vols[vol].s[sector], rule, &b, out, outlen);
}

/* What @f is, in words, relative to the sector it was read from. */
static void describe_found(const struct tc_model *m, unsigned vol, uint64_t sector,
			   const struct tc_found *f, const uint8_t *buf, char *out, size_t outlen)
{
	switch (f->kind) {
	case TC_FOUND_ZEROES:
		snprintf(out, outlen, "zeros");
		break;
	case TC_FOUND_WRITE:
		if (f->vol != vol)
			snprintf(out, outlen, "write %" PRIu32 " of sector %" PRIu64
				 " of volume %u (another volume's data)", f->write_id,
				 f->sector, f->vol);
		else if (f->sector != sector)
			snprintf(out, outlen, "write %" PRIu32 " of sector %" PRIu64
				 " (another sector's data)", f->write_id, f->sector);
		else if (f->write_id >= m->next_write_id)
			snprintf(out, outlen, "write %" PRIu32 " (never issued)", f->write_id);
		else
			snprintf(out, outlen, "write %" PRIu32 " (stale: an older value of this "
				 "sector)", f->write_id);
		break;
	case TC_FOUND_DAMAGED:
		snprintf(out, outlen, "garbage: damaged pattern claiming write %" PRIu32
			 " of sector %" PRIu64 " of volume %u", f->write_id, f->sector, f->vol);
		break;
	case TC_FOUND_GARBAGE:
	default:
		snprintf(out, outlen, "garbage (starts %02x %02x %02x %02x %02x %02x %02x %02x)",
			 buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7]);
		break;
	}
}

bool tc_model_check(const struct tc_model *m, unsigned vol, uint64_t sector,
		    const uint8_t *buf, enum tc_model_rule rule, char *msg, size_t msglen)
{
	const struct sector *s = &m->vols[vol].s[sector];
	struct tc_found f;
	char found[192], allowed[512];
	struct list_builder b;
	uint32_t value;

	tc_model_identify(buf, &f);
	if (rule == TC_MODEL_CURRENT && s->busy) {
		if (msg)
			snprintf(msg, msglen, "checked while a write to it is in flight "
				 "(test driver bug)");
		return false;
	}
	if (f.kind == TC_FOUND_ZEROES || (f.kind == TC_FOUND_WRITE && f.vol == vol &&
					  f.sector == sector)) {
		value = f.kind == TC_FOUND_ZEROES ? 0 : f.write_id;
		if (for_each_allowed(s, rule, value_equals, &value))
			return true;
	}
	if (msg) {
		build_list(s, rule, &b, allowed, sizeof(allowed));
		describe_found(m, vol, sector, &f, buf, found, sizeof(found));
		snprintf(msg, msglen, "found %s, allowed %s", found, allowed);
	}
	return false;
}
