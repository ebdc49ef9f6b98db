/* SPDX-License-Identifier: MIT */
/*
 * ctx.c - the execution context: deferred work, timers, clock, waiting, logging.
 *
 * Every asynchronous thing in the library ends up here: device completions, engine
 * steps deferred out of a caller's stack, periodic timers.  The context runs them in
 * one of two modes:
 *
 *   threaded       one worker thread runs work items in FIFO order and timers when
 *                  their CLOCK_MONOTONIC deadline passes.  Callers block in
 *                  tc_ctx_wait_until() on a condition variable that tc_ctx_wake()
 *                  broadcasts.
 *
 *   deterministic  no thread at all.  tc_ctx_poll(), on the caller's thread, picks each
 *                  work item at random among those queued (a seeded splitmix64), then
 *                  runs the timers whose deadline the virtual clock has reached.  The
 *                  same seed and the same calls give the same interleaving, so a
 *                  failing test replays exactly; different seeds explore different
 *                  completion orders.
 *
 * The work queue is an intrusive singly-linked FIFO (owners embed struct tc_work, so
 * queuing never allocates and cannot fail).  Timers sit on a list sorted by deadline:
 * the library arms a handful of them, so a heap would buy nothing.
 *
 * One mutex protects the queue, the timers and the waiters of tc_ctx_wait_until();
 * callbacks always run with it released, so they may queue work, arm timers and wake
 * waiters freely.  A struct tc_waiter on a thread other than the worker does not use
 * it: it sleeps on a futex word of its own, which its completion alone wakes; before
 * that it reaps what the thread queued for itself (ctx.h, struct tc_local_reaper), so a
 * request the file backend put on the thread's own ring completes on the thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"

/* Threaded waiters re-check their flag at least this often (belt and braces: a wake is
 * never missed, but a flag set without tc_ctx_wake() is still noticed). */
#define CTX_WAIT_SLICE_NS (50ull * 1000 * 1000)

struct tc_ctx {
	enum tc_ctx_mode mode;

	pthread_mutex_t lock;
	pthread_cond_t work_cond;       /* worker: work queued, timer moved, stop */
	pthread_cond_t wait_cond;       /* tc_ctx_wait_until() waiters */
	uint64_t wake_gen;              /* bumped by every tc_ctx_wake() */

	struct tc_work *work_head, *work_tail;
	unsigned work_count;
	struct tc_timer *timers;        /* armed timers, sorted by deadline */
	struct tc_timer *running_timer; /* threaded: the timer whose callback runs now */
	struct tc_timer *cancelling;    /* a tc_ctx_timer_cancel() waits for this one */

	pthread_t worker;
	bool worker_started;
	bool stop;
	unsigned worker_waiting;        /* worker nesting depth inside tc_ctx_wait_until() */

	_Atomic uint64_t vclock;        /* deterministic mode: virtual ns */
	uint64_t sched_state;           /* deterministic mode: picks work items; under lock */
	_Atomic uint64_t rand_state;    /* tc_ctx_rand(): splitmix64 counter */

	tc_log_fn log_fn;               /* NULL: stderr */
	void *log_opaque;
	enum tc_log_level log_level;
};

/*
 * splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): the state is a counter, so advancing it is one atomic add and the
 * generator is thread-safe without a lock.
 */
#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ull

static uint64_t splitmix64_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t tc_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ull),
		.tv_nsec = (long)(ns % 1000000000ull),
	};
	return ts;
}

/* ------------------------------------------------------------------------------------
 * Queue and timer list; callers hold ctx->lock.
 */

static struct tc_work *work_pop_head(tc_ctx *ctx)
{
	struct tc_work *w = ctx->work_head;

	if (!w)
		return NULL;
	ctx->work_head = w->next;
	if (!ctx->work_head)
		ctx->work_tail = NULL;
	ctx->work_count--;
	w->next = NULL;
	return w;
}

/* Remove the @index-th queued item (0 = oldest). */
static struct tc_work *work_pop_nth(tc_ctx *ctx, unsigned index)
{
	struct tc_work *prev = NULL, *w = ctx->work_head;

