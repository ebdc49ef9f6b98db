/* SPDX-License-Identifier: MIT */
/*
 * test_dev_crash.c - the crash-test device: unflushed writes survive a power cut or not
 * per 4 KiB unit (both outcomes over many seeds, the same outcome for the same seed),
 * flushed and FUA writes always survive, 512-byte writes merge into full-unit versions,
 * discard and write-zeroes act as writes of zeros, fail_nth hits exactly the Nth
 * request of its kind, and a dead device fails everything with -EIO.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"
#include "tiercache-test.h"
#include "helpers.h"

#define DEV_SIZE (1u << 20)
#define UNIT TC_UNIT_SIZE
#define N_SEEDS 64

struct fixture {
	tc_ctx *ctx;
	char path[1024];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct tc_ctx_opts opts = { .mode = TC_CTX_DETERMINISTIC, .seed = 3,
				    .log_level = TC_LOG_ERROR };

	if (!fx || tc_ctx_new(&opts, &fx->ctx) < 0)
		return -1;
	t_mkstemp(fx->path, sizeof(fx->path), "tc-test-crash");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unlink(fx->path);
	tc_ctx_free(fx->ctx);
	free(fx);
	return 0;
}

static tc_dev *crash_open(struct fixture *fx, uint64_t seed)
{
	tc_dev *dev = NULL;

	assert_int_equal(tc_dev_new_crash(fx->ctx, fx->path, TC_DEV_CREATE, DEV_SIZE, seed,
					  &dev), 0);
	return dev;
}

/* Set the durable contents: @nunits units from @first, each filled with @byte. */
static void file_fill(struct fixture *fx, uint64_t first, int nunits, uint8_t byte)
{
	uint8_t buf[UNIT];
	int fd = open(fx->path, O_WRONLY), i;

	assert_true(fd >= 0);
	memset(buf, byte, sizeof(buf));
	for (i = 0; i < nunits; i++)
		assert_int_equal(pwrite(fd, buf, UNIT, (off_t)((first + i) * UNIT)), UNIT);
	close(fd);
}

static void file_read_unit(struct fixture *fx, uint64_t index, uint8_t *buf)
{
	int fd = open(fx->path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, UNIT, (off_t)(index * UNIT)), UNIT);
	close(fd);
}

/* 0xNN if every byte of the unit on the file is NN, else -1. */
static int file_unit_byte(struct fixture *fx, uint64_t index)
{
	uint8_t buf[UNIT];
	int i;

	file_read_unit(fx, index, buf);
	for (i = 1; i < (int)UNIT; i++)
		if (buf[i] != buf[0])
			return -1;
	return buf[0];
}

static void write_byte(tc_dev *dev, uint64_t off, uint64_t len, uint8_t byte,
		       unsigned flags)
{
	uint8_t *buf = malloc(len);

	memset(buf, byte, len);
	assert_int_equal(tc_dev_pwrite(dev, buf, len, off, flags), 0);
	free(buf);
}

static void test_info(void **state)
{
	struct fixture *fx = *state;
	tc_dev *dev = crash_open(fx, 1);
	struct tc_dev_info info;
	char name[1100];

	tc_dev_info(dev, &info);
	snprintf(name, sizeof(name), "crash:%s", fx->path);
	assert_string_equal(info.name, name);
	assert_string_equal(info.backend, "crash");
	assert_int_equal(info.size, DEV_SIZE);
	assert_int_equal(info.logical_block_size, 512);
	tc_dev_close(dev);
}

/* One round: A durable on units 0..7, B written unflushed, power cut.  Returns a
 * bitmask of the units that hold B afterwards. */
static unsigned unflushed_round(struct fixture *fx, uint64_t seed)
{
	uint8_t buf[UNIT];
	unsigned mask = 0;
	tc_dev *dev;
	int i, changed;

	file_fill(fx, 0, 8, 0xaa);
	dev = crash_open(fx, seed);
	write_byte(dev, 0, 8 * UNIT, 0xbb, 0);
	/* Reads see the newest data before the cut. */
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 3 * UNIT), 0);
	assert_int_equal(buf[0], 0xbb);
	assert_int_equal(file_unit_byte(fx, 3), 0xaa);   /* not durable yet */
	changed = tc_crash_power_cut(dev);
	tc_dev_close(dev);
	for (i = 0; i < 8; i++) {
		int b = file_unit_byte(fx, (uint64_t)i);

		assert_true(b == 0xaa || b == 0xbb);    /* old or new, never torn */
		if (b == 0xbb)
			mask |= 1u << i;
	}
	assert_int_equal(changed, __builtin_popcount(mask));
	return mask;
}

