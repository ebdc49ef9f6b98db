/* SPDX-License-Identifier: MIT */
/*
 * report.c - the tables and JSON of a replay (see report.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* ------------------------------------------------------------------------------------
 * Figures.
 */

/* A ratio, or NaN when the denominator is 0 (printed n/a, JSON null). */
static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : NAN;
}

struct figures {
	double hit, read_hit, write_hit;
	double byte_hit, read_byte_hit, write_byte_hit;
	double line_hit, read_line_hit, write_line_hit;
	double page_hit, read_page_hit, write_page_hit;
	double iops, bps;
};

static void figures_of(const struct replay_result *r, struct figures *f)
{
	const struct tc_volume_stats *vs = &r->vs;

	if (!r->library) {
		f->hit = f->read_hit = f->write_hit = NAN;
		f->byte_hit = f->read_byte_hit = f->write_byte_hit = NAN;
		f->line_hit = f->read_line_hit = f->write_line_hit = NAN;
		f->page_hit = f->read_page_hit = f->write_page_hit = NAN;
	} else {
		f->hit = ratio(r->read_hits + r->write_hits, r->requests);
		f->read_hit = ratio(r->read_hits, r->reads);
		f->write_hit = ratio(r->write_hits, r->writes);
		f->byte_hit = ratio(r->read_hit_bytes + r->write_hit_bytes,
				    r->read_bytes + r->write_bytes);
		f->read_byte_hit = ratio(r->read_hit_bytes, r->read_bytes);
		f->write_byte_hit = ratio(r->write_hit_bytes, r->write_bytes);
		uint64_t rl = vs->read_hits + vs->read_partial_hits + vs->read_misses;
		uint64_t wl = vs->write_hits + vs->write_partial_hits + vs->write_misses;
		f->line_hit = ratio(vs->read_hits + vs->write_hits, rl + wl);
		f->read_line_hit = ratio(vs->read_hits, rl);
		f->write_line_hit = ratio(vs->write_hits, wl);
		f->page_hit = ratio(r->read_page_hits + r->write_page_hits,
				    r->read_pages + r->write_pages);
		f->read_page_hit = ratio(r->read_page_hits, r->read_pages);
		f->write_page_hit = ratio(r->write_page_hits, r->write_pages);
	}
	double secs = (double)r->elapsed_ns / 1e9;
	f->iops = secs > 0 ? (double)r->requests / secs : NAN;
	f->bps = secs > 0 ? (double)(r->read_bytes + r->write_bytes) / secs : NAN;
}

static double fraction_of(const struct replay_result *r, const struct replay_map *m)
{
	return m->footprint ? (double)r->cache_bytes / (double)m->footprint : NAN;
}

/* Histogram bounds, ns: 1-2-5 steps from 1 us to 100 s. */
static const uint64_t lat_bounds[] = {
	1000ull, 2000ull, 5000ull, 10000ull, 20000ull, 50000ull, 100000ull, 200000ull,
	500000ull, 1000000ull, 2000000ull, 5000000ull, 10000000ull, 20000000ull, 50000000ull,
	100000000ull, 200000000ull, 500000000ull, 1000000000ull, 2000000000ull,
	5000000000ull, 10000000000ull, 20000000000ull, 50000000000ull, 100000000000ull,
};
#define NBOUNDS (sizeof(lat_bounds) / sizeof(lat_bounds[0]))

/* Counts per bound: values in (previous bound, bound]; the last slot is above all. */
static void lat_bins(const struct tc_hist *h, uint64_t *bins)
{
	uint64_t prev = 0;

	for (size_t i = 0; i < NBOUNDS; i++) {
		uint64_t below = tc_hist_count_below(h, lat_bounds[i] + 1);
		bins[i] = below - prev;
		prev = below;
	}
	bins[NBOUNDS] = h->count - prev;
}

static const char *us_text(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	return buf;
}

static const char *ratio_text(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.4f", v);
	return buf;
}

/* ------------------------------------------------------------------------------------
 * Table output.
 */

