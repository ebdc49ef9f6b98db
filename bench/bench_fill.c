/* SPDX-License-Identifier: MIT */
/*
 * bench_fill.c - tc-bench-fill: which read-miss fill policy should be the default?
 *
 * Replays real block traces through the library in a deterministic context, on memory
 * devices, once per (fill policy x line size), everything else equal, and reports per
 * run the read hit ratios (per line touched, per request, per byte), what the backing
 * device had to read (bytes and requests) and what the cache device wrote.  See usage()
 * for the full description.
 *
 * The byte hit ratio needs to know which 4 KiB units of a line are valid just before a
 * read is planned; the public API does not say, so this program looks into the cache's
 * map through the engine's private header (as tc-bench-hit uses format.h).  In a
 * deterministic context with one request at a time nothing can change the map between
 * that look-up and the request's plan.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tiercache.h"
#define BENCH_NAME "tc-bench-fill"
#include "bench_common.h"
#include "cache_priv.h"   /* tc_volume_valid_bytes(): the map, for the byte hit ratio */
#include "replay/trace.h"  /* the trace readers of `tiercache replay` */

#define TICK_NS 10000000ull        /* the engine's timer period (TC_TICK_NS) */
#define MAX_TRACES 8
#define MAX_RUNS 64

#ifndef TC_SOURCE_ROOT
#define TC_SOURCE_ROOT "."
#endif

/* ------------------------------------------------------------------------------------
 * Options.
 */
enum fmt { FMT_AUTO, FMT_VSCSI, FMT_MQSIM };

struct opts {
	const char *trace_path[MAX_TRACES];
	enum fmt trace_fmt[MAX_TRACES];
	int ntraces;
	uint32_t line_sizes[4];
	int nline_sizes;
	int fills[2];
	int nfills;
	double cache_pct;
	uint64_t max_requests;     /* per trace, 0 = all */
	uint64_t volume_cap;
	int write_policy;
	int admission;
	uint32_t nhit;
	uint64_t seq_cutoff;
	int replacement;
	int flush_rate;
	unsigned tick_steps;       /* per inter-arrival gap, 10 ms each, before one jump */
	double hdd_seek_ms, hdd_mbps;
	uint64_t seed;
	bool json, quiet;
};

static struct opts g_opt;

/* ------------------------------------------------------------------------------------
 * Traces.
 */
struct req {
	uint64_t off;              /* bytes into the volume, 512-aligned, folded */
	uint64_t t_ns;             /* arrival time, ns from the trace's first request */
	uint32_t len;              /* bytes, multiple of 512 */
	uint8_t write;
};

struct fill_trace {
	const char *path;
	const char *name;          /* basename */
	enum fmt fmt;
	struct req *r;
	size_t n;
	/* What loading found. */
	uint64_t records;          /* records in the file (lines for mqsim) */
	uint64_t skipped_op;       /* neither read nor write */
	uint64_t skipped_empty;    /* zero length */
	uint64_t unaligned;        /* start or end moved to a 512-byte boundary */
	uint64_t folded;           /* offset taken modulo the volume cap */
	uint64_t truncated;        /* beyond --max-requests */
	uint64_t reads, writes, read_bytes, write_bytes;
	uint64_t max_end_raw;      /* bytes, before folding */
	uint64_t max_len;
	uint64_t vol_size;         /* bytes */
	uint64_t footprint;        /* unique 4 KiB units touched, after folding, bytes */
	uint64_t footprint_raw;    /* the same before folding: aliasing = raw - folded */
	uint64_t duration_ns;
	unsigned devices;          /* mqsim: distinct device numbers seen (merged) */
};

struct run {
	const struct fill_trace *t;
	uint32_t line_size;
	int fill;
	uint64_t cache_bytes, cache_lines;
	/* Client side. */
	uint64_t reads, writes, read_bytes, write_bytes;
	uint64_t read_req_hits;    /* read requests with every line a hit */
	uint64_t read_hit_bytes;   /* client read bytes that were valid in the cache */
	uint64_t byte_check_errors;/* request hit <=> all bytes valid, violated */
	struct tc_volume_stats vs;
	/* Backing device. */
	struct tc_dev_stats bdev;
	uint64_t rd_backing_reads, rd_backing_bytes;  /* during client reads: miss fetches */
	/* Cache device. */
	struct tc_dev_stats cdev;
	uint64_t rd_cache_writes, rd_cache_bytes;     /* during client reads: fills */
	double line_hit_ratio, req_hit_ratio, byte_hit_ratio;
	double hdd_read_s;         /* model: miss fetches on an HDD */
	double wall_s;
};

static struct fill_trace g_traces[MAX_TRACES];
static struct run g_runs[MAX_RUNS];
static int g_nruns;



static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("malloc", ENOMEM);
	return p;
}


static uint64_t next_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Unique values of @v (sorted in place). */
static uint64_t count_unique(uint64_t *v, size_t n)
{
	uint64_t u = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i] != v[i - 1])
			u++;
	return u;
}

struct raw_req {
	uint64_t off, len, t_ns;
	bool write;
};

struct loader {
	struct fill_trace *t;
	struct raw_req *v;
	size_t n, cap;
};

