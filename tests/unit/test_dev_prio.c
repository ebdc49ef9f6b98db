/* SPDX-License-Identifier: MIT */
/*
 * test_dev_prio.c - request priorities in the device layer's dispatch queues (dev.c,
 * "Dispatch"), on an emulated SATA SSD (8 parallel slots, the dispatch limit) on the
 * virtual clock: a HIGH read submitted behind 32 BULK reads completes before all but
 * the ones already in the device; NORMAL goes ahead of BULK; a steady stream of HIGH
 * requests deeper than the limit still lets BULK requests finish within the starvation
 * bound; requests with an unknown class are refused; the queue counters say what
 * waited.  Files are sparse, under $TMPDIR (default /tmp), removed at the end.
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

#define MiB (1ull << 20)
#define NREQ 64

struct fixture {
	tc_ctx *ctx;
	char dir[512];
	char path[600];
	struct t_log log;
	tc_dev *dev;
	uint8_t *buf;
	/* completion order */
	struct tc_io io[NREQ];
	struct iovec iov[NREQ];
	int order[NREQ];            /* completion rank of each request, -1 = pending */
	int result[NREQ];
	int ndone;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || t_mkdtemp(fx->dir, sizeof(fx->dir), "tc-test-prio"))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/ssd", fx->dir);
	fx->ctx = t_ctx(TC_CTX_DETERMINISTIC, 11, TC_LOG_WARN, &fx->log);
	if (tc_dev_new_emu(fx->ctx, "sata-ssd", fx->path, TC_DEV_CREATE, 64 * MiB, &fx->dev))
		return -1;
	fx->buf = aligned_alloc(4096, 64 * 1024);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	tc_dev_close(fx->dev);
	tc_ctx_free(fx->ctx);
	free(fx->buf);
	assert_int_equal(t_rm_rf(fx->dir), 0);
	free(fx);
	return 0;
}

static void req_done(struct tc_io *io, int result)
{
	struct fixture *fx = io->private_data;
	int i = (int)(io - fx->io);

	fx->order[i] = fx->ndone++;
	fx->result[i] = result;
}

/* Submit request @i: a read of @len bytes (all share one buffer: only times matter). */
static void submit(struct fixture *fx, int i, uint8_t prio, uint64_t len)
{
	fx->iov[i] = (struct iovec){ fx->buf, len };
	fx->io[i] = (struct tc_io){ .op = TC_OP_READ, .prio = prio, .offset = (uint64_t)i * len,
				    .length = len, .iov = &fx->iov[i], .iovcnt = 1,
				    .done = req_done, .private_data = fx };
	fx->order[i] = -1;
	tc_dev_submit(fx->dev, &fx->io[i]);
}

/* Run the context until nothing is queued or armed. */
static void run_idle(struct fixture *fx)
{
	for (;;) {
		if (tc_ctx_poll(fx->ctx, 64) > 0)
			continue;
		uint64_t next = tc_ctx_next_deadline(fx->ctx), now = tc_ctx_now(fx->ctx);
		if (next == UINT64_MAX)
			return;
		tc_ctx_advance(fx->ctx, next > now ? next - now : 1);
	}
}

/* A HIGH read behind 32 BULK 64 KiB reads: in a FIFO it would finish last. */
static void test_high_overtakes_bulk(void **state)
{
	struct fixture *fx = *state;
	struct tc_dev_queue_stats st;

	for (int i = 0; i < 32; i++)
		submit(fx, i, TC_PRIO_BULK, 64 * 1024);
	submit(fx, 32, TC_PRIO_HIGH, 4096);
	tc_dev_queue_stats(fx->dev, &st);
	assert_int_equal(st.limit, 8);
	assert_int_equal(st.inflight, 8);
	assert_int_equal(st.held[TC_PRIO_BULK], 24);
	assert_int_equal(st.held[TC_PRIO_HIGH], 1);
	assert_true(tc_dev_high_waiting(fx->dev));
	run_idle(fx);
	for (int i = 0; i <= 32; i++)
		assert_int_equal(fx->result[i], 0);
	/* Only the 8 already in the device may finish first. */
	assert_in_range(fx->order[32], 1, 8);
	tc_dev_queue_stats(fx->dev, &st);
	assert_int_equal(st.held[TC_PRIO_BULK], 0);
	assert_int_equal(st.queued[TC_PRIO_HIGH], 1);
	assert_int_equal(st.queued[TC_PRIO_BULK], 24);
	assert_false(tc_dev_high_waiting(fx->dev));
}

