/* SPDX-License-Identifier: MIT */
/*
 * cleaner.c - write-back of dirty lines to the backing devices.
 *
 * Work goes in batches.  A batch takes up to batch_lines dirty lines of one volume
 * (at least TC_CLEAN_BATCH, and enough for TC_CLEAN_BATCH_BYTES of lines) in backing-
 * address order (an elevator sweep: line numbers from a cursor upward, then wrapping),
 * holds each line shared (reads of the line go on; writes wait, so a write-through
 * write cannot race the writeback on the backing), reads the dirty span of each slot,
 * and writes runs of consecutive dirty 4 KiB units to the backing, merging runs across
 * adjacent lines into one request; invalid gaps are never written.  After the writes,
 * the lines are released and join the flush group; once a backing flush submitted
 * after their writes completed has completed, a line's written units become clean
 * only if the line's generation did not move (no write, discard or invalidation
 * meanwhile).
 *
 * Pipeline: up to TC_CLEAN_SLOTS batches are in flight.  When a batch's cache reads
 * complete it kicks the cleaner before writing, so the next batch reads the cache
 * while this one writes the backing (write_turns: while the volume's clients are
 * busy, one batch writes at a time), and a batch whose writes completed frees its slot
 * at once and kicks again (the flush group, below, waits for the flush): the backing
 * is never idle waiting for the cache, and a drain of fully dirty lines is bound by
 * the backing's sequential write rate, not by the sum of both devices' times plus a
 * flush per batch.
 * A line is in one batch at a time (tc_inflight.cleaning).  The candidates come from
 * the volume's dirty index (dirty.c: the dirty units of each stripe, or group of lines,
 * that has any), sorted, and are consumed by the batches that follow until used up
 * (tc_cleaner.scan); the line array is scanned only when the index is lost (out of
 * memory).  On a parity backing the full dirty stripes go first, the partial ones
 * only under pressure or once the clients are idle (partial_stripes_ok).  Measured (docs/benchmarks.md,
 * "Drain"): one batch at a time with a flush each drained fully dirty lines to an
 * emulated HDD at 0.69x its sequential rate, this at 0.96x.
 *
 * Rate (flush_rate setting), as a token bucket refilled by elapsed time (one second
 * of burst at most):
 *   low     16 MiB/s, only after the volume saw no client I/O for 1 s
 *   medium  64 MiB/s after 100 ms without client I/O; under load 16 MiB/s while the
 *           cache's dirty lines are at least TC_CLEAN_BUSY_TARGET_PCT of its lines or
 *           an allocation found nothing evictable, else nothing
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
	uint32_t n = TC_CLEAN_BATCH_BYTES / c->line_size;
	if (n < TC_CLEAN_BATCH)
		n = TC_CLEAN_BATCH;
	cl->batch_lines = n;
	for (unsigned i = 0; i < TC_CLEAN_SLOTS; i++) {
		struct tc_clean_batch *b = &cl->b[i];
		b->c = c;
		b->bufs = tc_alloc_buf((size_t)n * c->line_size);
		b->lines = calloc(n, sizeof(*b->lines));
		/* A line's dirty units make at most 8 runs, each one write; plus its read. */
		b->ios = calloc((size_t)n * 9 + 1, sizeof(*b->ios));
		b->iovs = calloc((size_t)n * 9 + 1, sizeof(*b->iovs));
		if (!b->bufs || !b->lines || !b->ios || !b->iovs)
			return -ENOMEM;
	}
	cl->done_cap = 2 * TC_CLEAN_SLOTS * n;
	cl->pend = calloc(cl->done_cap, sizeof(*cl->pend));
	cl->flushing = calloc(cl->done_cap, sizeof(*cl->flushing));
	if (!cl->pend || !cl->flushing)
		return -ENOMEM;
	return 0;
}

void tc_cleaner_fini(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	for (unsigned i = 0; i < TC_CLEAN_SLOTS; i++) {
		struct tc_clean_batch *b = &cl->b[i];
		free(b->bufs);
		free(b->lines);
		free(b->ios);
		free(b->iovs);
	}
	free(cl->scan);
	free(cl->pend);
	free(cl->flushing);
	/* A batch abandoned mid-flight (process death) leaves in-flight references that
	 * tc_cache_free() releases with the shards. */
}

bool tc_cleaner_busy(struct tc_cache *c, struct tc_volume *v)
{
	struct tc_cleaner *cl = &c->cleaner;
	bool busy = false;
	pthread_mutex_lock(&c->meta.lock);
	for (unsigned i = 0; i < TC_CLEAN_SLOTS; i++)
		if (cl->b[i].vol == v)
			busy = true;
	if (atomic_load(&v->clean_pending))
		busy = true;   /* written, waiting for the flush group's flush */
	pthread_mutex_unlock(&c->meta.lock);
	return busy;
}

void tc_cleaner_wait_step(struct tc_cache *c)
{
	if (tc_ctx_poll(c->ctx, 256))
		return;
	uint64_t now = tc_ctx_now(c->ctx), next = tc_ctx_next_deadline(c->ctx);
	tc_ctx_advance(c->ctx, next > now && next - now < TC_TICK_NS ? next - now : TC_TICK_NS);
}

/* How long @v's clients have been idle at @now, ns: 0 while a request is in flight
 * (or one was stamped after @now by another thread). */
static uint64_t client_idle_ns(struct tc_volume *v, uint64_t now)
{
	uint64_t last = atomic_load(&v->last_io_ns);
	return atomic_load(&v->inflight_reqs) || now < last ? 0 : now - last;
}

/*
 * Under load, the medium rate writes back only while the cache's dirty lines are at
 * least this share of its lines, %: bcache's writeback target (writeback_percent,
 * 10 by default), below which its rate controller leaves the backing to the clients.
 * A little dirty data is what write-back is for (a burst absorbed, the first 4 MiB of
 * a stream before the sequential detector sends the rest around): written back while
 * the clients keep the backing busy, every piece of it cost the backing a seek away
 * from their work and one back (a sequential write stream in wb lost 4 % of its rate,
 * and its p99 latency doubled, to the cleaner writing back the stream's own first
 * 3 MiB).  It waits for the clients' next 100 ms pause instead; above the target, a
 * steady writer that never pauses is cleaned at the busy rate as before, and so is a
 * cache where an allocation found nothing evictable (alloc_starved), which with
 * pinned ranges or other volumes' reserves can happen below the target.
 */
#define TC_CLEAN_BUSY_TARGET_PCT 10u

