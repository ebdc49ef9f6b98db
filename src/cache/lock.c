/* SPDX-License-Identifier: MIT */
/*
 * lock.c - in-flight records and the line lock.
 *
 * A line with requests in progress has an in-flight record on its lock shard
 * (cache_priv.h); the record is the line's lock: any number of shared holders or one
 * exclusive holder, and a FIFO of waiters.  A sub-request (request.c) takes the lock
 * through the struct tc_line_hold it embeds; one that must wait is queued and resumed
 * by a release through a context work item, so no thread ever blocks on a line.  The
 * cleaner takes lines shared without queueing (tc_line_try_shared), and only lines
 * nobody holds exclusively or waits for.  Everything here runs under the shard lock,
 * except where a function says otherwise.
 */
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

/* ---- in-flight records ------------------------------------------------------------ */

struct tc_inflight *tc_inflight_get(struct tc_cache *c, struct tc_lock_shard *s,
				    uint64_t key, bool create)
{
	for (struct tc_inflight *i = s->inflight; i; i = i->next)
		if (i->key == key) {
			i->refs++;
			return i;
		}
	if (!create)
		return NULL;
	struct tc_inflight *i = s->spare;
	if (i) {
		s->spare = NULL;
		memset(i, 0, sizeof(*i));
	} else if (!(i = calloc(1, sizeof(*i)))) {
		return NULL;
	}
	i->key = key;
	i->refs = 1;
	i->next = s->inflight;
	s->inflight = i;
	return i;
}

void tc_inflight_put(struct tc_cache *c, struct tc_lock_shard *s, struct tc_inflight *inf)
{
	if (--inf->refs)
		return;
	for (struct tc_inflight **p = &s->inflight; *p; p = &(*p)->next)
		if (*p == inf) {
			*p = inf->next;
			break;
		}
	if (!s->spare)
		s->spare = inf;
	else
		free(inf);
}


bool tc_inflight_exists(struct tc_lock_shard *s, uint64_t key)
{
	for (struct tc_inflight *i = s->inflight; i; i = i->next)
		if (i->key == key)
			return true;
	return false;
}

/* ---- the line lock ---------------------------------------------------------------- */

/* Grant the line to waiters at the head of the queue (shard lock held); returns the
 * list of granted holds, to be resumed after the shard lock is dropped. */
static struct tc_line_hold *line_grant(struct tc_inflight *inf)
{
	struct tc_line_hold *granted = NULL, **tail = &granted;
	while (inf->wait_head && !inf->writer) {
		struct tc_line_hold *w = inf->wait_head;
		if (w->want_excl) {
			if (inf->readers)
				break;
			inf->writer = true;
		} else {
			inf->readers++;
		}
		inf->wait_head = w->wnext;
		if (!inf->wait_head)
			inf->wait_tail = NULL;
		w->wnext = NULL;
		w->excl = w->want_excl;
		w->holding = true;
		*tail = w;
		tail = &w->wnext;
		if (w->want_excl)
			break;
	}
	return granted;
}

void tc_line_resume(struct tc_cache *c, struct tc_line_hold *g)
{
	while (g) {
		struct tc_line_hold *n = g->wnext;
		g->wnext = NULL;
		tc_ctx_defer(c->ctx, &g->resume);
		g = n;
	}
}

bool tc_line_acquire(struct tc_cache *c, struct tc_lock_shard *s, uint64_t key,
		     struct tc_line_hold *h)
{
	if (!h->inf) {
		h->inf = tc_inflight_get(c, s, key, true);
		if (!h->inf)
			return false;  /* out of memory: the caller fails its request */
	}
	struct tc_inflight *inf = h->inf;
	bool ok = !inf->writer && !inf->wait_head && (!h->want_excl || !inf->readers);
	if (ok) {
		if (h->want_excl)
			inf->writer = true;
		else
			inf->readers++;
		h->excl = h->want_excl;
		h->holding = true;
		return true;
	}
	h->wnext = NULL;
	if (inf->wait_tail)
		inf->wait_tail->wnext = h;
	else
		inf->wait_head = h;
	inf->wait_tail = h;
	return false;
}

struct tc_line_hold *tc_line_release_locked(struct tc_cache *c, struct tc_lock_shard *s,
					    struct tc_line_hold *h)
{
	struct tc_inflight *inf = h->inf;
	if (h->excl)
		inf->writer = false;
	else
		inf->readers--;
	h->holding = false;
	struct tc_line_hold *g = line_grant(inf);
	tc_inflight_put(c, s, inf);
	h->inf = NULL;
	return g;
}

struct tc_inflight *tc_line_try_shared(struct tc_cache *c, struct tc_lock_shard *s,
				       uint64_t key)
{
	struct tc_inflight *inf = tc_inflight_get(c, s, key, true);
	if (inf && (inf->writer || inf->wait_head || inf->cleaning)) {
		tc_inflight_put(c, s, inf);
		return NULL;
	}
	if (inf) {
		inf->readers++;
		inf->cleaning = true;
	}
	return inf;
}

void tc_line_release_shared(struct tc_cache *c, struct tc_lock_shard *s,
			    struct tc_inflight *inf)
{
	pthread_mutex_lock(&s->lock);
	inf->readers--;
	struct tc_line_hold *g = line_grant(inf);
	pthread_mutex_unlock(&s->lock);
	tc_line_resume(c, g);
}
