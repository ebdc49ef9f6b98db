/* SPDX-License-Identifier: MIT */
/*
 * test_raid_array.c - arrays of memory members (src/raid/): for every level, every
 * sector written through the array lands on the member and offset its layout says,
 * and parity where it says (checked by reading the members directly and recomputing P
 * and Q with plain GF(2^8) arithmetic); limits and status; refusals of bad options,
 * each naming the value; degraded reads and writes, and -EIO once past the
 * redundancy, with the health events; read-error repair through a fault layer (the
 * data comes back right and is rewritten to the member, which stays active) and a
 * member that cannot be rewritten becoming faulty; FLUSH and FUA reaching the
 * members; RAID 60 as RAID 0 over two RAID 6 arrays.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dev.h"
#include "tiercache-test.h"
#include "raid_common.h"

#define CHUNK 4096u
#define MEMBER (64u * CHUNK)

/* Log sink keeping the last error, to check that refusals name the value. */
static char last_err[512];

static void keep_log(void *opaque, enum tc_log_level level, const char *msg)
{
	if (level == TC_LOG_ERROR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
}

static uint8_t *member_image(struct raid_fx *fx, unsigned i)
{
	uint8_t *img = malloc(MEMBER);

	assert_non_null(img);
	assert_int_equal(tc_dev_pread(fx->member[i], img, MEMBER, 0), 0);
	return img;
}

/* Fill the whole array with random data through it; return the data. */
static uint8_t *fill_array(struct raid_fx *fx, uint64_t seed)
{
	struct tc_dev_info info;
	tc_dev_info(fx->array, &info);
	uint8_t *data = malloc(info.size);

	assert_non_null(data);
	raid_fill(data, info.size, &seed);
	/* In uneven pieces, so that partial stripes are written as well as full ones. */
	for (uint64_t off = 0; off < info.size;) {
		uint64_t len = (1 + raid_rand(&seed) % 24) * TC_SECTOR_SIZE;
		if (len > info.size - off)
			len = info.size - off;
		assert_int_equal(tc_dev_pwrite(fx->array, data + off, len, off, 0), 0);
		off += len;
	}
	return data;
}

static void check_read_back(struct raid_fx *fx, const uint8_t *data)
{
	struct tc_dev_info info;
	tc_dev_info(fx->array, &info);
	uint8_t *back = malloc(info.size);

	assert_int_equal(tc_dev_pread(fx->array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	free(back);
}

/* ---- mapping ------------------------------------------------------------------------ */

static void check_mapped_chunk(enum tc_raid_level_id level, unsigned n, unsigned copies,
			       uint32_t chunk)
{
	struct raid_fx fx;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = 1 };
	struct tc_array_opts ao = { .level = level, .chunk = chunk,
				    .copies = level == TC_RAID10 ? copies : 0 };
	uint8_t *img[TC_ARRAY_MAX_MEMBERS];

	memset(&fx, 0, sizeof(fx));
	assert_int_equal(tc_ctx_new(&co, &fx.ctx), 0);
	fx.n = n;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(tc_dev_new_memory(fx.ctx, MEMBER, &fx.member[i]), 0);
	assert_int_equal(tc_dev_new_array(fx.ctx, &ao, fx.member, n, &fx.array), 0);

	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	assert_string_equal(info.backend, "array");
	uint64_t chunks = (uint64_t)MEMBER / chunk * n / copies;
	assert_int_equal(info.size, chunks * chunk);

	uint8_t *data = fill_array(&fx, 42 + n);
	for (unsigned i = 0; i < n; i++)
		img[i] = member_image(&fx, i);
	for (uint64_t c = 0; c < chunks; c++)
		for (unsigned r = 0; r < copies; r++) {
			unsigned mem;
			uint64_t row;
			if (level == TC_RAID1) {
				mem = r;
				row = c;
			} else {
				uint64_t slot = c * copies + r;   /* md's near layout */
				mem = (unsigned)(slot % n);
				row = slot / n;
			}
			assert_memory_equal(img[mem] + row * chunk, data + c * chunk, chunk);
		}
	check_read_back(&fx, data);
	for (unsigned i = 0; i < n; i++)
		free(img[i]);
	free(data);
	raid_fx_close(&fx);
}

static void check_mapped(enum tc_raid_level_id level, unsigned n, unsigned copies)
{
	check_mapped_chunk(level, n, copies, CHUNK);
}

static void test_map_raid0(void **state)
{
	check_mapped(TC_RAID0, 2, 1);
	check_mapped(TC_RAID0, 5, 1);
	/* Chunks that are not powers of two (RAID 0 only): three and five 4 KiB pages. */
	check_mapped_chunk(TC_RAID0, 3, 1, 3 * 4096);
	check_mapped_chunk(TC_RAID0, 2, 1, 5 * 4096);
}

static void test_map_raid1(void **state)
{
	check_mapped(TC_RAID1, 2, 2);
	check_mapped(TC_RAID1, 3, 3);
}

static void test_map_raid10(void **state)
{
	check_mapped(TC_RAID10, 4, 2);
	check_mapped(TC_RAID10, 5, 2);  /* copy sets rotate over the members */
	check_mapped(TC_RAID10, 6, 3);
}

/* Every data chunk where the left-symmetric rotation puts it, P and Q recomputed. */
static void check_parity_layout(enum tc_raid_level_id level, unsigned n)
{
	unsigned m = level == TC_RAID6 ? 2 : 1, k = n - m;
	struct raid_fx fx;
	uint8_t *img[TC_ARRAY_MAX_MEMBERS];
	uint8_t p[CHUNK], q[CHUNK];

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 3, level, n, CHUNK, MEMBER), 0);
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	assert_int_equal(info.size, (uint64_t)MEMBER * k);
	uint8_t *data = fill_array(&fx, 77 + n);
	for (unsigned i = 0; i < n; i++)
		img[i] = member_image(&fx, i);
	for (uint64_t s = 0; s < MEMBER / CHUNK; s++) {
		uint8_t *d[TC_ARRAY_MAX_MEMBERS];
		for (unsigned j = 0; j < k; j++) {
			d[j] = img[ref_r56_member(n, m, s, j)] + s * CHUNK;
			assert_memory_equal(d[j], data + (s * k + j) * CHUNK, CHUNK);
		}
		ref_pq(k, CHUNK, d, p, q);
		assert_memory_equal(img[ref_r56_member(n, m, s, k)] + s * CHUNK, p, CHUNK);
		if (m == 2)
			assert_memory_equal(img[ref_r56_member(n, m, s, k + 1)] + s * CHUNK, q,
					    CHUNK);
	}
	/* The rotation itself, for stripe 0 and 1 of 6 members: P on the last member and
	 * Q wrapping to the first, then P one member to the left. */
	if (level == TC_RAID6 && n == 6) {
		assert_int_equal(ref_r56_member(6, 2, 0, k), 5);
		assert_int_equal(ref_r56_member(6, 2, 0, k + 1), 0);
		assert_int_equal(ref_r56_member(6, 2, 0, 0), 1);
		assert_int_equal(ref_r56_member(6, 2, 1, k), 4);
		assert_int_equal(ref_r56_member(6, 2, 1, 0), 0);
	}
	check_read_back(&fx, data);
	for (unsigned i = 0; i < n; i++)
		free(img[i]);
	free(data);
	raid_fx_close(&fx);
}