void report_print_trace(const struct trace *t, const struct replay_map *m,
			const struct report_cfg *c)
{
	char h1[32], h2[32], h3[32];

	printf("trace     %s (%s", t->path, trace_fmt_name(t->fmt));
	if (t->fmt == TRACE_VSCSI)
		printf(" v%d", t->vscsi_version);
	printf(", %s)\n", t->comp == RSTREAM_COMP_NONE ? "uncompressed" : rstream_comp_name(t->comp));
	printf("          %zu requests (%.1f %% reads), %s read, %s written, %.1f s of trace "
	       "time\n", t->n, 100.0 * (double)t->reads / (double)t->n,
	       tc_size_format(t->read_bytes, h1, sizeof(h1)), tc_size_format(t->write_bytes, h2, sizeof(h2)),
	       (double)t->duration_ns / 1e9);
	printf("          %" PRIu64 " records; skipped: %" PRIu64 " other commands, %" PRIu64
	       " empty, %" PRIu64 " other volumes, %" PRIu64 " malformed; %" PRIu64
	       " unaligned, %" PRIu64 " cut%s%s\n", t->records, t->skipped_op, t->skipped_empty,
	       t->skipped_volume, t->bad, t->unaligned, t->clipped,
	       t->sorted ? ", sorted by time" : "", t->limited ? ", stopped at --limit" : "");
	if (t->bad)
		printf("          first malformed record: %s\n", t->first_bad);
	printf("layout    %" PRIu32 " source volume%s of %" PRIu32 " in the trace%s%s; volume %s "
	       "(extents %s); %" PRIu64 " requests folded; footprint %s\n",
	       m->regions, m->regions == 1 ? "" : "s", t->nvols,
	       c->trace_volume ? ": " : "", c->trace_volume ? c->trace_volume : "",
	       tc_size_format(m->total, h1, sizeof(h1)), tc_size_format(m->extent, h2, sizeof(h2)),
	       m->folded, tc_size_format(m->footprint, h3, sizeof(h3)));
}

static void print_lat_row(const char *name, const struct tc_hist *h)
{
	char a[6][24];

	if (!h->count) {
		printf("  %-6s %10s\n", name, "-");
		return;
	}
	printf("  %-6s %10s %10s %10s %10s %10s %10s\n", name,
	       us_text((uint64_t)tc_hist_mean(h), a[0], 24),
	       us_text(tc_hist_percentile(h, 50), a[1], 24),
	       us_text(tc_hist_percentile(h, 90), a[2], 24),
	       us_text(tc_hist_percentile(h, 99), a[3], 24),
	       us_text(tc_hist_percentile(h, 99.9), a[4], 24),
	       us_text(h->max, a[5], 24));
}

