/* SPDX-License-Identifier: MIT */
/*
 * ctl_ops.c - the volume operations behind `tiercache status|stats|set|flush|invalidate|
 * detach|attach` and the test hooks (fault, heal, power_cut): ctl_execute(), run by the server
 * for its clients or by the command itself offline.  Protocol: see ctl.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "tiercache-test.h"

static json_object *ok(json_object *result)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "result", result ? result : json_object_new_object());
	return o;
}

static json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static const char *state_name(enum tc_export_state s)
{
	return s == TC_EXPORT_CACHED ? "cached" : s == TC_EXPORT_UNCACHED ? "uncached" :
	       "degraded";
}

/* The volume's ranges with cache attributes (tc_volume_regions): [{"offset", "length",
 * "kind", "write_policy" (kind "policy" only)}]. */
static json_object *regions_json(tc_volume *vol)
{
	struct tc_region r[TC_VOL_REGIONS_MAX];
	unsigned n = tc_volume_regions(vol, r, TC_VOL_REGIONS_MAX);
	json_object *a = json_object_new_array();
	for (unsigned i = 0; i < n && i < TC_VOL_REGIONS_MAX; i++) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "offset", u64(r[i].offset));
		json_object_object_add(o, "length", u64(r[i].length));
		json_object_object_add(o, "kind", json_object_new_string(
			tc_region_kind_name(r[i].kind)));
		if (r[i].kind == TC_REGION_POLICY)
			json_object_object_add(o, "write_policy", json_object_new_string(
				tc_write_policy_name(r[i].write_policy)));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *volume_status(tc_export *e)
{
	struct tc_export_info info;
	tc_export_info(e, &info);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(info.name));
	json_object_object_add(o, "size", u64(info.size));
	json_object_object_add(o, "state", json_object_new_string(state_name(info.state)));
	json_object_object_add(o, "backing", json_object_new_string(info.backing));
	json_object_object_add(o, "cache", info.cache ? json_object_new_string(info.cache) :
			       NULL);
	if (info.volume) {
		struct tc_volume_settings s;
		struct tc_volume_stats st;
		tc_volume_get(info.volume, &s);
		tc_volume_stats(info.volume, &st);
		json_object_object_add(o, "settings", ctl_settings_json(&s));
		json_object_object_add(o, "dirty_bytes", u64(st.dirty_bytes));
		json_object_object_add(o, "cached_bytes", u64(st.cached_bytes));
		json_object_object_add(o, "writeback_rate", u64(st.writeback_rate));
		json_object_object_add(o, "fallback", json_object_new_boolean(st.fallback_pt));
		json_object_object_add(o, "draining", json_object_new_boolean(st.draining));
		json_object_object_add(o, "effective_policy", json_object_new_string(
			tc_write_policy_name(st.effective_policy)));
		json_object_object_add(o, "policy_reason",
				       json_object_new_string(st.policy_reason));
		json_object_object_add(o, "ranges", regions_json(info.volume));
		json_object_object_add(o, "pinned_bytes", u64(tc_volume_pinned_bytes(info.volume)));
	} else {
		json_object_object_add(o, "settings", NULL);
		json_object_object_add(o, "dirty_bytes", u64(0));
		json_object_object_add(o, "cached_bytes", u64(0));
		json_object_object_add(o, "writeback_rate", u64(0));
		json_object_object_add(o, "fallback", json_object_new_boolean(0));
		json_object_object_add(o, "draining", json_object_new_boolean(0));
	}
	return o;
}

/* A volume the cache @spec holds whose backing is not among the host's devices (state
 * "no-backing"): what the cache superblock and its lines know of it. */
static json_object *absent_status(const struct tc_inspect_volume *v, const char *spec)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(v->name));
	json_object_object_add(o, "size", u64(v->size));
	json_object_object_add(o, "state", json_object_new_string("no-backing"));
	json_object_object_add(o, "backing", NULL);
	json_object_object_add(o, "backing_uuid", json_object_new_string(v->backing_uuid));
	json_object_object_add(o, "cache", json_object_new_string(spec));
	json_object_object_add(o, "settings", ctl_settings_json(&v->settings));
	json_object_object_add(o, "dirty_bytes", u64(v->dirty_bytes));
	json_object_object_add(o, "cached_bytes", u64(v->cached_bytes));
	json_object_object_add(o, "writeback_rate", u64(0));
	json_object_object_add(o, "fallback", json_object_new_boolean(0));
	json_object_object_add(o, "draining", json_object_new_boolean(0));
	return o;
}

/* Calls @fn for every volume record of the host's caches whose backing is absent;
 * stops at the first non-NULL answer and returns it. */
static json_object *each_absent(tc_host *h, json_object *(*fn)(
	const struct tc_inspect_volume *v, const char *spec, void *arg), void *arg)
{
	struct tc_inspect_volume *recs = calloc(TC_INSPECT_MAX_VOLUMES, sizeof(*recs));
	if (!recs)
		return NULL;
	const char *spec;
	tc_cache *c;
	json_object *r = NULL;
	for (unsigned i = 0; !r && (c = tc_host_cache_at(h, i, &spec)); i++) {
		unsigned n = tc_cache_volumes(c, recs, TC_INSPECT_MAX_VOLUMES);
		for (unsigned k = 0; !r && k < n; k++)
			if (!recs[k].online)
				r = fn(&recs[k], spec, arg);
	}
	free(recs);
	return r;
}

static json_object *add_absent(const struct tc_inspect_volume *v, const char *spec,
			       void *arg)
{
	json_object_array_add(arg, absent_status(v, spec));
	return NULL;
}

/* A device of the host: its spec, role, and the fault armed on it (null when none). */
static json_object *device_json(const struct tc_host_device *d)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "device", json_object_new_string(d->spec));
	json_object_object_add(o, "role", json_object_new_string(
		d->kind == TC_PROBE_CACHE ? "cache" : d->kind == TC_PROBE_BACKING ? "backing" :
		"other"));
	json_object *f = NULL;
	if (d->fault_injection && d->fault.armed) {
		const char *en = tc_errno_name(d->fault.fault.error);
		f = json_object_new_object();
		json_object_object_add(f, "op", json_object_new_string(
			tc_fault_op_name(d->fault.fault.op)));
		json_object_object_add(f, "after", u64(d->fault.fault.after));
		json_object_object_add(f, "errno", json_object_new_int(d->fault.fault.error));
		json_object_object_add(f, "errno_name", en ? json_object_new_string(en) : NULL);
		json_object_object_add(f, "transient",
				       json_object_new_boolean(d->fault.fault.transient));
	}
	json_object_object_add(o, "fault", f);
	json_object_object_add(o, "failed", u64(d->fault.failed));
	json_object_object_add(o, "failed_total", u64(d->fault.failed_total));
	return o;
}

static const char *member_state_name(enum tc_member_state s)
{
	return s == TC_MEMBER_ACTIVE ? "active" : s == TC_MEMBER_FAULTY ? "faulty" :
	       s == TC_MEMBER_SPARE ? "spare" : s == TC_MEMBER_REBUILDING ? "rebuilding" :
	       "unknown";
}

