/* SPDX-License-Identifier: MIT */
/*
 * test_ctx.c - the execution context: seeded work order, virtual-clock timers,
 * deterministic waiting and deadlock detection, threaded FIFO work, timers, wait/wake,
 * the random generator and the log sink.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "ctx.h"
#include "helpers.h"

#define N_ITEMS 32

struct item {
	struct tc_work work;
	int id;
	int *order;
	int *n;
};

static void item_run(struct tc_work *w)
{
	struct item *it = (struct item *)w;

	it->order[(*it->n)++] = it->id;
}

static tc_ctx *det_ctx(uint64_t seed)
{
	struct tc_ctx_opts opts = { .mode = TC_CTX_DETERMINISTIC, .seed = seed,
				    .log_level = TC_LOG_WARN };
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(&opts, &ctx), 0);
	return ctx;
}

/* Queue N_ITEMS items and record the order in which one poll runs them. */
static void run_order(uint64_t seed, int order[N_ITEMS])
{
	struct item items[N_ITEMS];
	tc_ctx *ctx = det_ctx(seed);
	int n = 0, i;

	for (i = 0; i < N_ITEMS; i++) {
		items[i] = (struct item){ .work.fn = item_run, .id = i, .order = order, .n = &n };
		tc_ctx_defer(ctx, &items[i].work);
	}
	assert_int_equal(tc_ctx_pending(ctx), N_ITEMS);
	assert_int_equal(tc_ctx_poll(ctx, 1000), N_ITEMS);
	assert_int_equal(n, N_ITEMS);
	assert_int_equal(tc_ctx_pending(ctx), 0);
	assert_int_equal(tc_ctx_poll(ctx, 1000), 0);
	tc_ctx_free(ctx);
}

static void test_det_order_per_seed(void **state)
{
	int a[N_ITEMS], b[N_ITEMS], seen[N_ITEMS] = { 0 };
	int i, differing_seeds = 0;
	uint64_t seed;

	run_order(42, a);
	run_order(42, b);
	assert_memory_equal(a, b, sizeof(a));
	for (i = 0; i < N_ITEMS; i++)
		seen[a[i]]++;
	for (i = 0; i < N_ITEMS; i++)
		assert_int_equal(seen[i], 1);          /* a permutation: each ran once */

	for (seed = 0; seed < 8; seed++) {
		run_order(seed, b);
		if (memcmp(a, b, sizeof(a)))
			differing_seeds++;
	}
	assert_true(differing_seeds >= 7);
	/* Not FIFO: picking at random shuffles 32 items. */
	for (i = 0; i < N_ITEMS && a[i] == i; i++)
		;
	assert_true(i < N_ITEMS);
}

struct chain {
	struct tc_work work;
	tc_ctx *ctx;
	int left;
	int runs;
};

static void chain_run(struct tc_work *w)
{
	struct chain *c = (struct chain *)w;

	c->runs++;
	if (--c->left > 0)
		tc_ctx_defer(c->ctx, &c->work);
}

static void test_det_poll_limit_and_requeue(void **state)
{
	tc_ctx *ctx = det_ctx(1);
	struct chain c = { .work.fn = chain_run, .ctx = ctx, .left = 5 };

	tc_ctx_defer(ctx, &c.work);
	/* Work queued by work is eligible in the same call, up to max. */
	assert_int_equal(tc_ctx_poll(ctx, 3), 3);
	assert_int_equal(c.runs, 3);
	assert_int_equal(tc_ctx_pending(ctx), 1);
	assert_int_equal(tc_ctx_poll(ctx, 100), 2);
	assert_int_equal(c.runs, 5);
	assert_int_equal(tc_ctx_pending(ctx), 0);
	tc_ctx_free(ctx);
}

struct tmr {
	struct tc_timer timer;
	tc_ctx *ctx;
	int id;
	int *order;
	int *n;
	uint64_t fired_at;
	uint64_t period;        /* re-arm while > 0 */
	int repeats;
};

static void tmr_fire(struct tc_timer *t)
{
	struct tmr *m = (struct tmr *)t;

	m->order[(*m->n)++] = m->id;
	m->fired_at = tc_ctx_now(m->ctx);
	if (m->period && --m->repeats > 0)
		tc_ctx_timer_arm(m->ctx, t, t->when + m->period);
}