static void test_map_raid5(void **state)
{
	check_parity_layout(TC_RAID5, 3);
	check_parity_layout(TC_RAID5, 5);
}

static void test_map_raid6(void **state)
{
	check_parity_layout(TC_RAID6, 4);
	check_parity_layout(TC_RAID6, 6);
	check_parity_layout(TC_RAID6, 9);
}

/* ---- options, limits, status -------------------------------------------------------- */

static int try_open(tc_ctx *ctx, enum tc_raid_level_id level, unsigned n, uint32_t chunk,
		    unsigned copies, uint64_t last_size)
{
	tc_dev *m[TC_ARRAY_MAX_MEMBERS + 1], *a = NULL;
	struct tc_array_opts ao = { .level = level, .chunk = chunk, .copies = copies };

	for (unsigned i = 0; i < n; i++)
		assert_int_equal(tc_dev_new_memory(ctx, i == n - 1 ? last_size : MEMBER, &m[i]),
				 0);
	last_err[0] = 0;
	int r = tc_dev_new_array(ctx, &ao, m, n, &a);
	if (r == 0)
		tc_dev_close(a);
	else
		assert_null(a);
	return r;
}

static void test_bad_options(void **state)
{
	tc_ctx *ctx;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC };

	assert_int_equal(tc_ctx_new(&co, &ctx), 0);
	tc_ctx_set_log(ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(try_open(ctx, TC_RAID6, 3, 0, 0, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "3 members for raid6"));
	assert_int_equal(try_open(ctx, TC_RAID5, 2, 0, 0, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "2 members for raid5"));
	assert_int_equal(try_open(ctx, TC_RAID0, 1, 0, 0, MEMBER), -EINVAL);
	assert_int_equal(try_open(ctx, TC_RAID5, 3, 12288, 0, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "chunk 12288"));
	assert_int_equal(try_open(ctx, TC_RAID5, 3, 2048, 0, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "chunk 2048"));
	assert_int_equal(try_open(ctx, TC_RAID5, 3, 128u << 20, 0, MEMBER), -EINVAL);
	assert_int_equal(try_open(ctx, (enum tc_raid_level_id)7, 3, 0, 0, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "level 7"));
	assert_int_equal(try_open(ctx, TC_RAID10, 3, 0, 4, MEMBER), -EINVAL);
	assert_int_equal(try_open(ctx, TC_RAID5, 3, 0, 2, MEMBER), -EINVAL);
	assert_non_null(strstr(last_err, "copies 2"));
	assert_int_equal(try_open(ctx, TC_RAID1, 2, 8192, 0, 4096), -EINVAL);
	assert_non_null(strstr(last_err, "smaller than one chunk"));
	/* Members of different sizes: the smallest, in whole chunks, is used. */
	assert_int_equal(try_open(ctx, TC_RAID5, 3, CHUNK, 0, MEMBER / 2 +
				  2 * CHUNK), 0);
	/* Members of different block sizes (a memory device given 4096-byte blocks, as a
	 * 4Kn disk has). */
	{
		tc_dev *m[3], *a = NULL;
		for (unsigned i = 0; i < 3; i++)
			assert_int_equal(tc_dev_new_memory(ctx, MEMBER, &m[i]), 0);
		m[2]->lbs = 4096;
		struct tc_array_opts ao = { .level = TC_RAID5, .chunk = CHUNK };
		assert_int_equal(tc_dev_new_array(ctx, &ao, m, 3, &a), -EINVAL);
		assert_null(a);
		assert_non_null(strstr(last_err, "member 2"));
		assert_non_null(strstr(last_err, "block size 4096"));
	}
	tc_ctx_free(ctx);
}

