/* SPDX-License-Identifier: MIT */
/*
 * cleaner.c - write-back of dirty lines to the backing devices.
 *
 * One batch at a time per cache.  A batch takes up to TC_CLEAN_BATCH dirty lines of
 * one volume in backing-address order (an elevator sweep: line numbers from a cursor
 * upward, then wrapping), holds each line shared (reads of the line go on; writes wait,
 * so a write-through write cannot race the writeback on the backing), reads the dirty
 * span of each slot, and writes runs of consecutive dirty 4 KiB units to the backing,
 * merging runs across adjacent lines into one request; invalid gaps are never written.
 * After the writes, the lines are released, the backing is flushed, and then a line's
 * written units become clean only if the line's generation did not move (no write,
 * discard or invalidation meanwhile).
 *
 * Rate (flush_rate setting; a tick is 10 ms):
 *   low     16 MiB/s, only after the volume saw no client I/O for 1 s
 *   medium  64 MiB/s after 100 ms without client I/O, 16 MiB/s under load
 *   high    unlimited, always
 * and regardless of the rate: unlimited while the volume drains (flush, detach, leaving
 * write-back) and while the cache's dirty lines are above the high watermark, until
 * they fall below the low watermark (hysteresis).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache_priv.h"

#define MIB (1024ull * 1024ull)

int tc_cleaner_init(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	cl->bufs = tc_alloc_buf((size_t)TC_CLEAN_BATCH * c->line_size);
	cl->ios = calloc(TC_CLEAN_BATCH * 9 + 1, sizeof(*cl->ios));
	cl->iovs = calloc(TC_CLEAN_BATCH * 9 + 1, sizeof(*cl->iovs));
	if (!cl->bufs || !cl->ios || !cl->iovs)
		return -ENOMEM;
	return 0;
}

void tc_cleaner_fini(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	free(cl->bufs);
	free(cl->ios);
	free(cl->iovs);
	free(cl->scan);
	/* A batch abandoned mid-flight (process death) leaves in-flight references that
	 * tc_cache_free() releases with the shards. */
}

