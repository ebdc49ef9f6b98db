/* SPDX-License-Identifier: MIT */
/*
 * ctl_metrics.c - `GET /metrics`: the Prometheus text exposition format, version 0.0.4
 * (prometheus.io/docs/instrumenting/exposition_formats), of the counters `tiercache
 * stats --json` and the state numbers `tiercache status --json` show.
 *
 * Written from the structures the JSON is written from (struct tc_volume_stats,
 * tc_cache_stats, tc_array_status, the latency histograms), never from the JSON.  The
 * format wants every series of a metric family after its one HELP and TYPE line, so
 * everything is snapshotted first (one copy per volume, cache and array), then written
 * family by family.  Names follow Prometheus' conventions: tiercache_<object>_<what>,
 * counters end in _total, base units bytes and seconds in the name, states as one
 * series per state valued 0 or 1 (as OpenMetrics' StateSet).  Each HELP ends with
 * the key of `stats --json` or `status --json` it mirrors, so a scrape can be checked
 * against the JSON key by key (tests/integration/test-http.sh does).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_http.h"
#include "ctl_snap.h"

/* ---- the text format ------------------------------------------------------------- */

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped, as the format says. */
static void label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
	fputc('"', f);
}

/* name{k1="v1",k2="v2"...} : @labels holds key, value pairs, NULL-terminated. */
static void series(FILE *f, const char *name, const char *suffix, const char *const *labels)
{
	fprintf(f, "%s%s", name, suffix ? suffix : "");
	if (labels && labels[0]) {
		fputc('{', f);
		for (unsigned i = 0; labels[i]; i += 2) {
			fprintf(f, "%s%s=", i ? "," : "", labels[i]);
			label_value(f, labels[i + 1]);
		}
		fputc('}', f);
	}
	fputc(' ', f);
}

static void sample_u64(FILE *f, const char *name, const char *const *labels, uint64_t v)
{
	series(f, name, NULL, labels);
	fprintf(f, "%" PRIu64 "\n", v);
}

/* A state as one series per possible value (OpenMetrics' StateSet): @labels (at most
 * 8 pairs), then @key="STATE", valued 1 for @now and 0 for the other @states. */
static void sample_states(FILE *f, const char *name, const char *const *labels,
			  const char *key, const char *const *states, unsigned nstates,
			  const char *now)
{
	const char *l[20];
	unsigned n = 0;
	while (labels[n] && n < 16) {
		l[n] = labels[n];
		n++;
	}
	l[n] = key;
	l[n + 2] = NULL;
	for (unsigned k = 0; k < nstates; k++) {
		l[n + 1] = states[k];
		sample_u64(f, name, l, !strcmp(now, states[k]));
	}
}

/* Seconds from nanoseconds, exact to the nanosecond. */
static void sample_ns(FILE *f, const char *name, const char *const *labels, uint64_t ns)
{
	series(f, name, NULL, labels);
	fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
}

/* ---- volumes --------------------------------------------------------------------- */

enum kind { COUNTER, GAUGE, BOOL };

#define VS(field) offsetof(struct tc_volume_stats, field), sizeof(((struct tc_volume_stats *)0)->field)

/* A number of a struct (tc_volume_stats, tc_cache_stats, tc_array_status) and its
 * metric: where it is, its kind, its name after the object's prefix, the HELP (ending
 * in a full stop) and the JSON key it mirrors. */
struct field {
	size_t off, size;
	enum kind kind;
	const char *name;
	const char *help;
	const char *key;
	bool absent_too;             /* volumes: known for one whose backing is absent */
};