static void loader_add(struct loader *l, uint64_t off, uint64_t len, uint64_t t_ns, bool write)
{
	struct fill_trace *t = l->t;

	if (len == 0) {
		t->skipped_empty++;
		return;
	}
	if (g_opt.max_requests && l->n >= g_opt.max_requests) {
		t->truncated++;
		return;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			die("realloc", ENOMEM);
	}
	l->v[l->n++] = (struct raw_req){ .off = off, .len = len, .t_ns = t_ns, .write = write };
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Read the trace with the replay tool's readers (src/replay/trace.c): every request in
 * file order, each device of an MQSim trace merged into the one volume (as MQSim
 * does: the device number is ignored). */
static void load_records(struct loader *l)
{
	struct fill_trace *t = l->t;
	struct trace *tr;
	char err[1024];
	int r = trace_load(t->path, t->fmt == FMT_VSCSI ? TRACE_VSCSI : TRACE_MQSIM,
			      NULL, &tr, err, sizeof(err));

	if (r) {
		fprintf(stderr, "tc-bench-fill: %s\n", err);
		exit(1);
	}
	t->records = tr->records;
	t->skipped_op = tr->skipped_op;
	t->skipped_empty = tr->skipped_empty;
	t->unaligned = tr->unaligned;        /* the reader aligned them already */
	t->devices = tr->nvols;
	for (size_t i = 0; i < tr->n; i++)
		loader_add(l, tr->req[i].offset, tr->req[i].length, tr->req[i].t_ns,
			   tr->req[i].write);
	trace_free(tr);
}

static void load_trace(struct fill_trace *t)
{
	struct loader l = { .t = t };

	if (access(t->path, R_OK)) {
		fprintf(stderr, "tc-bench-fill: %s: %s (set $TC_TRACES_DIR or use --trace)\n",
			t->path, strerror(errno));
		exit(1);
	}
	char *real = realpath(t->path, NULL);

	if (real)
		t->path = real;   /* kept until exit */
	t->name = base_name(t->path);
	load_records(&l);
	if (!l.n) {
		fprintf(stderr, "tc-bench-fill: %s: no read or write request\n", t->path);
		exit(1);
	}

	/* Align to sectors; the volume spans the next power of two of the highest end,
	 * capped; requests beyond the cap are folded (offset modulo the cap). */
	for (size_t i = 0; i < l.n; i++) {
		struct raw_req *r = &l.v[i];
		uint64_t s = r->off & ~(uint64_t)(TC_SECTOR_SIZE - 1);
		uint64_t e = (r->off + r->len + TC_SECTOR_SIZE - 1) &
			     ~(uint64_t)(TC_SECTOR_SIZE - 1);

		if (s != r->off || e != r->off + r->len)
			t->unaligned++;
		r->off = s;
		r->len = e - s;
		if (e > t->max_end_raw)
			t->max_end_raw = e;
	}
	t->vol_size = next_pow2(t->max_end_raw);
	if (t->vol_size < MIB)
		t->vol_size = MIB;
	if (t->vol_size > g_opt.volume_cap)
		t->vol_size = g_opt.volume_cap;

	t->r = xmalloc(l.n * sizeof(*t->r));
	t->n = l.n;
	size_t nunits = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct raw_req *r = &l.v[i];
		uint64_t len = r->len, off = r->off;

		if (len > t->vol_size)
			len = t->vol_size;       /* a request larger than the volume: cut */
		if (off + len > t->vol_size) {
			t->folded++;
			off %= t->vol_size;
			if (off + len > t->vol_size)
				off = t->vol_size - len;
		}
		t->r[i] = (struct req){ .off = off, .len = (uint32_t)len, .t_ns = r->t_ns,
					.write = r->write };
		if (len > t->max_len)
			t->max_len = len;
		if (r->write) {
			t->writes++;
			t->write_bytes += len;
		} else {
			t->reads++;
			t->read_bytes += len;
		}
		nunits += (size_t)((r->off + r->len + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE -
				   r->off / TC_UNIT_SIZE);
	}
	t->duration_ns = t->r[t->n - 1].t_ns;

	/* Footprints: unique 4 KiB units, before and after folding. */
	uint64_t *u = xmalloc(nunits * sizeof(*u));
	size_t k = 0;
	for (size_t i = 0; i < l.n; i++)
		for (uint64_t x = l.v[i].off / TC_UNIT_SIZE;
		     x < (l.v[i].off + l.v[i].len + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE; x++)
			u[k++] = x;
	t->footprint_raw = count_unique(u, k) * TC_UNIT_SIZE;
	k = 0;
	for (size_t i = 0; i < t->n; i++)
		for (uint64_t x = t->r[i].off / TC_UNIT_SIZE;
		     x < (t->r[i].off + t->r[i].len + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE; x++)
			u[k++] = x;
	t->footprint = count_unique(u, k) * TC_UNIT_SIZE;
	free(u);
	free(l.v);
}

/* ------------------------------------------------------------------------------------
 * One replay.
 */



static void poll_idle(tc_ctx *ctx)
{
	int r;

	while ((r = tc_ctx_poll(ctx, 4096)) > 0)
		;
	CHECK(r, "tc_ctx_poll");
}

/* Let @gap ns of trace time pass: 10 ms steps (the engine's tick) for the first
 * --tick-steps of them, so the cleaner and the commits run as they would, then one
 * jump for the rest of a long idle period. */
static void advance(tc_ctx *ctx, uint64_t gap)
{
	for (unsigned i = 0; gap && i < g_opt.tick_steps; i++) {
		uint64_t d = gap < TICK_NS ? gap : TICK_NS;

		CHECK(tc_ctx_advance(ctx, d), "tc_ctx_advance");
		poll_idle(ctx);
		gap -= d;
	}
	if (gap) {
		CHECK(tc_ctx_advance(ctx, gap), "tc_ctx_advance");
		poll_idle(ctx);
	}
}

/* Smallest cache device whose data area has exactly @lines lines of @ls bytes. */
static uint64_t cache_dev_size(uint64_t lines, uint32_t ls)
{
	struct tc_cache_sb geo;
	uint64_t dev = lines * ls;

	for (int i = 0; i < 1000; i++) {
		memset(&geo, 0, sizeof(geo));
		int r = tc_fmt_cache_geometry(dev, ls, &geo);
		if (r == 0 && geo.nslots >= lines)
			return dev;
		dev += r == 0 && geo.nslots + 1 < lines ? (lines - geo.nslots) * ls : ls;
	}
	die("cache geometry does not converge", EINVAL);
	return 0;
}

static void replay(struct run *run)
{
	const struct opts *o = &g_opt;
	const struct fill_trace *t = run->t;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = o->seed,
				  .log_level = TC_LOG_WARN };
	struct tc_cache_opts copts;
	struct tc_volume_settings set;
	struct tc_cache_stats cs;
	tc_ctx *ctx;
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	uint64_t t0 = now_ns();

	/* The cache: --cache-pct of the footprint, in whole 64 KiB, so that every line
	 * size gets the same capacity; at least 16 lines. */
	uint64_t target = (uint64_t)((double)t->footprint * o->cache_pct / 100.0 + 0.5);
	target = (target + 64 * KIB - 1) / (64 * KIB) * (64 * KIB);
	if (target < 16 * 64 * KIB)
		target = 16 * 64 * KIB;
	run->cache_lines = target / run->line_size;
	run->cache_bytes = target;

	CHECK(tc_ctx_new(&co, &ctx), "tc_ctx_new");
	tc_ctx_set_log(ctx, log_sink, NULL, TC_LOG_WARN);
	CHECK(tc_dev_new_memory(ctx, cache_dev_size(run->cache_lines, run->line_size), &cdev),
	      "tc_dev_new_memory (cache)");
	CHECK(tc_dev_new_memory(ctx, TC_BACKING_DATA_OFFSET + t->vol_size, &bdev),
	      "tc_dev_new_memory (backing)");
	tc_cache_opts_default(&copts);
	copts.line_size = run->line_size;
	copts.replacement = (uint8_t)o->replacement;
	CHECK(tc_cache_format(ctx, cdev, &copts), "tc_cache_format");
	tc_volume_settings_default(&set);
	set.write_policy = (uint8_t)o->write_policy;
	set.flush_rate = (uint8_t)o->flush_rate;
	set.admission = (uint8_t)o->admission;
	set.nhit = o->nhit;
	set.fill = (uint8_t)run->fill;
	set.seq_cutoff = o->seq_cutoff;
	CHECK(tc_backing_format(ctx, bdev, "trace", &set), "tc_backing_format");
	CHECK(tc_cache_open(ctx, cdev, &cache), "tc_cache_open");
	CHECK(tc_cache_attach(cache, bdev, NULL, 0, &vol), "tc_cache_attach");
	tc_cache_stats(cache, &cs);
	if (cs.lines != run->cache_lines)
		die("cache geometry differs from the library's", EINVAL);
	if (tc_volume_size(vol) < t->vol_size)
		die("volume smaller than the trace's", ENOSPC);
	tc_volume_stats_reset(vol);

	uint8_t *buf = NULL;
	if (posix_memalign((void **)&buf, 4096, t->max_len))
		die("posix_memalign", ENOMEM);
	memset(buf, 0xa5, t->max_len);

	struct tc_dev_stats b0, b1, c0, c1, bstart, cstart;
	struct tc_volume_stats v0, v1;
	uint64_t prev_t = 0;

	tc_dev_stats(bdev, &bstart);
	tc_dev_stats(cdev, &cstart);
	for (size_t i = 0; i < t->n; i++) {
		const struct req *r = &t->r[i];

		advance(ctx, r->t_ns > prev_t ? r->t_ns - prev_t : 0);
		if (r->t_ns > prev_t)
			prev_t = r->t_ns;
		if (r->write) {
			CHECK(tc_volume_io(vol, TC_OP_WRITE, 0, buf, r->len, r->off), "write");
			run->writes++;
			run->write_bytes += r->len;
			continue;
		}
		uint64_t vb = tc_volume_valid_bytes(vol, r->off, r->len);

		tc_dev_stats(bdev, &b0);
		tc_dev_stats(cdev, &c0);
		tc_volume_stats(vol, &v0);
		CHECK(tc_volume_io(vol, TC_OP_READ, 0, buf, r->len, r->off), "read");
		tc_dev_stats(bdev, &b1);
		tc_dev_stats(cdev, &c1);
		tc_volume_stats(vol, &v1);
		bool hit = v1.read_partial_hits == v0.read_partial_hits &&
			   v1.read_misses == v0.read_misses;

		run->reads++;
		run->read_bytes += r->len;
		run->read_hit_bytes += vb;
		run->read_req_hits += hit;
		if (hit != (vb == r->len))
			run->byte_check_errors++;
		run->rd_backing_reads += b1.reads - b0.reads;
		run->rd_backing_bytes += b1.bytes_read - b0.bytes_read;
		run->rd_cache_writes += c1.writes - c0.writes;
		run->rd_cache_bytes += c1.bytes_written - c0.bytes_written;
	}
	poll_idle(ctx);
	tc_volume_stats(vol, &run->vs);
	tc_dev_stats(bdev, &b1);
	tc_dev_stats(cdev, &c1);
	run->bdev = (struct tc_dev_stats){
		.reads = b1.reads - bstart.reads, .writes = b1.writes - bstart.writes,
		.flushes = b1.flushes - bstart.flushes,
		.bytes_read = b1.bytes_read - bstart.bytes_read,
		.bytes_written = b1.bytes_written - bstart.bytes_written,
	};
	run->cdev = (struct tc_dev_stats){
		.reads = c1.reads - cstart.reads, .writes = c1.writes - cstart.writes,
		.flushes = c1.flushes - cstart.flushes,
		.bytes_read = c1.bytes_read - cstart.bytes_read,
		.bytes_written = c1.bytes_written - cstart.bytes_written,
	};
	free(buf);
	CHECK(tc_cache_close(cache), "tc_cache_close");
	tc_dev_close(bdev);
	tc_dev_close(cdev);
	tc_ctx_free(ctx);

	uint64_t lines = run->vs.read_hits + run->vs.read_partial_hits + run->vs.read_misses;
	run->line_hit_ratio = lines ? (double)run->vs.read_hits / (double)lines : 0;
	run->req_hit_ratio = run->reads ? (double)run->read_req_hits / (double)run->reads : 0;
	run->byte_hit_ratio = run->read_bytes ?
		(double)run->read_hit_bytes / (double)run->read_bytes : 0;
	run->hdd_read_s = (double)run->rd_backing_reads * o->hdd_seek_ms / 1e3 +
			  (double)run->rd_backing_bytes / (o->hdd_mbps * 1e6);
	run->wall_s = (double)(now_ns() - t0) / 1e9;
}

/* ------------------------------------------------------------------------------------
 * Output.
 */

static const char *human(uint64_t b, char *buf, size_t len)
{
	if (b >= GIB)
		snprintf(buf, len, "%.2f GiB", (double)b / GIB);
	else if (b >= MIB)
		snprintf(buf, len, "%.1f MiB", (double)b / MIB);
	else if (b >= KIB)
		snprintf(buf, len, "%.0f KiB", (double)b / KIB);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

static const char *fill_name(int f)
{
	return f == TC_FILL_LINE ? "line" : "sectors";
}

static const char *fmt_name(enum fmt f)
{
	return f == FMT_VSCSI ? "vscsi" : "mqsim";
}

static const char *admission_name(int a)
{
	return a == TC_ADMIT_NHIT ? "nhit" : "always";
}

static void print_trace(const struct fill_trace *t)
{
	char h1[32], h2[32], h3[32], h4[32];

	printf("trace %s (%s): %zu requests (%" PRIu64 " reads, %" PRIu64 " writes; %s read, "
	       "%s written), %.1f s of trace time\n",
	       t->path, fmt_name(t->fmt), t->n, t->reads, t->writes,
	       human(t->read_bytes, h1, sizeof(h1)), human(t->write_bytes, h2, sizeof(h2)),
	       (double)t->duration_ns / 1e9);
	printf("  highest byte touched %s; volume %s; %" PRIu64 " requests folded; footprint "
	       "%s (%s before folding)\n",
	       human(t->max_end_raw, h1, sizeof(h1)), human(t->vol_size, h2, sizeof(h2)),
	       t->folded, human(t->footprint, h3, sizeof(h3)),
	       human(t->footprint_raw, h4, sizeof(h4)));
	printf("  skipped: %" PRIu64 " other commands, %" PRIu64 " empty, %" PRIu64
	       " beyond --max-requests; %" PRIu64 " unaligned",
	       t->skipped_op, t->skipped_empty, t->truncated, t->unaligned);
	if (t->fmt == FMT_MQSIM)
		printf("; %u device numbers merged into one volume", t->devices);
	printf("\n");
}

static void print_table(int first, int n)
{
	char h1[32];

	printf("  cache %s (%.0f%% of the footprint)\n",
	       human(g_runs[first].cache_bytes, h1, sizeof(h1)), g_opt.cache_pct);
	printf("  %-6s %-7s %6s %7s %7s %7s %7s %8s %9s %9s %9s %9s %10s %8s %6s\n",
	       "line", "fill", "lines", "line-hr", "req-hr", "byte-hr", "partial", "fetches",
	       "fetch-MiB", "bk-rd-req", "bk-rd-MiB", "fill-MiB", "cache-wMiB", "hdd-rd-s",
	       "wall-s");
	for (int i = first; i < first + n; i++) {
		const struct run *r = &g_runs[i];

		printf("  %-6s %-7s %6" PRIu64 " %7.4f %7.4f %7.4f %7" PRIu64 " %8" PRIu64
		       " %9.1f %9" PRIu64 " %9.1f %9.1f %10.1f %8.1f %6.2f\n",
		       human(r->line_size, h1, sizeof(h1)), fill_name(r->fill), r->cache_lines,
		       r->line_hit_ratio, r->req_hit_ratio, r->byte_hit_ratio,
		       r->vs.read_partial_hits, r->rd_backing_reads,
		       (double)r->rd_backing_bytes / MIB, r->bdev.reads,
		       (double)r->bdev.bytes_read / MIB, (double)r->rd_cache_bytes / MIB,
		       (double)r->cdev.bytes_written / MIB, r->hdd_read_s, r->wall_s);
		if (r->byte_check_errors)
			printf("  warning: %" PRIu64 " reads where the map look-up and the hit "
			       "counters disagree\n", r->byte_check_errors);
	}
}

static void print_json(void)
{
	const struct opts *o = &g_opt;

	printf("{\n  \"config\": {\"cache_pct\": %.3f, \"write_policy\": \"%s\", "
	       "\"flush_rate\": \"%s\", \"admission\": \"%s\", \"nhit\": %" PRIu32
	       ", \"seq_cutoff\": %" PRIu64 ", \"replacement\": \"%s\", \"volume_cap\": %" PRIu64
	       ", \"max_requests\": %" PRIu64 ", \"tick_steps\": %u, \"seed\": %" PRIu64
	       ", \"hdd_seek_ms\": %.3f, \"hdd_mbps\": %.3f},\n",
	       o->cache_pct, tc_write_policy_name((unsigned)o->write_policy),
	       tc_flush_rate_name((unsigned)o->flush_rate), admission_name(o->admission), o->nhit,
	       o->seq_cutoff, tc_replacement_name((unsigned)o->replacement), o->volume_cap,
	       o->max_requests, o->tick_steps, o->seed, o->hdd_seek_ms, o->hdd_mbps);
	printf("  \"traces\": [\n");
	for (int i = 0; i < o->ntraces; i++) {
		const struct fill_trace *t = &g_traces[i];

		printf("    {\"path\": \"%s\", \"format\": \"%s\", \"requests\": %zu, "
		       "\"reads\": %" PRIu64 ", \"writes\": %" PRIu64 ", \"read_bytes\": %" PRIu64
		       ", \"write_bytes\": %" PRIu64 ", \"max_end_raw\": %" PRIu64
		       ", \"volume_size\": %" PRIu64 ", \"folded\": %" PRIu64
		       ", \"footprint\": %" PRIu64 ", \"footprint_before_folding\": %" PRIu64
		       ", \"skipped_other_op\": %" PRIu64 ", \"skipped_empty\": %" PRIu64
		       ", \"skipped_max_requests\": %" PRIu64 ", \"unaligned\": %" PRIu64
		       ", \"duration_ns\": %" PRIu64 "}%s\n",
		       t->path, fmt_name(t->fmt), t->n, t->reads, t->writes, t->read_bytes,
		       t->write_bytes, t->max_end_raw, t->vol_size, t->folded, t->footprint,
		       t->footprint_raw, t->skipped_op, t->skipped_empty, t->truncated,
		       t->unaligned, t->duration_ns, i + 1 < o->ntraces ? "," : "");
	}
	printf("  ],\n  \"runs\": [\n");
	for (int i = 0; i < g_nruns; i++) {
		const struct run *r = &g_runs[i];

		printf("    {\"trace\": \"%s\", \"line_size\": %" PRIu32 ", \"fill\": \"%s\", "
		       "\"cache_bytes\": %" PRIu64 ", \"cache_lines\": %" PRIu64 ",\n",
		       r->t->name, r->line_size, fill_name(r->fill), r->cache_bytes,
		       r->cache_lines);
		printf("     \"read_line_hit_ratio\": %.6f, \"read_request_hit_ratio\": %.6f, "
		       "\"read_byte_hit_ratio\": %.6f,\n",
		       r->line_hit_ratio, r->req_hit_ratio, r->byte_hit_ratio);
		printf("     \"reads\": %" PRIu64 ", \"writes\": %" PRIu64 ", \"read_bytes\": %" PRIu64
		       ", \"read_hit_bytes\": %" PRIu64 ", \"read_request_hits\": %" PRIu64 ",\n",
		       r->reads, r->writes, r->read_bytes, r->read_hit_bytes, r->read_req_hits);
		printf("     \"read_hits\": %" PRIu64 ", \"read_partial_hits\": %" PRIu64
		       ", \"read_misses\": %" PRIu64 ", \"write_hits\": %" PRIu64
		       ", \"write_partial_hits\": %" PRIu64 ", \"write_misses\": %" PRIu64
		       ", \"promotions\": %" PRIu64 ", \"evictions\": %" PRIu64
		       ", \"writeback_bytes\": %" PRIu64 ",\n",
		       r->vs.read_hits, r->vs.read_partial_hits, r->vs.read_misses,
		       r->vs.write_hits, r->vs.write_partial_hits, r->vs.write_misses,
		       r->vs.promotions, r->vs.evictions, r->vs.writeback_bytes);
		printf("     \"backing_reads\": %" PRIu64 ", \"backing_bytes_read\": %" PRIu64
		       ", \"backing_reads_for_client_reads\": %" PRIu64
		       ", \"backing_bytes_read_for_client_reads\": %" PRIu64
		       ", \"backing_writes\": %" PRIu64 ", \"backing_bytes_written\": %" PRIu64 ",\n",
		       r->bdev.reads, r->bdev.bytes_read, r->rd_backing_reads, r->rd_backing_bytes,
		       r->bdev.writes, r->bdev.bytes_written);
		printf("     \"cache_writes\": %" PRIu64 ", \"cache_bytes_written\": %" PRIu64
		       ", \"cache_writes_for_client_reads\": %" PRIu64
		       ", \"cache_bytes_written_for_client_reads\": %" PRIu64
		       ", \"cache_bytes_read\": %" PRIu64 ",\n",
		       r->cdev.writes, r->cdev.bytes_written, r->rd_cache_writes, r->rd_cache_bytes,
		       r->cdev.bytes_read);
		printf("     \"hdd_model_read_miss_s\": %.3f, \"byte_check_errors\": %" PRIu64
		       ", \"wall_s\": %.3f}%s\n",
		       r->hdd_read_s, r->byte_check_errors, r->wall_s, i + 1 < g_nruns ? "," : "");
	}
	printf("  ]\n}\n");
}

/* ------------------------------------------------------------------------------------
 * Command line.
 */

static void usage(FILE *f)
{
	fprintf(f,
"NAME\n"
"    tc-bench-fill - replay block traces to compare the read-miss fill policies\n"
"\n"
"SYNOPSIS\n"
"    tc-bench-fill [--trace PATH [--format vscsi|mqsim]]... [--fill LIST]\n"
"                  [--line-size LIST] [--cache-pct P] [--max-requests N]\n"
"                  [--write-policy wt|wb|wa|pt] [--admission always|nhit] [--nhit N]\n"
"                  [--seq-cutoff BYTES] [--replacement lru|s3fifo]\n"
"                  [--flush-rate low|medium|high] [--volume-cap BYTES]\n"
"                  [--tick-steps N] [--hdd-seek-ms MS] [--hdd-mbps MBPS] [--seed N]\n"
"                  [--json] [--quiet]\n"
"\n"
"DESCRIPTION\n"
"    A read miss on a 4 KiB unit of a cache line can fill only the units the request\n"
"    asked for (fill = sectors, TC_FILL_SECTORS) or every invalid unit of the line\n"
"    (fill = line, TC_FILL_LINE).  This program measures what each policy does to\n"
"    the hit ratio and to the traffic on the backing device, on real block traces.\n"
"\n"
"    Each trace is replayed once per fill policy and line size, everything else\n"
"    equal: a deterministic context (TC_CTX_DETERMINISTIC, fixed --seed), memory\n"
"    devices (tc_dev_new_memory), a freshly formatted cache whose data area is\n"
"    --cache-pct of the trace's footprint (the unique 4 KiB units it touches),\n"
"    rounded up to 64 KiB so that every line size gets the same capacity, and one\n"
"    volume with the given settings.  Requests are issued one at a time\n"
"    (tc_volume_io, queue depth 1).  Before each request the virtual clock is moved\n"
"    by the trace's inter-arrival time (tc_ctx_advance), in 10 ms steps (the\n"
"    engine's timer period) for the first --tick-steps steps and then in one jump,\n"
"    polling after each, so the cleaner and the metadata commits run as they would.\n"
"\n"
"    Mapping a trace onto a volume: offsets and ends are aligned down and up to\n"
"    512 bytes; the volume is the next power of two at or above the highest byte\n"
"    touched, at least 1 MiB and at most --volume-cap; a request ending beyond the\n"
"    cap is folded (offset modulo the cap; if it then straddles the end, it is\n"
"    moved back to end there).  Folded requests are counted, and the footprint is\n"
"    printed before and after folding: the difference is the aliasing that folding\n"
"    introduced.  A timestamp lower than the one before it counts as no gap.\n"
"\n"
"    Per run it reports:\n"
"    line-hr    read_hits / (read_hits + read_partial_hits + read_misses) from\n"
"               tc_volume_stats(); these counters count cache lines touched by a\n"
"               read, not requests\n"
"    req-hr     read requests all of whose lines were hits / read requests\n"
"    byte-hr    read bytes that were in valid units of the cache when the read was\n"
"               planned / read bytes (found by looking the lines up in the cache's map\n"
"               just before each read; a check that this agrees with the hit counters\n"
"               is printed if it ever fails)\n"
"    partial    read_partial_hits (lines with some but not all touched units valid)\n"
"    fetches    read requests the backing device received while client reads ran\n"
"               (tc_dev_stats() before and after each read): the read-miss fetches,\n"
"               at most one per line touched\n"
"    fetch-MiB  bytes those fetches read\n"
"    bk-rd-req  read requests the backing device received, of all causes: the\n"
"               fetches plus read-modify-write of partial 4 KiB units by writes\n"
"               smaller than 4 KiB in write-back\n"
"    bk-rd-MiB  bytes the backing device read, all causes\n"
"    fill-MiB   bytes written to the cache device while client reads ran: the fills\n"
"    cache-wMiB all bytes written to the cache device (fills, client writes,\n"
"               metadata)\n"
"    hdd-rd-s   a model of what the read-miss fetches alone would cost on one HDD:\n"
"               fetches x --hdd-seek-ms + fetched bytes / --hdd-mbps\n"
"    wall-s     wall-clock time of the run\n"
"    --json adds backing writes, evictions, promotions, write hit counters and\n"
"    cache-device reads.\n"
"\n"
"    Trace formats:\n"
"    The files are read by the readers of `tiercache replay` (src/replay/trace.c):\n"
"    plain or gzip/bzip2/xz/zstd compressed, told apart by their first bytes.\n"
"    vscsi  VSCSI v1 as read by libCacheSim: 32-byte little-endian records u32 sn,\n"
"           u32 len (bytes), u32 nSG, u16 cmd, u16 ver (0x01xx), u64 lbn (512-byte\n"
"           sectors), u64 ts (microseconds).  SCSI READ(6/10/12/16) are reads,\n"
"           WRITE(6/10/12/16) writes; other commands are skipped and counted.\n"
"    mqsim  MQSim ASCII: one request per line, \"arrival_ns device lba size type\",\n"
"           lba and size in 512-byte sectors, type 1 = read, 0 = write.  The device\n"
"           number is ignored (as MQSim does): all devices share one volume.\n"
"\n"
"    Default traces: libcachesim/cloudPhysicsIO.vscsi.xz and\n"
"    mqsim/tpcc-small.trace.xz under $TC_TRACES_DIR, else in the source tree's\n"
"    traces/ folder (%s/traces).\n"
"\n"
"OPTIONS\n"
"    --trace PATH       replay this trace instead of the default ones; repeat for\n"
"                       more (at most %d)\n"
"    --format F         vscsi or mqsim: the format of the --trace options that follow\n"
"                       it (and of an earlier --trace that had none); without it the\n"
"                       suffix decides (.vscsi: vscsi, anything else: mqsim; a\n"
"                       .gz, .bz2, .xz or .zst after it is ignored)\n"
"    --fill LIST        comma-separated fill policies, sectors and/or line\n"
"                       (default sectors,line)\n"
"    --line-size LIST   comma-separated line sizes, powers of two 4K..64K\n"
"                       (default 16K,64K)\n"
"    --cache-pct P      cache data area as a percentage of the footprint, (0, 1000]\n"
"                       (default 10)\n"
"    --max-requests N   replay only the first N read and write requests of each\n"
"                       trace (default 0: all)\n"
"    --write-policy P   wt, wb, wa or pt (default wb)\n"
"    --admission A      always or nhit (default always)\n"
"    --nhit N           N for --admission nhit, 1..255 (default 2)\n"
"    --seq-cutoff BYTES sequential cutoff, 0 = off (default 0)\n"
"    --replacement R    lru or s3fifo (default s3fifo)\n"
"    --flush-rate R     low, medium or high (default medium, the library's default)\n"
"    --volume-cap BYTES largest volume; beyond it offsets are folded, power of two\n"
"                       1M..16G (default 4G; the backing is a sparse RAM device,\n"
"                       only pages written are allocated)\n"
"    --tick-steps N     10 ms clock steps per inter-arrival gap before jumping the\n"
"                       rest, 0..100000 (default 100, i.e. the first second)\n"
"    --hdd-seek-ms MS   HDD model: positioning time per request (default 8: seek +\n"
"                       half a rotation at 7200 rpm)\n"
"    --hdd-mbps MBPS    HDD model: transfer rate in 10^6 bytes/s (default 150)\n"
"    --seed N           seed of the deterministic context (default 1)\n"
"    --json             one JSON object on stdout instead of tables\n"
"    --quiet            no progress lines on stderr\n"
"    -h, --help         this text\n"
"\n"
"    BYTES accept the suffixes K, M and G (powers of 1024).\n"
"\n"
"OUTPUT\n"
"    Per trace, what loading found (requests, footprint, folding, skipped records)\n"
"    and one table row per run.  With --json: {\"config\", \"traces\": [...],\n"
"    \"runs\": [...]}, each run with read_line_hit_ratio, read_request_hit_ratio,\n"
"    read_byte_hit_ratio, backing_reads, backing_bytes_read,\n"
"    backing_reads_for_client_reads, backing_bytes_read_for_client_reads,\n"
"    cache_bytes_written, cache_bytes_written_for_client_reads,\n"
"    hdd_model_read_miss_s and the raw counters.  Progress goes to stderr.\n"
"\n"
"EXIT STATUS\n"
"    0 when every run completed, 1 on an error (the message names the call or the\n"
"    trace record at fault), 2 on a usage error.\n"
"\n"
"EXAMPLES\n"
"    tc-bench-fill\n"
"    tc-bench-fill --json > fill.json\n"
"    tc-bench-fill --trace my.vscsi --cache-pct 5 --line-size 64K\n"
"    TC_TRACES_DIR=/data/traces tc-bench-fill --max-requests 20000\n",
		TC_SOURCE_ROOT, MAX_TRACES);
}



static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);

	if (errno || end == s || *end || *s == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);

	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static void parse_fills(const char *arg)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	g_opt.nfills = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int f = !strcmp(t, "sectors") ? TC_FILL_SECTORS : !strcmp(t, "line") ?
			TC_FILL_LINE : -1;
		if (f < 0)
			bad_usage("--fill: '%s' is neither sectors nor line", t);
		if (g_opt.nfills == 2)
			bad_usage("--fill: '%s': at most two policies", arg);
		g_opt.fills[g_opt.nfills++] = f;
	}
	if (!g_opt.nfills)
		bad_usage("--fill: '%s' names no policy", arg);
}

