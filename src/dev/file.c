/* SPDX-License-Identifier: MIT */
/*
 * file.c - regular files and block devices through io_uring.
 *
 * This is the backend real caches run on, so it avoids the page cache (O_DIRECT)
 * whenever the file system allows: the cache device is the cache, and double caching
 * would only hide the SSD's behaviour and waste RAM.  TC_DEV_BUFFERED, or a file system
 * that refuses O_DIRECT, gives buffered I/O instead.
 *
 * Threaded mode: one io_uring (depth 256) per device.  Submitters prepare SQEs under a
 * mutex; a completion thread per device reaps CQEs and calls tc_dev_complete() itself,
 * so a submitter's done() callback runs on that thread, never inside tc_dev_submit().
 * Submission batching: a virtio disk (and most others) costs one notification, on a
 * virtual machine an exit to the hypervisor, per io_uring_enter() that submits, and
 * that was the largest single cost of a served hit.  So a request queued while at least
 * FILE_DEFER_MIN others are in the kernel, none of them slow (flush, discard,
 * write-zeroes), is only put on the submission queue: the completion thread submits it
 * with whatever else is queued right after the next completion, which comes within one
 * device latency.  Otherwise the submitter calls io_uring_enter() itself, at once.
 *
 * Completion on the waiting thread.  Most requests come from a thread that will block
 * for them at once: a server thread serving a hit calls tc_volume_io(), which submits
 * and then sleeps on its waiter.  Through the shared ring that cost two hand-offs per
 * request (the completion thread wakes on the CQE, then wakes the server thread), and
 * the futex wait and wake were a quarter of the server's CPU.  So a read or write
 * submitted while its thread is armed (ctx.h, tc_thread_armed: between tc_waiter_init
 * and tc_waiter_wait) goes onto a small ring of that thread's own, and the thread's
 * waiter reaps it (io_uring_wait_cqe on a ring it owns) and runs the completion
 * itself: the thread sleeps in the kernel until the device answers, as a plain pread
 * would, and nobody else is woken.  Everything else (work items and timers on the
 * context's worker, the cleaner, requests a completion callback starts, flushes,
 * discards) takes the shared ring as before.
 *
 * Requests map onto IORING_OP_READV/WRITEV with the caller's iovecs (FUA as RWF_DSYNC),
 * FSYNC with IORING_FSYNC_DATASYNC, and FALLOCATE (punch hole for DISCARD, zero range
 * for WRITE_ZEROES).  Short transfers are resubmitted for the remainder.
 *
 * Deterministic mode has no threads: each request runs synchronously (preadv2,
 * pwritev2, fdatasync, fallocate) inside a context work item, so the seed still decides
 * the completion order.
 *
 * O_DIRECT needs memory aligned to the logical block size.  The library's own buffers
 * are 4096-aligned; a request with unaligned iovecs goes through a bounce buffer.
 *
 * io->internal[] while a request is in flight on the ring:
 *   [0] bytes transferred so far    [1] bounce buffer or 0
 *   [2] malloc'ed remainder iovecs  [3] their count
 * In deterministic mode it holds the work item and the device (see dev.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dev.h"

#define FILE_RING_DEPTH 256
#define FILE_ALIGN 4096
#define FILE_ZERO_CHUNK (1u << 20)      /* write-zeroes fallback buffer */
#define FILE_BUSY_WAIT_US 100           /* ring busy: wait this long, retry */
#define FILE_DEFER_MIN 4                /* in the kernel: later requests wait for a batch */
#define FILE_LOCAL_DEPTH 32             /* a thread's own ring: requests in flight */

struct file_dev {
	struct tc_dev dev;              /* first: tc_dev * and file_dev * convert */
	int fd;
	bool readonly;
	bool threaded;                  /* ring and completion thread in use */
	struct io_uring ring;
	pthread_mutex_t sq_lock;        /* the submission queue */
	pthread_t cq_thread;
	/* Bumped (release) before each submit, read (acquire) after each CQE: the kernel
	 * orders the two, but only this tells the compiler and ThreadSanitizer that the
	 * completion thread sees the submitter's writes to the request. */
	_Atomic uint64_t n_queued;
	/* SQEs the kernel took whose CQE is not reaped yet (raised under sq_lock after each
	 * submit, so briefly below zero when a CQE is reaped first), and queued or
	 * submitted slow requests: what file_queue() decides on. */
	_Atomic int in_kernel;
	_Atomic int slow;
};

static const struct tc_dev_ops file_ops;

