/* SPDX-License-Identifier: MIT */
/*
 * raid56.c - RAID 5 and RAID 6: k = n - m data chunks and m parity chunks (m = 1: P;
 * m = 2: P and Q) in every stripe, the parity rotating over the members
 * left-symmetrically, md's default (drivers/md/raid5.c, raid5_compute_sector,
 * ALGORITHM_LEFT_SYMMETRIC): in stripe s, P is on member n - 1 - (s mod n), Q on the
 * member after it, and data chunk i on member (P + m + i) mod n, so that consecutive
 * chunks of the array go round the members.  Q's coefficient of data chunk i is 2^i
 * (parity.c).
 *
 * A request is cut into stripe operations, one per stripe it touches, which run in
 * parallel; each covers the rows [lo, hi) of the chunk that the request touches in
 * any of the stripe's data chunks.  Stripe operations that read parity or change it
 * take the stripe lock (a hash of stripes being updated, with a FIFO of waiters per
 * stripe), so overlapping updates of one stripe run one after the other while other
 * stripes go on.
 *
 * Writes, after md's handle_stripe_dirtying(): a full-stripe write reads nothing;
 * otherwise read-modify-write reads the old data being replaced and the parity
 * ((touched + m) reads) and patches the parity with the difference, reconstruct-write
 * reads the data chunks not wholly rewritten ((k - wholly rewritten) reads) and
 * computes the parity afresh; the one with fewer reads is chosen, reconstruct-write on
 * a tie.  Degraded (a member faulty) or after a read error, the write reads what it
 * can, rebuilds what is missing and computes the parity from complete data; a member
 * missing is simply not written.  Reads go straight to the data members, without the
 * lock, unless a member they need is faulty or a read fails: then the stripe is read
 * under the lock, the lost chunks are rebuilt from the others, and the chunks whose
 * read failed are rewritten (md's read-error correction; the member is faulty only if
 * that rewrite fails).  More members missing than m: -EIO, never a guess.
 *
 * Every step runs from the completion of the step's last member request, on that
 * thread (parity included): nothing waits and nothing is queued onto the context.
 * WRITE_ZEROES and DISCARD are writes of zeros (the parity must cover what a later
 * read returns).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "raid.h"
#include "parity.h"
#include <xxhash.h>

#define R56_BUCKETS 256u
#define R56_POOL 32u

struct r56_sop;

struct r56 {
	struct tc_array *a;
	struct parity *par;
	unsigned k, m;
	pthread_mutex_t lock;                   /* the stripe lock table */
	struct r56_sop *bucket[R56_BUCKETS];    /* stripe operations holding a stripe */
	/* Stripe buffers (n + 1 chunks each) kept for reuse: a fresh allocation of that
	 * size is a fresh mapping, page faults and zeroing included. */
	pthread_mutex_t pool_lock;
	unsigned npool;
	uint8_t *pool[R56_POOL];
	/* The partial-parity log (a->ppl): slots of every member's log, under ppl_lock.
	 * A slot is busy from the entry's write to the end of the update it logs, and
	 * after that, when the update was not written FUA, until a flush of the members
	 * has made it durable (ppl_unflushed); then it keeps that update's stripe
	 * (ppl_stripe) until reused, so that a later update of the stripe (a full-stripe
	 * write too) reuses it.  One flush (r56_ppl_flush) frees every slot that was
	 * unflushed when it started: md's PPL flushes once per io_unit the same way. */
	pthread_mutex_t ppl_lock;
	unsigned ppl_slots;
	uint64_t ppl_slot_size;
	uint8_t ppl_uuid[16];
	_Atomic uint64_t ppl_seq;
	uint64_t ppl_busy[TC_ARRAY_MAX_MEMBERS];
	uint64_t ppl_unflushed[TC_ARRAY_MAX_MEMBERS];   /* subset of ppl_busy */
	bool ppl_flushing;                      /* a flush of the members in flight */
	volatile bool ppl_flush_idle;           /* !ppl_flushing, for close to wait on */
	uint64_t ppl_covered[TC_ARRAY_MAX_MEMBERS];     /* what the flush in flight frees */
	atomic_uint ppl_fpending;
	struct array_child *ppl_fchild;         /* 2 * n: the flush's requests */
	uint64_t *ppl_stripe;                   /* [member * ppl_slots + slot] */
	struct r56_sop *ppl_wait_head[TC_ARRAY_MAX_MEMBERS], *ppl_wait_tail[TC_ARRAY_MAX_MEMBERS];
};

#define R56_NO_STRIPE UINT64_MAX

struct r56_req {
	struct tc_io *io;
	struct tc_array *a;
	atomic_uint refs;
	atomic_int result;
};

typedef void (*r56_step_fn)(struct r56_sop *op);
static void r56_ppl_release(struct r56_sop *op, uint64_t stripe);
static void r56_ppl_wipe_pick(struct r56_sop *op);
static void r56_ppl_put(struct r56 *r, unsigned pm, int j, uint64_t stripe, bool unflushed);

/* One stripe operation.  Slots: data 0..k-1, P = k, Q = k + 1. */
struct r56_sop {
	struct r56_req *req;
	struct tc_array *a;
	struct r56 *r;
	uint64_t stripe;
	unsigned op;                    /* TC_OP_READ or TC_OP_WRITE */
	unsigned flags;
	bool zero;                      /* a write of zeros */
	bool locked;
	uint64_t lo, hi;                /* rows of the chunk, bytes */
	uint64_t ws[TC_ARRAY_MAX_MEMBERS], we[TC_ARRAY_MAX_MEMBERS]; /* data slot rows */
	uint64_t skip[TC_ARRAY_MAX_MEMBERS];    /* the parent's byte at ws */
	uint32_t touched;               /* data slots in the request */
	unsigned member[TC_ARRAY_MAX_MEMBERS];  /* of each slot */
	uint8_t *mem, *buf[TC_ARRAY_MAX_MEMBERS], *tmp;
	uint32_t lost, bad;             /* slots faulty, slots whose read failed */
	_Atomic uint32_t failed;        /* slots whose request of this step failed */
	atomic_int err;                 /* a failure not the members' (-ENOMEM) */
	atomic_uint pending;
	r56_step_fn next;
	r56_step_fn on_lock;
	struct array_sync_win *win;     /* a sync window (rebuild.c), not a request */
	uint32_t tslots;                /* sync: the slots rebuilt */
	int route;                      /* sync: 0 auto, 1 the slot's device, 2 old member */
	uint8_t *chk;                   /* check: the stored P and Q */
	struct raid_map_wait map_wait;  /* a write waiting for its map bits */
	bool mapped;                    /* counted in the map: raid_map_end() at the end */
	int ppl_slot;                   /* the log slot held on the log's member, or -1 */
	unsigned ppl_at;                /* the slot (k: P, k + 1: Q) whose member logs */
	int ppl_wipe;                   /* a slot of Q's log holding an older entry of
	                                 * this stripe, to wipe after the update, or -1 */
	uint8_t *ppl_buf;               /* the entry: header and partial parity */
	struct r56_sop *ppl_wnext;      /* waiting for a slot */
	struct r56_sop *hnext;          /* bucket chain of holders */
	struct r56_sop *wait_head, *wait_tail, *wnext; /* waiters for this stripe */
	struct array_child child[TC_ARRAY_MAX_MEMBERS];
};