static void test_unflushed_old_or_new(void **state)
{
	struct fixture *fx = *state;
	unsigned seen_new = 0, seen_old = 0;
	uint64_t seed;

	for (seed = 0; seed < N_SEEDS; seed++) {
		unsigned mask = unflushed_round(fx, seed);

		seen_new |= mask;
		seen_old |= ~mask & 0xff;
	}
	assert_int_equal(seen_new, 0xff);       /* every unit survived in some run */
	assert_int_equal(seen_old, 0xff);       /* and was lost in another */
	assert_int_equal(unflushed_round(fx, 17), unflushed_round(fx, 17));
}

static void test_flushed_always_survive(void **state)
{
	struct fixture *fx = *state;
	uint64_t seed;

	for (seed = 0; seed < 16; seed++) {
		tc_dev *dev;
		int i;

		file_fill(fx, 0, 4, 0xaa);
		dev = crash_open(fx, seed);
		write_byte(dev, 0, 4 * UNIT, 0xcc, 0);
		write_byte(dev, UNIT, UNIT, 0xdd, 0);   /* two versions of unit 1 */
		assert_int_equal(tc_dev_flush(dev), 0);
		assert_int_equal(tc_crash_power_cut(dev), 0);
		tc_dev_close(dev);
		for (i = 0; i < 4; i++)
			assert_int_equal(file_unit_byte(fx, (uint64_t)i), i == 1 ? 0xdd : 0xcc);
	}
}

static void test_fua_survives(void **state)
{
	struct fixture *fx = *state;
	uint64_t seed;

	for (seed = 0; seed < 16; seed++) {
		tc_dev *dev;

		file_fill(fx, 0, 3, 0xaa);
		dev = crash_open(fx, seed);
		write_byte(dev, 0, UNIT, 0x01, TC_IO_FUA);
		/* An unflushed version, then FUA over it: the older one can't come back. */
		write_byte(dev, 2 * UNIT, UNIT, 0x02, 0);
		write_byte(dev, 2 * UNIT, UNIT, 0x03, TC_IO_FUA);
		assert_int_equal(file_unit_byte(fx, 0), 0x01);  /* durable on completion */
		assert_int_equal(tc_crash_power_cut(dev), 0);
		tc_dev_close(dev);
		assert_int_equal(file_unit_byte(fx, 0), 0x01);
		assert_int_equal(file_unit_byte(fx, 1), 0xaa);
		assert_int_equal(file_unit_byte(fx, 2), 0x03);
	}
}

static void test_partial_writes_merge(void **state)
{
	struct fixture *fx = *state;
	uint8_t a[UNIT], v1[UNIT], v2[UNIT], got[UNIT];
	int seen[3] = { 0, 0, 0 };
	uint64_t seed;

	memset(a, 0xaa, UNIT);
	memcpy(v1, a, UNIT);
	memset(v1 + 512, 0x11, 512);
	memcpy(v2, v1, UNIT);
	memset(v2 + 1024, 0x22, 1024);
	for (seed = 0; seed < N_SEEDS; seed++) {
		tc_dev *dev;

		file_fill(fx, 5, 1, 0xaa);
		dev = crash_open(fx, seed);
		write_byte(dev, 5 * UNIT + 512, 512, 0x11, 0);
		write_byte(dev, 5 * UNIT + 1024, 1024, 0x22, 0);
		assert_int_equal(tc_dev_pread(dev, got, UNIT, 5 * UNIT), 0);
		assert_memory_equal(got, v2, UNIT);
		assert_int_equal(tc_dev_pread(dev, got, 512, 5 * UNIT + 512), 0);
		assert_memory_equal(got, v1 + 512, 512);
		tc_crash_power_cut(dev);
		tc_dev_close(dev);
		file_read_unit(fx, 5, got);
		if (!memcmp(got, a, UNIT))
			seen[0]++;
		else if (!memcmp(got, v1, UNIT))
			seen[1]++;
		else if (!memcmp(got, v2, UNIT))
			seen[2]++;
		else
			fail_msg("seed %u: unit 5 is neither durable nor a written version",
				 (unsigned)seed);
	}
	assert_true(seen[0] > 0);
	assert_true(seen[1] > 0);
	assert_true(seen[2] > 0);
}

/* A request of any op, waited for; returns its result. */
struct waiter {
	struct tc_io io;
	tc_ctx *ctx;
	int result;
	bool done;
};

