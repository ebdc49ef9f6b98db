/* SPDX-License-Identifier: MIT */
/*
 * test_dev_fault.c - the fault-injection layer: unarmed it passes every request through
 * (data, properties, counters on both devices); armed it lets exactly @after matching
 * requests through, then fails with the chosen errno every matching request until
 * healed, or exactly one when transient; op filtering (write covers write-zeroes and
 * discard; all covers everything); failures complete later, never inside submit, and
 * never reach the inner device; bad faults are refused with the fault left as it was;
 * under several threads a transient fault fails exactly one request.  Also the names
 * of fault kinds and errnos.
 */
#include <errno.h>
#include <pthread.h>
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
#include "helpers.h"

#define DEV_SIZE (1u << 20)
#define BS 4096u

static int setup(void **state)
{
	return t_memdev_setup(state, TC_CTX_DETERMINISTIC, 5, TC_LOG_ERROR, DEV_SIZE, true);
}

static int setup_threaded(void **state)
{
	return t_memdev_setup(state, TC_CTX_THREADED, 5, TC_LOG_ERROR, DEV_SIZE, true);
}

static int teardown(void **state)
{
	return t_memdev_teardown(state);
}

static int do_write(tc_dev *dev, uint64_t off, uint8_t byte)
{
	uint8_t buf[BS];

	memset(buf, byte, sizeof(buf));
	return tc_dev_pwrite(dev, buf, BS, off, 0);
}

static int do_read(tc_dev *dev, uint64_t off, uint8_t *byte)
{
	uint8_t buf[BS];
	int r = tc_dev_pread(dev, buf, BS, off);

	if (byte)
		*byte = buf[0];
	return r;
}

static void arm(tc_dev *dev, enum tc_fault_op op, uint64_t after, int error, bool transient)
{
	struct tc_fault f = { .op = op, .after = after, .error = error, .transient = transient };

	assert_int_equal(tc_fault_arm(dev, &f), 0);
}

static void test_passthrough(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_dev_info info, inner_info;
	struct tc_dev_stats st, ist;
	struct tc_fault_state fs;
	uint8_t b = 0;

	tc_dev_info(fx->dev, &info);
	tc_dev_info(fx->inner, &inner_info);
	assert_string_equal(info.backend, "fault");
	assert_string_equal(info.name, inner_info.name);
	assert_int_equal(info.size, DEV_SIZE);
	assert_int_equal(info.logical_block_size, inner_info.logical_block_size);
	assert_int_equal(info.direct, inner_info.direct);

	assert_int_equal(do_write(fx->dev, 8 * BS, 0x5a), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	assert_int_equal(do_read(fx->dev, 8 * BS, &b), 0);
	assert_int_equal(b, 0x5a);
	/* The data is on the inner device, not in the layer. */
	assert_int_equal(do_read(fx->inner, 8 * BS, &b), 0);
	assert_int_equal(b, 0x5a);
	assert_int_equal(tc_dev_io(fx->dev, TC_OP_WRITE_ZEROES, 0, NULL, BS, 8 * BS), 0);
	assert_int_equal(do_read(fx->inner, 8 * BS, &b), 0);
	assert_int_equal(b, 0);

	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.writes, 1);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.flushes, 1);
	assert_int_equal(st.write_zeroes, 1);
	assert_int_equal(st.bytes_written, BS);
	assert_int_equal(st.bytes_read, BS);
	assert_int_equal(st.errors, 0);
	tc_dev_stats(fx->inner, &ist);
	assert_int_equal(ist.writes, 1);
	assert_int_equal(ist.reads, 3);         /* one through the layer, two direct */
	assert_int_equal(ist.write_zeroes, 1);
	assert_int_equal(ist.flushes, 1);

	/* Out of range: refused by the layer's own checks, as any device does. */
	assert_int_equal(do_read(fx->dev, DEV_SIZE, NULL), -EINVAL);

	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_false(fs.armed);
	assert_int_equal(fs.failed_total, 0);
}