/* ------------------------------------------------------------------------------------
 * The stripe lock.
 */

/* Take @op's stripe, or queue @op behind its holder (started by r56_unlock). */
static bool r56_lock(struct r56_sop *op)
{
	struct r56 *r = op->r;
	unsigned b = (unsigned)(op->stripe % R56_BUCKETS);
	bool got = true;

	pthread_mutex_lock(&r->lock);
	for (struct r56_sop *h = r->bucket[b]; h; h = h->hnext)
		if (h->stripe == op->stripe) {
			op->wnext = NULL;
			if (h->wait_tail)
				h->wait_tail->wnext = op;
			else
				h->wait_head = op;
			h->wait_tail = op;
			got = false;
			break;
		}
	if (got) {
		op->hnext = r->bucket[b];
		r->bucket[b] = op;
		op->wait_head = op->wait_tail = NULL;
		op->locked = true;
	}
	/* A queued @op may be started (and its locked set) by another thread as soon as
	 * the table is unlocked: nothing of @op is touched after this. */
	pthread_mutex_unlock(&r->lock);
	return got;
}

static void r56_unlock(struct r56_sop *op)
{
	struct r56 *r = op->r;
	unsigned b = (unsigned)(op->stripe % R56_BUCKETS);
	struct r56_sop *w;

	pthread_mutex_lock(&r->lock);
	for (struct r56_sop **p = &r->bucket[b]; *p; p = &(*p)->hnext)
		if (*p == op) {
			*p = op->hnext;
			break;
		}
	w = op->wait_head;
	if (w) {
		w->wait_head = w->wnext;
		w->wait_tail = w->wnext ? op->wait_tail : NULL;
		w->hnext = r->bucket[b];
		r->bucket[b] = w;
		w->locked = true;
	}
	op->locked = false;
	pthread_mutex_unlock(&r->lock);
	if (w)
		w->on_lock(w);
}

/* ------------------------------------------------------------------------------------
 * Steps: a set of member requests, then the next step from the last completion.
 */

static void r56_req_put(struct r56_req *q)
{
	if (atomic_fetch_sub(&q->refs, 1) != 1)
		return;
	struct tc_io *io = q->io;
	struct tc_array *a = q->a;
	int result = atomic_load(&q->result);
	free(q);
	array_complete(a, io, result);
}

static void r56_end(struct r56_sop *op, int result)
{
	struct r56_req *q = op->req;

	if (op->win) {
		struct array_sync_win *w = op->win;
		struct tc_array *a = op->a;
		if (op->locked)
			r56_unlock(op);
		free(op->mem);
		free(op->chk);
		free(op);
		w->result = result;
		array_sync_window_done(a, w);
		return;
	}
	if (result < 0) {
		int zero = 0;
		atomic_compare_exchange_strong(&q->result, &zero, result);
	}
	if (op->locked)
		r56_unlock(op);
	if (op->mapped)
		raid_map_end(op->a, (op->stripe << op->a->chunk_shift) + op->lo, op->hi - op->lo);
	free(op->ppl_buf);
	if (op->mem) {
		struct r56 *r = op->r;
		pthread_mutex_lock(&r->pool_lock);
		if (r->npool < R56_POOL) {
			r->pool[r->npool++] = op->mem;
			op->mem = NULL;
		}
		pthread_mutex_unlock(&r->pool_lock);
		free(op->mem);
	}
	free(op);
	r56_req_put(q);
}

static void r56_step_begin(struct r56_sop *op, r56_step_fn next)
{
	op->next = next;
	atomic_store(&op->failed, 0);
	atomic_init(&op->pending, 1);
}

static void r56_step_put(struct r56_sop *op)
{
	if (atomic_fetch_sub(&op->pending, 1) == 1)
		op->next(op);
}

static void r56_child_done(struct array_child *c, int result)
{
	struct r56_sop *op = c->owner;
	unsigned slot = (unsigned)(c - op->child);

	if (result < 0) {
		if (c->io.op != TC_OP_READ)
			array_child_fail(c, "write error", -result);
		if (array_io_error(result) || c->io.op != TC_OP_READ) {
			atomic_fetch_or(&op->failed, 1u << slot);
		} else {
			int zero = 0;
			atomic_compare_exchange_strong(&op->err, &zero, result);
		}
	} else if (c->io.op == TC_OP_READ &&
		   !array_member_readable(op->a, c->member, c->io.offset - op->a->data_offset)) {
		/* The member went faulty while the read was in flight: its data is not used
		 * (from tc_array_fail_member's return on, nothing read from a faulty member
		 * is); the chunk counts as unreadable, rebuilt from the others. */
		atomic_fetch_or(&op->failed, 1u << slot);
	}
	r56_step_put(op);
}

/* Add a request of @slot's member to the step: rows [@from, @to) of its chunk, from or
 * into @buf (NULL: the parent's iovecs at @skip). */
static void r56_io(struct r56_sop *op, unsigned slot, unsigned rw, uint64_t from,
		   uint64_t to, uint8_t *buf, uint64_t skip)
{
	struct tc_array *a = op->a;

	atomic_fetch_add(&op->pending, 1);
	if (op->route)
		array_child_submit_to(a, &op->child[slot], op->member[slot], op->route, rw,
				      rw == TC_OP_WRITE ? op->flags : 0,
				      (op->stripe << a->chunk_shift) + from, to - from, buf,
				      NULL, 0, r56_child_done, op);
	else
		array_child_submit(a, &op->child[slot], op->member[slot], rw,
				   rw == TC_OP_WRITE ? op->flags : 0,
				   (op->stripe << a->chunk_shift) + from, to - from, buf,
				   op->req ? op->req->io : NULL, skip, r56_child_done, op);
}

/* Slots whose members are faulty now. */
static uint32_t r56_lost(struct r56_sop *op)
{
	uint32_t lost = 0;

	uint64_t off = op->stripe << op->a->chunk_shift;

	for (unsigned s = 0; s < op->r->k + op->r->m; s++)
		if (!array_member_readable(op->a, op->member[s], off))
			lost |= 1u << s;
	return lost;
}