/* Every number of struct tc_volume_stats, as `stats --json` names it. */
static const struct field vol_fields[] = {
	{ VS(reads), COUNTER, "reads_total", "Client read requests.", "reads", false },
	{ VS(writes), COUNTER, "writes_total", "Client write requests (write-zeroes included).", "writes", false },
	{ VS(flushes), COUNTER, "flushes_total", "Client flush requests.", "flushes", false },
	{ VS(discards), COUNTER, "discards_total", "Client discard requests.", "discards", false },
	{ VS(write_zeroes), COUNTER, "write_zeroes_total", "Client write-zeroes requests.", "write_zeroes", false },
	{ VS(bytes_read), COUNTER, "read_bytes_total", "Bytes read by clients.", "bytes_read", false },
	{ VS(bytes_written), COUNTER, "written_bytes_total", "Bytes written by clients.", "bytes_written", false },
	{ VS(read_hits), COUNTER, "read_hits_total", "Cache lines read that were full hits.", "read_hits", false },
	{ VS(read_partial_hits), COUNTER, "read_partial_hits_total", "Cache lines read that were partial hits.", "read_partial_hits", false },
	{ VS(read_misses), COUNTER, "read_misses_total", "Cache lines read that missed.", "read_misses", false },
	{ VS(write_hits), COUNTER, "write_hits_total", "Cache lines written that were full hits.", "write_hits", false },
	{ VS(write_partial_hits), COUNTER, "write_partial_hits_total", "Cache lines written that were partial hits.", "write_partial_hits", false },
	{ VS(write_misses), COUNTER, "write_misses_total", "Cache lines written that missed.", "write_misses", false },
	{ VS(promotions), COUNTER, "promotions_total", "Cache lines filled or allocated (promotions).", "promotions", false },
	{ VS(evictions), COUNTER, "evictions_total", "Cache lines of the volume evicted.", "evictions", false },
	{ VS(bypassed_seq), COUNTER, "bypassed_sequential_total", "Requests that bypassed the cache: sequential cutoff.", "bypassed_seq", false },
	{ VS(seq_kept_dirty_stripe), COUNTER, "sequential_kept_dirty_stripe_total", "Sequential writes kept in the cache because their stripe of a parity backing held dirty data.", "seq_kept_dirty_stripe", false },
	{ VS(bypassed_admission), COUNTER, "bypassed_admission_total", "Read misses not filled: admission refused them.", "bypassed_admission", false },
	{ VS(bypassed_bytes), COUNTER, "bypassed_bytes_total", "Bytes that went around the cache (sequential bypass, unfilled misses).", "bypassed_bytes", false },
	{ VS(dirty_bytes), GAUGE, "dirty_bytes", "Dirty bytes held in the cache now.", "dirty_bytes", true },
	{ VS(cached_bytes), GAUGE, "cached_bytes", "Valid bytes held in the cache now.", "cached_bytes", true },
	{ VS(resident_bytes), GAUGE, "resident_bytes", "Bytes of whole cache lines the volume holds now.", "resident_bytes", false },
	{ VS(backing_stripe), GAUGE, "backing_stripe_bytes", "The backing's full stripe (0: none).", "backing_stripe", false },
	{ VS(instant_bytes), COUNTER, "instant_writeback_bytes_total", "Bytes of full-stripe writes made dirty at once (instant write-back).", "instant_bytes", false },
	{ VS(full_stripe_bytes), COUNTER, "full_stripe_bytes_total", "Bytes of whole-stripe writes sent to the backing uncached.", "full_stripe_bytes", false },
	{ VS(stream_rate_cache), GAUGE, "stream_rate_cache_bytes_per_second", "Rate of whole-stripe writes made dirty at once (EWMA; 0: not measured).", "stream_rate_cache", false },
	{ VS(stream_rate_backing), GAUGE, "stream_rate_backing_bytes_per_second", "Rate of whole-stripe writes written to the backing (EWMA; 0: not measured).", "stream_rate_backing", false },
	{ VS(writeback_bytes), COUNTER, "writeback_bytes_total", "Dirty bytes written back by the cleaner.", "writeback_bytes", false },
	{ VS(writeback_ios), COUNTER, "writeback_ios_total", "Writeback requests of the cleaner.", "writeback_ios", false },
	{ VS(writeback_full_stripes), COUNTER, "writeback_full_stripes_total", "Whole stripes of the backing the cleaner wrote, each in one request.", "writeback_full_stripes", false },
	{ VS(writeback_stripes_completed), COUNTER, "writeback_stripes_completed_total", "Stripes the cleaner completed with clean cached data before writing them whole.", "writeback_stripes_completed", false },
	{ VS(writeback_fill_bytes), COUNTER, "writeback_fill_bytes_total", "Clean bytes the cleaner wrote to complete stripes.", "writeback_fill_bytes", false },
	{ VS(writeback_stripes_reconstructed), COUNTER, "writeback_stripes_reconstructed_total", "Stripes the cleaner completed with data read from the backing before writing them whole.", "writeback_stripes_reconstructed", false },
	{ VS(writeback_backing_read_bytes), COUNTER, "writeback_backing_read_bytes_total", "Bytes the cleaner read from the backing to complete stripes.", "writeback_backing_read_bytes", false },
	{ VS(writeback_rate), GAUGE, "writeback_rate_bytes_per_second", "Writeback rate over the last second.", "writeback_rate", false },
	{ VS(errors), COUNTER, "errors_total", "Client requests completed with an error.", "errors", false },
	{ VS(cache_errors), COUNTER, "cache_errors_total", "Cache device errors met by the volume.", "cache_errors", false },
	{ VS(backing_errors), COUNTER, "backing_errors_total", "Backing device errors met by the volume.", "backing_errors", false },
	{ VS(fallback_pt), BOOL, "fallback_passthrough", "1 when the volume runs pass-through after cache device errors.", "fallback_pt", false },
	{ VS(draining), BOOL, "draining", "1 while a flush, detach or policy change drains the volume.", "draining", false },
	{ VS(cache_bytes_read), COUNTER, "cache_device_read_bytes_total", "Bytes of the volume's cache lines read from the cache device.", "cache_device.bytes_read", false },
	{ VS(cache_bytes_written), COUNTER, "cache_device_written_bytes_total", "Bytes of the volume's cache lines written to the cache device.", "cache_device.bytes_written", false },
	{ VS(cache_fill_bytes), COUNTER, "cache_device_fill_written_bytes_total", "Of those written, fills of read misses.", "cache_device.fill_bytes_written", false },
	{ VS(cache_writeback_read_bytes), COUNTER, "cache_device_writeback_read_bytes_total", "Of those read, reads of the cleaner.", "cache_device.writeback_bytes_read", false },
};