/*
 * A thread's own ring (see "Completion on the waiting thread" at the top of the file):
 * one per thread that submits reads and writes while it is about to wait for them,
 * shared by every file device (an SQE names its file descriptor).  Only this thread
 * submits to it and reaps it.  @slots maps a CQE's user_data to the request and its
 * device; @free_slot heads the free list through @slots[].next.
 */
struct file_local_ring {
	struct io_uring ring;
	unsigned in_flight;
	bool unsubmitted;               /* a submit failed: SQEs wait in the ring */
	int free_slot;
	struct {
		struct tc_io *io;
		struct file_dev *fdev;
		int next;
	} slots[FILE_LOCAL_DEPTH];
};

static pthread_once_t file_local_once = PTHREAD_ONCE_INIT;
static pthread_key_t file_local_key;            /* destructor: the ring at thread exit */
static __thread struct file_local_ring *file_local;
static __thread bool file_local_failed;         /* setup failed once: do not retry */

/*
 * The device whose completion thread is running on this thread, while it runs a batch
 * of completions.  Requests such a callback queues on the same device are only put on
 * the submission queue; the thread submits them all with one io_uring_enter() after
 * the batch (as fio's io_uring engine does), instead of one system call per request.
 */
static __thread struct file_dev *file_batching;
static void *file_cq_main(void *arg);

/* The user_data of the NOP that stops the completion thread: no request can live at
 * the device's own address. */
static uint64_t file_stop_marker(struct file_dev *fdev)
{
	return (uint64_t)(uintptr_t)fdev;
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

/* Open @path, with O_DIRECT unless asked not to or the file system says EINVAL. */
static int file_open_fd(tc_ctx *ctx, const char *path, unsigned flags, bool *direct)
{
	int oflags = ((flags & TC_DEV_READONLY) ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd;

	if (flags & TC_DEV_CREATE)
		oflags |= O_CREAT;
	*direct = false;
	if (!(flags & TC_DEV_BUFFERED)) {
		fd = open(path, oflags | O_DIRECT, 0644);
		if (fd >= 0) {
			*direct = true;
			return fd;
		}
		if (errno != EINVAL)
			goto fail;
		tc_info(ctx, "file %s: O_DIRECT refused, using buffered I/O", path);
	}
	fd = open(path, oflags, 0644);
	if (fd >= 0)
		return fd;
fail:
	fd = -errno;
	tc_err(ctx, "file %s: open: %s", path, strerror(errno));
	return fd;
}

/* Size and logical block size; creates or extends a regular file with TC_DEV_CREATE. */
static int file_geometry(tc_ctx *ctx, const char *path, int fd, unsigned flags,
			 uint64_t want, uint64_t *size, uint32_t *lbs, bool *is_blk)
{
	struct stat st;
	int ssz;

	if (fstat(fd, &st) < 0)
		goto fail_errno;
	*is_blk = S_ISBLK(st.st_mode);
	if (*is_blk) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0 || ioctl(fd, BLKSSZGET, &ssz) < 0)
			goto fail_errno;
		*lbs = (uint32_t)ssz;
	} else if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		*lbs = TC_SECTOR_SIZE;
		if (flags & TC_DEV_CREATE) {
			if (want == 0 || want % TC_UNIT_SIZE) {
				tc_err(ctx, "file %s: size %" PRIu64 " is not a non-zero multiple of %u",
				       path, want, TC_UNIT_SIZE);
				return -EINVAL;
			}
			if (*size < want) {
				if (ftruncate(fd, (off_t)want) < 0)
					goto fail_errno;
				*size = want;
			}
		}
	} else {
		tc_err(ctx, "file %s: not a regular file or block device", path);
		return -EINVAL;
	}
	if (*size == 0 || *size % TC_UNIT_SIZE) {
		tc_err(ctx, "file %s: size %" PRIu64 " is not a non-zero multiple of %u",
		       path, *size, TC_UNIT_SIZE);
		return -EINVAL;
	}
	if (*lbs != 512 && *lbs != 4096) {
		tc_err(ctx, "file %s: logical block size %" PRIu32 " is not 512 or 4096",
		       path, *lbs);
		return -EINVAL;
	}
	return 0;

fail_errno:
	ssz = -errno;
	tc_err(ctx, "file %s: %s", path, strerror(errno));
	return ssz;
}

/*
 * A block device's I/O limits as the kernel publishes them: BLKIOMIN is the minimum
 * I/O size (an md or hardware RAID chunk), BLKIOOPT the optimal one (a full stripe;
 * 0 when the device states none).  md sets both for RAID 4/5/6 only where partial
 * stripes cost a read-modify-write, so a minimum below the optimum on a device whose
 * optimum is several minimums is taken as parity RAID.  Failing ioctls leave the
 * defaults (a plain device).
 */
