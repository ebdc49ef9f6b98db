/* SPDX-License-Identifier: MIT */
/*
 * stats.c - counters of volumes and caches, as C structs and as JSON (json-c).
 */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "cache_priv.h"

void tc_volume_stats(tc_volume *v, struct tc_volume_stats *st)
{
	memset(st, 0, sizeof(*st));
	uint64_t s[ST__COUNT];
	for (int i = 0; i < ST__COUNT; i++)
		s[i] = atomic_load_explicit(&v->st[i], memory_order_relaxed);
	st->read_hits = s[ST_READ_HITS];
	st->read_partial_hits = s[ST_READ_PARTIAL];
	st->read_misses = s[ST_READ_MISSES];
	st->write_hits = s[ST_WRITE_HITS];
	st->write_partial_hits = s[ST_WRITE_PARTIAL];
	st->write_misses = s[ST_WRITE_MISSES];
	st->reads = s[ST_READS];
	st->writes = s[ST_WRITES];
	st->flushes = s[ST_FLUSHES];
	st->discards = s[ST_DISCARDS];
	st->write_zeroes = s[ST_WRITE_ZEROES];
	st->bytes_read = s[ST_BYTES_READ];
	st->bytes_written = s[ST_BYTES_WRITTEN];
	st->promotions = s[ST_PROMOTIONS];
	st->evictions = s[ST_EVICTIONS];
	st->bypassed_seq = s[ST_BYPASS_SEQ];
	st->bypassed_admission = s[ST_BYPASS_ADMIT];
	st->bypassed_bytes = s[ST_BYPASS_BYTES];
	st->writeback_bytes = s[ST_WB_BYTES];
	st->writeback_ios = s[ST_WB_IOS];
	st->errors = s[ST_ERRORS];
	st->cache_errors = s[ST_CACHE_ERRORS];
	st->backing_errors = s[ST_BACKING_ERRORS];
	st->cache_bytes_read = s[ST_CACHE_BYTES_READ] + s[ST_CACHE_WB_READ_BYTES];
	st->cache_bytes_written = s[ST_CACHE_BYTES_WRITTEN];
	st->cache_fill_bytes = s[ST_CACHE_FILL_BYTES];
	st->cache_writeback_read_bytes = s[ST_CACHE_WB_READ_BYTES];
	st->dirty_bytes = atomic_load(&v->dirty_units) * TC_UNIT_SIZE;
	st->cached_bytes = atomic_load(&v->valid_units) * TC_UNIT_SIZE;
	st->backing_stripe = v->stripe;
	/* The rate is published when writeback happens; two seconds without any means
	 * none is happening now, whatever the last published figure. */
	uint64_t now = tc_ctx_now(v->cache->ctx), stamp = atomic_load(&v->rate_stamp_ns);
	st->writeback_rate = now - stamp > 2000000000ull ? 0 : atomic_load(&v->rate_last);
	st->fallback_pt = atomic_load(&v->cache->failed);
	st->draining = atomic_load(&v->draining) > 0;
	tc_dev_stats(v->backing, &st->backing);
}

void tc_volume_stats_reset(tc_volume *v)
{
	for (int i = 0; i < ST__COUNT; i++)
		atomic_store_explicit(&v->st[i], 0, memory_order_relaxed);
}

void tc_cache_stats(tc_cache *c, struct tc_cache_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->lines = c->nslots;
	st->lines_used = atomic_load(&c->used_lines);
	st->lines_dirty = atomic_load(&c->dirty_lines);
	st->line_size = c->line_size;
	uint64_t dirty = 0;
	unsigned online = 0, records = 0;
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++)
		if (c->vols[i]) {
			dirty += atomic_load(&c->vols[i]->dirty_units) * TC_UNIT_SIZE;
			online++;
		}
	pthread_mutex_unlock(&c->mgmt_lock);
	pthread_mutex_lock(&c->sb_lock);
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		records += c->sb.vols[i].id != 0;
	pthread_mutex_unlock(&c->sb_lock);
	if (records > online) {
		/* Volumes whose backing is absent keep their dirty lines too: count them from
		 * the lines (only then: a scan of every line). */
		struct tc_inspect_volume *recs = calloc(TC_MAX_VOLUMES, sizeof(*recs));
		unsigned n = recs ? tc_cache_volumes(c, recs, TC_MAX_VOLUMES) : 0;
		for (unsigned i = 0; i < n; i++)
			if (!recs[i].online)
				dirty += recs[i].dirty_bytes;
		free(recs);
	}
	st->dirty_bytes = dirty;
	st->commits = atomic_load(&c->commits);
	st->commit_blocks = atomic_load(&c->commit_blocks);
	st->metadata_bytes_written = st->commit_blocks * TC_MD_BLOCK_SIZE;
	size_t per_slot = 0, ghosts = 0;
	c->repl_ops->mem(c->repl, &per_slot, &ghosts);
	/* Line entry + hash buckets + replacement links, measured from the allocations. */
	uint64_t bytes = (uint64_t)c->nslots * sizeof(struct tc_line) +
			 (uint64_t)(c->bucket_mask + 1) * sizeof(uint32_t) +
			 (uint64_t)c->nslots * per_slot;
	st->mem_bytes_per_line = c->nslots ? (bytes + c->nslots - 1) / c->nslots : 0;
	st->mem_ghost_bytes = ghosts;
	st->mem_admission_bytes = tc_admit_mem(&c->admit);
	st->checksums = c->csum != NULL;
	st->mem_csum_bytes = c->csum ? (uint64_t)c->nslots * c->units * sizeof(*c->csum) : 0;
	st->csum_errors = atomic_load(&c->csum_errors);
	st->recovered_dirty_lines = c->recovered_dirty;
	st->recovered_dropped_lines = c->recovered_dropped;
	st->recovery_ns = c->recovery_ns;
	tc_dev_stats(c->dev, &st->dev);
}