json_object *ctl_array_json(tc_dev *a, const char *spec)
{
	struct tc_array_status *st = malloc(sizeof(*st));
	struct tc_array_identity id;
	if (!st)
		return NULL;
	if (tc_array_status(a, st)) {
		free(st);
		return NULL;
	}
	bool named = tc_array_identity(a, &id) == 0;
	struct tc_dev_info info;
	tc_dev_info(a, &info);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(named ? id.name : info.name));
	json_object_object_add(o, "uuid", named ? json_object_new_string(id.uuid) : NULL);
	json_object_object_add(o, "device", spec ? json_object_new_string(spec) : NULL);
	json_object_object_add(o, "level", json_object_new_string(tc_raid_level_name(st->level)));
	json_object_object_add(o, "chunk", u64(st->chunk));
	json_object_object_add(o, "copies", u64(st->copies));
	json_object_object_add(o, "size", u64(st->size));
	json_object_object_add(o, "member_size", u64(st->member_size));
	json_object_object_add(o, "data_offset", u64(named ? id.data_offset : 0));
	json_object_object_add(o, "state", json_object_new_string(
		st->failed ? "failed" : st->degraded ? "degraded" : "active"));
	json_object_object_add(o, "redundancy", json_object_new_int(st->redundancy));
	json_object_object_add(o, "faulty", u64(st->faulty));
	json_object_object_add(o, "events", u64(named ? id.events : 0));
	json_object_object_add(o, "dirty", json_object_new_boolean(named && id.dirty));
	json_object_object_add(o, "readonly", json_object_new_boolean(named && id.readonly));
	json_object_object_add(o, "rebuild_pos", u64(named ? id.rebuild_pos : 0));
	json_object *ms = json_object_new_array();
	for (unsigned i = 0; i < st->members; i++) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "slot", u64(i));
		json_object_object_add(m, "device", json_object_new_string(st->member[i].name));
		json_object_object_add(m, "state", json_object_new_string(
			member_state_name(st->member[i].state)));
		json_object_object_add(m, "size", u64(st->member[i].size));
		json_object_object_add(m, "read_errors", u64(st->member[i].read_errors));
		json_object_object_add(m, "corrected", u64(st->member[i].corrected));
		json_object_array_add(ms, m);
	}
	json_object_object_add(o, "members", ms);
	json_object *sp = json_object_new_array();
	for (unsigned i = 0; named && i < id.nspares; i++)
		json_object_array_add(sp, json_object_new_string(id.spare[i]));
	json_object_object_add(o, "spares", sp);
	/* Spares and members out of the array not yet removed (tc_array_remove names
	 * them). */
	json_object *ex = json_object_new_array();
	for (unsigned i = 0; i < st->nextra; i++) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "device", json_object_new_string(st->extra[i].name));
		json_object_object_add(m, "state", json_object_new_string(
			st->extra[i].state == TC_MEMBER_REPLACED ? "replaced" :
			member_state_name(st->extra[i].state)));
		json_object_object_add(m, "size", u64(st->extra[i].size));
		json_object_array_add(ex, m);
	}
	json_object_object_add(o, "extra", ex);
	/* Devices the assembly left out (stale, replaced, faulty), for the admin to see
	 * what is not in the array and why. */
	json_object *lo = json_object_new_array();
	for (unsigned i = 0; named && i < id.nleft; i++) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "device", json_object_new_string(id.left[i].device));
		json_object_object_add(m, "slot", u64(id.left[i].slot));
		json_object_object_add(m, "events", u64(id.left[i].events));
		json_object_object_add(m, "reason", json_object_new_string(id.left[i].why));
		json_object_array_add(lo, m);
	}
	json_object_object_add(o, "left_out", lo);
	for (unsigned i = 0; i < st->members; i++)
		if (st->member[i].replacing)
			json_object_object_add(json_object_array_get_idx(ms, i), "replacing",
					       json_object_new_string(st->member[i].replacing));
	/* The background pass: sync_pos / sync_end member bytes, sync_rate bytes/s per
	 * member, sync_eta_ns; mismatches and checked of the running or last check. */
	json_object_object_add(o, "sync", json_object_new_string(
		st->sync == TC_ARRAY_SYNC_REBUILD ? "rebuild" : st->sync == TC_ARRAY_SYNC_CHECK ?
		"check" : st->sync == TC_ARRAY_SYNC_REPAIR ? "repair" : "idle"));
	json_object_object_add(o, "sync_pos", u64(st->sync_pos));
	json_object_object_add(o, "sync_end", u64(st->sync_end));
	json_object_object_add(o, "sync_rate", u64(st->sync_rate));
	json_object_object_add(o, "sync_written_rate", u64(st->sync_written_rate));
	json_object_object_add(o, "sync_eta_ns", u64(st->sync_eta_ns));
	json_object_object_add(o, "mismatches", u64(st->mismatches));
	json_object_object_add(o, "checked", u64(st->checked));
	json_object_object_add(o, "check_windows", u64(st->check_windows));
	json_object_object_add(o, "check_stopped", json_object_new_boolean(st->check_stopped));
	/* Consistency after a crash: the partial-parity log, the write-intent map. */
	json_object_object_add(o, "ppl", json_object_new_boolean(st->ppl));
	json_object_object_add(o, "map_regions", u64(st->map_regions));
	json_object_object_add(o, "map_dirty", u64(st->map_dirty));
	json_object_object_add(o, "map_region_size", u64(st->map_region_size));
	/* The regions ever written (0 regions: no record, all count as written). */
	json_object_object_add(o, "written_map_regions", u64(st->written_map_regions));
	json_object_object_add(o, "written_regions", u64(st->written_regions));
	json_object_object_add(o, "written_region_size", u64(st->written_region_size));
	/* RAID 5/6 write stripe operations by how the parity was made. */
	json_object_object_add(o, "stripe_writes_full", u64(st->stripe_writes_full));
	json_object_object_add(o, "stripe_writes_rcw", u64(st->stripe_writes_rcw));
	json_object_object_add(o, "stripe_writes_rmw", u64(st->stripe_writes_rmw));
	json_object_object_add(o, "stripe_writes_degraded", u64(st->stripe_writes_degraded));
	json_object *rb = json_object_new_object();
	json_object_object_add(rb, "min_rate", u64(st->rebuild.min_rate));
	json_object_object_add(rb, "max_rate", u64(st->rebuild.max_rate));
	json_object_object_add(rb, "priority", u64(st->rebuild.priority));
	json_object_object_add(rb, "depth", u64(st->rebuild.depth));
	json_object_object_add(o, "rebuild", rb);
	free(st);
	return o;
}

/* The host's arrays, or only the one named @name (NULL: all). */
static json_object *arrays_json(tc_host *h, const char *name)
{
	json_object *arr = json_object_new_array();
	const char *spec;
	tc_dev *a;
	for (unsigned i = 0; (a = tc_host_array_at(h, i, &spec)); i++) {
		struct tc_array_identity id;
		if (name && (tc_array_identity(a, &id) || strcmp(id.name, name)))
			continue;
		json_object *o = ctl_array_json(a, spec);
		if (o)
			json_object_array_add(arr, o);
	}
	return arr;
}

