/* SPDX-License-Identifier: MIT */
/*
 * mrc.h - replay one trace at several cache sizes: the miss-ratio curve, or the full
 * report of a single run (report.h), printed on stdout as tables or one JSON object.
 */
#ifndef REPLAY_MRC_H
#define REPLAY_MRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"
#include "report.h"
#include "trace.h"

/* A cache size: bytes, or a fraction of the trace's footprint. */
struct mrc_size {
	bool pct;                  /* a fraction of the footprint */
	double fraction;           /* when pct: > 0 (0.10 is 10 %) */
	uint64_t bytes;            /* otherwise: the cache's data area, bytes, > 0 */
	char text[32];             /* as the user wrote it, for the report */
};

/* mrc_size_bytes - the cache bytes of @s for a trace whose footprint is @footprint
 * bytes, with lines of @line_size bytes: a fraction of the footprint is rounded down to
 * whole lines, as cache simulators round (at least one line; the replay then makes at
 * least 16). */
uint64_t mrc_size_bytes(const struct mrc_size *s, uint64_t footprint, uint32_t line_size);

/* Calls around each run, from the replaying thread: @before may set @ro's progress
 * callback; @after sees the run's options as replay_run left them (fallback_file,
 * devices) and its return value @r. */
struct mrc_hooks {
	void (*before)(void *opaque, const struct mrc_size *s, struct replay_opts *ro);
	void (*after)(void *opaque, const struct mrc_size *s, const struct replay_opts *ro,
		      int r);
	void *opaque;
};

/*
 * mrc_run - replay @t, laid out by @m, once per size of @sizes (@n of them) with the
 * options of @c->ro, the cache's data area set to each size in turn, and print the
 * report: with @curve the trace lines and one miss-ratio row per size, else the trace
 * lines and the full tables of the (first) run; with @json instead one JSON object
 * ({trace, layout, runs, mrc} with @curve, else the run's object with trace and layout
 * added), printed once the runs are over if any run completed.  Stops at the first run
 * that fails or is interrupted (c->ro->stop); an interrupted run is reported.
 * @h: NULL for none.  Returns 0, -EINTR, or a negative errno with the message in @err
 * (@errlen bytes): -ENOMEM, or the failed run's error (replay_run).
 */
int mrc_run(const struct trace *t, const struct replay_map *m, const struct report_cfg *c,
	    const struct mrc_size *sizes, int n, bool curve, bool json,
	    const struct mrc_hooks *h, char *err, size_t errlen);

#endif /* REPLAY_MRC_H */