void report_print_result(const struct replay_result *r, const struct replay_map *m,
			 const struct report_cfg *c)
{
	struct figures f;
	char h1[32], h2[32], h3[32], h4[32], a[3][16];

	figures_of(r, &f);
	if (r->library)
		printf("cache     %s (%" PRIu64 " lines of %s, %.1f %% of the footprint) on %s "
		       "devices; %s, %s\n", tc_size_format(r->cache_bytes, h1, sizeof(h1)),
		       r->cache_lines, tc_size_format(r->line_size, h2, sizeof(h2)),
		       100 * fraction_of(r, m), r->devices,
		       tc_write_policy_name(c->ro->settings.write_policy),
		       tc_replacement_name(c->ro->cache.replacement));
	else
		printf("target    %s (NBD)\n", c->target);
	if (c->ro->queue_depth)
		printf("driving   closed loop, queue depth %u", c->ro->queue_depth);
	else
		printf("driving   timed, speed x%g", c->ro->speed);
	if (c->ro->warmup)
		printf(", %" PRIu64 " warm-up requests not measured", c->ro->warmup);
	printf("%s\n\n", r->interrupted ? "; INTERRUPTED" : "");

	printf("               %12s %12s %12s\n", "read", "write", "all");
	printf("requests       %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", r->reads, r->writes,
	       r->requests);
	printf("bytes          %12s %12s %12s\n", tc_size_format(r->read_bytes, h1, sizeof(h1)),
	       tc_size_format(r->write_bytes, h2, sizeof(h2)),
	       tc_size_format(r->read_bytes + r->write_bytes, h3, sizeof(h3)));
	printf("hit ratio      %12s %12s %12s   (requests wholly in cache)\n",
	       ratio_text(f.read_hit, a[0], 16), ratio_text(f.write_hit, a[1], 16),
	       ratio_text(f.hit, a[2], 16));
	printf("byte hit ratio %12s %12s %12s\n", ratio_text(f.read_byte_hit, a[0], 16),
	       ratio_text(f.write_byte_hit, a[1], 16), ratio_text(f.byte_hit, a[2], 16));
	printf("page hit ratio %12s %12s %12s   (per 4 KiB page referenced)\n",
	       ratio_text(f.read_page_hit, a[0], 16), ratio_text(f.write_page_hit, a[1], 16),
	       ratio_text(f.page_hit, a[2], 16));
	printf("line hit ratio %12s %12s %12s   (engine: per cache line touched)\n",
	       ratio_text(f.read_line_hit, a[0], 16), ratio_text(f.write_line_hit, a[1], 16),
	       ratio_text(f.line_hit, a[2], 16));
	if (isnan(f.iops))
		printf("IOPS           n/a (no time passed on the %s clock%s)\n",
		       r->library ? "virtual" : "real",
		       r->library && strcmp(r->devices, "emu") ? ": these devices take none" : "");
	else
		printf("IOPS           %.1f over %.3f s; %s/s\n", f.iops, (double)r->elapsed_ns / 1e9,
		       tc_size_format((uint64_t)f.bps, h1, sizeof(h1)));
	printf("errors         %" PRIu64 "; late submissions %" PRIu64 "\n\n", r->errors, r->late);

	printf("latency  %10s %10s %10s %10s %10s %10s\n", "mean", "p50", "p90", "p99", "p99.9",
	       "max");
	print_lat_row("read", &r->lat_read);
	print_lat_row("write", &r->lat_write);
	print_lat_row("all", &r->lat);
	if (r->lat.count) {
		uint64_t bins[NBOUNDS + 1], most = 0;
		size_t lo = NBOUNDS + 1, hi = 0;
		lat_bins(&r->lat, bins);
		for (size_t i = 0; i <= NBOUNDS; i++)
			if (bins[i]) {
				if (i < lo)
					lo = i;
				hi = i;
				if (bins[i] > most)
					most = bins[i];
			}
		printf("\nlatency histogram (all requests)\n");
		for (size_t i = lo; i <= hi; i++) {
			char lim[48];
			int len = (int)((double)bins[i] / (double)most * 40 + 0.5);
			if (i < NBOUNDS)
				snprintf(lim, sizeof(lim), "<= %s", us_text(lat_bounds[i], h1, sizeof(h1)));
			else
				snprintf(lim, sizeof(lim), " > %s", us_text(lat_bounds[NBOUNDS - 1], h1,
									  sizeof(h1)));
			printf("  %-12s %10" PRIu64 " %6.2f%% %.*s\n", lim, bins[i],
			       100.0 * (double)bins[i] / (double)r->lat.count, len,
			       "########################################");
		}
	}
	if (r->library) {
		const struct tc_volume_stats *vs = &r->vs;
		printf("\nengine    %" PRIu64 " promotions, %" PRIu64 " evictions, %" PRIu64
		       " sequential bypasses, %" PRIu64 " admission bypasses; cached %s\n",
		       vs->promotions, vs->evictions, vs->bypassed_seq, vs->bypassed_admission,
		       tc_size_format(vs->cached_bytes, h1, sizeof(h1)));
		printf("dirty     peak %s, at the end %s; written back %s in %" PRIu64 " I/Os\n",
		       tc_size_format(r->dirty_peak, h1, sizeof(h1)), tc_size_format(r->dirty_end, h2, sizeof(h2)),
		       tc_size_format(vs->writeback_bytes, h3, sizeof(h3)), vs->writeback_ios);
		printf("backing   %" PRIu64 " reads (%s), %" PRIu64 " writes (%s)\n", r->backing.reads,
		       tc_size_format(r->backing.bytes_read, h1, sizeof(h1)), r->backing.writes,
		       tc_size_format(r->backing.bytes_written, h2, sizeof(h2)));
		printf("cache dev %" PRIu64 " reads (%s), %" PRIu64 " writes (%s)\n", r->cache.reads,
		       tc_size_format(r->cache.bytes_read, h3, sizeof(h3)), r->cache.writes,
		       tc_size_format(r->cache.bytes_written, h4, sizeof(h4)));
	}
	double ws = (double)r->replay_wall_ns / 1e9;
	printf("replay    %.2f s wall (%.2f s with setup), %.0f requests/s", ws,
	       (double)r->wall_ns / 1e9, ws > 0 ? (double)(r->requests) / ws : 0.0);
	if (r->library && ws > 0 && r->elapsed_ns)
		printf(", %.1fx the virtual clock", (double)r->elapsed_ns / 1e9 / ws);
	printf("\n");
}