/* The backing device's own counters (struct tc_dev_stats). */
#define DS(field) offsetof(struct tc_dev_stats, field)
static const struct dev_field {
	size_t off;
	const char *name;
	const char *help;
	const char *key;
} dev_fields[] = {
	{ DS(reads), "reads_total", "Read requests of the device.", "reads" },
	{ DS(writes), "writes_total", "Write requests of the device.", "writes" },
	{ DS(flushes), "flushes_total", "Flush requests of the device.", "flushes" },
	{ DS(discards), "discards_total", "Discard requests of the device.", "discards" },
	{ DS(write_zeroes), "write_zeroes_total", "Write-zeroes requests of the device.", "write_zeroes" },
	{ DS(bytes_read), "read_bytes_total", "Bytes read from the device.", "bytes_read" },
	{ DS(bytes_written), "written_bytes_total", "Bytes written to the device.", "bytes_written" },
	{ DS(errors), "errors_total", "Requests of the device that failed.", "errors" },
};

/* The unsigned field of @size bytes (1: a bool or uint8_t, 4, 8) at @off of @base. */
static uint64_t field_u64(const void *base, size_t off, size_t size)
{
	const char *p = (const char *)base + off;
	return size == 1 ? *(const uint8_t *)p : size == 4 ? *(const uint32_t *)p :
	       *(const uint64_t *)p;
}

