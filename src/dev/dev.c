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

void tc_dev_complete(struct tc_dev *dev, struct tc_io *io, int result)
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

void tc_dev_complete_later(struct tc_dev *dev, struct tc_io *io, int result)
{
	struct tc_work *w = (struct tc_work *)(void *)io->internal;

	io->internal[2] = (uint64_t)(int64_t)result;
	io->internal[3] = (uint64_t)(uintptr_t)dev;
	w->fn = dev_complete_work;
	tc_ctx_defer(dev->ctx, w);
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
		tc_dev_complete_later(dev, io, ret);
		return;
	}
	switch (io->op) {
	case TC_OP_READ: atomic_fetch_add(&dev->n_reads, 1); break;
	case TC_OP_WRITE: atomic_fetch_add(&dev->n_writes, 1); break;
	case TC_OP_FLUSH: atomic_fetch_add(&dev->n_flushes, 1); break;
	case TC_OP_DISCARD: atomic_fetch_add(&dev->n_discards, 1); break;
	case TC_OP_WRITE_ZEROES: atomic_fetch_add(&dev->n_write_zeroes, 1); break;
	}
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