static void file_blk_limits(struct file_dev *fdev, int fd)
{
	struct tc_dev_limits l = { 0 };
	unsigned int io_min = 0, io_opt = 0;

	if (ioctl(fd, BLKIOMIN, &io_min) < 0)
		io_min = 0;
	if (ioctl(fd, BLKIOOPT, &io_opt) < 0)
		io_opt = 0;
	l.io_min = io_min;
	l.io_opt = io_opt;
	l.partial_stripe_expensive = io_min > fdev->dev.lbs && io_opt > io_min &&
				     io_opt % io_min == 0;
	tc_dev_set_limits(&fdev->dev, &l);
}

/*
 * A regular file opened O_DIRECT: find the smallest block it accepts.  Some file
 * systems (4 KiB-sector disks underneath) refuse 512-byte direct I/O; some refuse
 * direct I/O altogether at read time, and then buffered I/O it is.
 */
static int file_probe_direct(struct file_dev *fdev, const char *path)
{
	tc_ctx *ctx = fdev->dev.ctx;
	void *buf;
	int ret = 0;

	if (posix_memalign(&buf, FILE_ALIGN, FILE_ALIGN))
		return -ENOMEM;
	if (pread(fdev->fd, buf, 512, 512) >= 0)
		goto out;
	if (errno != EINVAL)
		goto fail_errno;
	if (pread(fdev->fd, buf, 4096, 0) >= 0) {
		fdev->dev.lbs = 4096;
		goto out;
	}
	if (errno != EINVAL)
		goto fail_errno;
	tc_info(ctx, "file %s: O_DIRECT reads refused, using buffered I/O", path);
	if (fcntl(fdev->fd, F_SETFL, fcntl(fdev->fd, F_GETFL) & ~O_DIRECT) < 0)
		goto fail_errno;
	fdev->dev.direct = false;
	goto out;

fail_errno:
	ret = -errno;
	tc_err(ctx, "file %s: probing O_DIRECT: %s", path, strerror(errno));
out:
	free(buf);
	return ret;
}

static int file_start_ring(struct file_dev *fdev)
{
	tc_ctx *ctx = fdev->dev.ctx;
	int ret;

	ret = io_uring_queue_init(FILE_RING_DEPTH, &fdev->ring, 0);
	if (ret < 0) {
		tc_err(ctx, "file %s: io_uring_queue_init(%d): %s", fdev->dev.name,
		       FILE_RING_DEPTH, strerror(-ret));
		return ret;
	}
	pthread_mutex_init(&fdev->sq_lock, NULL);
	atomic_init(&fdev->in_kernel, 0);
	atomic_init(&fdev->slow, 0);
	ret = pthread_create(&fdev->cq_thread, NULL, file_cq_main, fdev);
	if (ret) {
		tc_err(ctx, "file %s: cannot start completion thread: %s", fdev->dev.name,
		       strerror(ret));
		pthread_mutex_destroy(&fdev->sq_lock);
		io_uring_queue_exit(&fdev->ring);
		return -ret;
	}
	fdev->threaded = true;
	return 0;
}

