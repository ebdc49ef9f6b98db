/* SPDX-License-Identifier: MIT */
/*
 * host_spare.c - global hot spares: devices of a host that any of its arrays takes
 * when a member becomes faulty and the array has no spare of its own.
 *
 * The controllers' "global hot spare" (a dedicated one belongs to one array), and
 * mdadm's spare-group, whose spares `mdadm --monitor` moves to an array of the group
 * that lost a member.  The pool belongs to the host, not to an array: an array only
 * knows its own spares (rebuild.c), so the host moves a pool device into an array
 * with tc_array_add_spare(), which takes the faulty slot at once and starts the
 * rebuild.  That call writes superblocks (and wipes a partial-parity log) with
 * synchronous I/O, which an array's event callback (a completion context) must not
 * do, so a thread of the host does it: woken by the arrays' TC_DEV_DEGRADED events,
 * and once a second besides, for arrays that needed a spare before the pool had a
 * fitting one (or were attached live since).
 *
 * Which spare: the first in the pool (the order they were added) that fits the array
 * (its logical block size, at least the members' used size plus the data offset);
 * one spare per array at a time, the next once that one has taken its slot.  RAID 0
 * has nothing to rebuild from and takes none.  The legs of a RAID 50 / 60 take them
 * too: tc_host_array_at lists them after their RAID 0.
 *
 * Locking: spare_lock protects the pool, the thread's flags and the warned list; it is
 * never held across device I/O or an array call.  spare_place lets one placement
 * pass run at a time, inside host->mgmt (the host's management operations): order
 * mgmt, spare_place, spare_lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"

/* Under spare_lock: index of the pool device @spec names (as given, or the file
 * behind it), or -1. */
static int pool_find(tc_host *h, const char *spec)
{
	struct stat st;
	bool have = host_spec_stat(spec, &st) == 0;
	for (unsigned i = 0; i < h->ngspares; i++)
		if (host_same_device(h->gspares[i].spec, spec, have, &st))
			return (int)i;
	return -1;
}

bool host_spare_holds(tc_host *h, const char *spec)
{
	pthread_mutex_lock(&h->spare_lock);
	bool held = pool_find(h, spec) >= 0;
	pthread_mutex_unlock(&h->spare_lock);
	return held;
}

/* An array's health event: a member failed, the pool may have its spare. */
static void array_event(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	tc_host *h = opaque;
	(void)dev;
	if (ev != TC_DEV_DEGRADED)
		return;
	pthread_mutex_lock(&h->spare_lock);
	h->spare_kick = true;
	pthread_cond_signal(&h->spare_cond);
	pthread_mutex_unlock(&h->spare_lock);
}

/* Under spare_lock: whether the pool has given up on @a for now (no spare fits it,
 * it has no room for one, or a spare failed to join it): it is told once, and offered
 * no spare until it no longer needs one or a spare is added to the pool (which clears
 * the list), so that one array cannot drain the pool a spare a second.  @set records
 * it, @clear forgets. */
static bool warned(tc_host *h, tc_dev *a, bool set, bool clear)
{
	for (unsigned i = 0; i < h->nwarned; i++)
		if (h->spare_warned[i] == a) {
			if (clear)
				h->spare_warned[i] = h->spare_warned[--h->nwarned];
			return true;
		}
	if (set && h->nwarned < TC_HOST_WARNED_MAX)
		h->spare_warned[h->nwarned++] = a;
	return false;
}

/* The faulty slot of @st a spare would take, or -1 (none, or the array cannot take
 * a spare now: failed, RAID 0, a spare of its own already).  Room for the spare among
 * the array's extra devices is the caller's to check. */
static int needs_spare(const struct tc_array_status *st)
{
	if (st->failed || st->level == TC_RAID0 || st->spares)
		return -1;
	for (unsigned k = 0; k < st->members; k++)
		if (st->member[k].state == TC_MEMBER_FAULTY)
			return (int)k;
	return -1;
}

/* One pass: every array of @h that needs a spare takes the first of the pool that
 * fits.  Called by the spare thread (@wait false: a pass that would wait for a
 * management operation of the host is skipped, and the next second's pass runs
 * instead) and by tc_host_add_global_spare (@wait true); no lock held.  Returns false
 * when skipped.  Under host->mgmt: a live attach that fails closes the array it
 * opened (host_dev_forget), which must not happen while this pass uses it. */