static void parse_line_sizes(const char *arg)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	g_opt.nline_sizes = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (tc_size_parse(t, &v) || v < 4 * KIB || v > 64 * KIB || (v & (v - 1)))
			bad_usage("--line-size: '%s' is not a power of two in 4K..64K", t);
		if (g_opt.nline_sizes == 4)
			bad_usage("--line-size: '%s': at most four sizes", arg);
		g_opt.line_sizes[g_opt.nline_sizes++] = (uint32_t)v;
	}
	if (!g_opt.nline_sizes)
		bad_usage("--line-size: '%s' names no size", arg);
}

static bool ends_with(const char *p, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(p + n - k, suffix, k);
}

/* fmt_of_suffix - .vscsi (before a compression suffix, if any): vscsi, else mqsim. */
static enum fmt fmt_of_suffix(const char *p)
{
	static const char *const comp[] = { ".gz", ".bz2", ".xz", ".zst" };
	size_t n = strlen(p);

	for (size_t i = 0; i < sizeof(comp) / sizeof(comp[0]); i++)
		if (ends_with(p, n, comp[i])) {
			n -= strlen(comp[i]);
			break;
		}
	return ends_with(p, n, ".vscsi") ? FMT_VSCSI : FMT_MQSIM;
}

static void parse_args(int argc, char **argv)
{
	enum {
		O_TRACE = 256, O_FORMAT, O_FILL, O_LINE, O_PCT, O_MAXREQ, O_WP, O_ADM, O_NHIT,
		O_SEQ, O_REPL, O_FLUSH, O_CAP, O_TICKS, O_SEEK, O_MBPS, O_SEED, O_JSON, O_QUIET,
	};
	static const struct option lo[] = {
		{ "trace", required_argument, NULL, O_TRACE },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "fill", required_argument, NULL, O_FILL },
		{ "line-size", required_argument, NULL, O_LINE },
		{ "cache-pct", required_argument, NULL, O_PCT },
		{ "max-requests", required_argument, NULL, O_MAXREQ },
		{ "write-policy", required_argument, NULL, O_WP },
		{ "admission", required_argument, NULL, O_ADM },
		{ "nhit", required_argument, NULL, O_NHIT },
		{ "seq-cutoff", required_argument, NULL, O_SEQ },
		{ "replacement", required_argument, NULL, O_REPL },
		{ "flush-rate", required_argument, NULL, O_FLUSH },
		{ "volume-cap", required_argument, NULL, O_CAP },
		{ "tick-steps", required_argument, NULL, O_TICKS },
		{ "hdd-seek-ms", required_argument, NULL, O_SEEK },
		{ "hdd-mbps", required_argument, NULL, O_MBPS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "json", no_argument, NULL, O_JSON },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts *o = &g_opt;
	enum fmt cur_fmt = FMT_AUTO;
	uint64_t v;
	int c, r;

	o->line_sizes[0] = 16 * KIB;
	o->line_sizes[1] = 64 * KIB;
	o->nline_sizes = 2;
	o->fills[0] = TC_FILL_SECTORS;
	o->fills[1] = TC_FILL_LINE;
	o->nfills = 2;
	o->cache_pct = 10;
	o->volume_cap = 4 * GIB;
	o->write_policy = TC_WP_WB;
	o->admission = TC_ADMIT_ALWAYS;
	o->nhit = 2;
	o->seq_cutoff = 0;
	o->replacement = TC_REPL_S3FIFO;
	o->flush_rate = TC_FLUSH_MEDIUM;
	o->tick_steps = 100;
	o->hdd_seek_ms = 8;
	o->hdd_mbps = 150;
	o->seed = 1;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_TRACE:
			if (o->ntraces == MAX_TRACES)
				bad_usage("--trace '%s': too many traces", optarg);
			o->trace_path[o->ntraces] = optarg;
			o->trace_fmt[o->ntraces++] = cur_fmt;
			break;
		case O_FORMAT:
			if (!strcmp(optarg, "vscsi"))
				cur_fmt = FMT_VSCSI;
			else if (!strcmp(optarg, "mqsim"))
				cur_fmt = FMT_MQSIM;
			else
				bad_usage("--format: '%s' is neither vscsi nor mqsim", optarg);
			for (int i = 0; i < o->ntraces; i++)
				if (o->trace_fmt[i] == FMT_AUTO)
					o->trace_fmt[i] = cur_fmt;
			break;
		case O_FILL:
			parse_fills(optarg);
			break;
		case O_LINE:
			parse_line_sizes(optarg);
			break;
		case O_PCT:
			if (parse_double(optarg, &o->cache_pct) || !(o->cache_pct > 0) ||
			    o->cache_pct > 1000)
				bad_usage("--cache-pct: '%s' is not a percentage in (0, 1000]", optarg);
			break;
		case O_MAXREQ:
			if (parse_u64(optarg, &o->max_requests))
				bad_usage("--max-requests: '%s' is not a count", optarg);
			break;
		case O_WP:
			r = tc_write_policy_parse(optarg);
			if (r < 0)
				bad_usage("--write-policy: '%s' is not one of wt, wb, wa, pt", optarg);
			o->write_policy = r;
			break;
		case O_ADM:
			if (!strcmp(optarg, "always"))
				o->admission = TC_ADMIT_ALWAYS;
			else if (!strcmp(optarg, "nhit"))
				o->admission = TC_ADMIT_NHIT;
			else
				bad_usage("--admission: '%s' is neither always nor nhit", optarg);
			break;
		case O_NHIT:
			if (parse_u64(optarg, &v) || v < 1 || v > 255)
				bad_usage("--nhit: '%s' is not in 1..255", optarg);
			o->nhit = (uint32_t)v;
			break;
		case O_SEQ:
			if (tc_size_parse(optarg, &o->seq_cutoff))
				bad_usage("--seq-cutoff: '%s' is not a byte count", optarg);
			break;
		case O_REPL:
			r = tc_replacement_parse(optarg);
			if (r < 0)
				bad_usage("--replacement: '%s' is neither lru nor s3fifo", optarg);
			o->replacement = r;
			break;
		case O_FLUSH:
			r = tc_flush_rate_parse(optarg);
			if (r < 0)
				bad_usage("--flush-rate: '%s' is not one of low, medium, high", optarg);
			o->flush_rate = r;
			break;
		case O_CAP:
			if (tc_size_parse(optarg, &o->volume_cap) || o->volume_cap < MIB ||
			    o->volume_cap > 16 * GIB || (o->volume_cap & (o->volume_cap - 1)))
				bad_usage("--volume-cap: '%s' is not a power of two in 1M..16G", optarg);
			break;
		case O_TICKS:
			if (parse_u64(optarg, &v) || v > 100000)
				bad_usage("--tick-steps: '%s' is not in 0..100000", optarg);
			o->tick_steps = (unsigned)v;
			break;
		case O_SEEK:
			if (parse_double(optarg, &o->hdd_seek_ms) || o->hdd_seek_ms < 0)
				bad_usage("--hdd-seek-ms: '%s' is not a time in ms", optarg);
			break;
		case O_MBPS:
			if (parse_double(optarg, &o->hdd_mbps) || !(o->hdd_mbps > 0))
				bad_usage("--hdd-mbps: '%s' is not a positive rate", optarg);
			break;
		case O_SEED:
			if (parse_u64(optarg, &o->seed))
				bad_usage("--seed: '%s' is not a number", optarg);
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'tc-bench-fill --help'.\n");
			exit(2);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	if (o->nfills * o->nline_sizes * (o->ntraces ? o->ntraces : 2) > MAX_RUNS)
		bad_usage("%s", "too many runs");

	if (!o->ntraces) {
		static const char *const rel[2] = { "libcachesim/cloudPhysicsIO.vscsi.xz",
						    "mqsim/tpcc-small.trace.xz" };
		const char *dir = getenv("TC_TRACES_DIR");

		if (!dir || !*dir)
			dir = TC_SOURCE_ROOT "/traces";
		for (int i = 0; i < 2; i++) {
			size_t n = strlen(dir) + 1 + strlen(rel[i]) + 1;
			char *p = xmalloc(n);

			snprintf(p, n, "%s/%s", dir, rel[i]);
			o->trace_path[i] = p;
		}
		o->trace_fmt[0] = FMT_VSCSI;
		o->trace_fmt[1] = FMT_MQSIM;
		o->ntraces = 2;
	}
	for (int i = 0; i < o->ntraces; i++)
		if (o->trace_fmt[i] == FMT_AUTO)
			o->trace_fmt[i] = fmt_of_suffix(o->trace_path[i]);
}

