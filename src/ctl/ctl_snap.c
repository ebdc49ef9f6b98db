/* SPDX-License-Identifier: MIT */
/*
 * ctl_snap.c - one snapshot of a host's numbers for the HTTP endpoint (ctl_snap.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_snap.h"

void ctl_snap_free(struct ctl_snap *s)
{
	for (unsigned i = 0; s->vol && i < s->nvol; i++)
		for (unsigned c = 0; c < TC_LAT__COUNT; c++)
			free(s->vol[i].lat[c]);
	for (unsigned i = 0; s->array && i < s->narray; i++)
		free(s->array[i].st);
	for (unsigned i = 0; s->spare && i < s->nspare; i++)
		free(s->spare[i].spec);
	free(s->vol);
	free(s->cache);
	free(s->array);
	free(s->spare);
}

const char *ctl_export_state_name(enum tc_export_state s)
{
	return s == TC_EXPORT_CACHED ? "cached" : s == TC_EXPORT_UNCACHED ? "uncached" :
	       "degraded";
}

int ctl_snap_take(tc_host *h, struct ctl_snap *s)
{
	memset(s, 0, sizeof(*s));
	unsigned nexp = tc_host_export_count(h), ncache = 0, narray = 0;
	const char *spec;
	while (tc_host_cache_at(h, ncache, &spec))
		ncache++;
	while (tc_host_array_at(h, narray, &spec))
		narray++;
	struct tc_inspect_volume *recs = calloc(TC_INSPECT_MAX_VOLUMES, sizeof(*recs));
	s->vol = calloc(nexp + ncache * TC_INSPECT_MAX_VOLUMES + 1, sizeof(*s->vol));
	s->cache = calloc(ncache + 1, sizeof(*s->cache));
	s->array = calloc(narray + 1, sizeof(*s->array));
	if (!recs || !s->vol || !s->cache || !s->array)
		goto nomem;
	for (unsigned i = 0; i < nexp; i++) {
		struct ctl_vol_snap *v = &s->vol[s->nvol++];
		tc_export_info(tc_host_export_at(h, i), &v->info);
		snprintf(v->name, sizeof(v->name), "%s", v->info.name);
		v->state = ctl_export_state_name(v->info.state);
		if (!v->info.volume)
			continue;
		v->engine = true;
		tc_volume_stats(v->info.volume, &v->st);
		tc_volume_get(v->info.volume, &v->set);
		v->pinned = tc_volume_pinned_bytes(v->info.volume);
		for (unsigned c = 0; c < TC_LAT__COUNT; c++) {
			if (!(v->lat[c] = malloc(sizeof(struct tc_hist))))
				goto nomem;
			tc_volume_latency(v->info.volume, c, v->lat[c]);
		}
	}
	tc_cache *c;
	for (unsigned i = 0; i < ncache && (c = tc_host_cache_at(h, i, &spec)); i++) {
		s->cache[s->ncache].spec = spec;
		tc_cache_stats(c, &s->cache[s->ncache++].st);
		/* Volumes the cache holds whose backing is not here ("no-backing"). */
		unsigned n = tc_cache_volumes(c, recs, TC_INSPECT_MAX_VOLUMES);
		for (unsigned k = 0; k < n && k < TC_INSPECT_MAX_VOLUMES; k++) {
			if (recs[k].online)
				continue;
			struct ctl_vol_snap *v = &s->vol[s->nvol++];
			snprintf(v->name, sizeof(v->name), "%s", recs[k].name);
			v->info.name = v->name;
			v->info.size = recs[k].size;
			v->info.cache = spec;
			v->state = "no-backing";
			v->st.dirty_bytes = recs[k].dirty_bytes;
			v->st.cached_bytes = recs[k].cached_bytes;
			v->set = recs[k].settings;
		}
	}
	tc_dev *a;
	for (unsigned i = 0; i < narray && (a = tc_host_array_at(h, i, &spec)); i++) {
		struct ctl_array_snap *as = &s->array[s->narray];
		if (!(as->st = malloc(sizeof(*as->st))))
			goto nomem;
		if (tc_array_status(a, as->st)) {
			free(as->st);
			as->st = NULL;
			continue;
		}
		struct tc_array_identity id;
		struct tc_dev_info di;
		tc_dev_info(a, &di);
		snprintf(as->name, sizeof(as->name), "%s",
			 tc_array_identity(a, &id) == 0 ? id.name : di.name);
		as->spec = spec;
		s->narray++;
	}
	/* The global spares: as many as there are when each is read (the pool may change
	 * meanwhile). */
	char sp[4096];
	uint64_t size;
	for (unsigned i = 0; tc_host_global_spare_at(h, i, sp, sizeof(sp), &size) == 0; i++) {
		struct ctl_spare_snap *n = realloc(s->spare, (i + 1) * sizeof(*n));
		if (!n)
			goto nomem;
		s->spare = n;
		if (!(n[i].spec = strdup(sp)))
			goto nomem;
		n[i].size = size;
		s->nspare = i + 1;
	}
	free(recs);
	return 0;
nomem:
	free(recs);
	ctl_snap_free(s);
	return -ENOMEM;
}

const char *ctl_member_state_name(enum tc_member_state s)
{
	return s == TC_MEMBER_ACTIVE ? "active" : s == TC_MEMBER_FAULTY ? "faulty" :
	       s == TC_MEMBER_SPARE ? "spare" : s == TC_MEMBER_REBUILDING ? "rebuilding" :
	       s == TC_MEMBER_REPLACED ? "replaced" : "unknown";
}

const char *ctl_sync_name(enum tc_array_sync s)
{
	return s == TC_ARRAY_SYNC_REBUILD ? "rebuild" : s == TC_ARRAY_SYNC_CHECK ? "check" :
	       s == TC_ARRAY_SYNC_REPAIR ? "repair" : "idle";
}

const char *ctl_array_state_name(const struct tc_array_status *st)
{
	return st->failed ? "failed" : st->degraded ? "degraded" : "active";
}