/* ------------------------------------------------------------------------------------
 * JSON output.
 */

static json_object *jnum(double v)
{
	return isnan(v) || isinf(v) ? NULL : json_object_new_double(v);
}

/* ssd_per_host - SSD endurance figure: bytes the cache device was written (fills,
 * client writes, metadata) per byte the host read or wrote; NaN (null) without a
 * library run or host bytes. */
static double ssd_per_host(const struct replay_result *r)
{
	uint64_t host = r->read_bytes + r->write_bytes;

	return r->library && host ? (double)r->cache.bytes_written / (double)host : NAN;
}

static json_object *ju64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static void jadd(json_object *o, const char *k, json_object *v)
{
	json_object_object_add(o, k, v);
}

static json_object *jlat(const struct tc_hist *h)
{
	json_object *o = json_object_new_object();

	jadd(o, "count", ju64(h->count));
	if (!h->count) {
		const char *keys[] = { "mean", "min", "p50", "p90", "p99", "p999", "max" };
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			jadd(o, keys[i], NULL);
		return o;
	}
	jadd(o, "mean", jnum(tc_hist_mean(h) / 1e3));
	jadd(o, "min", jnum((double)h->min / 1e3));
	jadd(o, "p50", jnum((double)tc_hist_percentile(h, 50) / 1e3));
	jadd(o, "p90", jnum((double)tc_hist_percentile(h, 90) / 1e3));
	jadd(o, "p99", jnum((double)tc_hist_percentile(h, 99) / 1e3));
	jadd(o, "p999", jnum((double)tc_hist_percentile(h, 99.9) / 1e3));
	jadd(o, "max", jnum((double)h->max / 1e3));
	return o;
}

static json_object *jdev(const struct tc_dev_stats *d)
{
	json_object *o = json_object_new_object();

	jadd(o, "reads", ju64(d->reads));
	jadd(o, "writes", ju64(d->writes));
	jadd(o, "bytes_read", ju64(d->bytes_read));
	jadd(o, "bytes_written", ju64(d->bytes_written));
	jadd(o, "flushes", ju64(d->flushes));
	jadd(o, "errors", ju64(d->errors));
	return o;
}

