/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the replay engine (see replay.h): layout of source volumes, the library
 * driver on a virtual clock, the NBD driver on the real clock.
 *
 * Requests in flight live in slots (a struct tc_io plus bookkeeping), recycled through
 * a free list; every slot reads into one shared buffer and writes from another: the
 * data is never checked, and in both modes every transfer runs on this thread (work
 * items in library mode, libnbd's notify calls in NBD mode), so sharing is safe.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TC_HAVE_LIBNBD
#include <libnbd.h>
#endif

#include "replay.h"
#include "tiercache-test.h"   /* tc_cache_abandon: a stalled engine (see lib_run) */

#define PROGRESS_EVERY 512u          /* requests between progress calls */
#define DIRTY_SAMPLE_EVERY 64u       /* requests between dirty samples */
#define POLL_BATCH 256u              /* work items per tc_ctx_poll() */
#define LATE_NS 1000000ull           /* NBD timed mode: late when submitted >= 1 ms after
				      * its arrival time */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ------------------------------------------------------------------------------------
 * Layout.
 */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void replay_map_req(const struct replay_map *m, const struct trace_req *r,
		       uint64_t *off, uint32_t *len)
{
	uint64_t size = m->size[r->vol], o = r->offset;
	uint32_t l = r->length;

	if (l > size)
		l = (uint32_t)size;
	if (o + l > size) {
		o %= size;
		if (o + l > size)
			o = size - l;
	}
	*off = m->base[r->vol] + o;
	*len = l;
}

void replay_map_free(struct replay_map *m)
{
	free(m->base);
	free(m->size);
	memset(m, 0, sizeof(*m));
}

int replay_map_build(const struct trace *t, uint64_t capacity, struct replay_map *m,
			char *err, size_t errlen)
{
	uint32_t *order = NULL;
	uint64_t *pages = NULL;
	int r = -ENOMEM;

	memset(m, 0, sizeof(*m));
	m->nvols = t->nvols;
	m->base = calloc(t->nvols ? t->nvols : 1, sizeof(*m->base));
	m->size = calloc(t->nvols ? t->nvols : 1, sizeof(*m->size));
	order = malloc((t->nvols ? t->nvols : 1) * sizeof(*order));
	if (!m->base || !m->size || !order)
		goto nomem;

	/* Water-filling of the capacity over the regions, smallest extent first. */
	uint32_t n = 0;
	for (uint32_t v = 0; v < t->nvols; v++)
		if (t->vols[v].kept)
			order[n++] = v;
	m->regions = n;
	for (uint32_t i = 1; i < n; i++) {            /* insertion sort by extent */
		uint32_t x = order[i], j = i;
		while (j > 0 && t->vols[order[j - 1]].max_end > t->vols[x].max_end) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = x;
	}
	uint64_t remaining = capacity / REPLAY_ALIGN * REPLAY_ALIGN;
	if (remaining / REPLAY_ALIGN < n) {
		snprintf(err, errlen, "%s: %" PRIu32 " source volumes need at least %" PRIu64
			 " bytes (1 MiB each); the volume has %" PRIu64, t->path, n,
			 (uint64_t)n * REPLAY_ALIGN, capacity);
		r = -ENOSPC;
		goto fail;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct trace_vol *v = &t->vols[order[i]];
		uint64_t share = remaining / (n - i) / REPLAY_ALIGN * REPLAY_ALIGN;
		uint64_t ext = round_up(v->max_end, REPLAY_ALIGN);
		uint64_t size = ext < share ? ext : share;
		m->size[order[i]] = size;
		remaining -= size;
		m->extent += v->max_end;
	}
	uint64_t off = 0;
	for (uint32_t v = 0; v < t->nvols; v++) {
		m->base[v] = off;
		off += m->size[v];
	}
	m->total = off;

	/* Folding and the footprint: unique 4 KiB pages after the layout. */
	size_t npages = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t o;
		uint32_t l;
		replay_map_req(m, &t->req[i], &o, &l);
		npages += (size_t)(round_up(o + l, TC_UNIT_SIZE) / TC_UNIT_SIZE - o / TC_UNIT_SIZE);
		if (o - m->base[t->req[i].vol] != t->req[i].offset || l != t->req[i].length)
			m->folded++;
		if (l > m->max_len)
			m->max_len = l;
	}
	pages = malloc((npages ? npages : 1) * sizeof(*pages));
	if (!pages)
		goto nomem;
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t o;
		uint32_t l;
		replay_map_req(m, &t->req[i], &o, &l);
		for (uint64_t p = o / TC_UNIT_SIZE; p < round_up(o + l, TC_UNIT_SIZE) / TC_UNIT_SIZE; p++)
			pages[k++] = p;
	}
	qsort(pages, k, sizeof(*pages), cmp_u64);
	uint64_t uniq = 0;
	for (size_t i = 0; i < k; i++)
		if (i == 0 || pages[i] != pages[i - 1])
			uniq++;
	m->footprint = uniq * TC_UNIT_SIZE;
	free(pages);
	free(order);
	return 0;