static void write_volumes(FILE *f, const struct ctl_snap *s)
{
	char name[128], help[256];
	family(f, "tiercache_volume_info", "gauge",
	       "The volume's devices and write policies: always 1 "
	       "(status --json: volumes[].backing, cache, settings.write_policy, "
	       "effective_policy, policy_reason).");
	for (unsigned i = 0; i < s->nvol; i++) {
		const struct ctl_vol_snap *v = &s->vol[i];
		const char *l[] = { "volume", v->name, "backing", v->info.backing ? v->info.backing : "",
				    "cache", v->info.cache ? v->info.cache : "",
				    "write_policy", v->engine || !strcmp(v->state, "no-backing") ?
				    tc_write_policy_name(v->set.write_policy) : "",
				    "effective_policy", v->engine ?
				    tc_write_policy_name(v->st.effective_policy) : "",
				    "policy_reason", v->engine && v->st.policy_reason ?
				    v->st.policy_reason : "", NULL };
		sample_u64(f, "tiercache_volume_info", l, 1);
	}
	static const char *const states[] = { "cached", "uncached", "degraded", "no-backing" };
	family(f, "tiercache_volume_state", "gauge",
	       "1 for the state the volume is in, 0 for the others (status --json: volumes[].state).");
	for (unsigned i = 0; i < s->nvol; i++) {
		const char *l[] = { "volume", s->vol[i].name, NULL };
		sample_states(f, "tiercache_volume_state", l, "state", states, 4, s->vol[i].state);
	}
	family(f, "tiercache_volume_size_bytes", "gauge",
	       "The volume's size (status --json: volumes[].size).");
	for (unsigned i = 0; i < s->nvol; i++) {
		const char *l[] = { "volume", s->vol[i].name, NULL };
		sample_u64(f, "tiercache_volume_size_bytes", l, s->vol[i].info.size);
	}
	family(f, "tiercache_volume_pinned_bytes", "gauge",
	       "Bytes of cache lines the volume holds pinned (status --json: volumes[].pinned_bytes).");
	for (unsigned i = 0; i < s->nvol; i++) {
		const char *l[] = { "volume", s->vol[i].name, NULL };
		if (s->vol[i].engine)
			sample_u64(f, "tiercache_volume_pinned_bytes", l, s->vol[i].pinned);
	}
	for (size_t k = 0; k < sizeof(vol_fields) / sizeof(vol_fields[0]); k++) {
		const struct field *vf = &vol_fields[k];
		snprintf(name, sizeof(name), "tiercache_volume_%s", vf->name);
		snprintf(help, sizeof(help), "%.*s (stats --json: %s).", (int)strlen(vf->help) - 1,
			 vf->help, vf->key);
		family(f, name, vf->kind == COUNTER ? "counter" : "gauge", help);
		for (unsigned i = 0; i < s->nvol; i++) {
			const struct ctl_vol_snap *v = &s->vol[i];
			const char *l[] = { "volume", v->name, NULL };
			if (v->engine || (vf->absent_too && !strcmp(v->state, "no-backing")))
				sample_u64(f, name, l, field_u64(&v->st, vf->off, vf->size));
		}
	}
	for (size_t k = 0; k < sizeof(dev_fields) / sizeof(dev_fields[0]); k++) {
		snprintf(name, sizeof(name), "tiercache_volume_backing_device_%s", dev_fields[k].name);
		snprintf(help, sizeof(help), "%.*s (stats --json: backing_device.%s).",
			 (int)strlen(dev_fields[k].help) - 1, dev_fields[k].help, dev_fields[k].key);
		family(f, name, "counter", help);
		for (unsigned i = 0; i < s->nvol; i++) {
			const struct ctl_vol_snap *v = &s->vol[i];
			const char *l[] = { "volume", v->name, NULL };
			if (v->engine)
				sample_u64(f, name, l, *(const uint64_t *)((const char *)&v->st.backing +
									 dev_fields[k].off));
		}
	}
}

/*
 * The latency histograms as one Prometheus histogram: bounds at the powers of two from
 * 2^10 ns (1.024 us) to 2^36 ns (68.7 s), which are bucket boundaries of struct tc_hist,
 * so every cumulative count is exact (tc_hist_count_below).  A bucket counts the values
 * below its bound (le is inclusive in Prometheus; at nanosecond resolution the two
 * differ only for a value of exactly 2^k ns).
 */
#define LAT_LOW_BIT 10
#define LAT_HIGH_BIT 36