/* NORMAL before BULK, in arrival order within each class. */
static void test_normal_before_bulk(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < 16; i++)
		submit(fx, i, TC_PRIO_BULK, 4096);
	for (int i = 16; i < 20; i++)
		submit(fx, i, TC_PRIO_NORMAL, 4096);
	run_idle(fx);
	/* The 8 bulk requests in the device first, then the 4 normal ones, in order. */
	for (int i = 16; i < 20; i++)
		assert_int_equal(fx->order[i], 8 + (i - 16));
	for (int i = 8; i < 15; i++)
		assert_true(fx->order[i] < fx->order[i + 1]);
}

/*
 * A steady stream of HIGH reads, always 16 queued (twice the limit), and 4 BULK reads
 * behind them: without the bound the BULK ones would wait for as long as the stream
 * lasts.  With it, one goes after every TC_DEV_STARVE_LIMIT dispatches that passed it.
 */
static void high_stream_done(struct tc_io *io, int result);

struct stream {
	struct fixture *fx;
	struct tc_io io[16];
	struct iovec iov[16];
	int high_done, stop;
};


static void high_submit(struct stream *s, int k)
{
	s->iov[k] = (struct iovec){ s->fx->buf, 4096 };
	s->io[k] = (struct tc_io){ .op = TC_OP_READ, .prio = TC_PRIO_HIGH,
				   .offset = (uint64_t)k * 4096, .length = 4096,
				   .iov = &s->iov[k], .iovcnt = 1, .done = high_stream_done,
				   .private_data = s };
	tc_dev_submit(s->fx->dev, &s->io[k]);
}

static void high_stream_done(struct tc_io *io, int result)
{
	struct stream *s = io->private_data;

	assert_int_equal(result, 0);
	s->high_done++;
	if (!s->stop)
		high_submit(s, (int)(io - s->io));
}

static void test_bulk_not_starved(void **state)
{
	struct fixture *fx = *state;
	struct stream s = { .fx = fx };
	struct tc_dev_queue_stats st;

	for (int k = 0; k < 16; k++)
		high_submit(&s, k);
	for (int i = 0; i < 4; i++)
		submit(fx, i, TC_PRIO_BULK, 4096);
	int high_at_bulk_done = -1;
	while (s.high_done < 2000) {
		if (tc_ctx_poll(fx->ctx, 64) > 0) {
			if (high_at_bulk_done < 0 && fx->ndone == 4)
				high_at_bulk_done = s.high_done;
			continue;
		}
		uint64_t next = tc_ctx_next_deadline(fx->ctx), now = tc_ctx_now(fx->ctx);
		assert_int_not_equal(next, UINT64_MAX);
		tc_ctx_advance(fx->ctx, next > now ? next - now : 1);
	}
	s.stop = 1;
	run_idle(fx);
	/* Every BULK read finished while the stream ran, each after at most the bound's
	 * TC_DEV_STARVE_LIMIT HIGH dispatches (plus the ones in the device). */
	assert_int_equal(fx->ndone, 4);
	assert_true(high_at_bulk_done >= 0);
	assert_true(high_at_bulk_done <= 4 * (TC_DEV_STARVE_LIMIT + 1) + 16);
	tc_dev_queue_stats(fx->dev, &st);
	assert_true(st.starved >= 4);
	assert_true(st.max_wait_ns[TC_PRIO_BULK] > 0);
}

/* A class that does not exist is refused, and holds no dispatch slot. */
static void test_bad_prio(void **state)
{
	struct fixture *fx = *state;
	struct tc_dev_queue_stats st;

	submit(fx, 0, TC_PRIO_COUNT, 4096);
	run_idle(fx);
	assert_int_equal(fx->result[0], -EINVAL);
	assert_non_null(strstr(fx->log.last, "unknown priority 3"));
	tc_dev_queue_stats(fx->dev, &st);
	assert_int_equal(st.inflight, 0);
	submit(fx, 1, TC_PRIO_HIGH, 4096);
	run_idle(fx);
	assert_int_equal(fx->result[1], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_high_overtakes_bulk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_normal_before_bulk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_not_starved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_prio, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
