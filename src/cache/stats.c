/* SPDX-License-Identifier: MIT */
/*
 * stats.c - counters of volumes and caches, as C structs and as JSON (json-c).
 */
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <json-c/json.h>
#include "cache_priv.h"
#include "tiercache-test.h"

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
	st->resident_bytes = atomic_load(&v->lines) * v->cache->line_size;
	st->backing_stripe = v->stripe;
	/* The rate is published when writeback happens; two seconds without any means
	 * none is happening now, whatever the last published figure. */
	uint64_t now = tc_ctx_now(v->cache->ctx), stamp = atomic_load(&v->rate_stamp_ns);
	st->writeback_rate = now - stamp > 2000000000ull ? 0 : atomic_load(&v->rate_last);
	st->fallback_pt = atomic_load(&v->cache->failed);
	st->draining = atomic_load(&v->draining) > 0;
	st->write_policy = TC_SET(v, write_policy);
	st->effective_policy = (uint8_t)tc_protect_effective(v);
	st->policy_reason = st->effective_policy != st->write_policy ?
			    tc_protect_reason(v->cache) : "";
	st->instant_bytes = s[ST_INSTANT_BYTES];
	st->full_stripe_bytes = s[ST_FULL_STRIPE_BYTES];
	st->seq_kept_dirty_stripe = s[ST_SEQ_DIRTY_STRIPE];
	st->writeback_full_stripes = s[ST_WB_FULL_STRIPES];
	st->writeback_stripes_completed = s[ST_WB_STRIPES_COMPLETED];
	st->writeback_fill_bytes = s[ST_WB_FILL_BYTES];
	st->writeback_stripes_reconstructed = s[ST_WB_STRIPES_RECON];
	st->writeback_backing_read_bytes = s[ST_WB_BACKING_READ_BYTES];
	st->stream_rate_cache = atomic_load(&v->srate[0]);
	st->stream_rate_backing = atomic_load(&v->srate[1]);
	tc_dev_stats(v->backing, &st->backing);
}

/* ---- latency histograms --------------------------------------------------------- */