static void write_latency(FILE *f, const struct ctl_snap *s)
{
	const char *name = "tiercache_volume_request_latency_seconds";
	family(f, name, "histogram",
	       "Client request latency by class: read_hit, read_miss, write_hit, write_miss, "
	       "from submission to completion (stats --json: latency.CLASS.buckets, count).");
	for (unsigned i = 0; i < s->nvol; i++) {
		const struct ctl_vol_snap *v = &s->vol[i];
		if (!v->engine)
			continue;
		for (unsigned c = 0; c < TC_LAT__COUNT; c++) {
			const struct tc_hist *h = v->lat[c];
			char le[32];
			const char *l[] = { "volume", v->name, "class", tc_lat_class_name(c), "le", le,
					    NULL };
			for (unsigned k = LAT_LOW_BIT; k <= LAT_HIGH_BIT; k++) {
				uint64_t ns = 1ull << k;
				snprintf(le, sizeof(le), "%" PRIu64 ".%09" PRIu64, ns / 1000000000u,
					 ns % 1000000000u);
				series(f, name, "_bucket", l);
				fprintf(f, "%" PRIu64 "\n", tc_hist_count_below(h, ns));
			}
			snprintf(le, sizeof(le), "+Inf");
			series(f, name, "_bucket", l);
			fprintf(f, "%" PRIu64 "\n", h->count);
			l[4] = NULL;
			series(f, name, "_sum", l);
			fprintf(f, "%.9Lf\n", h->sum / 1e9L);
			series(f, name, "_count", l);
			fprintf(f, "%" PRIu64 "\n", h->count);
		}
	}
}

/* ---- caches ---------------------------------------------------------------------- */

#define CS(field) offsetof(struct tc_cache_stats, field), sizeof(((struct tc_cache_stats *)0)->field)

static const struct field cache_fields[] = {
	{ CS(lines), GAUGE, "lines", "Cache lines of the cache device.", "status --json: caches[].lines", false },
	{ CS(lines_used), GAUGE, "lines_used", "Cache lines holding data now.", "status --json: caches[].lines_used", false },
	{ CS(lines_dirty), GAUGE, "lines_dirty", "Cache lines holding dirty data now.", "status --json: caches[].lines_dirty", false },
	{ CS(line_size), GAUGE, "line_size_bytes", "The cache line size.", "status --json: caches[].line_size", false },
	{ CS(dirty_bytes), GAUGE, "dirty_bytes", "Dirty bytes of every volume of the cache.", "status --json: caches[].dirty_bytes", false },
	{ CS(commits), COUNTER, "metadata_commits_total", "Metadata commits.", "stats --json: cache.commits", false },
	{ CS(commit_blocks), COUNTER, "metadata_commit_blocks_total", "4 KiB metadata blocks written by commits.", "tc_cache_stats_json: commit_blocks", false },
	{ CS(metadata_bytes_written), COUNTER, "metadata_written_bytes_total", "Metadata bytes written.", "stats --json: cache.metadata_bytes_written", false },
	{ CS(mem_bytes_per_line), GAUGE, "memory_bytes_per_line", "RAM per cache line: metadata, index and replacement links.", "tc_cache_stats_json: mem_bytes_per_line", false },
	{ CS(mem_ghost_bytes), GAUGE, "memory_ghost_bytes", "RAM of the replacement policy's ghosts.", "tc_cache_stats_json: mem_ghost_bytes", false },
	{ CS(mem_admission_bytes), GAUGE, "memory_admission_bytes", "RAM of the admission history.", "tc_cache_stats_json: mem_admission_bytes", false },
	{ CS(mem_csum_bytes), GAUGE, "memory_checksum_bytes", "RAM of the checksums of cached data.", "tc_cache_stats_json: mem_csum_bytes", false },
	{ CS(mem_dirty_index_bytes), GAUGE, "memory_dirty_index_bytes", "RAM of the volumes' dirty indexes (dirty data by stripe).", "tc_cache_stats_json: mem_dirty_index_bytes", false },
	{ CS(checksums), BOOL, "checksums", "1 when cached data is checked on every read back.", "stats --json: cache.checksums", false },
	{ CS(redundancy), GAUGE, "redundancy", "Member failures the cache device survives now.", "status --json: caches[].redundancy", false },
	{ CS(unprotected_writeback), BOOL, "unprotected_writeback", "1 when write-back is allowed without redundancy.", "status --json: caches[].unprotected_writeback", false },
	{ CS(writeback_held), BOOL, "writeback_held", "1 while write-back volumes run write-through (cache degraded or unprotected).", "status --json: caches[].writeback_held", false },
	{ CS(csum_errors), COUNTER, "checksum_errors_total", "4 KiB units read back that failed their checksum.", "stats --json: cache.csum_errors", false },
	{ CS(recovered_dirty_lines), GAUGE, "recovered_dirty_lines", "Dirty cache lines recovered at open.", "tc_cache_stats_json: recovered_dirty_lines", false },
	{ CS(recovered_dropped_lines), GAUGE, "recovered_dropped_lines", "Cache lines dropped by recovery at open.", "tc_cache_stats_json: recovered_dropped_lines", false },
};

