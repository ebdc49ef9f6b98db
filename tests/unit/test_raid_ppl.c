/* SPDX-License-Identifier: MIT */
/*
 * test_raid_ppl.c - the write hole and what closes it (src/raid/ppl.c, wimap.c,
 * raid56.c): the partial-parity log entry codec and the write-intent map block codec
 * (each field corrupted gives its refusal); power cuts in the middle of partial-stripe
 * updates on crash devices, then a member lost and the array assembled degraded
 * (forced): with the log no sector outside the writes in flight changes, with only
 * the map (the write hole open) some do; and a resync after an unclean stop that
 * reads only the regions the map names (member bytes counted).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <xxhash.h>
#include <cmocka.h>

#include "raid/raid.h"
#include "tiercache-test.h"
#include "helpers.h"

static const uint8_t UUID[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void reseal(uint8_t *b, size_t size)
{
	uint64_t c = htole64(XXH64(b, size - 8, 0));
	memcpy(b + size - 8, &c, 8);
}

/* ---- the codecs ------------------------------------------------------------------ */

static void valid_entry(struct raid_ppl_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->uuid, UUID, 16);
	e->seq = 7;
	e->stripe = 12;
	e->lo = 4096;
	e->hi = 16384;
	e->parity = 2;
	e->touched = 0x5;
	e->ws[0] = 4096;
	e->we[0] = 8192;
	e->ws[2] = 8192;
	e->we[2] = 16384;
	e->pp_csum = 0x1234;
	e->in_pp = 0x4;
}

struct corruption {
	unsigned off;
	uint32_t value;
	enum raid_sb_status st;
	const char *msg;
};

static void test_ppl_codec(void **state)
{
	struct raid_ppl_entry e, back;
	uint8_t buf[RAID_PPL_HDR], b2[RAID_PPL_HDR];
	char why[256];
	static const struct corruption c[] = {
		{ 0, 1, RAID_SB_BAD_MAGIC, "partial-parity log entry: magic 0x00000001 is not "
		  "0x4c504354" },
		{ 4, 9, RAID_SB_BAD_VERSION, "partial-parity log entry: version 9 is not the "
		  "supported version 1" },
		{ 8, 0, RAID_SB_BAD_FIELD, "partial-parity log entry: uuid is another array's" },
		{ 24, 0, RAID_SB_BAD_FIELD, "partial-parity log entry: seq is 0 (the first "
		  "entry is 1)" },
		{ 48, 1, RAID_SB_BAD_FIELD, "partial-parity log entry: parity 1 is neither "
		  "the array's 2 nor 0 (a full-stripe write)" },
		{ 48, 0, RAID_SB_BAD_FIELD, "partial-parity log entry: no partial parity (a "
		  "full-stripe write) but rows 4096..16384 of slots 0x00000005, not every "
		  "chunk whole" },
		{ 40, 16384, RAID_SB_BAD_FIELD, "partial-parity log entry: rows 16384..16384 "
		  "are not 512-byte rows within the chunk (65536)" },
		{ 44, 65536 + 512, RAID_SB_BAD_FIELD, "partial-parity log entry: rows "
		  "4096..66048 are not 512-byte rows within the chunk (65536)" },
		{ 52, 0, RAID_SB_BAD_FIELD, "partial-parity log entry: touched 0x00000000 is not "
		  "a non-empty set of the 4 data slots" },
		{ 52, 0x15, RAID_SB_BAD_FIELD, "partial-parity log entry: touched 0x00000015 is "
		  "not a non-empty set of the 4 data slots" },
		{ 64, 0, RAID_SB_BAD_FIELD, "partial-parity log entry: slot 0 rows 0..8192 are "
		  "not 512-byte rows within the entry's" },
		{ 64 + 4, 512, RAID_SB_BAD_FIELD, "partial-parity log entry: slot 1 rows 512..0 "
		  "are not zero (not touched)" },
		{ 320, 0x6, RAID_SB_BAD_FIELD, "partial-parity log entry: in_pp 0x00000006 is "
		  "not a set of the modified slots 0x00000005 of an entry with partial parity" },
		{ 400, 1, RAID_SB_BAD_FIELD, "partial-parity log entry: reserved bytes "
		  "324..4087 are not zero" },
	};

	(void)state;
	valid_entry(&e);
	raid_ppl_encode(&e, buf);
	assert_int_equal(raid_ppl_decode(buf, sizeof(buf), UUID, 4, 2, 65536, &back, why,
					 sizeof(why)), RAID_SB_OK);
	assert_memory_equal(&e, &back, sizeof(e));
	assert_int_equal(raid_ppl_decode(buf, 100, UUID, 4, 2, 65536, NULL, why, sizeof(why)),
			 RAID_SB_SHORT);
	memcpy(b2, buf, sizeof(buf));
	b2[30] ^= 1;
	assert_int_equal(raid_ppl_decode(b2, sizeof(b2), UUID, 4, 2, 65536, NULL, why,
					 sizeof(why)), RAID_SB_BAD_CHECKSUM);
	assert_non_null(strstr(why, "does not match the contents"));
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memcpy(b2, buf, sizeof(buf));
		if (c[i].off == 8)
			memset(b2 + 8, 0, 16);
		else if (c[i].off == 24)
			memset(b2 + 24, 0, 8);
		else
			put32(b2 + c[i].off, c[i].value);
		if (c[i].st != RAID_SB_BAD_MAGIC && c[i].st != RAID_SB_BAD_VERSION)
			reseal(b2, sizeof(b2));
		assert_int_equal(raid_ppl_decode(b2, sizeof(b2), UUID, 4, 2, 65536, NULL, why,
						 sizeof(why)), c[i].st);
		assert_string_equal(why, c[i].msg);
	}
	/* Slot sizes: a header and m chunks; 64 at most. */
	assert_int_equal(raid_ppl_slots(256 << 10, 1), 15);
	assert_int_equal(raid_ppl_slots(256 << 10, 2), 7);
	assert_int_equal(raid_ppl_slots(4096, 1), RAID_PPL_MAX_SLOTS);
	assert_int_equal(raid_ppl_slots(4u << 20, 1), 0);
}

