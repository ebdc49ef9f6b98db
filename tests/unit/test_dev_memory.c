/* SPDX-License-Identifier: MIT */
/*
 * test_dev_memory.c - the memory backend and the shared device layer (dev.c):
 * read-after-write, iovecs, refusals of malformed requests with -EINVAL, discard and
 * write-zeroes, flush, counters, completions only from the context, seed-chosen order
 * of overlapping writes, and threaded mode.
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
#include "helpers.h"

#define DEV_SIZE (1u << 20)

static int setup_det(void **state)
{
	return t_memdev_setup(state, TC_CTX_DETERMINISTIC, 1, TC_LOG_WARN, DEV_SIZE, false);
}

static int setup_threaded(void **state)
{
	return t_memdev_setup(state, TC_CTX_THREADED, 1, TC_LOG_WARN, DEV_SIZE, false);
}

static int teardown(void **state)
{
	return t_memdev_teardown(state);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 9));
}

/* Asynchronous request bookkeeping. */
struct req {
	struct tc_io io;
	int result;
	int calls;
};

static void req_done(struct tc_io *io, int result)
{
	struct req *r = (struct req *)io;

	r->result = result;
	__atomic_store_n(&r->calls, r->calls + 1, __ATOMIC_RELEASE);
}

static void req_init(struct req *r, uint8_t op, uint64_t off, uint64_t len,
		     const struct iovec *iov, int iovcnt)
{
	memset(r, 0, sizeof(*r));
	r->io.op = op;
	r->io.offset = off;
	r->io.length = len;
	r->io.iov = iov;
	r->io.iovcnt = iovcnt;
	r->io.done = req_done;
	r->result = 1;
}

static void test_read_after_write(void **state)
{
	struct t_memdev *fx = *state;
	uint8_t wbuf[8192], rbuf[8192];
	struct tc_dev_info info;

	tc_dev_info(fx->dev, &info);
	assert_int_equal(info.size, DEV_SIZE);
	assert_int_equal(info.logical_block_size, 512);
	assert_string_equal(info.backend, "memory");
	assert_false(info.direct);

	assert_int_equal(tc_dev_pread(fx->dev, rbuf, sizeof(rbuf), 4096), 0);
	for (size_t i = 0; i < sizeof(rbuf); i++)
		assert_int_equal(rbuf[i], 0);           /* zero-filled at creation */
	fill(wbuf, sizeof(wbuf), 1);
	assert_int_equal(tc_dev_pwrite(fx->dev, wbuf, sizeof(wbuf), 4096, 0), 0);
	assert_int_equal(tc_dev_pread(fx->dev, rbuf, sizeof(rbuf), 4096), 0);
	assert_memory_equal(wbuf, rbuf, sizeof(wbuf));
	/* A 512-byte write inside it; the rest stays. */
	fill(wbuf, 512, 2);
	assert_int_equal(tc_dev_pwrite(fx->dev, wbuf, 512, 4096 + 1024, TC_IO_FUA), 0);
	assert_int_equal(tc_dev_pread(fx->dev, rbuf, 512, 4096 + 1024), 0);
	assert_memory_equal(wbuf, rbuf, 512);
	/* The last sector of the device. */
	assert_int_equal(tc_dev_pwrite(fx->dev, wbuf, 512, DEV_SIZE - 512, 0), 0);
	assert_int_equal(tc_dev_pread(fx->dev, rbuf, 512, DEV_SIZE - 512), 0);
	assert_memory_equal(wbuf, rbuf, 512);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
}

static void test_iovecs(void **state)
{
	struct t_memdev *fx = *state;
	uint8_t a[512], b[2048], c[1536], flat[4096], back[4096];
	struct iovec wv[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };
	uint8_t ra[1024], rb[3072];
	struct iovec rv[2] = { { ra, sizeof(ra) }, { rb, sizeof(rb) } };
	struct req r;

	fill(a, sizeof(a), 3);
	fill(b, sizeof(b), 4);
	fill(c, sizeof(c), 5);
	req_init(&r, TC_OP_WRITE, 65536, 4096, wv, 3);
	tc_dev_submit(fx->dev, &r.io);
	if (tc_ctx_deterministic(fx->ctx))
		assert_int_equal(r.calls, 0);           /* never completed inline */
	while (__atomic_load_n(&r.calls, __ATOMIC_ACQUIRE) == 0) {
		if (tc_ctx_deterministic(fx->ctx))
			tc_ctx_poll(fx->ctx, 8);
	}
	assert_int_equal(r.result, 0);

	assert_int_equal(tc_dev_pread(fx->dev, flat, sizeof(flat), 65536), 0);
	tc_iov_to_buf(back, wv, 3, 0, sizeof(back));
	assert_memory_equal(flat, back, sizeof(flat));
	/* Scatter the same data over differently split iovecs. */
	req_init(&r, TC_OP_READ, 65536, 4096, rv, 2);
	tc_dev_submit(fx->dev, &r.io);
	while (__atomic_load_n(&r.calls, __ATOMIC_ACQUIRE) == 0) {
		if (tc_ctx_deterministic(fx->ctx))
			tc_ctx_poll(fx->ctx, 8);
	}
	assert_int_equal(r.result, 0);
	assert_memory_equal(ra, flat, sizeof(ra));
	assert_memory_equal(rb, flat + sizeof(ra), sizeof(rb));
}

