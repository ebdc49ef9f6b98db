/* SPDX-License-Identifier: MIT */
/*
 * ctl_page.c - the status page of `tiercache serve --http` (GET /) and the history of
 * samples its plots draw (ctl_http.h).
 *
 * The page is one HTML document with everything inline: a short style sheet, tables of
 * the volumes, caches, arrays and members, and plots drawn here as SVG polylines, so a
 * browser needs nothing else (no script, no font, no network) and the page works on a
 * host without internet access.  It refreshes itself every sample interval.
 *
 * The history keeps, per volume, a ring of CTL_HISTORY_SAMPLES samples.  A sample is
 * computed from the differences of two snapshots of the counters and the latency
 * histograms: the hit ratio and the latencies of that interval alone, not since start
 * (a histogram's difference is a histogram of the interval's requests, since the
 * buckets only ever grow; after a `stats --reset` the new counts are the interval's).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_http.h"
#include "ctl_snap.h"

/* ---- the history ----------------------------------------------------------------- */

struct sample {
	int64_t t;                 /* unix time, s */
	double hit_ratio;          /* full read hits per cache line read; NAN: no reads */
	double read_mean, read_p99;   /* ns; NAN: no reads */
	double write_mean, write_p99; /* ns; NAN: no writes */
	uint64_t dirty;            /* bytes, now */
};

struct vol_history {
	char name[TC_NAME_MAX];
	bool have_prev;
	uint64_t prev_hits, prev_lines;
	struct tc_hist *prev[2];   /* reads, writes: hit and miss classes merged */
	struct sample ring[CTL_HISTORY_SAMPLES];
	unsigned head, n;          /* next slot, samples held */
};

struct ctl_history {
	pthread_mutex_t lock;
	struct vol_history **v;
	unsigned nv;
};

struct ctl_history *ctl_history_new(void)
{
	struct ctl_history *h = calloc(1, sizeof(*h));
	if (h)
		pthread_mutex_init(&h->lock, NULL);
	return h;
}

void ctl_history_free(struct ctl_history *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->nv; i++) {
		free(h->v[i]->prev[0]);
		free(h->v[i]->prev[1]);
		free(h->v[i]);
	}
	free(h->v);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* The volume's history, created on first sight.  Under h->lock. */
static struct vol_history *vol_history(struct ctl_history *h, const char *name)
{
	for (unsigned i = 0; i < h->nv; i++)
		if (!strcmp(h->v[i]->name, name))
			return h->v[i];
	struct vol_history **nv = realloc(h->v, sizeof(*nv) * (h->nv + 1));
	if (!nv)
		return NULL;
	h->v = nv;
	struct vol_history *v = calloc(1, sizeof(*v));
	if (v)
		v->prev[0] = malloc(sizeof(struct tc_hist));
	if (v && v->prev[0])
		v->prev[1] = malloc(sizeof(struct tc_hist));
	if (!v || !v->prev[1]) {
		if (v)
			free(v->prev[0]);
		free(v);
		return NULL;
	}
	snprintf(v->name, sizeof(v->name), "%s", name);
	h->v[h->nv++] = v;
	return v;
}

/* @cur minus @prev into @d (the interval's requests), or @cur itself when the counts
 * went down (a reset in between).  Then the mean and 99th percentile, NAN when empty. */
static void interval_latency(const struct tc_hist *cur, const struct tc_hist *prev,
			     bool have_prev, struct tc_hist *d, double *mean, double *p99)
{
	if (!have_prev || cur->count < prev->count) {
		*d = *cur;
	} else {
		d->count = cur->count - prev->count;
		d->sum = cur->sum - prev->sum;
		d->min = 0;
		d->max = cur->max;
		for (unsigned i = 0; i < TC_HIST_BUCKETS; i++)
			d->b[i] = cur->b[i] >= prev->b[i] ? cur->b[i] - prev->b[i] : 0;
	}
	*mean = d->count ? (double)(d->sum / d->count) : NAN;
	*p99 = d->count ? (double)tc_hist_percentile(d, 99) : NAN;
}