static void waiter_done(struct tc_io *io, int result)
{
	struct waiter *w = (struct waiter *)io;
	tc_ctx *ctx = w->ctx;

	w->result = result;
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	tc_ctx_wake(ctx);
}

static void waiter_submit(struct waiter *w, tc_dev *dev, uint8_t op, unsigned flags,
			  uint64_t off, uint64_t len, const struct iovec *iov)
{
	memset(w, 0, sizeof(*w));
	w->io = (struct tc_io){ .op = op, .flags = (uint8_t)flags, .offset = off,
				.length = len, .iov = iov, .iovcnt = iov ? 1 : 0,
				.done = waiter_done };
	w->result = 1;
	w->ctx = dev->ctx;
	tc_dev_submit(dev, &w->io);
}

static int dev_op(struct fixture *fx, tc_dev *dev, uint8_t op, unsigned flags,
		  uint64_t off, uint64_t len)
{
	struct waiter w;

	waiter_submit(&w, dev, op, flags, off, len, NULL);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &w.done), 0);
	return w.result;
}

static void test_discard_and_zeroes(void **state)
{
	struct fixture *fx = *state;
	uint8_t got[3 * UNIT], zero[UNIT] = { 0 };
	int seen_zero[3] = { 0 }, seen_old[3] = { 0 };
	uint64_t seed;

	for (seed = 0; seed < N_SEEDS; seed++) {
		tc_dev *dev;
		int i;

		file_fill(fx, 0, 3, 0xaa);
		dev = crash_open(fx, seed);
		assert_int_equal(dev_op(fx, dev, TC_OP_DISCARD, 0, 0, UNIT), 0);
		assert_int_equal(dev_op(fx, dev, TC_OP_WRITE_ZEROES, 0, UNIT + 2048, 2048), 0);
		assert_int_equal(dev_op(fx, dev, TC_OP_WRITE_ZEROES, TC_IO_FUA, 2 * UNIT, UNIT),
				 0);
		assert_int_equal(tc_dev_pread(dev, got, sizeof(got), 0), 0);
		assert_memory_equal(got, zero, UNIT);
		assert_int_equal(got[UNIT], 0xaa);
		assert_int_equal(got[UNIT + 2047], 0xaa);
		assert_memory_equal(got + UNIT + 2048, zero, 2048);
		assert_memory_equal(got + 2 * UNIT, zero, UNIT);
		tc_crash_power_cut(dev);
		tc_dev_close(dev);
		for (i = 0; i < 3; i++) {
			uint8_t unit[UNIT];

			file_read_unit(fx, (uint64_t)i, unit);
			if (unit[UNIT - 1] == 0)
				seen_zero[i]++;
			else
				seen_old[i]++;
			/* Unit 0 wholly old or zero; unit 1's first half never zeroed. */
			assert_int_equal(unit[0], i == 1 ? 0xaa : unit[UNIT - 1]);
		}
	}
	assert_true(seen_zero[0] > 0 && seen_old[0] > 0);
	assert_true(seen_zero[1] > 0 && seen_old[1] > 0);
	assert_int_equal(seen_zero[2], N_SEEDS);        /* FUA write-zeroes is durable */
}

static void test_fail_nth(void **state)
{
	struct fixture *fx = *state;
	struct tc_dev_stats st;
	uint8_t buf[UNIT];
	tc_dev *dev;
	int i;

	file_fill(fx, 0, 8, 0xaa);
	dev = crash_open(fx, 1);

	/* The 3rd write from now fails, once, and changes nothing. */
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_WRITE, 3, false), 0);
	for (i = 1; i <= 5; i++) {
		memset(buf, i, UNIT);
		assert_int_equal(tc_dev_pwrite(dev, buf, UNIT, (uint64_t)i * UNIT, 0),
				 i == 3 ? -EIO : 0);
	}
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 3 * UNIT), 0);
	assert_int_equal(buf[0], 0xaa);
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 4 * UNIT), 0);
	assert_int_equal(buf[0], 4);

	/* Persistent: the 2nd and every later write; write-zeroes and discard count. */
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_WRITE, 2, true), 0);
	assert_int_equal(dev_op(fx, dev, TC_OP_DISCARD, 0, 0, UNIT), 0);
	assert_int_equal(dev_op(fx, dev, TC_OP_WRITE_ZEROES, 0, UNIT, UNIT), -EIO);
	memset(buf, 9, UNIT);
	assert_int_equal(tc_dev_pwrite(dev, buf, UNIT, 0, 0), -EIO);
	assert_int_equal(tc_dev_pwrite(dev, buf, UNIT, 0, 0), -EIO);
	/* Reads and flushes are not affected by a write fault. */
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, UNIT), 0);
	assert_int_equal(buf[0], 1);
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_WRITE, 0, false), 0);
	assert_int_equal(tc_dev_pwrite(dev, buf, UNIT, 0, 0), 0);

	/* Reads, persistent from the 1st; cleared with nth 0. */
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_READ, 1, true), 0);
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 0), -EIO);
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 0), -EIO);
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_READ, 0, false), 0);
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 0), 0);

	/* A failed flush makes nothing durable. */
	assert_int_equal(tc_crash_fail_nth(dev, TC_FAULT_FLUSH, 1, false), 0);
	assert_int_equal(tc_dev_flush(dev), -EIO);
	assert_int_equal(file_unit_byte(fx, 4), 0xaa);
	assert_int_equal(tc_dev_flush(dev), 0);
	assert_int_equal(file_unit_byte(fx, 4), 4);

	assert_int_equal(tc_crash_fail_nth(dev, 7, 1, false), -EINVAL);
	tc_dev_stats(dev, &st);
	assert_int_equal(st.errors, 7);
	tc_dev_close(dev);
}