static void test_iov_helpers_skip(void **state)
{
	uint8_t x[3] = { 1, 2, 3 }, y[4] = { 4, 5, 6, 7 }, out[4] = { 0 };
	struct iovec v[2] = { { x, 3 }, { y, 4 } };
	uint8_t in[3] = { 9, 8, 7 };

	tc_iov_to_buf(out, v, 2, 2, 4);
	assert_int_equal(out[0], 3);
	assert_int_equal(out[1], 4);
	assert_int_equal(out[3], 6);
	tc_buf_to_iov(v, 2, 3, in, 3);
	assert_int_equal(x[2], 3);
	assert_int_equal(y[0], 9);
	assert_int_equal(y[2], 7);
	assert_int_equal(y[3], 7);
}

static int submit_and_wait(struct t_memdev *fx, struct req *r)
{
	tc_dev_submit(fx->dev, &r->io);
	if (tc_ctx_deterministic(fx->ctx))
		assert_int_equal(r->calls, 0);  /* never completed inline */
	while (__atomic_load_n(&r->calls, __ATOMIC_ACQUIRE) == 0) {
		if (tc_ctx_deterministic(fx->ctx))
			tc_ctx_poll(fx->ctx, 8);
	}
	assert_int_equal(r->calls, 1);
	return r->result;
}

static void test_refusals(void **state)
{
	struct t_memdev *fx = *state;
	uint8_t buf[4096] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct iovec short_iov = { buf, 1024 };
	struct tc_dev_stats st;
	struct req r;

	assert_int_equal(tc_dev_pread(fx->dev, buf, 512, 100), -EINVAL);   /* misaligned */
	assert_non_null(strstr(fx->log.last, "offset 100"));
	assert_int_equal(tc_dev_pread(fx->dev, buf, 500, 0), -EINVAL);     /* odd length */
	assert_int_equal(tc_dev_pwrite(fx->dev, buf, 0, 0, 0), -EINVAL);   /* empty */
	assert_int_equal(tc_dev_pwrite(fx->dev, buf, 4096, DEV_SIZE - 2048, 0), -EINVAL);
	assert_non_null(strstr(fx->log.last, "beyond size 1048576"));
	assert_int_equal(tc_dev_pread(fx->dev, buf, 512, DEV_SIZE), -EINVAL);
	/* An offset so large that offset + length wraps around. */
	assert_int_equal(tc_dev_pread(fx->dev, buf, 4096, UINT64_MAX - 4095), -EINVAL);

	req_init(&r, TC_OP_WRITE, 0, 4096, &short_iov, 1);             /* iovecs != length */
	assert_int_equal(submit_and_wait(fx, &r), -EINVAL);
	assert_non_null(strstr(fx->log.last, "1024"));
	req_init(&r, 9, 0, 4096, &iov, 1);                             /* unknown op */
	assert_int_equal(submit_and_wait(fx, &r), -EINVAL);
	req_init(&r, TC_OP_DISCARD, 512, 0, NULL, 0);
	assert_int_equal(submit_and_wait(fx, &r), -EINVAL);
	/* FLUSH ignores offset and length. */
	req_init(&r, TC_OP_FLUSH, 12345, 7, NULL, 0);
	assert_int_equal(submit_and_wait(fx, &r), 0);

	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.errors, 9);
	assert_int_equal(st.reads, 0);          /* refused requests are not counted as I/O */
	assert_int_equal(st.writes, 0);
	assert_int_equal(st.flushes, 1);
}

