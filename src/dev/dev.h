/* SPDX-License-Identifier: MIT */
/*
 * dev.h - the device interface behind tc_dev.
 *
 * A backend fills a struct tc_dev_ops table (lifecycle order, ops table last in its
 * file, every function prefixed with the backend's name) and embeds struct tc_dev at
 * the start of its own struct.  dev.c does what every backend shares: range and
 * alignment checks, counters, the synchronous helpers, and error completion.
 */
#ifndef TC_DEV_H
#define TC_DEV_H

#include <pthread.h>
#include <stdatomic.h>
#include "ctx.h"

struct tc_dev;

struct tc_dev_ops {
	const char *name;                               /* "file", "memory", "crash", "emu", "fault" */
	/* Start @io, already checked for range and alignment.  Must complete it through
	 * tc_dev_complete() exactly once, never from inside this call. */
	void (*submit)(struct tc_dev *dev, struct tc_io *io);
	void (*close)(struct tc_dev *dev);              /* free everything */
};

struct tc_dev {
	const struct tc_dev_ops *ops;
	tc_ctx *ctx;
	uint64_t size;              /* bytes */
	uint32_t lbs;               /* logical block size, bytes */
	bool direct;
	char *name;                 /* malloc'ed */
	_Atomic uint64_t n_reads, n_writes, n_flushes, n_discards, n_write_zeroes;
	_Atomic uint64_t n_bytes_read, n_bytes_written, n_errors;
	/* Limits and health (tc_dev_limits): set by the backend at open with
	 * tc_dev_set_limits(), redundancy changed with tc_dev_event(); under watch_lock.
	 * notify_lock serialises event delivery against tc_dev_unwatch(). */
	pthread_mutex_t watch_lock, notify_lock;
	struct tc_dev_limits limits;
	struct tc_dev_watcher *watchers; /* list, newest first */
};

/* tc_dev_init - fill the common part; @name is copied.  Returns 0 or -ENOMEM. */
int tc_dev_init(struct tc_dev *dev, const struct tc_dev_ops *ops, tc_ctx *ctx,
		const char *name, uint64_t size, uint32_t lbs);
void tc_dev_fini(struct tc_dev *dev);   /* frees what tc_dev_init() allocated */

/* tc_dev_set_limits - a backend's limits at open (tc_dev_init sets io_min to the
 * logical block size and everything else to 0).  io_min is raised to the logical
 * block size; an io_opt that is not a multiple of io_min is dropped (0). */
void tc_dev_set_limits(struct tc_dev *dev, const struct tc_dev_limits *l);

/* tc_dev_event - a backend reports a health change: @redundancy becomes the limits'
 * redundancy, then every watcher is called with @ev (from the caller's thread, one event at a
 * time; the caller holds none of the device's locks). */
void tc_dev_event(struct tc_dev *dev, enum tc_dev_event ev, uint8_t redundancy);

/* tc_dev_complete - backends call this to finish @io: counts errors and calls done. */
void tc_dev_complete(struct tc_dev *dev, struct tc_io *io, int result);

/* tc_dev_complete_later - complete @io with @result from a ctx work item (used for
 * refusals and by backends without a completion thread).  The device layer owns
 * io->internal[] while a request is in flight. */
void tc_dev_complete_later(struct tc_dev *dev, struct tc_io *io, int result);

/* tc_dev_lock_fd - with TC_DEV_EXCLUSIVE in @flags, take flock(LOCK_EX|LOCK_NB) on
 * @fd (the lock goes with the open file description, so it ends when @fd is closed).
 * Returns 0, or -EBUSY with a message naming @path when another open of the file holds
 * it (a running server or another tool), or -errno. */
int tc_dev_lock_fd(tc_ctx *ctx, int fd, const char *path, unsigned flags);

/* tc_iov_slice - the iovecs of bytes [@skip, @skip + @len) of @iov (@cnt elements),
 * pointing into the same buffers: into *@one when one element does and @one is not
 * NULL, else a malloc'ed array (free it when *@out != @one); the count in *@outcnt.
 * Returns 0, -EINVAL when @iov holds fewer than @skip + @len bytes, or -ENOMEM. */
int tc_iov_slice(const struct iovec *iov, int cnt, size_t skip, size_t len,
		 struct iovec *one, struct iovec **out, int *outcnt);

/* iovec helpers: copy between a flat buffer and @iov starting @skip bytes into the
 * iovec list. */
void tc_iov_to_buf(void *buf, const struct iovec *iov, int iovcnt, size_t skip, size_t len);
void tc_buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip, const void *buf,
		   size_t len);

#endif /* TC_DEV_H */
