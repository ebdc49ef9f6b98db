/* SPDX-License-Identifier: MIT */
/*
 * request.c - the I/O paths: a client request is split into one sub-request per cache
 * line; each sub-request takes the line lock (an in-flight record, lock.c),
 * plans under the shard lock, then runs up to three rounds of device I/O and
 * finishes under the shard lock again.  Nothing blocks a thread: a sub-request that
 * must wait for a line is queued on the line's in-flight record and resumed by the
 * holder's unlock through a context work item.
 *
 * Paths per line (effective write policy in brackets; planned in plan.c):
 *   read hit              slot -> client (shared line lock; directly into the client's
 *                         buffers when 4 KiB aligned)
 *   read miss             backing -> buffer; valid units of the slot -> buffer (they may
 *                         be dirty: the backing copy is stale); fill the admitted
 *                         invalid units into the slot; buffer -> client
 *   write [wb]            partial 4 KiB units read (slot if valid, else backing), merged,
 *                         written to the slot; units become valid + dirty; FUA waits for
 *                         the next metadata commit
 *   write [wt, wa]        backing and slot in parallel; valid units stay as dirty as they
 *                         were (during a drain the cleaner still owes the backing a
 *                         FLUSH for them); wt allocates on a miss, wa does not
 *   write [pt, bypass]    backing only, cached units invalidated; when the line holds
 *                         dirty units in the range it is updated as in wa instead
 *   discard               fully covered units invalidated (old data or zeros afterwards),
 *                         then discarded on the backing
 *   flush                 backing FLUSH and a metadata commit, in parallel
 *
 * Data read back from a slot is checked against the unit checksums of csum.c: a clean
 * unit that fails is dropped and the sub-request planned again (read from the backing,
 * refilled); a dirty one is lost, an I/O error.  After the cache device failed
 * (c->failed, pass-through for every volume), only dirty units are read from it, and
 * FLUSH and FUA go to the backing alone once a volume has no dirty data left
 * (fallback_durable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"
#include "request.h"

static void sub_step(struct tc_sub *s);
static void sub_locked(struct tc_sub *s);
static void sub_resume_work(struct tc_work *w);

/* ---- small helpers ---------------------------------------------------------------- */

static inline uint64_t slot_offset(struct tc_cache *c, uint32_t slot, uint32_t off)
{
	return c->sb.data_offset + (uint64_t)slot * c->line_size + off;
}

static inline uint64_t backing_offset(struct tc_sub *s, uint32_t off)
{
	return TC_BACKING_DATA_OFFSET + ((uint64_t)s->line_no << s->c->line_shift) + off;
}

void *tc_alloc_buf(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, len ? len : 4096))
		return NULL;
	return p;
}

static bool iov_aligned(const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++)
		if (((uintptr_t)iov[i].iov_base | iov[i].iov_len) & 4095)
			return false;
	return true;
}

/* ---- cache-device error accounting and fallback ------------------------------------ */

void tc_cache_error(struct tc_cache *c, struct tc_volume *v, const char *what, int err)
{
	if (v)
		tc_stat_add(v, ST_CACHE_ERRORS, 1);
	uint64_t n = atomic_fetch_add(&c->cache_errors, 1) + 1;
	if (n == TC_COMMIT_ERR_LIMIT && !atomic_exchange(&c->failed, true))
		tc_err(c->ctx, "cache %s: %llu I/O errors (last: %s: %s); every volume falls "
		       "back to pass-through, dirty data stays readable from the cache where "
		       "possible", c->dev->name, (unsigned long long)n, what, strerror(-err));
	else if (n < TC_COMMIT_ERR_LIMIT)
		tc_warn(c->ctx, "cache %s: %s failed: %s", c->dev->name, what, strerror(-err));
}

/* ---- device I/O fan-out ------------------------------------------------------------ */

static void sub_io_put(struct tc_sub *s)
{
	if (atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1)
		sub_step(s);
}

static void sub_io_done(struct tc_io *io, int result)
{
	struct tc_sub *s = io->private_data;
	if (result < 0) {
		if (s->io_on_cache[io - s->ios])
			atomic_store(&s->cache_err, result);
		else
			atomic_store(&s->backing_err, result);
	}
	sub_io_put(s);
}

/* Start one device request of the current round.  @on_cache selects the device. */
static void sub_io(struct tc_sub *s, bool on_cache, uint8_t op, uint8_t flags, uint64_t off,
		   const struct iovec *iov, int iovcnt, uint64_t len)
{
	struct tc_io *io = &s->ios[s->nios++];
	memset(io, 0, sizeof(*io));
	io->op = op;
	io->flags = flags;
	io->offset = off;
	io->length = len;
	io->iov = iov;
	io->iovcnt = iovcnt;
	io->done = sub_io_done;
	io->private_data = s;
	/* The volume's own I/O has the volume's class; a fill is background work. */
	io->prio = s->bulk_round ? TC_PRIO_BULK : TC_SET(s->vol, priority);
	s->io_on_cache[s->nios - 1] = on_cache;
	if (on_cache && (op == TC_OP_READ || op == TC_OP_WRITE))   /* cache-device counters */
		tc_stat_add(s->vol, op == TC_OP_WRITE ? ST_CACHE_BYTES_WRITTEN :
			    ST_CACHE_BYTES_READ, len);
	atomic_fetch_add(&s->pending, 1);
	tc_dev_submit(on_cache ? s->c->dev : s->vol->backing, io);
}

static void round_begin(struct tc_sub *s)
{
	s->nios = 0;
	atomic_store(&s->pending, 1);   /* bias: released by round_end() */
}

static void round_end(struct tc_sub *s)
{
	sub_io_put(s);
}

/* One slot I/O per run of consecutive units of @mask, through the bounce buffer. */
static void sub_slot_runs(struct tc_sub *s, uint16_t mask, bool write, unsigned flags)
{
	struct tc_cache *c = s->c;
	unsigned u = 0;
	while (u < c->units) {
		if (!(mask & (1u << u))) {
			u++;
			continue;
		}
		unsigned e = u;
		while (e < c->units && (mask & (1u << e)))
			e++;
		struct iovec *v = &s->iov_inline[s->nios];
		v->iov_base = s->buf + (size_t)u * TC_UNIT_SIZE;
		v->iov_len = (size_t)(e - u) * TC_UNIT_SIZE;
		sub_io(s, true, write ? TC_OP_WRITE : TC_OP_READ, flags,
		       slot_offset(c, s->slot, u * TC_UNIT_SIZE), v, 1, v->iov_len);
		u = e;
	}
}

/* ---- the line lock (lock.c) ------------------------------------------------------- */

static void sub_resume_work(struct tc_work *w)
{
	struct tc_sub *s = (struct tc_sub *)((char *)w - offsetof(struct tc_sub, hold.resume));
	pthread_mutex_lock(&s->shard->lock);
	sub_locked(s);
}

/* ---- completion --------------------------------------------------------------------- */

/*
 * Live requests are listed (in shards, to keep the lock off the hot path's way) so that
 * tc_cache_abandon() can free the ones a simulated process death leaves behind.
 */