nomem:
	snprintf(err, errlen, "%s: out of memory laying out %zu requests", t->path, t->n);
fail:
	free(pages);
	free(order);
	replay_map_free(m);
	return r;
}

/* ------------------------------------------------------------------------------------
 * Options, cache geometry.
 */

void replay_opts_default(struct replay_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->devices = REPLAY_DEV_EMU;
	tc_cache_opts_default(&o->cache);
	/* The replay's cache devices are its own scratch devices: write-back on them
	 * needs no redundancy (there is no data to lose). */
	o->cache.unprotected_writeback = true;
	tc_volume_settings_default(&o->settings);
	o->speed = 1.0;
	o->seed = 1;
}

/* ------------------------------------------------------------------------------------
 * Slots and accounting, shared by both drivers.
 */

struct replay;

struct slot {
	struct tc_io io;
	struct iovec iov;
	struct replay *rp;
	struct slot *next_free;
	uint64_t t_start;          /* ns, replay clock: arrival (timed) or submission */
	uint32_t len;
	bool write, measured;
};

struct replay {
	const struct trace *t;
	const struct replay_map *m;
	struct replay_opts *o;
	struct replay_result *res;
	char *err;
	size_t errlen;
	/* Library mode. */
	tc_ctx *ctx;
	tc_volume *vol;
	tc_dev *bdev, *cdev;
	struct tc_dev_stats b0, c0;
	/* Slots. */
	struct slot *free;
	struct slot **all;
	size_t nall, capall;
	unsigned inflight;
	void *rbuf, *wbuf;
	/* Progress of the loop. */
	size_t next;               /* next request to submit */
	size_t nreq;               /* requests to replay */
	bool measuring;
	uint64_t measure_start, last_done;   /* ns, replay clock */
	uint64_t base;             /* ns, replay clock at the start of the loop */
	int fatal;                 /* NBD: connection failed */
};

static struct slot *slot_get(struct replay *p)
{
	struct slot *s = p->free;