static void test_map_codec(void **state)
{
	struct raid_map_block b, back;
	uint8_t buf[RAID_MAP_BLOCK], b2[RAID_MAP_BLOCK];
	char why[256];
	static const struct corruption c[] = {
		{ 0, 1, RAID_SB_BAD_MAGIC, "write-intent map block 1: magic 0x00000001 is not "
		  "0x4d574354" },
		{ 4, 2, RAID_SB_BAD_VERSION, "write-intent map block 1: version 2 is not the "
		  "supported version 1" },
		{ 8, 0, RAID_SB_BAD_FIELD, "write-intent map block 1: uuid is another array's" },
		{ 24, 0, RAID_SB_BAD_FIELD, "write-intent map block 1: index 0 is not its place "
		  "(1)" },
		{ 28, 3, RAID_SB_BAD_FIELD, "write-intent map block 1: nblocks 3 is not 2 for "
		  "40000 regions" },
		{ 32, 20, RAID_SB_BAD_FIELD, "write-intent map block 1: region_shift 20 is not "
		  "the array's 26" },
		{ 40, 40001, RAID_SB_BAD_FIELD, "write-intent map block 1: nregions 40001 is not "
		  "the array's 40000" },
		{ 36, 5, RAID_SB_BAD_FIELD, "write-intent map block 1: plane 5 is not its place "
		  "(0)" },
		{ 48, 5, RAID_SB_BAD_FIELD, "write-intent map block 1: reserved bytes are not "
		  "zero" },
		{ 64 + 1500, 0x80, RAID_SB_BAD_FIELD, "write-intent map block 1: bit of region "
		  "44199 set beyond the 40000 regions" },
	};

	(void)state;
	memset(&b, 0, sizeof(b));
	memcpy(b.uuid, UUID, 16);
	b.index = 1;
	b.nblocks = 2;
	b.region_shift = 26;
	b.nregions = 40000;
	b.bits[0] = 0x81;
	b.bits[100] = 0x10;
	raid_map_block_encode(&b, buf);
	assert_int_equal(raid_map_block_decode(buf, sizeof(buf), UUID, 0, 1, 40000, 26, &back, why,
					       sizeof(why)), RAID_SB_OK);
	assert_memory_equal(&b, &back, sizeof(b));
	memcpy(b2, buf, sizeof(buf));
	b2[70] ^= 4;
	assert_int_equal(raid_map_block_decode(b2, sizeof(b2), UUID, 0, 1, 40000, 26, NULL, why,
					       sizeof(why)), RAID_SB_BAD_CHECKSUM);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memcpy(b2, buf, sizeof(buf));
		if (c[i].off == 8)
			memset(b2 + 8, 0, 16);
		else if (c[i].off >= 64)
			b2[c[i].off] = (uint8_t)c[i].value;
		else
			put32(b2 + c[i].off, c[i].value);
		if (c[i].st != RAID_SB_BAD_MAGIC && c[i].st != RAID_SB_BAD_VERSION)
			reseal(b2, sizeof(b2));
		assert_int_equal(raid_map_block_decode(b2, sizeof(b2), UUID, 0, 1, 40000, 26, NULL,
						       why, sizeof(why)), c[i].st);
		assert_string_equal(why, c[i].msg);
	}
	/* The written plane: its blocks say so, and one is never taken for the other. */
	b.plane = 1;
	raid_map_block_encode(&b, buf);
	assert_int_equal(raid_map_block_decode(buf, sizeof(buf), UUID, 1, 1, 40000, 26, &back,
					       why, sizeof(why)), RAID_SB_OK);
	assert_memory_equal(&b, &back, sizeof(b));
	assert_int_equal(raid_map_block_decode(buf, sizeof(buf), UUID, 0, 1, 40000, 26, NULL,
					       why, sizeof(why)), RAID_SB_BAD_FIELD);
	assert_string_equal(why, "write-intent map block 1: plane 1 is not its place (0)");
	put32(buf + 40, 40001);
	reseal(buf, sizeof(buf));
	assert_int_equal(raid_map_block_decode(buf, sizeof(buf), UUID, 1, 1, 40000, 26, NULL,
					       why, sizeof(why)), RAID_SB_BAD_FIELD);
	assert_string_equal(why, "written map block 1: nregions 40001 is not the array's "
			    "40000");
	/* Region sizes: 64 MiB on large members, at least 64 regions, at least a chunk. */
	assert_int_equal(raid_map_region_shift(16ull << 40, 256 << 10), 26);
	assert_int_equal(raid_map_region_shift(64ull << 20, 64 << 10), 20);
	assert_int_equal(raid_map_region_shift(1ull << 20, 256 << 10), 18);
}

/* ---- power cuts mid-stripe, then a member lost ----------------------------------- */

#define N 4
#define CHUNK (64u << 10)
#define DATA (2u << 20)                          /* bytes of data per member */
#define MSIZE (RAID_SB_DATA_OFFSET + DATA)
#define STRIPE ((uint64_t)CHUNK * (N - 1))
#define ASIZE (STRIPE * (DATA / CHUNK))
#define NW 24                                    /* partial-stripe writes in flight */
#define WOFF 8192u                               /* each at this offset of its stripe */

struct fx {
	char dir[256];
	char path[N][300];
	struct t_log log;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(t_mkdtemp(f->dir, sizeof(f->dir), "tc-raid-ppl"), 0);
	for (unsigned i = 0; i < N; i++)
		snprintf(f->path[i], sizeof(f->path[i]), "%s/m%u", f->dir, i);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	t_rm_rf(f->dir);
	free(f);
	return 0;
}

/* A fresh array @name of @n crash devices over the fixture's files (seeds @seed,
 * @seed + 1, ...), created with @o and the TC_ARRAY_* @flags; its members in @m. */
static tc_dev *crash_array_flags(struct fx *f, tc_ctx *ctx, const struct tc_array_opts *o,
				 unsigned n, uint64_t seed, const char *name, unsigned flags,
				 tc_dev **m)
{
	tc_dev *a;
	for (unsigned i = 0; i < n; i++) {
		unlink(f->path[i]);
		assert_int_equal(tc_dev_new_crash(ctx, f->path[i], TC_DEV_CREATE, MSIZE, seed + i,
						  &m[i]), 0);
	}
	assert_int_equal(tc_array_create(ctx, name, o, m, n, NULL, 0, flags, &a), 0);
	return a;
}

static tc_dev *crash_array(struct fx *f, tc_ctx *ctx, const struct tc_array_opts *o,
			   unsigned n, uint64_t seed, const char *name, tc_dev **m)
{
	return crash_array_flags(f, ctx, o, n, seed, name, 0, m);
}

static uint8_t val_a(uint64_t off)
{
	return (uint8_t)(off / 4096 * 37 + 11);
}

static uint8_t val_b(uint64_t off)
{
	return (uint8_t)(off / 4096 * 37 + 200);
}

static unsigned done_count;

static void io_done(struct tc_io *io, int result)
{
	(void)io;
	(void)result;
	done_count++;
}

static uint64_t member_writes(tc_dev **m)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < N; i++) {
		struct tc_dev_stats st;
		tc_dev_stats(m[i], &st);
		n += st.writes;
	}
	return n;
}

/* The array's data member of array offset @off (RAID 5, left-symmetric). */
static unsigned data_member(uint64_t off)
{
	uint64_t s = off / STRIPE;
	unsigned d = (unsigned)(off % STRIPE / CHUNK), pd = N - 1 - (unsigned)(s % N);
	return (pd + 1 + d) % N;
}

/* When member @lost of run_cut goes: missing at assembly, failed right after it, or
 * failed before the writes (the array degraded at the cut, assembled without it). */
enum lose { LOSE_AT_ASSEMBLY, LOSE_AFTER, LOSE_BEFORE };

/* The writes of run_cut: 4 KiB into chunk 0 of NW stripes; NW full stripes; or NW
 * writes of two chunks from the middle of chunk 0, so that chunk 1 is modified
 * whole, on rows that chunks 0 and 2 are modified on too. */
enum shape { W_SMALL, W_FULL, W_SPAN };

static uint64_t shape_off(enum shape sh)
{
	return sh == W_SMALL ? WOFF : sh == W_SPAN ? CHUNK / 2 : 0;
}