int tc_dev_open_file(tc_ctx *ctx, const char *path, unsigned flags, uint64_t size,
		     tc_dev **out)
{
	struct file_dev *fdev;
	uint64_t dev_size = 0;
	uint32_t lbs = 0;
	bool direct, is_blk = false;
	int fd = -1, ret;

	*out = NULL;
	fd = file_open_fd(ctx, path, flags, &direct);
	if (fd < 0)
		return fd;
	ret = tc_dev_lock_fd(ctx, fd, path, flags);
	if (ret < 0)
		goto fail_fd;
	ret = file_geometry(ctx, path, fd, flags, size, &dev_size, &lbs, &is_blk);
	if (ret < 0)
		goto fail_fd;
	fdev = calloc(1, sizeof(*fdev));
	if (!fdev) {
		ret = -ENOMEM;
		goto fail_fd;
	}
	ret = tc_dev_init(&fdev->dev, &file_ops, ctx, path, dev_size, lbs);
	if (ret < 0)
		goto fail_free;
	fdev->fd = fd;
	fdev->readonly = flags & TC_DEV_READONLY;
	atomic_init(&fdev->n_queued, 0);
	fdev->dev.direct = direct;
	if (is_blk)
		file_blk_limits(fdev, fd);
	if (direct && !is_blk) {
		ret = file_probe_direct(fdev, path);
		if (ret < 0)
			goto fail_fini;
	}
	if (!tc_ctx_deterministic(ctx)) {
		ret = file_start_ring(fdev);
		if (ret < 0)
			goto fail_fini;
	}
	*out = &fdev->dev;
	return 0;

fail_fini:
	tc_dev_fini(&fdev->dev);
fail_free:
	free(fdev);
fail_fd:
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------------------------
 * Helpers shared by both submit paths.
 */

/* O_DIRECT with memory or lengths the device cannot take directly? */
static bool file_needs_bounce(struct file_dev *fdev, const struct tc_io *io)
{
	int i;

	if (!fdev->dev.direct)
		return false;
	for (i = 0; i < io->iovcnt; i++) {
		if ((uintptr_t)io->iov[i].iov_base % fdev->dev.lbs ||
		    io->iov[i].iov_len % fdev->dev.lbs)
			return true;
	}
	return false;
}

/* A malloc'ed copy of @io's iovecs without the first @skip bytes. */
static struct iovec *file_iov_tail(const struct tc_io *io, uint64_t skip, int *cnt)
{
	struct iovec *v = malloc(sizeof(*v) * (size_t)(io->iovcnt ? io->iovcnt : 1));
	int i, n = 0;

	if (!v)
		return NULL;
	for (i = 0; i < io->iovcnt; i++) {
		if (skip >= io->iov[i].iov_len) {
			skip -= io->iov[i].iov_len;
			continue;
		}
		v[n].iov_base = (char *)io->iov[i].iov_base + skip;
		v[n].iov_len = io->iov[i].iov_len - skip;
		skip = 0;
		n++;
	}
	*cnt = n;
	return v;
}

/* The WRITE_ZEROES fallback when fallocate cannot zero: plain writes of zeros.  Blocks
 * the calling thread (the completion thread, or the deterministic work item). */
static int file_write_zeroes_sync(struct file_dev *fdev, uint64_t off, uint64_t len)
{
	size_t chunk = len < FILE_ZERO_CHUNK ? (size_t)len : FILE_ZERO_CHUNK;
	void *zeros;
	int ret = 0;

	if (posix_memalign(&zeros, FILE_ALIGN, chunk))
		return -ENOMEM;
	memset(zeros, 0, chunk);
	while (len > 0) {
		size_t n = len < chunk ? (size_t)len : chunk;
		ssize_t w = pwrite(fdev->fd, zeros, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			tc_err(fdev->dev.ctx, "file %s: writing zeros at %" PRIu64 ": %s",
			       fdev->dev.name, off, strerror(-ret));
			break;
		}
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	free(zeros);
	return ret;
}

static int file_datasync(struct file_dev *fdev)
{
	if (fdatasync(fdev->fd) == 0)
		return 0;
	tc_err(fdev->dev.ctx, "file %s: fdatasync: %s", fdev->dev.name, strerror(errno));
	return -errno;
}

/* After fallocate() for WRITE_ZEROES returned @res: fall back, make FUA durable. */
static int file_zeroes_finish(struct file_dev *fdev, struct tc_io *io, int res)
{
	if (res == -EOPNOTSUPP)
		res = file_write_zeroes_sync(fdev, io->offset, io->length);
	if (res == 0 && (io->flags & TC_IO_FUA))
		res = file_datasync(fdev);
	return res;
}

static void file_log_error(struct file_dev *fdev, const struct tc_io *io, int res)
{
	static const char *const names[] = { "read", "write", "flush", "discard",
					     "write-zeroes" };

	tc_err(fdev->dev.ctx, "file %s: %s at %" PRIu64 " length %" PRIu64 ": %s",
	       fdev->dev.name, names[io->op], io->offset, io->length, strerror(-res));
}

/* ------------------------------------------------------------------------------------
 * Threaded submit path: io_uring.
 */

/* io_uring_submit(), counting what the kernel took.  Holds sq_lock. */
static int file_enter(struct file_dev *fdev)
{
	int ret = io_uring_submit(&fdev->ring);

	if (ret > 0)
		atomic_fetch_add(&fdev->in_kernel, ret);
	return ret;
}

static bool file_slow_op(unsigned op)
{
	return op == TC_OP_FLUSH || op == TC_OP_DISCARD || op == TC_OP_WRITE_ZEROES;
}

/* An SQE, submitting what is queued while the ring is full.  Holds sq_lock. */
static struct io_uring_sqe *file_get_sqe(struct file_dev *fdev)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&fdev->ring))) {
		int ret = file_enter(fdev);