/* The array a request names in "array", or NULL and an error response. */
static tc_dev *req_array(tc_host *h, json_object *req, json_object **err)
{
	json_object *v;
	if (!json_object_object_get_ex(req, "array", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*err = ctl_error(EINVAL, "request: \"array\" (a string) is missing");
		return NULL;
	}
	const char *name = json_object_get_string(v);
	tc_dev *a;
	for (unsigned i = 0; (a = tc_host_array_at(h, i, NULL)); i++) {
		struct tc_array_identity id;
		if (!tc_array_identity(a, &id) && !strcmp(id.name, name))
			return a;
	}
	char msg[256];
	snprintf(msg, sizeof(msg), "array \"%s\": no such array on this host", name);
	*err = ctl_error(ENOENT, msg);
	return NULL;
}

/* The host's global spares: [{"device": SPEC, "size": BYTES}, ...]. */
static json_object *global_spares_json(tc_host *h)
{
	json_object *arr = json_object_new_array();
	char spec[4096];
	uint64_t size;
	for (unsigned i = 0; tc_host_global_spare_at(h, i, spec, sizeof(spec), &size) == 0; i++) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "device", json_object_new_string(spec));
		json_object_object_add(o, "size", u64(size));
		json_object_array_add(arr, o);
	}
	return arr;
}

static json_object *op_array_status(tc_host *h, json_object *req)
{
	json_object *v = NULL, *err = NULL;
	if (json_object_object_get_ex(req, "array", &v) && !req_array(h, req, &err))
		return err;
	json_object *r = json_object_new_object();
	json_object_object_add(r, "arrays", arrays_json(h, v ? json_object_get_string(v) : NULL));
	json_object_object_add(r, "global_spares", global_spares_json(h));
	return ok(r);
}

/*
 * The array a request names and the slot of the member it names, the one lookup of
 * the array operations that act on a member: "slot" (a number 0..members-1), or
 * "member" (the member's device as the array names it, or its slot as a decimal
 * string).  @need says which the request must give when it gives neither ("slot" or
 * "member", for the message).  Returns the array and *@slot, or NULL and *@err:
 * EINVAL (a missing or malformed operand, a slot out of range: "array "NAME": slot
 * N: not a slot number 0..M"), ENOENT (no member of that name, the members listed),
 * ENOMEM, or req_array()'s errors.
 */
static tc_dev *req_member(tc_host *h, json_object *req, const char *need, unsigned *slot,
			  json_object **err)
{
	tc_dev *a = req_array(h, req, err);
	if (!a)
		return NULL;
	struct tc_array_status *st = malloc(sizeof(*st));
	if (!st) {
		*err = ctl_error(ENOMEM, NULL);
		return NULL;
	}
	tc_array_status(a, st);
	struct tc_array_identity id;
	tc_array_identity(a, &id);
	unsigned n = st->members;
	char msg[512];
	json_object *v;
	*slot = n;
	if (json_object_object_get_ex(req, "slot", &v)) {
		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0 &&
		    json_object_get_int64(v) < n) {
			*slot = (unsigned)json_object_get_int64(v);
		} else {
			snprintf(msg, sizeof(msg), "array \"%s\": slot %s: not a slot number "
				 "0..%u", id.name, json_object_to_json_string(v), n - 1);
			*err = ctl_error(EINVAL, msg);
		}
	} else if (json_object_object_get_ex(req, "member", &v) &&
		   json_object_is_type(v, json_type_string)) {
		const char *m = json_object_get_string(v);
		for (unsigned i = 0; i < n && *slot == n; i++)
			if (!strcmp(st->member[i].name, m))
				*slot = i;
		char *end;
		unsigned long k = strtoul(m, &end, 10);
		if (*slot == n && *m && !*end && k < n)
			*slot = (unsigned)k;
		if (*slot == n) {
			size_t used = (size_t)snprintf(msg, sizeof(msg), "array \"%s\": no member "
						       "\"%s\" (members:", id.name, m);
			for (unsigned i = 0; i < n && used < sizeof(msg); i++)
				used += (size_t)snprintf(msg + used, sizeof(msg) - used, " %u=%s",
							 i, st->member[i].name);
			if (used < sizeof(msg))
				snprintf(msg + used, sizeof(msg) - used, ")");
			*err = ctl_error(ENOENT, msg);
		}
	} else {
		snprintf(msg, sizeof(msg), "request: \"%s\" (%s) is missing", need,
			 strcmp(need, "slot") ? "a string" : "a number");
		*err = ctl_error(EINVAL, msg);
	}
	free(st);
	return *slot < n ? a : NULL;
}

/* "member": the member's device (as the array names it) or its slot number;
 * "force": fail it even when the array cannot survive that (a drill past the
 * redundancy makes the data unreachable until the member is back). */
static json_object *op_array_fail(tc_host *h, json_object *req)
{
	json_object *err = NULL, *v;
	unsigned slot;
	tc_dev *a = req_member(h, req, "member", &slot, &err);
	if (!a)
		return err;
	bool force = json_object_object_get_ex(req, "force", &v) &&
		     json_object_get_boolean(v);
	struct tc_array_status *st = malloc(sizeof(*st));
	if (!st)
		return ctl_error(ENOMEM, NULL);
	tc_array_status(a, st);
	/* The device failed, named before a hot spare takes its slot. */
	char dev[4096 + 16];
	snprintf(dev, sizeof(dev), "%s", st->member[slot].name ? st->member[slot].name : "-");
	bool last = st->member[slot].state == TC_MEMBER_ACTIVE && !st->failed &&
		    tc_array_fail_survives(a, slot) == 0;
	free(st);
	if (last && !force) {
		struct tc_array_identity id;
		tc_array_identity(a, &id);
		char msg[4096 + 512];
		snprintf(msg, sizeof(msg), "array \"%s\": failing member %u (%s) would fail the "
			 "array: it survives no more member failures, and its data would be "
			 "unreachable until that member is back; give --force to fail it anyway",
			 id.name, slot, dev);
		return ctl_error(EBUSY, msg);
	}
	int r = tc_array_fail_member(a, slot);
	if (r < 0)
		return ctl_error(-r, NULL);
	json_object *o = ctl_array_json(a, NULL);
	json_object_object_add(o, "failed_slot", u64(slot));
	json_object_object_add(o, "failed_device", json_object_new_string(dev));
	json_object_object_add(o, "was_faulty", json_object_new_boolean(r == 1));
	return ok(o);
}