static void test_names(void **state)
{
	assert_string_equal(tc_raid_level_name(TC_RAID6), "raid6");
	assert_string_equal(tc_raid_level_name(TC_RAID10), "raid10");
	assert_null(tc_raid_level_name(2));
	assert_int_equal(tc_raid_level_parse("raid5"), TC_RAID5);
	assert_int_equal(tc_raid_level_parse("RAID1"), TC_RAID1);
	assert_int_equal(tc_raid_level_parse("10"), TC_RAID10);
	assert_int_equal(tc_raid_level_parse("raid7"), -EINVAL);
	assert_int_equal(tc_raid_level_parse(NULL), -EINVAL);
}

static void test_limits_status(void **state)
{
	struct raid_fx fx;
	struct tc_dev_limits l;
	struct tc_array_status st;

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 1, TC_RAID6, 6, 0,
				      64u << 20), 0);
	tc_dev_limits(fx.array, &l);
	assert_int_equal(l.io_min, TC_ARRAY_CHUNK_DEFAULT);
	assert_int_equal(l.io_opt, 4 * TC_ARRAY_CHUNK_DEFAULT);
	assert_true(l.partial_stripe_expensive);
	assert_int_equal(l.redundancy, 2);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.level, TC_RAID6);
	assert_int_equal(st.members, 6);
	assert_int_equal(st.data_members, 4);
	assert_int_equal(st.parity, 2);
	assert_int_equal(st.chunk, TC_ARRAY_CHUNK_DEFAULT);
	assert_int_equal(st.redundancy, 2);
	assert_false(st.degraded);
	assert_int_equal(st.faulty, 0);
	assert_int_equal(st.size, 4ull * (64u << 20));
	raid_fx_close(&fx);

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 1, TC_RAID10, 4, CHUNK,
				      MEMBER), 0);
	tc_dev_limits(fx.array, &l);
	assert_int_equal(l.io_min, CHUNK);
	assert_int_equal(l.io_opt, 2 * CHUNK);
	assert_false(l.partial_stripe_expensive);
	assert_int_equal(l.redundancy, 1);
	raid_fx_close(&fx);

	/* Not an array. */
	tc_ctx *ctx;
	tc_dev *mem;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .log_level = TC_LOG_ERROR };
	assert_int_equal(tc_ctx_new(&co, &ctx), 0);
	tc_ctx_set_log(ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_dev_new_memory(ctx, MEMBER, &mem), 0);
	assert_int_equal(tc_array_status(mem, &st), -EINVAL);
	assert_int_equal(tc_array_fail_member(mem, 0), -EINVAL);
	tc_dev_close(mem);
	tc_ctx_free(ctx);
}

/* ---- degraded operation and events -------------------------------------------------- */

struct events {
	unsigned degraded, failed;
	uint8_t last_redundancy;
};

static void on_event(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	struct events *e = opaque;
	struct tc_dev_limits l;

	tc_dev_limits(dev, &l);
	e->last_redundancy = l.redundancy;
	if (ev == TC_DEV_DEGRADED)
		e->degraded++;
	if (ev == TC_DEV_FAILED)
		e->failed++;
}

static void check_degraded(enum tc_raid_level_id level, unsigned n, unsigned survivable)
{
	struct raid_fx fx;
	struct events ev = { 0 };
	struct tc_array_status st;

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 9, level, n, CHUNK, MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_dev_watch(fx.array, on_event, &ev), 0);
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	uint8_t *data = fill_array(&fx, 5);
	uint64_t seed = 1234;

	for (unsigned f = 0; f < survivable; f++) {
		unsigned victim = (f * 2 + 1) % n;
		assert_int_equal(tc_array_fail_member(fx.array, victim), 0);
		assert_int_equal(tc_array_fail_member(fx.array, victim), 1);
		assert_int_equal(ev.degraded, f + 1);
		assert_int_equal(ev.last_redundancy, survivable - f - 1);
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_true(st.degraded);
		assert_int_equal(st.member[victim].state, TC_MEMBER_FAULTY);
		/* Junk on the faulty member, below the array: it must not be read. */
		uint8_t *junk = malloc(MEMBER);
		raid_fill(junk, MEMBER, &seed);
		assert_int_equal(tc_dev_pwrite(fx.member[victim], junk, MEMBER, 0, 0), 0);
		free(junk);
		/* Every byte still reads right, and writes keep it so. */
		check_read_back(&fx, data);
		for (unsigned w = 0; w < 40; w++) {
			uint64_t len = (1 + raid_rand(&seed) % 20) * TC_SECTOR_SIZE;
			uint64_t off = raid_rand(&seed) % (info.size / TC_SECTOR_SIZE) *
				TC_SECTOR_SIZE;
			if (off + len > info.size)
				len = info.size - off;
			raid_fill(data + off, len, &seed);
			assert_int_equal(tc_dev_pwrite(fx.array, data + off, len, off, 0), 0);
		}
		check_read_back(&fx, data);
	}
	/* One more is past the redundancy: every request fails, none returns data. */
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	unsigned next = 0;
	while (st.member[next].state != TC_MEMBER_ACTIVE)
		next++;
	assert_int_equal(tc_array_fail_member(fx.array, next), 0);
	assert_int_equal(ev.failed, 1);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_true(st.failed);
	assert_false(st.degraded);
	assert_int_equal(st.redundancy, -1);
	uint8_t buf[CHUNK];
	assert_int_equal(tc_dev_pread(fx.array, buf, CHUNK, 0), -EIO);
	assert_int_equal(tc_dev_pwrite(fx.array, buf, CHUNK, 0, 0), -EIO);
	assert_int_equal(tc_dev_flush(fx.array), -EIO);
	assert_int_equal(tc_dev_unwatch(fx.array, on_event, &ev), 0);
	free(data);
	raid_fx_close(&fx);
}