static int r56_buffers(struct r56_sop *op)
{
	struct r56 *r = op->r;
	unsigned n = r->k + r->m;
	size_t stride = op->a->chunk;   /* a multiple of PARITY_ALIGN */

	if (op->mem)
		return 0;
	pthread_mutex_lock(&r->pool_lock);
	if (r->npool)
		op->mem = r->pool[--r->npool];
	pthread_mutex_unlock(&r->pool_lock);
	if (!op->mem)
		op->mem = aligned_alloc(PARITY_ALIGN, stride * (n + 1));
	if (!op->mem)
		return -ENOMEM;
	for (unsigned s = 0; s < n; s++)
		op->buf[s] = op->mem + stride * s;
	op->tmp = op->mem + stride * n;
	return 0;
}

/* A step of @rw (READ or WRITE) of the rows lo..hi of @slots, from or into their
 * buffers. */
static void r56_step_rows(struct r56_sop *op, unsigned rw, uint32_t slots, r56_step_fn next)
{
	r56_step_begin(op, next);
	for (unsigned s = 0; s < op->r->k + op->r->m; s++)
		if (slots & (1u << s))
			r56_io(op, s, rw, op->lo, op->hi, op->buf[s], 0);
	r56_step_put(op);
}

static void r56_step_read(struct r56_sop *op, uint32_t slots, r56_step_fn next)
{
	r56_step_rows(op, TC_OP_READ, slots, next);
}

/* After a write step: the chunks that had failed to read and were rewritten. */
static void r56_count_corrected(struct r56_sop *op)
{
	uint32_t failed = atomic_load(&op->failed);

	for (unsigned s = 0; s < op->r->k + op->r->m; s++)
		if ((op->bad & (1u << s)) && !(failed & (1u << s)))
			atomic_fetch_add(&op->a->m[op->member[s]].corrected, 1);
}

/* After a read step: fold the failed reads into op->bad.  Returns the error to end
 * with, 1 when a read of this step failed, or 0. */
static int r56_read_result(struct r56_sop *op)
{
	int err = atomic_load(&op->err);
	uint32_t failed = atomic_load(&op->failed);

	if (err)
		return err;
	op->bad |= failed;
	return failed ? 1 : 0;
}

/* Rebuild the slots in lost | bad from the others (all read into buffers). */
static int r56_rebuild(struct r56_sop *op)
{
	uint32_t miss = op->lost | op->bad;

	if ((unsigned)__builtin_popcount(miss) > op->r->m) {
		tc_err(op->a->dev.ctx, "array %s: stripe %" PRIu64 ": %u chunks unreadable, "
		       "more than the %u parity can rebuild", op->a->dev.name, op->stripe,
		       (unsigned)__builtin_popcount(miss), op->r->m);
		return -EIO;
	}
	return parity_recover(op->r->par, op->hi - op->lo, op->buf, miss);
}

/* ------------------------------------------------------------------------------------
 * Reads.
 */

static void r56_repaired(struct r56_sop *op)
{
	r56_count_corrected(op);
	r56_end(op, 0);
}

static void r56_locked_read_done(struct r56_sop *op)
{
	int ret = r56_read_result(op);

	if (ret >= 0)
		ret = r56_rebuild(op);
	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	struct tc_io *io = op->req->io;
	for (unsigned d = 0; d < op->r->k; d++)
		if (op->touched & (1u << d))
			tc_buf_to_iov(io->iov, io->iovcnt, op->skip[d], op->buf[d] + op->ws[d] - op->lo,
				      op->we[d] - op->ws[d]);
	/* Rewrite what failed to read, from the rebuilt data. */
	uint32_t repair = op->bad & ~r56_lost(op);
	if (!repair) {
		r56_end(op, 0);
		return;
	}
	r56_step_rows(op, TC_OP_WRITE, repair, r56_repaired);
}

/* Under the lock: read every readable chunk, rebuild, copy out, repair. */
static void r56_locked_read(struct r56_sop *op)
{
	unsigned n = op->r->k + op->r->m;

	if (r56_buffers(op) < 0) {
		r56_end(op, -ENOMEM);
		return;
	}
	op->lost = r56_lost(op);
	r56_step_read(op, ((1u << n) - 1) & ~(op->lost | op->bad), r56_locked_read_done);
}

static void r56_fast_read_done(struct r56_sop *op)
{
	int ret = r56_read_result(op);

	if (ret <= 0) {
		r56_end(op, ret);
		return;
	}
	uint32_t lost = r56_lost(op);
	for (unsigned s = 0; s < op->r->k; s++)
		if (op->bad & ~lost & (1u << s))
			tc_warn(op->a->dev.ctx, "array %s: member %u (%s): read error in stripe %"
				PRIu64 ", rebuilding from the others", op->a->dev.name,
				op->member[s], op->a->m[op->member[s]].dev->name, op->stripe);
	op->on_lock = r56_locked_read;
	if (r56_lock(op))
		r56_locked_read(op);
}

static void r56_read(struct r56_sop *op)
{
	if (op->touched & r56_lost(op)) {
		op->on_lock = r56_locked_read;
		if (r56_lock(op))
			r56_locked_read(op);
		return;
	}
	/* Straight to the data members, into the parent's buffers. */
	r56_step_begin(op, r56_fast_read_done);
	for (unsigned d = 0; d < op->r->k; d++)
		if (op->touched & (1u << d))
			r56_io(op, d, TC_OP_READ, op->ws[d], op->we[d], NULL, op->skip[d]);
	r56_step_put(op);
}

/* ------------------------------------------------------------------------------------
 * Writes.
 */

static void r56_write_plan(struct r56_sop *op);

/* The bytes [@skip, @skip + @len) of @io's data when one iovec holds them all. */
static uint8_t *r56_iov_at(const struct tc_io *io, uint64_t skip, uint64_t len)
{
	for (int i = 0; i < io->iovcnt; i++) {
		if (skip < io->iov[i].iov_len)
			return io->iov[i].iov_len - skip >= len ?
				(uint8_t *)io->iov[i].iov_base + skip : NULL;
		skip -= io->iov[i].iov_len;
	}
	return NULL;
}

/* The new data over the old in the data slot buffers.  A data chunk rewritten over
 * all the rows is not copied when the caller's buffer is aligned as the parity code
 * needs: the slot then points into it (only read from then on). */
static void r56_overlay(struct r56_sop *op, unsigned d)
{
	uint8_t *p = op->buf[d] + op->ws[d] - op->lo;
	uint64_t len = op->we[d] - op->ws[d];
	struct tc_io *io = op->req->io;

	if (!op->zero && op->ws[d] == op->lo && op->we[d] == op->hi) {
		uint8_t *src = r56_iov_at(io, op->skip[d], len);
		if (src && (uintptr_t)src % 32 == 0) {
			op->buf[d] = src;
			return;
		}
	}
	if (op->zero)
		memset(p, 0, len);
	else
		tc_iov_to_buf(p, io->iov, io->iovcnt, op->skip[d], len);
}

static void r56_finish_write(struct r56_sop *op)
{
	r56_count_corrected(op);
	r56_end(op, array_failed(op->a) ? -EIO : 0);
}

/* An empty log slot: what a wipe writes (a header that is not an entry). */
static _Alignas(4096) const uint8_t r56_no_entry[RAID_PPL_HDR];