static void test_det_timers_virtual_clock(void **state)
{
	tc_ctx *ctx = det_ctx(7);
	int order[8], n = 0;
	struct tmr t1 = { .timer.fn = tmr_fire, .ctx = ctx, .id = 1, .order = order, .n = &n };
	struct tmr t2 = t1, t3 = t1, t4 = t1;

	t2.id = 2;
	t3.id = 3;
	t4.id = 4;
	assert_int_equal(tc_ctx_now(ctx), 0);
	tc_ctx_timer_arm(ctx, &t1.timer, 300);
	tc_ctx_timer_arm(ctx, &t2.timer, 100);
	tc_ctx_timer_arm(ctx, &t3.timer, 200);
	tc_ctx_timer_arm(ctx, &t4.timer, 150);
	tc_ctx_timer_cancel(ctx, &t4.timer);
	assert_false(t4.timer.armed);

	assert_int_equal(tc_ctx_poll(ctx, 10), 0);         /* nothing due at 0 */
	assert_int_equal(tc_ctx_advance(ctx, 150), 0);
	assert_int_equal(tc_ctx_now(ctx), 150);
	assert_int_equal(tc_ctx_poll(ctx, 10), 1);
	assert_int_equal(n, 1);
	assert_int_equal(order[0], 2);
	assert_int_equal(t2.fired_at, 150);

	/* Moving an armed timer: t1 from 300 to 250, still after t3. */
	tc_ctx_timer_arm(ctx, &t1.timer, 250);
	assert_int_equal(tc_ctx_advance(ctx, 1000), 0);
	assert_int_equal(tc_ctx_poll(ctx, 10), 2);
	assert_int_equal(n, 3);
	assert_int_equal(order[1], 3);
	assert_int_equal(order[2], 1);
	assert_int_equal(tc_ctx_poll(ctx, 10), 0);
	tc_ctx_free(ctx);
}

static void test_det_periodic_timer(void **state)
{
	tc_ctx *ctx = det_ctx(3);
	int order[8], n = 0;
	struct tmr t = { .timer.fn = tmr_fire, .ctx = ctx, .id = 9, .order = order, .n = &n,
			 .period = 100, .repeats = 3 };
	int i;

	tc_ctx_timer_arm(ctx, &t.timer, 100);
	for (i = 0; i < 5; i++) {
		tc_ctx_advance(ctx, 100);
		tc_ctx_poll(ctx, 1);
	}
	assert_int_equal(n, 3);                 /* fired at 100, 200, 300, then stopped */
	assert_int_equal(t.fired_at, 300);
	assert_false(t.timer.armed);
	tc_ctx_free(ctx);
}

struct flag_timer {
	struct tc_timer timer;
	tc_ctx *ctx;
	bool flag;
};

static void flag_timer_fire(struct tc_timer *t)
{
	struct flag_timer *f = (struct flag_timer *)t;

	__atomic_store_n(&f->flag, true, __ATOMIC_RELEASE);
	tc_ctx_wake(f->ctx);
}

static void test_det_wait_jumps_to_timer(void **state)
{
	tc_ctx *ctx = det_ctx(5);
	struct flag_timer f = { .timer.fn = flag_timer_fire, .ctx = ctx };
	struct chain c = { .work.fn = chain_run, .ctx = ctx, .left = 4 };
	bool never = false;

	tc_ctx_defer(ctx, &c.work);
	tc_ctx_timer_arm(ctx, &f.timer, 5000000);
	assert_int_equal(tc_ctx_wait_until(ctx, &f.flag), 0);
	assert_true(f.flag);
	assert_int_equal(c.runs, 4);            /* queued work ran before the clock moved */
	assert_int_equal(tc_ctx_now(ctx), 5000000);

	/* Nothing queued, nothing armed: waiting would never end. */
	assert_int_equal(tc_ctx_wait_until(ctx, &never), -EDEADLK);
	tc_ctx_free(ctx);
}

static void test_det_rand(void **state)
{
	tc_ctx *a = det_ctx(11), *b = det_ctx(11), *c = det_ctx(12);
	int i, same_c = 0;

	for (i = 0; i < 16; i++) {
		uint64_t x = tc_ctx_rand(a);

		assert_int_equal(x, tc_ctx_rand(b));
		same_c += x == tc_ctx_rand(c);
	}
	assert_int_equal(same_c, 0);
	assert_true(tc_ctx_deterministic(a));
	tc_ctx_free(a);
	tc_ctx_free(b);
	tc_ctx_free(c);
}