static void add_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static json_object *dev_stats_json(const struct tc_dev_stats *d)
{
	json_object *o = json_object_new_object();
	add_u64(o, "reads", d->reads);
	add_u64(o, "writes", d->writes);
	add_u64(o, "flushes", d->flushes);
	add_u64(o, "discards", d->discards);
	add_u64(o, "write_zeroes", d->write_zeroes);
	add_u64(o, "bytes_read", d->bytes_read);
	add_u64(o, "bytes_written", d->bytes_written);
	add_u64(o, "errors", d->errors);
	return o;
}

char *tc_volume_stats_json(tc_volume *v)
{
	struct tc_volume_stats st;
	tc_volume_stats(v, &st);
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(v->name));
	json_object_object_add(o, "write_policy",
			       json_object_new_string(tc_write_policy_name(TC_SET(v, write_policy))));
	add_u64(o, "reads", st.reads);
	add_u64(o, "writes", st.writes);
	add_u64(o, "flushes", st.flushes);
	add_u64(o, "discards", st.discards);
	add_u64(o, "write_zeroes", st.write_zeroes);
	add_u64(o, "bytes_read", st.bytes_read);
	add_u64(o, "bytes_written", st.bytes_written);
	add_u64(o, "read_hits", st.read_hits);
	add_u64(o, "read_partial_hits", st.read_partial_hits);
	add_u64(o, "read_misses", st.read_misses);
	add_u64(o, "write_hits", st.write_hits);
	add_u64(o, "write_partial_hits", st.write_partial_hits);
	add_u64(o, "write_misses", st.write_misses);
	add_u64(o, "promotions", st.promotions);
	add_u64(o, "evictions", st.evictions);
	add_u64(o, "bypassed_seq", st.bypassed_seq);
	add_u64(o, "bypassed_admission", st.bypassed_admission);
	add_u64(o, "bypassed_bytes", st.bypassed_bytes);
	add_u64(o, "dirty_bytes", st.dirty_bytes);
	add_u64(o, "cached_bytes", st.cached_bytes);
	add_u64(o, "backing_stripe", st.backing_stripe);
	add_u64(o, "writeback_bytes", st.writeback_bytes);
	add_u64(o, "writeback_ios", st.writeback_ios);
	add_u64(o, "writeback_rate", st.writeback_rate);
	add_u64(o, "errors", st.errors);
	add_u64(o, "cache_errors", st.cache_errors);
	add_u64(o, "backing_errors", st.backing_errors);
	json_object_object_add(o, "fallback_pt", json_object_new_boolean(st.fallback_pt));
	json_object_object_add(o, "draining", json_object_new_boolean(st.draining));
	json_object_object_add(o, "backing_device", dev_stats_json(&st.backing));
	json_object *cd = json_object_new_object();
	add_u64(cd, "bytes_read", st.cache_bytes_read);
	add_u64(cd, "bytes_written", st.cache_bytes_written);
	add_u64(cd, "fill_bytes_written", st.cache_fill_bytes);
	add_u64(cd, "client_bytes_written", st.cache_bytes_written - st.cache_fill_bytes);
	add_u64(cd, "writeback_bytes_read", st.cache_writeback_read_bytes);
	add_u64(cd, "client_bytes_read", st.cache_bytes_read - st.cache_writeback_read_bytes);
	json_object_object_add(o, "cache_device", cd);
	char *out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

char *tc_cache_stats_json(tc_cache *c)
{
	struct tc_cache_stats st;
	tc_cache_stats(c, &st);
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	add_u64(o, "lines", st.lines);
	add_u64(o, "lines_used", st.lines_used);
	add_u64(o, "lines_dirty", st.lines_dirty);
	add_u64(o, "line_size", st.line_size);
	add_u64(o, "dirty_bytes", st.dirty_bytes);
	add_u64(o, "commits", st.commits);
	add_u64(o, "commit_blocks", st.commit_blocks);
	add_u64(o, "metadata_bytes_written", st.metadata_bytes_written);
	add_u64(o, "mem_bytes_per_line", st.mem_bytes_per_line);
	add_u64(o, "mem_ghost_bytes", st.mem_ghost_bytes);
	add_u64(o, "mem_admission_bytes", st.mem_admission_bytes);
	add_u64(o, "mem_csum_bytes", st.mem_csum_bytes);
	json_object_object_add(o, "checksums", json_object_new_boolean(st.checksums));
	add_u64(o, "csum_errors", st.csum_errors);
	add_u64(o, "recovered_dirty_lines", st.recovered_dirty_lines);
	add_u64(o, "recovered_dropped_lines", st.recovered_dropped_lines);
	add_u64(o, "recovery_ns", st.recovery_ns);
	json_object_object_add(o, "cache_device", dev_stats_json(&st.dev));
	json_object_object_add(o, "fallback_pt", json_object_new_boolean(atomic_load(&c->failed)));
	char *out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}