	if (s) {
		p->free = s->next_free;
		return s;
	}
	if (p->nall == p->capall) {
		size_t nc = p->capall ? p->capall * 2 : 64;
		struct slot **a = realloc(p->all, nc * sizeof(*a));
		if (!a)
			return NULL;
		p->all = a;
		p->capall = nc;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->rp = p;
	p->all[p->nall++] = s;
	return s;
}

static void slots_free(struct replay *p)
{
	for (size_t i = 0; i < p->nall; i++)
		free(p->all[i]);
	free(p->all);
	p->all = NULL;
	p->nall = p->capall = 0;
	p->free = NULL;
}

/* A request finished at @now (replay clock). */
static void slot_done(struct replay *p, struct slot *s, int result, uint64_t now)
{
	struct replay_result *res = p->res;

	if (s->measured) {
		uint64_t lat = now > s->t_start ? now - s->t_start : 0;
		tc_hist_record(&res->lat, lat);
		tc_hist_record(s->write ? &res->lat_write : &res->lat_read, lat);
		if (result)
			res->errors++;
		if (now > p->last_done)
			p->last_done = now;
	}
	p->inflight--;
	s->next_free = p->free;
	p->free = s;
}

/* Scaled arrival time of request @i on the replay clock. */
static uint64_t arrival(const struct replay *p, size_t i)
{
	uint64_t t = p->t->req[i].t_ns;

	if (p->o->speed != 1.0)
		t = (uint64_t)((double)t / p->o->speed);
	return p->base + t;
}

static void count_request(struct replay *p, struct slot *s)
{
	struct replay_result *res = p->res;

	res->requests++;
	if (s->write) {
		res->writes++;
		res->write_bytes += s->len;
	} else {
		res->reads++;
		res->read_bytes += s->len;
	}
}

static void progress(struct replay *p, uint64_t now)
{
	if (p->o->progress)
		p->o->progress(p->o->progress_opaque, p->next, p->nreq, now - p->base);
}

static bool stop_requested(const struct replay *p)
{
	return p->o->stop && *p->o->stop;
}

/* Submit with @submit every request due at @now (replay clock): in closed loop until
 * queue_depth are in flight, timed those whose arrival has come, up to max_inflight.
 * Stops at a fatal error (NBD).  Returns 0 or @submit's error. */
static int submit_due(struct replay *p, uint64_t now,
		      int (*submit)(struct replay *p, uint64_t t_start, uint64_t now))
{
	const struct replay_opts *o = p->o;
	unsigned cap = o->max_inflight ? o->max_inflight : 4096;

	while (!p->fatal && p->next < p->nreq) {
		uint64_t t_start = now;
		if (o->queue_depth > 0) {
			if (p->inflight >= o->queue_depth)
				break;
		} else {
			t_start = arrival(p, p->next);
			if (t_start > now || p->inflight >= cap)
				break;
		}
		int r = submit(p, t_start, now);
		if (r)
			return r;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Library mode.
 */


static void lib_done(struct tc_io *io, int result)
{
	struct slot *s = io->private_data;
	struct replay *p = s->rp;

	slot_done(p, s, result, tc_ctx_now(p->ctx));
}

static void lib_sample_dirty(struct replay *p)
{
	struct tc_volume_stats vs;

	tc_volume_stats(p->vol, &vs);
	if (vs.dirty_bytes > p->res->dirty_peak)
		p->res->dirty_peak = vs.dirty_bytes;
}

static void lib_measure_begin(struct replay *p, uint64_t now)
{
	tc_volume_stats_reset(p->vol);
	tc_dev_stats(p->bdev, &p->b0);
	tc_dev_stats(p->cdev, &p->c0);
	p->res->dirty_peak = 0;
	lib_sample_dirty(p);
	p->measuring = true;
	p->measure_start = now;
	p->last_done = now;
}

/* lib_count_pages - the 4 KiB pages of [@off, @off + @len) in *@pages, and in *@hits
 * those whose part of the range is wholly valid; @vb: the range's valid bytes (all or
 * none valid answers without a look at each page). */
static void lib_count_pages(struct replay *p, uint64_t off, uint32_t len, uint64_t vb,
			    uint64_t *pages, uint64_t *hits)
{
	uint64_t first = off / TC_UNIT_SIZE, end = off + len;

	*pages = (end + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE - first;
	if (vb == len || vb == 0) {
		*hits = vb ? *pages : 0;
		return;
	}
	*hits = 0;
	for (uint64_t pg = first; pg < first + *pages; pg++) {
		uint64_t a = pg * TC_UNIT_SIZE > off ? pg * TC_UNIT_SIZE : off;
		uint64_t b = (pg + 1) * TC_UNIT_SIZE < end ? (pg + 1) * TC_UNIT_SIZE : end;

		*hits += tc_volume_valid_bytes(p->vol, a, b - a) == b - a;
	}
}

static int lib_submit(struct replay *p, uint64_t t_start, uint64_t now)
{
	const struct trace_req *r = &p->t->req[p->next];
	struct slot *s = slot_get(p);

	if (!s) {
		snprintf(p->err, p->errlen, "out of memory with %u requests in flight", p->inflight);
		return -ENOMEM;
	}
	if (!p->measuring && p->next >= p->o->warmup)
		lib_measure_begin(p, now);
	uint64_t off;
	replay_map_req(p->m, r, &off, &s->len);
	s->write = r->write;
	s->measured = p->measuring;
	s->t_start = t_start;
	s->iov.iov_base = s->write ? p->wbuf : p->rbuf;
	s->iov.iov_len = s->len;
	s->io = (struct tc_io){ .op = s->write ? TC_OP_WRITE : TC_OP_READ, .offset = off,
				.length = s->len, .iov = &s->iov, .iovcnt = 1, .done = lib_done,
				.private_data = s };
	if (s->measured) {
		struct replay_result *res = p->res;
		uint64_t vb = tc_volume_valid_bytes(p->vol, off, s->len);
		uint64_t pages, page_hits;
		count_request(p, s);
		lib_count_pages(p, off, s->len, vb, &pages, &page_hits);
		if (s->write) {
			res->write_hit_bytes += vb;
			res->write_hits += vb == s->len;
			res->write_pages += pages;
			res->write_page_hits += page_hits;
		} else {
			res->read_hit_bytes += vb;
			res->read_hits += vb == s->len;
			res->read_pages += pages;
			res->read_page_hits += page_hits;
		}
		if (t_start < now)
			res->late++;
		if (res->requests % DIRTY_SAMPLE_EVERY == 0)
			lib_sample_dirty(p);
	}
	p->inflight++;
	p->next++;
	tc_volume_submit(p->vol, &s->io);
	if (p->next % PROGRESS_EVERY == 0)
		progress(p, now);
	return 0;
}

/* The request loop on the virtual clock. */
static int lib_loop(struct replay *p)
{
	const struct replay_opts *o = p->o;
	unsigned cap = o->max_inflight ? o->max_inflight : 4096;
	bool closed = o->queue_depth > 0, stopping = false;
	int r;

	p->base = tc_ctx_now(p->ctx);
	for (;;) {
		uint64_t now = tc_ctx_now(p->ctx);

		if (!stopping && stop_requested(p)) {
			stopping = true;
			p->res->interrupted = true;
		}
		if (!stopping) {
			r = submit_due(p, now, lib_submit);
			if (r)
				return r;
		}
		if (tc_ctx_pending(p->ctx) > 0) {
			tc_ctx_poll(p->ctx, POLL_BATCH);
			continue;
		}
		bool more = !stopping && p->next < p->nreq;
		if (!more && p->inflight == 0)
			break;

		/* Nothing to run now: move the clock to the next event. */
		uint64_t next_arr = UINT64_MAX;
		if (more && !closed && p->inflight < cap)
			next_arr = arrival(p, p->next);
		uint64_t dl = tc_ctx_next_deadline(p->ctx);
		uint64_t target = next_arr < dl ? next_arr : dl;
		if (p->inflight == 0 && next_arr != UINT64_MAX && next_arr > dl) {
			/* Idle until the next arrival: the engine's periodic timers only
			 * matter while the cleaner has dirty data to write back. */
			struct tc_volume_stats vs;
			tc_volume_stats(p->vol, &vs);
			if (vs.dirty_bytes == 0)
				target = next_arr;
		}
		if (target == UINT64_MAX) {
			snprintf(p->err, p->errlen, "replay stalled at virtual time %" PRIu64 " ns: "
				 "%u requests in flight, no work queued and no timer armed",
				 now, p->inflight);
			return -EDEADLK;
		}
		if (target > now)
			tc_ctx_advance(p->ctx, target - now);
		tc_ctx_poll(p->ctx, POLL_BATCH);
	}
	progress(p, tc_ctx_now(p->ctx));
	return 0;
}

/* After a failed loop: let the requests in flight finish (the clock moves to each
 * device deadline) so that the cache can be closed cleanly; gives up when nothing is
 * queued and no timer is armed. */
static void lib_drain(struct replay *p)
{
	while (p->inflight > 0) {
		if (tc_ctx_pending(p->ctx) == 0) {
			uint64_t dl = tc_ctx_next_deadline(p->ctx), now = tc_ctx_now(p->ctx);
			if (dl == UINT64_MAX)
				return;
			if (dl > now)
				tc_ctx_advance(p->ctx, dl - now);
		}
		tc_ctx_poll(p->ctx, POLL_BATCH);
	}
}

static int open_dev(struct replay *p, bool backing, const char *path, uint64_t size,
		    tc_dev **out)
{
	struct replay_opts *o = p->o;
	int r;

	if (o->devices == REPLAY_DEV_EMU) {
		const char *prof = backing ? (o->hdd_profile ? o->hdd_profile : "hdd") :
					     (o->ssd_profile ? o->ssd_profile : "sata-ssd");
		r = tc_dev_new_emu(p->ctx, prof, path, TC_DEV_CREATE, size, out);
		if (r != -ENOSYS) {
			if (r)
				snprintf(p->err, p->errlen, "emulated %s device (profile \"%s\") "
					 "on %s, %" PRIu64 " bytes: %s",
					 backing ? "backing" : "cache", prof, path, size, strerror(-r));
			return r;
		}
		o->fallback_file = true;
		o->devices = REPLAY_DEV_FILE;
	}
	if (o->devices == REPLAY_DEV_MEMORY)
		r = tc_dev_new_memory(p->ctx, size, out);
	else
		r = tc_dev_open_file(p->ctx, path, TC_DEV_CREATE | TC_DEV_BUFFERED, size, out);
	if (r)
		snprintf(p->err, p->errlen, "%s %s device%s%s, %" PRIu64 " bytes: %s",
			 o->devices == REPLAY_DEV_MEMORY ? "memory" : "file",
			 backing ? "backing" : "cache",
			 o->devices == REPLAY_DEV_MEMORY ? "" : " on ",
			 o->devices == REPLAY_DEV_MEMORY ? "" : path, size, strerror(-r));
	return r;
}

static const char *dev_kind(enum replay_devices d)
{
	return d == REPLAY_DEV_EMU ? "emu" : d == REPLAY_DEV_FILE ? "file" : "memory";
}

static int lib_run(struct replay *p)
{
	struct replay_opts *o = p->o;
	struct replay_result *res = p->res;
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = o->seed,
				  .log_level = TC_LOG_WARN };
	char bpath[4096], cpath[4096];
	tc_cache *cache = NULL;
	int r;

	snprintf(bpath, sizeof(bpath), "%s/backing.img", o->dir ? o->dir : ".");
	snprintf(cpath, sizeof(cpath), "%s/cache.img", o->dir ? o->dir : ".");
	uint32_t ls = o->cache.line_size;
	uint64_t lines = (o->cache_bytes + ls - 1) / ls;
	if (lines < REPLAY_MIN_LINES)
		lines = REPLAY_MIN_LINES;
	res->line_size = ls;
	res->cache_lines = lines;
	res->cache_bytes = lines * ls;
	uint64_t bsize = TC_BACKING_DATA_OFFSET + round_up(p->m->total, REPLAY_ALIGN);

	r = tc_ctx_new(&co, &p->ctx);
	if (r) {
		snprintf(p->err, p->errlen, "cannot create a deterministic context: %s",
			 strerror(-r));
		return r;
	}
	if (o->log)
		tc_ctx_set_log(p->ctx, o->log, o->log_opaque, TC_LOG_WARN);
	r = open_dev(p, true, bpath, bsize, &p->bdev);
	if (r)
		goto out;
	uint64_t csize;
	r = tc_cache_size_for(lines, ls, &csize);
	if (r) {
		snprintf(p->err, p->errlen, "a cache of %" PRIu64 " lines of %" PRIu32 " bytes: %s",
			 lines, ls, strerror(-r));
		goto out;
	}
	r = open_dev(p, false, cpath, csize, &p->cdev);
	if (r)
		goto out;
	res->devices = dev_kind(o->devices);
	r = tc_cache_format(p->ctx, p->cdev, &o->cache);
	if (r) {
		snprintf(p->err, p->errlen, "formatting the cache (%" PRIu64 " lines of %" PRIu32
			 " bytes): %s", lines, ls, strerror(-r));
		goto out;
	}
	r = tc_backing_format(p->ctx, p->bdev, "replay", &o->settings);
	if (r) {
		snprintf(p->err, p->errlen, "formatting the backing (%" PRIu64 " bytes): %s",
			 bsize, strerror(-r));
		goto out;
	}
	r = tc_cache_open(p->ctx, p->cdev, &cache);
	if (r) {
		snprintf(p->err, p->errlen, "opening the cache: %s", strerror(-r));
		goto out;
	}
	r = tc_cache_attach(cache, p->bdev, NULL, 0, &p->vol);
	if (r) {
		snprintf(p->err, p->errlen, "attaching the backing: %s", strerror(-r));
		goto out;
	}
	res->volume_size = tc_volume_size(p->vol);
	if (res->volume_size < p->m->total) {
		snprintf(p->err, p->errlen, "the volume has %" PRIu64 " bytes, the layout needs %"
			 PRIu64, res->volume_size, p->m->total);
		r = -ENOSPC;
		goto out;
	}
	struct tc_cache_stats cs;
	tc_cache_stats(cache, &cs);
	res->cache_lines = cs.lines;
	res->cache_bytes = cs.lines * cs.line_size;

	uint64_t w0 = tc_monotonic_ns();
	r = lib_loop(p);
	res->replay_wall_ns = tc_monotonic_ns() - w0;
	if (r == 0 || p->inflight == 0) {
		if (!p->measuring)
			lib_measure_begin(p, tc_ctx_now(p->ctx));
		struct tc_dev_stats b1, c1;
		tc_volume_stats(p->vol, &res->vs);
		tc_dev_stats(p->bdev, &b1);
		tc_dev_stats(p->cdev, &c1);
#define DELTA(f) res->backing.f = b1.f - p->b0.f; res->cache.f = c1.f - p->c0.f
		DELTA(reads); DELTA(writes); DELTA(flushes); DELTA(discards); DELTA(write_zeroes);
		DELTA(bytes_read); DELTA(bytes_written); DELTA(errors);
#undef DELTA
		res->dirty_end = res->vs.dirty_bytes;
		if (res->dirty_end > res->dirty_peak)
			res->dirty_peak = res->dirty_end;
		res->elapsed_ns = p->last_done - p->measure_start;
	}
	if (r == 0 && res->interrupted)
		r = -EINTR;
out:
	if (cache) {
		if (p->inflight > 0)
			lib_drain(p);
		if (p->inflight == 0) {
			int rc = tc_cache_close(cache);
			if (rc && !r) {
				snprintf(p->err, p->errlen, "closing the cache: %s", strerror(-rc));
				r = rc;
			}
		} else {
			/* Stalled with requests that will never complete: tc_cache_close()
			 * would wait for them forever, so drop the cache like a dead process. */
			tc_cache_abandon(cache);
		}
	}
	if (p->bdev)
		tc_dev_close(p->bdev);
	if (p->cdev)
		tc_dev_close(p->cdev);
	tc_ctx_free(p->ctx);
	p->ctx = NULL;
	if (o->devices != REPLAY_DEV_MEMORY) {
		unlink(bpath);
		unlink(cpath);
	}
	return r;
}

/* ------------------------------------------------------------------------------------
 * NBD mode.
 */

#ifdef TC_HAVE_LIBNBD
struct replay_nbd {
	struct nbd_handle *h;
};

int replay_nbd_connect(const char *uri, struct replay_nbd **out, uint64_t *size,
			  bool *read_only, char *err, size_t errlen)
{
	struct replay_nbd *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n) {
		snprintf(err, errlen, "%s: out of memory", uri);
		return -ENOMEM;
	}
	n->h = nbd_create();
	if (!n->h) {
		snprintf(err, errlen, "%s: %s", uri, nbd_get_error());
		free(n);
		return -ENOMEM;
	}
	if (nbd_connect_uri(n->h, uri) == -1) {
		snprintf(err, errlen, "%s: %s", uri, nbd_get_error());
		replay_nbd_close(n);
		return -EIO;
	}
	int64_t sz = nbd_get_size(n->h);
	if (sz < 0) {
		snprintf(err, errlen, "%s: %s", uri, nbd_get_error());
		replay_nbd_close(n);
		return -EIO;
	}
	*size = (uint64_t)sz;
	*read_only = nbd_is_read_only(n->h) == 1;
	*out = n;
	return 0;
}

void replay_nbd_close(struct replay_nbd *n)
{
	if (!n)
		return;
	if (n->h) {
		nbd_shutdown(n->h, 0);
		nbd_close(n->h);
	}
	free(n);
}

static int nbd_cb(void *user_data, int *error)
{
	struct slot *s = user_data;

	slot_done(s->rp, s, *error ? -*error : 0, tc_monotonic_ns());
	return 1;     /* retire the command */
}

static int nbd_submit(struct replay *p, uint64_t t_start, uint64_t now)
{
	const struct trace_req *r = &p->t->req[p->next];
	struct nbd_handle *h = p->o->nbd->h;
	struct slot *s = slot_get(p);
	uint64_t off;

	if (!s) {
		snprintf(p->err, p->errlen, "out of memory with %u requests in flight", p->inflight);
		return -ENOMEM;
	}
	if (!p->measuring && p->next >= p->o->warmup) {
		p->measuring = true;
		p->measure_start = now;
		p->last_done = now;
	}
	replay_map_req(p->m, r, &off, &s->len);
	s->write = r->write;
	s->measured = p->measuring;
	s->t_start = t_start;
	if (s->measured) {
		count_request(p, s);
		if (now >= t_start + LATE_NS)
			p->res->late++;
	}
	p->inflight++;
	p->next++;
	nbd_completion_callback cb = { .callback = nbd_cb, .user_data = s };
	int64_t c = s->write ? nbd_aio_pwrite(h, p->wbuf, s->len, off, cb, 0) :
			       nbd_aio_pread(h, p->rbuf, s->len, off, cb, 0);
	if (c == -1) {
		/* Not issued: the callback will not run. */
		slot_done(p, s, -EIO, tc_monotonic_ns());
		if (!nbd_aio_is_ready(h) && !nbd_aio_is_processing(h)) {
			snprintf(p->err, p->errlen, "NBD connection lost: %s", nbd_get_error());
			p->fatal = -EIO;
		}
	}
	if (p->next % PROGRESS_EVERY == 0)
		progress(p, now);
	return 0;
}

static int nbd_loop(struct replay *p)
{
	const struct replay_opts *o = p->o;
	struct nbd_handle *h = o->nbd->h;
	unsigned cap = o->max_inflight ? o->max_inflight : 4096;
	bool closed = o->queue_depth > 0, stopping = false;
	int r;

	p->base = tc_monotonic_ns();
	for (;;) {
		uint64_t now = tc_monotonic_ns();

		if (!stopping && stop_requested(p)) {
			stopping = true;
			p->res->interrupted = true;
		}
		if (!stopping) {
			r = submit_due(p, now, nbd_submit);
			if (r)
				return r;
		}
		if (p->fatal)
			return p->fatal;
		bool more = !stopping && p->next < p->nreq;
		if (!more && p->inflight == 0)
			break;

		/* Wait for the socket or the next arrival. */
		struct timespec ts, *tsp = NULL;
		if (more && !closed && p->inflight < cap) {
			uint64_t a = arrival(p, p->next);
			uint64_t d = a > now ? a - now : 0;
			ts.tv_sec = (time_t)(d / 1000000000ull);
			ts.tv_nsec = (long)(d % 1000000000ull);
			tsp = &ts;
		} else if (stopping && p->inflight > 0) {
			ts.tv_sec = 0;
			ts.tv_nsec = 100000000;      /* re-check now and then */
			tsp = &ts;
		}
		int fd = nbd_aio_get_fd(h);
		unsigned dir = nbd_aio_get_direction(h);
		if (fd < 0) {
			snprintf(p->err, p->errlen, "NBD connection lost: %s", nbd_get_error());
			return -EIO;
		}
		struct pollfd pfd = { .fd = fd };
		if (dir & LIBNBD_AIO_DIRECTION_READ)
			pfd.events |= POLLIN;
		if (dir & LIBNBD_AIO_DIRECTION_WRITE)
			pfd.events |= POLLOUT;
		int n = ppoll(&pfd, 1, tsp, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(p->err, p->errlen, "poll on the NBD socket: %s", strerror(errno));
			return -errno;
		}
		if (n == 0)
			continue;
		int rc = 0;
		if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) && (dir & LIBNBD_AIO_DIRECTION_READ))
			rc = nbd_aio_notify_read(h);
		else if (pfd.revents & (POLLHUP | POLLERR))
			rc = nbd_aio_notify_read(h);
		if (rc == 0 && (pfd.revents & POLLOUT))
			rc = nbd_aio_notify_write(h);
		if (rc == -1) {
			snprintf(p->err, p->errlen, "NBD connection lost: %s", nbd_get_error());
			return -EIO;
		}
	}
	progress(p, tc_monotonic_ns());
	return 0;
}

