/* SPDX-License-Identifier: MIT */
/*
 * dev.c - what every device backend shares.
 *
 * tc_dev_submit() is the single door into a backend: it refuses malformed requests
 * (unknown op, misaligned or out-of-range, iovecs not adding up) so backends only ever
 * see requests they can execute, counts them, and hands them on.  tc_dev_complete() is
 * the single door out: it counts bytes and errors and calls the submitter back.
 *
 * A request's io->internal[] belongs to the device layer while it is in flight.  The
 * layout used by work-item completions here and in the backends:
 *   internal[0..1]  struct tc_work queued on the context
 *   internal[2]     the result to complete with (tc_dev_complete_later)
 *   internal[3]     the struct tc_dev * the request was submitted to
 * The file backend's io_uring path, which needs no work item, uses internal[] its own
 * way (see file.c).
 *
 * The synchronous helpers (tc_dev_pread, ...) submit and wait with a struct tc_waiter
 * (ctx.h), which blocks in threaded mode and polls in deterministic mode.
 */
#include <assert.h>
#include <errno.h>
#include <sys/file.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"

static_assert(sizeof(struct tc_work) <= 2 * sizeof(uint64_t),
	      "struct tc_work must fit in tc_io.internal[0..1]");
static_assert(alignof(struct tc_work) <= alignof(uint64_t),
	      "struct tc_work must be placeable in tc_io.internal[]");
static_assert(sizeof(((struct tc_io *)0)->internal) == 32, "tc_io.internal is 32 bytes");

/* One health watcher of a device (tc_dev_watch). */
struct tc_dev_watcher {
	struct tc_dev_watcher *next;
	tc_dev_event_fn fn;
	void *opaque;
};

int tc_dev_init(struct tc_dev *dev, const struct tc_dev_ops *ops, tc_ctx *ctx,
		const char *name, uint64_t size, uint32_t lbs)
{
	dev->ops = ops;
	dev->ctx = ctx;
	dev->size = size;
	dev->lbs = lbs;
	dev->direct = false;
	dev->name = strdup(name);
	if (!dev->name)
		return -ENOMEM;
	pthread_mutex_init(&dev->watch_lock, NULL);
	pthread_mutex_init(&dev->notify_lock, NULL);
	dev->watchers = NULL;
	dev->limits = (struct tc_dev_limits){ .io_min = lbs };
	atomic_init(&dev->n_reads, 0);
	atomic_init(&dev->n_writes, 0);
	atomic_init(&dev->n_flushes, 0);
	atomic_init(&dev->n_discards, 0);
	atomic_init(&dev->n_write_zeroes, 0);
	atomic_init(&dev->n_bytes_read, 0);
	atomic_init(&dev->n_bytes_written, 0);
	atomic_init(&dev->n_errors, 0);
	pthread_mutex_init(&dev->q_lock, NULL);
	dev->qd_limit = 0;
	dev->q_inflight = dev->q_passed = 0;
	dev->q_seq = 0;
	dev->q_last_high = 0;
	dev->q_high_seen = false;
	memset(dev->q_head, 0, sizeof(dev->q_head));
	memset(dev->q_tail, 0, sizeof(dev->q_tail));
	memset(&dev->q_st, 0, sizeof(dev->q_st));
	return 0;
}

void tc_dev_fini(struct tc_dev *dev)
{
	struct tc_dev_watcher *w = dev->watchers;
	while (w) {
		struct tc_dev_watcher *next = w->next;
		free(w);
		w = next;
	}
	dev->watchers = NULL;
	pthread_mutex_destroy(&dev->q_lock);
	pthread_mutex_destroy(&dev->notify_lock);
	pthread_mutex_destroy(&dev->watch_lock);
	free(dev->name);
	dev->name = NULL;
}

/* ---- limits and health ------------------------------------------------------------ */

void tc_dev_set_limits(struct tc_dev *dev, const struct tc_dev_limits *l)
{
	pthread_mutex_lock(&dev->watch_lock);
	dev->limits = *l;
	if (dev->limits.io_min < dev->lbs)
		dev->limits.io_min = dev->lbs;
	if (dev->limits.io_opt % dev->limits.io_min)
		dev->limits.io_opt = 0;
	pthread_mutex_unlock(&dev->watch_lock);
}