static bool place_spares(tc_host *h, bool wait)
{
	struct tc_array_status *st = malloc(sizeof(*st));
	tc_dev *a;
	if (!st)
		return false;
	if (wait) {
		pthread_mutex_lock(&h->mgmt);
	} else if (pthread_mutex_trylock(&h->mgmt)) {
		free(st);
		return false;
	}
	/* One pass at a time: two at once could give one array two spares. */
	pthread_mutex_lock(&h->spare_place);
	for (unsigned i = 0; (a = tc_host_array_at(h, i, NULL)); i++) {
		tc_dev_watch(a, array_event, h);   /* -EEXIST: watched already */
		if (tc_array_status(a, st))
			continue;
		int slot = needs_spare(st);
		struct tc_dev_info ai;
		tc_dev_info(a, &ai);
		pthread_mutex_lock(&h->spare_lock);
		if (slot < 0 || !h->ngspares || warned(h, a, false, false)) {
			if (slot < 0)
				warned(h, a, false, true);
			pthread_mutex_unlock(&h->spare_lock);
			continue;
		}
		if (st->nextra >= TC_ARRAY_MAX_EXTRA) {
			warned(h, a, true, false);
			pthread_mutex_unlock(&h->spare_lock);
			tc_warn(h->ctx, "array %s: member %d faulty, but %u retired members and "
				"spares wait for removal (at most %u): remove one for a global "
				"spare to take over", ai.name, slot, st->nextra,
				TC_ARRAY_MAX_EXTRA);
			continue;
		}
		int pick = -1;
		for (unsigned j = 0; j < h->ngspares && pick < 0; j++) {
			struct tc_dev_info si;
			tc_dev_info(h->gspares[j].dev, &si);
			if (si.logical_block_size == ai.logical_block_size &&
			    si.size >= st->member_size + st->data_offset)
				pick = (int)j;
		}
		if (pick < 0) {
			char need[32];
			unsigned n = h->ngspares;
			warned(h, a, true, false);
			pthread_mutex_unlock(&h->spare_lock);
			tc_warn(h->ctx, "array %s: member %d faulty, and no global spare fits "
				"(%u in the pool; it needs %s of %" PRIu32 "-byte blocks)",
				ai.name, slot, n,
				tc_size_format(st->member_size + st->data_offset, need,
					       sizeof(need)), ai.logical_block_size);
			continue;
		}
		struct host_spare sp = h->gspares[pick];
		memmove(&h->gspares[pick], &h->gspares[pick + 1],
			(--h->ngspares - (unsigned)pick) * sizeof(*h->gspares));
		warned(h, a, false, true);
		pthread_mutex_unlock(&h->spare_lock);
		const char *mname = st->member[slot].name ? st->member[slot].name : "missing";
		tc_warn(h->ctx, "array %s: global spare %s takes the place of faulty member %d "
			"(%s)", ai.name, sp.spec, slot, mname);
		/* Takes the device, also on failure (then closed). */
		int r = tc_array_add_spare(a, sp.dev);
		if (r) {
			pthread_mutex_lock(&h->spare_lock);
			warned(h, a, true, false);
			pthread_mutex_unlock(&h->spare_lock);
			tc_err(h->ctx, "array %s: global spare %s could not join: %s; it left "
			       "the pool, and no other is offered to the array until a spare "
			       "is added", ai.name, sp.spec, strerror(-r));
		}
		free(sp.spec);
	}
	pthread_mutex_unlock(&h->spare_place);
	pthread_mutex_unlock(&h->mgmt);
	free(st);
	return true;
}

static void *spare_main(void *arg)
{
	tc_host *h = arg;
	pthread_mutex_lock(&h->spare_lock);
	while (!h->spare_stop) {
		h->spare_kick = false;
		pthread_mutex_unlock(&h->spare_lock);
		place_spares(h, false);
		pthread_mutex_lock(&h->spare_lock);
		if (h->spare_kick || h->spare_stop)
			continue;
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += 1;
		pthread_cond_timedwait(&h->spare_cond, &h->spare_lock, &t);
	}
	pthread_mutex_unlock(&h->spare_lock);
	return NULL;
}

