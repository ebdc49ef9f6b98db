/* SPDX-License-Identifier: MIT */
/*
 * test_raid_readd.c - a member that left an array comes back (tc_array_re_add,
 * src/raid/rebuild.c and wimap.c): while the array is degraded its write-intent map
 * keeps the bits of every region written (a clean stop and an assembly too), the
 * re-added member is resynced in those regions only (the survivors' reads are
 * counted), and afterwards it holds every byte (the other members failed in turn,
 * the array read whole against a model).  Also: a resync cut by a stop resumes as
 * one; a member whose flush fails while the map is being cleared keeps the bits it
 * may lack; and every refusal (no write-intent map, an active slot, a blank device,
 * a member of another array, a slot a spare has taken) with its message, nothing
 * changed.  RAID 1, 10, 5 and 6 over files, deterministic contexts.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "raid/raid.h"
#include "tiercache.h"
#include "tiercache-test.h"
#include "helpers.h"

#define NMAX 6
#define CHUNK (64u << 10)
#define DATA (2u << 20)                 /* bytes of data per member: 32 regions */
#define MSIZE (TC_ARRAY_DATA_OFFSET + DATA)
#define X 1u                            /* the member that leaves and comes back */
#define WLEN (384u << 10)               /* a write while it is away */

struct fx {
	char dir[256];
	char path[NMAX + 2][300];       /* members, then a spare and a stranger */
	struct t_log log;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(t_mkdtemp(f->dir, sizeof(f->dir), "tc-raid-readd"), 0);
	for (unsigned i = 0; i < NMAX + 2; i++)
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

static tc_dev *open_path(tc_ctx *ctx, const char *path, bool create)
{
	tc_dev *d;
	if (create)
		unlink(path);
	assert_int_equal(tc_dev_open_file(ctx, path, TC_DEV_BUFFERED |
					  (create ? TC_DEV_CREATE : 0), MSIZE, &d), 0);
	return d;
}

/* A new array "ra" of @n files (members in @m, which the array owns). */
static tc_dev *new_array(struct fx *f, tc_ctx *ctx, enum tc_raid_level_id level,
			 enum tc_array_consistency policy, unsigned n, tc_dev **m)
{
	struct tc_array_opts o = { .level = level, .chunk = CHUNK, .consistency = policy };
	tc_dev *a;
	for (unsigned i = 0; i < n; i++)
		m[i] = open_path(ctx, f->path[i], true);
	assert_int_equal(tc_array_create(ctx, "ra", &o, m, n, NULL, 0, 0, &a), 0);
	return a;
}

static uint64_t asize(tc_dev *a)
{
	struct tc_dev_info info;
	tc_dev_info(a, &info);
	return info.size;
}

static uint8_t val(uint64_t off, unsigned gen)
{
	return (uint8_t)(off / 4096 * 31 + gen * 97 + 5);
}

/* Write [@off, @off + @len) of generation @gen to the array and the model. */
static void put(tc_dev *a, uint8_t *model, uint64_t off, uint64_t len, unsigned gen)
{
	uint8_t *buf = aligned_alloc(4096, len);
	assert_non_null(buf);
	for (uint64_t x = 0; x < len; x += 4096)
		memset(buf + x, val(off + x, gen), 4096);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, len, off), 0);
	memcpy(model + off, buf, len);
	free(buf);
}

/* The whole array against the model. */
static void check_model(tc_dev *a, const uint8_t *model)
{
	uint64_t size = asize(a);
	uint8_t *buf = aligned_alloc(4096, 1u << 20);
	assert_non_null(buf);
	for (uint64_t off = 0; off < size; off += 1u << 20) {
		uint64_t len = size - off < (1u << 20) ? size - off : 1u << 20;
		assert_int_equal(tc_dev_io(a, TC_OP_READ, 0, buf, len, off), 0);
		assert_memory_equal(buf, model + off, len);
	}
	free(buf);
}

/* 20 s of the context's clock: the write-intent daemon clears what it may. */
static void settle(tc_ctx *ctx)
{
	for (int t = 0; t < 20; t++) {
		tc_ctx_advance(ctx, 1000000000ull);
		while (tc_ctx_poll(ctx, 64) > 0)
			;
	}
}