static void test_after_n_persistent(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_fault_state fs;
	struct tc_dev_stats st;
	int i;

	arm(fx->dev, TC_FAULT_WRITE, 3, EIO, false);
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_true(fs.armed);
	assert_int_equal(fs.fault.after, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(do_write(fx->dev, (uint64_t)i * BS, 1), 0);
		/* Reads do not count towards a write fault. */
		assert_int_equal(do_read(fx->dev, 0, NULL), 0);
	}
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_int_equal(fs.fault.after, 0);
	assert_int_equal(fs.failed, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(do_write(fx->dev, 0, 2), -EIO);
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_true(fs.armed);
	assert_int_equal(fs.failed, 5);
	assert_int_equal(fs.failed_total, 5);
	/* The failed writes never reached the inner device, and counted as errors. */
	tc_dev_stats(fx->inner, &st);
	assert_int_equal(st.writes, 3);
	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.writes, 8);
	assert_int_equal(st.errors, 5);
}

static void test_after_zero_is_next(void **state)
{
	struct t_memdev *fx = *state;

	arm(fx->dev, TC_FAULT_READ, 0, EIO, false);
	assert_int_equal(do_read(fx->dev, 0, NULL), -EIO);
}

static void test_transient(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_fault_state fs;
	int i;

	arm(fx->dev, TC_FAULT_WRITE, 2, ETIMEDOUT, true);
	assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(do_write(fx->dev, 0, 1), -ETIMEDOUT);
	for (i = 0; i < 4; i++)
		assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_false(fs.armed);
	assert_int_equal(fs.failed, 1);
	assert_true(fs.fault.transient);
	assert_int_equal(fs.fault.error, ETIMEDOUT);
	/* Nothing left to heal. */
	assert_int_equal(tc_fault_heal(fx->dev), 0);
}

static void test_heal(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_fault_state fs;
	uint8_t b;

	arm(fx->dev, TC_FAULT_ALL, 0, EIO, false);
	assert_int_equal(do_write(fx->dev, 0, 7), -EIO);
	assert_int_equal(tc_fault_heal(fx->dev), 1);
	assert_int_equal(tc_fault_heal(fx->dev), 0);
	assert_int_equal(do_write(fx->dev, 0, 7), 0);
	assert_int_equal(do_read(fx->dev, 0, &b), 0);
	assert_int_equal(b, 7);
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_false(fs.armed);
	assert_int_equal(fs.failed, 1);
	/* Arming again starts the count of the new fault from zero. */
	arm(fx->dev, TC_FAULT_FLUSH, 0, EIO, false);
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_int_equal(fs.failed, 0);
	assert_int_equal(fs.failed_total, 1);
}

static void test_errno_chosen(void **state)
{
	struct t_memdev *fx = *state;
	static const int errs[] = { ENOSPC, ENODEV, EROFS, 200 };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		arm(fx->dev, TC_FAULT_WRITE, 0, errs[i], false);
		assert_int_equal(do_write(fx->dev, 0, 1), -errs[i]);
	}
}

