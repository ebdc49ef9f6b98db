/* SPDX-License-Identifier: MIT */
/*
 * mngt.c - what the management operations share: waiting for the engine to reach a
 * state (no requests in flight, background work idle) from a management thread.
 */
#include <time.h>
#include "cache_priv.h"

/* Let the engine run until @pred holds: poll (deterministic mode, advancing the virtual
 * clock by a tick when idle) or sleep 1 ms (threaded mode). */
static void wait_for(struct tc_cache *c, bool (*pred)(struct tc_cache *c, void *arg),
		     void *arg)
{
	while (!pred(c, arg)) {
		if (tc_ctx_deterministic(c->ctx)) {
			if (tc_ctx_poll(c->ctx, 256) == 0)
				tc_ctx_advance(c->ctx, TC_TICK_NS);
		} else {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

static bool no_requests(struct tc_cache *c, void *arg)
{
	struct tc_volume *v = arg;
	return v ? atomic_load(&v->inflight_reqs) == 0 : atomic_load(&c->inflight_reqs) == 0;
}

static bool background_idle(struct tc_cache *c, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&c->meta.lock);
	bool idle = !c->meta.running && !c->cleaner.active && !c->cleaner.flush_inflight;
	pthread_mutex_unlock(&c->meta.lock);
	return idle && !atomic_load(&c->kick_queued) && !atomic_load(&c->protect_queued);
}

void tc_mngt_wait_requests(struct tc_cache *c, struct tc_volume *v)
{
	wait_for(c, no_requests, v);
}

void tc_mngt_wait_idle(struct tc_cache *c)
{
	wait_for(c, background_idle, NULL);
}