static void test_degraded_raid1(void **state)
{
	check_degraded(TC_RAID1, 3, 2);
}

static void test_degraded_raid10(void **state)
{
	check_degraded(TC_RAID10, 4, 1);
}

static void test_degraded_raid5(void **state)
{
	check_degraded(TC_RAID5, 4, 1);
}

static void test_degraded_raid6(void **state)
{
	check_degraded(TC_RAID6, 6, 2);
}

static void test_raid0_fails_at_once(void **state)
{
	check_degraded(TC_RAID0, 3, 0);
}

/* ---- read-error repair -------------------------------------------------------------- */

/* Member @victim under a fault layer; one read fails: the data is right, the member's
 * chunk was rewritten (its write count moved) and it stays active. */
static void check_repair(enum tc_raid_level_id level, unsigned n)
{
	struct raid_fx fx;
	unsigned victim = 1;

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 4, level, n, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	uint8_t *data = malloc(info.size), *back = malloc(info.size);
	uint64_t seed = 8;
	raid_fill(data, info.size, &seed);
	assert_int_equal(tc_dev_pwrite(fx.array, data, info.size, 0, 0), 0);

	/* Every read of the victim fails once, over the whole array: for RAID 1 the reads
	 * go wherever balancing sends them, so fail the next read of each member in
	 * turn. */
	struct tc_dev_stats before, after;
	tc_dev_stats(fx.member[victim], &before);
	struct tc_fault f = { .op = TC_FAULT_READ, .after = 0, .error = EIO, .transient = true };
	assert_int_equal(tc_fault_arm(fx.fault[victim], &f), 0);
	for (uint64_t off = 0; off < info.size; off += CHUNK) {
		assert_int_equal(tc_dev_pread(fx.array, back + off, CHUNK, off), 0);
		struct tc_fault_state fs;
		assert_int_equal(tc_fault_get(fx.fault[victim], &fs), 0);
		if (!fs.armed)
			break;
	}
	assert_int_equal(tc_dev_pread(fx.array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].read_errors, 1);
	assert_int_equal(st.member[victim].corrected, 1);
	tc_dev_stats(fx.member[victim], &after);
	assert_true(after.writes > before.writes);
	assert_int_equal(st.member[victim].state, TC_MEMBER_ACTIVE);
	assert_false(st.degraded);

	/* A member whose reads and rewrites fail becomes faulty; the data stays right. */
	f = (struct tc_fault){ .op = TC_FAULT_ALL, .error = EIO };
	assert_int_equal(tc_fault_arm(fx.fault[victim], &f), 0);
	for (uint64_t off = 0; off < info.size; off += CHUNK)
		assert_int_equal(tc_dev_pread(fx.array, back + off, CHUNK, off), 0);
	assert_memory_equal(back, data, info.size);
	/* A write reaches the members; the victim's fails and it is faulty for sure. */
	assert_int_equal(tc_dev_pwrite(fx.array, data, info.size, 0, 0), 0);
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].state, TC_MEMBER_FAULTY);
	assert_true(st.degraded);
	assert_int_equal(tc_dev_pread(fx.array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	free(data);
	free(back);
	raid_fx_close(&fx);
}

static void test_repair_raid1(void **state)
{
	check_repair(TC_RAID1, 2);
}

static void test_repair_raid10(void **state)
{
	check_repair(TC_RAID10, 4);
}

static void test_repair_raid5(void **state)
{
	check_repair(TC_RAID5, 4);
}

static void test_repair_raid6(void **state)
{
	check_repair(TC_RAID6, 5);
}

/* A RAID 6 read error on a data chunk is rebuilt and rewritten: the member's chunk
 * matches again after the member's inner data was damaged on purpose. */
static void test_repair_rewrites_data(void **state)
{
	struct raid_fx fx;

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 2, TC_RAID6, 5, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t data[3 * CHUNK], back[3 * CHUNK], junk[CHUNK];
	uint64_t seed = 77;
	raid_fill(data, sizeof(data), &seed);
	assert_int_equal(tc_dev_pwrite(fx.array, data, sizeof(data), 0, 0), 0);
	/* Stripe 0: data chunk 0 on member (4 + 2 + 0) % 5 = 1.  Damage it below the
	 * fault layer and fail its next read, as a medium error would. */
	unsigned victim = ref_r56_member(5, 2, 0, 0);
	memset(junk, 0xee, sizeof(junk));
	assert_int_equal(tc_dev_pwrite(fx.member[victim], junk, CHUNK, 0, 0), 0);
	struct tc_fault f = { .op = TC_FAULT_READ, .error = EIO, .transient = true };
	assert_int_equal(tc_fault_arm(fx.fault[victim], &f), 0);
	assert_int_equal(tc_dev_pread(fx.array, back, CHUNK, 0), 0);
	assert_memory_equal(back, data, CHUNK);
	assert_int_equal(tc_dev_pread(fx.member[victim], back, CHUNK, 0), 0);
	assert_memory_equal(back, data, CHUNK);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[victim].corrected, 1);
	assert_int_equal(st.member[victim].state, TC_MEMBER_ACTIVE);
	raid_fx_close(&fx);
}