static json_object *op_status(tc_host *h)
{
	json_object *vols = json_object_new_array();
	for (unsigned i = 0; i < tc_host_export_count(h); i++)
		json_object_array_add(vols, volume_status(tc_host_export_at(h, i)));
	each_absent(h, add_absent, vols);
	json_object *caches = json_object_new_array();
	const char *spec;
	tc_cache *c;
	for (unsigned i = 0; (c = tc_host_cache_at(h, i, &spec)); i++) {
		struct tc_cache_stats st;
		tc_cache_stats(c, &st);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "device", json_object_new_string(spec));
		json_object_object_add(o, "line_size", u64(st.line_size));
		json_object_object_add(o, "lines", u64(st.lines));
		json_object_object_add(o, "lines_used", u64(st.lines_used));
		json_object_object_add(o, "lines_dirty", u64(st.lines_dirty));
		json_object_object_add(o, "dirty_bytes", u64(st.dirty_bytes));
		json_object_object_add(o, "bytes_read", u64(st.dev.bytes_read));
		json_object_object_add(o, "bytes_written", u64(st.dev.bytes_written));
		json_object_object_add(o, "metadata_bytes_written", u64(st.metadata_bytes_written));
		json_object_object_add(o, "redundancy", u64(st.redundancy));
		json_object_object_add(o, "unprotected_writeback",
				       json_object_new_boolean(st.unprotected_writeback));
		json_object_object_add(o, "writeback_held",
				       json_object_new_boolean(st.writeback_held));
		json_object_object_add(o, "warning", st.unprotected_writeback && !st.redundancy ?
			json_object_new_string("write-back allowed without redundancy: a device "
					       "failure loses the dirty data") : NULL);
		json_object_array_add(caches, o);
	}
	json_object *devs = json_object_new_array();
	struct tc_host_device *hd = malloc(sizeof(*hd));
	for (unsigned i = 0; hd && tc_host_device_at(h, i, hd) == 0; i++)
		json_object_array_add(devs, device_json(hd));
	free(hd);
	json_object *r = json_object_new_object();
	json_object_object_add(r, "volumes", vols);
	json_object_object_add(r, "caches", caches);
	json_object_object_add(r, "arrays", arrays_json(h, NULL));
	json_object_object_add(r, "global_spares", global_spares_json(h));
	json_object_object_add(r, "fault_injection",
			       json_object_new_boolean(tc_host_fault_injection(h)));
	json_object_object_add(r, "devices", devs);
	return ok(r);
}

/* The export a request names in "volume", or an error response in *@err. */
static tc_export *req_export(tc_host *h, json_object *req, json_object **err)
{
	json_object *v;
	if (!json_object_object_get_ex(req, "volume", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*err = ctl_error(EINVAL, "request: \"volume\" (a string) is missing");
		return NULL;
	}
	tc_export *e = tc_host_find(h, json_object_get_string(v));
	if (!e) {
		char msg[256];
		snprintf(msg, sizeof(msg), "volume \"%s\": no such volume on this host",
			 json_object_get_string(v));
		*err = ctl_error(ENOENT, msg);
	}
	return e;
}

/* The volume of @e, or NULL and an error response: uncached exports have no settings
 * or counters of their own. */
static tc_volume *req_volume(tc_export *e, json_object **err)
{
	struct tc_export_info info;
	tc_export_info(e, &info);
	if (!info.volume) {
		char msg[256];
		snprintf(msg, sizeof(msg), "volume \"%s\": served %s, without a cache; attach it "
			 "to a cache first", info.name, state_name(info.state));
		*err = ctl_error(EINVAL, msg);
	}
	return info.volume;
}

static bool req_bool(json_object *req, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(req, key, &v) && json_object_get_boolean(v);
}

/* The request's "range": {"offset", "length"} (bytes): 1 and the values, 0 when the
 * request has none, -1 with an error response in *@err when it is not that shape. */
static int req_range(json_object *req, uint64_t *off, uint64_t *len, json_object **err)
{
	json_object *r, *jo, *jl;
	if (!json_object_object_get_ex(req, "range", &r))
		return 0;
	if (!json_object_is_type(r, json_type_object) ||
	    !json_object_object_get_ex(r, "offset", &jo) ||
	    !json_object_object_get_ex(r, "length", &jl) ||
	    !json_object_is_type(jo, json_type_int) || !json_object_is_type(jl, json_type_int) ||
	    json_object_get_int64(jo) < 0 || json_object_get_int64(jl) < 0) {
		*err = ctl_error(EINVAL, "request: \"range\" is not {\"offset\": BYTES, "
				 "\"length\": BYTES}");
		return -1;
	}
	*off = json_object_get_uint64(jo);
	*len = json_object_get_uint64(jl);
	return 1;
}

/* stats of a volume whose backing is absent: what its cache knows, and a note. */
static json_object *absent_stats(const struct tc_inspect_volume *v, const char *spec,
				 void *arg)
{
	if (strcmp(v->name, arg))
		return NULL;
	json_object *o = absent_status(v, spec);
	char note[320];
	snprintf(note, sizeof(note), "volume \"%s\": its backing (uuid %s) is not present, so "
		 "only what cache %s holds for it is known; the request counters exist while "
		 "the volume is served", v->name, v->backing_uuid, spec);
	json_object_object_add(o, "note", json_object_new_string(note));
	return o;
}

static json_object *op_stats(tc_host *h, json_object *req)
{
	json_object *err = NULL, *jv;
	if (json_object_object_get_ex(req, "volume", &jv) &&
	    json_object_is_type(jv, json_type_string) &&
	    !tc_host_find(h, json_object_get_string(jv))) {
		json_object *known = each_absent(h, absent_stats,
						 (void *)json_object_get_string(jv));
		if (known)
			return ok(known);
	}
	tc_export *e = req_export(h, req, &err);
	if (!e)
		return err;
	struct tc_export_info info;
	tc_export_info(e, &info);
	if (!info.volume) {
		/* Served uncached: no engine counters; say what it is. */
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(info.name));
		json_object_object_add(o, "state", json_object_new_string(state_name(info.state)));
		json_object_object_add(o, "size", u64(info.size));
		json_object_object_add(o, "backing", json_object_new_string(info.backing));
		char note[256];
		snprintf(note, sizeof(note), "volume \"%s\": served %s, straight to its backing: "
			 "the engine's counters exist only for a volume attached to a cache",
			 info.name, state_name(info.state));
		json_object_object_add(o, "note", json_object_new_string(note));
		return ok(o);
	}
	tc_volume *vol = info.volume;
	char *s = tc_volume_stats_json(vol);
	json_object *st = s ? json_tokener_parse(s) : NULL;
	free(s);
	if (!st)
		return ctl_error(ENOMEM, NULL);
	/* The cache device as a whole (every volume's traffic, the cleaner's and the
	 * metadata's): its wear. */
	const char *spec;
	tc_cache *c;
	for (unsigned i = 0; info.cache && (c = tc_host_cache_at(h, i, &spec)); i++) {
		if (strcmp(spec, info.cache))
			continue;
		struct tc_cache_stats cs;
		tc_cache_stats(c, &cs);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "device", json_object_new_string(spec));
		json_object_object_add(o, "reads", u64(cs.dev.reads));
		json_object_object_add(o, "writes", u64(cs.dev.writes));
		json_object_object_add(o, "bytes_read", u64(cs.dev.bytes_read));
		json_object_object_add(o, "bytes_written", u64(cs.dev.bytes_written));
		json_object_object_add(o, "metadata_bytes_written",
				       u64(cs.metadata_bytes_written));
		json_object_object_add(o, "commits", u64(cs.commits));
		json_object_object_add(o, "checksums", json_object_new_boolean(cs.checksums));
		json_object_object_add(o, "csum_errors", u64(cs.csum_errors));
		json_object_object_add(st, "cache", o);
		break;
	}
	if (req_bool(req, "reset"))
		tc_volume_stats_reset(vol);
	return ok(st);
}

static int fail_errno(int r)
{
	return r < 0 ? -r : EIO;
}

/* set with "region": {"action": "set"|"clear", "kind": "pinned"|"uncacheable"|"policy",
 * "write_policy": "wt"|...} and "range": {"offset", "length"}: one range attribute
 * changed (tc_volume_region_set / _clear); answers the settings with "ranges". */