int main(int argc, char **argv)
{
	const struct opts *o = &g_opt;
	uint64_t t0 = now_ns();

	parse_args(argc, argv);
	for (int i = 0; i < o->ntraces; i++) {
		struct fill_trace *t = &g_traces[i];

		t->path = o->trace_path[i];
		t->fmt = o->trace_fmt[i];
		load_trace(t);
	}
	if (!o->json)
		printf("tc-bench-fill: deterministic context (seed %" PRIu64 "), memory devices, "
		       "QD 1; write policy %s, flush rate %s, admission %s, seq_cutoff %" PRIu64
		       ", %s; HDD model %.1f ms + bytes / %.0f MB/s per fetch\n\n",
		       o->seed, tc_write_policy_name((unsigned)o->write_policy),
		       tc_flush_rate_name((unsigned)o->flush_rate), admission_name(o->admission),
		       o->seq_cutoff, tc_replacement_name((unsigned)o->replacement),
		       o->hdd_seek_ms, o->hdd_mbps);
	for (int i = 0; i < o->ntraces; i++) {
		int first = g_nruns;

		for (int l = 0; l < o->nline_sizes; l++)
			for (int f = 0; f < o->nfills; f++) {
				struct run *r = &g_runs[g_nruns++];

				r->t = &g_traces[i];
				r->line_size = o->line_sizes[l];
				r->fill = o->fills[f];
				if (!o->quiet)
					fprintf(stderr, "tc-bench-fill: %s, %" PRIu32 " KiB lines, fill "
						"%s ...\n", r->t->name, r->line_size / 1024,
						fill_name(r->fill));
				replay(r);
			}
		if (!o->json) {
			print_trace(&g_traces[i]);
			print_table(first, g_nruns - first);
			printf("\n");
			fflush(stdout);
		}
	}
	if (o->json)
		print_json();
	else
		printf("total wall time %.1f s\n", (double)(now_ns() - t0) / 1e9);
	return 0;
}