static void r56_wiped(struct r56_sop *op)
{
	r56_ppl_put(op->r, op->member[op->r->k + 1], op->ppl_wipe, R56_NO_STRIPE, false);
	op->ppl_wipe = -1;
	r56_finish_write(op);
}

static void r56_written(struct r56_sop *op)
{
	if (op->ppl_slot >= 0)
		r56_ppl_release(op, op->stripe);
	if (op->ppl_wipe < 0) {
		r56_finish_write(op);
		return;
	}
	/* The entry this update logged on P now outranks the older one on Q's member,
	 * but only until its slot is reused: the older one goes now, so that a crash
	 * later never replays it (its partial parity predates this update). */
	struct tc_array *a = op->a;
	unsigned qm = op->member[op->r->k + 1];
	r56_step_begin(op, r56_wiped);
	if (array_member_writable(a, qm)) {
		atomic_fetch_add(&op->pending, 1);
		array_child_submit_to(a, &op->child[op->r->k + 1], qm, 3, TC_OP_WRITE,
				      TC_IO_FUA, RAID_PPL_OFFSET + op->r->ppl_slot_size *
				      (uint64_t)op->ppl_wipe - a->data_offset, RAID_PPL_HDR,
				      (void *)r56_no_entry, NULL, 0, r56_child_done, op);
	}
	r56_step_put(op);
}

/* Write the new data, the parity, and whatever failed to read (rows lo..hi). */
static void r56_write_out(struct r56_sop *op)
{
	unsigned k = op->r->k, n = k + op->r->m;
	uint32_t lost = r56_lost(op);

	r56_step_begin(op, r56_written);
	for (unsigned s = 0; s < n; s++) {
		if (!array_member_writable(op->a, op->member[s]))
			continue;
		/* A member being rebuilt gets the rows whole: rebuilt, or new data. */
		if (s >= k || ((op->bad | lost) & (1u << s)))
			r56_io(op, s, TC_OP_WRITE, op->lo, op->hi, op->buf[s], 0);
		else if (op->touched & (1u << s))
			r56_io(op, s, TC_OP_WRITE, op->ws[s], op->we[s],
			       op->buf[s] + op->ws[s] - op->lo, 0);
	}
	r56_step_put(op);
}

/* ---- the partial-parity log (ppl.c has the format and the recovery) ---- */

/* Take a slot of the log @op writes its entry to (under ppl_lock): the one that holds
 * an entry of its stripe if any, else a free one.  -1 when @op must wait: every slot
 * is busy, or an entry of its stripe (in this log or, RAID 6, the other parity
 * member's) is of an update that is not durable yet.  The new entry's partial parity
 * takes that update's data as written; were it lost in a crash, the recovered parity
 * would match neither, and a member lost later would be rebuilt wrong. */
static int r56_ppl_pick(struct r56 *r, const struct r56_sop *op)
{
	unsigned pm = op->member[op->ppl_at];
	uint64_t stripe = op->stripe;
	const uint64_t *st = r->ppl_stripe + (size_t)pm * r->ppl_slots;
	int empty = -1, any = -1;

	if (r->m == 2) {
		unsigned om = op->member[op->ppl_at == r->k ? r->k + 1 : r->k];
		const uint64_t *so = r->ppl_stripe + (size_t)om * r->ppl_slots;
		for (unsigned j = 0; j < r->ppl_slots; j++)
			if ((r->ppl_unflushed[om] & (1ull << j)) && so[j] == stripe)
				return -1;
	}
	for (unsigned j = 0; j < r->ppl_slots; j++) {
		if (r->ppl_unflushed[pm] & (1ull << j)) {
			if (st[j] == stripe)
				return -1;
			continue;
		}
		if (r->ppl_busy[pm] & (1ull << j))
			continue;
		if (st[j] == stripe)
			return (int)j;
		if (st[j] == R56_NO_STRIPE && empty < 0)
			empty = (int)j;
		if (any < 0)
			any = (int)j;
	}
	return empty >= 0 ? empty : any;
}

/* Under ppl_lock: give slots to the waiters of every member's log, first come first
 * served per log; returns those served, chained by ppl_wnext, for r56_ppl_run. */
static struct r56_sop *r56_ppl_serve(struct r56 *r)
{
	struct r56_sop *ready = NULL, **tail = &ready;

	for (unsigned pm = 0; pm < r->a->n; pm++) {
		struct r56_sop *w;
		while ((w = r->ppl_wait_head[pm])) {
			int j = r56_ppl_pick(r, w);
			if (j < 0)
				break;
			r->ppl_wait_head[pm] = w->ppl_wnext;
			if (!w->ppl_wnext)
				r->ppl_wait_tail[pm] = NULL;
			r->ppl_busy[pm] |= 1ull << j;
			r->ppl_stripe[(size_t)pm * r->ppl_slots + j] = w->stripe;
			w->ppl_slot = j;
			r56_ppl_wipe_pick(w);
			w->ppl_wnext = NULL;
			*tail = w;
			tail = &w->ppl_wnext;
		}
	}
	return ready;
}

/* Under ppl_lock: whether to flush the members now, to free the slots of updates not
 * yet durable: when someone waits (for a slot, or for its stripe's older update), or
 * when half of one member's log waits for a flush, so that writes seldom stall.  When
 * it says yes, the flush is counted as started and covers what is unflushed now. */
static bool r56_ppl_flush_due(struct r56 *r)
{
	bool unflushed = false, want = false;

	if (r->ppl_flushing)
		return false;
	/* A waiter of one log may wait for an entry in another (RAID 6): any waiter
	 * asks for a flush. */
	for (unsigned i = 0; i < r->a->n; i++) {
		unflushed |= r->ppl_unflushed[i] != 0;
		want |= r->ppl_wait_head[i] != NULL ||
			2u * (unsigned)__builtin_popcountll(r->ppl_unflushed[i]) >= r->ppl_slots;
	}
	if (!unflushed || !want)
		return false;
	memcpy(r->ppl_covered, r->ppl_unflushed, sizeof(r->ppl_covered));
	r->ppl_flushing = true;
	__atomic_store_n(&r->ppl_flush_idle, false, __ATOMIC_RELEASE);
	return true;
}

static void r56_ppl_flush(struct r56 *r);
static void r56_ppl_got(struct r56_sop *op);

static void r56_ppl_run(struct r56_sop *ready)
{
	while (ready) {
		struct r56_sop *w = ready;
		ready = w->ppl_wnext;
		r56_ppl_got(w);
	}
}