static void test_op_filter(void **state)
{
	struct t_memdev *fx = *state;

	/* read: only reads. */
	arm(fx->dev, TC_FAULT_READ, 0, EIO, false);
	assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	assert_int_equal(tc_dev_io(fx->dev, TC_OP_DISCARD, 0, NULL, BS, 0), 0);
	assert_int_equal(do_read(fx->dev, 0, NULL), -EIO);

	/* write: writes, write-zeroes and discards, not reads or flushes. */
	arm(fx->dev, TC_FAULT_WRITE, 0, ENOSPC, false);
	assert_int_equal(do_read(fx->dev, 0, NULL), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	assert_int_equal(do_write(fx->dev, 0, 1), -ENOSPC);
	assert_int_equal(tc_dev_io(fx->dev, TC_OP_WRITE_ZEROES, 0, NULL, BS, 0), -ENOSPC);
	assert_int_equal(tc_dev_io(fx->dev, TC_OP_DISCARD, 0, NULL, BS, 0), -ENOSPC);

	/* flush: only flushes; --after counts flushes alone. */
	arm(fx->dev, TC_FAULT_FLUSH, 1, EIO, false);
	assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(do_read(fx->dev, 0, NULL), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	assert_int_equal(do_write(fx->dev, 0, 1), 0);
	assert_int_equal(tc_dev_flush(fx->dev), -EIO);
	assert_int_equal(do_read(fx->dev, 0, NULL), 0);

	/* all: everything; --after counts every kind. */
	arm(fx->dev, TC_FAULT_ALL, 2, EIO, false);
	assert_int_equal(do_read(fx->dev, 0, NULL), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	assert_int_equal(do_write(fx->dev, 0, 1), -EIO);
	assert_int_equal(do_read(fx->dev, 0, NULL), -EIO);
	assert_int_equal(tc_dev_flush(fx->dev), -EIO);
	assert_int_equal(tc_dev_io(fx->dev, TC_OP_DISCARD, 0, NULL, BS, 0), -EIO);
}

struct async_done {
	bool done;
	int result;
};

static void async_cb(struct tc_io *io, int result)
{
	struct async_done *d = io->private_data;

	d->result = result;
	d->done = true;
}

/* A failing request completes from the context, not inside tc_dev_submit(). */
static void test_fails_later(void **state)
{
	struct t_memdev *fx = *state;
	struct async_done d = { 0 };
	uint8_t buf[BS] = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = BS };
	struct tc_io io = { .op = TC_OP_READ, .offset = 0, .length = BS, .iov = &iov,
			    .iovcnt = 1, .done = async_cb, .private_data = &d };

	arm(fx->dev, TC_FAULT_READ, 0, EIO, false);
	tc_dev_submit(fx->dev, &io);
	assert_false(d.done);
	while (!d.done)
		assert_true(tc_ctx_poll(fx->ctx, 1) >= 0);
	assert_int_equal(d.result, -EIO);

	/* A passing one too. */
	tc_fault_heal(fx->dev);
	d.done = false;
	tc_dev_submit(fx->dev, &io);
	assert_false(d.done);
	while (!d.done)
		assert_true(tc_ctx_poll(fx->ctx, 1) >= 0);
	assert_int_equal(d.result, 0);
}

static void test_bad_faults(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_fault bad_op = { .op = (enum tc_fault_op)4, .error = EIO };
	struct tc_fault bad_err0 = { .op = TC_FAULT_READ, .error = 0 };
	struct tc_fault bad_err_hi = { .op = TC_FAULT_READ, .error = 4096 };
	struct tc_fault bad_err_neg = { .op = TC_FAULT_READ, .error = -EIO };
	struct tc_fault good = { .op = TC_FAULT_READ, .error = EIO };
	struct tc_fault_state fs;

	arm(fx->dev, TC_FAULT_WRITE, 9, ENOSPC, false);
	assert_int_equal(tc_fault_arm(fx->dev, &bad_op), -EINVAL);
	assert_int_equal(tc_fault_arm(fx->dev, &bad_err0), -EINVAL);
	assert_int_equal(tc_fault_arm(fx->dev, &bad_err_hi), -EINVAL);
	assert_int_equal(tc_fault_arm(fx->dev, &bad_err_neg), -EINVAL);
	/* The armed fault is as it was. */
	assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
	assert_true(fs.armed);
	assert_int_equal(fs.fault.op, TC_FAULT_WRITE);
	assert_int_equal(fs.fault.after, 9);
	assert_int_equal(fs.fault.error, ENOSPC);

	/* Not a fault layer: refused, and the plain device is untouched. */
	assert_int_equal(tc_fault_arm(fx->inner, &good), -EINVAL);
	assert_int_equal(tc_fault_heal(fx->inner), -EINVAL);
	assert_int_equal(tc_fault_get(fx->inner, &fs), -EINVAL);
	assert_int_equal(do_read(fx->inner, 0, NULL), 0);
}

#define THREADS 4
#define PER_THREAD 500

struct worker {
	tc_dev *dev;
	unsigned idx;
	int failed, other;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		int r = do_write(w->dev, (uint64_t)(w->idx * PER_THREAD + (unsigned)i) % 256 * BS,
				 (uint8_t)i);
		if (r == -EIO)
			w->failed++;
		else if (r != 0)
			w->other++;
	}
	return NULL;
}

/* Several threads: a transient fault after 700 writes fails exactly one of 2000; a
 * persistent one fails exactly those past the first 700. */
static void test_threaded(void **state)
{
	struct t_memdev *fx = *state;
	struct tc_fault_state fs;

	for (int round = 0; round < 2; round++) {
		bool transient = round == 0;
		struct worker w[THREADS];
		pthread_t t[THREADS];
		int failed = 0;

		arm(fx->dev, TC_FAULT_WRITE, 700, EIO, transient);
		for (unsigned i = 0; i < THREADS; i++) {
			w[i] = (struct worker){ .dev = fx->dev, .idx = i };
			assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
		}
		for (unsigned i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			failed += w[i].failed;
			assert_int_equal(w[i].other, 0);
		}
		assert_int_equal(tc_fault_get(fx->dev, &fs), 0);
		if (transient) {
			assert_int_equal(failed, 1);
			assert_false(fs.armed);
		} else {
			assert_int_equal(failed, THREADS * PER_THREAD - 700);
			assert_true(fs.armed);
		}
		assert_int_equal(fs.failed, (uint64_t)failed);
		tc_fault_heal(fx->dev);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(tc_fault_op_parse("read"), TC_FAULT_READ);
	assert_int_equal(tc_fault_op_parse("write"), TC_FAULT_WRITE);
	assert_int_equal(tc_fault_op_parse("flush"), TC_FAULT_FLUSH);
	assert_int_equal(tc_fault_op_parse("all"), TC_FAULT_ALL);
	assert_int_equal(tc_fault_op_parse("discard"), -EINVAL);
	assert_int_equal(tc_fault_op_parse(NULL), -EINVAL);
	assert_string_equal(tc_fault_op_name(TC_FAULT_FLUSH), "flush");
	assert_string_equal(tc_fault_op_name(9), "unknown");

	assert_int_equal(tc_errno_parse("EIO"), EIO);
	assert_int_equal(tc_errno_parse("enospc"), ENOSPC);
	assert_int_equal(tc_errno_parse("ENODEV"), ENODEV);
	assert_int_equal(tc_errno_parse("ETIMEDOUT"), ETIMEDOUT);
	assert_int_equal(tc_errno_parse("EROFS"), EROFS);
	assert_int_equal(tc_errno_parse("28"), 28);
	assert_int_equal(tc_errno_parse("4095"), 4095);
	assert_int_equal(tc_errno_parse("0"), -EINVAL);
	assert_int_equal(tc_errno_parse("4096"), -EINVAL);
	assert_int_equal(tc_errno_parse("-5"), -EINVAL);
	assert_int_equal(tc_errno_parse("5x"), -EINVAL);
	assert_int_equal(tc_errno_parse("EFOO"), -EINVAL);
	assert_int_equal(tc_errno_parse(""), -EINVAL);
	assert_string_equal(tc_errno_name(EIO), "EIO");
	assert_string_equal(tc_errno_name(ENOSPC), "ENOSPC");
	assert_null(tc_errno_name(200));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_passthrough, setup, teardown),
		cmocka_unit_test_setup_teardown(test_after_n_persistent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_after_zero_is_next, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transient, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errno_chosen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_op_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fails_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_faults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threaded, setup_threaded, teardown),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests_name("fault device", tests, NULL, NULL) ? 1 : 0;
}