/* ---- write errors ------------------------------------------------------------------- */

/* A member whose write fails is faulty at once; the write succeeds while the array is
 * within its redundancy (RAID 6, RAID 1), fails with -EIO on RAID 0. */
static void check_write_error(enum tc_raid_level_id level, unsigned n, int expect)
{
	struct raid_fx fx;
	struct events ev = { 0 };

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 3, level, n, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_dev_watch(fx.array, on_event, &ev), 0);
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	uint8_t *data = malloc(info.size), *back = malloc(info.size);
	uint64_t seed = 31;
	raid_fill(data, info.size, &seed);
	struct tc_fault f = { .op = TC_FAULT_WRITE, .error = EIO };
	assert_int_equal(tc_fault_arm(fx.fault[0], &f), 0);
	assert_int_equal(tc_dev_pwrite(fx.array, data, info.size, 0, 0), expect);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_FAULTY);
	assert_non_null(strstr(last_err, expect ? "failed" : "faulty after a write error"));
	if (expect == 0) {
		assert_int_equal(ev.degraded, 1);
		assert_int_equal(tc_dev_pread(fx.array, back, info.size, 0), 0);
		assert_memory_equal(back, data, info.size);
	} else {
		assert_int_equal(ev.failed, 1);
		assert_int_equal(tc_dev_pread(fx.array, back, CHUNK, 0), -EIO);
	}
	free(data);
	free(back);
	raid_fx_close(&fx);
}

static void test_write_error(void **state)
{
	check_write_error(TC_RAID6, 5, 0);
	check_write_error(TC_RAID5, 3, 0);
	check_write_error(TC_RAID1, 2, 0);
	check_write_error(TC_RAID10, 4, 0);
	check_write_error(TC_RAID0, 2, -EIO);
}

/* A read of a read-modify-write fails: the write goes on from the other members, the
 * chunk that failed to read is rewritten, and parity stays right. */
static void test_rmw_read_error(void **state)
{
	struct raid_fx fx;

	assert_int_equal(raid_fx_open_faults(&fx, TC_CTX_DETERMINISTIC, 8, TC_RAID6, 8, CHUNK,
					     MEMBER), 0);
	tc_ctx_set_log(fx.ctx, keep_log, NULL, TC_LOG_ERROR);
	uint8_t stripe[6 * CHUNK], one[CHUNK];
	uint64_t seed = 12;
	raid_fill(stripe, sizeof(stripe), &seed);
	assert_int_equal(tc_dev_pwrite(fx.array, stripe, sizeof(stripe), 0, 0), 0);
	/* One chunk of stripe 0 of 6 data chunks: RMW reads its data chunk, P and Q (3
	 * reads, RCW would read 5).  P's read fails. */
	unsigned p = ref_r56_member(8, 2, 0, 6);
	struct tc_fault f = { .op = TC_FAULT_READ, .error = EIO, .transient = true };
	assert_int_equal(tc_fault_arm(fx.fault[p], &f), 0);
	raid_fill(one, sizeof(one), &seed);
	assert_int_equal(tc_dev_pwrite(fx.array, one, CHUNK, CHUNK, 0), 0);
	memcpy(stripe + CHUNK, one, CHUNK);
	struct tc_fault_state fs;
	assert_int_equal(tc_fault_get(fx.fault[p], &fs), 0);
	assert_int_equal(fs.failed, 1);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	assert_int_equal(st.member[p].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[p].corrected, 1);
	/* P and Q on the members match the data. */
	uint8_t *d[6], img[8][CHUNK], pp[CHUNK], qq[CHUNK];
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(tc_dev_pread(fx.member[i], img[i], CHUNK, 0), 0);
	for (unsigned j = 0; j < 6; j++) {
		d[j] = img[ref_r56_member(8, 2, 0, j)];
		assert_memory_equal(d[j], stripe + j * CHUNK, CHUNK);
	}
	ref_pq(6, CHUNK, d, pp, qq);
	assert_memory_equal(img[p], pp, CHUNK);
	assert_memory_equal(img[ref_r56_member(8, 2, 0, 7)], qq, CHUNK);
	raid_fx_close(&fx);
}

/* ---- FLUSH and FUA ------------------------------------------------------------------ */

static void test_flush_fua(void **state)
{
	struct raid_fx fx;
	struct tc_dev_stats st;
	uint8_t buf[CHUNK] = { 1 };

	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 1, TC_RAID6, 5, CHUNK, MEMBER), 0);
	assert_int_equal(tc_dev_flush(fx.array), 0);
	for (unsigned i = 0; i < 5; i++) {
		tc_dev_stats(fx.member[i], &st);
		assert_int_equal(st.flushes, 1);
	}
	/* A FUA write of one chunk: its data member and both parity members. */
	assert_int_equal(tc_dev_pwrite(fx.array, buf, CHUNK, 0, TC_IO_FUA), 0);
	unsigned writes = 0;
	for (unsigned i = 0; i < 5; i++) {
		tc_dev_stats(fx.member[i], &st);
		writes += (unsigned)st.writes;
	}
	assert_int_equal(writes, 3);
	raid_fx_close(&fx);
}