void tc_dev_limits(tc_dev *dev, struct tc_dev_limits *out)
{
	pthread_mutex_lock(&dev->watch_lock);
	*out = dev->limits;
	pthread_mutex_unlock(&dev->watch_lock);
}

uint64_t tc_dev_health_gen(tc_dev *dev)
{
	return dev->ops->health_gen ? dev->ops->health_gen(dev) : 0;
}

int tc_dev_range_redundancy(tc_dev *dev, uint64_t off, uint64_t len)
{
	if (dev->ops->range_redundancy)
		return dev->ops->range_redundancy(dev, off, len);
	struct tc_dev_limits l;
	tc_dev_limits(dev, &l);
	return l.redundancy;
}

int tc_dev_watch(tc_dev *dev, tc_dev_event_fn fn, void *opaque)
{
	int r = 0;
	pthread_mutex_lock(&dev->watch_lock);
	for (struct tc_dev_watcher *w = dev->watchers; w; w = w->next)
		if (w->fn == fn && w->opaque == opaque)
			r = -EEXIST;
	if (!r) {
		struct tc_dev_watcher *w = malloc(sizeof(*w));
		if (w) {
			*w = (struct tc_dev_watcher){ dev->watchers, fn, opaque };
			dev->watchers = w;
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&dev->watch_lock);
	return r;
}

int tc_dev_unwatch(tc_dev *dev, tc_dev_event_fn fn, void *opaque)
{
	int r = -ENOENT;
	/* notify_lock first: once we return, no call of the removed watcher is running. */
	pthread_mutex_lock(&dev->notify_lock);
	pthread_mutex_lock(&dev->watch_lock);
	for (struct tc_dev_watcher **p = &dev->watchers; *p; p = &(*p)->next)
		if ((*p)->fn == fn && (*p)->opaque == opaque) {
			struct tc_dev_watcher *w = *p;
			*p = w->next;
			free(w);
			r = 0;
			break;
		}
	pthread_mutex_unlock(&dev->watch_lock);
	pthread_mutex_unlock(&dev->notify_lock);
	return r;
}

/*
 * Events are delivered one at a time under notify_lock, in the order reported; the
 * watchers run without watch_lock, so they may read the limits (tc_dev_limits) or add
 * a watch, but must not remove one (tc_dev_unwatch would wait for itself).
 */
void tc_dev_event(struct tc_dev *dev, enum tc_dev_event ev, uint8_t redundancy)
{
	pthread_mutex_lock(&dev->notify_lock);
	pthread_mutex_lock(&dev->watch_lock);
	dev->limits.redundancy = redundancy;
	struct tc_dev_watcher *w = dev->watchers;
	pthread_mutex_unlock(&dev->watch_lock);
	tc_info(dev->ctx, "device %s: %s (redundancy %u)", dev->name, tc_dev_event_name(ev),
		redundancy);
	/* New watches are pushed at the head, so the list from @w on stays valid: only
	 * tc_dev_unwatch frees, and it waits for notify_lock. */
	for (; w; w = w->next)
		w->fn(w->opaque, dev, ev);
	pthread_mutex_unlock(&dev->notify_lock);
}

const char *tc_dev_event_name(unsigned ev)
{
	switch (ev) {
	case TC_DEV_DEGRADED: return "degraded";
	case TC_DEV_REDUNDANT: return "redundant";
	case TC_DEV_FAILED: return "failed";
	}
	return "unknown";
}

void tc_dev_info(tc_dev *dev, struct tc_dev_info *info)
{
	info->size = dev->size;
	info->logical_block_size = dev->lbs;
	info->direct = dev->direct;
	info->backend = dev->ops->name;
	info->name = dev->name;
}

void tc_dev_stats(tc_dev *dev, struct tc_dev_stats *st)
{
	st->reads = atomic_load(&dev->n_reads);
	st->writes = atomic_load(&dev->n_writes);
	st->flushes = atomic_load(&dev->n_flushes);
	st->discards = atomic_load(&dev->n_discards);
	st->write_zeroes = atomic_load(&dev->n_write_zeroes);
	st->bytes_read = atomic_load(&dev->n_bytes_read);
	st->bytes_written = atomic_load(&dev->n_bytes_written);
	st->errors = atomic_load(&dev->n_errors);
}

/* ------------------------------------------------------------------------------------
 * Completion.
 */

static void dev_release(struct tc_dev *dev, const struct tc_io *io);

/* Count and call done: what every completion does, dispatched or refused. */
static void dev_finish(struct tc_dev *dev, struct tc_io *io, int result)
{
	/* Read everything needed before done(): it may free or reuse @io. */
	tc_io_done_fn done = io->done;

	if (result < 0)
		atomic_fetch_add(&dev->n_errors, 1);
	else if (io->op == TC_OP_READ)
		atomic_fetch_add(&dev->n_bytes_read, io->length);
	else if (io->op == TC_OP_WRITE)
		atomic_fetch_add(&dev->n_bytes_written, io->length);
	done(io, result);
}

void tc_dev_complete(struct tc_dev *dev, struct tc_io *io, int result)
{
	if (dev->qd_limit)
		dev_release(dev, io);   /* before done(): @io may be gone after it */
	dev_finish(dev, io, result);
}

static struct tc_io *io_of_work(struct tc_work *w)
{
	return (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
}

static void dev_complete_work(struct tc_work *w)
{
	struct tc_io *io = io_of_work(w);
	struct tc_dev *dev = (struct tc_dev *)(uintptr_t)io->internal[3];

	tc_dev_complete(dev, io, (int)(int64_t)io->internal[2]);
}

/* A request refused in tc_dev_submit() never reached the backend: it holds no
 * dispatch slot, so it completes without releasing one. */
static void dev_refuse_work(struct tc_work *w)
{
	struct tc_io *io = io_of_work(w);
	struct tc_dev *dev = (struct tc_dev *)(uintptr_t)io->internal[3];

	dev_finish(dev, io, (int)(int64_t)io->internal[2]);
}

static void dev_refuse(struct tc_dev *dev, struct tc_io *io, int result)
{
	struct tc_work *w = (struct tc_work *)(void *)io->internal;

	io->internal[2] = (uint64_t)(int64_t)result;
	io->internal[3] = (uint64_t)(uintptr_t)dev;
	w->fn = dev_refuse_work;
	tc_ctx_defer(dev->ctx, w);
}

void tc_dev_complete_later(struct tc_dev *dev, struct tc_io *io, int result)
{
	struct tc_work *w = (struct tc_work *)(void *)io->internal;

	io->internal[2] = (uint64_t)(int64_t)result;
	io->internal[3] = (uint64_t)(uintptr_t)dev;
	w->fn = dev_complete_work;
	tc_ctx_defer(dev->ctx, w);
}

/* ------------------------------------------------------------------------------------
 * Dispatch: the dispatch limit and the priority queues.
 *
 * A backend with a queue of its own (the emulated SSD's slots and link, the emulated
 * disk's NCQ) serves what it holds in its own order, blind to who is waiting.  So a
 * backend that sets a dispatch limit at open (tc_dev_set_dispatch_limit: its queue
 * depth) never holds more than that: a request beyond it waits here, in the FIFO of
 * its class (enum tc_prio), and each completion hands the backend the next one:
 *
 *   tc_dev_submit --> [ in flight < depth for its class ? ] --yes--> backend
 *                            | no
 *                            v
 *        HIGH  FIFO  ->-+
 *        NORMAL FIFO ->-+--> dev_pick() at each completion --> backend
 *        BULK  FIFO  ->-+
 *
 * dev_pick() takes the head of the highest class that has one, with a starvation
 * bound after Linux's mq-deadline (block/mq-deadline.c: reads are preferred, but
 * after writes_starved batches that passed a waiting write, a write goes): after
 * TC_DEV_STARVE_LIMIT dispatches in a row that went ahead of a waiting request of a
 * lower class, the oldest waiting request of the lower classes goes.  A request at the
 * head of its FIFO therefore waits at most (TC_DEV_STARVE_LIMIT + 1) dispatches times
 * the number of older heads below the top class.
 *
 * Anticipation (after BFQ's idling for a latency-sensitive queue, Valente & Checconi,
 * IEEE Trans. Computers 59(9), 2010, and the anticipatory scheduler of Iyer &
 * Druschel, SOSP 2001): a QD1 latency-critical client has nothing queued between one
 * request and the next, and a depth filled with bulk in that instant makes its next
 * request wait behind all of it.  So while HIGH requests are active on the device
 * (one queued, in flight, or completed less than TC_DEV_HIGH_WINDOW_NS ago), the
 * lower classes together may use only TC_DEV_LOW_DEPTH_HIGH of the depth; HIGH may
 * use all of it.  Without HIGH traffic the whole depth is theirs.
 *
 * While a request waits here its internal[] is the device layer's:
 *   [0] next in its FIFO   [1] arrival number   [2] arrival time (ns)
 * The backend gets it with internal[] to use as it likes.
 */

static const uint8_t prio_order[TC_PRIO_COUNT] = { TC_PRIO_HIGH, TC_PRIO_NORMAL,
						    TC_PRIO_BULK };

void tc_dev_set_dispatch_limit(struct tc_dev *dev, uint32_t depth)
{
	dev->qd_limit = depth;
	dev->q_st.limit = depth;
}

/* Whether HIGH traffic is active at @now; under q_lock. */
static bool dev_high_active(const struct tc_dev *dev, uint64_t now)
{
	if (dev->q_head[TC_PRIO_HIGH] || dev->q_inflight_high)
		return true;
	return dev->q_high_seen && now - dev->q_last_high < TC_DEV_HIGH_WINDOW_NS;
}

/* The in-flight requests of @prio's class may rise by one at @now; under q_lock. */
static bool dev_room(const struct tc_dev *dev, uint8_t prio, uint64_t now)
{
	if (dev->q_inflight >= dev->qd_limit)
		return false;
	if (prio == TC_PRIO_HIGH)
		return true;
	uint32_t low = dev->q_inflight - dev->q_inflight_high;
	uint32_t cap = dev->qd_limit < TC_DEV_LOW_DEPTH_HIGH ? dev->qd_limit :
		       TC_DEV_LOW_DEPTH_HIGH;
	return low < cap || !dev_high_active(dev, now);
}

static void dev_count_dispatch(struct tc_dev *dev, const struct tc_io *io, uint64_t now)
{
	dev->q_inflight++;
	if (io->prio == TC_PRIO_HIGH) {
		dev->q_inflight_high++;
		dev->q_last_high = now;
		dev->q_high_seen = true;
	}
}

/* Admit @io to the backend now (true), or hold it in its FIFO (false). */
static bool dev_admit(struct tc_dev *dev, struct tc_io *io)
{
	uint64_t now = tc_ctx_now(dev->ctx);
	uint8_t p = io->prio;
	bool go;

	pthread_mutex_lock(&dev->q_lock);
	/* Nothing overtakes a waiting request of its own class or a higher one. */
	go = dev_room(dev, p, now);
	int i = 0;
	for (; prio_order[i] != p; i++)
		if (dev->q_head[prio_order[i]])
			go = false;
	if (dev->q_head[p])
		go = false;
	bool lower_waits = false;
	for (i++; i < TC_PRIO_COUNT; i++)
		if (dev->q_head[prio_order[i]])
			lower_waits = true;
	/* Going ahead of a waiting lower class counts toward the bound; at the bound the
	 * newcomer waits, and the next completion takes the starved request. */
	if (go && lower_waits) {
		if (dev->q_passed >= TC_DEV_STARVE_LIMIT)
			go = false;
		else
			dev->q_passed++;
	}
	if (go) {
		dev_count_dispatch(dev, io, now);
	} else {
		io->internal[0] = 0;
		io->internal[1] = dev->q_seq++;
		io->internal[2] = now;
		if (dev->q_tail[p])
			dev->q_tail[p]->internal[0] = (uint64_t)(uintptr_t)io;
		else
			dev->q_head[p] = io;
		dev->q_tail[p] = io;
		dev->q_st.held[p]++;
		dev->q_st.queued[p]++;
	}
	pthread_mutex_unlock(&dev->q_lock);
	return go;
}

/* Unlink the head of @p's FIFO; under q_lock. */
static struct tc_io *dev_unlink(struct tc_dev *dev, uint8_t p, uint64_t now)
{
	struct tc_io *io = dev->q_head[p];

	dev->q_head[p] = (struct tc_io *)(uintptr_t)io->internal[0];
	if (!dev->q_head[p])
		dev->q_tail[p] = NULL;
	dev->q_st.held[p]--;
	uint64_t w = now - io->internal[2];
	dev->q_st.wait_ns[p] += w;
	if (w > dev->q_st.max_wait_ns[p])
		dev->q_st.max_wait_ns[p] = w;
	return io;
}

/*
 * The next held request to dispatch at @now, unlinked, or NULL when none may go (none
 * held, or no room for any class that has one); under q_lock.
 */
static struct tc_io *dev_pick(struct tc_dev *dev, uint64_t now)
{
	int top = -1;

	for (int i = 0; i < TC_PRIO_COUNT; i++)
		if (dev->q_head[prio_order[i]]) {
			top = i;
			break;
		}
	if (top < 0)
		return NULL;
	/* The oldest head below the top class: the one the bound protects. */
	int old = -1;
	for (int i = top + 1; i < TC_PRIO_COUNT; i++) {
		struct tc_io *h = dev->q_head[prio_order[i]];
		if (h && (old < 0 || h->internal[1] < dev->q_head[prio_order[old]]->internal[1]))
			old = i;
	}
	if (old >= 0 && dev->q_passed >= TC_DEV_STARVE_LIMIT &&
	    dev_room(dev, prio_order[old], now)) {
		dev->q_passed = 0;
		dev->q_st.starved++;
		return dev_unlink(dev, prio_order[old], now);
	}
	if (dev_room(dev, prio_order[top], now)) {
		dev->q_passed = old >= 0 ? dev->q_passed + 1 : 0;
		return dev_unlink(dev, prio_order[top], now);
	}
	/* The top class has no room (lower classes at their depth while HIGH is active):
	 * nothing below it goes either, except by the bound above. */
	return NULL;
}

/* @io left the backend: free its slot and dispatch what may go now.  The dispatches
 * run outside q_lock (a backend may complete on this thread later, never inside its
 * submit). */
static void dev_release(struct tc_dev *dev, const struct tc_io *io)
{
	uint64_t now = tc_ctx_now(dev->ctx);
	struct tc_io *go[8];
	unsigned n;

	pthread_mutex_lock(&dev->q_lock);
	dev->q_inflight--;
	if (io->prio == TC_PRIO_HIGH) {
		dev->q_inflight_high--;
		dev->q_last_high = now;
	}
	do {
		n = 0;
		struct tc_io *next;
		while (n < 8 && (next = dev_pick(dev, now))) {
			dev_count_dispatch(dev, next, now);
			go[n++] = next;
		}
		pthread_mutex_unlock(&dev->q_lock);
		for (unsigned i = 0; i < n; i++)
			dev->ops->submit(dev, go[i]);
		if (n < 8)
			return;
		pthread_mutex_lock(&dev->q_lock);
	} while (1);
}

void tc_dev_queue_stats(struct tc_dev *dev, struct tc_dev_queue_stats *out)
{
	pthread_mutex_lock(&dev->q_lock);
	*out = dev->q_st;
	out->inflight = dev->q_inflight;
	pthread_mutex_unlock(&dev->q_lock);
}

bool tc_dev_high_waiting(struct tc_dev *dev)
{
	if (!dev->qd_limit)
		return false;
	pthread_mutex_lock(&dev->q_lock);
	bool r = dev->q_head[TC_PRIO_HIGH] != NULL;
	pthread_mutex_unlock(&dev->q_lock);
	return r;
}

/* ------------------------------------------------------------------------------------
 * Submission.
 */

static const char *op_name(unsigned op)
{
	switch (op) {
	case TC_OP_READ: return "read";
	case TC_OP_WRITE: return "write";
	case TC_OP_FLUSH: return "flush";
	case TC_OP_DISCARD: return "discard";
	case TC_OP_WRITE_ZEROES: return "write-zeroes";
	}
	return "unknown op";
}

/* 0 if @io is well formed for @dev, else -EINVAL after logging why. */
static int dev_check(struct tc_dev *dev, const struct tc_io *io)
{
	uint64_t sum = 0;
	int i;

	if (io->op > TC_OP_WRITE_ZEROES) {
		tc_err(dev->ctx, "device %s: unknown op %u", dev->name, io->op);
		return -EINVAL;
	}
	if (io->prio >= TC_PRIO_COUNT) {
		tc_err(dev->ctx, "device %s: %s with unknown priority %u", dev->name,
		       op_name(io->op), io->prio);
		return -EINVAL;
	}
	if (io->op == TC_OP_FLUSH)
		return 0;
	if (io->length == 0 || io->offset % dev->lbs || io->length % dev->lbs) {
		tc_err(dev->ctx, "device %s: %s offset %" PRIu64 " length %" PRIu64
		       " not a non-empty multiple of the block size %" PRIu32,
		       dev->name, op_name(io->op), io->offset, io->length, dev->lbs);
		return -EINVAL;
	}
	if (io->length > dev->size || io->offset > dev->size - io->length) {
		tc_err(dev->ctx, "device %s: %s offset %" PRIu64 " length %" PRIu64
		       " beyond size %" PRIu64, dev->name, op_name(io->op), io->offset,
		       io->length, dev->size);
		return -EINVAL;
	}
	if (io->op != TC_OP_READ && io->op != TC_OP_WRITE)
		return 0;
	if (io->iovcnt < 0 || (io->iovcnt > 0 && !io->iov)) {
		tc_err(dev->ctx, "device %s: %s with iovcnt %d and iov %p", dev->name,
		       op_name(io->op), io->iovcnt, (const void *)io->iov);
		return -EINVAL;
	}
	for (i = 0; i < io->iovcnt; i++)
		sum += io->iov[i].iov_len;
	if (sum != io->length) {
		tc_err(dev->ctx, "device %s: %s iovecs add up to %" PRIu64 " bytes, length is %"
		       PRIu64, dev->name, op_name(io->op), sum, io->length);
		return -EINVAL;
	}
	return 0;
}

void tc_dev_submit(tc_dev *dev, struct tc_io *io)
{
	int ret = dev_check(dev, io);

	if (ret < 0) {
		dev_refuse(dev, io, ret);
		return;
	}
	switch (io->op) {
	case TC_OP_READ: atomic_fetch_add(&dev->n_reads, 1); break;
	case TC_OP_WRITE: atomic_fetch_add(&dev->n_writes, 1); break;
	case TC_OP_FLUSH: atomic_fetch_add(&dev->n_flushes, 1); break;
	case TC_OP_DISCARD: atomic_fetch_add(&dev->n_discards, 1); break;
	case TC_OP_WRITE_ZEROES: atomic_fetch_add(&dev->n_write_zeroes, 1); break;
	}
	if (dev->qd_limit && !dev_admit(dev, io))
		return;                 /* held: dev_release() dispatches it */
	dev->ops->submit(dev, io);
}

void tc_dev_close(tc_dev *dev)
{
	if (dev)
		dev->ops->close(dev);
}

/* ------------------------------------------------------------------------------------
 * Synchronous helpers.
 */

static void dev_sync_done(struct tc_io *io, int result)
{
	tc_waiter_done(io->private_data, result);   /* last: @io is the waiter's stack */
}

int tc_dev_io(tc_dev *dev, enum tc_op op, unsigned flags, void *buf, uint64_t len,
	      uint64_t off)
{
	struct tc_waiter w;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct tc_io io = {
		.op = op,
		.flags = (uint8_t)flags,
		.offset = off,
		.length = len,
		.iov = buf ? &iov : NULL,
		.iovcnt = buf ? 1 : 0,
		.done = dev_sync_done,
		.private_data = &w,
	};

	tc_waiter_init(&w, dev->ctx);
	tc_dev_submit(dev, &io);
	return tc_waiter_wait(&w);
}

int tc_dev_pread(tc_dev *dev, void *buf, uint64_t len, uint64_t off)
{
	return tc_dev_io(dev, TC_OP_READ, 0, buf, len, off);
}

int tc_dev_pwrite(tc_dev *dev, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	return tc_dev_io(dev, TC_OP_WRITE, flags, (void *)buf, len, off);
}

int tc_dev_flush(tc_dev *dev)
{
	return tc_dev_io(dev, TC_OP_FLUSH, 0, NULL, 0, 0);
}

/* ------------------------------------------------------------------------------------
 * iovec helpers.
 */

/* Walk [skip, skip + len) of @iov, copying to or from the flat @buf. */
static void iov_copy(char *buf, const struct iovec *iov, int iovcnt, size_t skip,
		     size_t len, bool to_iov)
{
	for (int i = 0; i < iovcnt && len > 0; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - skip;
		if (n > len)
			n = len;
		char *base = (char *)iov[i].iov_base + skip;
		if (to_iov)
			memcpy(base, buf, n);
		else
			memcpy(buf, base, n);
		buf += n;
		len -= n;
		skip = 0;
	}
}

int tc_iov_slice(const struct iovec *iov, int cnt, size_t skip, size_t len,
		 struct iovec *one, struct iovec **out, int *outcnt)
{
	int i = 0, n = 0;
	while (i < cnt && skip >= iov[i].iov_len) {
		skip -= iov[i].iov_len;
		i++;
	}
	int first = i;
	size_t need = len, sk = skip;
	for (; i < cnt && need; i++) {
		size_t take = iov[i].iov_len - sk;
		if (take > need)
			take = need;
		need -= take;
		sk = 0;
		n++;
	}
	if (need)
		return -EINVAL;
	struct iovec *v = n == 1 && one ? one : malloc(sizeof(*v) * (size_t)(n ? n : 1));
	if (!v)
		return -ENOMEM;
	need = len;
	sk = skip;
	for (int j = 0; j < n; j++) {
		const struct iovec *src = &iov[first + j];
		size_t take = src->iov_len - sk;
		if (take > need)
			take = need;
		v[j].iov_base = (char *)src->iov_base + sk;
		v[j].iov_len = take;
		need -= take;
		sk = 0;
	}
	*out = v;
	*outcnt = n;
	return 0;
}

void tc_iov_to_buf(void *buf, const struct iovec *iov, int iovcnt, size_t skip, size_t len)
{
	iov_copy(buf, iov, iovcnt, skip, len, false);
}

void tc_buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip, const void *buf,
		   size_t len)
{
	iov_copy((char *)buf, iov, iovcnt, skip, len, true);
}

int tc_dev_lock_fd(tc_ctx *ctx, int fd, const char *path, unsigned flags)
{
	if (!(flags & TC_DEV_EXCLUSIVE))
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	int r = -errno;
	if (r == -EWOULDBLOCK) {
		tc_err(ctx, "device %s: in use (locked by a running server or another "
		       "tiercache command)", path);
		return -EBUSY;
	}
	tc_err(ctx, "device %s: cannot lock: %s", path, strerror(-r));
	return r;
}

int tc_dev_set_dirty_owner(tc_dev *dev, const char *owner)
{
	return dev->ops->set_dirty_owner ? dev->ops->set_dirty_owner(dev, owner) : 0;
}

void tc_dev_dirty_owner(tc_dev *dev, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (dev->ops->dirty_owner && len)
		dev->ops->dirty_owner(dev, buf, len);
}

const char *tc_dev_remote_id(tc_dev *dev)
{
	return dev->ops->remote_id ? dev->ops->remote_id(dev) : NULL;
}