static json_object *op_set_region(tc_volume *vol, json_object *req, json_object *jreg)
{
	json_object *err = NULL, *ja, *jk, *jw;
	uint64_t off = 0, len = 0;
	int ranged = req_range(req, &off, &len, &err);
	if (ranged < 0)
		return err;
	if (!ranged)
		return ctl_error(EINVAL, "request: \"range\" is missing (a range attribute "
				 "takes a range)");
	if (!json_object_object_get_ex(jreg, "action", &ja) ||
	    !json_object_object_get_ex(jreg, "kind", &jk))
		return ctl_error(EINVAL, "request: \"region\" is not {\"action\", \"kind\"}");
	const char *action = json_object_get_string(ja), *kname = json_object_get_string(jk);
	unsigned kind = 0;
	for (unsigned k = TC_REGION_PINNED; k <= TC_REGION_POLICY; k++)
		if (!strcmp(kname, tc_region_kind_name(k)))
			kind = k;
	char why[160];
	if (!kind) {
		snprintf(why, sizeof(why), "request: region kind \"%s\" is not pinned, "
			 "uncacheable or policy", kname);
		return ctl_error(EINVAL, why);
	}
	int r;
	if (!strcmp(action, "set")) {
		struct tc_region rg = { .offset = off, .length = len, .kind = (uint8_t)kind };
		if (kind == TC_REGION_POLICY) {
			int wp = json_object_object_get_ex(jreg, "write_policy", &jw) ?
				 tc_write_policy_parse(json_object_get_string(jw)) : -1;
			if (wp < 0)
				return ctl_error(EINVAL, "request: region of kind policy without "
						 "a known \"write_policy\"");
			rg.write_policy = (uint8_t)wp;
		}
		r = tc_volume_region_set(vol, &rg);
	} else if (!strcmp(action, "clear")) {
		r = tc_volume_region_clear(vol, off, len, kind);
	} else {
		snprintf(why, sizeof(why), "request: region action \"%s\" is not set or clear",
			 action);
		return ctl_error(EINVAL, why);
	}
	if (r)
		return ctl_error(fail_errno(r), NULL);
	struct tc_volume_settings s;
	tc_volume_get(vol, &s);
	json_object *o = ctl_settings_json(&s);
	json_object_object_add(o, "ranges", regions_json(vol));
	return ok(o);
}

static json_object *op_set(tc_host *h, json_object *req, tc_progress_fn fn, void *opaque)
{
	json_object *err = NULL, *js;
	tc_export *e = req_export(h, req, &err);
	tc_volume *vol = e ? req_volume(e, &err) : NULL;
	if (!vol)
		return err;
	json_object *jreg;
	if (json_object_object_get_ex(req, "region", &jreg))
		return op_set_region(vol, req, jreg);
	if (!json_object_object_get_ex(req, "settings", &js))
		return ctl_error(EINVAL, "request: \"settings\" (an object) is missing");
	struct tc_volume_settings s;
	tc_volume_get(vol, &s);
	char why[256];
	if (ctl_settings_apply(js, &s, why, sizeof(why)))
		return ctl_error(EINVAL, why);
	int r = tc_volume_set(vol, &s, fn, opaque);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	tc_volume_get(vol, &s);
	json_object *o = ctl_settings_json(&s);
	json_object_object_add(o, "ranges", regions_json(vol));
	return ok(o);
}

/* "cache_set": the cache stored-setting that is not a volume's, the write-back
 * override (tc_cache_set_unprotected_writeback).  @req: "cache" (the device spec as
 * status shows it, or its file), "unprotected_writeback" (bool).  Taking the override
 * back is refused while a volume of the cache runs write-back on a device without
 * redundancy: an attached one (the library refuses, naming it) or one whose backing
 * is not open here (its record says write-back: named here). */
static json_object *op_cache_set(tc_host *h, json_object *req)
{
	json_object *jc, *ju;
	if (!json_object_object_get_ex(req, "cache", &jc) ||
	    !json_object_is_type(jc, json_type_string))
		return ctl_error(EINVAL, "request: \"cache\" (a string) is missing");
	if (!json_object_object_get_ex(req, "unprotected_writeback", &ju) ||
	    !json_object_is_type(ju, json_type_boolean))
		return ctl_error(EINVAL, "request: \"unprotected_writeback\" (a boolean) is "
				 "missing");
	const char *name = json_object_get_string(jc), *spec = NULL;
	tc_cache *c = NULL;
	char *want = realpath(name, NULL);
	for (unsigned i = 0; (c = tc_host_cache_at(h, i, &spec)); i++) {
		const char *path = tc_dev_spec_path(spec);
		char *real = path ? realpath(path, NULL) : NULL;
		bool same = !strcmp(spec, name) || (path && !strcmp(path, name)) ||
			    (want && real && !strcmp(want, real));
		free(real);
		if (same)
			break;
	}
	free(want);
	char msg[TC_NAME_MAX + 512];
	if (!c) {
		snprintf(msg, sizeof(msg), "cache \"%.256s\": not open here (see `tiercache "
			 "status` for the caches by device)", name);
		return ctl_error(ENOENT, msg);
	}
	bool allow = json_object_get_boolean(ju);
	struct tc_cache_stats st;
	tc_cache_stats(c, &st);
	if (!allow && st.unprotected_writeback && !st.redundancy) {
		struct tc_inspect_volume *recs = calloc(TC_INSPECT_MAX_VOLUMES, sizeof(*recs));
		if (!recs)
			return ctl_error(ENOMEM, NULL);
		unsigned n = tc_cache_volumes(c, recs, TC_INSPECT_MAX_VOLUMES);
		for (unsigned k = 0; k < n; k++) {
			if (recs[k].online || !tc_write_policy_is_wb(recs[k].settings.write_policy))
				continue;
			snprintf(msg, sizeof(msg), "cache %.256s: cannot require a redundant cache "
				 "for write-back: volume \"%s\" (its backing not open here) is "
				 "recorded in %s and the device has redundancy 0; attach it and set "
				 "it to wt first", spec, recs[k].name,
				 tc_write_policy_name(recs[k].settings.write_policy));
			free(recs);
			return ctl_error(EBUSY, msg);
		}
		free(recs);
	}
	int r = tc_cache_set_unprotected_writeback(c, allow);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	tc_cache_stats(c, &st);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "device", json_object_new_string(spec));
	json_object_object_add(o, "unprotected_writeback",
			       json_object_new_boolean(st.unprotected_writeback));
	json_object_object_add(o, "redundancy", u64(st.redundancy));
	json_object_object_add(o, "writeback_held", json_object_new_boolean(st.writeback_held));
	return ok(o);
}