int ctl_history_sample(struct ctl_history *h, tc_host *host)
{
	struct ctl_snap s;
	int r = ctl_snap_take(host, &s);
	if (r)
		return r;
	struct tc_hist *cur[2], *d;
	cur[0] = malloc(sizeof(**cur));
	cur[1] = malloc(sizeof(**cur));
	d = malloc(sizeof(*d));
	if (!cur[0] || !cur[1] || !d)
		r = -ENOMEM;
	int64_t now = (int64_t)time(NULL);
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; !r && i < s.nvol; i++) {
		const struct ctl_vol_snap *vs = &s.vol[i];
		if (!vs->engine)
			continue;
		struct vol_history *v = vol_history(h, vs->name);
		if (!v) {
			r = -ENOMEM;
			break;
		}
		*cur[0] = *vs->lat[TC_LAT_READ_HIT];
		tc_hist_merge(cur[0], vs->lat[TC_LAT_READ_MISS]);
		*cur[1] = *vs->lat[TC_LAT_WRITE_HIT];
		tc_hist_merge(cur[1], vs->lat[TC_LAT_WRITE_MISS]);
		uint64_t hits = vs->st.read_hits;
		uint64_t lines = hits + vs->st.read_partial_hits + vs->st.read_misses;
		struct sample *sm = &v->ring[v->head];
		sm->t = now;
		sm->dirty = vs->st.dirty_bytes;
		bool fresh = !v->have_prev || lines < v->prev_lines || hits < v->prev_hits;
		uint64_t dh = fresh ? hits : hits - v->prev_hits;
		uint64_t dl = fresh ? lines : lines - v->prev_lines;
		sm->hit_ratio = dl ? (double)dh / (double)dl : NAN;
		interval_latency(cur[0], v->prev[0], v->have_prev, d, &sm->read_mean,
				 &sm->read_p99);
		interval_latency(cur[1], v->prev[1], v->have_prev, d, &sm->write_mean,
				 &sm->write_p99);
		*v->prev[0] = *cur[0];
		*v->prev[1] = *cur[1];
		v->prev_hits = hits;
		v->prev_lines = lines;
		v->have_prev = true;
		v->head = (v->head + 1) % CTL_HISTORY_SAMPLES;
		if (v->n < CTL_HISTORY_SAMPLES)
			v->n++;
	}
	pthread_mutex_unlock(&h->lock);
	free(cur[0]);
	free(cur[1]);
	free(d);
	ctl_snap_free(&s);
	return r;
}

/* ---- HTML ------------------------------------------------------------------------ */

static void html(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* Bytes with a binary suffix, as the command prints them ("1.5 GiB"). */
static void bytes(FILE *f, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	unsigned u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u)
		fprintf(f, "%.1f %s", v, unit[u]);
	else
		fprintf(f, "%" PRIu64 " B", b);
}