/* Bytes per second the volume may write back now; UINT64_MAX = unlimited; 0 = idle. */
static uint64_t clean_rate(struct tc_cache *c, struct tc_volume *v, uint64_t now)
{
	if (atomic_load(&v->discarding))
		return 0;   /* its dirty data is being thrown away: write none of it back */
	/* Write-back held (protect.c): the dirty data has lost its protection. */
	if (atomic_load(&v->draining) || atomic_load(&v->range_flush) ||
	    atomic_load(&v->cap_pressure) || c->pressure || atomic_load(&c->wb_hold))
		return UINT64_MAX;
	uint64_t idle = now - atomic_load(&v->last_io_ns);
	if (atomic_load(&v->inflight_reqs))
		idle = 0;
	switch (TC_SET(v, flush_rate)) {
	case TC_FLUSH_LOW:
		return idle >= 1000000000ull ? 16 * MIB : 0;
	case TC_FLUSH_MEDIUM:
		return idle >= 100000000ull ? 64 * MIB : 16 * MIB;
	default:
		return UINT64_MAX;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The steps of a batch (tc_cleaner.step): each names the I/O round that has just
 * completed; batch_step() runs it, advancing the step first.
 */
enum batch_step_id {
	BATCH_READS_DONE = 0,      /* slot reads done: verify, write the backing */
	BATCH_WRITES_DONE,         /* backing writes done: release the lines, flush */
	BATCH_FLUSH_DONE,          /* backing flush done: mark clean, finish */
	BATCH_FINISHED,            /* finished early after an error */
};

static void batch_step(struct tc_cache *c);

static void batch_io_done(struct tc_io *io, int result)
{
	struct tc_cache *c = io->private_data;
	struct tc_cleaner *cl = &c->cleaner;
	if (result < 0)
		__atomic_store_n(&cl->err, result, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&cl->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(c);
}

static void batch_submit(struct tc_cache *c, unsigned *nio, tc_dev *dev, uint8_t op,
			 uint64_t off, struct iovec *iov, int cnt, uint64_t len)
{
	struct tc_cleaner *cl = &c->cleaner;
	struct tc_io *io = &cl->ios[(*nio)++];
	memset(io, 0, sizeof(*io));
	io->op = op;
	io->offset = off;
	io->length = len;
	io->iov = iov;
	io->iovcnt = cnt;
	io->done = batch_io_done;
	io->private_data = c;
	io->prio = TC_PRIO_BULK;        /* writeback is background work */
	__atomic_add_fetch(&cl->pending, 1, __ATOMIC_ACQ_REL);
	tc_dev_submit(dev, io);
}

/* The first round: read the dirty span of every slot in the batch. */
static void batch_read(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	unsigned nio = 0;
	__atomic_store_n(&cl->pending, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < cl->n; i++) {
		struct tc_clean_line *ln = &cl->lines[i];
		unsigned lo = (unsigned)__builtin_ctz(ln->mask);
		unsigned hi = 32u - (unsigned)__builtin_clz(ln->mask);
		struct iovec *v = &cl->iovs[i];
		v->iov_base = ln->buf + lo * TC_UNIT_SIZE;
		v->iov_len = (hi - lo) * TC_UNIT_SIZE;
		tc_stat_add(cl->vol, ST_CACHE_WB_READ_BYTES, v->iov_len);   /* cache-device counters */
		batch_submit(c, &nio, c->dev, TC_OP_READ,
			     c->sb.data_offset + (uint64_t)ln->slot * c->line_size +
			     lo * TC_UNIT_SIZE, v, 1, v->iov_len);
	}
	if (__atomic_sub_fetch(&cl->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(c);
}

/* The second round: write runs of dirty units, merged across adjacent lines. */
static void batch_write(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	struct tc_volume *v = cl->vol;
	unsigned nio = 0, niov = 0;
	__atomic_store_n(&cl->pending, 1, __ATOMIC_RELEASE);
	uint64_t run_start = 0, run_len = 0, run_next = UINT64_MAX;
	unsigned run_iov = 0;
	for (uint32_t i = 0; i < cl->n; i++) {
		struct tc_clean_line *ln = &cl->lines[i];
		for (unsigned u = 0; u < c->units; u++) {
			if (!(ln->mask & (1u << u)))
				continue;
			uint64_t off = ((uint64_t)ln->line_no << c->line_shift) + u * TC_UNIT_SIZE;
			uint8_t *p = ln->buf + u * TC_UNIT_SIZE;
			struct iovec *last = niov ? &cl->iovs[niov - 1] : NULL;
			if (off == run_next && run_len) {
				if (last && (uint8_t *)last->iov_base + last->iov_len == p)
					last->iov_len += TC_UNIT_SIZE;
				else {
					cl->iovs[niov].iov_base = p;
					cl->iovs[niov++].iov_len = TC_UNIT_SIZE;
				}
				run_len += TC_UNIT_SIZE;
			} else {
				if (run_len)
					batch_submit(c, &nio, v->backing, TC_OP_WRITE,
						     TC_BACKING_DATA_OFFSET + run_start,
						     &cl->iovs[run_iov], (int)(niov - run_iov), run_len);
				run_iov = niov;
				cl->iovs[niov].iov_base = p;
				cl->iovs[niov++].iov_len = TC_UNIT_SIZE;
				run_start = off;
				run_len = TC_UNIT_SIZE;
			}
			run_next = off + TC_UNIT_SIZE;
		}
	}
	if (run_len)
		batch_submit(c, &nio, v->backing, TC_OP_WRITE, TC_BACKING_DATA_OFFSET + run_start,
			     &cl->iovs[run_iov], (int)(niov - run_iov), run_len);
	tc_stat_add(v, ST_WB_IOS, nio);
	if (__atomic_sub_fetch(&cl->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(c);
}

/* Release the shared holds (keeping the references for the generation check). */
static void batch_release(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	for (uint32_t i = 0; i < cl->n; i++) {
		struct tc_clean_line *ln = &cl->lines[i];
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(cl->vol->id, ln->line_no));
		tc_line_release_shared(c, s, ln->inf);
	}
}

static void batch_flush(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	unsigned nio = 0;
	__atomic_store_n(&cl->pending, 1, __ATOMIC_RELEASE);
	batch_submit(c, &nio, cl->vol->backing, TC_OP_FLUSH, 0, NULL, 0, 0);
	if (__atomic_sub_fetch(&cl->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(c);
}

static void batch_finish(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	struct tc_volume *v = cl->vol;
	int err = __atomic_load_n(&cl->err, __ATOMIC_RELAXED);
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < cl->n; i++) {
		struct tc_clean_line *ln = &cl->lines[i];
		uint64_t key = tc_line_key(v->id, ln->line_no);
		struct tc_lock_shard *s = tc_shard_of(c, key);
		pthread_mutex_lock(&s->lock);
		struct tc_line *l = &c->lines[ln->slot];
		if (!err && ln->inf->gen == ln->gen && l->vol == v->id &&
		    l->line_no == ln->line_no) {
			tc_line_set_bits(c, ln->slot, l->valid, l->dirty & (uint16_t)~ln->mask);
			bytes += (uint64_t)tc_popcount16(ln->mask) * TC_UNIT_SIZE;
		}
		tc_inflight_put(c, s, ln->inf);
		ln->inf = NULL;
		pthread_mutex_unlock(&s->lock);
	}
	if (err) {
		tc_stat_add(v, ST_BACKING_ERRORS, 1);
		tc_err(c->ctx, "volume \"%s\": writeback to backing %s failed: %s; the lines stay "
		       "dirty in the cache", v->name, v->backing->name, strerror(-err));
	}
	tc_stat_add(v, ST_WB_BYTES, bytes);
	/* Cleaned lines become evictable once a commit records them clean. */
	if (bytes && (atomic_exchange(&c->alloc_starved, false) || c->pressure))
		tc_meta_kick(c);
	uint64_t now = tc_ctx_now(c->ctx);
	if (now - v->rate_window_start >= 1000000000ull) {
		uint64_t span = now - v->rate_window_start;
		atomic_store(&v->rate_last, span ? v->rate_window_bytes * 1000000000ull / span : 0);
		atomic_store(&v->rate_stamp_ns, now);
		v->rate_window_start = now;
		v->rate_window_bytes = 0;
	}
	v->rate_window_bytes += bytes;
	pthread_mutex_lock(&c->meta.lock);
	cl->busy = false;
	cl->vol = NULL;
	pthread_mutex_unlock(&c->meta.lock);
	tc_ctx_wake(c->ctx);
}

/*
 * Dirty units read back that fail their checksum (csum.c) are not written back: the
 * backing keeps its older copy rather than the cache's damaged one, and the units stay
 * dirty, so reads of them keep failing instead of returning wrong data.
 */
static void batch_verify(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	if (!c->csum)
		return;
	for (uint32_t i = 0; i < cl->n; i++) {
		struct tc_clean_line *ln = &cl->lines[i];
		uint16_t bad = tc_csum_verify(c, ln->slot, ln->mask, ln->buf);
		if (!bad)
			continue;
		ln->mask &= (uint16_t)~bad;
		tc_err(c->ctx, "volume \"%s\": cache %s returned dirty data that fails its "
		       "checksum (writeback read, units 0x%x of line %u): not written back; "
		       "reads of it fail", cl->vol->name, c->dev->name, bad, ln->line_no);
		tc_cache_error(c, cl->vol, "writeback read", -EIO);
	}
}

static void batch_step(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	int step = cl->step++;
	int err = __atomic_load_n(&cl->err, __ATOMIC_RELAXED);
	switch (step) {
	case BATCH_READS_DONE:
		if (err) {
			tc_cache_error(c, cl->vol, "writeback read", err);
			batch_release(c);
			cl->step = BATCH_FINISHED;
			batch_finish(c);
			return;
		}
		batch_verify(c);
		batch_write(c);
		break;
	case BATCH_WRITES_DONE:
		batch_release(c);
		if (err) {
			cl->step = BATCH_FINISHED;
			batch_finish(c);
			return;
		}
		batch_flush(c);
		break;
	case BATCH_FLUSH_DONE:
	default:
		batch_finish(c);
		break;
	}
}

static void batch_start_work(struct tc_work *w)
{
	struct tc_cache *c = (struct tc_cache *)((char *)w - offsetof(struct tc_cache, cleaner.work));
	batch_read(c);
}

/*
 * Collect the volume's dirty lines, sorted by line number, starting from the cursor;
 * hold each shared; returns the number taken.
 */
static uint32_t batch_collect(struct tc_cache *c, struct tc_volume *v, uint64_t budget)
{
	struct tc_cleaner *cl = &c->cleaner;
	uint32_t n = 0;
	if (!cl->scan) {
		cl->scan_cap = c->nslots < 65536 ? c->nslots : 65536;
		cl->scan = malloc(sizeof(uint64_t) * cl->scan_cap);
		if (!cl->scan)
			return 0;
	}
	uint64_t *keys = cl->scan;
	/* A range flush (range.c) takes only the lines of its window. */
	bool rf = atomic_load(&v->range_flush);
	uint64_t rlo = atomic_load(&v->range_lo), rhi = atomic_load(&v->range_hi);
	/* (line_no << 32 | slot), candidates at or after the cursor first. */
	uint32_t cnt = 0;
	for (int pass = 0; pass < 2 && cnt < cl->scan_cap; pass++) {
		for (uint32_t i = 0; i < c->nslots && cnt < cl->scan_cap; i++) {
			struct tc_line l = tc_line_peek(&c->lines[i]);
			if (l.vol != v->id || !l.dirty)
				continue;
			if (rf && (l.line_no < rlo || l.line_no >= rhi))
				continue;
			bool after = l.line_no >= v->clean_cursor;
			if (after == (pass == 0))
				keys[cnt++] = ((uint64_t)l.line_no << 32) | i;
		}
		if (pass == 0 && cnt >= TC_CLEAN_BATCH)
			break;
	}
	/* Sort each pass's part separately: the first part starts at the cursor. */
	uint32_t split = 0;
	while (split < cnt && (keys[split] >> 32) >= v->clean_cursor)
		split++;
	qsort(keys, split, sizeof(uint64_t), cmp_u64);
	qsort(keys + split, cnt - split, sizeof(uint64_t), cmp_u64);
	uint64_t bytes = 0;
	for (uint32_t k = 0; k < cnt && n < TC_CLEAN_BATCH && bytes < budget; k++) {
		uint32_t slot = (uint32_t)keys[k], line_no = (uint32_t)(keys[k] >> 32);
		uint64_t key = tc_line_key(v->id, line_no);
		struct tc_lock_shard *s = tc_shard_of(c, key);
		pthread_mutex_lock(&s->lock);
		struct tc_line *l = &c->lines[slot];
		struct tc_inflight *inf = NULL;
		if (l->vol == v->id && l->line_no == line_no && l->dirty)
			inf = tc_line_try_shared(c, s, key);
		if (inf) {
			struct tc_clean_line *ln = &cl->lines[n];
			ln->slot = slot;
			ln->line_no = line_no;
			ln->mask = l->dirty;
			ln->gen = inf->gen;
			ln->inf = inf;
			ln->buf = cl->bufs + (size_t)n * c->line_size;
			bytes += (uint64_t)tc_popcount16(l->dirty) * TC_UNIT_SIZE;
			n++;
			v->clean_cursor = (uint64_t)line_no + 1;
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (n == 0 || n == cnt)
		v->clean_cursor = n ? v->clean_cursor : 0;
	return n;
}

void tc_cleaner_tick(struct tc_cache *c, uint64_t now)
{
	struct tc_cleaner *cl = &c->cleaner;
	uint64_t dl = atomic_load(&c->dirty_lines);
	if (dl * 100 >= (uint64_t)c->sb.dirty_high_pct * c->nslots)
		c->pressure = true;
	else if (dl * 100 <= (uint64_t)c->sb.dirty_low_pct * c->nslots)
		c->pressure = false;

	/* Yield to a high-priority volume: while one of its requests waits for the cache
	 * device, no batch starts (unless dirty data is above the high watermark); the
	 * next tick looks again. */
	if (!c->pressure && tc_dev_high_waiting(c->dev))
		return;
	pthread_mutex_lock(&c->meta.lock);
	if (cl->busy || c->closing) {
		pthread_mutex_unlock(&c->meta.lock);
		return;
	}
	cl->busy = true;
	pthread_mutex_unlock(&c->meta.lock);

	struct tc_volume *pick = NULL;
	uint64_t pick_budget = 0;
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		struct tc_volume *v = c->vols[i];
		if (!v)
			continue;
		uint64_t rate = clean_rate(c, v, now);
		if (rate == 0 || atomic_load(&v->dirty_units) == 0) {
			v->tokens = 0;
			continue;
		}
		uint64_t budget;
		if (rate == UINT64_MAX) {
			budget = UINT64_MAX;
		} else {
			v->tokens += rate / (1000000000ull / TC_TICK_NS);
			if (v->tokens > rate)
				v->tokens = rate;
			budget = v->tokens;
			if (budget < c->line_size)
				continue;
		}
		/* Draining or range-flushing volumes first, then the one with most dirty
		 * data. */
		int pv = atomic_load(&v->draining) + atomic_load(&v->range_flush);
		int pp = pick ? atomic_load(&pick->draining) + atomic_load(&pick->range_flush) : 0;
		if (!pick || pv > pp ||
		    (pv == pp && atomic_load(&v->dirty_units) > atomic_load(&pick->dirty_units))) {
			pick = v;
			pick_budget = budget;
		}
	}
	uint32_t n = 0;
	if (pick) {
		n = batch_collect(c, pick, pick_budget);
		if (n && pick_budget != UINT64_MAX) {
			uint64_t used = 0;
			for (uint32_t i = 0; i < n; i++)
				used += (uint64_t)tc_popcount16(cl->lines[i].mask) * TC_UNIT_SIZE;
			pick->tokens = pick->tokens > used ? pick->tokens - used : 0;
		}
	}
	pthread_mutex_unlock(&c->mgmt_lock);
	if (!n) {
		pthread_mutex_lock(&c->meta.lock);
		cl->busy = false;
		pthread_mutex_unlock(&c->meta.lock);
		return;
	}
	pthread_mutex_lock(&c->meta.lock);
	cl->vol = pick;
	pthread_mutex_unlock(&c->meta.lock);
	cl->n = n;
	cl->err = 0;
	cl->step = BATCH_READS_DONE;
	cl->work.fn = batch_start_work;
	tc_ctx_defer(c->ctx, &cl->work);
}

static void kick_work_fn(struct tc_work *w)
{
	struct tc_cache *c = (struct tc_cache *)((char *)w - offsetof(struct tc_cache, kick_work));
	tc_cleaner_tick(c, tc_ctx_now(c->ctx));
	/* Cleared last: close waits for it, so the cache outlives this call. */
	atomic_store(&c->kick_queued, false);
}

void tc_cleaner_kick(struct tc_cache *c)
{
	if (c->readonly)
		return;   /* inspection: no write-back */
	if (c->closing || atomic_exchange(&c->kick_queued, true))
		return;
	c->kick_work.fn = kick_work_fn;
	tc_ctx_defer(c->ctx, &c->kick_work);
}

int tc_cleaner_drain(struct tc_volume *v, tc_progress_fn fn, void *opaque)
{
	struct tc_cache *c = v->cache;
	if (c->readonly)
		return -EROFS;   /* inspection: no write-back */
	uint64_t start = atomic_load(&v->dirty_units) * TC_UNIT_SIZE;
	uint64_t errs0 = atomic_load(&v->st[ST_BACKING_ERRORS]) +
			 atomic_load(&v->st[ST_CACHE_ERRORS]);
	uint64_t last_report = UINT64_MAX;
	for (;;) {
		/* Write-back writes mark their units dirty before they leave wb_inflight:
		 * read wb_inflight first, so that when it is 0 every such write's dirty
		 * units are already counted in what is read next (the other order could
		 * see 0 dirty, then a write finishing, then 0 in flight). */
		bool wb_writes = atomic_load(&v->wb_inflight) != 0;
		uint64_t left = atomic_load(&v->dirty_units) * TC_UNIT_SIZE;
		pthread_mutex_lock(&c->meta.lock);
		bool busy_here = c->cleaner.busy && c->cleaner.vol == v;
		pthread_mutex_unlock(&c->meta.lock);
		if (left == 0 && !busy_here && !wb_writes)
			break;
		if (fn && left != last_report) {
			last_report = left;
			if (fn(opaque, left, start)) {
				tc_info(c->ctx, "volume \"%s\": flush interrupted with %llu dirty bytes "
					"left", v->name, (unsigned long long)left);
				return -EINTR;
			}
		}
		uint64_t errs = atomic_load(&v->st[ST_BACKING_ERRORS]) +
				atomic_load(&v->st[ST_CACHE_ERRORS]);
		if (errs >= errs0 + 3) {
			tc_err(c->ctx, "volume \"%s\": cannot write back dirty data (%llu bytes "
			       "left): repeated I/O errors", v->name, (unsigned long long)left);
			return -EIO;
		}
		if (tc_ctx_deterministic(c->ctx)) {
			if (tc_ctx_poll(c->ctx, 256) == 0)
				tc_ctx_advance(c->ctx, TC_TICK_NS);
		} else {
			tc_cleaner_tick(c, tc_ctx_now(c->ctx));
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	if (fn)
		fn(opaque, 0, start);
	return tc_meta_commit_sync(c);
}