static void test_dead_device(void **state)
{
	struct fixture *fx = *state;
	uint8_t data[UNIT], buf[UNIT];
	struct iovec iov = { data, UNIT };
	struct waiter w;
	tc_dev *dev;

	file_fill(fx, 0, 2, 0xaa);
	dev = crash_open(fx, 2);
	memset(data, 0x77, UNIT);
	/* In flight at the cut: its completion has not run, so it fails. */
	waiter_submit(&w, dev, TC_OP_WRITE, TC_IO_FUA, 0, UNIT, &iov);
	assert_int_equal(tc_ctx_pending(fx->ctx), 1);
	assert_int_equal(tc_crash_power_cut(dev), 0);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &w.done), 0);
	assert_int_equal(w.result, -EIO);
	assert_int_equal(file_unit_byte(fx, 0), 0xaa);

	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 0), -EIO);
	assert_int_equal(tc_dev_pwrite(dev, data, UNIT, 0, 0), -EIO);
	assert_int_equal(tc_dev_flush(dev), -EIO);
	assert_int_equal(tc_crash_power_cut(dev), 0);
	tc_dev_close(dev);
}

static void test_not_crash_device(void **state)
{
	struct fixture *fx = *state;
	tc_dev *mem, *dev = (tc_dev *)&mem;

	assert_int_equal(tc_dev_new_memory(fx->ctx, DEV_SIZE, &mem), 0);
	assert_int_equal(tc_crash_power_cut(mem), -EINVAL);
	assert_int_equal(tc_crash_fail_nth(mem, TC_FAULT_WRITE, 1, false), -EINVAL);
	tc_dev_close(mem);
	assert_int_equal(tc_dev_new_crash(fx->ctx, fx->path, TC_DEV_CREATE, 5000, 0, &dev),
			 -EINVAL);
	assert_null(dev);
}

static void test_threaded(void **state)
{
	struct fixture *fx = *state;
	struct tc_ctx_opts opts = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_ERROR };
	uint8_t buf[UNIT];
	tc_ctx *ctx;
	tc_dev *dev;
	int i, changed;

	file_fill(fx, 0, 16, 0xaa);
	assert_int_equal(tc_ctx_new(&opts, &ctx), 0);
	assert_int_equal(tc_dev_new_crash(ctx, fx->path, 0, 0, 9, &dev), 0);
	for (i = 0; i < 16; i++) {
		memset(buf, i, UNIT);
		assert_int_equal(tc_dev_pwrite(dev, buf, UNIT, (uint64_t)i * UNIT, 0), 0);
		if (i == 7)
			assert_int_equal(tc_dev_flush(dev), 0);
	}
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 12 * UNIT), 0);
	assert_int_equal(buf[0], 12);
	changed = tc_crash_power_cut(dev);
	assert_true(changed >= 0 && changed <= 8);
	for (i = 0; i < 16; i++) {
		int b = file_unit_byte(fx, (uint64_t)i);

		if (i < 8)
			assert_int_equal(b, i);
		else
			assert_true(b == i || b == 0xaa);
	}
	assert_int_equal(tc_dev_pread(dev, buf, UNIT, 0), -EIO);
	tc_dev_close(dev);
	tc_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unflushed_old_or_new, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flushed_always_survive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fua_survives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_writes_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_and_zeroes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_nth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_crash_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threaded, setup, teardown),
	};

	return cmocka_run_group_tests_name("crash device", tests, NULL, NULL) ? 1 : 0;
}