static uint64_t reads_of(tc_dev **m, unsigned n, unsigned skip)
{
	uint64_t b = 0;
	for (unsigned i = 0; i < n; i++)
		if (i != skip && m[i]) {
			struct tc_dev_stats st;
			tc_dev_stats(m[i], &st);
			b += st.bytes_read;
		}
	return b;
}

static struct tc_array_status *status(tc_dev *a)
{
	static struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	return &st;
}

/* The array whole, then member X fails and three writes of 384 KiB land while it is
 * away, each covering a whole stripe at least (so that X, data or parity, misses
 * some of every one): the map keeps their bits (20 s of idle would clear them on a
 * whole array).  Returns the model. */
static uint8_t *degrade_and_write(tc_ctx *ctx, tc_dev *a)
{
	uint64_t size = asize(a);
	uint8_t *model = malloc(size);
	assert_non_null(model);
	for (uint64_t off = 0; off < size; off += 1u << 20)
		put(a, model, off, size - off < (1u << 20) ? size - off : 1u << 20, 1);
	settle(ctx);
	assert_int_equal(status(a)->map_dirty, 0);
	assert_int_equal(tc_array_fail_member(a, X), 0);
	put(a, model, size / 8 + 4096, WLEN, 2);
	put(a, model, size / 2, WLEN, 2);
	put(a, model, size - WLEN, WLEN, 2);
	uint64_t dirty = status(a)->map_dirty;
	assert_true(dirty >= 3 && dirty <= 3 * (WLEN / CHUNK + 1));
	settle(ctx);
	assert_true(status(a)->degraded);
	assert_int_equal(status(a)->map_dirty, dirty);
	return model;
}

/* After the re-add: X active, the array whole; then members @others fail and the
 * array (X carrying what they held) still reads as the model. */
static void fail_others_and_check(tc_dev *a, const uint8_t *model, const unsigned *others,
				  unsigned nothers)
{
	struct tc_array_status *st = status(a);
	assert_false(st->degraded);
	assert_int_equal(st->member[X].state, TC_MEMBER_ACTIVE);
	for (unsigned i = 0; i < nothers; i++)
		assert_int_equal(tc_array_fail_member(a, others[i]), 0);
	check_model(a, model);
}

static void readd_case(struct fx *f, enum tc_raid_level_id level, unsigned n,
		       const unsigned *others, unsigned nothers, uint64_t seed)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, seed, TC_LOG_ERROR, &f->log);
	tc_dev *m[NMAX];
	tc_dev *a = new_array(f, ctx, level, TC_CONSISTENCY_BITMAP, n, m);
	uint8_t *model = degrade_and_write(ctx, a);
	uint64_t rsz = status(a)->map_region_size, dirty = status(a)->map_dirty;
	uint64_t before = reads_of(m, n, X);

	m[X] = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, m[X]), 0);
	assert_int_equal(tc_array_wait(a), 0);
	/* The regions written, no more: each survivor reads at most those (a whole
	 * rebuild reads DATA from each one it reads). */
	uint64_t read = reads_of(m, n, X) - before;
	assert_true(read > 0);
	assert_true(read <= dirty * rsz * (n - 1));
	assert_true(read < DATA);
	/* Whole again: the bits kept for X go once idle. */
	settle(ctx);
	assert_int_equal(status(a)->map_dirty, 0);
	fail_others_and_check(a, model, others, nothers);
	tc_dev_close(a);
	free(model);
	tc_ctx_free(ctx);
}

static void test_readd_levels(void **state)
{
	struct fx *f = *state;
	static const unsigned r1[] = { 0 }, r10[] = { 0 }, r5[] = { 3 }, r6[] = { 0, 4 };

	readd_case(f, TC_RAID1, 2, r1, 1, 3);
	readd_case(f, TC_RAID10, 4, r10, 1, 5);         /* near layout: 0 and 1 a pair */
	readd_case(f, TC_RAID5, 4, r5, 1, 7);
	readd_case(f, TC_RAID6, 5, r6, 2, 9);
}