static json_object *op_flush(tc_host *h, json_object *req, tc_progress_fn fn, void *opaque)
{
	json_object *err = NULL;
	tc_export *e = req_export(h, req, &err);
	if (!e)
		return err;
	struct tc_export_info info;
	tc_export_info(e, &info);
	if (!info.volume) {
		/* Served uncached: no dirty data anywhere; the backing gets a FLUSH so that
		 * what was written is durable, as the command promises. */
		int r = tc_export_io(e, TC_OP_FLUSH, 0, NULL, 0, 0);
		if (r)
			return ctl_error(fail_errno(r), NULL);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "dirty_bytes_before", u64(0));
		json_object_object_add(o, "dirty_bytes", u64(0));
		json_object_object_add(o, "state", json_object_new_string(state_name(info.state)));
		return ok(o);
	}
	tc_volume *vol = info.volume;
	uint64_t off = 0, len = 0;
	int ranged = req_range(req, &off, &len, &err);
	if (ranged < 0)
		return err;
	struct tc_volume_stats st;
	tc_volume_stats(vol, &st);
	uint64_t before = st.dirty_bytes;
	int r = ranged ? tc_volume_flush_range(vol, off, len, fn, opaque, &before) :
			 tc_volume_flush_dirty(vol, fn, opaque);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	tc_volume_stats(vol, &st);
	json_object *o = json_object_new_object();
	if (ranged) {
		/* dirty_bytes_before: the range's (its lines'); dirty_bytes: the volume's. */
		json_object_object_add(o, "range_offset", u64(off));
		json_object_object_add(o, "range_length", u64(len));
	}
	json_object_object_add(o, "dirty_bytes_before", u64(before));
	json_object_object_add(o, "dirty_bytes", u64(st.dirty_bytes));
	return ok(o);
}

static json_object *op_invalidate(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_export *e = req_export(h, req, &err);
	tc_volume *vol = e ? req_volume(e, &err) : NULL;
	if (!vol)
		return err;
	uint64_t off = 0, len = 0;
	int ranged = req_range(req, &off, &len, &err);
	if (ranged < 0)
		return err;
	if (!ranged)
		return ctl_error(EINVAL, "request: \"range\" is missing (invalidate takes a "
				 "range)");
	unsigned flags = req_bool(req, "discard_dirty") ? TC_INVALIDATE_DISCARD_DIRTY : 0;
	struct tc_range_result res;
	int r = tc_volume_invalidate_range(vol, off, len, flags, &res);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "range_offset", u64(off));
	json_object_object_add(o, "range_length", u64(len));
	json_object_object_add(o, "dropped_bytes", u64(res.dropped_bytes));
	json_object_object_add(o, "dirty_bytes_discarded", u64(res.discarded_dirty_bytes));
	json_object_object_add(o, "dirty_bytes_kept", u64(res.kept_dirty_bytes));
	return ok(o);
}

static json_object *op_detach(tc_host *h, json_object *req, tc_progress_fn fn,
			      void *opaque)
{
	json_object *err = NULL;
	tc_export *e = req_export(h, req, &err);
	tc_volume *vol = e ? req_volume(e, &err) : NULL;
	if (!vol)
		return err;
	struct tc_volume_stats st;
	tc_volume_stats(vol, &st);
	unsigned flags = req_bool(req, "discard_dirty") ? TC_DETACH_DISCARD_DIRTY : 0;
	int r = tc_host_detach(h, e, flags, fn, opaque);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	json_object *o = volume_status(e);
	json_object_object_add(o, "dirty_bytes_discarded",
			       u64(flags ? st.dirty_bytes : 0));
	return ok(o);
}

/* The kind of device @spec holds (read-only, no lock), or -1 when unreadable. */
static int probe_spec(tc_host *h, const char *spec, struct tc_probe *p)
{
	tc_dev *d;
	memset(p, 0, sizeof(*p));
	if (tc_dev_open_spec(tc_host_ctx(h), spec, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 0, &d))
		return -1;
	int r = tc_dev_probe(tc_host_ctx(h), d, p);
	tc_dev_close(d);
	return r ? -1 : (int)p->kind;
}

static json_object *op_attach(tc_host *h, json_object *req)
{
	json_object *jc, *jb, *js;
	if (!json_object_object_get_ex(req, "cache", &jc) ||
	    !json_object_is_type(jc, json_type_string) ||
	    !json_object_object_get_ex(req, "backing", &jb) ||
	    !json_object_is_type(jb, json_type_string))
		return ctl_error(EINVAL, "request: \"cache\" and \"backing\" (device paths) "
				 "are required");
	/* Already attached to this very cache (the backing's superblock names it): the
	 * same answer live and offline, whether or not the backing is among the devices:
	 * nothing to do, and settings are changed by `set`, not here. */
	struct tc_probe pb, pc;
	if (probe_spec(h, json_object_get_string(jb), &pb) == TC_PROBE_BACKING &&
	    probe_spec(h, json_object_get_string(jc), &pc) == TC_PROBE_CACHE &&
	    pb.cache_uuid[0] && !strcmp(pb.cache_uuid, pc.uuid)) {
		char msg[400];
		if (json_object_object_get_ex(req, "settings", &js)) {
			snprintf(msg, sizeof(msg), "volume \"%s\": already attached to cache %s; "
				 "nothing changed: change its settings with `tiercache set`",
				 pb.name, json_object_get_string(jc));
			return ctl_error(EEXIST, msg);
		}
		tc_export *e = tc_host_find(h, pb.name);
		json_object *o;
		if (e) {
			o = volume_status(e);
		} else {
			o = json_object_new_object();
			json_object_object_add(o, "name", json_object_new_string(pb.name));
			json_object_object_add(o, "cache", json_object_new_string(
				json_object_get_string(jc)));
		}
		json_object_object_add(o, "already_attached", json_object_new_boolean(1));
		return ok(o);
	}
	struct tc_volume_settings s, *sp = NULL;
	if (json_object_object_get_ex(req, "settings", &js)) {
		/* Start from the backing's stored settings: probe it. */
		tc_dev *d;
		struct tc_probe p;
		int r = tc_dev_open_spec(tc_host_ctx(h), json_object_get_string(jb),
					 TC_DEV_READONLY, 0, 0, &d);
		if (!r) {
			r = tc_dev_probe(tc_host_ctx(h), d, &p);
			tc_dev_close(d);
		}
		if (!r && p.kind != TC_PROBE_BACKING) {
			char msg[256];
			snprintf(msg, sizeof(msg), "device %s: holds %s, not a tiercache backing",
				 json_object_get_string(jb), p.what);
			return ctl_error(EINVAL, msg);
		}
		if (r)
			return ctl_error(fail_errno(r), NULL);
		s = p.settings;
		char why[256];
		if (ctl_settings_apply(js, &s, why, sizeof(why)))
			return ctl_error(EINVAL, why);
		sp = &s;
	}
	unsigned flags = req_bool(req, "discard_dirty") ? TC_ATTACH_DISCARD_DIRTY : 0;
	tc_export *e;
	int r = tc_host_attach(h, json_object_get_string(jc), json_object_get_string(jb), sp,
			       flags, &e);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return ok(volume_status(e));
}

/* The non-empty string @key of a request, or NULL and an error response. */
static const char *req_string(json_object *req, const char *key, json_object **err)
{
	json_object *v;
	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string) ||
	    !*json_object_get_string(v)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "request: \"%s\" (a string) is missing", key);
		*err = ctl_error(EINVAL, msg);
		return NULL;
	}
	return json_object_get_string(v);
}

/* The array after a change, with @key set to @val (when @key). */
static json_object *array_result(tc_dev *a, const char *key, json_object *val)
{
	json_object *o = ctl_array_json(a, NULL);
	if (!o) {
		json_object_put(val);
		return ctl_error(ENOMEM, NULL);
	}
	if (key)
		json_object_object_add(o, key, val);
	return ok(o);
}