static void write_caches(FILE *f, const struct ctl_snap *s)
{
	char name[128], help[256];
	for (size_t k = 0; k < sizeof(cache_fields) / sizeof(cache_fields[0]); k++) {
		const struct field *cf = &cache_fields[k];
		snprintf(name, sizeof(name), "tiercache_cache_%s", cf->name);
		snprintf(help, sizeof(help), "%.*s (%s).", (int)strlen(cf->help) - 1, cf->help,
			 cf->key);
		family(f, name, cf->kind == COUNTER ? "counter" : "gauge", help);
		for (unsigned i = 0; i < s->ncache; i++) {
			const char *l[] = { "cache", s->cache[i].spec, NULL };
			sample_u64(f, name, l, field_u64(&s->cache[i].st, cf->off, cf->size));
		}
	}
	family(f, "tiercache_cache_recovery_seconds", "gauge",
	       "Time spent loading metadata at open (tc_cache_stats_json: recovery_ns).");
	for (unsigned i = 0; i < s->ncache; i++) {
		const char *l[] = { "cache", s->cache[i].spec, NULL };
		sample_ns(f, "tiercache_cache_recovery_seconds", l, s->cache[i].st.recovery_ns);
	}
	for (size_t k = 0; k < sizeof(dev_fields) / sizeof(dev_fields[0]); k++) {
		snprintf(name, sizeof(name), "tiercache_cache_device_%s", dev_fields[k].name);
		snprintf(help, sizeof(help), "%.*s, all of its traffic (stats --json: cache.%s).",
			 (int)strlen(dev_fields[k].help) - 1, dev_fields[k].help, dev_fields[k].key);
		family(f, name, "counter", help);
		for (unsigned i = 0; i < s->ncache; i++) {
			const char *l[] = { "cache", s->cache[i].spec, NULL };
			sample_u64(f, name, l, *(const uint64_t *)((const char *)&s->cache[i].st.dev +
								 dev_fields[k].off));
		}
	}
}

/* ---- arrays and members ---------------------------------------------------------- */

#define AS(field) offsetof(struct tc_array_status, field), \
	sizeof(((struct tc_array_status *)0)->field), GAUGE
#define ASC(field) offsetof(struct tc_array_status, field), \
	sizeof(((struct tc_array_status *)0)->field), COUNTER