/* Degraded, stopped cleanly, assembled without the member: the bits are still there
 * (read back at a clean assembly, not cleared at the close), and the re-add resyncs
 * them. */
static void test_readd_after_restart(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 11, TC_LOG_ERROR, &f->log);
	const unsigned n = 4;
	tc_dev *m[NMAX], *d[NMAX];
	tc_dev *a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_BITMAP, n, m);
	uint8_t *model = degrade_and_write(ctx, a);
	tc_dev_close(a);

	for (unsigned i = 0, j = 0; i < n; i++)
		if (i != X)
			d[j++] = m[i] = open_path(ctx, f->path[i], false);
	assert_int_equal(tc_array_assemble(ctx, d, n - 1, 0, &a), 0);
	assert_true(status(a)->degraded);
	uint64_t dirty = status(a)->map_dirty;
	assert_true(dirty >= 3);
	settle(ctx);
	assert_int_equal(status(a)->map_dirty, dirty);
	uint64_t rsz = status(a)->map_region_size, before = reads_of(m, n, X);
	m[X] = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, m[X]), 0);
	assert_int_equal(tc_array_wait(a), 0);
	uint64_t read = reads_of(m, n, X) - before;
	assert_true(read > 0 && read <= dirty * rsz * (n - 1));
	static const unsigned others[] = { 0 };
	fail_others_and_check(a, model, others, 1);
	tc_dev_close(a);
	free(model);
	tc_ctx_free(ctx);
}

/* A resync cut by a stop (after its first region, the rate holding the rest back)
 * resumes at the next assembly as a resync: the superblocks record the slot re-added,
 * and the rest of the member is skipped again. */
static void test_readd_resumes(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 13, TC_LOG_ERROR, &f->log);
	const unsigned n = 4;
	tc_dev *m[NMAX], *d[NMAX];
	tc_dev *a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_BITMAP, n, m);
	uint8_t *model = degrade_and_write(ctx, a);
	uint64_t dirty = status(a)->map_dirty;
	struct tc_array_rebuild_opts slow = { .min_rate = 4096, .max_rate = 4096, .depth = 1 };
	assert_int_equal(tc_array_set_rebuild(a, &slow), 0);
	m[X] = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, m[X]), 0);
	for (int i = 0; i < 8; i++)
		(void)tc_ctx_poll(ctx, 64);
	struct tc_array_status *st = status(a);
	assert_int_equal(st->member[X].state, TC_MEMBER_REBUILDING);
	assert_int_equal(st->sync, TC_ARRAY_SYNC_REBUILD);
	assert_true(st->sync_pos < DATA);
	tc_dev_close(a);

	for (unsigned i = 0; i < n; i++)
		d[i] = m[i] = open_path(ctx, f->path[i], false);
	assert_int_equal(tc_array_assemble(ctx, d, n, 0, &a), 0);
	st = status(a);
	assert_int_equal(st->member[X].state, TC_MEMBER_REBUILDING);
	struct tc_array_rebuild_opts fast = { .min_rate = 0, .max_rate = UINT64_MAX };
	assert_int_equal(tc_array_set_rebuild(a, &fast), 0);
	uint64_t rsz = st->map_region_size, before = reads_of(m, n, X);
	assert_int_equal(tc_array_wait(a), 0);
	/* Resumed as a resync: at most the regions written read (a rebuild from the
	 * checkpoint would read most of DATA from every survivor), and something: the
	 * rate let one region through before the stop. */
	uint64_t read = reads_of(m, n, X) - before;
	assert_true(read > 0 && read <= dirty * rsz * (n - 1));
	static const unsigned others[] = { 2 };
	fail_others_and_check(a, model, others, 1);
	tc_dev_close(a);
	free(model);
	tc_ctx_free(ctx);
}

/* Member X's flush fails while the daemon clears a region's bit (the clear follows a
 * flush of every member): X becomes faulty, and the bit stays set, since X's writes
 * there may not have reached its media. */