void host_spare_init(tc_host *h)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&h->spare_lock, NULL);
	pthread_mutex_init(&h->spare_place, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->spare_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void host_spare_fini(tc_host *h)
{
	pthread_mutex_lock(&h->spare_lock);
	bool on = h->spare_thread_on;
	h->spare_stop = true;
	pthread_cond_signal(&h->spare_cond);
	pthread_mutex_unlock(&h->spare_lock);
	if (on)
		pthread_join(h->spare_thread, NULL);
	tc_dev *a;
	for (unsigned i = 0; (a = tc_host_array_at(h, i, NULL)); i++)
		tc_dev_unwatch(a, array_event, h);   /* -ENOENT: never watched */
	for (unsigned i = 0; i < h->ngspares; i++) {
		tc_dev_close(h->gspares[i].dev);
		free(h->gspares[i].spec);
	}
	free(h->gspares);
	pthread_cond_destroy(&h->spare_cond);
	pthread_mutex_destroy(&h->spare_place);
	pthread_mutex_destroy(&h->spare_lock);
}

int tc_host_add_global_spare(tc_host *h, const char *spec, bool force)
{
	if (h->opts.dev_flags & TC_DEV_READONLY) {
		tc_err(h->ctx, "device %s: a host opened read-only takes no spares", spec);
		return -EROFS;
	}
	tc_dev *d;
	int r = tc_host_open_spare(h, spec, force, &d);
	if (r)
		return r;
	char *copy = strdup(spec);
	pthread_mutex_lock(&h->spare_lock);
	struct host_spare *g = copy ? host_grow(h->gspares, &h->gspares_cap, h->ngspares + 1,
						sizeof(*g)) : NULL;
	if (g)
		h->gspares = g;
	if (!g || pool_find(h, spec) >= 0) {
		r = g ? -EEXIST : -ENOMEM;   /* EEXIST: added meanwhile by another caller */
		pthread_mutex_unlock(&h->spare_lock);
		if (r == -EEXIST)
			tc_err(h->ctx, "device %s: already a global spare of this server", spec);
		free(copy);
		tc_dev_close(d);
		return r;
	}
	h->gspares[h->ngspares++] = (struct host_spare){ .spec = copy, .dev = d };
	h->nwarned = 0;   /* a new spare may fit where none did: say so again if not */
	if (!h->spare_thread_on && !h->spare_stop) {
		if (pthread_create(&h->spare_thread, NULL, spare_main, h) == 0)
			h->spare_thread_on = true;
		else
			tc_warn(h->ctx, "global spares: no thread to place them: arrays take "
				"them only as this call adds them");
	}
	pthread_mutex_unlock(&h->spare_lock);
	tc_info(h->ctx, "global spare %s added", spec);
	/* An array degraded now takes it before this returns. */
	place_spares(h, true);
	return 0;
}

int tc_host_remove_global_spare(tc_host *h, const char *spec)
{
	pthread_mutex_lock(&h->spare_lock);
	int i = pool_find(h, spec);
	if (i < 0) {
		pthread_mutex_unlock(&h->spare_lock);
		tc_err(h->ctx, "device %s: not a global spare of this server", spec);
		return -ENOENT;
	}
	struct host_spare sp = h->gspares[i];
	memmove(&h->gspares[i], &h->gspares[i + 1],
		(--h->ngspares - (unsigned)i) * sizeof(*h->gspares));
	pthread_mutex_unlock(&h->spare_lock);
	tc_dev_close(sp.dev);
	tc_info(h->ctx, "global spare %s removed", sp.spec);
	free(sp.spec);
	return 0;
}

int tc_host_global_spare_at(tc_host *h, unsigned i, char *spec, size_t len, uint64_t *size)
{
	int r = -ENOENT;
	pthread_mutex_lock(&h->spare_lock);
	if (i < h->ngspares) {
		snprintf(spec, len, "%s", h->gspares[i].spec);
		if (size) {
			struct tc_dev_info info;
			tc_dev_info(h->gspares[i].dev, &info);
			*size = info.size;
		}
		r = 0;
	}
	pthread_mutex_unlock(&h->spare_lock);
	return r;
}
