/* SPDX-License-Identifier: MIT */
/*
 * ctx.h - the execution context as seen by the library's layers.
 *
 * A context runs deferred work and timers.  Threaded mode: one worker thread runs work
 * items in FIFO order and timers when due (CLOCK_MONOTONIC).  Deterministic mode: the
 * caller's tc_ctx_poll() runs work items picked at random (xorshift seeded by
 * tc_ctx_opts.seed) among those queued, then due timers, on a virtual clock.
 *
 * Devices complete requests by queuing a work item (memory, crash) or from their own
 * completion thread (io_uring file backend, threaded mode only; in deterministic mode
 * the file backend also funnels completions through the context queue).
 */
#ifndef TC_CTX_H
#define TC_CTX_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include "tiercache.h"

struct tc_work;
typedef void (*tc_work_fn)(struct tc_work *w);

/* A unit of deferred work; embedded in the owner's struct, owner keeps it alive. */
struct tc_work {
	tc_work_fn fn;
	struct tc_work *next;   /* ctx-private */
};

struct tc_timer;
typedef void (*tc_timer_fn)(struct tc_timer *t);

/* A one-shot timer; re-arm from its callback for periodic work. */
struct tc_timer {
	tc_timer_fn fn;
	uint64_t when;          /* ns, ctx clock */
	bool armed;             /* ctx-private */
	struct tc_timer *next;  /* ctx-private */
};

/* tc_ctx_defer - queue @w to run later on the context (never inline).  Thread-safe. */
void tc_ctx_defer(tc_ctx *ctx, struct tc_work *w);

/* tc_ctx_timer_arm - (re)arm @t to fire at @when ns; thread-safe.  Arming an armed timer
 * moves it. */
void tc_ctx_timer_arm(tc_ctx *ctx, struct tc_timer *t, uint64_t when);
/* tc_ctx_timer_cancel - disarm; if the callback is running on the worker thread, wait
 * for it to return (and disarm again if it re-armed), so the timer may be freed after
 * this call.  Must not be called from that timer's own callback. */
void tc_ctx_timer_cancel(tc_ctx *ctx, struct tc_timer *t);

bool tc_ctx_deterministic(tc_ctx *ctx);

/* tc_ctx_rand - deterministic mode: the context's seeded generator (caller holds no
 * locks of the ctx); threaded mode: a thread-safe non-deterministic generator. */
uint64_t tc_ctx_rand(tc_ctx *ctx);

/*
 * tc_ctx_wait_until - block until *@flag becomes true.  Threaded mode: waits on the
 * context's completion condition variable (tc_ctx_wake() signals it); deterministic
 * mode: runs tc_ctx_poll() until the flag is set; if nothing is queued it advances the
 * virtual clock to the next timer; if there is no timer either, returns -EDEADLK.
 * @flag is read with acquire semantics.
 */
int tc_ctx_wait_until(tc_ctx *ctx, const volatile bool *flag);
/* tc_ctx_wake - wake tc_ctx_wait_until() waiters after setting a flag (release). */
void tc_ctx_wake(tc_ctx *ctx);

/* Logging with printf formats (tc_log, tiercache.h); messages name the object and the
 * value at fault. */
#define tc_err(ctx, ...) tc_log((ctx), TC_LOG_ERROR, __VA_ARGS__)
#define tc_warn(ctx, ...) tc_log((ctx), TC_LOG_WARN, __VA_ARGS__)
#define tc_info(ctx, ...) tc_log((ctx), TC_LOG_INFO, __VA_ARGS__)

/*
 * struct tc_waiter - "submit, then wait for the completion callback", once for every
 * synchronous helper (device I/O, volume I/O, metadata commit).  The waiter lives on
 * the waiting thread's stack:
 *
 *	struct tc_waiter w;
 *	tc_waiter_init(&w, ctx);
 *	submit(..., callback that calls tc_waiter_done(&w, result));
 *	return tc_waiter_wait(&w);
 *
 * tc_waiter_init() and tc_waiter_wait() run on the same thread.  Threaded mode, off the
 * worker: the waiter sleeps on its own futex word and tc_waiter_done() wakes that one
 * thread, never the context's other waiters (a context-wide broadcast per completion
 * woke every thread of the server that was waiting on a request of its own, and they
 * fought over the context's mutex).  Deterministic mode, and the worker thread itself:
 * tc_waiter_wait() runs the context through tc_ctx_wait_until() until @done is set.
 * tc_waiter_done() may run on any thread; the waiter may return, and its stack go, the
 * moment it has stored the result, so tc_waiter_done() touches nothing of @w after
 * that store (a futex wake on the address is harmless: futex waiters re-check their
 * word), and the caller's callback must not touch its own request after calling it
 * either.
 */
struct tc_waiter {
	tc_ctx *ctx;
	int result;             /* 0 or negative errno, from tc_waiter_done() */
	bool done;              /* !own: set by tc_waiter_done(), waited through the ctx */
	bool own;               /* threaded and not the worker: sleep on @word */
	_Atomic uint32_t word;  /* own: 0 pending, 1 done, 2 pending with a sleeper */
};

void tc_waiter_init(struct tc_waiter *w, tc_ctx *ctx);

/*
 * Completions on the waiting thread (the served hit path without hand-offs).
 *
 * Between tc_waiter_init() and tc_waiter_wait() of an own waiter (threaded mode, not
 * the worker) the thread is "armed": it is about to wait, so a device may queue the
 * requests submitted in that window where only this thread can reap them (the file
 * backend's ring per thread) and register a reaper.  tc_waiter_wait() then reaps them
 * itself, running their completion callbacks on this thread, until the reaper has
 * nothing in flight, and only then sleeps on its futex word if its own completion has
 * still not come (it came through another thread).  A hit thus costs one sleep in the
 * kernel for the device and no wake-up by another thread.
 *
 * Requests submitted by callbacks that run while reaping are not in the window (the
 * flag is cleared when the wait starts): they go the ordinary way, so a chain of I/O
 * that a completion starts never keeps the waiter.  Nothing blocks between init and
 * wait except that wait itself, so what is queued there is always reaped.
 *
 * One reaper per thread (the file backend's); @in_flight and @reap run on this thread
 * only.  Deterministic contexts never arm a thread: their order stays the seed's.
 */
struct tc_local_reaper {
	unsigned (*in_flight)(void);    /* requests queued that only this thread reaps */
	void (*reap)(void);             /* wait for one or more of them and complete them */
};
/* tc_thread_set_reaper - register (or with NULL, remove) this thread's reaper. */
void tc_thread_set_reaper(const struct tc_local_reaper *r);
/* tc_thread_armed - true between an own waiter's init and wait on this thread. */
bool tc_thread_armed(void);
/* tc_waiter_done - record @result and wake the waiter; call it last. */
void tc_waiter_done(struct tc_waiter *w, int result);
/* tc_waiter_wait - wait for tc_waiter_done(); returns its result, or -EDEADLK when a
 * deterministic context has nothing left to run (tc_ctx_wait_until). */
int tc_waiter_wait(struct tc_waiter *w);

#endif /* TC_CTX_H */