void tc_lat_record(struct tc_volume *v, unsigned cls, uint64_t ns)
{
	if (atomic_load_explicit(&v->lat_off, memory_order_relaxed))
		return;
	struct tc_lat_hist *h = &v->lat[cls];
	atomic_fetch_add_explicit(&h->b[tc_hist_bucket(ns)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, ns, memory_order_relaxed);
	/* The extremes move rarely: a load, and a CAS only when this one is beyond. */
	uint64_t m = atomic_load_explicit(&h->max, memory_order_relaxed);
	while (ns > m && !atomic_compare_exchange_weak_explicit(&h->max, &m, ns,
								  memory_order_relaxed,
								  memory_order_relaxed))
		;
	uint64_t inv = ~ns;
	m = atomic_load_explicit(&h->inv_min, memory_order_relaxed);
	while (inv > m && !atomic_compare_exchange_weak_explicit(&h->inv_min, &m, inv,
								   memory_order_relaxed,
								   memory_order_relaxed))
		;
}

static const char *const lat_names[TC_LAT__COUNT] = {
	[TC_LAT_READ_HIT] = "read_hit", [TC_LAT_READ_MISS] = "read_miss",
	[TC_LAT_WRITE_HIT] = "write_hit", [TC_LAT_WRITE_MISS] = "write_miss",
};

const char *tc_lat_class_name(unsigned cls)
{
	return cls < TC_LAT__COUNT ? lat_names[cls] : NULL;
}

int tc_volume_latency(tc_volume *v, unsigned cls, struct tc_hist *out)
{
	if (cls >= TC_LAT__COUNT) {
		tc_err(v->cache->ctx, "volume \"%s\": latency class %u does not exist "
		       "(0..%u)", v->name, cls, TC_LAT__COUNT - 1);
		return -EINVAL;
	}
	struct tc_lat_hist *h = &v->lat[cls];
	tc_hist_init(out);
	for (unsigned i = 0; i < TC_HIST_BUCKETS; i++) {
		out->b[i] = atomic_load_explicit(&h->b[i], memory_order_relaxed);
		out->count += out->b[i];
	}
	if (!out->count)
		return 0;
	out->sum = (long double)atomic_load_explicit(&h->sum, memory_order_relaxed);
	out->max = atomic_load_explicit(&h->max, memory_order_relaxed);
	uint64_t inv = atomic_load_explicit(&h->inv_min, memory_order_relaxed);
	out->min = inv ? ~inv : 0;
	if (out->min > out->max)   /* a reset between the loads */
		out->min = out->max;
	return 0;
}

void tc_volume_set_latency_stats(tc_volume *v, bool on)
{
	atomic_store(&v->lat_off, !on);
}

void tc_volume_set_stripe_fill(tc_volume *v, bool on)
{
	atomic_store(&v->no_stripe_fill, !on);
}

void tc_volume_stats_reset(tc_volume *v)
{
	for (int i = 0; i < ST__COUNT; i++)
		atomic_store_explicit(&v->st[i], 0, memory_order_relaxed);
	for (unsigned c = 0; c < TC_LAT__COUNT; c++) {
		struct tc_lat_hist *h = &v->lat[c];
		for (unsigned i = 0; i < TC_HIST_BUCKETS; i++)
			atomic_store_explicit(&h->b[i], 0, memory_order_relaxed);
		atomic_store_explicit(&h->sum, 0, memory_order_relaxed);
		atomic_store_explicit(&h->max, 0, memory_order_relaxed);
		atomic_store_explicit(&h->inv_min, 0, memory_order_relaxed);
	}
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
			st->mem_dirty_index_bytes += tc_dirty_mem(&c->vols[i]->dirty_ix);
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
	/* Line entry + hash buckets + replacement links, measured from the allocations
	 * (the free list is chained through the line entries: nothing of its own). */
	uint64_t bytes = (uint64_t)c->nslots * sizeof(struct tc_line) +
			 (uint64_t)(c->bucket_mask + 1) * sizeof(uint32_t) +
			 (uint64_t)c->nslots * per_slot;
	st->mem_bytes_per_line = c->nslots ? (bytes + c->nslots - 1) / c->nslots : 0;
	st->mem_ghost_bytes = ghosts;
	st->mem_admission_bytes = tc_admit_mem(&c->admit);
	st->checksums = c->csum != NULL;
	struct tc_dev_limits l;
	tc_dev_limits(c->dev, &l);
	st->redundancy = l.redundancy;
	st->unprotected_writeback = atomic_load(&c->wb_guard) != TC_WB_GUARD_PROTECTED;
	st->writeback_held = atomic_load(&c->wb_hold) != TC_HOLD_NONE;
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

/* The four latency histograms: percentiles, extremes and, for the distribution, the
 * counts between consecutive powers of two (exact: every power of two is a boundary
 * of the histogram's buckets), non-empty ones only.  The histogram's own 7,424 buckets
 * would make a response longer than the control protocol's line (CTL_LINE_MAX). */
static json_object *latency_json(tc_volume *v)
{
	struct tc_hist *h = malloc(sizeof(*h));
	json_object *o = json_object_new_object();
	if (!h || !o) {
		free(h);
		json_object_put(o);
		return NULL;
	}
	static const double pct[] = { 50, 90, 99, 99.9, 99.99 };
	static const char *const pname[] = { "p50_ns", "p90_ns", "p99_ns", "p999_ns",
					     "p9999_ns" };
	for (unsigned c = 0; c < TC_LAT__COUNT; c++) {
		tc_volume_latency(v, c, h);
		json_object *j = json_object_new_object();
		add_u64(j, "count", h->count);
		add_u64(j, "min_ns", h->count ? h->min : 0);
		add_u64(j, "mean_ns", (uint64_t)tc_hist_mean(h));
		for (unsigned i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
			add_u64(j, pname[i], tc_hist_percentile(h, pct[i]));
		add_u64(j, "max_ns", h->max);
		json_object *b = json_object_new_array();
		/* [0, 1024), then [2^k, 2^(k+1)) up to the last, [2^63, max]. */
		uint64_t below = 0;
		for (unsigned k = 10; h->count && below < h->count && k <= 64; k++) {
			uint64_t hi = k < 64 ? 1ull << k : 0;
			uint64_t upto = k < 64 ? tc_hist_count_below(h, hi) : h->count;
			if (upto == below)
				continue;
			json_object *e = json_object_new_object();
			add_u64(e, "ge_ns", k == 10 ? 0 : 1ull << (k - 1));
			add_u64(e, "lt_ns", k < 64 ? hi : UINT64_MAX);
			add_u64(e, "count", upto - below);
			json_object_array_add(b, e);
			below = upto;
		}
		json_object_object_add(j, "buckets", b);
		json_object_object_add(o, tc_lat_class_name(c), j);
	}
	free(h);
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
	add_u64(o, "seq_kept_dirty_stripe", st.seq_kept_dirty_stripe);
	add_u64(o, "bypassed_admission", st.bypassed_admission);
	add_u64(o, "bypassed_bytes", st.bypassed_bytes);
	add_u64(o, "dirty_bytes", st.dirty_bytes);
	add_u64(o, "cached_bytes", st.cached_bytes);
	add_u64(o, "resident_bytes", st.resident_bytes);
	add_u64(o, "backing_stripe", st.backing_stripe);
	json_object_object_add(o, "effective_policy",
			       json_object_new_string(tc_write_policy_name(st.effective_policy)));
	json_object_object_add(o, "policy_reason", json_object_new_string(st.policy_reason));
	add_u64(o, "instant_bytes", st.instant_bytes);
	add_u64(o, "full_stripe_bytes", st.full_stripe_bytes);
	add_u64(o, "stream_rate_cache", st.stream_rate_cache);
	add_u64(o, "stream_rate_backing", st.stream_rate_backing);
	add_u64(o, "writeback_bytes", st.writeback_bytes);
	add_u64(o, "writeback_ios", st.writeback_ios);
	add_u64(o, "writeback_full_stripes", st.writeback_full_stripes);
	add_u64(o, "writeback_stripes_completed", st.writeback_stripes_completed);
	add_u64(o, "writeback_fill_bytes", st.writeback_fill_bytes);
	add_u64(o, "writeback_stripes_reconstructed", st.writeback_stripes_reconstructed);
	add_u64(o, "writeback_backing_read_bytes", st.writeback_backing_read_bytes);
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
	/* SSD endurance: cache-device data bytes written per host byte read or written */
	if (st.bytes_read + st.bytes_written)
		json_object_object_add(cd, "bytes_written_per_host_byte",
				       json_object_new_double((double)st.cache_bytes_written /
							      (double)(st.bytes_read +
								       st.bytes_written)));
	else
		json_object_object_add(cd, "bytes_written_per_host_byte", NULL);
	json_object_object_add(o, "cache_device", cd);
	json_object *lat = latency_json(v);
	if (!lat) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "latency", lat);
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
	add_u64(o, "mem_dirty_index_bytes", st.mem_dirty_index_bytes);
	json_object_object_add(o, "checksums", json_object_new_boolean(st.checksums));
	add_u64(o, "csum_errors", st.csum_errors);
	add_u64(o, "recovered_dirty_lines", st.recovered_dirty_lines);
	add_u64(o, "recovered_dropped_lines", st.recovered_dropped_lines);
	add_u64(o, "recovery_ns", st.recovery_ns);
	json_object_object_add(o, "cache_device", dev_stats_json(&st.dev));
	json_object_object_add(o, "fallback_pt", json_object_new_boolean(atomic_load(&c->failed)));
	add_u64(o, "redundancy", st.redundancy);
	json_object_object_add(o, "unprotected_writeback",
			       json_object_new_boolean(st.unprotected_writeback));
	json_object_object_add(o, "writeback_held", json_object_new_boolean(st.writeback_held));
	char *out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}
