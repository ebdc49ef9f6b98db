/* SPDX-License-Identifier: MIT */
/*
 * report.h - the report of a replay (replay.h) on stdout: tables for people, JSON
 * objects (json-c) for programs; what `tiercache replay` prints.
 *
 * Figures: hit ratios per request, per byte, per 4 KiB page referenced (what cache
 * simulators such as libCacheSim count) and per cache line touched (the engine's
 * counters), each for reads, writes and all; the volume settings of the run; IOPS and throughput over the replay clock;
 * latency mean and percentiles from the result's histograms, and a histogram in 1-2-5
 * steps from 1 us to 100 s.  A ratio whose denominator is 0, or that NBD mode cannot
 * know, prints "n/a" in tables and null in JSON.  Sizes print as "1.5 GiB"; JSON gives
 * bytes, seconds and microseconds (latency_us).
 */
#ifndef REPLAY_REPORT_H
#define REPLAY_REPORT_H

#include <json-c/json.h>

#include "replay.h"
#include "trace.h"

/* What the report says about how the replay ran, beside the result itself. */
struct report_cfg {
	const struct replay_opts *ro;  /* the run's options: driving (queue_depth, speed,
					* warmup), cache (line size, replacement), settings
					* (write policy), seed */
	const char *target;            /* NBD mode: the URI replayed against; else NULL */
	const char *trace_volume;      /* the one source volume replayed; NULL: all */
};

/* report_print_trace - the "trace" and "layout" lines: what loading @t found, and how
 * @m laid its source volumes out. */
void report_print_trace(const struct trace *t, const struct replay_map *m,
			const struct report_cfg *c);

/* report_print_result - the tables of one run: the cache or the target, the driving,
 * requests and hit ratios, IOPS, latency and its histogram, then (library mode) the
 * engine, dirty data and the two devices' traffic, and the replay's own speed. */
void report_print_result(const struct replay_result *r, const struct replay_map *m,
			 const struct report_cfg *c);

/* report_json_trace - @t as a JSON object ("trace"), and @m as another one in
 * *@layout ("layout").  The caller owns both (json_object_put). */
json_object *report_json_trace(const struct trace *t, const struct replay_map *m,
			       const struct report_cfg *c, json_object **layout);

/* report_json_result - one run as a JSON object: config, counters, ratios, latency_us,
 * latency_histogram_us, cache, backing_device, cache_device.  The caller owns it. */
json_object *report_json_result(const struct replay_result *r, const struct replay_map *m,
				const struct report_cfg *c);

/* The miss-ratio curve (one row per cache size, miss = 1 - hit): its title and column
 * heads (after the trace lines), one row, and the same row as a JSON object of the
 * "mrc" array (size, cache_bytes, fraction_of_footprint, miss ratios, p99_latency_us).
 * @size is the size as the user wrote it ("10%", "64M"). */
void report_print_mrc_head(const struct report_cfg *c);
void report_print_mrc_row(const char *size, const struct replay_result *r,
			  const struct replay_map *m);
json_object *report_json_mrc_point(const char *size, const struct replay_result *r,
				   const struct replay_map *m);

#endif /* REPLAY_REPORT_H */
