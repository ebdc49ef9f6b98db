/* SPDX-License-Identifier: MIT */
/*
 * ctl_snap.h - one snapshot of a host's numbers for the HTTP endpoint (ctl_http.h):
 * every export's state and counters, every cache's, every array's, copied once so the
 * metrics and the status page are each written from one consistent-enough moment.
 * The copies are the library's lock-free snapshots (tc_volume_stats, tc_volume_latency,
 * tc_cache_stats, tc_array_status), the same the control socket's `status` and `stats`
 * take: taking one never blocks a request.
 */
#ifndef TC_CTL_SNAP_H
#define TC_CTL_SNAP_H

#include <stdbool.h>
#include "tiercache.h"

struct ctl_vol_snap {
	struct tc_export_info info;      /* name, size, state, backing, cache */
	char name[TC_NAME_MAX];
	const char *state;               /* "cached", "uncached", "degraded", "no-backing" */
	bool engine;                     /* attached to a cache: the counters below exist */
	struct tc_volume_stats st;       /* "no-backing": dirty_bytes, cached_bytes only */
	struct tc_volume_settings set;   /* engine or "no-backing" */
	uint64_t pinned;                 /* bytes */
	struct tc_hist *lat[TC_LAT__COUNT];  /* engine only: ns */
};

struct ctl_cache_snap {
	const char *spec;                /* the host's, valid until tc_host_close() */
	struct tc_cache_stats st;
};

struct ctl_array_snap {
	const char *spec;
	char name[TC_NAME_MAX];
	struct tc_array_status *st;
};

/* A global hot spare of the host (tc_host_global_spare_at). */
struct ctl_spare_snap {
	char *spec;                      /* malloc'ed */
	uint64_t size;                   /* bytes */
};

struct ctl_snap {
	struct ctl_vol_snap *vol;        /* the exports, then the volumes of the caches
	                                  * whose backing is absent ("no-backing") */
	unsigned nvol;
	struct ctl_cache_snap *cache;
	unsigned ncache;
	struct ctl_array_snap *array;
	unsigned narray;
	struct ctl_spare_snap *spare;
	unsigned nspare;
};

/* ctl_snap_take - fill @s from @host.  Returns 0, or -ENOMEM (@s then empty).  Any
 * thread.  ctl_snap_free releases what it holds. */
int ctl_snap_take(tc_host *host, struct ctl_snap *s);
void ctl_snap_free(struct ctl_snap *s);

/* The names `status --json` gives states: "cached", "uncached", "degraded"; "active",
 * "faulty", "spare", "rebuilding", "replaced"; "idle", "rebuild", "check", "repair";
 * "active", "degraded", "failed" for an array. */
const char *ctl_export_state_name(enum tc_export_state s);
const char *ctl_member_state_name(enum tc_member_state s);
const char *ctl_sync_name(enum tc_array_sync s);
const char *ctl_array_state_name(const struct tc_array_status *st);

#endif /* TC_CTL_SNAP_H */