		if (ret == -EBUSY || ret == -EAGAIN) {
			/* The kernel wants completions reaped first: let the completion
			 * thread run (it may need this lock to resubmit). */
			pthread_mutex_unlock(&fdev->sq_lock);
			usleep(FILE_BUSY_WAIT_US);
			pthread_mutex_lock(&fdev->sq_lock);
		}
	}
	return sqe;
}

static void file_ring_submit(struct file_dev *fdev)
{
	int ret;

	while ((ret = file_enter(fdev)) == -EBUSY || ret == -EAGAIN ||
	       ret == -EINTR) {
		pthread_mutex_unlock(&fdev->sq_lock);
		usleep(FILE_BUSY_WAIT_US);
		pthread_mutex_lock(&fdev->sq_lock);
	}
	/* Any other error leaves the SQEs queued; the next submit retries them. */
	if (ret < 0)
		tc_err(fdev->dev.ctx, "file %s: io_uring_submit: %s", fdev->dev.name,
		       strerror(-ret));
}

/* Fill @sqe for @io (or what is left of it); the caller sets its user_data. */
static void file_prep(struct file_dev *fdev, struct tc_io *io, struct io_uring_sqe *sqe)
{
	uint64_t done = io->internal[0];
	uint8_t *bounce = (uint8_t *)(uintptr_t)io->internal[1];
	const struct iovec *iov = io->iov;
	int iovcnt = io->iovcnt;
	off_t off = (off_t)(io->offset + done);

	if (io->internal[2]) {
		iov = (const struct iovec *)(uintptr_t)io->internal[2];
		iovcnt = (int)io->internal[3];
	}
	switch (io->op) {
	case TC_OP_READ:
		if (bounce)
			io_uring_prep_read(sqe, fdev->fd, bounce + done,
					   (unsigned)(io->length - done), (uint64_t)off);
		else
			io_uring_prep_readv(sqe, fdev->fd, iov, (unsigned)iovcnt, (uint64_t)off);
		break;
	case TC_OP_WRITE:
		if (bounce)
			io_uring_prep_write(sqe, fdev->fd, bounce + done,
					    (unsigned)(io->length - done), (uint64_t)off);
		else
			io_uring_prep_writev(sqe, fdev->fd, iov, (unsigned)iovcnt, (uint64_t)off);
		if (io->flags & TC_IO_FUA)
			sqe->rw_flags = RWF_DSYNC;
		break;
	case TC_OP_FLUSH:
		io_uring_prep_fsync(sqe, fdev->fd, IORING_FSYNC_DATASYNC);
		break;
	case TC_OP_DISCARD:
		io_uring_prep_fallocate(sqe, fdev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					off, (off_t)io->length);
		break;
	case TC_OP_WRITE_ZEROES:
		io_uring_prep_fallocate(sqe, fdev->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					off, (off_t)io->length);
		break;
	}
}

static bool file_local_queue(struct file_dev *fdev, struct tc_io *io);

/* Put @io (or what is left of it) on this thread's ring or the shared one. */
static void file_queue(struct file_dev *fdev, struct tc_io *io)
{
	struct io_uring_sqe *sqe;

	if (file_local_queue(fdev, io))
		return;
	pthread_mutex_lock(&fdev->sq_lock);
	sqe = file_get_sqe(fdev);
	file_prep(fdev, io, sqe);
	io_uring_sqe_set_data(sqe, io);
	/* Before the release: the completion thread's acquire of n_queued is what tells
	 * ThreadSanitizer that @io is not touched here after it may complete (and be
	 * freed); the kernel's own ordering through the ring is invisible to it. */
	if (file_slow_op(io->op))
		atomic_fetch_add(&fdev->slow, 1);
	atomic_fetch_add_explicit(&fdev->n_queued, 1, memory_order_release);
	/* Deferred (see the top of the file): a CQE still to reap means the completion
	 * thread takes sq_lock after reaping it, so it sees this SQE. */
	if (file_batching != fdev &&
	    (atomic_load(&fdev->in_kernel) < FILE_DEFER_MIN || atomic_load(&fdev->slow) > 0))
		file_ring_submit(fdev);
	pthread_mutex_unlock(&fdev->sq_lock);
}

static void file_ring_finish(struct file_dev *fdev, struct tc_io *io, int res)
{
	uint8_t *bounce = (uint8_t *)(uintptr_t)io->internal[1];

	if (bounce && io->op == TC_OP_READ && res == 0)
		tc_buf_to_iov(io->iov, io->iovcnt, 0, bounce, io->length);
	free(bounce);
	free((void *)(uintptr_t)io->internal[2]);
	if (res < 0)
		file_log_error(fdev, io, res);
	tc_dev_complete(&fdev->dev, io, res);
}