static uint64_t shape_len(enum shape sh)
{
	return sh == W_SMALL ? 4096 : sh == W_SPAN ? 2 * CHUNK : STRIPE;
}

/*
 * Create a RAID 5 with @policy on crash devices, fill it with A, flush, start NW
 * writes of B (@sh), cut the power once the members have seen @cut more writes (full
 * stripes: @cut completions polled), and lose member @lost as @when says, forcing
 * the assembly.  Counts the 4 KiB sectors outside the writes in flight that do not
 * hold A, and the sectors of the writes holding neither A nor B (those of the member
 * @lost when it was missing at assembly only, LOSE_AT_ASSEMBLY, excepted: nothing can
 * promise them; a member lost before the writes had their data in the parity alone,
 * which the log's partial parity keeps).
 */
/* run_cut with run_prior set: before the writes in flight, 4 KiB of C (val_c) into
 * chunk 1 of the same stripes, completed but not flushed (test_log_prior_unflushed). */
static bool run_prior;
#define POFF (CHUNK + 4096u)

static uint8_t val_c(uint64_t off)
{
	return (uint8_t)(off / 4096 * 37 + 90);
}

/* run_cut with run_replace set: member REPLACED is being replaced when the writes
 * start, its copy a few rows in (test_write_hole_replace). */
static bool run_replace;
#define REPLACED 1u

static unsigned run_cut(struct fx *f, enum tc_array_consistency policy, uint64_t seed,
			uint64_t cut, unsigned lost, enum shape sh, enum lose when)
{
	bool full = sh == W_FULL, after = when == LOSE_AFTER;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, seed, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a;
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK, .consistency = policy };
	uint8_t *buf = aligned_alloc(4096, ASIZE);

	assert_non_null(buf);
	for (unsigned i = 0; i < N; i++) {
		unlink(f->path[i]);
		assert_int_equal(tc_dev_new_crash(ctx, f->path[i], TC_DEV_CREATE, MSIZE,
						  seed * 16 + i, &m[i]), 0);
	}
	assert_int_equal(tc_array_create(ctx, "wh", &o, m, N, NULL, 0, 0, &a), 0);
	for (uint64_t x = 0; x < ASIZE; x++)
		buf[x] = val_a(x);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, ASIZE, 0), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	if (when == LOSE_BEFORE)
		assert_int_equal(tc_array_fail_member(a, lost), 0);
	char npath[320];
	tc_dev *nd_crash = NULL;
	snprintf(npath, sizeof(npath), "%s/new", f->dir);
	if (run_replace) {
		struct tc_array_rebuild_opts rate = { .min_rate = 256u << 10,
						      .max_rate = 256u << 10 };
		struct tc_array_status st;
		unlink(npath);
		assert_int_equal(tc_dev_new_crash(ctx, npath, TC_DEV_CREATE, MSIZE, seed * 16 + 9,
						  &nd_crash), 0);
		assert_int_equal(tc_array_set_rebuild(a, &rate), 0);
		assert_int_equal(tc_array_replace(a, REPLACED, nd_crash), 0);
		do {
			tc_ctx_advance(ctx, 10000000ull);
			tc_ctx_poll(ctx, 1);
			assert_int_equal(tc_array_status(a, &st), 0);
		} while (st.sync == TC_ARRAY_SYNC_REBUILD && st.sync_pos < 3 * CHUNK);
		assert_int_equal(st.sync, TC_ARRAY_SYNC_REBUILD);
	}

	/* The writes in flight. */
	static struct tc_io io[NW];
	static struct iovec iov[NW];
	uint64_t wlen = shape_len(sh);
	uint8_t *wbuf = aligned_alloc(4096, NW * wlen);
	assert_non_null(wbuf);
	if (run_prior) {
		uint8_t *c = aligned_alloc(4096, 4096);
		assert_non_null(c);
		for (unsigned w = 0; w < NW; w++) {
			memset(c, val_c(w * STRIPE + POFF), 4096);
			assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, c, 4096,
						   w * STRIPE + POFF), 0);
		}
		free(c);
	}
	done_count = 0;
	uint64_t base = member_writes(m);
	for (unsigned w = 0; w < NW; w++) {
		uint64_t off = w * STRIPE + shape_off(sh);
		for (uint64_t x = 0; x < wlen; x++)
			wbuf[w * wlen + x] = val_b(off + x);
		iov[w] = (struct iovec){ wbuf + w * wlen, wlen };
		io[w] = (struct tc_io){ .op = TC_OP_WRITE, .offset = off, .length = wlen,
					.iov = &iov[w], .iovcnt = 1, .done = io_done };
		tc_dev_submit(a, &io[w]);
	}
	/* Full stripes: @cut completions polled (their member writes are all submitted
	 * at once); else @cut member writes submitted. */
	for (uint64_t step = 0; done_count < NW && (full ? step < cut :
						    member_writes(m) - base < cut); step++)
		if (tc_ctx_poll(ctx, 1) <= 0)
			break;
	for (unsigned i = 0; i < N; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	if (nd_crash)
		assert_true(tc_crash_power_cut(nd_crash) >= 0);
	while (done_count < NW && tc_ctx_poll(ctx, 64) > 0)
		;
	tc_dev_close(a);

	free(wbuf);

	/* Power back, member @lost gone: assemble from the others, forced; or from all,
	 * and member @lost fails right after. */
	tc_dev *d[N + 1];
	unsigned nd = 0;
	for (unsigned i = 0; i < N; i++)
		if (after || i != lost)
			assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0,
							  &d[nd++]), 0);
	if (run_replace)
		assert_int_equal(tc_dev_open_file(ctx, npath, TC_DEV_BUFFERED, 0, &d[nd++]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, nd, TC_ARRAY_FORCE, &a), 0);
	if (after)
		assert_int_equal(tc_array_fail_member(a, lost), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, ASIZE, 0), 0);
	unsigned bad = 0;
	for (uint64_t s = 0; s < ASIZE; s += 4096) {
		uint64_t in = s % STRIPE;
		bool inflight = s / STRIPE < NW && in >= shape_off(sh) &&
				in < shape_off(sh) + wlen;
		uint8_t v = buf[s];
		bool uniform = true;
		for (unsigned x = 1; x < 4096 && uniform; x++)
			uniform = buf[s + x] == v;
		if (run_prior && s / STRIPE < NW && in == POFF && !inflight) {
			if (!uniform || (v != val_a(s) && v != val_c(s)))    /* not flushed */
				bad++;
		} else if (!inflight) {
			if (!uniform || v != val_a(s))  /* A, as written and flushed */
				bad++;
		} else if (when != LOSE_AT_ASSEMBLY || data_member(s) != lost) {
			if (!uniform || (v != val_a(s) && v != val_b(s)))
				bad++;
		}
	}
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
	return bad;
}

/* Seeds 1-3, cuts @from, @from + @step, ... up to @to, the member lost rotating:
 * with the log, no sector may be damaged (@what names the case in a report). */