static void test_flush_failure_keeps_bits(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 17, TC_LOG_ERROR, &f->log);
	const unsigned n = 3;
	tc_dev *m[NMAX], *fl[NMAX], *a;
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = CHUNK,
				   .consistency = TC_CONSISTENCY_BITMAP };
	for (unsigned i = 0; i < n; i++) {
		m[i] = open_path(ctx, f->path[i], true);
		assert_int_equal(tc_dev_new_fault(ctx, m[i], &fl[i]), 0);
	}
	assert_int_equal(tc_array_create(ctx, "ra", &o, fl, n, NULL, 0, 0, &a), 0);
	uint64_t size = asize(a);
	uint8_t *model = calloc(1, size);
	assert_non_null(model);
	settle(ctx);
	put(a, model, 5 * CHUNK * (n - 1), 4096, 3);
	assert_int_equal(status(a)->map_dirty, 1);
	struct tc_fault fault = { .op = TC_FAULT_FLUSH, .error = EIO };
	assert_int_equal(tc_fault_arm(fl[X], &fault), 0);
	settle(ctx);
	struct tc_array_status *st = status(a);
	assert_int_equal(st->member[X].state, TC_MEMBER_FAULTY);
	assert_int_equal(st->map_dirty, 1);
	tc_dev *back = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, back), 0);
	assert_int_equal(tc_array_wait(a), 0);
	static const unsigned others[] = { 0 };
	fail_others_and_check(a, model, others, 1);
	tc_dev_close(a);
	free(model);
	tc_ctx_free(ctx);
}

/* Refused, each with its message, the array unchanged: what cannot come back. */
static void test_refusals(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 19, TC_LOG_ERROR, &f->log);
	const unsigned n = 3;
	tc_dev *m[NMAX], *a, *d;

	/* The partial-parity log keeps no write-intent map. */
	a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_PPL, n, m);
	assert_int_equal(tc_array_fail_member(a, X), 0);
	d = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "array ra keeps no write-intent map"));
	assert_int_equal(status(a)->member[X].state, TC_MEMBER_FAULTY);
	tc_dev_close(a);

	a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_BITMAP, n, m);
	/* An active member. */
	d = open_path(ctx, f->path[0], false);
	assert_int_equal(tc_array_re_add(a, d), -EBUSY);
	assert_non_null(strstr(f->log.last, "held slot 0, which is active: nothing to re-add"));
	/* A blank device. */
	d = open_path(ctx, f->path[NMAX], true);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "holds no valid member superblock"));
	/* A member of another array. */
	tc_dev *om[NMAX], *other;
	struct tc_array_opts oo = { .level = TC_RAID1, .chunk = CHUNK };
	om[0] = open_path(ctx, f->path[NMAX], true);
	om[1] = open_path(ctx, f->path[NMAX + 1], true);
	assert_int_equal(tc_array_create(ctx, "other", &oo, om, 2, NULL, 0, 0, &other), 0);
	tc_dev_close(other);
	assert_int_equal(tc_array_fail_member(a, X), 0);
	d = open_path(ctx, f->path[NMAX], false);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "is a member of array \"other\""));
	assert_int_equal(status(a)->member[X].state, TC_MEMBER_FAULTY);
	/* A slot a spare has taken since. */
	d = open_path(ctx, f->path[NMAX + 1], true);
	assert_int_equal(tc_array_add_spare(a, d), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_false(status(a)->degraded);
	d = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "held slot 1, which another member has taken"));
	assert_false(status(a)->degraded);
	/* A spare that had not finished its rebuild when it failed: refused, though its
	 * uuid is the slot's. */
	tc_dev_close(a);
	a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_BITMAP, n, m);
	uint8_t *buf = aligned_alloc(4096, 1u << 20);
	assert_non_null(buf);
	memset(buf, 0x3c, 1u << 20);
	assert_int_equal(tc_dev_io(a, TC_OP_WRITE, 0, buf, 1u << 20, 0), 0);
	free(buf);
	struct tc_array_rebuild_opts slow = { .min_rate = 4096, .max_rate = 4096, .depth = 1 };
	assert_int_equal(tc_array_set_rebuild(a, &slow), 0);
	d = open_path(ctx, f->path[NMAX + 1], true);
	assert_int_equal(tc_array_add_spare(a, d), 0);
	assert_int_equal(tc_array_fail_member(a, X), 0);
	for (int i = 0; i < 8; i++)
		(void)tc_ctx_poll(ctx, 64);
	assert_int_equal(status(a)->member[X].state, TC_MEMBER_REBUILDING);
	tc_ctx_advance(ctx, 6000000000ull);     /* a checkpoint: its superblock written */
	for (int i = 0; i < 8; i++)
		(void)tc_ctx_poll(ctx, 64);
	assert_int_equal(tc_array_fail_member(a, X), 0);
	assert_int_equal(status(a)->member[X].state, TC_MEMBER_FAULTY);
	d = open_path(ctx, f->path[NMAX + 1], false);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "was still being rebuilt into slot 1"));
	d = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, d), -EINVAL);
	assert_non_null(strstr(f->log.last, "which another member has taken"));
	assert_int_equal(status(a)->member[X].state, TC_MEMBER_FAULTY);
	/* Not an array, RAID 0. */
	d = open_path(ctx, f->path[X], false);
	tc_dev *mem;
	assert_int_equal(tc_dev_new_memory(ctx, 1u << 20, &mem), 0);
	assert_int_equal(tc_array_re_add(mem, d), -EINVAL);
	tc_dev_close(mem);
	tc_dev_close(a);
	tc_ctx_free(ctx);
}