/* Read-modify-write against reconstruct-write: count member reads. */
static void test_rmw_rcw_choice(void **state)
{
	struct raid_fx fx;
	struct tc_dev_stats st;
	uint8_t buf[8 * CHUNK] = { 0 };

	/* RAID 6 of 10: k = 8.  One chunk: RMW reads 1 + 2 = 3, RCW 7: RMW. */
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 1, TC_RAID6, 10, CHUNK,
				      MEMBER), 0);
	uint64_t reads0 = 0, reads1 = 0;
	for (unsigned i = 0; i < 10; i++) {
		tc_dev_stats(fx.member[i], &st);
		reads0 += st.reads;
	}
	assert_int_equal(tc_dev_pwrite(fx.array, buf, CHUNK, 0, 0), 0);
	for (unsigned i = 0; i < 10; i++) {
		tc_dev_stats(fx.member[i], &st);
		reads1 += st.reads;
	}
	assert_int_equal(reads1 - reads0, 3);
	/* Seven chunks: RMW 9, RCW 1. */
	assert_int_equal(tc_dev_pwrite(fx.array, buf, 7 * CHUNK, 0, 0), 0);
	reads0 = reads1;
	reads1 = 0;
	for (unsigned i = 0; i < 10; i++) {
		tc_dev_stats(fx.member[i], &st);
		reads1 += st.reads;
	}
	assert_int_equal(reads1 - reads0, 1);
	/* A full stripe: none. */
	assert_int_equal(tc_dev_pwrite(fx.array, buf, 8 * CHUNK, 8 * CHUNK, 0), 0);
	reads0 = reads1;
	reads1 = 0;
	for (unsigned i = 0; i < 10; i++) {
		tc_dev_stats(fx.member[i], &st);
		reads1 += st.reads;
	}
	assert_int_equal(reads1 - reads0, 0);
	/* The status counts each method once, as chosen. */
	struct tc_array_status as;
	assert_int_equal(tc_array_status(fx.array, &as), 0);
	assert_int_equal(as.stripe_writes_rmw, 1);
	assert_int_equal(as.stripe_writes_rcw, 1);
	assert_int_equal(as.stripe_writes_full, 1);
	assert_int_equal(as.stripe_writes_degraded, 0);
	/* A member lost: a one-chunk write of a stripe whose lost member holds data it
	 * does not rewrite reads what is there (stripe 0: P on member 9, Q on 0, data
	 * chunk i on member i + 1; member 2 holds chunk 1). */
	assert_int_equal(tc_array_fail_member(fx.array, 2), 0);
	assert_int_equal(tc_dev_pwrite(fx.array, buf, CHUNK, 0, 0), 0);
	assert_int_equal(tc_array_status(fx.array, &as), 0);
	assert_int_equal(as.stripe_writes_rmw + as.stripe_writes_rcw + as.stripe_writes_full +
			 as.stripe_writes_degraded, 4);
	assert_int_equal(as.stripe_writes_degraded, 1);
	raid_fx_close(&fx);
}

/* Overlapping updates of one stripe wait for each other; other stripes go on: count
 * the member requests queued on a deterministic context. */
static void test_stripe_lock(void **state)
{
	struct raid_fx fx;
	struct raid_pending p[3];
	uint8_t buf[3][CHUNK];

	memset(buf, 7, sizeof(buf));
	/* RAID 6 of 10 (8 data chunks): a one-chunk write is a read-modify-write, three
	 * member reads. */
	assert_int_equal(raid_fx_open(&fx, TC_CTX_DETERMINISTIC, 1, TC_RAID6, 10, CHUNK,
				      MEMBER), 0);
	raid_pending_submit(fx.ctx, fx.array, &p[0], TC_OP_WRITE, buf[0], CHUNK, 0);
	assert_int_equal(tc_ctx_pending(fx.ctx), 3);
	/* Another chunk of stripe 0: queued behind the first, nothing submitted. */
	raid_pending_submit(fx.ctx, fx.array, &p[1], TC_OP_WRITE, buf[1], CHUNK, 2 * CHUNK);
	assert_int_equal(tc_ctx_pending(fx.ctx), 3);
	/* A chunk of stripe 1: runs at once. */
	raid_pending_submit(fx.ctx, fx.array, &p[2], TC_OP_WRITE, buf[2], CHUNK, 8 * CHUNK);
	assert_int_equal(tc_ctx_pending(fx.ctx), 6);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(raid_pending_wait(&p[i]), 0);
	uint8_t back[9 * CHUNK];
	assert_int_equal(tc_dev_pread(fx.array, back, sizeof(back), 0), 0);
	assert_memory_equal(back, buf[0], CHUNK);
	assert_memory_equal(back + 2 * CHUNK, buf[1], CHUNK);
	assert_memory_equal(back + 8 * CHUNK, buf[2], CHUNK);
	raid_fx_close(&fx);
}

/* ---- RAID 60 by composition ----------------------------------------------------------- */