static void req_live_add(struct tc_cache *c, struct tc_req *r)
{
	r->live_shard = (unsigned)(((uintptr_t)r >> 6) % TC_LIVE_SHARDS);
	struct tc_live *l = &c->live[r->live_shard];
	pthread_mutex_lock(&l->lock);
	r->live_prev = NULL;
	r->live_next = l->head;
	if (l->head)
		l->head->live_prev = r;
	l->head = r;
	pthread_mutex_unlock(&l->lock);
}

static void req_live_del(struct tc_cache *c, struct tc_req *r)
{
	struct tc_live *l = &c->live[r->live_shard];
	pthread_mutex_lock(&l->lock);
	if (r->live_prev)
		r->live_prev->live_next = r->live_next;
	else
		l->head = r->live_next;
	if (r->live_next)
		r->live_next->live_prev = r->live_prev;
	pthread_mutex_unlock(&l->lock);
}

static void req_free(struct tc_req *r)
{
	for (uint32_t i = 0; i < r->nsubs; i++) {
		struct tc_sub *sub = &r->subs[i];
		free(sub->buf);
		if (sub->iov_direct != &sub->iov_one)
			free(sub->iov_direct);
	}
	free(r->bounce);
	free(r);   /* the sub-requests live in the same allocation */
}

void tc_requests_abandon(struct tc_cache *c)
{
	for (unsigned i = 0; i < TC_LIVE_SHARDS; i++) {
		struct tc_req *r = c->live[i].head, *n;
		for (; r; r = n) {
			n = r->live_next;
			req_free(r);
		}
		c->live[i].head = NULL;
	}
}

static void req_finish(struct tc_req *r)
{
	struct tc_io *io = r->io;
	int err = atomic_load(&r->err);
	if (err)
		tc_stat_add(r->vol, ST_ERRORS, 1);
	uint64_t now = tc_ctx_now(r->vol->cache->ctx);
	if (io->op == TC_OP_READ || io->op == TC_OP_WRITE || io->op == TC_OP_WRITE_ZEROES) {
		bool miss = r->seq_bypass ||
			    atomic_load_explicit(&r->missed, memory_order_relaxed);
		unsigned cls = io->op == TC_OP_READ ?
			       (miss ? TC_LAT_READ_MISS : TC_LAT_READ_HIT) :
			       (miss ? TC_LAT_WRITE_MISS : TC_LAT_WRITE_HIT);
		tc_lat_record(r->vol, cls, now - r->start_ns);
	}
	if (!err)
		tc_plan_srate_sample(r->vol, r, io->length, now - r->start_ns);
	atomic_store(&r->vol->last_io_ns, now);
	atomic_fetch_sub(&r->vol->inflight_reqs, 1);
	atomic_fetch_sub(&r->vol->cache->inflight_reqs, 1);
	req_live_del(r->vol->cache, r);
	req_free(r);
	io->done(io, err);
}

static void req_part_done(struct tc_req *r, int err)
{
	if (err) {
		int zero = 0;
		atomic_compare_exchange_strong(&r->err, &zero, err);
	}
	if (atomic_fetch_sub_explicit(&r->left, 1, memory_order_acq_rel) == 1)
		req_finish(r);
}

static void sub_commit_done(struct tc_commit_waiter *w, int result)
{
	struct tc_sub *s = (struct tc_sub *)((char *)w - offsetof(struct tc_sub, cw));
	req_part_done(s->req, result);
}

/* ---- durability after a fallback --------------------------------------------------- */

static void release_done(struct tc_io *io, int result)
{
	struct tc_volume *v = io->private_data;
	pthread_mutex_lock(&v->release_lock);
	struct tc_commit_waiter *w = v->release_waiters;
	v->release_waiters = NULL;
	v->release_state = result ? TC_RELEASE_NONE : TC_RELEASE_DONE;
	uint64_t gen = v->release_attach_gen;
	pthread_mutex_unlock(&v->release_lock);
	if (result) {
		tc_stat_add(v, ST_BACKING_ERRORS, 1);
		tc_err(v->cache->ctx, "volume \"%s\": backing %s: superblock write after the "
		       "failure of cache %s: %s", v->name, v->backing->name,
		       v->cache->dev->name, strerror(-result));
	} else {
		tc_warn(v->cache->ctx, "volume \"%s\": no dirty data left in the failed cache "
			"%s; the backing %s holds every byte (attach generation %llu: the cache's "
			"copies will not be trusted again)", v->name, v->cache->dev->name,
			v->backing->name, (unsigned long long)gen);
	}
	while (w) {
		struct tc_commit_waiter *n = w->next;
		w->fn(w, result);
		w = n;
	}
}

/*
 * After the cache device failed, what a FLUSH or FUA write promises rests on the
 * backing alone once the volume has no dirty data left: but the failed cache's
 * committed metadata may still call older copies dirty (lines cleaned since the last
 * commit that worked), and a restart that finds the cache readable would bring them
 * back over newer data.  So the first such request moves the backing's attach
 * generation on the backing itself (one superblock write, FUA): from then on the cache
 * is stale for this volume and never trusted for it again (tc_cache_attach drops or
 * refuses its copies).  With dirty data still in the cache, durability needs the
 * cache's own metadata commit, which may fail: then the request fails.
 *
 * Returns false when nothing is left to wait for (the generation moved already);
 * otherwise @w->fn runs with 0 or a negative errno once it is known.
 */
static bool fallback_durable(struct tc_volume *v, struct tc_commit_waiter *w)
{
	if (atomic_load(&v->dirty_units)) {
		tc_meta_commit_wait(v->cache, w);
		return true;
	}
	pthread_mutex_lock(&v->release_lock);
	if (v->release_state == TC_RELEASE_DONE) {
		pthread_mutex_unlock(&v->release_lock);
		return false;
	}
	w->next = v->release_waiters;
	v->release_waiters = w;
	if (v->release_state == TC_RELEASE_WRITING) {
		pthread_mutex_unlock(&v->release_lock);
		return true;
	}
	if (!v->release_buf)
		v->release_buf = tc_alloc_buf(TC_BACKING_SB_SIZE);
	if (!v->release_buf) {
		v->release_waiters = w->next;
		pthread_mutex_unlock(&v->release_lock);
		w->fn(w, -ENOMEM);
		return true;
	}
	struct tc_backing_sb b = v->bsb;
	if (b.generation < v->release_gen)
		b.generation = v->release_gen;   /* an earlier attempt failed */
	b.generation++;
	b.attach_gen = (v->release_attach_gen > b.attach_gen ? v->release_attach_gen :
			b.attach_gen) + 1;
	v->release_gen = b.generation;
	v->release_attach_gen = b.attach_gen;
	v->release_target = !v->bsb_latest;
	tc_fmt_backing_sb_encode(&b, v->release_buf);
	v->release_state = TC_RELEASE_WRITING;
	struct tc_io *io = &v->release_io;
	memset(io, 0, sizeof(*io));
	v->release_iov.iov_base = v->release_buf;
	v->release_iov.iov_len = TC_BACKING_SB_SIZE;
	io->op = TC_OP_WRITE;
	io->flags = TC_IO_FUA;
	io->offset = (uint64_t)v->release_target * TC_BACKING_SB_SIZE;
	io->length = TC_BACKING_SB_SIZE;
	io->iov = &v->release_iov;
	io->iovcnt = 1;
	io->done = release_done;
	io->private_data = v;
	pthread_mutex_unlock(&v->release_lock);
	tc_dev_submit(v->backing, io);
	return true;
}