/* Bytes per second the volume may write back now; UINT64_MAX = unlimited; 0 = idle. */
static uint64_t clean_rate(struct tc_cache *c, struct tc_volume *v, uint64_t now)
{
	if (atomic_load(&v->discarding))
		return 0;   /* its dirty data is being thrown away: write none of it back */
	/* Write-back held (protect.c): the dirty data has lost its protection. */
	if (atomic_load(&v->draining) || atomic_load(&v->range_flush) ||
	    atomic_load(&v->cap_pressure) || c->pressure || atomic_load(&c->wb_hold))
		return UINT64_MAX;
	uint64_t idle = client_idle_ns(v, now);
	switch (TC_SET(v, flush_rate)) {
	case TC_FLUSH_LOW:
		return idle >= 1000000000ull ? 16 * MIB : 0;
	case TC_FLUSH_MEDIUM:
		if (idle >= 100000000ull)
			return 64 * MIB;
		/* Starved allocations (nothing evictable: pinned ranges or other volumes'
		 * reserves can hold the rest of the cache with few lines dirty) are served
		 * at the busy rate whatever the target says. */
		return atomic_load(&c->dirty_lines) * 100 >=
		       (uint64_t)TC_CLEAN_BUSY_TARGET_PCT * c->nslots ||
		       atomic_load(&c->alloc_starved) ? 16 * MIB : 0;
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
 * The steps of a batch (tc_clean_batch.step): each names the I/O round that has just
 * completed; batch_step() runs it, advancing the step first.
 */
enum batch_step_id {
	BATCH_BREADS_DONE = 0,     /* backing reads of the stripes the batch completes
	                            * from the backing done: read the slots */
	BATCH_READS_DONE,          /* slot reads done: verify, write the backing */
	BATCH_WRITES_DONE,         /* backing writes done: release the lines, hand them
	                            * to the flush group, free the slot */
};

static void batch_step(struct tc_clean_batch *b);
static uint32_t stripe_lines(struct tc_cache *c, struct tc_volume *v);

/* The backing's stripe (of @lps lines) that line @line of @v lies in, and the line
 * where stripe @s starts (negative for the volume's first stripe when the volume does
 * not start on the backing's stripe grid: tc_stripe_pos). */
static uint64_t stripe_of(struct tc_cache *c, struct tc_volume *v, uint64_t line, uint32_t lps)
{
	return (line + (v->stripe_skew >> c->line_shift)) / lps;
}
static int64_t stripe_first(struct tc_cache *c, struct tc_volume *v, uint64_t s, uint32_t lps)
{
	return (int64_t)(s * lps) - (int64_t)(v->stripe_skew >> c->line_shift);
}

static void batch_io_done(struct tc_io *io, int result)
{
	struct tc_clean_batch *b = io->private_data;
	if (result < 0)
		__atomic_store_n(&b->err, result, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(b);
}

/* A backing read's error is the batch's berr: the stripe is then not completed, and
 * the dirty units go back alone (not a cache error). */
static void batch_bread_done(struct tc_io *io, int result)
{
	struct tc_clean_batch *b = io->private_data;
	if (result < 0)
		__atomic_store_n(&b->berr, result, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(b);
}

static void batch_submit(struct tc_clean_batch *b, unsigned *nio, tc_dev *dev, uint8_t op,
			 uint64_t off, struct iovec *iov, int cnt, uint64_t len)
{
	struct tc_io *io = &b->ios[(*nio)++];
	memset(io, 0, sizeof(*io));
	io->op = op;
	io->offset = off;
	io->length = len;
	io->iov = iov;
	io->iovcnt = cnt;
	io->done = op == TC_OP_READ && dev != b->c->dev ? batch_bread_done : batch_io_done;
	io->private_data = b;
	io->prio = TC_PRIO_BULK;        /* writeback is background work */
	__atomic_add_fetch(&b->pending, 1, __ATOMIC_ACQ_REL);
	tc_dev_submit(dev, io);
}

/*
 * The first round when the batch completes stripes from the backing: read each such
 * stripe's span from its first unit to complete to its last, in one request (merged
 * with the next stripe's when they touch), into the lines' buffers, which lie
 * side by side for a stripe's lines.  The units the cache holds are read over it
 * from the slots in the next round (which follows at once when there is none).
 */
static void batch_read_backing(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	uint32_t lps = b->lps;
	unsigned nio = 0, niov = 0;
	bool open = false;
	uint64_t run_start = 0, run_end = 0, run_stripe = 0;
	uint8_t *run_buf = NULL;   /* where run_start goes */
	__atomic_store_n(&b->pending, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i <= b->n; i++) {
		struct tc_clean_line *ln = i < b->n ? &b->lines[i] : NULL;
		bool has = ln && ln->bfill && lps;
		uint64_t lo = 0, hi = 0;
		uint8_t *p = NULL;
		if (has) {
			uint64_t base = (uint64_t)ln->line_no << c->line_shift;
			lo = base + (unsigned)__builtin_ctz(ln->bfill) * TC_UNIT_SIZE;
			hi = base + (32u - (unsigned)__builtin_clz(ln->bfill)) * TC_UNIT_SIZE;
			p = ln->buf + (lo - base);
		}
		/* One read per stripe, from its first unit to complete to its last (what
		 * lies between is read over from the slots), and on into the next stripe
		 * when it starts where this one ends; only over buffers that lie side by
		 * side as on the backing. */
		if (open && has && lo >= run_end && p - run_buf == (ptrdiff_t)(lo - run_start) &&
		    (stripe_of(c, b->vol, ln->line_no, lps) == run_stripe || lo == run_end)) {
			run_end = hi;
			run_stripe = stripe_of(c, b->vol, ln->line_no, lps);
			continue;
		}
		if (open) {
			struct iovec *v = &b->iovs[b->n + niov++];
			v->iov_base = run_buf;
			v->iov_len = run_end - run_start;
			tc_stat_add(b->vol, ST_WB_BACKING_READ_BYTES, v->iov_len);
			batch_submit(b, &nio, b->vol->backing, TC_OP_READ,
				     TC_BACKING_DATA_OFFSET + run_start, v, 1, v->iov_len);
			open = false;
		}
		if (has) {
			open = true;
			run_start = lo;
			run_end = hi;
			run_buf = p;
			run_stripe = stripe_of(c, b->vol, ln->line_no, lps);
		}
	}
	if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(b);
}

/* The slot reads: the dirty span of every slot in the batch, and the clean units that
 * complete its stripes. */
static void batch_read(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	unsigned nio = 0, niov = 0;
	__atomic_store_n(&b->pending, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < b->n; i++) {
		struct tc_clean_line *ln = &b->lines[i];
		uint32_t want = ln->mask | ln->fill;
		/* One read from the first unit wanted to the last; with units from the
		 * backing in the buffer, one per run, so as not to read over them. */
		while (want) {
			unsigned lo = (unsigned)__builtin_ctz(want);
			unsigned hi = 32u - (unsigned)__builtin_clz(want);
			if (ln->bfill)
				hi = lo + (unsigned)__builtin_ctz(~(want >> lo));
			want &= ~(((1u << hi) - 1) & ~((1u << lo) - 1));
			struct iovec *v = &b->iovs[niov++];
			v->iov_base = ln->buf + lo * TC_UNIT_SIZE;
			v->iov_len = (hi - lo) * TC_UNIT_SIZE;
			/* cache-device counters */
			tc_stat_add(b->vol, ST_CACHE_WB_READ_BYTES, v->iov_len);
			batch_submit(b, &nio, c->dev, TC_OP_READ,
				     c->sb.data_offset + (uint64_t)ln->slot * c->line_size +
				     lo * TC_UNIT_SIZE, v, 1, v->iov_len);
		}
	}
	if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(b);
}

/* Whole stripes of @stripe bytes inside [@off, @off + @len). */
static uint64_t whole_stripes(uint64_t off, uint64_t len, uint64_t stripe)
{
	if (!stripe)
		return 0;
	uint64_t lo = (off + stripe - 1) / stripe, hi = (off + len) / stripe;
	return hi > lo ? hi - lo : 0;
}

/* The second round: write runs of dirty units (and the clean ones that complete a
 * stripe), merged across adjacent lines. */
static void batch_write(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	struct tc_volume *v = b->vol;
	unsigned nio = 0, niov = 0;
	uint64_t full = 0, fill = 0, bfill = 0, recon = 0, last_recon = UINT64_MAX;
	uint32_t lps = b->lps;
	__atomic_store_n(&b->pending, 1, __ATOMIC_RELEASE);
	uint64_t run_start = 0, run_len = 0, run_next = UINT64_MAX;
	unsigned run_iov = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		struct tc_clean_line *ln = &b->lines[i];
		fill += (uint64_t)tc_popcount16(ln->fill) * TC_UNIT_SIZE;
		bfill += (uint64_t)tc_popcount16(ln->bfill) * TC_UNIT_SIZE;
		if (ln->bfill && lps && stripe_of(c, v, ln->line_no, lps) != last_recon) {
			recon++;   /* a stripe completed from the backing */
			last_recon = stripe_of(c, v, ln->line_no, lps);
		}
		for (unsigned u = 0; u < c->units; u++) {
			if (!((ln->mask | ln->fill | ln->bfill) & (1u << u)))
				continue;
			uint64_t off = ((uint64_t)ln->line_no << c->line_shift) + u * TC_UNIT_SIZE;
			uint8_t *p = ln->buf + u * TC_UNIT_SIZE;
			struct iovec *last = niov ? &b->iovs[niov - 1] : NULL;
			if (off == run_next && run_len) {
				if (last && (uint8_t *)last->iov_base + last->iov_len == p)
					last->iov_len += TC_UNIT_SIZE;
				else {
					b->iovs[niov].iov_base = p;
					b->iovs[niov++].iov_len = TC_UNIT_SIZE;
				}
				run_len += TC_UNIT_SIZE;
			} else {
				if (run_len) {
					full += whole_stripes(tc_stripe_pos(v, run_start),
							      run_len, v->stripe);
					batch_submit(b, &nio, v->backing, TC_OP_WRITE,
						     TC_BACKING_DATA_OFFSET + run_start,
						     &b->iovs[run_iov], (int)(niov - run_iov), run_len);
				}
				run_iov = niov;
				b->iovs[niov].iov_base = p;
				b->iovs[niov++].iov_len = TC_UNIT_SIZE;
				run_start = off;
				run_len = TC_UNIT_SIZE;
			}
			run_next = off + TC_UNIT_SIZE;
		}
	}
	if (run_len) {
		full += whole_stripes(tc_stripe_pos(v, run_start), run_len, v->stripe);
		batch_submit(b, &nio, v->backing, TC_OP_WRITE, TC_BACKING_DATA_OFFSET + run_start,
			     &b->iovs[run_iov], (int)(niov - run_iov), run_len);
	}
	tc_stat_add(v, ST_WB_IOS, nio);
	tc_stat_add(v, ST_WB_FULL_STRIPES, full);
	tc_stat_add(v, ST_WB_FILL_BYTES, fill + bfill);
	tc_stat_add(v, ST_WB_STRIPES_RECON, recon);
	b->nwrites = nio;
	if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_ACQ_REL) == 0)
		batch_step(b);
}

/* Release the shared holds (keeping the references for the generation check). */
static void batch_release(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	for (uint32_t i = 0; i < b->n; i++) {
		struct tc_clean_line *ln = &b->lines[i];
		struct tc_lock_shard *s = tc_shard_of(c, tc_line_key(b->vol->id, ln->line_no));
		tc_line_release_shared(c, s, ln->inf);
	}
}

/*
 * Settle line @ln of volume @v after its writeback: with @ok (written and flushed), its
 * written units become clean if its generation did not move; either way the batch's
 * reference goes.  Returns the bytes made clean.
 */
static uint64_t settle_line(struct tc_cache *c, struct tc_volume *v, struct tc_clean_line *ln,
			    bool ok)
{
	uint64_t key = tc_line_key(v->id, ln->line_no), bytes = 0;
	struct tc_lock_shard *s = tc_shard_of(c, key);
	pthread_mutex_lock(&s->lock);
	struct tc_line *l = ln->slot != TC_SLOT_NONE ? &c->lines[ln->slot] : NULL;
	if (ok && l && ln->inf->gen == ln->gen && l->vol == v->id && l->line_no == ln->line_no &&
	    ln->mask) {
		tc_line_set_bits(c, ln->slot, l->valid, l->dirty & (uint16_t)~ln->mask);
		bytes = (uint64_t)tc_popcount16(ln->mask) * TC_UNIT_SIZE;
	}
	ln->inf->cleaning = false;
	tc_inflight_put(c, s, ln->inf);
	ln->inf = NULL;
	pthread_mutex_unlock(&s->lock);
	return bytes;
}

/* Count @bytes written back and made clean for @v: statistics, the rate over the last
 * second, and a commit when an allocation waits for clean lines. */
static void account_clean(struct tc_cache *c, struct tc_volume *v, uint64_t bytes)
{
	tc_stat_add(v, ST_WB_BYTES, bytes);
	/* Cleaned lines become evictable once a commit records them clean. */
	if (bytes && (atomic_exchange(&c->alloc_starved, false) || c->pressure))
		tc_meta_kick(c);
	uint64_t now = tc_ctx_now(c->ctx);
	pthread_mutex_lock(&c->meta.lock);
	if (now - v->rate_window_start >= 1000000000ull) {
		uint64_t span = now - v->rate_window_start;
		atomic_store(&v->rate_last, span ? v->rate_window_bytes * 1000000000ull / span : 0);
		atomic_store(&v->rate_stamp_ns, now);
		v->rate_window_start = now;
		v->rate_window_bytes = 0;
	}
	v->rate_window_bytes += bytes;
	pthread_mutex_unlock(&c->meta.lock);
}

static void writeback_failed(struct tc_cache *c, struct tc_volume *v, int err)
{
	tc_stat_add(v, ST_BACKING_ERRORS, 1);
	tc_err(c->ctx, "volume \"%s\": writeback to backing %s failed: %s; the lines stay "
	       "dirty in the cache", v->name, v->backing->name, strerror(-err));
}

/* Free batch @b's slot (meta.lock held); the next batch may start in it: kicked while
 * the slot still counts as busy, so a close that waits for the cleaner waits for the
 * kick too. */
static void batch_free_locked(struct tc_clean_batch *b, bool kick)
{
	struct tc_cache *c = b->c;
	if (kick)
		tc_cleaner_kick(c);
	b->vol = NULL;
	b->n = 0;
	c->cleaner.active--;
}

/* A batch that failed (a cache read or a backing write): its lines stay dirty. */
static void batch_fail(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	struct tc_volume *v = b->vol;
	for (uint32_t i = 0; i < b->n; i++)
		settle_line(c, v, &b->lines[i], false);
	writeback_failed(c, v, __atomic_load_n(&b->err, __ATOMIC_RELAXED));
	tc_ctx *ctx = c->ctx;   /* the cache may be closed once the slot is free */
	pthread_mutex_lock(&c->meta.lock);
	batch_free_locked(b, false);
	pthread_mutex_unlock(&c->meta.lock);
	tc_ctx_wake(ctx);
}

/*
 * The flush group.  A batch whose backing writes completed hands its lines to pend
 * and frees its slot at once; one flush per backing then covers every line in pend
 * when it is submitted (those lines move to flushing), and when it completes they are
 * marked clean, and the lines that gathered in pend meanwhile get the next flush.  So
 * a flush, which a disk serves only after every write queued before it, never holds
 * a batch slot, and the next batches read the cache and queue their writes while it
 * waits (a flush per batch held its slot until then, leaving the disk idle while the
 * next batches read the cache).
 */
static void group_flush(struct tc_cache *c);

static void group_flush_done(struct tc_io *io, int result)
{
	struct tc_cache *c = io->private_data;
	struct tc_cleaner *cl = &c->cleaner;
	if (result < 0)
		__atomic_store_n(&cl->flush_err, result, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&cl->flush_pending, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	int err = __atomic_load_n(&cl->flush_err, __ATOMIC_RELAXED);
	struct tc_volume *v = NULL;
	uint64_t bytes = 0, cleaned = 0;
	for (uint32_t i = 0; i < cl->nflushing; i++) {
		struct tc_clean_done *d = &cl->flushing[i];
		if (d->vol != v) {
			if (v && !err)
				account_clean(c, v, bytes);
			else if (v)
				writeback_failed(c, v, err);
			v = d->vol;
			bytes = 0;
		}
		uint64_t one = settle_line(c, v, &d->ln, !err);
		bytes += one;
		cleaned += one;
	}
	if (v && !err)
		account_clean(c, v, bytes);
	else if (v)
		writeback_failed(c, v, err);
	for (uint32_t i = 0; i < cl->nflushing; i++)
		atomic_fetch_sub(&cl->flushing[i].vol->clean_pending, 1);
	tc_ctx *ctx = c->ctx;   /* the cache may be closed once flush_inflight is off */
	pthread_mutex_lock(&c->meta.lock);
	cl->nflushing = 0;
	bool again = cl->npend != 0;
	if (!again) {
		cl->flush_inflight = false;
		/* Room in pend again: a batch may be waiting for it (not after a group
		 * that cleaned nothing: the timer's tick tries again). */
		if (cleaned)
			tc_cleaner_kick(c);
	}
	pthread_mutex_unlock(&c->meta.lock);
	if (again)
		group_flush(c);
	else
		tc_ctx_wake(ctx);
}

/* Submit the flush that covers pend (flush_inflight set by the caller, meta.lock not
 * held): one per backing that pend has lines of. */
static void group_flush(struct tc_cache *c)
{
	struct tc_cleaner *cl = &c->cleaner;
	pthread_mutex_lock(&c->meta.lock);
	struct tc_clean_done *t = cl->flushing;
	cl->flushing = cl->pend;
	cl->nflushing = cl->npend;
	cl->pend = t;
	cl->npend = 0;
	pthread_mutex_unlock(&c->meta.lock);
	/* The backings to flush, each once (batches are in order, so the lines of a
	 * volume mostly stand together). */
	tc_dev *devs[TC_MAX_VOLUMES];
	unsigned ndev = 0;
	for (uint32_t i = 0; i < cl->nflushing; i++) {
		tc_dev *d = cl->flushing[i].vol->backing;
		unsigned k = 0;
		while (k < ndev && devs[k] != d)
			k++;
		if (k == ndev && ndev < TC_MAX_VOLUMES)
			devs[ndev++] = d;
	}
	cl->flush_err = 0;
	__atomic_store_n(&cl->flush_pending, (int)ndev + 1, __ATOMIC_RELEASE);
	for (unsigned k = 0; k < ndev; k++) {
		struct tc_io *io = &cl->flush_ios[k];
		memset(io, 0, sizeof(*io));
		io->op = TC_OP_FLUSH;
		io->done = group_flush_done;
		io->private_data = c;
		io->prio = TC_PRIO_BULK;
		tc_dev_submit(devs[k], io);
	}
	group_flush_done(&(struct tc_io){ .private_data = c }, 0);
}

/* Batch @b's backing writes completed: its lines join the flush group, its slot is
 * free. */
static void batch_written(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	struct tc_cleaner *cl = &c->cleaner;
	atomic_fetch_add(&b->vol->clean_pending, b->n);
	pthread_mutex_lock(&c->meta.lock);
	for (uint32_t i = 0; i < b->n; i++) {
		struct tc_clean_done *d = &cl->pend[cl->npend++];
		d->vol = b->vol;
		d->ln = b->lines[i];
	}
	bool start = !cl->flush_inflight;
	cl->flush_inflight = true;
	/* A batch that wrote nothing (its dirty units all failed their checksum) starts
	 * no other: the same lines would come round again at once. */
	batch_free_locked(b, b->nwrites != 0);
	pthread_mutex_unlock(&c->meta.lock);
	if (start)
		group_flush(c);
}

/*
 * Dirty units read back that fail their checksum (csum.c) are not written back: the
 * backing keeps its older copy rather than the cache's damaged one, and the units stay
 * dirty, so reads of them keep failing instead of returning wrong data.  Returns
 * whether any dirty unit is left to write.
 */
static bool batch_verify(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	bool any = false;
	for (uint32_t i = 0; i < b->n; i++) {
		struct tc_clean_line *ln = &b->lines[i];
		if (ln->slot == TC_SLOT_NONE)
			continue;   /* read from the backing alone */
		uint16_t bad = c->csum ? tc_csum_verify(c, ln->slot, ln->mask | ln->fill,
							 ln->buf) : 0;
		/* A clean unit that fails is not used to complete a stripe (a read of it
		 * goes to the backing, csum.c). */
		ln->fill &= (uint16_t)~bad;
		bad &= ln->mask;
		any |= (ln->mask & (uint16_t)~bad) != 0;
		if (!bad)
			continue;
		ln->mask &= (uint16_t)~bad;
		tc_err(c->ctx, "volume \"%s\": cache %s returned dirty data that fails its "
		       "checksum (writeback read, units 0x%x of line %u): not written back; "
		       "reads of it fail", b->vol->name, c->dev->name, bad, ln->line_no);
		tc_cache_error(c, b->vol, "writeback read", -EIO);
	}
	return any;
}

/*
 * How many batches may write the backings at once: all of them while the volume's
 * clients are idle, so that an array gets stripes enough to keep every member busy
 * (one writer at a time drained a RAID 6 at 0.80x of its sequential rate, three at
 * 0.91x); one while its clients are busy (a request in flight or in the last tick),
 * so that their requests queue behind one batch at most: with three batches writing
 * at once, a client's 4 KiB writes to a RAID 6 during a drain had a median of 75 to
 * 95 ms against 20 to 35 ms with the old one-batch cleaner, with one 27 to 43 ms
 * (tc-bench-degrade, docs/benchmarks.md "Drain").  One writer keeps the backing busy
 * all the same: the next batch's writes go out when the last of the previous one's
 * complete.
 */
static unsigned max_writers(struct tc_volume *v, uint64_t now)
{
	return client_idle_ns(v, now) < TC_TICK_NS ? 1 : TC_CLEAN_SLOTS;
}

/*
 * Take turns writing: queue @b (unless NULL) for its turn, end the turn of a batch
 * whose writes are done (@done), then give turns, in queue order, to as many batches
 * as may write now for volume @v (max_writers); they go into @go.  Returns how many.
 */
static unsigned write_turns(struct tc_cache *c, struct tc_clean_batch *b, bool done,
			    struct tc_volume *v, struct tc_clean_batch **go)
{
	struct tc_cleaner *cl = &c->cleaner;
	unsigned max = max_writers(v, tc_ctx_now(c->ctx)), n = 0;
	pthread_mutex_lock(&c->meta.lock);
	if (done)
		cl->nwriters--;
	if (b)
		cl->write_wait[cl->nwrite_wait++] = b;
	while (cl->nwrite_wait && cl->nwriters < max) {
		go[n++] = cl->write_wait[0];
		memmove(cl->write_wait, cl->write_wait + 1,
			(--cl->nwrite_wait) * sizeof(cl->write_wait[0]));
		cl->nwriters++;
	}
	pthread_mutex_unlock(&c->meta.lock);
	return n;
}

static void batch_step(struct tc_clean_batch *b)
{
	struct tc_cache *c = b->c;
	struct tc_clean_batch *go[TC_CLEAN_SLOTS];
	unsigned n;
	int step = b->step++;
	int err = __atomic_load_n(&b->err, __ATOMIC_RELAXED);
	switch (step) {
	case BATCH_BREADS_DONE:
		if (__atomic_load_n(&b->berr, __ATOMIC_RELAXED)) {
			/* The stripes are not completed: their dirty units go back alone. */
			/* Not a writeback error (the drain counts those): the dirty units
			 * still go back. */
			int berr = __atomic_load_n(&b->berr, __ATOMIC_RELAXED);
			tc_warn(c->ctx, "volume \"%s\": reading backing %s to complete stripes "
				"for writeback failed: %s; writing back the dirty units alone",
				b->vol->name, b->vol->backing->name, strerror(-berr));
			for (uint32_t i = 0; i < b->n; i++)
				b->lines[i].bfill = b->lines[i].fill = 0;
		}
		batch_read(b);
		break;
	case BATCH_READS_DONE:
		if (err) {
			tc_cache_error(c, b->vol, "writeback read", err);
			batch_release(b);
			batch_fail(b);
			return;
		}
		/* The next batch reads the cache while this one writes the backing.  Kicked
		 * before the writes go out: this batch keeps the cache open until then. */
		if (batch_verify(b))
			tc_cleaner_kick(c);
		n = write_turns(c, b, false, b->vol, go);
		for (unsigned i = 0; i < n; i++)
			batch_write(go[i]);
		break;
	case BATCH_WRITES_DONE:
	default:
		/* This batch's flush goes out before the next batch's writes: a disk serves
		 * a flush only after everything queued before it, and holds back what comes
		 * after, so a flush submitted behind a whole batch of writes would hold a
		 * client's requests back for that long. */
		n = write_turns(c, NULL, true, b->vol, go);
		batch_release(b);
		if (err)
			batch_fail(b);
		else
			batch_written(b);
		for (unsigned i = 0; i < n; i++)
			batch_write(go[i]);
		break;
	}
}

static void batch_start_work(struct tc_work *w)
{
	struct tc_clean_batch *b = (struct tc_clean_batch *)((char *)w -
							     offsetof(struct tc_clean_batch, work));
	batch_read_backing(b);
}

/*
 * Order @n candidates (first line << 32 | lines) by first line, those reaching past
 * @cursor first: a sweep from the cursor that wraps around.
 */
static void sort_from_cursor(uint64_t *keys, uint32_t n, uint64_t cursor)
{
	if (!n)
		return;   /* keys may be NULL */
	qsort(keys, n, sizeof(uint64_t), cmp_u64);
	uint32_t split = 0;
	while (split < n && (keys[split] >> 32) + (uint32_t)keys[split] <= cursor)
		split++;
	/* Rotate [0, split) behind [split, n): three reversals. */
	for (int k = 0; k < 3; k++) {
		uint32_t lo = k == 0 ? 0 : k == 1 ? split : 0, hi = k == 0 ? split : n;
		for (uint32_t a = lo, z = hi; a + 1 < z; a++, z--) {
			uint64_t t = keys[a];
			keys[a] = keys[z - 1];
			keys[z - 1] = t;
		}
	}
}

/*
 * The old way, when the volume's dirty index is lost (dirty.c): scan the line array
 * for @v's dirty lines, inside [rlo, rhi) for a range flush, into @keys as candidates
 * of one line each; at most @cap, those at or after the cursor first.
 */
static uint32_t scan_lines(struct tc_cache *c, struct tc_volume *v, bool rf, uint64_t rlo,
			   uint64_t rhi, uint64_t *keys, uint32_t cap)
{
	uint32_t cnt = 0;
	for (int pass = 0; pass < 2 && cnt < cap; pass++) {
		for (uint32_t i = 0; i < c->nslots && cnt < cap; i++) {
			struct tc_line l = tc_line_peek(&c->lines[i]);
			if (l.vol != v->id || !l.dirty)
				continue;
			if (rf && (l.line_no < rlo || l.line_no >= rhi))
				continue;
			bool after = l.line_no >= v->clean_cursor;
			if (after == (pass == 0))
				keys[cnt++] = ((uint64_t)l.line_no << 32) | 1u;
		}
		if (pass == 0 && cnt >= c->cleaner.batch_lines)
			break;
	}
	return cnt;
}

/* Line @line of @v: -1 not dirty (or not cached), 1 dirty on a range of the cache
 * device with no redundancy left (its only good copy on the surviving members), 0
 * dirty elsewhere. */
static int line_exposed(struct tc_cache *c, struct tc_volume *v, uint64_t line)
{
	uint64_t key = tc_line_key(v->id, (uint32_t)line);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	pthread_mutex_lock(&s->lock);
	uint32_t slot = tc_map_lookup(c, key);
	bool dirty = slot != TC_SLOT_NONE && c->lines[slot].dirty;
	pthread_mutex_unlock(&s->lock);
	if (!dirty)
		return -1;
	return tc_dev_range_redundancy(c->dev, c->sb.data_offset + (uint64_t)slot * c->line_size,
				       c->line_size) < 1;
}

/*
 * Survivors first (the protected write-back issue's rule when a cache pool loses a
 * member): while write-back is held because the cache device degraded, the dirty
 * lines whose range of the device lost its last spare copy are written back before
 * the others.  A RAID 1 of two that lost a member has no copy left anywhere, and a
 * parity pool loses redundancy for every stripe alike: then nothing changes.  It
 * matters for a RAID 10 pool (the lines on the pair that lost a member) and a
 * three-way mirror that lost two.  Returns the new candidate list (malloc'ed, *@cnt
 * entries, at most @cap exposed ones first) or NULL for no change: on a backing
 * written in whole stripes (@lps) the stripes holding such a line go first; otherwise
 * each such line goes first as a candidate of its own, its group following with the
 * rest (take_line skips what is clean by then).  Each part keeps its order.  Once a
 * scan finds none, or nothing but, the volume is done until a part of the device
 * fails again (tc_dev_health_gen: a second member of another pair of a RAID 10 sends
 * no event, its redundancy being 0 already).
 */
static uint64_t *survivors_first(struct tc_cache *c, struct tc_volume *v,
				 const uint64_t *groups, uint32_t m, bool lps, uint32_t cap,
				 uint64_t gen, uint32_t *cnt)
{
	if (atomic_load(&c->wb_hold) != TC_HOLD_DEGRADED || v->exposed_gen == gen || !m)
		return NULL;
	uint64_t total = m;
	for (uint32_t i = 0; !lps && i < m; i++)
		total += (uint32_t)groups[i];
	if (total > (uint64_t)cap + m)
		total = (uint64_t)cap + m;   /* at most @cap singles, then the groups */
	uint64_t *out = malloc(sizeof(uint64_t) * total);
	uint8_t *rest = calloc(m, 1);
	uint32_t k = 0, nexp = 0, nplain = 0;
	for (uint32_t i = 0; out && rest && i < m && k < cap; i++) {
		uint64_t first = groups[i] >> 32, n = (uint32_t)groups[i];
		bool any = false;
		for (uint64_t line = first; line < first + n && k < cap; line++) {
			int e = line_exposed(c, v, line);
			if (e <= 0) {
				nplain += e == 0;
				continue;
			}
			any = true;
			if (lps)
				break;
			out[k++] = (line << 32) | 1u;
		}
		nexp += any;
		rest[i] = !(lps && any);
		if (lps && any)
			out[k++] = groups[i];
	}
	/* None exposed, or (a whole scan) every candidate: the order stays, and the
	 * volume is done with it until the next failure. */
	bool whole = k < cap;
	if (!out || !rest || !nexp || (whole && (lps ? nexp == m : !nplain))) {
		if (out && rest && (!nexp || whole))
			v->exposed_gen = gen;
		free(out);
		free(rest);
		return NULL;
	}
	for (uint32_t i = 0; i < m; i++)
		if (rest[i])
			out[k++] = groups[i];
	free(rest);
	*cnt = k;
	return out;
}

/*
 * Fill cl->scan with @v's candidates for the next batches: runs of lines that hold
 * dirty data (first line << 32 | lines), from the volume's dirty index, each a group
 * of the index (a stripe on a parity backing) clipped to [rlo, rhi) for a range flush,
 * in elevator order from the cursor.  On a backing whose stripes the cleaner writes
 * whole (@lps lines each, not for a range flush), the full dirty stripes come first,
 * and the partial ones follow only with @partial (partial_stripes_ok).
 */
static void scan_dirty(struct tc_cache *c, struct tc_volume *v, bool rf, uint64_t rlo,
		       uint64_t rhi, uint32_t lps, bool partial)
{
	/* Read once: a failure during the scan makes the next one (batch_collect). */
	uint64_t health = tc_dev_health_gen(c->dev);
	struct tc_cleaner *cl = &c->cleaner;
	struct tc_dirty_index *d = &v->dirty_ix;
	uint64_t *groups = NULL;
	uint32_t nfull = 0, cnt = 0;
	int64_t ng = tc_dirty_collect(d, &groups, &nfull);
	if (ng < 0) {
		cnt = scan_lines(c, v, rf, rlo, rhi, cl->scan, cl->scan_cap);
		sort_from_cursor(cl->scan, cnt, v->clean_cursor);
		goto done;
	}
	bool stripes = lps && !rf && d->group_units;
	/* Candidates in place, bit 31 of a full stripe's count of lines set. */
	uint32_t m = 0, nf = 0;
	for (int64_t i = 0; i < ng; i++) {
		/* The first group may start before the volume (dirty.c, shift). */
		int64_t gfirst = (int64_t)((groups[i] >> 32) * d->group_lines) - d->shift;
		uint64_t first = gfirst > 0 ? (uint64_t)gfirst : 0;
		uint64_t end = (uint64_t)(gfirst + d->group_lines);
		bool full = stripes && (uint32_t)groups[i] == d->group_units;
		if (rf) {
			first = first > rlo ? first : rlo;
			end = end < rhi ? end : rhi;
			if (first >= end)
				continue;
		}
		if (stripes && !full && !partial)
			continue;
		groups[m++] = (first << 32) | (end - first) | (full ? 1ull << 31 : 0);
	}
	/* Full stripes to the front, then each part in elevator order. */
	for (uint32_t i = 0; i < m; i++) {
		if (!(groups[i] & (1ull << 31)))
			continue;
		uint64_t t = groups[nf];
		groups[nf++] = groups[i] & ~(1ull << 31);
		groups[i] = i == nf - 1 ? groups[nf - 1] : t;
	}
	sort_from_cursor(groups, nf, v->clean_cursor);
	sort_from_cursor(groups + nf, m - nf, v->clean_cursor);
	uint64_t *first = survivors_first(c, v, groups, m, stripes, cl->scan_cap, health, &m);
	if (first) {
		free(groups);
		groups = first;
	}
	cnt = m < cl->scan_cap ? m : cl->scan_cap;
	if (cnt)
		memcpy(cl->scan, groups, sizeof(uint64_t) * cnt);
	free(groups);
done:
	cl->scan_cnt = cnt;
	cl->scan_pos = 0;
	cl->scan_sub = 0;
	cl->scan_vol = v;
	cl->scan_rf = rf;
	cl->scan_lo = rlo;
	cl->scan_hi = rhi;
	cl->scan_partial = partial;
	cl->scan_health = health;
}

/*
 * Hold line @line_no of @v for batch @b as its entry @n, if the line is cached, dirty
 * or @fill, and free to take (tc_line_try_shared): its dirty units to write back, with
 * @fill its clean valid units too (to complete a stripe).  Returns the line's valid
 * units, 0 when not taken.  The slot is looked up under the key's shard lock, never
 * taken from the scan: a slot the scan saw may have been evicted and is being given
 * to another line meanwhile, outside this lock.
 */
static uint16_t take_line(struct tc_cache *c, struct tc_clean_batch *b, uint32_t n,
			  struct tc_volume *v, uint32_t line_no, bool fill)
{
	uint64_t key = tc_line_key(v->id, line_no);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	uint16_t valid = 0;
	pthread_mutex_lock(&s->lock);
	uint32_t slot = tc_map_lookup(c, key);
	struct tc_line *l = slot != TC_SLOT_NONE ? &c->lines[slot] : NULL;
	struct tc_inflight *inf = NULL;
	if (l && l->vol == v->id && l->line_no == line_no && (l->dirty || (fill && l->valid)))
		inf = tc_line_try_shared(c, s, key);
	if (inf) {
		struct tc_clean_line *ln = &b->lines[n];
		ln->slot = slot;
		ln->line_no = line_no;
		ln->mask = l->dirty;
		ln->fill = fill ? l->valid & (uint16_t)~l->dirty : 0;
		ln->bfill = 0;
		/* The volume's last line may run past its end: no unit beyond it. */
		uint64_t start = (uint64_t)line_no << c->line_shift;
		if (start + c->line_size > v->size)
			ln->fill &= (uint16_t)((1u << ((v->size - start) / TC_UNIT_SIZE)) - 1);
		ln->gen = inf->gen;
		ln->inf = inf;
		valid = l->valid;
	}
	pthread_mutex_unlock(&s->lock);
	return valid;
}

/*
 * Hold line @line_no of @v, which the cache does not hold, for batch @b as entry @n:
 * to be read from the backing to complete its stripe (bfill), locked meanwhile so
 * that no write reaches the backing under the cleaner's copy.  False when the cache
 * holds the line after all, or a request holds its lock.
 */
static bool take_absent(struct tc_cache *c, struct tc_clean_batch *b, uint32_t n,
			struct tc_volume *v, uint32_t line_no)
{
	uint64_t key = tc_line_key(v->id, line_no);
	struct tc_lock_shard *s = tc_shard_of(c, key);
	pthread_mutex_lock(&s->lock);
	struct tc_inflight *inf = tc_map_lookup(c, key) == TC_SLOT_NONE ?
				  tc_line_try_shared(c, s, key) : NULL;
	if (inf) {
		struct tc_clean_line *ln = &b->lines[n];
		memset(ln, 0, sizeof(*ln));
		ln->slot = TC_SLOT_NONE;
		ln->line_no = line_no;
		ln->bfill = (uint16_t)c->unit_mask_all;
		ln->gen = inf->gen;
		ln->inf = inf;
	}
	pthread_mutex_unlock(&s->lock);
	return inf != NULL;
}

/*
 * Whether writing the stripe in entries [@from, @to) of @b whole, after reading what
 * the cache lacks of it from the backing, costs the array fewer member operations
 * than writing its dirty runs alone, each a partial-stripe write.  A partial write
 * costs the cheaper of md's two ways (handle_stripe_dirtying in drivers/md/raid5.c):
 * read-modify-write, reading and writing the data chunk and each parity chunk, or
 * reconstruct-write, reading the other data chunks and writing this one and the
 * parity.  Completing the stripe costs a read of each data chunk at most and one
 * write per member.  On a RAID 6 of six (4 data chunks, 2 parity) that is 10 against
 * 6 a run: two dirty runs in a stripe pay.  The backing's chunk is its io_min, its
 * parity chunks its redundancy (at least 1).
 */
static bool reconstruct_pays(struct tc_cache *c, struct tc_volume *v,
			     const struct tc_clean_batch *b, uint32_t from, uint32_t to)
{
	struct tc_dev_limits l;
	tc_dev_limits(v->backing, &l);
	uint64_t parity = l.redundancy ? l.redundancy : 1;
	uint64_t data = l.io_min && v->stripe % l.io_min == 0 ? v->stripe / l.io_min : 1;
	uint64_t per_run = 2 * (1 + parity) < data + parity ? 2 * (1 + parity) : data + parity;
	uint64_t runs = 0;
	bool prev = false;
	for (uint32_t i = from; i < to; i++)
		for (unsigned u = 0; u < c->units; u++) {
			bool d = b->lines[i].mask & (1u << u);
			runs += d && !prev;
			prev = d;
		}
	return data + data + parity < runs * per_run;
}

/*
 * Take the whole stripe of @lps lines that starts at line @first (negative: before
 * the volume's start, stripe_first) into @b from entry @n: every line of it, held.  Three ways to write it back:
 *   - the cache holds it whole (every line cached, every unit valid): its clean units
 *     are read from the cache and written back with the dirty ones, so the backing
 *     gets one full-stripe write and reads nothing (a parity array would otherwise
 *     read the old data and parity for every dirty run);
 *   - the cache holds part of it, and its dirty units lie in runs enough that writing
 *     each as a partial stripe costs the array more than completing it
 *     (reconstruct_pays): what the cache lacks is read from the backing (the lines the
 *     cache does not hold are locked meanwhile), and the stripe goes back whole: a
 *     reconstruct-write done once for the stripe rather than once per run;
 *   - else the lines without dirty units are let go and only the dirty units are
 *     written.
 * Returns the number of entries now in @b.
 */
static uint32_t take_stripe(struct tc_cache *c, struct tc_clean_batch *b, uint32_t n,
			    struct tc_volume *v, int64_t first, uint32_t lps)
{
	uint16_t full = (uint16_t)c->unit_mask_all;
	uint32_t start = n;
	bool complete = true, filled = false;
	/* Lines the cache lacks are held too while the backing can complete the stripe:
	 * it lies wholly inside the volume, and every line of it is free to take. */
	bool recon = first >= 0 && ((uint64_t)first + lps) << c->line_shift <= v->size;
	for (uint32_t j = 0; j < lps; j++) {
		if (first + j < 0) {
			complete = false;   /* before the volume's start */
			continue;
		}
		uint32_t line = (uint32_t)(first + j);
		uint16_t valid = take_line(c, b, n, v, line, true);
		if (!valid) {
			complete = false;
			if (recon && take_absent(c, b, n, v, line))
				n++;
			else
				recon = false;
			continue;
		}
		filled |= b->lines[n].fill != 0;
		if (valid != full) {
			complete = false;
			b->lines[n].bfill = full & (uint16_t)~valid;
		}
		n++;
	}
	if (complete) {
		if (filled)
			tc_stat_add(v, ST_WB_STRIPES_COMPLETED, 1);
		return n;
	}
	if (recon && reconstruct_pays(c, v, b, start, n))
		return n;   /* counted when written (batch_write) */
	uint32_t k = start;
	for (uint32_t i = start; i < n; i++) {
		struct tc_clean_line *ln = &b->lines[i];
		ln->fill = 0;
		ln->bfill = 0;
		if (ln->mask) {
			b->lines[k++] = *ln;
			continue;
		}
		tc_line_release_shared(c, tc_shard_of(c, tc_line_key(v->id, ln->line_no)),
				       ln->inf);
		settle_line(c, v, ln, false);
	}
	return k;
}

uint32_t tc_cleaner_stripe_lines(struct tc_cache *c, uint64_t stripe)
{
	if (!stripe || stripe % c->line_size || stripe / c->line_size < 2 ||
	    stripe / c->line_size > c->cleaner.batch_lines)
		return 0;
	return (uint32_t)(stripe / c->line_size);
}

/* Lines per stripe of @v's backing that the cleaner completes from the cache (0: it
 * writes dirty units only). */
static uint32_t stripe_lines(struct tc_cache *c, struct tc_volume *v)
{
	return atomic_load(&v->no_stripe_fill) ? 0 : tc_cleaner_stripe_lines(c, v->stripe);
}

/* How long a volume's clients must have been idle before the cleaner writes partial
 * stripes of its parity backing when nothing presses it to: the medium flush rate's
 * idle time (clean_rate), the time after which the clients count as gone. */
#define TC_PARTIAL_IDLE_NS 100000000ull

/*
 * Whether the cleaner may write partial stripes of @v's backing now (all its dirty
 * data, full stripes or not, when the backing has no stripes).  A partial stripe
 * costs a parity array a read-modify-write or a reconstruct-write, and one left dirty
 * in the cache may yet fill up and go out whole; so, as bcache does when partial
 * stripes are expensive (writeback.c, refill_full_stripes first), full stripes go
 * first, and partial ones only when something presses the cleaner (a drain, a range
 * flush, the volume above its cap, the cache's dirty data above its high watermark,
 * write-back held) or the volume's clients are idle.
 */
static bool partial_stripes_ok(struct tc_cache *c, struct tc_volume *v, uint64_t now)
{
	return atomic_load(&v->draining) || atomic_load(&v->range_flush) ||
	       atomic_load(&v->cap_pressure) || c->pressure || atomic_load(&c->wb_hold) ||
	       client_idle_ns(v, now) >= TC_PARTIAL_IDLE_NS;
}

/* Whether @v has dirty data the cleaner may write now (partial_stripes_ok). */
static bool has_work(struct tc_cache *c, struct tc_volume *v, uint64_t now)
{
	if (!atomic_load(&v->dirty_units))
		return false;
	if (!stripe_lines(c, v) || atomic_load(&v->range_flush) || partial_stripes_ok(c, v, now))
		return true;
	return tc_dirty_full(&v->dirty_ix) || tc_dirty_lost(&v->dirty_ix);
}

/*
 * Collect up to batch_lines of the volume's dirty lines into @b, in the order of the
 * candidates (scan_dirty), at most @budget bytes of dirty units; hold each shared;
 * returns the number taken.  On a backing with a full stripe, whole stripes are taken
 * (take_stripe).  Candidates come from the last scan while it has any left for this
 * volume, else from a new scan.  Under mgmt_lock.
 */
static uint32_t batch_collect(struct tc_cache *c, struct tc_clean_batch *b,
			      struct tc_volume *v, uint64_t budget, uint64_t now)
{
	struct tc_cleaner *cl = &c->cleaner;
	uint32_t n = 0, lps = stripe_lines(c, v);
	b->lps = lps;   /* the batch's reads and writes go by it, whatever changes */
	if (!cl->scan) {
		cl->scan_cap = c->nslots < 65536 ? c->nslots : 65536;
		if (cl->scan_cap < cl->batch_lines)
			cl->scan_cap = cl->batch_lines;
		cl->scan = malloc(sizeof(uint64_t) * cl->scan_cap);
		if (!cl->scan)
			return 0;
		cl->scan_vol = NULL;
	}
	/* A range flush (range.c) takes only the lines of its window. */
	bool rf = atomic_load(&v->range_flush);
	uint64_t rlo = atomic_load(&v->range_lo), rhi = atomic_load(&v->range_hi);
	bool partial = partial_stripes_ok(c, v, now);
	bool rescanned = false;
	/* A new list also when a part of the cache device failed since: its newly
	 * exposed lines go first (survivors_first). */
	if (cl->scan_vol != v || cl->scan_rf != rf || cl->scan_partial != partial ||
	    (rf && (cl->scan_lo != rlo || cl->scan_hi != rhi)) ||
	    (atomic_load(&c->wb_hold) == TC_HOLD_DEGRADED &&
	     cl->scan_health != tc_dev_health_gen(c->dev))) {
		scan_dirty(c, v, rf, rlo, rhi, lps, partial);
		rescanned = true;
	}
	uint64_t bytes = 0, last_stripe = UINT64_MAX;
	while (n < cl->batch_lines && bytes < budget) {
		if (cl->scan_pos == cl->scan_cnt) {
			if (rescanned)
				break;
			scan_dirty(c, v, rf, rlo, rhi, lps, partial);
			rescanned = true;
			continue;
		}
		uint32_t first = (uint32_t)(cl->scan[cl->scan_pos] >> 32);
		uint32_t len = (uint32_t)cl->scan[cl->scan_pos];
		uint32_t from = n;
		if (lps && !rf) {
			/* A candidate lies within one stripe: a group of the index is one. */
			uint64_t s = stripe_of(c, v, first, lps);
			if (s == last_stripe) {
				cl->scan_pos++;   /* taken with its stripe */
				continue;
			}
			if (n + lps > cl->batch_lines)
				break;   /* the stripe goes whole into the next batch */
			last_stripe = s;
			int64_t sfirst = stripe_first(c, v, s, lps);
			n = take_stripe(c, b, n, v, sfirst, lps);
			if (n > from)
				v->clean_cursor = (uint64_t)(sfirst + lps);
			cl->scan_pos++;
		} else {
			uint32_t line_no = first + cl->scan_sub;
			if (take_line(c, b, n, v, line_no, false)) {
				n++;
				v->clean_cursor = (uint64_t)line_no + 1;
			}
			if (++cl->scan_sub >= len) {
				cl->scan_sub = 0;
				cl->scan_pos++;
			}
		}
		for (uint32_t i = from; i < n; i++)
			bytes += (uint64_t)tc_popcount16(b->lines[i].mask) * TC_UNIT_SIZE;
	}
	for (uint32_t i = 0; i < n; i++)
		b->lines[i].buf = b->bufs + (size_t)i * c->line_size;
	/* A fresh scan of everything that gave nothing to take: the sweep starts again at
	 * the start. */
	if (n == 0 && rescanned && (partial || !lps))
		v->clean_cursor = 0;
	return n;
}

/* Refill @v's token bucket for the time since the last refill at @rate bytes/s (at
 * most one second's worth) and return it. */
static uint64_t refill_tokens(struct tc_volume *v, uint64_t rate, uint64_t now)
{
	uint64_t dt = !v->tokens_ns ? TC_TICK_NS : now > v->tokens_ns ? now - v->tokens_ns : 0;
	if (dt > 1000000000ull)
		dt = 1000000000ull;
	v->tokens_ns = now;
	v->tokens += rate / 1000u * dt / 1000000u;
	if (v->tokens > rate)
		v->tokens = rate;
	return v->tokens;
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
	/* Claim a free batch slot. */
	struct tc_clean_batch *b = NULL;
	pthread_mutex_lock(&c->meta.lock);
	/* Every batch in flight must find room in pend when its writes complete. */
	if (!c->closing && cl->active < TC_CLEAN_SLOTS &&
	    cl->npend + (cl->active + 1) * cl->batch_lines <= cl->done_cap) {
		for (unsigned i = 0; i < TC_CLEAN_SLOTS && !b; i++)
			if (!cl->b[i].vol && !cl->b[i].n)
				b = &cl->b[i];
		if (b) {
			cl->active++;
			b->n = UINT32_MAX;   /* claimed: no other tick takes the slot */
		}
	}
	pthread_mutex_unlock(&c->meta.lock);
	if (!b)
		return;

	struct tc_volume *pick = NULL;
	uint64_t pick_budget = 0;
	pthread_mutex_lock(&c->mgmt_lock);
	for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
		struct tc_volume *v = c->vols[i];
		if (!v)
			continue;
		uint64_t rate = clean_rate(c, v, now);
		if (rate == 0 || !has_work(c, v, now)) {
			v->tokens = 0;
			v->tokens_ns = now;
			continue;
		}
		uint64_t budget = UINT64_MAX;
		if (rate != UINT64_MAX && (budget = refill_tokens(v, rate, now)) < c->line_size)
			continue;
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
		n = batch_collect(c, b, pick, pick_budget, now);
		if (n && pick_budget != UINT64_MAX) {
			uint64_t used = 0;
			for (uint32_t i = 0; i < n; i++)
				used += (uint64_t)tc_popcount16(b->lines[i].mask) * TC_UNIT_SIZE;
			pick->tokens = pick->tokens > used ? pick->tokens - used : 0;
		}
	}
	pthread_mutex_unlock(&c->mgmt_lock);
	pthread_mutex_lock(&c->meta.lock);
	b->n = n;
	if (!n) {
		cl->active--;
		pthread_mutex_unlock(&c->meta.lock);
		return;
	}
	b->vol = pick;
	pthread_mutex_unlock(&c->meta.lock);
	b->err = 0;
	b->berr = 0;
	b->step = BATCH_BREADS_DONE;
	b->work.fn = batch_start_work;
	tc_ctx_defer(c->ctx, &b->work);
}

/*
 * kick_queued counts the kicks since kick_work was queued: a kick that arrives while
 * the work item runs its pass (a batch that just finished, say) makes it run another
 * instead of being lost, and the count goes back to 0, last, only when no kick came
 * during a pass (close waits for 0, so the cache outlives this call).
 */
static void kick_work_fn(struct tc_work *w)
{
	struct tc_cache *c = (struct tc_cache *)((char *)w - offsetof(struct tc_cache, kick_work));
	unsigned seen;
	do {
		seen = atomic_load(&c->kick_queued);
		tc_cleaner_tick(c, tc_ctx_now(c->ctx));
	} while (!atomic_compare_exchange_strong(&c->kick_queued, &seen, 0));
}

void tc_cleaner_kick(struct tc_cache *c)
{
	if (c->readonly)
		return;   /* inspection: no write-back */
	if (c->closing || atomic_fetch_add(&c->kick_queued, 1))
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
	tc_cleaner_kick(c);   /* now, not at the timer's next tick */
	for (;;) {
		/* Write-back writes mark their units dirty before they leave wb_inflight:
		 * read wb_inflight first, so that when it is 0 every such write's dirty
		 * units are already counted in what is read next (the other order could
		 * see 0 dirty, then a write finishing, then 0 in flight). */
		bool wb_writes = atomic_load(&v->wb_inflight) != 0;
		uint64_t left = atomic_load(&v->dirty_units) * TC_UNIT_SIZE;
		bool busy_here = tc_cleaner_busy(c, v);
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
			tc_cleaner_wait_step(c);
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