static void test_raid60(void **state)
{
	tc_ctx *ctx;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = 6,
				  .log_level = TC_LOG_ERROR };
	tc_dev *leg[2], *mem[2][4], *array;
	struct tc_array_opts r6 = { .level = TC_RAID6, .chunk = CHUNK };
	struct tc_array_opts r0 = { .level = TC_RAID0, .chunk = 2 * CHUNK };
	struct events ev = { 0 };

	assert_int_equal(tc_ctx_new(&co, &ctx), 0);
	tc_ctx_set_log(ctx, keep_log, NULL, TC_LOG_ERROR);
	for (unsigned l = 0; l < 2; l++) {
		for (unsigned i = 0; i < 4; i++)
			assert_int_equal(tc_dev_new_memory(ctx, MEMBER, &mem[l][i]), 0);
		assert_int_equal(tc_dev_new_array(ctx, &r6, mem[l], 4, &leg[l]), 0);
	}
	assert_int_equal(tc_dev_new_array(ctx, &r0, leg, 2, &array), 0);
	assert_int_equal(tc_dev_watch(array, on_event, &ev), 0);
	struct tc_dev_info info;
	struct tc_dev_limits lim;
	tc_dev_info(array, &info);
	assert_int_equal(info.size, 2ull * 2 * MEMBER);
	tc_dev_limits(array, &lim);
	assert_int_equal(lim.redundancy, 2);  /* two members of either leg */
	/* Partial writes cost what they cost a leg: its full stripe and chunk. */
	assert_true(lim.partial_stripe_expensive);
	assert_int_equal(lim.io_opt, 2 * CHUNK);
	assert_int_equal(lim.io_min, CHUNK);

	uint8_t *data = malloc(info.size), *back = malloc(info.size);
	uint64_t seed = 60;
	raid_fill(data, info.size, &seed);
	assert_int_equal(tc_dev_pwrite(array, data, info.size, 0, 0), 0);
	/* Outer chunk 1 (bytes 8 KiB..16 KiB) is leg 1's first full stripe. */
	uint8_t *img = malloc(2 * CHUNK);
	assert_int_equal(tc_dev_pread(leg[1], img, 2 * CHUNK, 0), 0);
	assert_memory_equal(img, data + 2 * CHUNK, 2 * CHUNK);
	free(img);

	/* Two members of leg 0 and two of leg 1 fail: everything still reads right. */
	assert_int_equal(tc_array_fail_member(leg[0], 0), 0);
	assert_int_equal(tc_array_fail_member(leg[0], 2), 0);
	assert_int_equal(tc_array_fail_member(leg[1], 3), 0);
	assert_true(ev.degraded >= 1);
	tc_dev_limits(array, &lim);
	assert_int_equal(lim.redundancy, 0);
	assert_int_equal(tc_dev_pread(array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	raid_fill(data, info.size / 2, &seed);
	assert_int_equal(tc_dev_pwrite(array, data, info.size / 2, 0, 0), 0);
	assert_int_equal(tc_array_fail_member(leg[1], 1), 0);
	assert_int_equal(tc_dev_pread(array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	/* A third member of leg 0: the leg fails, and with it the RAID 60. */
	assert_int_equal(tc_array_fail_member(leg[0], 1), 0);
	assert_int_equal(ev.failed, 1);
	assert_int_equal(tc_dev_pread(array, back, CHUNK, 0), -EIO);
	assert_int_equal(tc_dev_unwatch(array, on_event, &ev), 0);
	free(data);
	free(back);
	tc_dev_close(array);
	tc_ctx_free(ctx);
}

/* A RAID 60 whose legs' full stripes are not a power of two (RAID 6 of five: three
 * data chunks), with an outer chunk of one leg stripe: the outer array publishes the
 * legs' stripe, each outer chunk is one leg's whole stripe, and two members of a leg
 * may fail. */
static void test_raid60_odd_stripe(void **state)
{
	tc_ctx *ctx;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = 7,
				  .log_level = TC_LOG_ERROR };
	tc_dev *leg[2], *mem[2][5], *array;
	struct tc_array_opts r6 = { .level = TC_RAID6, .chunk = CHUNK };
	struct tc_array_opts r0 = { .level = TC_RAID0, .chunk = 3 * CHUNK };

	assert_int_equal(tc_ctx_new(&co, &ctx), 0);
	tc_ctx_set_log(ctx, keep_log, NULL, TC_LOG_ERROR);
	for (unsigned l = 0; l < 2; l++) {
		for (unsigned i = 0; i < 5; i++)
			assert_int_equal(tc_dev_new_memory(ctx, MEMBER, &mem[l][i]), 0);
		assert_int_equal(tc_dev_new_array(ctx, &r6, mem[l], 5, &leg[l]), 0);
	}
	assert_int_equal(tc_dev_new_array(ctx, &r0, leg, 2, &array), 0);
	struct tc_dev_info info;
	struct tc_dev_limits lim;
	tc_dev_info(array, &info);
	tc_dev_limits(array, &lim);
	assert_true(lim.partial_stripe_expensive);
	assert_int_equal(lim.io_opt, 3 * CHUNK);
	assert_int_equal(lim.io_min, CHUNK);
	uint8_t *data = malloc(info.size), *back = malloc(info.size);
	uint64_t seed = 61;
	raid_fill(data, info.size, &seed);
	assert_int_equal(tc_dev_pwrite(array, data, info.size, 0, 0), 0);
	/* Outer chunk 3 is leg 1's second full stripe. */
	uint8_t *img = malloc(3 * CHUNK);
	assert_int_equal(tc_dev_pread(leg[1], img, 3 * CHUNK, 3 * CHUNK), 0);
	assert_memory_equal(img, data + 3 * 3 * CHUNK, 3 * CHUNK);
	free(img);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(leg[0], &st), 0);
	assert_int_equal(st.stripe_writes_rmw + st.stripe_writes_rcw, 0);
	assert_int_equal(tc_dev_health_gen(array), 0);
	assert_int_equal(tc_array_fail_member(leg[0], 1), 0);
	/* A leg's member failing is a part of the RAID 60 failing (survivors first). */
	assert_true(tc_dev_health_gen(array) >= 1);
	uint64_t g = tc_dev_health_gen(array);
	assert_int_equal(tc_array_fail_member(leg[0], 4), 0);
	assert_true(tc_dev_health_gen(array) > g);
	assert_int_equal(tc_array_fail_member(leg[1], 2), 0);
	assert_int_equal(tc_dev_pread(array, back, info.size, 0), 0);
	assert_memory_equal(back, data, info.size);
	assert_int_equal(tc_array_level(array), TC_RAID0);
	/* The legs are the RAID 0's for its life (a host lists them: tc_array_member). */
	assert_ptr_equal(tc_array_member(array, 1), leg[1]);
	assert_null(tc_array_member(array, 2));
	assert_int_equal(tc_array_remove(array, "1"), -EBUSY);
	assert_non_null(strstr(last_err, "is a member of a RAID 0, which keeps its members"));
	assert_ptr_equal(tc_array_member(array, 1), leg[1]);
	free(data);
	free(back);
	tc_dev_close(array);
	tc_ctx_free(ctx);
}

/* RAID 50: RAID 0 over two RAID 5 arrays of 3 members; one member of each leg may
 * fail. */
static void test_raid50(void **state)
{
	struct raid_fx fx0;     /* leg 0, and the context of everything */
	struct tc_array_opts r0 = { .level = TC_RAID0, .chunk = 2 * CHUNK };
	tc_dev *legs[2], *array;

	assert_int_equal(raid_fx_open(&fx0, TC_CTX_DETERMINISTIC, 5, TC_RAID5, 3, CHUNK,
				      MEMBER), 0);
	tc_ctx *ctx = fx0.ctx;
	tc_ctx_set_log(ctx, keep_log, NULL, TC_LOG_ERROR);
	tc_dev *m[3];
	struct tc_array_opts r5 = { .level = TC_RAID5, .chunk = CHUNK };
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(tc_dev_new_memory(ctx, MEMBER, &m[i]), 0);
	legs[0] = fx0.array;
	assert_int_equal(tc_dev_new_array(ctx, &r5, m, 3, &legs[1]), 0);
	assert_int_equal(tc_dev_new_array(ctx, &r0, legs, 2, &array), 0);
	struct tc_dev_info info;
	struct tc_dev_limits lim;
	tc_dev_info(array, &info);
	assert_int_equal(info.size, 2ull * 2 * MEMBER);
	tc_dev_limits(array, &lim);
	assert_int_equal(lim.redundancy, 1);
	assert_true(lim.partial_stripe_expensive);
	assert_int_equal(lim.io_opt, 2 * CHUNK);   /* a leg's full stripe */

	uint8_t *data = malloc(info.size), *back = malloc(info.size);
	uint64_t seed = 50;
	raid_fill(data, info.size, &seed);
	assert_int_equal(tc_dev_pwrite(array, data, info.size, 0, 0), 0);
	assert_int_equal(tc_array_fail_member(legs[0], 1), 0);
	assert_int_equal(tc_array_fail_member(legs[1], 2), 0);
	raid_fill(data, info.size / 3, &seed);
	assert_int_equal(tc_dev_pwrite(array, data, info.size / 3 / CHUNK * CHUNK, 0, 0), 0);
	assert_int_equal(tc_dev_pread(array, back, info.size / 3 / CHUNK * CHUNK, 0), 0);
	assert_memory_equal(back, data, info.size / 3 / CHUNK * CHUNK);
	assert_int_equal(tc_array_fail_member(legs[1], 0), 0);
	assert_int_equal(tc_dev_pread(array, back, 4 * CHUNK, 0), -EIO);
	free(data);
	free(back);
	tc_dev_close(array);
	tc_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_raid0),
		cmocka_unit_test(test_raid60_odd_stripe),
		cmocka_unit_test(test_map_raid1),
		cmocka_unit_test(test_map_raid10),
		cmocka_unit_test(test_map_raid5),
		cmocka_unit_test(test_map_raid6),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_limits_status),
		cmocka_unit_test(test_degraded_raid1),
		cmocka_unit_test(test_degraded_raid10),
		cmocka_unit_test(test_degraded_raid5),
		cmocka_unit_test(test_degraded_raid6),
		cmocka_unit_test(test_raid0_fails_at_once),
		cmocka_unit_test(test_repair_raid1),
		cmocka_unit_test(test_repair_raid10),
		cmocka_unit_test(test_repair_raid5),
		cmocka_unit_test(test_repair_raid6),
		cmocka_unit_test(test_repair_rewrites_data),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_rmw_read_error),
		cmocka_unit_test(test_flush_fua),
		cmocka_unit_test(test_rmw_rcw_choice),
		cmocka_unit_test(test_stripe_lock),
		cmocka_unit_test(test_raid50),
		cmocka_unit_test(test_raid60),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