json_object *report_json_trace(const struct trace *t, const struct replay_map *m,
			   const struct report_cfg *c, json_object **layout)
{
	json_object *j = json_object_new_object();

	jadd(j, "path", json_object_new_string(t->path));
	jadd(j, "format", json_object_new_string(trace_fmt_name(t->fmt)));
	if (t->fmt == TRACE_VSCSI)
		jadd(j, "vscsi_version", json_object_new_int(t->vscsi_version));
	jadd(j, "compression", json_object_new_string(rstream_comp_name(t->comp)));
	jadd(j, "records", ju64(t->records));
	jadd(j, "requests", ju64(t->n));
	jadd(j, "reads", ju64(t->reads));
	jadd(j, "writes", ju64(t->writes));
	jadd(j, "read_bytes", ju64(t->read_bytes));
	jadd(j, "write_bytes", ju64(t->write_bytes));
	jadd(j, "duration_s", jnum((double)t->duration_ns / 1e9));
	jadd(j, "source_volumes", ju64(t->nvols));
	jadd(j, "trace_volume", c->trace_volume ? json_object_new_string(c->trace_volume) : NULL);
	jadd(j, "skipped_other_op", ju64(t->skipped_op));
	jadd(j, "skipped_empty", ju64(t->skipped_empty));
	jadd(j, "skipped_other_volume", ju64(t->skipped_volume));
	jadd(j, "malformed", ju64(t->bad));
	jadd(j, "first_malformed", t->bad ? json_object_new_string(t->first_bad) : NULL);
	jadd(j, "unaligned", ju64(t->unaligned));
	jadd(j, "cut", ju64(t->clipped));
	jadd(j, "out_of_order", ju64(t->out_of_order));
	jadd(j, "sorted", json_object_new_boolean(t->sorted));
	jadd(j, "limited", json_object_new_boolean(t->limited));

	json_object *l = json_object_new_object();
	jadd(l, "regions", ju64(m->regions));
	jadd(l, "volume_size", ju64(m->total));
	jadd(l, "extent", ju64(m->extent));
	jadd(l, "folded", ju64(m->folded));
	jadd(l, "footprint", ju64(m->footprint));
	*layout = l;
	return j;
}

/* jadd_settings - the volume settings the replay ran with, beside write_policy. */
static void jadd_settings(json_object *jc, const struct tc_volume_settings *s)
{
	jadd(jc, "read_cache", json_object_new_boolean(s->read_cache));
	jadd(jc, "seq_cutoff", ju64(s->seq_cutoff));
	jadd(jc, "admission", json_object_new_string(tc_admission_name(s->admission)));
	jadd(jc, "nhit", s->admission == TC_ADMIT_NHIT ? ju64(s->nhit) : NULL);
	jadd(jc, "fill", json_object_new_string(tc_fill_name(s->fill)));
	jadd(jc, "flush_rate", json_object_new_string(tc_flush_rate_name(s->flush_rate)));
}