static void ppl_sweep(struct fx *f, uint64_t from, uint64_t to, uint64_t step,
		      enum shape sh, enum lose when, const char *what)
{
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (uint64_t cut = from; cut <= to; cut += step) {
			unsigned lost = (unsigned)((seed + cut) % N);
			unsigned bad = run_cut(f, TC_CONSISTENCY_PPL, seed, cut, lost, sh, when);
			if (bad)
				fprintf(stderr, "ppl, %s: seed %lu cut %lu member %u lost: %u "
					"sectors damaged\n", what, (unsigned long)seed,
					(unsigned long)cut, lost, bad);
			assert_int_equal(bad, 0);
		}
}

static void test_write_hole(void **state)
{
	struct fx *f = *state;
	unsigned open_bad = 0, runs = 0;

	/* Cuts after a few member writes up to most of them; each member lost in turn. */
	ppl_sweep(f, 10, 90, 40, W_SMALL, LOSE_AT_ASSEMBLY, "partial stripes");
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (uint64_t cut = 10; cut <= 90; cut += 40, runs++)
			open_bad += run_cut(f, TC_CONSISTENCY_BITMAP, seed, cut,
					    (unsigned)((seed + cut) % N), W_SMALL,
					    LOSE_AT_ASSEMBLY);
	/* Without the log the same cuts damage sectors nobody was writing. */
	fprintf(stderr, "write hole open (bitmap only): %u sectors damaged over %u runs\n",
		open_bad, runs);
	assert_true(open_bad > 0);
}

/* Full-stripe writes cut mid-way, then a member lost after assembly: the log's
 * full-stripe entries make recovery recompute those stripes' parity from their data,
 * so the lost member's chunks read back as A or B (whatever the member held), never
 * a mix of the other chunks' old and new data. */
static void test_write_hole_full_stripes(void **state)
{
	ppl_sweep(*state, 8, 48, 20, W_FULL, LOSE_AFTER, "full stripes, lost after assembly");
}

/* An array degraded before the writes (a member lost), writes of two chunks cut
 * mid-way: the rows written on the lost member's chunk live in the parity alone, on
 * rows where a present chunk is written too.  Their new data stays in the entry's
 * partial parity (in_pp), so recovery makes the parity give back that data, old
 * or new for the present chunk; md's rule (keep the parity of such rows) leaves
 * them whatever a torn update makes: neither A nor B (tc-stress --arrays
 * --write-hole seeds 4, 17, 29). */
static void test_write_hole_degraded(void **state)
{
	ppl_sweep(*state, 6, 66, 30, W_SPAN, LOSE_BEFORE, "degraded, lost before the writes");
}

/* Writes that completed but were not flushed, then partial-stripe writes of the same
 * stripes cut mid-way, a member missing at assembly.  The second update's partial
 * parity takes the first one's data as written; the first is not written FUA, so
 * its log slot stays taken and the second waits for a flush of the members before
 * it logs.  Without that wait a crash that drops the first update's data leaves
 * parity matching neither, and the lost member's chunks come back damaged. */
static void test_log_prior_unflushed(void **state)
{
	run_prior = true;
	ppl_sweep(*state, 10, 90, 40, W_SMALL, LOSE_AT_ASSEMBLY, "after unflushed writes");
	run_prior = false;
}

/* Member @lost of array @a failed, then the first byte of the 4 KiB at @off, read
 * into @buf. */
static uint8_t byte_without(tc_dev *a, unsigned lost, uint64_t off, uint8_t *buf)
{
	assert_int_equal(tc_array_fail_member(a, lost), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, 4096, off), 0);
	return buf[0];
}

/* Power cut of every device in @m (@n of them), then the close of array @a. */
static void cut_all(tc_dev *a, tc_dev **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	tc_dev_close(a);
}

/* The member files opened again as crash devices (seeds from @seed), member @skip
 * (N: none) left out, in @d; their number.  @keep gets the same pointers (the
 * assembly takes @d over). */
static unsigned reopen_crash(struct fx *f, tc_ctx *ctx, unsigned skip, uint64_t seed,
			     tc_dev **d, tc_dev **keep)
{
	unsigned nd = 0;
	for (unsigned i = 0; i < N; i++)
		if (i != skip) {
			assert_int_equal(tc_dev_new_crash(ctx, f->path[i], 0, MSIZE, seed + i,
							  &d[nd]), 0);
			keep[nd] = d[nd];
			nd++;
		}
	return nd;
}

/*
 * A member that comes back carries its log from before: it is assembled out (missing
 * at a forced start), then added again as a spare and rebuilt into its slot.  Its log
 * still holds the entry of a completed update of stripe S (chunk 1, row WOFF) in its
 * second slot; the array's log numbering starts again at every assembly, so that old
 * entry outranks the entry of a later update of chunk 0 of S, written into its first
 * slot.  After a crash, recovery replaying the old entry gives S the parity of chunk
 * 0 as it was before the later update, and a lost member holding chunk 0 comes back
 * with that old data.  A spare's log is wiped when it joins (tc-stress --arrays
 * --write-hole seed 44: a member failed, kept as a spare, and rebuilt).
 */
static void test_log_stale_rejoined(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 17, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a, *d[N];
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_PPL };
	struct tc_array_status st;
	uint8_t *buf = aligned_alloc(4096, ASIZE);
	const uint64_t S = 5, S0 = S - N;       /* stripes with the same P member */
	const unsigned pm = N - 1 - (unsigned)(S % N);
	const uint64_t c0 = S * STRIPE + WOFF, c1 = c0 + CHUNK;

	assert_non_null(buf);
	a = crash_array(f, ctx, &o, N, 90, "sr", m);
	for (uint64_t x = 0; x < ASIZE; x++)
		buf[x] = val_a(x);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, ASIZE, 0), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	/* Entries on member pm: stripe S0 in slot 0, stripe S (chunk 1) in slot 1. */
	memset(buf, 0x11, 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, TC_IO_FUA, buf, 4096, S0 * STRIPE + WOFF), 0);
	memset(buf, val_b(c1), 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, TC_IO_FUA, buf, 4096, c1), 0);
	cut_all(a, m, N);

	/* Back without member pm (forced: dirty and degraded), which then comes back as
	 * a spare and is rebuilt into its slot; the later update of chunk 0 of S, same
	 * row, and the power goes again. */
	unsigned nd = reopen_crash(f, ctx, pm, 100, d, m);
	assert_int_equal(tc_array_assemble(ctx, d, nd, TC_ARRAY_FORCE, &a), 0);
	assert_int_equal(tc_dev_new_crash(ctx, f->path[pm], 0, MSIZE, 99, &m[nd]), 0);
	assert_int_equal(tc_array_add_spare(a, m[nd]), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.degraded, 0);
	memset(buf, val_c(c0), 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, TC_IO_FUA, buf, 4096, c0), 0);
	cut_all(a, m, N);

	/* Every member back; the one holding chunk 0 of S lost after recovery. */
	nd = reopen_crash(f, ctx, N, 110, d, m);
	assert_int_equal(tc_array_assemble(ctx, d, nd, 0, &a), 0);
	assert_int_equal(byte_without(a, data_member(c0), c0, buf), val_c(c0));
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, 4096, c1), 0);
	assert_int_equal(buf[0], val_b(c1));
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/*
 * A replace cut by a power loss: the copy resumes from the checkpoint the superblocks
 * recorded, below the position it had reached, so the rows between the two are
 * copied from the old member again.  A write into one of those rows, completed and
 * flushed before the cut, must still read back afterwards: writes below the position
 * go to the old member as well as to its successor (as md writes a replacement and
 * the device it replaces), so the second copy carries it too.
 */