/* An array written by a version that cleared its bits while degraded (its
 * superblocks without RAID_SB_KEEPBITS: taken off here) keeps them from the next
 * assembly on; a member that left before that cannot be re-added. */
static void strip_keepbits(const char *path)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 1, TC_LOG_ERROR, NULL);
	tc_dev *d = open_path(ctx, path, false);
	uint8_t *b = aligned_alloc(4096, RAID_SB_SIZE);
	assert_non_null(b);
	for (unsigned copy = 0; copy < 2; copy++) {
		struct raid_sb sb;
		char why[200];
		assert_int_equal(tc_dev_io(d, TC_OP_READ, 0, b, RAID_SB_SIZE,
					   copy * RAID_SB_SIZE), 0);
		assert_int_equal(raid_sb_decode(b, RAID_SB_SIZE, &sb, why, sizeof(why)),
				 RAID_SB_OK);
		assert_true(sb.flags & RAID_SB_KEEPBITS);
		sb.flags &= ~RAID_SB_KEEPBITS;
		sb.keep_since = 0;
		raid_sb_encode(&sb, b);
		assert_int_equal(tc_dev_io(d, TC_OP_WRITE, TC_IO_FUA, b, RAID_SB_SIZE,
					   copy * RAID_SB_SIZE), 0);
	}
	free(b);
	tc_dev_close(d);
	tc_ctx_free(ctx);
}

static void test_readd_older_array(void **state)
{
	struct fx *f = *state;
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 23, TC_LOG_ERROR, &f->log);
	const unsigned n = 3;
	tc_dev *m[NMAX], *d[NMAX];
	tc_dev *a = new_array(f, ctx, TC_RAID5, TC_CONSISTENCY_BITMAP, n, m);
	tc_dev_close(a);
	for (unsigned i = 0; i < n; i++)
		strip_keepbits(f->path[i]);
	/* X missing: started degraded (forced), the flag set from then on. */
	for (unsigned i = 0, j = 0; i < n; i++)
		if (i != X)
			d[j++] = open_path(ctx, f->path[i], false);
	assert_int_equal(tc_array_assemble(ctx, d, n - 1, TC_ARRAY_FORCE, &a), 0);
	tc_dev *back = open_path(ctx, f->path[X], false);
	assert_int_equal(tc_array_re_add(a, back), -EINVAL);
	assert_non_null(strstr(f->log.last, "before its write-intent map kept its bits"));
	assert_true(status(a)->degraded);
	tc_dev_close(a);
	tc_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readd_levels, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readd_after_restart, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readd_resumes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_flush_failure_keeps_bits, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_refusals, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readd_older_array, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