/* A duration from ns: "850 us", "12.3 ms", "1 h 02 min"... */
static void duration(FILE *f, double ns)
{
	if (ns < 1e3)
		fprintf(f, "%.0f ns", ns);
	else if (ns < 1e6)
		fprintf(f, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		fprintf(f, "%.1f ms", ns / 1e6);
	else if (ns < 60e9)
		fprintf(f, "%.1f s", ns / 1e9);
	else if (ns < 3600e9)
		fprintf(f, "%.0f min %02.0f s", floor(ns / 60e9), fmod(ns / 1e9, 60));
	else
		fprintf(f, "%.0f h %02.0f min", floor(ns / 3600e9), fmod(ns / 60e9, 60));
}

static const char style[] =
	"body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff}"
	"h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}"
	"table{border-collapse:collapse;margin:.5em 0}"
	"th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left}"
	"th{background:#e8eef6}td.num{text-align:right;white-space:nowrap}"
	".cached,.active,.idle{color:#176c2e}.degraded,.rebuilding,.rebuild,.check,.repair,"
	".spare{color:#a65f00}.failed,.faulty,.no-backing,.uncached{color:#b00020}"
	".warn{color:#b00020}"
	"svg{border:1px solid #bbb;margin:.3em .6em .3em 0;background:#fcfcfc}"
	"svg text{font-size:11px;fill:#444}"
	".plots{display:flex;flex-wrap:wrap}";

static void write_volume_table(FILE *f, const struct ctl_snap *s)
{
	fputs("<h2>Volumes</h2>\n<table id=\"volumes\"><tr><th>volume</th><th>state</th>"
	      "<th>write policy</th><th>in force</th><th>size</th><th>dirty</th><th>cached"
	      "</th><th>read hit ratio</th><th>reads</th><th>writes</th><th>cache</th>"
	      "<th>backing</th></tr>\n", f);
	for (unsigned i = 0; i < s->nvol; i++) {
		const struct ctl_vol_snap *v = &s->vol[i];
		fputs("<tr class=\"volume\" id=\"volume-", f);
		html(f, v->name);
		fputs("\"><td class=\"name\">", f);
		html(f, v->name);
		fprintf(f, "</td><td class=\"state %s\">%s</td>", v->state, v->state);
		bool settings = v->engine || !strcmp(v->state, "no-backing");
		fprintf(f, "<td class=\"policy\">%s</td>",
			settings ? tc_write_policy_name(v->set.write_policy) : "-");
		fputs("<td class=\"effective\">", f);
		if (v->engine) {
			fputs(tc_write_policy_name(v->st.effective_policy), f);
			if (v->st.policy_reason && *v->st.policy_reason) {
				fputs(" <span class=\"warn\">(", f);
				html(f, v->st.policy_reason);
				fputs(")</span>", f);
			}
		} else {
			fputs("-", f);
		}
		fputs("</td><td class=\"num size\">", f);
		bytes(f, v->info.size);
		fputs("</td><td class=\"num dirty\">", f);
		bytes(f, v->st.dirty_bytes);
		fputs("</td><td class=\"num cached-bytes\">", f);
		bytes(f, v->st.cached_bytes);
		fputs("</td><td class=\"num hit-ratio\">", f);
		uint64_t lines = v->st.read_hits + v->st.read_partial_hits + v->st.read_misses;
		if (v->engine && lines)
			fprintf(f, "%.1f %%", 100.0 * (double)v->st.read_hits / (double)lines);
		else
			fputs("-", f);
		fprintf(f, "</td><td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
			"</td><td>", v->st.reads, v->st.writes);
		html(f, v->info.cache ? v->info.cache : "-");
		fputs("</td><td>", f);
		html(f, v->info.backing ? v->info.backing : "-");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void write_cache_table(FILE *f, const struct ctl_snap *s)
{
	fputs("<h2>Caches</h2>\n<table id=\"caches\"><tr><th>cache</th><th>line size</th>"
	      "<th>lines used</th><th>dirty</th><th>redundancy</th><th>write-back</th></tr>\n",
	      f);
	for (unsigned i = 0; i < s->ncache; i++) {
		const struct tc_cache_stats *c = &s->cache[i].st;
		fputs("<tr class=\"cache\"><td class=\"name\">", f);
		html(f, s->cache[i].spec);
		fputs("</td><td class=\"num\">", f);
		bytes(f, c->line_size);
		fprintf(f, "</td><td class=\"num\">%" PRIu64 " of %" PRIu64 " (%.1f %%)</td>"
			"<td class=\"num\">", c->lines_used, c->lines,
			c->lines ? 100.0 * (double)c->lines_used / (double)c->lines : 0.0);
		bytes(f, c->dirty_bytes);
		fprintf(f, "</td><td class=\"num\">%u</td><td>%s</td></tr>\n", c->redundancy,
			c->writeback_held ? "<span class=\"warn\">held: write-through</span>" :
			c->unprotected_writeback && !c->redundancy ?
			"<span class=\"warn\">allowed without redundancy</span>" : "protected");
	}
	fputs("</table>\n", f);
}

/* The global hot spares, one line: each device and its size, or none. */
static void write_spares(FILE *f, const struct ctl_snap *s)
{
	fputs("<p id=\"global-spares\">Global hot spares (any array takes one when a member "
	      "fails): ", f);
	if (!s->nspare)
		fputs("none", f);
	for (unsigned i = 0; i < s->nspare; i++) {
		fputs(i ? ", <code>" : "<code>", f);
		html(f, s->spare[i].spec);
		fputs("</code> (", f);
		bytes(f, s->spare[i].size);
		fputs(")", f);
	}
	fputs(".</p>\n", f);
}

static void write_array_table(FILE *f, const struct ctl_snap *s)
{
	fputs("<h2>Arrays</h2>\n<table id=\"arrays\"><tr><th>array</th><th>level</th>"
	      "<th>state</th><th>redundancy</th><th>size</th><th>pass</th><th>progress</th>"
	      "<th>rate</th><th>ETA</th></tr>\n", f);
	for (unsigned i = 0; i < s->narray; i++) {
		const struct tc_array_status *st = s->array[i].st;
		const char *state = ctl_array_state_name(st), *sync = ctl_sync_name(st->sync);
		fputs("<tr class=\"array\" id=\"array-", f);
		html(f, s->array[i].name);
		fputs("\"><td class=\"name\">", f);
		html(f, s->array[i].name);
		fprintf(f, "</td><td class=\"level\">%s</td><td class=\"state %s\">%s</td>"
			"<td class=\"num\">%d</td><td class=\"num\">", tc_raid_level_name(st->level),
			state, state, st->redundancy);
		bytes(f, st->size);
		fprintf(f, "</td><td class=\"sync %s\">%s</td><td class=\"num progress\">", sync,
			sync);
		if (st->sync != TC_ARRAY_SYNC_IDLE && st->sync_end)
			fprintf(f, "%.1f %%", 100.0 * (double)st->sync_pos / (double)st->sync_end);
		else
			fputs("-", f);
		fputs("</td><td class=\"num\">", f);
		if (st->sync != TC_ARRAY_SYNC_IDLE) {
			bytes(f, st->sync_rate);
			fputs("/s", f);
		} else {
			fputs("-", f);
		}
		fputs("</td><td class=\"num eta\">", f);
		if (st->sync != TC_ARRAY_SYNC_IDLE && st->sync_eta_ns)
			duration(f, (double)st->sync_eta_ns);
		else
			fputs("-", f);
		fputs("</td></tr>\n", f);
		/* Its members, then its spares and retired members. */
		fputs("<tr><td></td><td colspan=\"8\"><table class=\"members\"><tr><th>slot</th>"
		      "<th>member</th><th>state</th><th>size</th><th>read errors</th>"
		      "<th>corrected</th></tr>\n", f);
		for (unsigned m = 0; m < st->members + st->nextra; m++) {
			const struct tc_array_member_status *ms = m < st->members ? &st->member[m] :
				&st->extra[m - st->members];
			const char *mst = ctl_member_state_name(ms->state);
			fputs("<tr class=\"member\" data-array=\"", f);
			html(f, s->array[i].name);
			if (m < st->members)
				fprintf(f, "\"><td class=\"num\">%u</td><td>", m);
			else
				fputs("\"><td>-</td><td>", f);
			html(f, ms->name);
			if (ms->replacing) {
				fputs(" (replacing ", f);
				html(f, ms->replacing);
				fputs(")", f);
			}
			fprintf(f, "</td><td class=\"state %s\">%s</td><td class=\"num\">", mst, mst);
			bytes(f, ms->size);
			fprintf(f, "</td><td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
				"</td></tr>\n", ms->read_errors, ms->corrected);
		}
		fputs("</table></td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* ---- plots ----------------------------------------------------------------------- */

#define PLOT_W 560
#define PLOT_H 170
#define PLOT_L 58      /* left margin: the y labels */
#define PLOT_R 10
#define PLOT_T 22      /* top: the title */
#define PLOT_B 20      /* bottom: the time labels */

struct line {
	const char *label, *color;
	size_t off;        /* of a double in struct sample */
};

static double sample_value(const struct sample *sm, size_t off)
{
	return *(const double *)((const char *)sm + off);
}

/* One plot: the @nlines series of the volume's samples over time, y from 0 to the
 * largest value (@ymax_fixed when > 0), as polylines broken where a value is missing. */
static void plot(FILE *f, const struct vol_history *v, const char *id, const char *title,
		 const struct line *lines, unsigned nlines, double ymax_fixed, bool ns)
{
	unsigned first = (v->head + CTL_HISTORY_SAMPLES - v->n) % CTL_HISTORY_SAMPLES;
	const struct sample *s0 = &v->ring[first];
	const struct sample *s1 = &v->ring[(v->head + CTL_HISTORY_SAMPLES - 1) %
					   CTL_HISTORY_SAMPLES];
	double ymax = ymax_fixed;
	for (unsigned k = 0; ymax_fixed <= 0 && k < v->n; k++)
		for (unsigned l = 0; l < nlines; l++) {
			double y = sample_value(&v->ring[(first + k) % CTL_HISTORY_SAMPLES],
						lines[l].off);
			if (!isnan(y) && y > ymax)
				ymax = y;
		}
	if (ymax <= 0)
		ymax = 1;
	double span = (double)(s1->t - s0->t);
	if (span <= 0)
		span = 1;
	const double pw = PLOT_W - PLOT_L - PLOT_R, ph = PLOT_H - PLOT_T - PLOT_B;
	fprintf(f, "<svg class=\"plot\" id=\"%s-", id);
	html(f, v->name);
	fprintf(f, "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">", PLOT_W, PLOT_H, PLOT_W, PLOT_H);
	fprintf(f, "<text x=\"%d\" y=\"14\">", PLOT_L);
	html(f, v->name);
	fprintf(f, ": %s</text>", title);
	unsigned lx = PLOT_W - PLOT_R;
	for (unsigned l = nlines; l-- > 0;) {
		lx -= 8 + 7 * (unsigned)strlen(lines[l].label);
		fprintf(f, "<text x=\"%u\" y=\"14\" style=\"fill:%s\">%s</text>", lx,
			lines[l].color, lines[l].label);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#999\"/>", PLOT_L, PLOT_T, pw, ph);
	for (unsigned g = 0; g <= 2; g++) {
		double y = PLOT_T + ph - ph * g / 2.0;
		fprintf(f, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">", PLOT_L - 4, y + 4);
		if (ns)
			duration(f, ymax * g / 2.0);
		else
			fprintf(f, "%.0f %%", 100 * ymax * g / 2.0);
		fputs("</text>", f);
		if (g == 1)
			fprintf(f, "<line x1=\"%d\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
				"stroke=\"#ddd\"/>", PLOT_L, y, PLOT_L + pw, y);
	}
	char t0[16], t1[16];
	time_t a = (time_t)s0->t, b = (time_t)s1->t;
	struct tm tm;
	strftime(t0, sizeof(t0), "%H:%M:%S", gmtime_r(&a, &tm));
	strftime(t1, sizeof(t1), "%H:%M:%S", gmtime_r(&b, &tm));
	fprintf(f, "<text x=\"%d\" y=\"%d\">%s UTC</text><text x=\"%.0f\" y=\"%d\" "
		"text-anchor=\"end\">%s</text>", PLOT_L, PLOT_H - 5, t0, PLOT_L + pw, PLOT_H - 5,
		t1);
	for (unsigned l = 0; l < nlines; l++) {
		bool open = false;
		for (unsigned k = 0; k < v->n; k++) {
			const struct sample *sm = &v->ring[(first + k) % CTL_HISTORY_SAMPLES];
			double y = sample_value(sm, lines[l].off);
			if (isnan(y)) {
				if (open)
					fputs("\"/>", f);
				open = false;
				continue;
			}
			double px = PLOT_L + pw * (double)(sm->t - s0->t) / span;
			double py = PLOT_T + ph - ph * (y > ymax ? 1 : y / ymax);
			if (!open)
				fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
					"points=\"", lines[l].color);
			fprintf(f, "%s%.1f,%.1f", open ? " " : "", px, py);
			open = true;
		}
		if (open)
			fputs("\"/>", f);
	}
	fputs("</svg>\n", f);
}

static void write_plots(FILE *f, struct ctl_history *h, const struct ctl_snap *s)
{
	static const struct line hit[] = {
		{ "read hit ratio", "#1f5fbf", offsetof(struct sample, hit_ratio) },
	};
	static const struct line lat[] = {
		{ "read mean", "#1f5fbf", offsetof(struct sample, read_mean) },
		{ "read p99", "#8fb0e6", offsetof(struct sample, read_p99) },
		{ "write mean", "#c0392b", offsetof(struct sample, write_mean) },
		{ "write p99", "#eaa59c", offsetof(struct sample, write_p99) },
	};
	fputs("<h2>Over time</h2>\n", f);
	pthread_mutex_lock(&h->lock);
	unsigned drawn = 0;
	for (unsigned i = 0; i < s->nvol; i++) {
		const struct vol_history *v = NULL;
		for (unsigned k = 0; k < h->nv && !v; k++)
			if (!strcmp(h->v[k]->name, s->vol[i].name))
				v = h->v[k];
		if (!v || !v->n)
			continue;
		fputs("<div class=\"plots\">", f);
		plot(f, v, "hit-ratio", "read hit ratio", hit, 1, 1.0, false);
		plot(f, v, "latency", "latency", lat, 4, 0, true);
		fputs("</div>\n", f);
		drawn++;
	}
	pthread_mutex_unlock(&h->lock);
	if (!drawn)
		fputs("<p>No samples yet.</p>\n", f);
}

int ctl_page_write(tc_host *host, struct ctl_history *hist, unsigned refresh_s, FILE *f)
{
	struct ctl_snap s;
	int r = ctl_snap_take(host, &s);
	if (r)
		return r;
	char now[64];
	time_t t = time(NULL);
	struct tm tm;
	strftime(now, sizeof(now), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">", f);
	if (refresh_s)
		fprintf(f, "<meta http-equiv=\"refresh\" content=\"%u\">", refresh_s);
	fprintf(f, "<title>tiercache status</title><style>%s</style></head>\n<body>\n"
		"<h1>tiercache " TC_VERSION "</h1>\n<p>As of <span id=\"now\">%s</span>: "
		"%u volume(s), %u cache(s), %u array(s). Metrics for Prometheus: "
		"<a href=\"/metrics\">/metrics</a>; the same as <code>tiercache status --json"
		"</code>: <a href=\"/status.json\">/status.json</a>.</p>\n", style, now, s.nvol,
		s.ncache, s.narray);
	write_volume_table(f, &s);
	write_cache_table(f, &s);
	write_array_table(f, &s);
	write_spares(f, &s);
	if (hist)
		write_plots(f, hist, &s);
	fputs("</body></html>\n", f);
	ctl_snap_free(&s);
	return ferror(f) ? -ENOMEM : 0;
}