static void test_replace_resumed_keeps_writes(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 19, TC_LOG_ERROR, &f->log);
	tc_dev *m[N + 1], *a, *d[N + 1];
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_PPL };
	struct tc_array_rebuild_opts rate = { .min_rate = 256u << 10, .max_rate = 256u << 10 };
	struct tc_array_status st;
	const unsigned victim = 1;
	char npath[320];
	uint8_t *buf = aligned_alloc(4096, ASIZE);

	assert_non_null(buf);
	snprintf(npath, sizeof(npath), "%s/new", f->dir);
	a = crash_array(f, ctx, &o, N, 120, "rr", m);
	for (uint64_t x = 0; x < ASIZE; x++)
		buf[x] = val_a(x);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, ASIZE, 0), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	assert_int_equal(tc_array_set_rebuild(a, &rate), 0);
	assert_int_equal(tc_dev_new_crash(ctx, npath, TC_DEV_CREATE, MSIZE, 130, &m[N]), 0);
	assert_int_equal(tc_array_replace(a, victim, m[N]), 0);
	/* Until the copy has passed an odd row of the victim's that is not its parity:
	 * checkpoints come every 1/16 of the member, two rows here, so that row is past
	 * the last one recorded. */
	uint64_t row = 0;
	for (unsigned t = 0; t < 100000; t++) {
		assert_int_equal(tc_array_status(a, &st), 0);
		row = st.sync_pos / CHUNK;
		if (st.sync == TC_ARRAY_SYNC_REBUILD && row % 2 == 0 && row > 2 &&
		    N - 1 - (unsigned)((row - 1) % N) != victim)
			break;
		tc_ctx_advance(ctx, 10000000ull);
		tc_ctx_poll(ctx, 1);
	}
	assert_int_equal(st.sync, TC_ARRAY_SYNC_REBUILD);
	row--;
	uint64_t off = 0;
	for (unsigned dd = 0; dd < N - 1; dd++)
		if (data_member(row * STRIPE + dd * CHUNK) == victim)
			off = row * STRIPE + dd * CHUNK;
	assert_int_equal(data_member(off), victim);
	memset(buf, val_b(off), CHUNK);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, CHUNK, off), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	cut_all(a, m, N + 1);

	unsigned nd = reopen_crash(f, ctx, N, 140, d, m);
	assert_int_equal(tc_dev_new_crash(ctx, npath, 0, MSIZE, 150, &d[nd]), 0);
	nd++;
	assert_int_equal(tc_array_assemble(ctx, d, nd, 0, &a), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.degraded, 0);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, CHUNK, off), 0);
	unsigned bad = 0;
	for (unsigned x = 0; x < CHUNK; x++)
		bad += buf[x] != val_b(off);
	assert_int_equal(bad, 0);
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/* Partial-stripe writes cut mid-way while member REPLACED is being replaced (its copy
 * a few rows in, most writes above it), then another member lost after assembly.
 * The old member takes every write of the slot (array.c), so recovery reads the
 * slot's rows above the checkpoint from it and recomputes their parity; keeping that
 * parity, as for a member being rebuilt, let a torn update damage the lost member's
 * chunks (tc-stress --arrays --write-hole seed 42, a RAID 6 of 7). */
static void test_write_hole_replace(void **state)
{
	struct fx *f = *state;

	run_replace = true;
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (uint64_t cut = 10; cut <= 90; cut += 40) {
			unsigned lost = (unsigned)((seed + cut) % (N - 1));
			lost += lost >= REPLACED;       /* not the slot being replaced */
			unsigned bad = run_cut(f, TC_CONSISTENCY_PPL, seed, cut, lost, W_SMALL,
					       LOSE_AFTER);
			if (bad)
				fprintf(stderr, "ppl, replace: seed %lu cut %lu member %u lost: %u "
					"sectors damaged\n", (unsigned long)seed,
					(unsigned long)cut, lost, bad);
			assert_int_equal(bad, 0);
		}
	run_replace = false;
}

/* A member failure on a deterministic context: the write after it completes only
 * once the superblocks record the failure (as the persist thread makes it on a
 * threaded one), so after a power cut the failed member, which missed that write,
 * is left out instead of coming back as current with zeros (tc-stress --arrays
 * --write-hole seed 30: two members of a RAID 6 failed at op 7, the cut at op 30). */
static void test_failure_recorded_first(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 9, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a;
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK };
	uint8_t *buf = aligned_alloc(4096, ASIZE);

	assert_non_null(buf);
	a = crash_array(f, ctx, &o, N, 60, "fr", m);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	for (uint64_t x = 0; x < ASIZE; x++)
		buf[x] = val_b(x);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, ASIZE, 0), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	for (unsigned i = 0; i < N; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	tc_dev_close(a);

	tc_dev *d[N];
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, N, TC_ARRAY_FORCE, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.degraded, 1);       /* member 1 left out, not current */
	memset(buf, 0, ASIZE);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, ASIZE, 0), 0);
	unsigned bad = 0;
	for (uint64_t x = 0; x < ASIZE; x += 4096)
		bad += buf[x] != val_b(x);
	assert_int_equal(bad, 0);
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/* A RAID 1 of @n crash devices (seeds from @seed) holding 0xa1 in its first chunk,
 * flushed, then a power cut, and the last copy's chunk rewritten with 0xb2 behind the
 * array's back: a torn write. */
static void torn_mirror_at(struct fx *f, tc_ctx *ctx, unsigned n, uint64_t seed,
			   uint8_t *buf, uint64_t off)
{
	struct tc_array_opts o = { .level = TC_RAID1, .chunk = CHUNK };
	tc_dev *m[N], *a = crash_array(f, ctx, &o, n, seed, "mr", m);

	memset(buf, 0xa1, CHUNK);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, CHUNK, 0), 0);
	if (off)        /* chunk 0 written too: the first region to resync */
		assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, CHUNK, off), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_FLUSH, 0, NULL, 0, 0), 0);
	cut_all(a, m, n);
	tc_dev *raw;
	assert_int_equal(tc_dev_open_file(ctx, f->path[n - 1], TC_DEV_BUFFERED, 0, &raw), 0);
	memset(buf, 0xb2, CHUNK);
	assert_int_equal(tc_dev_io(raw, TC_OP_WRITE, 0, buf, CHUNK, RAID_SB_DATA_OFFSET + off),
			 0);
	tc_dev_close(raw);
}

static void torn_mirror(struct fx *f, tc_ctx *ctx, unsigned n, uint64_t seed, uint8_t *buf)
{
	torn_mirror_at(f, ctx, n, seed, buf, 0);
}

/* Mirror @n copies (RAID 1), the last one's first 64 KiB rewritten behind the array's
 * back after a crash (a torn write); assembled without member @missing (n: none).
 * The first readable copy (member @first) is what reads give before the resync
 * and, once it has run, after that member is lost too. */