/* One CQE for @io, on the completion thread. */
static void file_ring_cqe(struct file_dev *fdev, struct tc_io *io, int res)
{
	switch (io->op) {
	case TC_OP_READ:
	case TC_OP_WRITE:
		if (res == -EAGAIN || res == -EINTR) {
			file_queue(fdev, io);
			return;
		}
		if (res < 0)
			break;
		if (res == 0) {                 /* end of file inside the device: truncated */
			res = -EIO;
			break;
		}
		io->internal[0] += (uint64_t)res;
		if (io->internal[0] < io->length) {
			/* Short transfer: go again for the rest. */
			if (!io->internal[1]) {
				int cnt;
				struct iovec *tail = file_iov_tail(io, io->internal[0], &cnt);

				if (!tail) {
					res = -ENOMEM;
					break;
				}
				free((void *)(uintptr_t)io->internal[2]);
				io->internal[2] = (uint64_t)(uintptr_t)tail;
				io->internal[3] = (uint64_t)cnt;
			}
			file_queue(fdev, io);
			return;
		}
		res = 0;
		break;
	case TC_OP_FLUSH:
		break;
	case TC_OP_DISCARD:
		if (res == -EOPNOTSUPP)         /* discard is advisory: old data stays */
			res = 0;
		break;
	case TC_OP_WRITE_ZEROES:
		res = file_zeroes_finish(fdev, io, res);
		break;
	}
	file_ring_finish(fdev, io, res < 0 ? res : 0);
}