/* Finish the sub-request: release the line, wake waiters, report. */
static void sub_done(struct tc_sub *s, int err)
{
	struct tc_cache *c = s->c;
	struct tc_line_hold *g = NULL;
	pthread_mutex_lock(&s->shard->lock);
	if (s->hold.holding)
		g = tc_line_release_locked(c, s->shard, &s->hold);
	pthread_mutex_unlock(&s->shard->lock);
	tc_line_resume(c, g);
	if (s->kind == SUB_WRITE && s->route == ROUTE_WB &&
	    s->step >= STEP_WRITE_RMW_READS)
		atomic_fetch_sub(&s->vol->wb_inflight, 1);
	if (!err && s->fua && s->kind == SUB_WRITE && (s->route == ROUTE_WB || s->fell_back)) {
		/* FUA in write-back: durable once its data and mapping are committed.  After
		 * a fallback, the committed metadata may still call the old slot copy dirty:
		 * the units' drop must be committed too, or a crash brings that copy back. */
		s->cw.fn = sub_commit_done;
		tc_meta_commit_wait(c, &s->cw);
		return;
	}
	if (!err && s->fua && s->kind == SUB_WRITE && atomic_load(&c->failed)) {
		s->cw.fn = sub_commit_done;
		if (fallback_durable(s->vol, &s->cw))
			return;
	}
	req_part_done(s->req, err);
}

/* Resume point with the shard lock held: take the line, then plan. */
static void sub_locked(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	if (!s->hold.holding && !tc_line_acquire(c, s->shard, s->key, &s->hold)) {
		/* Read before unlocking: once queued, another thread may resume, finish and
		 * reset this sub-request at any time. */
		bool oom = !s->hold.inf;
		pthread_mutex_unlock(&s->shard->lock);
		if (oom)
			req_part_done(s->req, -ENOMEM);
		return;   /* queued; resumed by the holder */
	}
	s->slot = tc_map_lookup(c, s->key);
	switch (s->kind) {
	case SUB_READ:
		tc_plan_read(s);
		if (s->step == STEP_UPGRADE) {
			/* Upgrade: release the shared hold, queue for exclusive. */
			struct tc_line_hold *g = tc_line_release_locked(c, s->shard, &s->hold);
			s->hold.want_excl = true;
			s->hold.inf = tc_inflight_get(c, s->shard, s->key, true);
			bool got = tc_line_acquire(c, s->shard, s->key, &s->hold);
			pthread_mutex_unlock(&s->shard->lock);
			tc_line_resume(c, g);
			if (!got)
				return;
			pthread_mutex_lock(&s->shard->lock);
			sub_locked(s);
			return;
		}
		break;
	case SUB_WRITE:
		tc_plan_write(s);
		break;
	case SUB_DISCARD:
		tc_plan_discard(s);
		break;
	}
	pthread_mutex_unlock(&s->shard->lock);
	/* Every use of a resident line is a hit for the replacement policy: reads and
	 * writes, whole or partial (a slot just allocated was inserted instead).  Once per
	 * sub-request, although a checksum failure plans it again.  The line is held, so
	 * the slot cannot be evicted under the call. */
	if (s->repl_hit && !s->repl_touched) {
		s->repl_touched = true;
		c->repl_ops->touch(c->repl, s->slot);
	}
	sub_step(s);   /* the first I/O round of the planned path */
}

/* ---- the state machine (enum sub_step_id) -------------------------------------------- */

static int ensure_buf(struct tc_sub *s)
{
	if (!s->buf) {
		s->buf = tc_alloc_buf(s->c->line_size);
		if (!s->buf)
			return -ENOMEM;
	}
	return 0;
}

static void finish_read_copy(struct tc_sub *s)
{
	const struct tc_io *io = s->req->io;
	tc_buf_to_iov(io->iov, io->iovcnt, s->data_off, s->buf + s->off, s->len);
}

static void copy_in_client(struct tc_sub *s)
{
	if (s->zeroes) {
		memset(s->buf + s->off, 0, s->len);
		return;
	}
	const struct tc_io *io = s->req->io;
	tc_iov_to_buf(s->buf + s->off, io->iov, io->iovcnt, s->data_off, s->len);
}

static int cache_or_backing_err(struct tc_sub *s)
{
	int ce = atomic_load(&s->cache_err), be = atomic_load(&s->backing_err);
	if (ce)
		tc_cache_error(s->c, s->vol, "slot I/O", ce);
	if (be)
		tc_stat_add(s->vol, ST_BACKING_ERRORS, 1);
	return be ? be : ce;
}

/*
 * Units read from the slot failed their checksum (@bad).  Clean ones are dropped: the
 * backing holds them, and planning the sub-request again reads them from there and
 * fills them anew.  A dirty one was the only copy: the sub-request fails with -EIO
 * (the unit stays dirty and every later read of it fails too, never returning other
 * data).  Each failure counts as a cache-device error.  Line held, shard lock not.
 */
static void csum_bad(struct tc_sub *s, uint16_t bad, const char *what)
{
	struct tc_cache *c = s->c;
	pthread_mutex_lock(&s->shard->lock);
	struct tc_line *l = &c->lines[s->slot];
	uint16_t lost = bad & l->dirty;
	uint16_t drop = bad & l->valid & (uint16_t)~l->dirty;
	if (drop) {
		tc_line_set_bits(c, s->slot, l->valid & (uint16_t)~drop, l->dirty);
		tc_csum_forget(c, s->slot, drop);
	}
	uint64_t off = ((uint64_t)s->line_no << c->line_shift) +
		       (uint64_t)__builtin_ctz(bad) * TC_UNIT_SIZE;
	tc_err(c->ctx, "volume \"%s\": cache %s returned data that fails its checksum (%s, "
	       "offset %llu, units 0x%x of line %u): %s", s->vol->name, c->dev->name, what,
	       (unsigned long long)off, bad, s->line_no,
	       lost ? "dirty data lost, the read fails" : "clean, read from the backing");
	tc_cache_error(c, s->vol, what, -EIO);
	if (lost) {
		pthread_mutex_unlock(&s->shard->lock);
		sub_done(s, -EIO);
		return;
	}
	if (s->kind == SUB_WRITE && s->route == ROUTE_WB)
		atomic_fetch_sub(&s->vol->wb_inflight, 1);   /* planning counts it again */
	if (s->iov_direct != &s->iov_one)
		free(s->iov_direct);
	s->iov_direct = NULL;
	s->direct = false;
	atomic_store(&s->cache_err, 0);
	atomic_store(&s->backing_err, 0);
	sub_locked(s);   /* still holding the line: plans again and runs */
}