static void test_discard_and_zeroes(void **state)
{
	struct t_memdev *fx = *state;
	uint8_t wbuf[16384], rbuf[16384], zero[16384] = { 0 };
	struct tc_dev_stats st;
	struct req r;

	fill(wbuf, sizeof(wbuf), 6);
	assert_int_equal(tc_dev_pwrite(fx->dev, wbuf, sizeof(wbuf), 0, 0), 0);
	req_init(&r, TC_OP_DISCARD, 4096, 4096, NULL, 0);
	assert_int_equal(submit_and_wait(fx, &r), 0);
	req_init(&r, TC_OP_WRITE_ZEROES, 8192 + 512, 1024, NULL, 0);
	r.io.flags = TC_IO_FUA;
	assert_int_equal(submit_and_wait(fx, &r), 0);
	assert_int_equal(tc_dev_pread(fx->dev, rbuf, sizeof(rbuf), 0), 0);
	assert_memory_equal(rbuf, wbuf, 4096);
	assert_memory_equal(rbuf + 4096, zero, 4096);
	assert_memory_equal(rbuf + 8192, wbuf + 8192, 512);
	assert_memory_equal(rbuf + 8192 + 512, zero, 1024);
	assert_memory_equal(rbuf + 8192 + 1536, wbuf + 8192 + 1536, 16384 - 8192 - 1536);

	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.writes, 1);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.discards, 1);
	assert_int_equal(st.write_zeroes, 1);
	assert_int_equal(st.bytes_written, 16384);
	assert_int_equal(st.bytes_read, 16384);
	assert_int_equal(st.errors, 0);
}

/* Two overlapping writes in flight: which lands last is the seed's choice. */
static int overlapping_winner(uint64_t seed)
{
	struct tc_ctx_opts opts = { .mode = TC_CTX_DETERMINISTIC, .seed = seed };
	uint8_t a[4096], b[4096], out[4096];
	struct iovec va = { a, sizeof(a) }, vb = { b, sizeof(b) };
	struct req ra, rb;
	tc_ctx *ctx;
	tc_dev *dev;
	int winner;

	memset(a, 0xaa, sizeof(a));
	memset(b, 0xbb, sizeof(b));
	assert_int_equal(tc_ctx_new(&opts, &ctx), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 65536, &dev), 0);
	req_init(&ra, TC_OP_WRITE, 0, 4096, &va, 1);
	req_init(&rb, TC_OP_WRITE, 0, 4096, &vb, 1);
	tc_dev_submit(dev, &ra.io);
	tc_dev_submit(dev, &rb.io);
	/* Data moves at completion, not at submit. */
	assert_int_equal(tc_ctx_pending(ctx), 2);
	assert_int_equal(tc_ctx_poll(ctx, 10), 2);
	assert_int_equal(ra.result, 0);
	assert_int_equal(rb.result, 0);
	assert_int_equal(tc_dev_pread(dev, out, sizeof(out), 0), 0);
	assert_true(out[0] == 0xaa || out[0] == 0xbb);
	winner = out[0] == 0xaa ? 0 : 1;
	tc_dev_close(dev);
	tc_ctx_free(ctx);
	return winner;
}

static void test_seeded_order(void **state)
{
	int wins[2] = { 0, 0 };
	uint64_t seed;

	for (seed = 0; seed < 32; seed++) {
		int w = overlapping_winner(seed);

		assert_int_equal(w, overlapping_winner(seed));  /* reproducible */
		wins[w]++;
	}
	assert_true(wins[0] > 0);
	assert_true(wins[1] > 0);
}

static void test_bad_size(void **state)
{
	struct t_memdev *fx = *state;
	tc_dev *dev = (tc_dev *)&dev;

	assert_int_equal(tc_dev_new_memory(fx->ctx, 1000, &dev), -EINVAL);
	assert_null(dev);
	assert_non_null(strstr(fx->log.last, "size 1000"));
	assert_int_equal(tc_dev_new_memory(fx->ctx, 0, &dev), -EINVAL);
	assert_int_equal(tc_crash_power_cut(fx->dev), -EINVAL);
	assert_int_equal(tc_crash_fail_nth(fx->dev, TC_FAULT_READ, 1, false), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest det[] = {
		cmocka_unit_test_setup_teardown(test_read_after_write, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_iovecs, setup_det, teardown),
		cmocka_unit_test(test_iov_helpers_skip),
		cmocka_unit_test_setup_teardown(test_refusals, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_discard_and_zeroes, setup_det, teardown),
		cmocka_unit_test(test_seeded_order),
		cmocka_unit_test_setup_teardown(test_bad_size, setup_det, teardown),
	};
	const struct CMUnitTest threaded[] = {
		cmocka_unit_test_setup_teardown(test_read_after_write, setup_threaded, teardown),
		cmocka_unit_test_setup_teardown(test_iovecs, setup_threaded, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup_threaded, teardown),
		cmocka_unit_test_setup_teardown(test_discard_and_zeroes, setup_threaded,
						teardown),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("memory deterministic", det, NULL, NULL);
	failed += cmocka_run_group_tests_name("memory threaded", threaded, NULL, NULL);
	return failed ? 1 : 0;
}