/* The flush has ended: the slots it covered are free. */
static void r56_ppl_flushed(struct r56 *r)
{
	pthread_mutex_lock(&r->ppl_lock);
	for (unsigned i = 0; i < r->a->n; i++) {
		r->ppl_unflushed[i] &= ~r->ppl_covered[i];
		r->ppl_busy[i] &= ~r->ppl_covered[i];
	}
	r->ppl_flushing = false;
	struct r56_sop *ready = r56_ppl_serve(r);
	bool again = r56_ppl_flush_due(r);
	if (!again)
		__atomic_store_n(&r->ppl_flush_idle, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->ppl_lock);
	if (!again)
		tc_ctx_wake(r->a->dev.ctx);
	else
		r56_ppl_flush(r);
	r56_ppl_run(ready);
}

static void r56_ppl_flush_done(struct array_child *c, int result)
{
	struct r56 *r = c->owner;

	if (result < 0)
		array_child_fail(c, "flush error (partial-parity log)", -result);
	if (atomic_fetch_sub(&r->ppl_fpending, 1) == 1)
		r56_ppl_flushed(r);
}

/* Flush every member (and the old member of a replace); a failed flush fails its
 * member, whose slots go free with the rest (that member's data is lost either way). */
static void r56_ppl_flush(struct r56 *r)
{
	struct tc_array *a = r->a;

	atomic_store(&r->ppl_fpending, 1);
	array_flush_members(a, r->ppl_fchild, &r->ppl_fpending, r56_ppl_flush_done, r);
	if (atomic_fetch_sub(&r->ppl_fpending, 1) == 1)
		r56_ppl_flushed(r);
}

/* Whether every member is in service and in sync: no member lost, none being rebuilt
 * or replaced. */
static bool r56_whole(const struct tc_array *a)
{
	for (unsigned i = 0; i < a->n; i++)
		if (!array_member_active(a, i) || atomic_load(&a->m[i].old))
			return false;
	return true;
}

static void r56_ppl_logged(struct r56_sop *op)
{
	/* The entry is on the P member (or that member failed, and with it the parity
	 * the entry was for): the update itself.  On a whole array not FUA: its slot
	 * stays taken until a flush of the members has made it durable
	 * (r56_ppl_release).  Otherwise FUA, so that it is durable when it completes:
	 * recovery keeps the parity of a stripe whose modified chunk is on a member
	 * missing or being rebuilt, and a completed update lost in a crash would leave
	 * that chunk rebuilt from parity that matches neither its old nor its new data
	 * (tc-stress --arrays --write-hole seed 42: a replace in progress). */
	if (!r56_whole(op->a))
		op->flags |= TC_IO_FUA;
	r56_write_out(op);
}

/* Write @op's entry into its slot, then the update. */
static void r56_ppl_write(struct r56_sop *op)
{
	struct tc_array *a = op->a;
	struct r56 *r = op->r;
	unsigned pm = op->member[op->ppl_at];
	uint64_t len = RAID_PPL_HDR + (op->hi - op->lo) * raid_get32(op->ppl_buf + 48);

	r56_step_begin(op, r56_ppl_logged);
	atomic_fetch_add(&op->pending, 1);
	/* Child offsets are shifted by data_offset: undo it (mod 2^64).  During a
	 * replace to both devices (route 3): the old member's log then stays the whole
	 * log of the slot, which recovery reads (ppl.c). */
	array_child_submit_to(a, &op->child[op->ppl_at], pm, 3, TC_OP_WRITE, TC_IO_FUA,
			      RAID_PPL_OFFSET + r->ppl_slot_size * (uint64_t)op->ppl_slot -
			      a->data_offset, len, op->ppl_buf, NULL, 0, r56_child_done, op);
	r56_step_put(op);
}

/* The slot is @op's: write. */
static void r56_ppl_got(struct r56_sop *op)
{
	r56_ppl_write(op);
}

/* Under ppl_lock, @op logging on P (RAID 6): an older entry of its stripe on Q's
 * member (logged while P's member was lost) is reserved for r56_written to wipe. */
static void r56_ppl_wipe_pick(struct r56_sop *op)
{
	struct r56 *r = op->r;

	op->ppl_wipe = -1;
	if (r->m != 2 || op->ppl_at != r->k)
		return;
	unsigned qm = op->member[r->k + 1];
	const uint64_t *st = r->ppl_stripe + (size_t)qm * r->ppl_slots;
	for (unsigned j = 0; j < r->ppl_slots; j++)
		if (st[j] == op->stripe && !(r->ppl_busy[qm] & (1ull << j))) {
			r->ppl_busy[qm] |= 1ull << j;
			op->ppl_wipe = (int)j;
			return;
		}
}

/* Log the update of @op before writing it (RAID 5/6 with the log, parity computed):
 * the partial parity is the new parity less the new data of the rows being written,
 * that is the parity of the data the update leaves alone (md's partial parity, here
 * for P and Q alike: both are linear in the data).  A full-stripe write (every chunk
 * rewritten whole) logs a header alone, with no partial parity (parity 0): recovery
 * recomputes that stripe's parity from its data, as md's PPL does for full-stripe
 * entries; without it an interrupted full-stripe write left the parity stale. */