static void mirror_resync_case(struct fx *f, unsigned n, unsigned missing)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 11 + n + missing, TC_LOG_ERROR, &f->log);
	tc_dev *a;
	uint8_t *buf = aligned_alloc(4096, CHUNK);
	unsigned first = missing == 0 ? 1 : 0;

	assert_non_null(buf);
	torn_mirror(f, ctx, n, 70, buf);

	tc_dev *d[N];
	unsigned nd = 0;
	for (unsigned i = 0; i < n; i++)
		if (i != missing)
			assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0,
							  &d[nd++]), 0);
	/* Without a member it last ran with: forced (started degraded once). */
	assert_int_equal(tc_array_assemble(ctx, d, nd, missing < n ? TC_ARRAY_FORCE : 0, &a), 0);
	/* Before the resync has run: every read gives the first readable copy. */
	for (unsigned r = 0; r < 4; r++) {
		assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, 4096, 0), 0);
		assert_int_equal(buf[0], 0xa1);
	}
	assert_int_equal(tc_array_wait(a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_IDLE);
	assert_int_equal(byte_without(a, first, 0, buf), 0xa1);
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/* A mirror not shut down cleanly, its copies differing where a write was torn:
 * reads take the first copy until the resync has copied it over the others, then
 * the copies agree, so losing that member afterwards still reads what was read
 * before (tc-stress --arrays --write-hole, RAID 1 and 10 seeds 1, 23, 25).  Also
 * degraded (a RAID 1 of 3 assembled without member 0): the resync runs over the
 * copies there are, instead of waiting for a rebuild while the copy reads take
 * could fail (seed 37). */
static void test_mirror_resync(void **state)
{
	mirror_resync_case(*state, 2, 2);
	mirror_resync_case(*state, 3, 0);
}

/* The same torn mirror of two, resynced on crash devices, then a second power cut and
 * the loss of the first copy's member: the resync's rewrites are FUA, so the other
 * copy still gives what reads gave before (tc-stress --arrays --write-hole seed 188:
 * a rewrite left in a member's cache and lost in the next cut let the first copy's
 * loss take back data that had been read).  Crash seeds 1-6: a power cut keeps a
 * pending write or drops it as its seed says. */
static void test_mirror_resync_durable(void **state)
{
	struct fx *f = *state;
	uint8_t *buf = aligned_alloc(4096, CHUNK);
	unsigned lost = 0;

	assert_non_null(buf);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, seed, TC_LOG_ERROR, &f->log);
		tc_dev *m[2], *a, *d[N];
		torn_mirror(f, ctx, 2, 200 + seed * 8, buf);

		/* Assembled on crash devices: the resync copies member 0 over member 1. */
		for (unsigned i = 0; i < 2; i++) {
			assert_int_equal(tc_dev_new_crash(ctx, f->path[i], 0, MSIZE,
							  seed * 8 + 300 + i, &d[i]), 0);
			m[i] = d[i];
		}
		assert_int_equal(tc_array_assemble(ctx, d, 2, 0, &a), 0);
		assert_int_equal(tc_array_wait(a), 0);
		assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, CHUNK, 0), 0);
		assert_int_equal(buf[0], 0xa1);
		cut_all(a, m, 2);

		for (unsigned i = 0; i < 2; i++)
			assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0,
							  &d[i]), 0);
		assert_int_equal(tc_array_assemble(ctx, d, 2, 0, &a), 0);
		lost += byte_without(a, 0, 0, buf) != 0xa1;
		tc_dev_close(a);
		tc_ctx_free(ctx);
	}
	assert_int_equal(lost, 0);
	free(buf);
}

/* The torn mirror of two closed cleanly before its resync could run: it stays dirty
 * with its map, so the next assembly resyncs, and the loss of the first copy's member
 * after that still reads the first copy.  Clearing the map at that close let the next
 * assembly resync nothing, and the other copy came back (tc-stress --arrays
 * --write-hole seed 154). */
static void test_mirror_resync_survives_close(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 23, TC_LOG_ERROR, &f->log);
	struct tc_array_status st;
	uint8_t *buf = aligned_alloc(4096, CHUNK);
	tc_dev *a, *d[2];

	assert_non_null(buf);
	torn_mirror(f, ctx, 2, 230, buf);

	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, 2, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_not_equal(st.sync, TC_ARRAY_SYNC_IDLE);   /* its resync not ended */
	tc_dev_close(a);

	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, 2, 0, &a), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(byte_without(a, 0, 0, buf), 0xa1);
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/* The torn mirror of three, its resync under way, loses member 1: a spare takes its
 * place, and the resync stops for the rebuild.  The spare then fails too, which ends
 * the rebuild with nothing rebuilt: the resync must still run, so that losing member 0
 * afterwards reads what member 0 gave.  It did not: the pass went idle, and the torn
 * copy came back (tc-stress --arrays --write-hole seed 120). */
static void test_mirror_resync_after_failed_rebuild(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 29, TC_LOG_ERROR, &f->log);
	struct tc_array_status st;
	uint8_t *buf = aligned_alloc(4096, CHUNK);
	tc_dev *a, *d[3], *sp;
	char spath[320];

	assert_non_null(buf);
	/* Torn past the resync's first window (chunk 0), which runs during the calls
	 * below. */
	torn_mirror_at(f, ctx, 3, 290, buf, 8 * CHUNK);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, 3, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_REPAIR);
	struct tc_array_rebuild_opts ro = { .min_rate = 4096, .max_rate = 4096 };
	assert_int_equal(tc_array_set_rebuild(a, &ro), 0);
	snprintf(spath, sizeof(spath), "%s/spare", f->dir);
	assert_int_equal(tc_dev_new_crash(ctx, spath, TC_DEV_CREATE, MSIZE, 291, &sp), 0);
	assert_int_equal(tc_array_add_spare(a, sp), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member[1].state, TC_MEMBER_REBUILDING);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.sync, TC_ARRAY_SYNC_IDLE);
	assert_int_equal(byte_without(a, 0, 8 * CHUNK, buf), 0xa1);
	tc_dev_close(a);
	tc_ctx_free(ctx);
	free(buf);
}

/* A RAID 5 with the write-intent map, stopped cleanly while degraded, assembles
 * degraded: the map is written to the members there, not to the missing one (its
 * placeholder refused the write, and the assembly failed with ENXIO). */