static void test_free_drops_queued_work(void **state)
{
	tc_ctx *ctx = det_ctx(0);
	int order[4], n = 0;
	struct item it = { .work.fn = item_run, .id = 0, .order = order, .n = &n };

	tc_ctx_defer(ctx, &it.work);
	tc_ctx_free(ctx);
	assert_int_equal(n, 0);
}

/* ------------------------------------------------------------------------------------
 * Threaded mode.
 */

struct tflag {
	struct tc_work work;
	struct tc_timer timer;
	tc_ctx *ctx;
	bool flag;
	int id;
	int *order;
	int *n;
	pthread_t ran_on;
};

static void tflag_set(struct tflag *f)
{
	f->ran_on = pthread_self();
	__atomic_store_n(&f->flag, true, __ATOMIC_RELEASE);
	tc_ctx_wake(f->ctx);
}

static void tflag_work(struct tc_work *w)
{
	struct tflag *f = (struct tflag *)w;

	if (f->order)
		f->order[(*f->n)++] = f->id;
	tflag_set(f);
}

static void tflag_timer(struct tc_timer *t)
{
	tflag_set((struct tflag *)((char *)t - offsetof(struct tflag, timer)));
}

static void test_threaded_fifo_and_wait(void **state)
{
	struct tflag f[100];
	int order[100], n = 0, i;
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(NULL, &ctx), 0);
	assert_false(tc_ctx_deterministic(ctx));
	assert_int_equal(tc_ctx_poll(ctx, 1), -EINVAL);
	assert_int_equal(tc_ctx_advance(ctx, 1), -EINVAL);
	for (i = 0; i < 100; i++) {
		f[i] = (struct tflag){ .work.fn = tflag_work, .ctx = ctx, .id = i,
				       .order = order, .n = &n };
		tc_ctx_defer(ctx, &f[i].work);
	}
	assert_int_equal(tc_ctx_wait_until(ctx, &f[99].flag), 0);
	assert_int_equal(n, 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(order[i], i);  /* FIFO */
	assert_false(pthread_equal(f[0].ran_on, pthread_self()));
	tc_ctx_free(ctx);
}

static void test_threaded_timer(void **state)
{
	struct tflag f = { .timer.fn = tflag_timer };
	uint64_t start, when;
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(NULL, &ctx), 0);
	f.ctx = ctx;
	start = tc_ctx_now(ctx);
	when = start + 20 * 1000 * 1000;
	tc_ctx_timer_arm(ctx, &f.timer, when);
	assert_int_equal(tc_ctx_wait_until(ctx, &f.flag), 0);
	assert_true(tc_ctx_now(ctx) >= when);
	assert_false(f.timer.armed);
	tc_ctx_free(ctx);
}

static void *wake_thread(void *arg)
{
	struct tflag *f = arg;
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	tflag_set(f);
	return NULL;
}

static void test_threaded_wake_from_other_thread(void **state)
{
	struct tflag f[20];
	pthread_t th[20];
	tc_ctx *ctx;
	int i;

	assert_int_equal(tc_ctx_new(NULL, &ctx), 0);
	for (i = 0; i < 20; i++) {
		f[i] = (struct tflag){ .ctx = ctx };
		assert_int_equal(pthread_create(&th[i], NULL, wake_thread, &f[i]), 0);
	}
	for (i = 0; i < 20; i++) {
		assert_int_equal(tc_ctx_wait_until(ctx, &f[i].flag), 0);
		assert_true(f[i].flag);
	}
	for (i = 0; i < 20; i++)
		pthread_join(th[i], NULL);
	tc_ctx_free(ctx);
}

/* A work item that itself waits for more work: the worker must run it meanwhile. */
struct nested {
	struct tc_work work;
	struct tflag inner;
	struct tflag outer;
	int wait_ret;
};

static void nested_run(struct tc_work *w)
{
	struct nested *ns = (struct nested *)w;

	tc_ctx_defer(ns->inner.ctx, &ns->inner.work);
	ns->wait_ret = tc_ctx_wait_until(ns->inner.ctx, &ns->inner.flag);
	tflag_set(&ns->outer);
}

static void test_threaded_wait_on_worker(void **state)
{
	struct nested ns = { .work.fn = nested_run, .wait_ret = -1 };
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(NULL, &ctx), 0);
	ns.inner = (struct tflag){ .work.fn = tflag_work, .ctx = ctx };
	ns.outer = (struct tflag){ .ctx = ctx };
	tc_ctx_defer(ctx, &ns.work);
	assert_int_equal(tc_ctx_wait_until(ctx, &ns.outer.flag), 0);
	assert_int_equal(ns.wait_ret, 0);
	assert_true(ns.inner.flag);
	tc_ctx_free(ctx);
}