/* The numbers of struct tc_array_status (status --json: arrays[]). */
static const struct field array_fields[] = {
	{ AS(chunk), "chunk_bytes", "The chunk size.", "chunk", false },
	{ AS(copies), "copies", "Copies of every chunk (RAID 1/10; else 1).", "copies", false },
	{ AS(size), "size_bytes", "The array's size.", "size", false },
	{ AS(member_size), "used_per_member_bytes", "Bytes used on every member.", "member_size", false },
	{ AS(members), "members", "Members in the array, faulty ones included.", "members (length)", false },
	{ AS(faulty), "faulty_members", "Members faulty now.", "faulty", false },
	{ AS(spares), "spares", "Hot spares.", "spares (length)", false },
	{ AS(sync_pos), "sync_position_bytes", "Member bytes done by the running or last pass (rebuild, check).", "sync_pos", false },
	{ AS(sync_end), "sync_end_bytes", "Member bytes in the pass.", "sync_end", false },
	{ AS(sync_rate), "sync_rate_bytes_per_second", "Rate of the pass per member.", "sync_rate", false },
	{ AS(mismatches), "check_mismatches", "Chunks or stripes that disagreed in the running or last check.", "mismatches", false },
	{ AS(checked), "check_windows", "Windows compared in the running or last check.", "checked", false },
	{ AS(ppl), "partial_parity_log", "1 when partial-stripe updates go through the partial-parity log.", "ppl", false },
	{ AS(map_regions), "write_intent_regions", "Regions of the write-intent map (0: no map).", "map_regions", false },
	{ AS(map_dirty), "write_intent_dirty_regions", "Regions of the write-intent map set now.", "map_dirty", false },
	{ AS(map_region_size), "write_intent_region_bytes", "Member bytes per write-intent region.", "map_region_size", false },
	{ AS(written_map_regions), "written_map_regions", "Regions of the record of regions ever written (0: no record).", "written_map_regions", false },
	{ AS(written_regions), "written_regions", "Regions written since the array was created (a rebuild writes zeros to the others).", "written_regions", false },
	{ ASC(stripe_writes_full), "stripe_writes_full_total", "RAID 5/6 write stripe operations that rewrote every data chunk and read nothing.", "stripe_writes_full", false },
	{ ASC(stripe_writes_rcw), "stripe_writes_reconstruct_total", "RAID 5/6 write stripe operations made by reconstruct-write.", "stripe_writes_rcw", false },
	{ ASC(stripe_writes_rmw), "stripe_writes_read_modify_write_total", "RAID 5/6 write stripe operations made by read-modify-write.", "stripe_writes_rmw", false },
	{ ASC(stripe_writes_degraded), "stripe_writes_degraded_total", "RAID 5/6 write stripe operations with a member missing or unreadable.", "stripe_writes_degraded", false },
	{ AS(rebuild.min_rate), "rebuild_min_rate_bytes_per_second", "Rebuild rate floor per member.", "rebuild.min_rate", false },
	{ AS(rebuild.max_rate), "rebuild_max_rate_bytes_per_second", "Rebuild rate ceiling per member (18446744073709551615: unlimited).", "rebuild.max_rate", false },
	{ AS(rebuild.priority), "rebuild_priority", "Rebuild priority, 0..100.", "rebuild.priority", false },
	{ AS(rebuild.depth), "rebuild_depth", "Rebuild windows in flight.", "rebuild.depth", false },
};

/* The host's global hot spares: how many, and each one's size. */
static void write_spares(FILE *f, const struct ctl_snap *s)
{
	family(f, "tiercache_global_spares", "gauge",
	       "Global hot spares in the server's pool, waiting for an array to need one "
	       "(status --json: global_spares (length)).");
	sample_u64(f, "tiercache_global_spares", NULL, s->nspare);
	family(f, "tiercache_global_spare_size_bytes", "gauge",
	       "A global hot spare's size (status --json: global_spares[].size).");
	for (unsigned i = 0; i < s->nspare; i++) {
		const char *l[] = { "device", s->spare[i].spec, NULL };
		sample_u64(f, "tiercache_global_spare_size_bytes", l, s->spare[i].size);
	}
}