static void r56_write_commit(struct r56_sop *op)
{
	struct r56 *r = op->r;
	unsigned k = r->k;
	size_t len = op->hi - op->lo;
	bool full = op->lo == 0 && op->hi == op->a->chunk;

	/* The entry goes to the P member; on RAID 6 with P's member lost, to Q's: Q is
	 * then the parity a lost data chunk is rebuilt from, and without an entry an
	 * interrupted update left it stale (tc-stress --arrays --write-hole seed 30: a
	 * RAID 6 that had lost two members).  With both lost, the data are all there. */
	op->ppl_at = k;
	if (op->a->ppl && !array_member_writable(op->a, op->member[k]) && r->m == 2)
		op->ppl_at = k + 1;
	unsigned pm = op->member[op->ppl_at];
	if (!op->a->ppl || !array_member_writable(op->a, pm)) {
		r56_write_out(op);
		return;
	}
	for (unsigned d = 0; d < k && full; d++)
		full = (op->touched & (1u << d)) && op->ws[d] == 0 && op->we[d] == op->a->chunk;
	/* Modified chunks on members lost now: their new data goes into the parity
	 * alone, so it stays in the partial parity too (in_pp), and recovery makes the
	 * parity give it back; a full-stripe write with one logs partial parity then,
	 * as its parity cannot be recomputed from data that is nowhere else. */
	uint32_t in_pp = op->touched & r56_lost(op) & ((1u << k) - 1);
	if (in_pp)
		full = false;
	unsigned logged = full ? 0 : r->m;      /* partial parity blocks in the entry */
	/* aligned_alloc wants a multiple of the alignment; the entry written is shorter. */
	op->ppl_buf = aligned_alloc(4096, (RAID_PPL_HDR + len * logged + 4095) & ~(size_t)4095);
	if (!op->ppl_buf) {
		r56_end(op, -ENOMEM);
		return;
	}
	uint8_t *pp[2] = { op->ppl_buf + RAID_PPL_HDR, op->ppl_buf + RAID_PPL_HDR + len };
	for (unsigned p = 0; p < logged; p++)
		memcpy(pp[p], op->buf[k + p], len);
	struct raid_ppl_entry e;
	memset(&e, 0, sizeof(e));
	for (unsigned d = 0; d < k; d++) {
		if (!(op->touched & (1u << d)))
			continue;
		if (logged && !(in_pp & (1u << d))) {
			memset(op->tmp, 0, len);
			memcpy(op->tmp + (op->ws[d] - op->lo), op->buf[d] + (op->ws[d] - op->lo),
			       op->we[d] - op->ws[d]);
			parity_update(r->par, len, d, op->tmp, pp);
		}
		e.ws[d] = (uint32_t)op->ws[d];
		e.we[d] = (uint32_t)op->we[d];
	}
	memcpy(e.uuid, r->ppl_uuid, 16);
	e.seq = atomic_fetch_add(&r->ppl_seq, 1) + 1;
	e.stripe = op->stripe;
	e.lo = (uint32_t)op->lo;
	e.hi = (uint32_t)op->hi;
	e.parity = logged;
	e.touched = op->touched;
	e.in_pp = in_pp;
	e.pp_csum = XXH64(pp[0], len * logged, 0);
	raid_ppl_encode(&e, op->ppl_buf);
	/* A slot, or a place in the member's queue of waiters. */
	pthread_mutex_lock(&r->ppl_lock);
	int j = r56_ppl_pick(r, op);
	if (j < 0) {
		op->ppl_wnext = NULL;
		if (r->ppl_wait_tail[pm])
			r->ppl_wait_tail[pm]->ppl_wnext = op;
		else
			r->ppl_wait_head[pm] = op;
		r->ppl_wait_tail[pm] = op;
		bool flush = r56_ppl_flush_due(r);
		pthread_mutex_unlock(&r->ppl_lock);
		if (flush)
			r56_ppl_flush(r);
		return;
	}
	r->ppl_busy[pm] |= 1ull << j;
	r->ppl_stripe[(size_t)pm * r->ppl_slots + j] = op->stripe;
	r56_ppl_wipe_pick(op);
	pthread_mutex_unlock(&r->ppl_lock);
	op->ppl_slot = j;
	r56_ppl_write(op);
}

/* Slot @j of member @pm's log keeps @stripe (R56_NO_STRIPE: nothing) and is free, or,
 * @unflushed, waits for the next flush of the members; waiters are served. */
static void r56_ppl_put(struct r56 *r, unsigned pm, int j, uint64_t stripe, bool unflushed)
{
	pthread_mutex_lock(&r->ppl_lock);
	r->ppl_stripe[(size_t)pm * r->ppl_slots + j] = stripe;
	if (unflushed)
		r->ppl_unflushed[pm] |= 1ull << j;
	else
		r->ppl_busy[pm] &= ~(1ull << j);
	struct r56_sop *ready = r56_ppl_serve(r);
	bool flush = r56_ppl_flush_due(r);
	pthread_mutex_unlock(&r->ppl_lock);
	if (flush)
		r56_ppl_flush(r);
	r56_ppl_run(ready);
}

/* The update of @op is written: its slot keeps the stripe, free at once when the
 * update was FUA (the client's), else once a flush has made it durable. */
static void r56_ppl_release(struct r56_sop *op, uint64_t stripe)
{
	int j = op->ppl_slot;

	op->ppl_slot = -1;
	r56_ppl_put(op->r, op->member[op->ppl_at], j, stripe, !(op->flags & TC_IO_FUA));
}

static void r56_rmw_read_done(struct r56_sop *op)
{
	int ret = r56_read_result(op);
	unsigned k = op->r->k;
	size_t len = op->hi - op->lo;

	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	if (ret > 0) {          /* a read failed: plan again without that member */
		r56_write_plan(op);
		return;
	}
	for (unsigned d = 0; d < k; d++) {
		if (!(op->touched & (1u << d)))
			continue;
		memcpy(op->tmp, op->buf[d], len);
		r56_overlay(op, d);     /* may point buf[d] at the caller's data */
		uint64_t *t = (uint64_t *)(void *)op->tmp;
		const uint64_t *b = (const uint64_t *)(const void *)op->buf[d];
		for (size_t i = 0; i < len / 8; i++)
			t[i] ^= b[i];
		parity_update(op->r->par, len, d, op->tmp, &op->buf[k]);
	}
	r56_write_commit(op);
}

/* Complete data in the buffers: the new data over it, the parity afresh, write. */
static void r56_encode_write(struct r56_sop *op)
{
	for (unsigned d = 0; d < op->r->k; d++)
		if (op->touched & (1u << d))
			r56_overlay(op, d);
	parity_encode(op->r->par, op->hi - op->lo, op->buf);
	r56_write_commit(op);
}

static void r56_rcw_read_done(struct r56_sop *op)
{
	int ret = r56_read_result(op);

	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	if (ret > 0) {          /* a read failed: plan again without that member */
		r56_write_plan(op);
		return;
	}
	r56_encode_write(op);
}

static void r56_full_read_done(struct r56_sop *op)
{
	int ret = r56_read_result(op);

	if (ret >= 0)
		ret = r56_rebuild(op);
	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	r56_encode_write(op);
}

/* md's handle_stripe_dirtying: count the reads of each method, take the cheaper. */
static void r56_write_plan(struct r56_sop *op)
{
	unsigned k = op->r->k, n = k + op->r->m;
	uint32_t all = (1u << n) - 1, parity = all & ~((1u << k) - 1);
	uint32_t rcw = 0, rmw = op->touched | parity;

	if (r56_buffers(op) < 0) {
		r56_end(op, -ENOMEM);
		return;
	}
	op->lost = r56_lost(op);
	uint32_t miss = op->lost | op->bad;
	for (unsigned d = 0; d < k; d++) {
		bool whole = (op->touched & (1u << d)) && op->ws[d] <= op->lo &&
			     op->we[d] >= op->hi;
		if (!whole)
			rcw |= 1u << d;
	}
	_Atomic uint64_t *plan = op->a->wplan;
	if (!miss && __builtin_popcount(rmw) < __builtin_popcount(rcw)) {
		atomic_fetch_add_explicit(&plan[WPLAN_RMW], 1, memory_order_relaxed);
		r56_step_read(op, rmw, r56_rmw_read_done);
	} else if (!(rcw & miss)) {
		atomic_fetch_add_explicit(&plan[rcw ? WPLAN_RCW : WPLAN_FULL], 1,
					  memory_order_relaxed);
		r56_step_read(op, rcw, r56_rcw_read_done);
	} else {
		atomic_fetch_add_explicit(&plan[WPLAN_DEGRADED], 1, memory_order_relaxed);
		r56_step_read(op, all & ~miss, r56_full_read_done);
	}
}

static void r56_write_locked(void *arg)
{
	struct r56_sop *op = arg;

	op->on_lock = r56_write_plan;
	if (r56_lock(op))
		r56_write_plan(op);
}