static void test_map_degraded_assembly(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 13, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a, *d[N - 1];
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_BITMAP };
	struct tc_array_status st;

	a = crash_array(f, ctx, &o, N, 80, "md", m);
	assert_int_equal(tc_array_fail_member(a, 2), 0);
	tc_dev_close(a);
	for (unsigned i = 0, j = 0; i < N; i++)
		if (i != 2)
			assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0,
							  &d[j++]), 0);
	assert_int_equal(tc_array_assemble(ctx, d, N - 1, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	assert_false(st.ppl);
	assert_true(st.map_regions > 0);
	tc_dev_close(a);
	tc_ctx_free(ctx);
}

/* A RAID 5 with the write-intent map that crashed degraded: refused, then forced;
 * the forced start drops the map's resync (nothing to resync against), so the array
 * closes clean and assembles unforced afterwards (it stayed dirty at every close,
 * refused for good: found by an admin's trial), with the data written degraded. */
static void test_map_forced_dirty_degraded(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 17, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a, *d[N - 1];
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_BITMAP };
	size_t len = 4 * STRIPE;
	uint8_t *w = malloc(len), *r = malloc(len);

	a = crash_array(f, ctx, &o, N, 80, "mf", m);
	assert_int_equal(tc_array_fail_member(a, 2), 0);
	for (size_t x = 0; x < len; x++)
		w[x] = (uint8_t)val_a(x + 5);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, w, len, STRIPE), 0);
	assert_int_equal(tc_dev_flush(a), 0);
	for (unsigned i = 0; i < N; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	tc_dev_close(a);
	for (unsigned pass = 0; pass < 3; pass++) {
		for (unsigned i = 0, j = 0; i < N; i++)
			if (i != 2)
				assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED,
								  0, &d[j++]), 0);
		/* Pass 0 unforced (refused), 1 forced, 2 unforced again (starts). */
		int want = pass == 0 ? -EUCLEAN : 0;
		assert_int_equal(tc_array_assemble(ctx, d, N - 1, pass == 1 ? TC_ARRAY_FORCE : 0,
						   &a), want);
		if (want)
			continue;
		assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, r, len, STRIPE), 0);
		assert_memory_equal(w, r, len);
		tc_dev_close(a);
	}
	free(w);
	free(r);
	tc_ctx_free(ctx);
}

/* ---- resync touches only the regions the map names -------------------------------- */

static void test_resync_dirty_regions(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 5, TC_LOG_ERROR, &f->log);
	tc_dev *m[N], *a;
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_BITMAP };
	uint8_t *buf = aligned_alloc(4096, 4096);
	struct tc_array_status st;

	a = crash_array(f, ctx, &o, N, 40, "rs", m);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_false(st.ppl);
	/* 2 MiB members: 64 regions of 32 KiB, at least a chunk: 64 KiB, 32 regions. */
	assert_int_equal(st.map_region_size, CHUNK);
	assert_int_equal(st.map_regions, DATA / CHUNK);
	assert_int_equal(st.map_dirty, 0);
	/* Two writes, in stripes 3 and 20 (member offsets 3 and 20 chunks). */
	memset(buf, 0x5a, 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, 4096, 3 * STRIPE + 4096), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, 4096, 20 * STRIPE), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.map_dirty, 2);
	for (unsigned i = 0; i < N; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	tc_dev_close(a);

	tc_dev *d[N], *dd[N];
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	memcpy(dd, d, sizeof(d));       /* assembly takes them over */
	assert_int_equal(tc_array_assemble(ctx, dd, N, 0, &a), 0);
	struct tc_dev_stats before[N], after[N];
	for (unsigned i = 0; i < N; i++)
		tc_dev_stats(d[i], &before[i]);
	assert_int_equal(tc_array_wait(a), 0);
	for (unsigned i = 0; i < N; i++) {
		tc_dev_stats(d[i], &after[i]);
		/* Two rows of one chunk each, nothing else (a full resync: 32 rows). */
		assert_int_equal(after[i].bytes_read - before[i].bytes_read, 2 * CHUNK);
	}
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.map_dirty, 2);      /* cleared once idle for 5 s */
	/* The daemon clears them after daemon_sleep, once flushed. */
	for (int t = 0; t < 20; t++) {
		tc_ctx_advance(ctx, 1000000000ull);
		while (tc_ctx_poll(ctx, 64) > 0)
			;
	}
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.map_dirty, 0);
	tc_dev_close(a);
	/* On the members too: a clean close left the map clear. */
	free(buf);
	tc_ctx_free(ctx);
}

/* ---- a rebuild writes zeros where nothing was ever written ------------------------ */

/*
 * An array records the regions ever written (wimap.c, the written plane), durably
 * before the first write to each: writes to rows 3 and 20, a power cut without a
 * flush, assembly from the files, a hot spare full of 0xab, member 1 failed.  The rebuild reads the
 * survivors in the two written rows only (without the record: every row) and writes
 * zeros to the spare everywhere else; with another member lost after it every byte
 * still reads as written or as zero, and the spare's own bytes are zero outside the
 * written rows.  RAID 5 with each consistency policy, RAID 10, and RAID 5 without the
 * record.
 */