/* "device": the new spare; "force": reuse a device holding a superblock. */
static json_object *op_array_add_spare(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_dev *a = req_array(h, req, &err);
	const char *spec = a ? req_string(req, "device", &err) : NULL;
	if (!spec)
		return err;
	tc_dev *d;
	int r = tc_host_open_spare(h, spec, req_bool(req, "force"), &d);
	if (!r)
		r = tc_array_add_spare(a, d);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return array_result(a, "added", json_object_new_string(spec));
}

/* "device": a member of the array that was faulty or missing, back in its slot
 * (tc_array_re_add: only the regions written since it left are resynced). */
static json_object *op_array_re_add(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_dev *a = req_array(h, req, &err);
	const char *spec = a ? req_string(req, "device", &err) : NULL;
	if (!spec)
		return err;
	int r = tc_host_re_add(h, a, spec);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return array_result(a, "re_added", json_object_new_string(spec));
}

/* "device": a new global spare; "force": reuse a device holding a superblock.  The
 * answer: "global_spares" (the pool after the call) and, when an array took the spare
 * at once, "taken_by" (that array's name). */
static json_object *op_global_spare_add(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	const char *spec = req_string(req, "device", &err);
	if (!spec)
		return err;
	int r = tc_host_add_global_spare(h, spec, req_bool(req, "force"));
	if (r)
		return ctl_error(fail_errno(r), NULL);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "added", json_object_new_string(spec));
	json_object *pool = global_spares_json(h);
	bool pooled = false;
	for (size_t i = 0; i < json_object_array_length(pool); i++) {
		json_object *d;
		json_object_object_get_ex(json_object_array_get_idx(pool, i), "device", &d);
		pooled |= !strcmp(json_object_get_string(d), spec);
	}
	struct tc_array_status *st = pooled ? NULL : malloc(sizeof(*st));
	tc_dev *a;
	for (unsigned i = 0; st && (a = tc_host_array_at(h, i, NULL)); i++) {
		struct tc_array_identity id;
		if (tc_array_status(a, st) || tc_array_identity(a, &id))
			continue;
		for (unsigned k = 0; k < st->members; k++)
			if (st->member[k].name && !strcmp(st->member[k].name, spec))
				json_object_object_add(o, "taken_by", json_object_new_string(id.name));
	}
	free(st);
	json_object_object_add(o, "global_spares", pool);
	return ok(o);
}

/* "device": the global spare to take out of the pool (closed). */
static json_object *op_global_spare_remove(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	const char *spec = req_string(req, "device", &err);
	if (!spec)
		return err;
	int r = tc_host_remove_global_spare(h, spec);
	if (r)
		return ctl_error(-r, NULL);   /* the library's message names the device */
	json_object *o = json_object_new_object();
	json_object_object_add(o, "removed", json_object_new_string(spec));
	json_object_object_add(o, "global_spares", global_spares_json(h));
	return ok(o);
}

/* "member": a spare or a faulty or retired member, by its device name, or a slot
 * number (the device in that slot).  "removed": the device's name. */
static json_object *op_array_remove(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_dev *a = req_array(h, req, &err);
	const char *m = a ? req_string(req, "member", &err) : NULL;
	if (!m)
		return err;
	char name[4096];
	snprintf(name, sizeof(name), "%s", m);
	char *end;
	unsigned long slot = strtoul(m, &end, 10);
	struct tc_array_status *st = *m >= '0' && *m <= '9' && !*end ? malloc(sizeof(*st))
								      : NULL;
	if (st) {
		tc_array_status(a, st);
		if (slot < st->members && st->member[slot].name)
			snprintf(name, sizeof(name), "%s", st->member[slot].name);
		free(st);
	}
	int r = tc_array_remove(a, m);
	if (r)
		return ctl_error(-r, NULL);   /* the library's message names the device */
	return array_result(a, "removed", json_object_new_string(name));
}

/* "slot": the member's slot number (or "member": its device); "device": the new one. */
static json_object *op_array_replace(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	unsigned slot;
	tc_dev *a = req_member(h, req, "slot", &slot, &err);
	if (!a)
		return err;
	const char *spec = req_string(req, "device", &err);
	if (!spec)
		return err;
	tc_dev *d;
	int r = tc_host_open_spare(h, spec, req_bool(req, "force"), &d);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	r = tc_array_replace(a, slot, d);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return array_result(a, "replacing_slot", u64(slot));
}

/* "repair": rewrite what differs. */
static json_object *op_array_check(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_dev *a = req_array(h, req, &err);
	if (!a)
		return err;
	int r = tc_array_check(a, req_bool(req, "repair"));
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return array_result(a, NULL, NULL);
}

/* A rate or priority of a request: 1 and *@out when given, 0 when not, -1 and *@err. */
static int req_u64(json_object *req, const char *key, uint64_t max, uint64_t *out,
		   json_object **err)
{
	json_object *v;
	if (!json_object_object_get_ex(req, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_uint64(v) > max) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s %s: not a number 0..%llu", key,
			 json_object_to_json_string(v), (unsigned long long)max);
		*err = ctl_error(EINVAL, msg);
		return -1;
	}
	*out = json_object_get_uint64(v);
	return 1;
}

/* "min_rate", "max_rate" (bytes/s per member), "priority" (0..100): those given change. */
static json_object *op_array_set_rebuild(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	tc_dev *a = req_array(h, req, &err);
	if (!a)
		return err;
	struct tc_array_status *st = malloc(sizeof(*st));
	if (!st)
		return ctl_error(ENOMEM, NULL);
	tc_array_status(a, st);
	struct tc_array_rebuild_opts o = st->rebuild;
	free(st);
	uint64_t v;
	int r;
	if ((r = req_u64(req, "min_rate", UINT64_MAX, &v, &err)) < 0)
		return err;
	if (r)
		o.min_rate = v;
	if ((r = req_u64(req, "max_rate", UINT64_MAX, &v, &err)) < 0)
		return err;
	if (r)
		o.max_rate = v;
	if ((r = req_u64(req, "priority", 100, &v, &err)) < 0)
		return err;
	if (r)
		o.priority = (unsigned)v;
	r = tc_array_set_rebuild(a, &o);
	if (r)
		return ctl_error(fail_errno(r), NULL);
	return array_result(a, NULL, NULL);
}

/* ---- fault injection (servers started with --testing) ------------------------------- */

/* The refusal of a test hook by a server not started for testing. */
static json_object *not_testing(const char *what)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "%s refused: this server was not started for testing; "
		 "start it with `tiercache serve --testing DEVICE...` to allow fault injection "
		 "(debug fail, debug heal) and power cuts (debug power-cut)", what);
	return ctl_error(EPERM, msg);
}

/* The "device" operand, or NULL and an error response. */
static const char *req_device(json_object *req, json_object **err)
{
	json_object *v;
	if (!json_object_object_get_ex(req, "device", &v) ||
	    !json_object_is_type(v, json_type_string) || !*json_object_get_string(v)) {
		*err = ctl_error(EINVAL, "request: \"device\" (a device spec or path) is missing");
		return NULL;
	}
	return json_object_get_string(v);
}