/* A write: its regions' bits in the write-intent map first (when the array keeps
 * one), then the stripe lock. */
static void r56_write(struct r56_sop *op)
{
	if (op->a->map) {
		op->mapped = true;
		op->map_wait.fn = r56_write_locked;
		op->map_wait.arg = op;
		if (!raid_map_start(op->a, (op->stripe << op->a->chunk_shift) + op->lo,
				    op->hi - op->lo, &op->map_wait))
			return;
	}
	r56_write_locked(op);
}

/* ------------------------------------------------------------------------------------
 * Submit: one stripe operation per stripe.
 */

static void r56_slots(struct tc_array *a, unsigned m, uint64_t stripe, unsigned *member)
{
	unsigned n = a->n, k = n - m;
	unsigned pd = n - 1 - (unsigned)(stripe % n);

	member[k] = pd;
	if (m == 2)
		member[k + 1] = (pd + 1) % n;
	for (unsigned i = 0; i < k; i++)
		member[i] = (pd + m + i) % n;
}

static void r56_submit(struct tc_array *a, struct tc_io *io)
{
	struct r56 *r = a->level_priv;
	uint64_t stripe_bytes = a->chunk * r->k;
	struct r56_req *q = malloc(sizeof(*q));

	if (!q) {
		array_complete(a, io, -ENOMEM);
		return;
	}
	q->io = io;
	q->a = a;
	atomic_init(&q->refs, 1);
	atomic_init(&q->result, 0);
	for (uint64_t done = 0; done < io->length;) {
		uint64_t off = io->offset + done, in = off % stripe_bytes;
		uint64_t len = stripe_bytes - in < io->length - done ? stripe_bytes - in
			: io->length - done;
		struct r56_sop *op = calloc(1, sizeof(*op));
		if (!op) {
			int zero = 0;
			atomic_compare_exchange_strong(&q->result, &zero, -ENOMEM);
			break;
		}
		op->req = q;
		op->a = a;
		op->r = r;
		op->stripe = off / stripe_bytes;
		op->op = io->op == TC_OP_READ ? TC_OP_READ : TC_OP_WRITE;
		op->zero = io->op == TC_OP_WRITE_ZEROES || io->op == TC_OP_DISCARD;
		op->flags = io->flags;
		op->lo = a->chunk;
		op->ppl_slot = op->ppl_wipe = -1;
		r56_slots(a, r->m, op->stripe, op->member);
		for (uint64_t at = 0; at < len;) {
			unsigned d = (unsigned)((in + at) >> a->chunk_shift);
			uint64_t c_in = (in + at) & (a->chunk - 1);
			uint64_t c_len = a->chunk - c_in < len - at ? a->chunk - c_in : len - at;
			op->touched |= 1u << d;
			op->ws[d] = c_in;
			op->we[d] = c_in + c_len;
			op->skip[d] = done + at;
			if (c_in < op->lo)
				op->lo = c_in;
			if (c_in + c_len > op->hi)
				op->hi = c_in + c_len;
			at += c_len;
		}
		atomic_init(&op->err, 0);
		atomic_fetch_add(&q->refs, 1);
		if (op->op == TC_OP_READ)
			r56_read(op);
		else
			r56_write(op);
		done += len;
	}
	r56_req_put(q);
}

/* ------------------------------------------------------------------------------------
 * Sync windows (rebuild.c drives them): one stripe each, under the stripe lock, so
 * that no foreground update of the stripe runs between the reads and the writes.
 *
 * Rebuild: the target slots (members rebuilding in this pass) are rebuilt from every
 * other readable chunk (RAID 6: two targets at once, or one target and a survivor
 * whose read failed, from the second parity) and written; survivors whose read failed
 * are rewritten too (md's read-error correction).  A replace's target is first copied
 * from the old member; only if that read fails (or the old member is gone) is it
 * rebuilt from the others.  Check: every chunk is read, the parity recomputed from the
 * data and compared with the stored P (and Q); repair rewrites the parity that
 * differs.  A chunk that fails to read is rebuilt and rewritten, as a read would.
 */

static void r56_sync_written(struct r56_sop *op)
{
	uint32_t failed = atomic_load(&op->failed);

	r56_count_corrected(op);
	if (op->win->kind == SYNC_REBUILD && !(failed & op->tslots))
		array_sync_advance(op->a, op->win);
	r56_end(op, failed & op->tslots ? -EIO : 0);
}

static void r56_sync_rebuilt(struct r56_sop *op)
{
	int ret = r56_read_result(op);

	if (ret >= 0)
		ret = r56_rebuild(op);
	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	op->route = 1;
	/* Not to a member that went faulty meanwhile (its read counted as failed). */
	r56_step_rows(op, TC_OP_WRITE, op->tslots | (op->bad & ~(op->lost | r56_lost(op))),
		      r56_sync_written);
}

/* Rebuild the targets from the others: every readable chunk but theirs. */
static void r56_sync_reconstruct(struct r56_sop *op)
{
	unsigned n = op->r->k + op->r->m;

	op->route = 0;
	op->lost = r56_lost(op) | op->tslots;
	op->bad = 0;
	r56_step_read(op, ((1u << n) - 1) & ~(op->lost | op->bad), r56_sync_rebuilt);
}

static void r56_sync_old_read(struct r56_sop *op)
{
	uint32_t failed = atomic_load(&op->failed);

	if (atomic_load(&op->err) || failed) {
		atomic_store(&op->err, 0);
		r56_sync_reconstruct(op);
		return;
	}
	op->route = 1;
	r56_step_rows(op, TC_OP_WRITE, op->tslots, r56_sync_written);
}

static void r56_check_done(struct r56_sop *op)
{
	r56_count_corrected(op);
	r56_end(op, 0);
}

static void r56_check_read(struct r56_sop *op)
{
	struct r56 *r = op->r;
	unsigned k = r->k;
	size_t len = op->hi - op->lo;
	int ret = r56_read_result(op);

	if (ret >= 0)
		ret = r56_rebuild(op);  /* chunks that failed to read */
	if (ret < 0) {
		r56_end(op, ret);
		return;
	}
	op->chk = malloc(len * r->m);
	if (!op->chk) {
		r56_end(op, -ENOMEM);
		return;
	}
	for (unsigned p = 0; p < r->m; p++)
		memcpy(op->chk + len * p, op->buf[k + p], len);
	parity_encode(r->par, len, op->buf);
	uint32_t differ = 0;
	for (unsigned p = 0; p < r->m; p++)
		if (memcmp(op->chk + len * p, op->buf[k + p], len))
			differ |= 1u << (k + p);
	/* Parity rebuilt for a chunk that failed to read is right by construction. */
	differ &= ~op->bad;
	if (differ)
		op->win->mismatches++;
	uint32_t write = op->bad & ~(op->lost | r56_lost(op));
	if (op->win->kind == SYNC_REPAIR)
		write |= differ;
	if (!write) {
		r56_end(op, 0);
		return;
	}
	op->flags |= TC_IO_FUA;         /* as a mirror's rewrites (rebuild.c) */
	r56_step_rows(op, TC_OP_WRITE, write, r56_check_done);
}