static void test_threaded_rand_varies(void **state)
{
	tc_ctx *ctx;
	uint64_t a, b;

	assert_int_equal(tc_ctx_new(NULL, &ctx), 0);
	a = tc_ctx_rand(ctx);
	b = tc_ctx_rand(ctx);
	assert_true(a != b);
	tc_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------
 * Logging.
 */

static void test_log_sink_and_level(void **state)
{
	struct t_log cap = { 0 };
	tc_ctx *ctx = det_ctx(0);

	tc_ctx_set_log(ctx, t_log_sink, &cap, TC_LOG_WARN);
	tc_err(ctx, "volume \"%s\": offset %d beyond size %d", "db", 4096, 1024);
	assert_int_equal(cap.count, 1);
	assert_int_equal(cap.last_level, TC_LOG_ERROR);
	assert_string_equal(cap.last, "volume \"db\": offset 4096 beyond size 1024");
	tc_warn(ctx, "w");
	assert_int_equal(cap.count, 2);
	tc_info(ctx, "dropped");
	assert_int_equal(cap.count, 2);
	tc_ctx_set_log(ctx, t_log_sink, &cap, TC_LOG_DEBUG);
	tc_info(ctx, "kept");
	assert_int_equal(cap.count, 3);
	assert_string_equal(cap.last, "kept");
	/* Errors from the context itself go through the sink too. */
	assert_int_equal(tc_ctx_advance(ctx, 0), 0);
	tc_ctx_free(ctx);
}

/* A timer whose callback takes a while and re-arms itself. */
struct slow_timer {
	struct tc_timer t;
	tc_ctx *ctx;
	volatile int started, finished;
};

static void slow_timer_fn(struct tc_timer *t)
{
	struct slow_timer *st = (struct slow_timer *)t;
	__atomic_store_n(&st->started, 1, __ATOMIC_SEQ_CST);
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	tc_ctx_timer_arm(st->ctx, t, tc_ctx_now(st->ctx));   /* would fire again at once */
	__atomic_store_n(&st->finished, 1, __ATOMIC_SEQ_CST);
}

/* Cancel waits for a running callback and undoes its re-arm: the owner may then free
 * the timer (as tc_cache_close() does with the cache's tick). */
static void test_threaded_cancel_waits_for_callback(void **state)
{
	(void)state;
	struct tc_ctx_opts o = { .mode = TC_CTX_THREADED };
	tc_ctx *ctx;
	assert_int_equal(tc_ctx_new(&o, &ctx), 0);
	struct slow_timer st = { .t = { .fn = slow_timer_fn }, .ctx = ctx };
	tc_ctx_timer_arm(ctx, &st.t, tc_ctx_now(ctx));
	while (!__atomic_load_n(&st.started, __ATOMIC_SEQ_CST)) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	tc_ctx_timer_cancel(ctx, &st.t);
	assert_int_equal(__atomic_load_n(&st.finished, __ATOMIC_SEQ_CST), 1);
	assert_false(st.t.armed);
	st.started = 0;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	assert_int_equal(st.started, 0);   /* the re-arm was undone: it never ran again */
	tc_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest det[] = {
		cmocka_unit_test(test_det_order_per_seed),
		cmocka_unit_test(test_det_poll_limit_and_requeue),
		cmocka_unit_test(test_det_timers_virtual_clock),
		cmocka_unit_test(test_det_periodic_timer),
		cmocka_unit_test(test_det_wait_jumps_to_timer),
		cmocka_unit_test(test_det_rand),
		cmocka_unit_test(test_free_drops_queued_work),
		cmocka_unit_test(test_log_sink_and_level),
	};
	const struct CMUnitTest threaded[] = {
		cmocka_unit_test(test_threaded_fifo_and_wait),
		cmocka_unit_test(test_threaded_timer),
		cmocka_unit_test(test_threaded_wake_from_other_thread),
		cmocka_unit_test(test_threaded_wait_on_worker),
		cmocka_unit_test(test_threaded_rand_varies),
		cmocka_unit_test(test_threaded_cancel_waits_for_callback),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("ctx deterministic", det, NULL, NULL);
	failed += cmocka_run_group_tests_name("ctx threaded", threaded, NULL, NULL);
	return failed ? 1 : 0;
}