/* The fault of a request: "fault_op" ("read", "write", "flush", "all"; default all),
 * "after" (requests, default 0), "errno" (a name or a number, default EIO),
 * "transient" (default false).  0, or -EINVAL with the reason in @why. */
static int req_fault(json_object *req, struct tc_fault *f, char *why, size_t len)
{
	json_object *v;
	*f = (struct tc_fault){ .op = TC_FAULT_ALL, .error = EIO };
	if (json_object_object_get_ex(req, "fault_op", &v)) {
		int op = json_object_is_type(v, json_type_string) ?
			 tc_fault_op_parse(json_object_get_string(v)) : -EINVAL;
		if (op < 0) {
			snprintf(why, len, "fault_op %s: not one of \"read\", \"write\", "
				 "\"flush\", \"all\"", json_object_to_json_string(v));
			return -EINVAL;
		}
		f->op = (enum tc_fault_op)op;
	}
	if (json_object_object_get_ex(req, "after", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
			snprintf(why, len, "after %s: not a number of requests (0 or more)",
				 json_object_to_json_string(v));
			return -EINVAL;
		}
		f->after = json_object_get_uint64(v);
	}
	if (json_object_object_get_ex(req, "errno", &v)) {
		int e = -EINVAL;
		if (json_object_is_type(v, json_type_string))
			e = tc_errno_parse(json_object_get_string(v));
		else if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 1 &&
			 json_object_get_int64(v) <= 4095)
			e = (int)json_object_get_int64(v);
		if (e < 0) {
			snprintf(why, len, "errno %s: not an errno name (EIO, ENOSPC, ENODEV, "
				 "ETIMEDOUT, EROFS, ...) or a number 1..4095",
				 json_object_to_json_string(v));
			return -EINVAL;
		}
		f->error = e;
	}
	if (json_object_object_get_ex(req, "transient", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(why, len, "transient %s: not true or false",
				 json_object_to_json_string(v));
			return -EINVAL;
		}
		f->transient = json_object_get_boolean(v);
	}
	return 0;
}

/* The device a test hook (@what, for the refusal) names, or NULL and an error response
 * in *@err: the server was not started for testing, or "device" is missing. */
static const char *hook_device(tc_host *h, json_object *req, const char *what,
			       json_object **err)
{
	if (!tc_host_fault_injection(h)) {
		*err = not_testing(what);
		return NULL;
	}
	return req_device(req, err);
}

static json_object *op_fault(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	const char *dev = hook_device(h, req, "fault injection", &err);
	if (!dev)
		return err;
	struct tc_fault f;
	char why[256];
	if (req_fault(req, &f, why, sizeof(why)))
		return ctl_error(EINVAL, why);
	struct tc_host_device *hd = malloc(sizeof(*hd));
	if (!hd)
		return ctl_error(ENOMEM, NULL);
	int r = tc_host_fault(h, dev, &f, hd);
	json_object *resp = r ? ctl_error(fail_errno(r), NULL) : ok(device_json(hd));
	free(hd);
	return resp;
}

static json_object *op_heal(tc_host *h, json_object *req)
{
	json_object *err = NULL;
	const char *dev = hook_device(h, req, "heal", &err);
	if (!dev)
		return err;
	struct tc_host_device *hd = malloc(sizeof(*hd));
	if (!hd)
		return ctl_error(ENOMEM, NULL);
	int r = tc_host_heal(h, dev, hd);
	json_object *resp;
	if (r < 0) {
		resp = ctl_error(fail_errno(r), NULL);
	} else {
		json_object *o = device_json(hd);
		json_object_object_add(o, "was_armed", json_object_new_boolean(r == 1));
		resp = ok(o);
	}
	free(hd);
	return resp;
}

json_object *ctl_execute(tc_host *h, json_object *req, tc_progress_fn fn, void *opaque)
{
	json_object *jop;
	if (!json_object_is_type(req, json_type_object) ||
	    !json_object_object_get_ex(req, "op", &jop) ||
	    !json_object_is_type(jop, json_type_string))
		return ctl_error(EINVAL, "request: not an object with an \"op\" string");
	const char *op = json_object_get_string(jop);
	ctl_capture_begin();
	json_object *resp;
	if (!strcmp(op, "status"))
		resp = op_status(h);
	else if (!strcmp(op, "stats"))
		resp = op_stats(h, req);
	else if (!strcmp(op, "set"))
		resp = op_set(h, req, fn, opaque);
	else if (!strcmp(op, "cache_set"))
		resp = op_cache_set(h, req);
	else if (!strcmp(op, "flush"))
		resp = op_flush(h, req, fn, opaque);
	else if (!strcmp(op, "invalidate"))
		resp = op_invalidate(h, req);
	else if (!strcmp(op, "detach"))
		resp = op_detach(h, req, fn, opaque);
	else if (!strcmp(op, "attach"))
		resp = op_attach(h, req);
	else if (!strcmp(op, "array_status"))
		resp = op_array_status(h, req);
	else if (!strcmp(op, "array_fail"))
		resp = op_array_fail(h, req);
	else if (!strcmp(op, "array_add_spare"))
		resp = op_array_add_spare(h, req);
	else if (!strcmp(op, "array_re_add"))
		resp = op_array_re_add(h, req);
	else if (!strcmp(op, "array_remove"))
		resp = op_array_remove(h, req);
	else if (!strcmp(op, "global_spare_add"))
		resp = op_global_spare_add(h, req);
	else if (!strcmp(op, "global_spare_remove"))
		resp = op_global_spare_remove(h, req);
	else if (!strcmp(op, "array_replace"))
		resp = op_array_replace(h, req);
	else if (!strcmp(op, "array_check"))
		resp = op_array_check(h, req);
	else if (!strcmp(op, "array_set_rebuild"))
		resp = op_array_set_rebuild(h, req);
	else if (!strcmp(op, "fault"))
		resp = op_fault(h, req);
	else if (!strcmp(op, "heal"))
		resp = op_heal(h, req);
	else if (!strcmp(op, "power_cut"))
		resp = not_testing("power cut");  /* a testing server answers it before this */
	else {
		char msg[128];
		snprintf(msg, sizeof(msg), "request: unknown op \"%.64s\"", op);
		resp = ctl_error(EINVAL, msg);
	}
	char *msgs = ctl_capture_end();
	/* A failure gets the library's messages: instead of a bare strerror(), or after
	 * its own words. */
	json_object *je, *jok;
	if (msgs && json_object_object_get_ex(resp, "ok", &jok) && !json_object_get_boolean(jok) &&
	    json_object_object_get_ex(resp, "errno", &je)) {
		json_object *jmsg;
		const char *cur = json_object_object_get_ex(resp, "error", &jmsg) ?
				  json_object_get_string(jmsg) : "";
		if (!strcmp(cur, strerror(json_object_get_int(je)))) {
			json_object_object_add(resp, "error", json_object_new_string(msgs));
		} else {
			/* Its own words first, then what the library said. */
			char *both = NULL;
			if (asprintf(&both, "%s; %s", cur, msgs) >= 0)
				json_object_object_add(resp, "error", json_object_new_string(both));
			free(both);
		}
	}
	free(msgs);
	return resp;
}