static void r56_sync_locked(struct r56_sop *op)
{
	unsigned n = op->r->k + op->r->m;
	struct tc_array *a = op->a;

	if (r56_buffers(op) < 0) {
		r56_end(op, -ENOMEM);
		return;
	}
	if (op->win->kind != SYNC_REBUILD) {
		op->lost = r56_lost(op);
		if (op->lost) {
			r56_end(op, -EBUSY);    /* degraded since the check began */
			return;
		}
		r56_step_read(op, (1u << n) - 1, r56_check_read);
		return;
	}
	for (unsigned s = 0; s < n; s++)
		if (op->win->targets & (1u << op->member[s]))
			op->tslots |= 1u << s;
	/* A region never written holds zeros on every member: the targets get zeros
	 * and nothing is read.  Asked under the stripe lock: a first write to the
	 * region sets its bit before it takes the lock. */
	if (!raid_map_written(a, op->stripe << a->chunk_shift)) {
		op->route = 1;
		r56_step_rows(op, TC_OP_WRITE_ZEROES, op->tslots, r56_sync_written);
		return;
	}
	/* A replace (one target, the old member still reading): copy. */
	if (__builtin_popcount(op->tslots) == 1) {
		unsigned s = (unsigned)__builtin_ctz(op->tslots);
		unsigned m = op->member[s];
		if (atomic_load(&a->m[m].old) && !atomic_load(&a->m[m].old_failed)) {
			op->route = 2;
			r56_step_read(op, op->tslots, r56_sync_old_read);
			return;
		}
	}
	r56_sync_reconstruct(op);
}

static void r56_sync(struct tc_array *a, struct array_sync_win *w)
{
	struct r56 *r = a->level_priv;
	struct r56_sop *op = calloc(1, sizeof(*op));

	if (!op) {
		w->result = -ENOMEM;
		array_sync_window_done(a, w);
		return;
	}
	op->a = a;
	op->r = r;
	op->win = w;
	op->stripe = w->row;
	op->op = TC_OP_WRITE;
	op->lo = 0;
	op->hi = a->chunk;
	op->ppl_slot = op->ppl_wipe = -1;
	w->bytes = a->chunk;
	atomic_init(&op->err, 0);
	r56_slots(a, r->m, op->stripe, op->member);
	op->on_lock = r56_sync_locked;
	if (r56_lock(op))
		r56_sync_locked(op);
}

static uint64_t r56_check_windows(const struct tc_array *a)
{
	return a->member_size >> a->chunk_shift;
}

/* ------------------------------------------------------------------------------------
 * The level tables.
 */

static int r56_init(struct tc_array *a, unsigned m)
{
	struct r56 *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->a = a;
	r->k = a->n - m;
	r->m = m;
	ret = parity_new(r->k, m, &r->par);
	if (ret < 0) {
		free(r);
		return ret;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->pool_lock, NULL);
	pthread_mutex_init(&r->ppl_lock, NULL);
	a->level_priv = r;
	return 0;
}

int array_ppl_enable(struct tc_array *a, const uint8_t *uuid)
{
	struct r56 *r = a->level_priv;

	if (a->level->parity == 0 || !r)
		return -EINVAL;
	r->ppl_slots = raid_ppl_slots((uint32_t)a->chunk, r->m);
	r->ppl_slot_size = raid_ppl_slot_size((uint32_t)a->chunk, r->m);
	if (!r->ppl_slots) {
		tc_err(a->dev.ctx, "array %s: chunk %" PRIu64 " too large for the partial-parity "
		       "log (%u MiB holds not one entry of %u parity chunks)", a->dev.name,
		       a->chunk, RAID_PPL_AREA >> 20, r->m);
		return -EINVAL;
	}
	r->ppl_stripe = malloc(sizeof(*r->ppl_stripe) * a->n * r->ppl_slots);
	r->ppl_fchild = calloc(2 * a->n, sizeof(*r->ppl_fchild));
	if (!r->ppl_stripe || !r->ppl_fchild) {
		free(r->ppl_stripe);
		free(r->ppl_fchild);
		r->ppl_stripe = NULL;
		r->ppl_fchild = NULL;
		return -ENOMEM;
	}
	__atomic_store_n(&r->ppl_flush_idle, true, __ATOMIC_RELEASE);
	for (size_t i = 0; i < (size_t)a->n * r->ppl_slots; i++)
		r->ppl_stripe[i] = R56_NO_STRIPE;
	memcpy(r->ppl_uuid, uuid, 16);
	atomic_init(&r->ppl_seq, 0);
	a->ppl = true;
	return 0;
}

static int raid5_init(struct tc_array *a)
{
	return r56_init(a, 1);
}

static int raid6_init(struct tc_array *a)
{
	return r56_init(a, 2);
}

static void r56_fini(struct tc_array *a)
{
	struct r56 *r = a->level_priv;

	if (!r)
		return;
	/* The last update's release may have started a flush of the members. */
	if (r->ppl_fchild)
		(void)tc_ctx_wait_until(a->dev.ctx, &r->ppl_flush_idle);
	parity_free(r->par);
	free(r->ppl_stripe);
	free(r->ppl_fchild);
	pthread_mutex_destroy(&r->ppl_lock);
	while (r->npool)
		free(r->pool[--r->npool]);
	pthread_mutex_destroy(&r->pool_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
	a->level_priv = NULL;
}

static unsigned raid5_data_members(const struct tc_array *a)
{
	return a->n - 1;
}

static unsigned raid6_data_members(const struct tc_array *a)
{
	return a->n - 2;
}

static int raid5_redundancy(const struct tc_array *a, uint32_t faulty)
{
	return 1 - __builtin_popcount(faulty);
}

static int raid6_redundancy(const struct tc_array *a, uint32_t faulty)
{
	return 2 - __builtin_popcount(faulty);
}

const struct tc_raid_level raid5_level = {
	.name = "raid5",
	.id = TC_RAID5,
	.min_members = 3,
	.parity = 1,
	.data_members = raid5_data_members,
	.init = raid5_init,
	.fini = r56_fini,
	.submit = r56_submit,
	.redundancy = raid5_redundancy,
	.sync = r56_sync,
	.check_windows = r56_check_windows,
};

const struct tc_raid_level raid6_level = {
	.name = "raid6",
	.id = TC_RAID6,
	.min_members = 4,
	.parity = 2,
	.data_members = raid6_data_members,
	.init = raid6_init,
	.fini = r56_fini,
	.submit = r56_submit,
	.redundancy = raid6_redundancy,
	.sync = r56_sync,
	.check_windows = r56_check_windows,
};