json_object *report_json_result(const struct replay_result *r, const struct replay_map *m,
			    const struct report_cfg *c)
{
	json_object *j = json_object_new_object();
	struct figures f;

	figures_of(r, &f);
	json_object *jc = json_object_new_object();
	jadd(jc, "mode", json_object_new_string(r->library ? "library" : "nbd"));
	jadd(jc, "target", c->target ? json_object_new_string(c->target) : NULL);
	jadd(jc, "devices", json_object_new_string(r->devices ? r->devices : "?"));
	jadd(jc, "driving", json_object_new_string(c->ro->queue_depth ? "closed-loop" : "timed"));
	jadd(jc, "speed", c->ro->queue_depth ? NULL : jnum(c->ro->speed));
	jadd(jc, "queue_depth", c->ro->queue_depth ? ju64(c->ro->queue_depth) : NULL);
	jadd(jc, "warmup", ju64(c->ro->warmup));
	if (r->library) {
		jadd(jc, "cache_bytes", ju64(r->cache_bytes));
		jadd(jc, "cache_lines", ju64(r->cache_lines));
		jadd(jc, "line_size", ju64(r->line_size));
		jadd(jc, "fraction_of_footprint", jnum(fraction_of(r, m)));
		jadd(jc, "write_policy",
		     json_object_new_string(tc_write_policy_name(c->ro->settings.write_policy)));
		jadd(jc, "replacement",
		     json_object_new_string(tc_replacement_name(c->ro->cache.replacement)));
		jadd_settings(jc, &c->ro->settings);
		jadd(jc, "seed", ju64(c->ro->seed));
	}
	jadd(j, "config", jc);

	jadd(j, "requests", ju64(r->requests));
	jadd(j, "reads", ju64(r->reads));
	jadd(j, "writes", ju64(r->writes));
	jadd(j, "read_bytes", ju64(r->read_bytes));
	jadd(j, "write_bytes", ju64(r->write_bytes));
	jadd(j, "errors", ju64(r->errors));
	jadd(j, "late", ju64(r->late));
	jadd(j, "interrupted", json_object_new_boolean(r->interrupted));
	jadd(j, "hit_ratio", jnum(f.hit));
	jadd(j, "read_hit_ratio", jnum(f.read_hit));
	jadd(j, "write_hit_ratio", jnum(f.write_hit));
	jadd(j, "byte_hit_ratio", jnum(f.byte_hit));
	jadd(j, "read_byte_hit_ratio", jnum(f.read_byte_hit));
	jadd(j, "write_byte_hit_ratio", jnum(f.write_byte_hit));
	jadd(j, "line_hit_ratio", jnum(f.line_hit));
	jadd(j, "read_line_hit_ratio", jnum(f.read_line_hit));
	jadd(j, "write_line_hit_ratio", jnum(f.write_line_hit));
	jadd(j, "page_hit_ratio", jnum(f.page_hit));
	jadd(j, "read_page_hit_ratio", jnum(f.read_page_hit));
	jadd(j, "write_page_hit_ratio", jnum(f.write_page_hit));
	jadd(j, "page_miss_ratio", jnum(1 - f.page_hit));
	jadd(j, "iops", jnum(f.iops));
	jadd(j, "throughput_bytes_per_s", jnum(f.bps));
	jadd(j, "elapsed_s", jnum((double)r->elapsed_ns / 1e9));
	jadd(j, "wall_s", jnum((double)r->wall_ns / 1e9));
	jadd(j, "replay_wall_s", jnum((double)r->replay_wall_ns / 1e9));
	jadd(j, "replay_requests_per_s", jnum(r->replay_wall_ns ? (double)r->requests /
					      ((double)r->replay_wall_ns / 1e9) : NAN));

	json_object *lat = jlat(&r->lat);
	jadd(lat, "read", jlat(&r->lat_read));
	jadd(lat, "write", jlat(&r->lat_write));
	jadd(j, "latency_us", lat);
	json_object *hist = json_object_new_array();
	uint64_t bins[NBOUNDS + 1];
	lat_bins(&r->lat, bins);
	for (size_t i = 0; i <= NBOUNDS; i++) {
		json_object *b = json_object_new_object();
		jadd(b, "le", i < NBOUNDS ? jnum((double)lat_bounds[i] / 1e3) : NULL);
		jadd(b, "count", ju64(bins[i]));
		json_object_array_add(hist, b);
	}
	jadd(j, "latency_histogram_us", hist);

	if (r->library) {
		const struct tc_volume_stats *vs = &r->vs;
		json_object *e = json_object_new_object();
		jadd(e, "read_line_hits", ju64(vs->read_hits));
		jadd(e, "read_line_partial_hits", ju64(vs->read_partial_hits));
		jadd(e, "read_line_misses", ju64(vs->read_misses));
		jadd(e, "write_line_hits", ju64(vs->write_hits));
		jadd(e, "write_line_partial_hits", ju64(vs->write_partial_hits));
		jadd(e, "write_line_misses", ju64(vs->write_misses));
		jadd(e, "read_request_hits", ju64(r->read_hits));
		jadd(e, "write_request_hits", ju64(r->write_hits));
		jadd(e, "read_hit_bytes", ju64(r->read_hit_bytes));
		jadd(e, "write_hit_bytes", ju64(r->write_hit_bytes));
		jadd(e, "read_pages", ju64(r->read_pages));
		jadd(e, "read_page_hits", ju64(r->read_page_hits));
		jadd(e, "write_pages", ju64(r->write_pages));
		jadd(e, "write_page_hits", ju64(r->write_page_hits));
		jadd(e, "promotions", ju64(vs->promotions));
		jadd(e, "evictions", ju64(vs->evictions));
		jadd(e, "bypassed_seq", ju64(vs->bypassed_seq));
		jadd(e, "bypassed_admission", ju64(vs->bypassed_admission));
		jadd(e, "bypassed_bytes", ju64(vs->bypassed_bytes));
		jadd(e, "cached_bytes", ju64(vs->cached_bytes));
		jadd(e, "dirty_peak_bytes", ju64(r->dirty_peak));
		jadd(e, "dirty_end_bytes", ju64(r->dirty_end));
		jadd(e, "writeback_bytes", ju64(vs->writeback_bytes));
		jadd(e, "writeback_ios", ju64(vs->writeback_ios));
		jadd(e, "engine_errors", ju64(vs->errors));
		jadd(j, "cache", e);
		jadd(j, "backing_device", jdev(&r->backing));
		jadd(j, "cache_device", jdev(&r->cache));
		jadd(j, "ssd_bytes_per_host_byte", jnum(ssd_per_host(r)));
	} else {
		jadd(j, "cache", NULL);
		jadd(j, "backing_device", NULL);
		jadd(j, "cache_device", NULL);
	}
	return j;
}