static void *file_cq_main(void *arg)
{
	struct file_dev *fdev = arg;
	bool stop = false;

	while (!stop) {
		struct io_uring_cqe *cqe;
		int ret;

		ret = io_uring_wait_cqe(&fdev->ring, &cqe);
		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret < 0) {
			tc_err(fdev->dev.ctx, "file %s: io_uring_wait_cqe: %s", fdev->dev.name,
			       strerror(-ret));
			break;
		}
		/* Everything that has completed, then one submit for what it queued. */
		file_batching = fdev;
		do {
			uint64_t data = cqe->user_data;
			int res = cqe->res;

			io_uring_cqe_seen(&fdev->ring, cqe);
			(void)atomic_load_explicit(&fdev->n_queued, memory_order_acquire);
			atomic_fetch_sub(&fdev->in_kernel, 1);
			if (data == file_stop_marker(fdev)) {
				stop = true;
				break;
			}
			if (file_slow_op(((struct tc_io *)(uintptr_t)data)->op))
				atomic_fetch_sub(&fdev->slow, 1);
			file_ring_cqe(fdev, (struct tc_io *)(uintptr_t)data, res);
		} while (io_uring_peek_cqe(&fdev->ring, &cqe) == 0);
		file_batching = NULL;
		pthread_mutex_lock(&fdev->sq_lock);
		if (io_uring_sq_ready(&fdev->ring))
			file_ring_submit(fdev);
		pthread_mutex_unlock(&fdev->sq_lock);
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------
 * Threaded submit path: a thread's own ring.
 */

static unsigned file_local_in_flight(void)
{
	return file_local ? file_local->in_flight : 0;
}

/* Wait for at least one CQE of this thread's ring, then complete everything reaped.
 * Each CQE is marked seen and its slot freed before its callback runs, so a callback
 * that waits again (and reaps here, reentrantly) finds the ring consistent. */
static void file_local_reap(void)
{
	struct file_local_ring *lr = file_local;
	struct io_uring_cqe *cqe;
	int ret;

	if (lr->unsubmitted) {
		/* Submit what a failed io_uring_submit() left (the kernel took none of it). */
		ret = io_uring_submit_and_wait(&lr->ring, 1);
		if (ret < 1) {
			usleep(FILE_BUSY_WAIT_US);
			return;         /* the waiter calls again */
		}
		lr->unsubmitted = false;
	}
	ret = io_uring_wait_cqe(&lr->ring, &cqe);
	if (ret < 0)
		return;                 /* -EINTR, -EAGAIN: the waiter calls again */
	do {
		int slot = (int)cqe->user_data;
		struct tc_io *io = lr->slots[slot].io;
		struct file_dev *fdev = lr->slots[slot].fdev;
		int res = cqe->res;

		io_uring_cqe_seen(&lr->ring, cqe);
		lr->slots[slot].io = NULL;
		lr->slots[slot].next = lr->free_slot;
		lr->free_slot = slot;
		lr->in_flight--;
		file_ring_cqe(fdev, io, res);
	} while (io_uring_peek_cqe(&lr->ring, &cqe) == 0);
}

static const struct tc_local_reaper file_local_reaper = {
	.in_flight = file_local_in_flight,
	.reap = file_local_reap,
};

static void file_local_free(void *arg)
{
	struct file_local_ring *lr = arg;

	/* A thread exits only after its waits, which drained the ring. */
	io_uring_queue_exit(&lr->ring);
	free(lr);
}

static void file_local_key_init(void)
{
	if (pthread_key_create(&file_local_key, file_local_free))
		file_local_failed = true;
}

/*
 * This thread's ring, set up on first use.  SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1)
 * say that only this thread touches it, so the kernel posts its completions when the
 * thread waits for them instead of interrupting it; older kernels get a plain ring.
 * NULL when no ring can be had (the shared ring serves then).
 */
static struct file_local_ring *file_local_get(void)
{
	struct file_local_ring *lr;
	int ret;

	if (file_local || file_local_failed)
		return file_local;
	pthread_once(&file_local_once, file_local_key_init);
	lr = file_local_failed ? NULL : calloc(1, sizeof(*lr));
	if (!lr) {
		file_local_failed = true;
		return NULL;
	}
	ret = io_uring_queue_init(FILE_LOCAL_DEPTH, &lr->ring,
				  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	if (ret == -EINVAL)
		ret = io_uring_queue_init(FILE_LOCAL_DEPTH, &lr->ring, 0);
	if (ret < 0 || pthread_setspecific(file_local_key, lr)) {
		if (ret >= 0)
			io_uring_queue_exit(&lr->ring);
		free(lr);
		file_local_failed = true;
		return NULL;
	}
	for (int i = 0; i < FILE_LOCAL_DEPTH; i++)
		lr->slots[i].next = i + 1 < FILE_LOCAL_DEPTH ? i + 1 : -1;
	lr->free_slot = 0;
	file_local = lr;
	tc_thread_set_reaper(&file_local_reaper);
	return lr;
}

/* Queue @io on this thread's ring and submit it.  False when @io must take the shared
 * ring instead: not a read or write, the thread is not about to wait
 * (tc_thread_armed), a completion thread's batch is running, or the ring is full or
 * cannot be had.  A submission the kernel refuses stays queued (liburing has already
 * published the SQE, so it cannot be taken back): the waiter submits it again when it
 * reaps. */
static bool file_local_queue(struct file_dev *fdev, struct tc_io *io)
{
	struct file_local_ring *lr;
	struct io_uring_sqe *sqe;
	int slot, ret;

	if ((io->op != TC_OP_READ && io->op != TC_OP_WRITE) || !tc_thread_armed() ||
	    file_batching)
		return false;
	lr = file_local_get();
	if (!lr || lr->free_slot < 0)
		return false;
	sqe = io_uring_get_sqe(&lr->ring);
	if (!sqe)
		return false;
	file_prep(fdev, io, sqe);
	slot = lr->free_slot;
	io_uring_sqe_set_data64(sqe, (uint64_t)slot);
	while ((ret = io_uring_submit(&lr->ring)) == -EINTR || ret == -EAGAIN ||
	       ret == -EBUSY)
		usleep(FILE_BUSY_WAIT_US);
	if (ret < 1) {
		tc_warn(fdev->dev.ctx, "file %s: io_uring_submit on a thread's ring: %s "
			"(submitted again when the thread waits)", fdev->dev.name,
			strerror(ret < 0 ? -ret : EAGAIN));
		lr->unsubmitted = true;
	}
	lr->free_slot = lr->slots[slot].next;
	lr->slots[slot].io = io;
	lr->slots[slot].fdev = fdev;
	lr->in_flight++;
	return true;
}

static void file_ring_submit_io(struct file_dev *fdev, struct tc_io *io)
{
	io->internal[0] = 0;
	io->internal[1] = 0;
	io->internal[2] = 0;
	io->internal[3] = 0;
	if ((io->op == TC_OP_READ || io->op == TC_OP_WRITE) && file_needs_bounce(fdev, io)) {
		void *bounce;

		if (posix_memalign(&bounce, FILE_ALIGN, io->length)) {
			tc_dev_complete_later(&fdev->dev, io, -ENOMEM);
			return;
		}
		if (io->op == TC_OP_WRITE)
			tc_iov_to_buf(bounce, io->iov, io->iovcnt, 0, io->length);
		io->internal[1] = (uint64_t)(uintptr_t)bounce;
	}
	file_queue(fdev, io);
}

/* ------------------------------------------------------------------------------------
 * Deterministic submit path: synchronous I/O in a context work item.
 */

static int file_sync_rw(struct file_dev *fdev, struct tc_io *io)
{
	int flags = (io->op == TC_OP_WRITE && (io->flags & TC_IO_FUA)) ? RWF_DSYNC : 0;
	uint8_t *bounce = NULL;
	uint64_t done = 0;
	int ret = 0;

	if (file_needs_bounce(fdev, io)) {
		if (posix_memalign((void **)&bounce, FILE_ALIGN, io->length))
			return -ENOMEM;
		if (io->op == TC_OP_WRITE)
			tc_iov_to_buf(bounce, io->iov, io->iovcnt, 0, io->length);
	}
	while (done < io->length) {
		struct iovec one, *tail = NULL;
		const struct iovec *iov = io->iov;
		int cnt = io->iovcnt;
		off_t off = (off_t)(io->offset + done);
		ssize_t n;

		if (bounce) {
			one.iov_base = bounce + done;
			one.iov_len = io->length - done;
			iov = &one;
			cnt = 1;
		} else if (done > 0) {
			tail = file_iov_tail(io, done, &cnt);
			if (!tail) {
				ret = -ENOMEM;
				break;
			}
			iov = tail;
		}
		if (io->op == TC_OP_READ)
			n = preadv2(fdev->fd, iov, cnt, off, 0);
		else
			n = pwritev2(fdev->fd, iov, cnt, off, flags);
		ret = n < 0 ? -errno : 0;
		free(tail);
		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret < 0)
			break;
		if (n == 0) {
			ret = -EIO;
			break;
		}
		done += (uint64_t)n;
	}
	if (ret == 0 && bounce && io->op == TC_OP_READ)
		tc_buf_to_iov(io->iov, io->iovcnt, 0, bounce, io->length);
	free(bounce);
	return ret;
}

static int file_sync_fallocate(struct file_dev *fdev, int mode, const struct tc_io *io)
{
	if (fallocate(fdev->fd, mode, (off_t)io->offset, (off_t)io->length) == 0)
		return 0;
	return -errno;
}

static void file_sync_work(struct tc_work *w)
{
	struct tc_io *io = (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
	struct file_dev *fdev = (struct file_dev *)(uintptr_t)io->internal[3];
	int res = 0;

	switch (io->op) {
	case TC_OP_READ:
	case TC_OP_WRITE:
		res = file_sync_rw(fdev, io);
		break;
	case TC_OP_FLUSH:
		res = fdatasync(fdev->fd) == 0 ? 0 : -errno;
		break;
	case TC_OP_DISCARD:
		res = file_sync_fallocate(fdev, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, io);
		if (res == -EOPNOTSUPP)
			res = 0;
		break;
	case TC_OP_WRITE_ZEROES:
		res = file_sync_fallocate(fdev, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, io);
		res = file_zeroes_finish(fdev, io, res);
		break;
	}
	if (res < 0)
		file_log_error(fdev, io, res);
	tc_dev_complete(&fdev->dev, io, res);
}

static void file_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct file_dev *fdev = (struct file_dev *)dev;
	struct tc_work *w;

	if (fdev->readonly && io->op != TC_OP_READ && io->op != TC_OP_FLUSH) {
		tc_err(dev->ctx, "file %s: opened read-only, refusing op %u at %" PRIu64,
		       dev->name, io->op, io->offset);
		tc_dev_complete_later(dev, io, -EROFS);
		return;
	}
	if (fdev->threaded) {
		file_ring_submit_io(fdev, io);
		return;
	}
	w = (struct tc_work *)(void *)io->internal;
	io->internal[3] = (uint64_t)(uintptr_t)fdev;
	w->fn = file_sync_work;
	tc_ctx_defer(dev->ctx, w);
}

/* ------------------------------------------------------------------------------------
 * Close.
 */

static void file_stop_ring(struct file_dev *fdev)
{
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&fdev->sq_lock);
	sqe = file_get_sqe(fdev);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, file_stop_marker(fdev));
	atomic_fetch_add_explicit(&fdev->n_queued, 1, memory_order_release);
	file_ring_submit(fdev);
	pthread_mutex_unlock(&fdev->sq_lock);
	pthread_join(fdev->cq_thread, NULL);
	pthread_mutex_destroy(&fdev->sq_lock);
	io_uring_queue_exit(&fdev->ring);
}

static void file_close(struct tc_dev *dev)
{
	struct file_dev *fdev = (struct file_dev *)dev;

	if (fdev->threaded)
		file_stop_ring(fdev);
	close(fdev->fd);
	tc_dev_fini(dev);
	free(fdev);
}

static const struct tc_dev_ops file_ops = {
	.name = "file",
	.submit = file_submit,
	.close = file_close,
};