	if (index == 0)
		return work_pop_head(ctx);
	while (index--) {
		prev = w;
		w = w->next;
	}
	prev->next = w->next;
	if (ctx->work_tail == w)
		ctx->work_tail = prev;
	ctx->work_count--;
	w->next = NULL;
	return w;
}

static void timer_unlink(tc_ctx *ctx, struct tc_timer *t)
{
	struct tc_timer **pp;

	for (pp = &ctx->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	t->next = NULL;
	t->armed = false;
}

/* Insert after every timer with the same deadline, so equal deadlines fire in the
 * order they were armed. */
static void timer_insert(tc_ctx *ctx, struct tc_timer *t)
{
	struct tc_timer **pp = &ctx->timers;

	while (*pp && (*pp)->when <= t->when)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	t->armed = true;
}

/* The earliest timer if it is due at @now, unlinked and disarmed; else NULL. */
static struct tc_timer *timer_pop_due(tc_ctx *ctx, uint64_t now)
{
	struct tc_timer *t = ctx->timers;

	if (!t || t->when > now)
		return NULL;
	timer_unlink(ctx, t);
	return t;
}

/* ------------------------------------------------------------------------------------
 * Threaded mode: the worker.
 */

/* Run one due timer or one work item, unlocking around the callback.  Returns false
 * when there was nothing to run.  Timers go first so a stream of work cannot starve
 * them. */
static bool worker_run_one(tc_ctx *ctx)
{
	struct tc_timer *t = timer_pop_due(ctx, tc_monotonic_ns());
	struct tc_work *w;

	if (t) {
		ctx->running_timer = t;
		pthread_mutex_unlock(&ctx->lock);
		t->fn(t);
		pthread_mutex_lock(&ctx->lock);
		ctx->running_timer = NULL;
		if (ctx->cancelling == t && t->armed)
			timer_unlink(ctx, t);                /* re-armed meanwhile: cancelled */
		pthread_cond_broadcast(&ctx->wait_cond);   /* a cancel may wait for it */
		return true;
	}
	w = work_pop_head(ctx);
	if (w) {
		pthread_mutex_unlock(&ctx->lock);
		w->fn(w);
		pthread_mutex_lock(&ctx->lock);
		return true;
	}
	return false;
}

/* Sleep on work_cond until the next timer deadline, at most @max_ns. */
static void worker_sleep(tc_ctx *ctx, uint64_t max_ns)
{
	uint64_t now = tc_monotonic_ns();
	uint64_t until = max_ns == UINT64_MAX ? UINT64_MAX : now + max_ns;
	struct timespec ts;

	if (ctx->timers && ctx->timers->when < until)
		until = ctx->timers->when;
	if (until == UINT64_MAX) {
		pthread_cond_wait(&ctx->work_cond, &ctx->lock);
		return;
	}
	ts = ns_to_timespec(until);
	pthread_cond_timedwait(&ctx->work_cond, &ctx->lock, &ts);
}

static void *worker_main(void *arg)
{
	tc_ctx *ctx = arg;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stop) {
		if (!worker_run_one(ctx))
			worker_sleep(ctx, UINT64_MAX);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

static bool on_worker(tc_ctx *ctx)
{
	return ctx->worker_started && pthread_equal(pthread_self(), ctx->worker);
}

/* ------------------------------------------------------------------------------------
 * Lifecycle.
 */

int tc_ctx_new(const struct tc_ctx_opts *opts, tc_ctx **out)
{
	pthread_condattr_t attr;
	tc_ctx *ctx;
	int ret;

	*out = NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->mode = opts ? opts->mode : TC_CTX_THREADED;
	ctx->log_level = opts ? opts->log_level : TC_LOG_WARN;
	if (ctx->mode != TC_CTX_THREADED && ctx->mode != TC_CTX_DETERMINISTIC) {
		fprintf(stderr, "tiercache: ERROR: context: unknown mode %d\n", (int)ctx->mode);
		free(ctx);
		return -EINVAL;
	}
	if (ctx->mode == TC_CTX_DETERMINISTIC) {
		/* Two independent streams from one seed: the order of completions does not
		 * depend on how often the engine draws random numbers, and vice versa. */
		ctx->sched_state = splitmix64_mix(opts->seed ^ 0x5ced5ced5ced5cedull);
		atomic_init(&ctx->rand_state, splitmix64_mix(opts->seed + SPLITMIX_GAMMA));
	} else {
		atomic_init(&ctx->rand_state,
			    splitmix64_mix(tc_monotonic_ns() ^ (uint64_t)(uintptr_t)ctx));
	}
	atomic_init(&ctx->vclock, 0);

	pthread_mutex_init(&ctx->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ctx->work_cond, &attr);
	pthread_cond_init(&ctx->wait_cond, &attr);
	pthread_condattr_destroy(&attr);

	if (ctx->mode == TC_CTX_THREADED) {
		ret = pthread_create(&ctx->worker, NULL, worker_main, ctx);
		if (ret) {
			fprintf(stderr, "tiercache: ERROR: context: cannot start worker: %s\n",
				strerror(ret));
			pthread_cond_destroy(&ctx->wait_cond);
			pthread_cond_destroy(&ctx->work_cond);
			pthread_mutex_destroy(&ctx->lock);
			free(ctx);
			return -ret;
		}
		ctx->worker_started = true;
	}
	*out = ctx;
	return 0;
}

void tc_ctx_free(tc_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->worker_started) {
		pthread_mutex_lock(&ctx->lock);
		ctx->stop = true;
		pthread_cond_broadcast(&ctx->work_cond);
		pthread_mutex_unlock(&ctx->lock);
		pthread_join(ctx->worker, NULL);
	}
	/* Queued work and armed timers are dropped without being touched: they live inside
	 * objects their owners may already have freed (tc_cache_abandon: process death). */
	ctx->work_head = ctx->work_tail = NULL;
	ctx->work_count = 0;
	ctx->timers = NULL;
	pthread_cond_destroy(&ctx->wait_cond);
	pthread_cond_destroy(&ctx->work_cond);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

void tc_ctx_set_log(tc_ctx *ctx, tc_log_fn fn, void *opaque, enum tc_log_level level)
{
	ctx->log_fn = fn;
	ctx->log_opaque = opaque;
	ctx->log_level = level;
}

bool tc_ctx_deterministic(tc_ctx *ctx)
{
	return ctx->mode == TC_CTX_DETERMINISTIC;
}

/* ------------------------------------------------------------------------------------
 * Clock.
 */

uint64_t tc_ctx_now(tc_ctx *ctx)
{
	if (ctx->mode == TC_CTX_DETERMINISTIC)
		return atomic_load(&ctx->vclock);
	return tc_monotonic_ns();
}

int tc_ctx_advance(tc_ctx *ctx, uint64_t ns)
{
	if (ctx->mode != TC_CTX_DETERMINISTIC) {
		tc_err(ctx, "context: tc_ctx_advance(%" PRIu64 ") needs deterministic mode", ns);
		return -EINVAL;
	}
	atomic_fetch_add(&ctx->vclock, ns);
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Work and timers.
 */

void tc_ctx_defer(tc_ctx *ctx, struct tc_work *w)
{
	pthread_mutex_lock(&ctx->lock);
	w->next = NULL;
	if (ctx->work_tail)
		ctx->work_tail->next = w;
	else
		ctx->work_head = w;
	ctx->work_tail = w;
	ctx->work_count++;
	if (ctx->mode == TC_CTX_THREADED)
		pthread_cond_signal(&ctx->work_cond);
	pthread_mutex_unlock(&ctx->lock);
}

void tc_ctx_timer_arm(tc_ctx *ctx, struct tc_timer *t, uint64_t when)
{
	pthread_mutex_lock(&ctx->lock);
	if (t->armed)
		timer_unlink(ctx, t);
	t->when = when;
	timer_insert(ctx, t);
	/* A new earliest deadline shortens the worker's sleep. */
	if (ctx->mode == TC_CTX_THREADED && ctx->timers == t)
		pthread_cond_broadcast(&ctx->work_cond);
	pthread_mutex_unlock(&ctx->lock);
}

void tc_ctx_timer_cancel(tc_ctx *ctx, struct tc_timer *t)
{
	pthread_mutex_lock(&ctx->lock);
	if (t->armed)
		timer_unlink(ctx, t);
	/* Like del_timer_sync(): a callback running on the worker finishes first (and may
	 * re-arm, hence the loop), so the owner can free the timer afterwards.  Not from
	 * the timer's own callback. */
	if (ctx->running_timer == t && !pthread_equal(pthread_self(), ctx->worker)) {
		ctx->cancelling = t;
		while (ctx->running_timer == t)
			pthread_cond_wait(&ctx->wait_cond, &ctx->lock);
		ctx->cancelling = NULL;
		if (t->armed)
			timer_unlink(ctx, t);
	}
	pthread_mutex_unlock(&ctx->lock);
}

unsigned tc_ctx_pending(tc_ctx *ctx)
{
	unsigned n;

	pthread_mutex_lock(&ctx->lock);
	n = ctx->work_count;
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

uint64_t tc_ctx_next_deadline(tc_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	uint64_t when = ctx->timers ? ctx->timers->when : UINT64_MAX;
	pthread_mutex_unlock(&ctx->lock);
	return when;
}

int tc_ctx_poll(tc_ctx *ctx, unsigned max)
{
	struct tc_timer *t;
	struct tc_work *w;
	int ran = 0;

	if (ctx->mode != TC_CTX_DETERMINISTIC) {
		tc_err(ctx, "context: tc_ctx_poll() needs deterministic mode");
		return -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	while ((unsigned)ran < max && ctx->work_count > 0) {
		uint64_t r;

		ctx->sched_state += SPLITMIX_GAMMA;
		r = splitmix64_mix(ctx->sched_state);
		w = work_pop_nth(ctx, (unsigned)(r % ctx->work_count));
		pthread_mutex_unlock(&ctx->lock);
		w->fn(w);
		ran++;
		pthread_mutex_lock(&ctx->lock);
	}
	/* The clock is re-read each time: a timer may not move it, but a callback that
	 * calls tc_ctx_advance() (tests do) makes later timers due in this same pass. */
	while ((t = timer_pop_due(ctx, atomic_load(&ctx->vclock)))) {
		pthread_mutex_unlock(&ctx->lock);
		t->fn(t);
		ran++;
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return ran;
}

/* ------------------------------------------------------------------------------------
 * Waiting.
 */

static bool flag_set(const volatile bool *flag)
{
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static int wait_deterministic(tc_ctx *ctx, const volatile bool *flag)
{
	while (!flag_set(flag)) {
		uint64_t next;
		int ran = tc_ctx_poll(ctx, 1);

		if (ran > 0 || flag_set(flag))
			continue;
		pthread_mutex_lock(&ctx->lock);
		if (ctx->work_count > 0) {
			pthread_mutex_unlock(&ctx->lock);
			continue;
		}
		if (!ctx->timers) {
			pthread_mutex_unlock(&ctx->lock);
			tc_err(ctx, "context: waiting with no work queued and no timer armed "
			       "(virtual time %" PRIu64 " ns): deadlock",
			       atomic_load(&ctx->vclock));
			return -EDEADLK;
		}
		next = ctx->timers->when;
		pthread_mutex_unlock(&ctx->lock);
		/* Nothing can happen before the next deadline: jump to it. */
		if (next > atomic_load(&ctx->vclock))
			atomic_store(&ctx->vclock, next);
	}
	return 0;
}

/*
 * The worker itself waiting (a work item or timer called a synchronous helper): nobody
 * else would run the queue, so it runs work and timers here until the flag is set.
 */
static int wait_on_worker(tc_ctx *ctx, const volatile bool *flag)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->worker_waiting++;
	while (!flag_set(flag)) {
		if (!worker_run_one(ctx))
			worker_sleep(ctx, CTX_WAIT_SLICE_NS);
	}
	ctx->worker_waiting--;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int tc_ctx_wait_until(tc_ctx *ctx, const volatile bool *flag)
{
	if (ctx->mode == TC_CTX_DETERMINISTIC)
		return wait_deterministic(ctx, flag);
	if (on_worker(ctx))
		return wait_on_worker(ctx, flag);

	/* The flag is checked under the lock that tc_ctx_wake() takes, so a wake between
	 * the check and the wait cannot be lost. */
	pthread_mutex_lock(&ctx->lock);
	while (!flag_set(flag)) {
		struct timespec ts = ns_to_timespec(tc_monotonic_ns() + CTX_WAIT_SLICE_NS);
		uint64_t gen = ctx->wake_gen;

		while (gen == ctx->wake_gen && !flag_set(flag)) {
			if (pthread_cond_timedwait(&ctx->wait_cond, &ctx->lock, &ts) == ETIMEDOUT)
				break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void tc_ctx_wake(tc_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->wake_gen++;
	pthread_cond_broadcast(&ctx->wait_cond);
	if (ctx->worker_waiting)
		pthread_cond_broadcast(&ctx->work_cond);
	pthread_mutex_unlock(&ctx->lock);
}

/* This thread's reaper and armed flag (ctx.h, struct tc_local_reaper): per thread, not
 * per context, because what they describe (a ring only this thread may reap, a wait
 * about to start) belongs to the thread. */
static __thread const struct tc_local_reaper *thread_reaper;
static __thread bool thread_armed;

void tc_thread_set_reaper(const struct tc_local_reaper *r)
{
	thread_reaper = r;
}

bool tc_thread_armed(void)
{
	return thread_armed;
}

/* The futex of a waiter of its own (ctx.h, struct tc_waiter). */
static void waiter_futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

void tc_waiter_init(struct tc_waiter *w, tc_ctx *ctx)
{
	w->ctx = ctx;
	w->result = 0;
	w->done = false;
	w->own = ctx->mode == TC_CTX_THREADED && !on_worker(ctx);
	atomic_init(&w->word, 0);
	if (w->own)
		thread_armed = true;
}

void tc_waiter_done(struct tc_waiter *w, int result)
{
	tc_ctx *ctx = w->ctx;

	w->result = result;
	if (w->own) {
		/* After the exchange the waiter may return: only its address is used. */
		_Atomic uint32_t *word = &w->word;
		if (atomic_exchange_explicit(word, 1, memory_order_acq_rel) == 2)
			waiter_futex(word, FUTEX_WAKE, 1);
		return;
	}
	/* After this store the waiter may return and reuse its stack (and @w): touch
	 * nothing of it. */
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	tc_ctx_wake(ctx);
}

int tc_waiter_wait(struct tc_waiter *w)
{
	if (w->own) {
		const struct tc_local_reaper *r = thread_reaper;
		uint32_t v = 0;

		/* What this thread queued for itself, completed here (it may include our own
		 * completion: then the word is 1 below and there is no sleep at all). */
		thread_armed = false;
		while (r && r->in_flight() > 0)
			r->reap();
		/* 0 -> 2: asleep until tc_waiter_done() stores 1 (a wake is never lost: the
		 * futex sleeps only while the word is still 2). */
		if (atomic_compare_exchange_strong_explicit(&w->word, &v, 2,
							    memory_order_acquire,
							    memory_order_acquire))
			while (atomic_load_explicit(&w->word, memory_order_acquire) != 1)
				waiter_futex(&w->word, FUTEX_WAIT, 2);
		return w->result;
	}
	int r = tc_ctx_wait_until(w->ctx, &w->done);

	return r ? r : w->result;
}

/* ------------------------------------------------------------------------------------
 * Random numbers and logging.
 */

uint64_t tc_ctx_rand(tc_ctx *ctx)
{
	uint64_t s = atomic_fetch_add(&ctx->rand_state, SPLITMIX_GAMMA) + SPLITMIX_GAMMA;

	return splitmix64_mix(s);
}

static const char *level_name(enum tc_log_level level)
{
	switch (level) {
	case TC_LOG_ERROR: return "ERROR";
	case TC_LOG_WARN: return "WARN";
	case TC_LOG_INFO: return "INFO";
	case TC_LOG_DEBUG: return "DEBUG";
	}
	return "?";
}

void tc_log(tc_ctx *ctx, enum tc_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > ctx->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->log_fn)
		ctx->log_fn(ctx->log_opaque, level, msg);
	else
		fprintf(stderr, "tiercache: %s: %s\n", level_name(level), msg);
}