static int nbd_run(struct replay *p)
{
	struct replay_result *res = p->res;
	uint64_t w0 = tc_monotonic_ns();
	int r = nbd_loop(p);

	res->replay_wall_ns = tc_monotonic_ns() - w0;
	res->devices = "nbd";
	if (!p->measuring)
		p->measure_start = p->last_done = tc_monotonic_ns();
	res->elapsed_ns = p->last_done - p->measure_start;
	if (r == 0 && res->interrupted)
		r = -EINTR;
	return r;
}
#else
struct replay_nbd {
	int unused;
};

int replay_nbd_connect(const char *uri, struct replay_nbd **out, uint64_t *size,
			  bool *read_only, char *err, size_t errlen)
{
	*out = NULL;
	snprintf(err, errlen, "%s: this build has no NBD client (libnbd was not found)", uri);
	return -ENOTSUP;
}

void replay_nbd_close(struct replay_nbd *n)
{
	free(n);
}

static int nbd_run(struct replay *p)
{
	snprintf(p->err, p->errlen, "this build has no NBD client (libnbd was not found)");
	return -ENOTSUP;
}
#endif

/* ------------------------------------------------------------------------------------
 * Entry point.
 */

int replay_run(const struct trace *t, const struct replay_map *m,
		  struct replay_opts *o, struct replay_result *res, char *err,
		  size_t errlen)
{
	struct replay p = { .t = t, .m = m, .o = o, .res = res, .err = err, .errlen = errlen,
			    .nreq = t->n };
	uint64_t w0 = tc_monotonic_ns();
	int r;

	memset(res, 0, sizeof(*res));
	tc_hist_init(&res->lat);
	tc_hist_init(&res->lat_read);
	tc_hist_init(&res->lat_write);
	if (err && errlen)
		err[0] = '\0';
	if (!(o->speed > 0)) {
		snprintf(err, errlen, "speed %g is not positive", o->speed);
		return -EINVAL;
	}
	uint64_t blen = m->max_len ? m->max_len : TC_SECTOR_SIZE;
	if (posix_memalign(&p.rbuf, 4096, blen) || posix_memalign(&p.wbuf, 4096, blen)) {
		free(p.rbuf);
		snprintf(err, errlen, "out of memory for %" PRIu64 "-byte buffers", blen);
		return -ENOMEM;
	}
	memset(p.wbuf, 0xa5, blen);
	memset(p.rbuf, 0, blen);
	res->library = !o->nbd;
	r = o->nbd ? nbd_run(&p) : lib_run(&p);
	slots_free(&p);
	free(p.rbuf);
	free(p.wbuf);
	res->wall_ns = tc_monotonic_ns() - w0;
	return r;
}