static void write_arrays(FILE *f, const struct ctl_snap *s)
{
	char name[128], help[256];
	static const char *const states[] = { "active", "degraded", "failed" };
	family(f, "tiercache_array_state", "gauge",
	       "1 for the state the array is in, 0 for the others (status --json: arrays[].state).");
	for (unsigned i = 0; i < s->narray; i++) {
		const char *l[] = { "array", s->array[i].name, NULL };
		sample_states(f, "tiercache_array_state", l, "state", states, 3,
			      ctl_array_state_name(s->array[i].st));
	}
	family(f, "tiercache_array_info", "gauge",
	       "The array's level and device: always 1 (status --json: arrays[].level, device).");
	for (unsigned i = 0; i < s->narray; i++) {
		const char *l[] = { "array", s->array[i].name, "level",
				    tc_raid_level_name(s->array[i].st->level), "device",
				    s->array[i].spec ? s->array[i].spec : "", NULL };
		sample_u64(f, "tiercache_array_info", l, 1);
	}
	family(f, "tiercache_array_redundancy", "gauge",
	       "Further member failures the array survives now; -1: failed (status --json: arrays[].redundancy).");
	for (unsigned i = 0; i < s->narray; i++) {
		const char *l[] = { "array", s->array[i].name, NULL };
		series(f, "tiercache_array_redundancy", NULL, l);
		fprintf(f, "%d\n", s->array[i].st->redundancy);
	}
	static const char *const syncs[] = { "idle", "rebuild", "check", "repair" };
	family(f, "tiercache_array_sync", "gauge",
	       "1 for the background pass running now, 0 for the others (status --json: arrays[].sync).");
	for (unsigned i = 0; i < s->narray; i++) {
		const char *l[] = { "array", s->array[i].name, NULL };
		sample_states(f, "tiercache_array_sync", l, "sync", syncs, 4,
			      ctl_sync_name(s->array[i].st->sync));
	}
	family(f, "tiercache_array_sync_eta_seconds", "gauge",
	       "Time left of the running pass at its rate; 0 when idle or unknown (status --json: arrays[].sync_eta_ns).");
	for (unsigned i = 0; i < s->narray; i++) {
		const char *l[] = { "array", s->array[i].name, NULL };
		sample_ns(f, "tiercache_array_sync_eta_seconds", l, s->array[i].st->sync_eta_ns);
	}
	for (size_t k = 0; k < sizeof(array_fields) / sizeof(array_fields[0]); k++) {
		const struct field *af = &array_fields[k];
		snprintf(name, sizeof(name), "tiercache_array_%s", af->name);
		snprintf(help, sizeof(help), "%.*s (status --json: arrays[].%s).",
			 (int)strlen(af->help) - 1, af->help, af->key);
		family(f, name, "gauge", help);
		for (unsigned i = 0; i < s->narray; i++) {
			const char *l[] = { "array", s->array[i].name, NULL };
			sample_u64(f, name, l, field_u64(s->array[i].st, af->off, af->size));
		}
	}
	/* Members, by slot, and the spares and retired members ("extra"). */
	static const char *const mstates[] = { "active", "faulty", "spare", "rebuilding",
					       "replaced" };
	family(f, "tiercache_array_member_state", "gauge",
	       "1 for the member's state, 0 for the others; slot \"\" for spares and retired "
	       "members (status --json: arrays[].members[].state, extra[].state).");
	for (unsigned i = 0; i < s->narray; i++) {
		const struct tc_array_status *st = s->array[i].st;
		for (unsigned m = 0; m < st->members + st->nextra; m++) {
			const struct tc_array_member_status *ms = m < st->members ? &st->member[m] :
				&st->extra[m - st->members];
			char slot[16] = "";
			if (m < st->members)
				snprintf(slot, sizeof(slot), "%u", m);
			const char *l[] = { "array", s->array[i].name, "slot", slot, "device",
					    ms->name ? ms->name : "", NULL };
			sample_states(f, "tiercache_array_member_state", l, "state", mstates, 5,
				      ctl_member_state_name(ms->state));
		}
	}
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} mfields[] = {
		{ "tiercache_array_member_size_bytes", "gauge",
		  "The member device's size (status --json: arrays[].members[].size).",
		  offsetof(struct tc_array_member_status, size) },
		{ "tiercache_array_member_read_errors_total", "counter",
		  "Reads of the member that failed (status --json: arrays[].members[].read_errors).",
		  offsetof(struct tc_array_member_status, read_errors) },
		{ "tiercache_array_member_corrected_total", "counter",
		  "Failed reads rewritten from the other members (status --json: arrays[].members[].corrected).",
		  offsetof(struct tc_array_member_status, corrected) },
	};
	for (size_t k = 0; k < sizeof(mfields) / sizeof(mfields[0]); k++) {
		family(f, mfields[k].name, mfields[k].type, mfields[k].help);
		for (unsigned i = 0; i < s->narray; i++) {
			const struct tc_array_status *st = s->array[i].st;
			for (unsigned m = 0; m < st->members; m++) {
				char slot[16];
				snprintf(slot, sizeof(slot), "%u", m);
				const char *l[] = { "array", s->array[i].name, "slot", slot, "device",
						    st->member[m].name ? st->member[m].name : "", NULL };
				sample_u64(f, mfields[k].name, l,
					   *(const uint64_t *)((const char *)&st->member[m] +
							       mfields[k].off));
			}
		}
	}
}

int ctl_metrics_write(tc_host *host, FILE *out)
{
	struct ctl_snap s;
	int r = ctl_snap_take(host, &s);
	if (r)
		return r;
	write_volumes(out, &s);
	write_latency(out, &s);
	write_caches(out, &s);
	write_arrays(out, &s);
	write_spares(out, &s);
	ctl_snap_free(&s);
	return ferror(out) ? -ENOMEM : 0;
}