/* ------------------------------------------------------------------------------------
 * The miss-ratio curve.
 */

void report_print_mrc_head(const struct report_cfg *c)
{
	char h[32];

	printf("\nmiss-ratio curve (%s, %s, %s lines; miss = 1 - hit)\n",
	       tc_write_policy_name(c->ro->settings.write_policy),
	       tc_replacement_name(c->ro->cache.replacement),
	       tc_size_format(c->ro->cache.line_size, h, sizeof(h)));
	printf("  %-8s %12s %8s %9s %10s %10s %10s %10s %10s\n", "size", "cache", "of fp",
	       "miss", "read miss", "byte miss", "page miss", "line miss", "p99 lat");
	fflush(stdout);
}

void report_print_mrc_row(const char *size, const struct replay_result *r,
			  const struct replay_map *m)
{
	struct figures f;
	char a[5][16], l[24], h[32];

	figures_of(r, &f);
	printf("  %-8s %12s %7.1f%% %9s %10s %10s %10s %10s %10s\n", size,
	       tc_size_format(r->cache_bytes, h, sizeof(h)),
	       100 * fraction_of(r, m), ratio_text(1 - f.hit, a[0], 16),
	       ratio_text(1 - f.read_hit, a[1], 16),
	       ratio_text(1 - f.byte_hit, a[2], 16),
	       ratio_text(1 - f.page_hit, a[4], 16),
	       ratio_text(1 - f.line_hit, a[3], 16),
	       r->lat.count ? us_text(tc_hist_percentile(&r->lat, 99), l, sizeof(l)) : "-");
	fflush(stdout);
}

json_object *report_json_mrc_point(const char *size, const struct replay_result *r,
				   const struct replay_map *m)
{
	json_object *pt = json_object_new_object();
	struct figures f;

	figures_of(r, &f);
	jadd(pt, "size", json_object_new_string(size));
	jadd(pt, "cache_bytes", ju64(r->cache_bytes));
	jadd(pt, "fraction_of_footprint", jnum(fraction_of(r, m)));
	jadd(pt, "miss_ratio", jnum(1 - f.hit));
	jadd(pt, "read_miss_ratio", jnum(1 - f.read_hit));
	jadd(pt, "byte_miss_ratio", jnum(1 - f.byte_hit));
	jadd(pt, "page_miss_ratio", jnum(1 - f.page_hit));
	jadd(pt, "line_miss_ratio", jnum(1 - f.line_hit));
	jadd(pt, "ssd_bytes_per_host_byte", jnum(ssd_per_host(r)));
	jadd(pt, "p99_latency_us", r->lat.count ?
	     jnum((double)tc_hist_percentile(&r->lat, 99) / 1e3) : NULL);
	return pt;
}