static void step_hit(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	unsigned ua = s->off / TC_UNIT_SIZE;
	unsigned ub = (s->off + s->len + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE;
	const struct tc_io *io = s->req->io;
	round_begin(s);
	s->direct = (s->off % TC_UNIT_SIZE) == 0 && (s->len % TC_UNIT_SIZE) == 0 &&
		    tc_iov_slice(io->iov, io->iovcnt, s->data_off, s->len, &s->iov_one, &s->iov_direct,
			      &s->iov_direct_cnt) == 0 &&
		    (!c->dev->direct || iov_aligned(s->iov_direct, s->iov_direct_cnt));
	if (s->direct) {
		sub_io(s, true, TC_OP_READ, 0, slot_offset(c, s->slot, s->off), s->iov_direct,
		       s->iov_direct_cnt, s->len);
	} else {
		if (ensure_buf(s)) {
			atomic_store(&s->cache_err, -ENOMEM);
		} else {
			struct iovec *v = &s->iov_inline[0];
			v->iov_base = s->buf + ua * TC_UNIT_SIZE;
			v->iov_len = (ub - ua) * TC_UNIT_SIZE;
			sub_io(s, true, TC_OP_READ, 0, slot_offset(c, s->slot, ua * TC_UNIT_SIZE),
			       v, 1, v->iov_len);
		}
	}
	round_end(s);
}

/*
 * A slot read failed.  Units that are clean can come from the backing, which holds the
 * same data: retry the whole range from the backing without filling.  Dirty data that
 * cannot be read is an error to the caller, never replaced by the stale backing copy.
 */
static bool retry_from_backing(struct tc_sub *s, int ce, const char *what)
{
	tc_cache_error(s->c, s->vol, what, ce);
	pthread_mutex_lock(&s->shard->lock);
	bool dirty = (s->c->lines[s->slot].dirty & s->from_cache) != 0;
	pthread_mutex_unlock(&s->shard->lock);
	if (dirty)
		return false;
	atomic_store(&s->cache_err, 0);
	s->from_cache = 0;
	s->fill = 0;
	s->bspan_lo = s->off / TC_UNIT_SIZE;
	s->bspan_hi = (s->off + s->len + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE;
	s->direct = false;
	s->step = STEP_MISS_BACKING_READ;
	sub_step(s);
	return true;
}

static void step_hit_finish(struct tc_sub *s)
{
	int ce = atomic_load(&s->cache_err);
	if (!ce && s->c->csum) {
		uint16_t bad;
		if (s->direct)
			bad = tc_csum_verify_iov(s->c, s->slot, s->off / TC_UNIT_SIZE,
						 s->len / TC_UNIT_SIZE, s->iov_direct,
						 s->iov_direct_cnt);
		else
			bad = tc_csum_verify(s->c, s->slot, s->from_cache, s->buf);
		if (bad) {
			csum_bad(s, bad, "read hit");
			return;
		}
	}
	if (ce && ce != -ENOMEM) {
		if (!retry_from_backing(s, ce, "read hit"))
			sub_done(s, -EIO);
		return;
	}
	if (ce) {
		sub_done(s, ce);
		return;
	}
	if (!s->direct)
		finish_read_copy(s);
	sub_done(s, 0);
}

static void step_miss_backing(struct tc_sub *s)
{
	round_begin(s);
	if (ensure_buf(s)) {
		atomic_store(&s->backing_err, -ENOMEM);
	} else {
		struct iovec *v = &s->iov_inline[0];
		v->iov_base = s->buf + s->bspan_lo * TC_UNIT_SIZE;
		v->iov_len = (s->bspan_hi - s->bspan_lo) * TC_UNIT_SIZE;
		uint64_t boff = backing_offset(s, s->bspan_lo * TC_UNIT_SIZE);
		uint64_t vend = TC_BACKING_DATA_OFFSET + s->vol->size;
		if (boff + v->iov_len > vend) {
			/* The volume's last line may be shorter than a line: zero the tail. */
			uint64_t keep = vend > boff ? vend - boff : 0;
			memset((char *)v->iov_base + keep, 0, v->iov_len - keep);
			v->iov_len = keep;
		}
		if (v->iov_len)
			sub_io(s, false, TC_OP_READ, 0, boff, v, 1, v->iov_len);
	}
	round_end(s);
}

static void step_miss_cache_reads(struct tc_sub *s)
{
	int be = atomic_load(&s->backing_err);
	if (be) {
		tc_stat_add(s->vol, ST_BACKING_ERRORS, 1);
		sub_done(s, be);
		return;
	}
	round_begin(s);
	if (s->from_cache)
		sub_slot_runs(s, s->from_cache, false, 0);
	round_end(s);
}

static void step_miss_fill(struct tc_sub *s)
{
	int ce = atomic_load(&s->cache_err);
	if (ce) {
		if (!retry_from_backing(s, ce, "read of cached units"))
			sub_done(s, -EIO);
		return;
	}
	uint16_t bad = s->from_cache ? tc_csum_verify(s->c, s->slot, s->from_cache, s->buf) : 0;
	if (bad) {
		csum_bad(s, bad, "read of cached units");
		return;
	}
	/* The cache may have failed since the plan: then nothing is filled, and nothing
	 * may be marked valid afterwards either. */
	if (atomic_load(&s->c->failed))
		s->fill = 0;
	round_begin(s);
	if (s->fill) {
		tc_stat_add(s->vol, ST_CACHE_FILL_BYTES,   /* cache-device counters */
			    (uint64_t)tc_popcount16(s->fill) * TC_UNIT_SIZE);
		s->bulk_round = true;
		sub_slot_runs(s, s->fill, true, 0);
		s->bulk_round = false;
	}
	round_end(s);
}

static void step_miss_finish(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	int ce = atomic_load(&s->cache_err);
	if (ce)
		tc_cache_error(c, s->vol, "cache fill", ce);
	if (s->fill && !ce) {
		uint32_t cs[16];
		tc_csum_compute(c, s->fill, s->buf, cs);
		pthread_mutex_lock(&s->shard->lock);
		struct tc_line *l = &c->lines[s->slot];
		tc_csum_store(c, s->slot, s->fill, cs);
		tc_line_set_bits(c, s->slot, l->valid | s->fill, l->dirty);
		pthread_mutex_unlock(&s->shard->lock);
	}
	finish_read_copy(s);
	sub_done(s, 0);
}

static void step_write_rmw(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	round_begin(s);
	const struct tc_io *io = s->req->io;
	bool aligned_client = !s->zeroes && !s->rmw_backing && !s->rmw_cache &&
		tc_iov_slice(io->iov, io->iovcnt, s->data_off, s->len, &s->iov_one, &s->iov_direct,
			  &s->iov_direct_cnt) == 0;
	s->direct = aligned_client && (s->off % TC_UNIT_SIZE) == 0 &&
		    (s->len % TC_UNIT_SIZE) == 0 &&
		    (!c->dev->direct || iov_aligned(s->iov_direct, s->iov_direct_cnt)) &&
		    (!s->vol->backing->direct || iov_aligned(s->iov_direct, s->iov_direct_cnt));
	if (!s->direct) {
		if (ensure_buf(s)) {
			atomic_store(&s->cache_err, -ENOMEM);
			round_end(s);
			return;
		}
		if (s->rmw_cache)
			sub_slot_runs(s, s->rmw_cache, false, 0);
		for (unsigned u = 0; u < c->units; u++) {
			if (!(s->rmw_backing & (1u << u)))
				continue;
			struct iovec *v = &s->iov_inline[s->nios];
			v->iov_base = s->buf + u * TC_UNIT_SIZE;
			v->iov_len = TC_UNIT_SIZE;
			uint64_t boff = backing_offset(s, u * TC_UNIT_SIZE);
			if (boff + TC_UNIT_SIZE > TC_BACKING_DATA_OFFSET + s->vol->size) {
				memset(v->iov_base, 0, TC_UNIT_SIZE);
				continue;
			}
			sub_io(s, false, TC_OP_READ, 0, boff, v, 1, TC_UNIT_SIZE);
		}
	}
	round_end(s);
}

static void step_write_data(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	int err = cache_or_backing_err(s);
	if (err) {
		sub_done(s, err == -ENOMEM ? err : -EIO);
		return;
	}
	uint16_t bad = s->rmw_cache ? tc_csum_verify(c, s->slot, s->rmw_cache, s->buf) : 0;
	if (bad) {
		csum_bad(s, bad, "read-modify-write read");
		return;
	}
	atomic_store(&s->cache_err, 0);
	if (!s->direct)
		copy_in_client(s);
	round_begin(s);
	if (s->backing_write) {
		const struct iovec *v;
		int cnt;
		if (s->direct) {
			v = s->iov_direct;
			cnt = s->iov_direct_cnt;
		} else {
			struct iovec *b = &s->iov_inline[SUB_MAX_IOS - 1];
			b->iov_base = s->buf + s->off;
			b->iov_len = s->len;
			v = b;
			cnt = 1;
		}
		sub_io(s, false, TC_OP_WRITE, s->fua ? TC_IO_FUA : 0, backing_offset(s, s->off),
		       v, cnt, s->len);
	}
	/* FUA outside write-back: the slot copy of dirty units is the one recovery
	 * trusts, so it must be durable on completion like the backing copy (write-back
	 * FUA waits for a metadata commit instead, which flushes the cache first). */
	unsigned slot_flags = s->fua && s->route != ROUTE_WB ? TC_IO_FUA : 0;
	if (s->cache_write) {
		if (s->direct) {
			unsigned ua = (unsigned)__builtin_ctz(s->cache_write);
			sub_io(s, true, TC_OP_WRITE, slot_flags,
			       slot_offset(c, s->slot, ua * TC_UNIT_SIZE),
			       s->iov_direct, s->iov_direct_cnt, s->len);
		} else {
			sub_slot_runs(s, s->cache_write, true, slot_flags);
		}
	}
	round_end(s);
}

/*
 * A write-back slot write failed: the slot's copy of the touched units is now unknown,
 * and with it any older dirty data of the partial units (merged into the buffer).
 * Write the merged units through to the backing instead, then drop them from the cache.
 */
static void write_back_fallback(struct tc_sub *s, uint16_t mask)
{
	atomic_store(&s->cache_err, 0);
	s->fell_back = true;
	round_begin(s);
	if (s->direct) {
		/* Whole units straight from the client: the range is the units. */
		sub_io(s, false, TC_OP_WRITE, s->fua ? TC_IO_FUA : 0, backing_offset(s, s->off),
		       s->iov_direct, s->iov_direct_cnt, s->len);
	} else {
		uint64_t vend = TC_BACKING_DATA_OFFSET + s->vol->size;
		for (unsigned u = 0; u < s->c->units;) {
			if (!(mask & (1u << u))) {
				u++;
				continue;
			}
			unsigned e = u;
			while (e < s->c->units && (mask & (1u << e)))
				e++;
			uint64_t boff = backing_offset(s, u * TC_UNIT_SIZE);
			uint64_t len = (uint64_t)(e - u) * TC_UNIT_SIZE;
			if (boff + len > vend)
				len = vend - boff;
			struct iovec *v = &s->iov_inline[s->nios];
			v->iov_base = s->buf + u * TC_UNIT_SIZE;
			v->iov_len = len;
			sub_io(s, false, TC_OP_WRITE, s->fua ? TC_IO_FUA : 0, boff, v, 1, len);
			u = e;
		}
	}
	round_end(s);
}

static void step_write_fallback_finish(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	int be = atomic_load(&s->backing_err);
	if (be)
		tc_stat_add(s->vol, ST_BACKING_ERRORS, 1);
	pthread_mutex_lock(&s->shard->lock);
	s->hold.inf->gen++;
	struct tc_line *l = &c->lines[s->slot];
	tc_line_set_bits(c, s->slot, l->valid & (uint16_t)~s->touched,
			 l->dirty & (uint16_t)~s->touched);
	pthread_mutex_unlock(&s->shard->lock);
	sub_done(s, be ? -EIO : 0);
}

static void step_write_finish(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	int ce = atomic_load(&s->cache_err), be = atomic_load(&s->backing_err);
	if (ce)
		tc_cache_error(c, s->vol, "slot write", ce);
	if (ce && !be && s->slot != TC_SLOT_NONE) {
		/* Units whose only up-to-date copy was in the slot (write-back: all touched;
		 * otherwise the dirty ones, merged in the buffer) go to the backing. */
		pthread_mutex_lock(&s->shard->lock);
		uint16_t dirty = c->lines[s->slot].dirty;
		pthread_mutex_unlock(&s->shard->lock);
		uint16_t mask = s->route == ROUTE_WB ? s->touched :
				(uint16_t)(s->cache_write & dirty);
		if (mask) {
			write_back_fallback(s, mask);   /* continues in STEP_WRITE_FALLBACK_FINISH */
			return;
		}
	}
	if (be)
		tc_stat_add(s->vol, ST_BACKING_ERRORS, 1);
	int err = 0;
	/* Checksums of what reached the slot, computed before taking the lock. */
	uint32_t cs[16];
	uint16_t wrote = ce || s->slot == TC_SLOT_NONE ? 0 : s->cache_write;
	if (wrote && c->csum) {
		if (s->direct)
			tc_csum_compute_iov(c, (unsigned)__builtin_ctz(wrote), s->len / TC_UNIT_SIZE,
					    s->iov_direct, s->iov_direct_cnt, cs);
		else
			tc_csum_compute(c, wrote, s->buf, cs);
	}
	pthread_mutex_lock(&s->shard->lock);
	s->hold.inf->gen++;
	if (s->slot != TC_SLOT_NONE) {
		struct tc_line *l = &c->lines[s->slot];
		uint16_t valid = l->valid, dirty = l->dirty;
		if (s->route == ROUTE_WB) {
			if (ce) {
				/* The slot may hold a torn mix: the units are unusable. */
				valid &= (uint16_t)~s->touched;
				dirty &= (uint16_t)~s->touched;
				err = -EIO;
			} else {
				valid |= s->touched;
				dirty |= s->touched;
			}
		} else if (s->route == ROUTE_PT) {
			valid &= (uint16_t)~s->touched;
		} else if (ce) {
			/* The slot may hold a torn mix: drop those units; the backing write (if
			 * it succeeded) holds the newest data. */
			valid &= (uint16_t)~s->cache_write;
			dirty &= valid;
		} else if (be) {
			/* The cache has data the backing lacks: keep it only where it was dirty
			 * anyway (the cache is the authority there). */
			valid &= (uint16_t)~(s->cache_write & ~dirty);
		} else {
			valid |= s->cache_write;
		}
		tc_csum_store(c, s->slot, wrote & valid, cs);
		if (valid != l->valid || dirty != l->dirty)
			tc_line_set_bits(c, s->slot, valid, dirty);
	}
	pthread_mutex_unlock(&s->shard->lock);
	if (be)
		err = be;
	else if (ce && s->route == ROUTE_WB)
		err = -EIO;
	sub_done(s, err);
}

static void step_discard(struct tc_sub *s)
{
	round_begin(s);
	uint64_t boff = backing_offset(s, s->off);
	sub_io(s, false, TC_OP_DISCARD, 0, boff, NULL, 0, s->len);
	round_end(s);
}

static void sub_step(struct tc_sub *s)
{
	int step = s->step++;
	switch (step) {
	case STEP_HIT_READ: step_hit(s); break;
	case STEP_HIT_FINISH: step_hit_finish(s); break;
	case STEP_MISS_BACKING_READ: step_miss_backing(s); break;
	case STEP_MISS_CACHE_READS: step_miss_cache_reads(s); break;
	case STEP_MISS_FILL: step_miss_fill(s); break;
	case STEP_MISS_FINISH: step_miss_finish(s); break;
	case STEP_WRITE_RMW_READS: step_write_rmw(s); break;
	case STEP_WRITE_DATA: step_write_data(s); break;
	case STEP_WRITE_FINISH: step_write_finish(s); break;
	case STEP_WRITE_FALLBACK_FINISH: step_write_fallback_finish(s); break;
	case STEP_DISCARD: step_discard(s); break;
	case STEP_DISCARD_FINISH: {
		int be = atomic_load(&s->backing_err);
		/* A backing that cannot discard still reads old data: not an error. */
		sub_done(s, be == -EOPNOTSUPP ? 0 : be);
		break;
	}
	default:
		sub_done(s, -EIO);
		break;
	}
}

/* ---- submission --------------------------------------------------------------------- */

static void sub_start(struct tc_sub *s)
{
	pthread_mutex_lock(&s->shard->lock);
	sub_locked(s);
}

static void flush_commit_done(struct tc_commit_waiter *w, int result)
{
	struct tc_req *r = (struct tc_req *)((char *)w - offsetof(struct tc_req, cw));
	req_part_done(r, result);
}

/* FLUSH after a fallback: the backing's FLUSH and fallback_durable(). */
static void flush_fallback_done(struct tc_commit_waiter *w, int result)
{
	struct tc_req *r = (struct tc_req *)((char *)w - offsetof(struct tc_req, cw));
	struct tc_volume *v = r->vol;
	uint64_t dirty = atomic_load(&v->dirty_units) * TC_UNIT_SIZE;
	if (result && dirty && !atomic_exchange(&v->undurable_warned, true))
		tc_err(v->cache->ctx, "volume \"%s\": FLUSH fails: %llu bytes of dirty data are "
		       "in cache %s, which failed, and cannot be made durable (they may still "
		       "be written back: see `tiercache flush`; FLUSH succeeds again once none "
		       "is left)", v->name, (unsigned long long)dirty, v->cache->dev->name);
	req_part_done(r, result ? -EIO : 0);
}

static void flush_backing_done(struct tc_io *io, int result)
{
	struct tc_req *r = io->private_data;
	if (result)
		tc_stat_add(r->vol, ST_BACKING_ERRORS, 1);
	req_part_done(r, result);
}

static void refuse(struct tc_volume *v, struct tc_io *io, int err)
{
	tc_stat_add(v, ST_ERRORS, 1);
	io->done(io, err);
}

static const char *const op_names[] = { "read", "write", "flush", "discard",
					"write-zeroes" };

/* The checks every request passes before it touches anything: 0 or -EINVAL, logged. */
static int check_request(struct tc_volume *v, const struct tc_io *io)
{
	tc_ctx *ctx = v->cache->ctx;
	if (io->op > TC_OP_WRITE_ZEROES) {
		tc_err(ctx, "volume \"%s\": unknown request type %u", v->name, io->op);
		return -EINVAL;
	}
	const char *op = op_names[io->op];
	if (io->flags & ~TC_IO_FUA ||
	    ((io->flags & TC_IO_FUA) && io->op != TC_OP_WRITE && io->op != TC_OP_WRITE_ZEROES)) {
		tc_err(ctx, "volume \"%s\": %s with flags 0x%x (only write and write-zeroes "
		       "take FUA, 0x%x)", v->name, op, io->flags, TC_IO_FUA);
		return -EINVAL;
	}
	if (io->op == TC_OP_FLUSH)
		return 0;
	if (v->cache->readonly && io->op != TC_OP_READ) {
		tc_err(ctx, "volume \"%s\": %s refused: cache %s is open read-only for "
		       "inspection", v->name, op, v->cache->dev->name);
		return -EROFS;
	}
	if (io->length == 0) {
		tc_err(ctx, "volume \"%s\": %s of length 0 at offset %llu", v->name, op,
		       (unsigned long long)io->offset);
		return -EINVAL;
	}
	if ((io->offset | io->length) % TC_SECTOR_SIZE) {
		tc_err(ctx, "volume \"%s\": %s offset %llu length %llu not aligned to %u bytes",
		       v->name, op, (unsigned long long)io->offset,
		       (unsigned long long)io->length, TC_SECTOR_SIZE);
		return -EINVAL;
	}
	if (io->offset > v->size || io->length > v->size - io->offset) {
		tc_err(ctx, "volume \"%s\": offset %llu + length %llu beyond size %llu",
		       v->name, (unsigned long long)io->offset,
		       (unsigned long long)io->length, (unsigned long long)v->size);
		return -EINVAL;
	}
	if (io->op == TC_OP_READ || io->op == TC_OP_WRITE) {
		uint64_t total = 0;
		bool bad = !io->iov || io->iovcnt <= 0;
		for (int i = 0; !bad && i < io->iovcnt; i++) {
			if (!io->iov[i].iov_base && io->iov[i].iov_len)
				bad = true;
			total += io->iov[i].iov_len;
		}
		if (bad || total != io->length) {
			tc_err(ctx, "volume \"%s\": %s of length %llu with %d iovecs at %p "
			       "holding %llu bytes", v->name, op, (unsigned long long)io->length,
			       io->iovcnt, (const void *)io->iov,
			       bad ? 0ull : (unsigned long long)total);
			return -EINVAL;
		}
	}
	return 0;
}

static void bypass_read_done(struct tc_io *bio, int result)
{
	struct tc_req *r = bio->private_data;
	if (result)
		tc_stat_add(r->vol, ST_BACKING_ERRORS, 1);
	else if (r->bounce)
		tc_buf_to_iov(r->io->iov, r->io->iovcnt, 0, r->bounce, r->io->length);
	req_part_done(r, result);
}

/*
 * A sequential read (past the cutoff) of which the cache holds nothing, not even a line
 * being filled or written: one backing read for the whole request instead of one per cache
 * line, so a sequential stream reads as fast as it would without a cache
 * (docs/architecture.md, performance model).  A line appearing meanwhile belongs to a
 * request concurrent with this one, which may see either data.  Returns false when the
 * request must take the per-line path.
 */
static bool read_bypass_whole(struct tc_req *r, struct tc_io *io, uint64_t first,
			      uint64_t last)
{
	struct tc_volume *v = r->vol;
	struct tc_cache *c = v->cache;
	tc_dev *b = v->backing;
	if ((io->offset | io->length) % b->lbs)
		return false;
	for (uint64_t l = first; l <= last; l++) {
		uint64_t key = tc_line_key(v->id, (uint32_t)l);
		struct tc_lock_shard *st = tc_shard_of(c, key);
		pthread_mutex_lock(&st->lock);
		bool present = tc_map_lookup(c, key) != TC_SLOT_NONE ||
			       tc_inflight_exists(st, key);
		pthread_mutex_unlock(&st->lock);
		if (present)
			return false;
	}
	const struct iovec *iov = io->iov;
	int iovcnt = io->iovcnt;
	if (b->direct && !iov_aligned(io->iov, io->iovcnt)) {
		r->bounce = tc_alloc_buf(io->length);
		if (!r->bounce)
			return false;
		r->biov.iov_base = r->bounce;
		r->biov.iov_len = io->length;
		iov = &r->biov;
		iovcnt = 1;
	}
	tc_stat_add(v, ST_READ_MISSES, last - first + 1);
	tc_stat_add(v, ST_BYPASS_BYTES, io->length);
	atomic_store(&r->left, 1);
	r->bflush.op = TC_OP_READ;
	r->bflush.offset = TC_BACKING_DATA_OFFSET + io->offset;
	r->bflush.length = io->length;
	r->bflush.iov = iov;
	r->bflush.iovcnt = iovcnt;
	r->bflush.done = bypass_read_done;
	r->bflush.private_data = r;
	tc_dev_submit(b, &r->bflush);
	return true;
}

/* Release the line locks of the first @n sub-requests of write_around_whole(). */
static void whole_release(struct tc_req *r, uint32_t n)
{
	struct tc_cache *c = r->vol->cache;
	for (uint32_t i = 0; i < n; i++) {
		struct tc_sub *s = &r->subs[i];
		pthread_mutex_lock(&s->shard->lock);
		s->hold.inf->gen++;
		struct tc_line_hold *g = tc_line_release_locked(c, s->shard, &s->hold);
		pthread_mutex_unlock(&s->shard->lock);
		tc_line_resume(c, g);
	}
}

static void whole_write_done(struct tc_io *bio, int result)
{
	struct tc_req *r = bio->private_data;
	if (result)
		tc_stat_add(r->vol, ST_BACKING_ERRORS, 1);
	whole_release(r, r->nsubs);
	req_part_done(r, result);
}

/*
 * A write that goes to the backing whole instead of one backing write per cache line,
 * in two cases:
 *
 * - Whole aligned full stripes of a backing where partial stripes are expensive (a
 *   parity array), in any write policy, unless instant write-back makes it dirty: the
 *   array writes full stripes and reads nothing, instead of one partial-stripe write
 *   per cache line (the SSD-caching controllers' write-back does the same).  In wb
 *   and instwb that is the write's route; in wt, wa and pt, and for a stream the
 *   sequential detector sends around, it is the same data reaching the backing with
 *   no read-modify-write, and not cached (write-through would have cached it: a
 *   full-stripe stream is the one case where the cache device's copy costs the array
 *   its full-stripe rate).
 * - A write of a stream the sequential detector sends around the cache (@r's
 *   seq_bypass), of any size: its lines would each take the pass-through route, so
 *   the backing sees the client's request as it was sent, as read_bypass_whole()
 *   does for reads.  Split into one write per line, the lines of the requests in
 *   flight reached a disk interleaved and some of them late, after the head had passed
 *   them: the disk's elevator then left them waiting (up to 200 ms on the emulated
 *   HDD), and write-back sequential writes ran at 0.83 to 0.92 of uncached.
 *
 * Only when the cache holds none of its lines and nobody holds or waits for them:
 * each is then held exclusively, without queueing, until the write completes, so that
 * no read fills it or other write caches it meanwhile; anything else takes the per-line
 * path.  Returns false when the request must take it.
 */
static bool write_around_whole(struct tc_req *r, struct tc_io *io, uint64_t first,
			       uint64_t last)
{
	struct tc_volume *v = r->vol;
	struct tc_cache *c = v->cache;
	tc_dev *b = v->backing;
	uint64_t st = v->stripe;
	bool stripes = st && tc_stripe_pos(v, io->offset) % st == 0 && io->length % st == 0;
	if (io->op != TC_OP_WRITE || !(stripes || r->seq_bypass) ||
	    (io->offset | io->length) % b->lbs || r->instant_lo < r->instant_hi ||
	    atomic_load(&c->failed))
		return false;
	for (uint64_t l = first; l <= last; l++) {
		struct tc_sub *s = &r->subs[l - first];
		s->key = tc_line_key(v->id, (uint32_t)l);
		s->shard = tc_shard_of(c, s->key);
		s->hold.want_excl = true;
		pthread_mutex_lock(&s->shard->lock);
		/* No record exists: the acquisition cannot queue (false: out of memory). */
		bool taken = tc_map_lookup(c, s->key) == TC_SLOT_NONE &&
			     !tc_inflight_exists(s->shard, s->key) &&
			     tc_line_acquire(c, s->shard, s->key, &s->hold);
		pthread_mutex_unlock(&s->shard->lock);
		if (!taken) {
			whole_release(r, (uint32_t)(l - first));
			for (uint64_t i = 0; i <= l - first; i++)
				memset(&r->subs[i].hold, 0, sizeof(r->subs[i].hold));
			return false;
		}
	}
	const struct iovec *iov = io->iov;
	int iovcnt = io->iovcnt;
	if (b->direct && !iov_aligned(io->iov, io->iovcnt)) {
		r->bounce = tc_alloc_buf(io->length);
		if (!r->bounce) {
			whole_release(r, r->nsubs);
			for (uint32_t i = 0; i < r->nsubs; i++)
				memset(&r->subs[i].hold, 0, sizeof(r->subs[i].hold));
			return false;
		}
		tc_iov_to_buf(r->bounce, io->iov, io->iovcnt, 0, io->length);
		r->biov.iov_base = r->bounce;
		r->biov.iov_len = io->length;
		iov = &r->biov;
		iovcnt = 1;
	}
	tc_stat_add(v, ST_WRITE_MISSES, last - first + 1);
	if (stripes) {
		tc_stat_add(v, ST_FULL_STRIPE_BYTES, io->length);
		r->stripe_path = TC_SRATE_BACKING;
	}
	atomic_store(&r->left, 1);
	r->bflush.op = TC_OP_WRITE;
	r->bflush.flags = io->flags & TC_IO_FUA;
	r->bflush.offset = TC_BACKING_DATA_OFFSET + io->offset;
	r->bflush.length = io->length;
	r->bflush.iov = iov;
	r->bflush.iovcnt = iovcnt;
	r->bflush.done = whole_write_done;
	r->bflush.private_data = r;
	tc_dev_submit(b, &r->bflush);
	return true;
}

void tc_volume_submit(struct tc_volume *v, struct tc_io *io)
{
	struct tc_cache *c = v->cache;
	int bad = check_request(v, io);
	if (bad) {
		refuse(v, io, bad);
		return;
	}
	/* The request and its sub-requests (one per cache line) in one allocation; of a
	 * sub-request only the part before its I/O scratch arrays needs zeroing. */
	uint64_t first = 0, last = 0;
	uint32_t nsubs = 0;
	if (io->op != TC_OP_FLUSH) {
		first = io->offset >> c->line_shift;
		last = (io->offset + io->length - 1) >> c->line_shift;
		nsubs = (uint32_t)(last - first + 1);
	}
	struct tc_req *r = malloc(sizeof(*r) + (size_t)nsubs * sizeof(struct tc_sub));
	if (!r) {
		refuse(v, io, -ENOMEM);
		return;
	}
	memset(r, 0, sizeof(*r));
	r->subs = (struct tc_sub *)(r + 1);
	r->nsubs = nsubs;
	for (uint32_t i = 0; i < nsubs; i++)
		memset(&r->subs[i], 0, offsetof(struct tc_sub, ios));
	r->vol = v;
	r->io = io;
	req_live_add(c, r);
	atomic_fetch_add(&v->inflight_reqs, 1);
	atomic_fetch_add(&c->inflight_reqs, 1);
	r->start_ns = tc_ctx_now(c->ctx);
	atomic_store(&v->last_io_ns, r->start_ns);

	if (io->op == TC_OP_FLUSH) {
		tc_stat_add(v, ST_FLUSHES, 1);
		atomic_store(&r->left, 2);
		r->bflush.op = TC_OP_FLUSH;
		r->bflush.done = flush_backing_done;
		r->bflush.private_data = r;
		if (atomic_load(&c->failed)) {
			r->cw.fn = flush_fallback_done;
			tc_dev_submit(v->backing, &r->bflush);
			if (!fallback_durable(v, &r->cw))
				req_part_done(r, 0);
			return;
		}
		r->cw.fn = flush_commit_done;
		tc_meta_commit_wait(c, &r->cw);
		tc_dev_submit(v->backing, &r->bflush);
		return;
	}

	switch (io->op) {
	case TC_OP_READ:
		tc_stat_add(v, ST_READS, 1);
		tc_stat_add(v, ST_BYTES_READ, io->length);
		break;
	case TC_OP_WRITE:
		tc_stat_add(v, ST_WRITES, 1);
		tc_stat_add(v, ST_BYTES_WRITTEN, io->length);
		break;
	case TC_OP_WRITE_ZEROES:
		tc_stat_add(v, ST_WRITE_ZEROES, 1);
		tc_stat_add(v, ST_BYTES_WRITTEN, io->length);
		break;
	case TC_OP_DISCARD:
		tc_stat_add(v, ST_DISCARDS, 1);
		break;
	}
	tc_plan_instant(r, io);
	r->seq_bypass = tc_plan_seq_bypass(v, io, r->instant_lo == io->offset &&
					    r->instant_hi == io->offset + io->length);
	/* A stream through a pinned range still fills it (region.c). */
	if (r->seq_bypass && tc_region_any(v, (uint32_t)first, (uint32_t)last, TC_REGION_PINNED))
		r->seq_bypass = false;
	if (r->seq_bypass && io->op == TC_OP_READ && read_bypass_whole(r, io, first, last))
		return;
	if (write_around_whole(r, io, first, last))
		return;

	/* One extra reference held by this function: sub-requests can finish inside
	 * sub_start() (rounds with no I/O), and the last one frees the request. */
	atomic_store(&r->left, (int)r->nsubs + 1);
	uint8_t kind = io->op == TC_OP_READ ? SUB_READ :
		       io->op == TC_OP_DISCARD ? SUB_DISCARD : SUB_WRITE;
	for (uint32_t i = 0; i < r->nsubs; i++) {
		struct tc_sub *s = &r->subs[i];
		uint64_t line = first + i;
		uint64_t lstart = line << c->line_shift;
		uint64_t a = io->offset > lstart ? io->offset - lstart : 0;
		uint64_t end = io->offset + io->length;
		uint64_t b = end < lstart + c->line_size ? end - lstart : c->line_size;
		s->req = r;
		s->c = c;
		s->vol = v;
		s->line_no = (uint32_t)line;
		s->key = tc_line_key(v->id, s->line_no);
		s->shard = tc_shard_of(c, s->key);
		s->off = (uint32_t)a;
		s->len = (uint32_t)(b - a);
		s->data_off = lstart + a - io->offset;
		s->kind = kind;
		s->fua = (io->flags & TC_IO_FUA) != 0;
		s->fell_back = false;
		s->repl_hit = s->repl_touched = false;
		s->zeroes = io->op == TC_OP_WRITE_ZEROES;
		unsigned ua = (unsigned)(a / TC_UNIT_SIZE);
		unsigned ub = (unsigned)((b + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE);
		unsigned fa = (unsigned)((a + TC_UNIT_SIZE - 1) / TC_UNIT_SIZE);
		unsigned fb = (unsigned)(b / TC_UNIT_SIZE);
		s->touched = tc_units_mask(ua, ub);
		s->full = fa < fb ? tc_units_mask(fa, fb) : 0;
		s->hold.want_excl = kind != SUB_READ;
		s->hold.resume.fn = sub_resume_work;
		s->slot = TC_SLOT_NONE;
	}
	for (uint32_t i = 0; i < r->nsubs; i++)
		sub_start(&r->subs[i]);
	req_part_done(r, 0);
}

/* ---- synchronous request helpers ----------------------------------------------------- */

struct sync_io {
	struct tc_io io;
	struct iovec iov;
	struct tc_waiter w;
};

static void sync_done(struct tc_io *io, int result)
{
	tc_waiter_done(&((struct sync_io *)io)->w, result);   /* last: on its stack */
}

int tc_volume_io(tc_volume *v, enum tc_op op, unsigned flags, void *buf, uint64_t len,
		 uint64_t off)
{
	struct sync_io s;
	memset(&s, 0, sizeof(s));
	tc_waiter_init(&s.w, v->cache->ctx);
	s.iov.iov_base = buf;
	s.iov.iov_len = len;
	s.io.op = (uint8_t)op;
	s.io.flags = (uint8_t)flags;
	s.io.offset = off;
	s.io.length = len;
	if (op == TC_OP_READ || op == TC_OP_WRITE) {
		s.io.iov = &s.iov;
		s.io.iovcnt = 1;
	}
	s.io.done = sync_done;
	tc_volume_submit(v, &s.io);
	return tc_waiter_wait(&s.w);
}

int tc_volume_pread(tc_volume *v, void *buf, uint64_t len, uint64_t off)
{
	return tc_volume_io(v, TC_OP_READ, 0, buf, len, off);
}

int tc_volume_pwrite(tc_volume *v, const void *buf, uint64_t len, uint64_t off,
		     unsigned flags)
{
	return tc_volume_io(v, TC_OP_WRITE, flags, (void *)buf, len, off);
}