static void unwritten_case(struct fx *f, enum tc_raid_level_id level,
			   enum tc_array_consistency policy, unsigned flags)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 23, TC_LOG_ERROR, &f->log);
	bool r10 = level == TC_RAID10;
	struct tc_array_opts o = { .level = level, .chunk = CHUNK, .consistency = policy };
	uint64_t size = r10 ? (uint64_t)N * DATA / 2 : ASIZE;
	/* Rows 3 and 20: RAID 5 stripes 3 and 20; RAID 10 array chunks 6 (members 0
	 * and 1, row 3) and 41 (members 2 and 3, row 20). */
	uint64_t woff[2] = { r10 ? 6 * CHUNK : 3 * STRIPE, r10 ? 41 * CHUNK : 20 * STRIPE };
	uint64_t wlen[2] = { r10 ? CHUNK : STRIPE, 4096 };
	bool tracked = !(flags & TC_ARRAY_ALL_WRITTEN);
	uint8_t *buf = aligned_alloc(4096, size), *want = calloc(1, size);
	tc_dev *m[N], *a;
	struct tc_array_status st;
	char spare_path[300];

	assert_non_null(buf);
	assert_non_null(want);
	a = crash_array_flags(f, ctx, &o, N, 60, "uw", flags, m);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.written_map_regions, tracked ? DATA / CHUNK : 0);
	assert_int_equal(st.written_regions, 0);
	for (unsigned w = 0; w < 2; w++) {
		for (uint64_t x = 0; x < wlen[w]; x++)
			want[woff[w] + x] = val_a(woff[w] + x) | 1;
		assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, want + woff[w], wlen[w], woff[w]),
				 0);
	}
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.written_regions, tracked ? 2 : 0);
	/* Not even a flush: the bits went out before the writes, FUA; of the writes
	 * the cut may keep any part (what the array reads after assembly is the model
	 * from then on). */
	for (unsigned i = 0; i < N; i++)
		assert_true(tc_crash_power_cut(m[i]) >= 0);
	tc_dev_close(a);

	snprintf(spare_path, sizeof(spare_path), "%s/spare", f->dir);
	int fd = open(spare_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	memset(buf, 0xab, DATA);
	assert_int_equal(pwrite(fd, buf, DATA, RAID_SB_DATA_OFFSET), (ssize_t)DATA);
	close(fd);
	tc_dev *d[N], *dd[N], *sp;
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(tc_dev_open_file(ctx, f->path[i], TC_DEV_BUFFERED, 0, &d[i]), 0);
	memcpy(dd, d, sizeof(d));       /* assembly takes them over */
	assert_int_equal(tc_array_assemble(ctx, dd, N, 0, &a), 0);
	assert_int_equal(tc_array_wait(a), 0);  /* the resync or log replay */
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.written_regions, tracked ? 2 : 0);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, want, size, 0), 0);
	assert_int_equal(tc_dev_open_file(ctx, spare_path, TC_DEV_BUFFERED, 0, &sp), 0);
	assert_int_equal(tc_array_add_spare(a, sp), 0);
	struct tc_dev_stats before[N], after[N];
	for (unsigned i = 0; i < N; i++)
		tc_dev_stats(d[i], &before[i]);
	/* Paced at 1 MB/s (the written rows only): its ETA is that of the written rows
	 * left (two chunks at most: 131 ms), not of every row left at the mean rate. */
	struct tc_array_rebuild_opts ro = { .min_rate = 1000000, .max_rate = 1000000 };
	assert_int_equal(tc_array_set_rebuild(a, &ro), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	unsigned seen = 0;
	for (unsigned step = 0; step < 4000; step++) {
		tc_ctx_advance(ctx, 100000);
		while (tc_ctx_poll(ctx, 64) > 0)
			;
		assert_int_equal(tc_array_status(a, &st), 0);
		if (st.sync != TC_ARRAY_SYNC_REBUILD)
			break;
		if (tracked && st.sync_eta_ns) {
			seen++;
			if (st.sync_eta_ns > 2ull * CHUNK * 1000 + 20000000) {
				print_error("ETA %" PRIu64 " ns at %" PRIu64 " of %" PRIu64 "\n",
					    st.sync_eta_ns, st.sync_pos, st.sync_end);
				fail();
			}
		}
	}
	assert_true(!tracked || seen > 0);
	ro.min_rate = ro.max_rate = 0;
	assert_int_equal(tc_array_set_rebuild(a, &ro), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	uint64_t survivors = 0;
	for (unsigned i = 0; i < N; i++) {
		tc_dev_stats(d[i], &after[i]);
		if (i != 1)
			survivors += after[i].bytes_read - before[i].bytes_read;
	}
	/* RAID 5: the three survivors, a chunk each per row; RAID 10: member 0. */
	uint64_t rows = tracked ? 2 : DATA / CHUNK;
	assert_int_equal(survivors, rows * CHUNK * (r10 ? 1 : N - 1));
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, size, 0), 0);
	assert_memory_equal(buf, want, size);
	/* The spare is all that is left of member 1's copies (RAID 10) or what the
	 * parity needs besides member 2's survivors (RAID 5). */
	assert_int_equal(tc_array_fail_member(a, r10 ? 0 : 2), 0);
	memset(buf, 0x11, size);
	assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, size, 0), 0);
	assert_memory_equal(buf, want, size);
	tc_dev_close(a);
	fd = open(spare_path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, DATA, RAID_SB_DATA_OFFSET), (ssize_t)DATA);
	close(fd);
	for (uint64_t row = 0; row < DATA / CHUNK; row++) {
		if (row == 3 || row == 20)
			continue;
		for (uint64_t x = 0; x < CHUNK; x++)
			if (buf[row * CHUNK + x])
				fail_msg("spare row %" PRIu64 " byte %" PRIu64 ": 0x%02x, not zero",
					 row, x, buf[row * CHUNK + x]);
	}
	unlink(spare_path);
	free(buf);
	free(want);
	tc_ctx_free(ctx);
}

/* Member requests that change data: writes, write-zeroes and discards. */
static uint64_t member_changes(tc_dev **m)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < N; i++) {
		struct tc_dev_stats st;
		tc_dev_stats(m[i], &st);
		n += st.writes + st.write_zeroes + st.discards;
	}
	return n;
}

/*
 * WRITE_ZEROES and DISCARD wholly in regions never written do nothing (the members
 * hold zeros there): a discard of the whole new array writes no member byte.  Once a
 * region is written, they go through as before, and the array reads zeros after
 * them.  Without the record (TC_ARRAY_ALL_WRITTEN) a discard writes the members.
 */
static void zeroes_case(struct fx *f, enum tc_raid_level_id level, unsigned flags)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 29, TC_LOG_ERROR, &f->log);
	struct tc_array_opts o = { .level = level, .chunk = CHUNK };
	tc_dev *m[N], *a;
	uint8_t *buf = aligned_alloc(4096, CHUNK), *zero = calloc(1, CHUNK);

	assert_non_null(buf);
	assert_non_null(zero);
	a = crash_array_flags(f, ctx, &o, N, 70, "zw", flags, m);
	struct tc_dev_info info;
	tc_dev_info(a, &info);
	uint64_t size = info.size, w0 = member_changes(m);
	assert_int_equal(tc_dev_io(a, TC_OP_DISCARD, 0, NULL, size, 0), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE_ZEROES, 0, NULL, size / 2, size / 4), 0);
	if (flags & TC_ARRAY_ALL_WRITTEN)
		assert_true(member_changes(m) > w0);
	else
		assert_int_equal(member_changes(m), w0);
	/* Two written regions: the zeroes of the whole array reach them and only them
	 * (a whole-array request that touched a written region went through whole, and
	 * the record then said every region was written). */
	struct tc_array_status st;
	memset(buf, 0x77, 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, 4096, 5 * CHUNK + 4096), 0);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, 4096, size - 4096), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	uint64_t nwritten = st.written_regions;
	w0 = member_changes(m);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE_ZEROES, 0, NULL, size, 0), 0);
	assert_true(member_changes(m) > w0);
	assert_int_equal(tc_dev_io(a, TC_OP_DISCARD, 0, NULL, size, 0), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.written_regions, nwritten);
	if (!(flags & TC_ARRAY_ALL_WRITTEN))
		assert_true(nwritten <= 4);
	for (uint64_t off = 0; off < size; off += CHUNK) {
		assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, CHUNK, off), 0);
		assert_memory_equal(buf, zero, CHUNK);
	}
	tc_dev_close(a);
	free(buf);
	free(zero);
	tc_ctx_free(ctx);
}

static void test_zeroes_unwritten(void **state)
{
	struct fx *f = *state;

	zeroes_case(f, TC_RAID5, 0);
	zeroes_case(f, TC_RAID6, 0);
	zeroes_case(f, TC_RAID10, 0);
	zeroes_case(f, TC_RAID1, 0);
	zeroes_case(f, TC_RAID5, TC_ARRAY_ALL_WRITTEN);
}

static void test_rebuild_skips_unwritten(void **state)
{
	struct fx *f = *state;

	unwritten_case(f, TC_RAID5, TC_CONSISTENCY_PPL, 0);
	unwritten_case(f, TC_RAID5, TC_CONSISTENCY_BITMAP, 0);
	unwritten_case(f, TC_RAID10, TC_CONSISTENCY_DEFAULT, 0);
	unwritten_case(f, TC_RAID5, TC_CONSISTENCY_PPL, TC_ARRAY_ALL_WRITTEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ppl_codec),
		cmocka_unit_test(test_map_codec),
		cmocka_unit_test_setup_teardown(test_rebuild_skips_unwritten, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_zeroes_unwritten, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_hole, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_hole_full_stripes, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_hole_degraded, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_log_prior_unflushed, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_log_stale_rejoined, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_hole_replace, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_replace_resumed_keeps_writes, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_failure_recorded_first, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_mirror_resync, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mirror_resync_durable, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_mirror_resync_survives_close, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_mirror_resync_after_failed_rebuild, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_map_degraded_assembly, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_map_forced_dirty_degraded, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_resync_dirty_regions, fx_setup,
						fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
