/* SPDX-License-Identifier: MIT */
/*
 * export.c - an export is a volume as clients see it: through its cache (a
 * tc_volume), or straight to the backing's data area when the volume has no cache or
 * its cache is missing.  Live attach and detach (host.c) switch an export between the
 * two; the switch waits for the requests in flight and holds new ones back for that
 * moment (the export's freeze), which is why every request goes through
 * tc_export_io().
 *
 * An export's freeze uses exp->lock only on the slow path: requests count themselves
 * in exp->inflight with atomics.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache_priv.h"   /* tc_export_block_size: the cache's line size */
#include "host.h"

int export_add(tc_host *h, struct host_dev *backing, struct host_dev *cache,
		      tc_volume *vol, enum tc_export_state state, tc_export **out)
{
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->nexps; i++)
		if (!strcmp(h->exps[i]->name, backing->probe.name)) {
			pthread_mutex_unlock(&h->lock);
			tc_err(h->ctx, "volume \"%s\": on two backings (%s and %s)",
			       backing->probe.name, h->exps[i]->backing->spec, backing->spec);
			return -EEXIST;
		}
	tc_export *e = calloc(1, sizeof(*e));
	tc_export **n = host_grow(h->exps, &h->exps_cap, h->nexps + 1, sizeof(*n));
	if (!e || !n) {
		pthread_mutex_unlock(&h->lock);
		free(e);
		return -ENOMEM;
	}
	h->exps = n;
	e->host = h;
	snprintf(e->name, sizeof(e->name), "%s", backing->probe.name);
	e->size = vol ? tc_volume_size(vol) : backing->probe.volume_size;
	e->data_offset = backing->probe.data_offset;
	e->backing = backing;
	atomic_init(&e->cache, cache);
	atomic_init(&e->vol, vol);
	atomic_init(&e->state, (int)state);
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	h->exps[h->nexps++] = e;
	pthread_mutex_unlock(&h->lock);
	if (out)
		*out = e;
	return 0;
}

/* Wait until no request is in flight, holding new ones back until export_thaw(). */
void export_freeze(tc_export *e)
{
	pthread_mutex_lock(&e->lock);
	atomic_store(&e->frozen, true);
	while (atomic_load(&e->inflight))
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void export_thaw(tc_export *e)
{
	pthread_mutex_lock(&e->lock);
	atomic_store(&e->frozen, false);
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static void export_enter(tc_export *e)
{
	for (;;) {
		atomic_fetch_add(&e->inflight, 1);
		if (!atomic_load(&e->frozen))
			return;
		/* Frozen: step back out (waking the freezer if last), wait for the thaw. */
		pthread_mutex_lock(&e->lock);
		if (atomic_fetch_sub(&e->inflight, 1) == 1)
			pthread_cond_broadcast(&e->cond);
		while (atomic_load(&e->frozen))
			pthread_cond_wait(&e->cond, &e->lock);
		pthread_mutex_unlock(&e->lock);
	}
}

static void export_exit(tc_export *e)
{
	if (atomic_fetch_sub(&e->inflight, 1) == 1 && atomic_load(&e->frozen)) {
		pthread_mutex_lock(&e->lock);
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
	}
}

int tc_export_io(tc_export *e, enum tc_op op, unsigned flags, void *buf, uint64_t len,
		 uint64_t off)
{
	int r;
	export_enter(e);
	tc_volume *vol = atomic_load(&e->vol);
	if (vol) {
		r = tc_volume_io(vol, op, flags, buf, len, off);
	} else if (op != TC_OP_FLUSH && (off % TC_SECTOR_SIZE || len % TC_SECTOR_SIZE ||
					 off > e->size || len > e->size - off || !len)) {
		tc_err(e->host->ctx, "volume \"%s\": request offset %" PRIu64 " length %" PRIu64
		       " is %s (size %" PRIu64 ")", e->name, off, len,
		       off % TC_SECTOR_SIZE || len % TC_SECTOR_SIZE ? "not 512-byte aligned" :
		       !len ? "empty" : "beyond the end", e->size);
		r = -EINVAL;
	} else {
		r = tc_dev_io(e->backing->dev, op, flags, buf, len,
			      op == TC_OP_FLUSH ? 0 : off + e->data_offset);
	}
	export_exit(e);
	return r;
}

void tc_export_info(tc_export *e, struct tc_export_info *info)
{
	struct host_dev *c = atomic_load(&e->cache);
	info->name = e->name;
	info->size = e->size;
	info->state = (enum tc_export_state)atomic_load(&e->state);
	info->backing = e->backing->spec;
	info->cache = c ? c->spec : NULL;
	info->volume = atomic_load(&e->vol);
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Cached: the line size.  Uncached: what the backing prefers (an array's full stripe,
 * else its chunk), where NBD can say it: a power of two from 4 KiB to 32 MiB. */
uint32_t tc_export_block_size(tc_export *e)
{
	tc_volume *v = atomic_load(&e->vol);
	if (v)
		return v->cache->line_size;
	struct tc_dev_limits l;
	tc_dev_limits(e->backing->dev, &l);
	if (pow2(l.io_opt) && l.io_opt >= TC_UNIT_SIZE && l.io_opt <= (32u << 20))
		return l.io_opt;
	if (pow2(l.io_min) && l.io_min >= TC_UNIT_SIZE && l.io_min <= (32u << 20))
		return l.io_min;
	return TC_UNIT_SIZE;
}

