/* SPDX-License-Identifier: MIT */
/*
 * nbd.c - a device on an NBD export, through libnbd: any NBD server (nbdkit, qemu-nbd,
 * nbd-server, another tiercache) as a backing, a far-away disk for a local cache.
 *
 * Threaded contexts: one libnbd handle and one I/O thread per device.  Submitters (any
 * thread) issue asynchronous commands on the handle (libnbd's handle lock makes that
 * safe) and kick the I/O thread through an eventfd; the I/O thread polls the socket in
 * the direction libnbd asks for and lets libnbd read the replies, whose completion
 * callbacks complete the requests on that thread (as file.c's completion thread does).
 * Deterministic contexts: no thread; each request runs synchronously in a context work
 * item, so the seed alone orders what completes when.
 *
 * A request becomes one NBD command per iovec element, each split at the server's
 * maximum block size, all in flight at once; the request completes when the last does
 * (io->internal[0] counts them, internal[1] keeps the first error; both are ours until
 * completion).  A command's count goes in its callback's free function, which libnbd
 * calls exactly once for every command it was handed: one that ran, one aborted when
 * the connection died, and one the aio call refused.  (Counting in the completion
 * callback and dropping the count of a refused command went wrong when the send
 * inside the aio call failed: libnbd then both aborted the command, calling its
 * callback, and returned -1, so the count went twice and the request never completed;
 * test_dev_nbd's connection-loss case hung in clean-clone runs.)  What the server lacks is done here: FUA as write + FLUSH, write-zeroes
 * as writes of zeros, discard as nothing (a hint); a read-only export refuses writes
 * with -EROFS.  The device's identity is its URI: there is no file to lock, so
 * TC_DEV_EXCLUSIVE cannot be enforced here (the server may be shared).
 *
 * When the connection dies, every command in flight and every later request fails
 * with -EIO, and watchers are told TC_DEV_FAILED once.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dev.h"

#ifdef TC_HAVE_LIBNBD
#include <libnbd.h>

#define NBD_MAX_CMD (32u << 20)   /* bytes per command at most, whatever the server says */
#define NBD_ZERO_BUF (1u << 20)   /* the zeros written where the server cannot zero */

struct nbd_dev {
	struct tc_dev dev;          /* first: tc_dev * and nbd_dev * convert */
	struct nbd_handle *h;
	bool threaded;
	bool can_fua, can_flush, can_trim, can_zero, readonly;
	uint32_t max_cmd;           /* bytes per command */
	int kick;                   /* eventfd: a command was queued, or stop */
	pthread_t thread;
	atomic_bool stop, dead;
	void *zeros;                /* NBD_ZERO_BUF bytes, when the server cannot zero */
	pthread_mutex_t done_lock;
	struct tc_io *done;         /* requests whose commands completed, to finish */
};

static const struct tc_dev_ops nbd_ops;

/* An errno from libnbd as the device reports it: a connection that is gone (commands
 * stranded with ENOTCONN, a reset, a broken pipe) is an I/O error to the layers above,
 * like a disk that went away. */
static int nbd_errno(int e)
{
	if (e <= 0 || e == ENOTCONN || e == ESHUTDOWN || e == ECONNRESET || e == EPIPE)
		return -EIO;
	return -e;
}

/* The error libnbd reports for the last failed call of this thread, as -errno. */
static int nbd_last_errno(void)
{
	return nbd_errno(nbd_get_errno());
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

static int nbd_query(struct nbd_dev *ndev, const char *uri)
{
	tc_ctx *ctx = ndev->dev.ctx;
	int64_t size = nbd_get_size(ndev->h);

	if (size <= 0 || size % TC_UNIT_SIZE) {
		tc_err(ctx, "nbd %s: export size %" PRId64 " is not a non-zero multiple of %u",
		       uri, size, TC_UNIT_SIZE);
		return -EINVAL;
	}
	ndev->dev.size = (uint64_t)size;
	ndev->readonly = nbd_is_read_only(ndev->h) == 1;
	ndev->can_fua = nbd_can_fua(ndev->h) == 1;
	ndev->can_flush = nbd_can_flush(ndev->h) == 1;
	ndev->can_trim = nbd_can_trim(ndev->h) == 1;
	ndev->can_zero = nbd_can_zero(ndev->h) == 1;

	int64_t bmin = nbd_get_block_size(ndev->h, LIBNBD_SIZE_MINIMUM);
	int64_t bpref = nbd_get_block_size(ndev->h, LIBNBD_SIZE_PREFERRED);
	int64_t bmax = nbd_get_block_size(ndev->h, LIBNBD_SIZE_MAXIMUM);
	if (bmin > TC_SECTOR_SIZE) {
		tc_err(ctx, "nbd %s: the server's minimum block size %" PRId64 " is above %u "
		       "bytes, which tiercache's requests may be", uri, bmin, TC_SECTOR_SIZE);
		return -EINVAL;
	}
	ndev->max_cmd = bmax >= TC_UNIT_SIZE && bmax < NBD_MAX_CMD ?
			(uint32_t)(bmax & ~(int64_t)(TC_UNIT_SIZE - 1)) : NBD_MAX_CMD;
	struct tc_dev_limits l = { .io_min = TC_SECTOR_SIZE };
	if (bpref > 0 && bpref <= NBD_MAX_CMD && !(bpref & (bpref - 1)))
		l.io_opt = (uint32_t)bpref;
	tc_dev_set_limits(&ndev->dev, &l);
	if (!ndev->can_zero && !ndev->readonly) {
		ndev->zeros = calloc(1, NBD_ZERO_BUF);
		if (!ndev->zeros)
			return -ENOMEM;
	}
	return 0;
}

static void *nbd_thread_main(void *arg);

int tc_dev_open_nbd(tc_ctx *ctx, const char *uri, unsigned flags, tc_dev **out)
{
	struct nbd_dev *ndev;
	int ret;

	*out = NULL;
	if (!uri || !*uri) {
		tc_err(ctx, "nbd device: empty URI");
		return -EINVAL;
	}
	ndev = calloc(1, sizeof(*ndev));
	if (!ndev)
		return -ENOMEM;
	ndev->kick = -1;
	pthread_mutex_init(&ndev->done_lock, NULL);
	ret = tc_dev_init(&ndev->dev, &nbd_ops, ctx, uri, 0, TC_SECTOR_SIZE);
	if (ret < 0) {
		free(ndev);
		return ret;
	}
	ndev->h = nbd_create();
	if (!ndev->h) {
		ret = nbd_last_errno();
		tc_err(ctx, "nbd %s: %s", uri, nbd_get_error());
		goto fail;
	}
	nbd_set_handle_name(ndev->h, "tiercache");
	if (nbd_connect_uri(ndev->h, uri) < 0) {
		ret = nbd_last_errno();
		tc_err(ctx, "nbd %s: cannot connect: %s", uri, nbd_get_error());
		goto fail;
	}
	ret = nbd_query(ndev, uri);
	if (ret < 0)
		goto fail;
	if (ndev->readonly && !(flags & TC_DEV_READONLY))
		tc_info(ctx, "nbd %s: the export is read-only", uri);
	if (flags & TC_DEV_READONLY)
		ndev->readonly = true;
	ndev->threaded = !tc_ctx_deterministic(ctx);
	if (ndev->threaded) {
		ndev->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ndev->kick < 0) {
			ret = -errno;
			tc_err(ctx, "nbd %s: eventfd: %s", uri, strerror(errno));
			goto fail;
		}
		ret = -pthread_create(&ndev->thread, NULL, nbd_thread_main, ndev);
		if (ret < 0) {
			tc_err(ctx, "nbd %s: cannot start its I/O thread: %s", uri, strerror(-ret));
			goto fail;
		}
	}
	*out = &ndev->dev;
	return 0;

fail:
	if (ndev->kick >= 0)
		close(ndev->kick);
	nbd_close(ndev->h);
	free(ndev->zeros);
	tc_dev_fini(&ndev->dev);
	pthread_mutex_destroy(&ndev->done_lock);
	free(ndev);
	return ret;
}

/* ------------------------------------------------------------------------------------
 * Threaded path: asynchronous commands, the I/O thread, completions.
 */

static void nbd_kick(struct nbd_dev *ndev)
{
	uint64_t one = 1;
	if (write(ndev->kick, &one, sizeof(one)) < 0 && errno != EAGAIN)
		tc_warn(ndev->dev.ctx, "nbd %s: cannot wake the I/O thread: %s", ndev->dev.name,
			strerror(errno));
}

/* The connection is over: libnbd's handle is dead (an error) or closed (the server
 * hung up). */
static bool nbd_gone(struct nbd_dev *ndev)
{
	return nbd_aio_is_dead(ndev->h) == 1 || nbd_aio_is_closed(ndev->h) == 1;
}

static void nbd_mark_dead(struct nbd_dev *ndev)
{
	if (!atomic_exchange(&ndev->dead, true)) {
		tc_err(ndev->dev.ctx, "nbd %s: connection lost: %s", ndev->dev.name,
		       nbd_get_error() ? nbd_get_error() : "closed by the server");
		tc_dev_event(&ndev->dev, TC_DEV_FAILED, 0);
	}
}

static void nbd_drain(struct nbd_dev *ndev);

/* The I/O thread's longest wait, ms: an idle device wakes 5 times a second. */
#define NBD_POLL_MS 200

static void *nbd_thread_main(void *arg)
{
	struct nbd_dev *ndev = arg;
	int fd = nbd_aio_get_fd(ndev->h);

	while (!atomic_load(&ndev->stop)) {
		struct pollfd p[2] = { { .fd = ndev->kick, .events = POLLIN } };
		/* The handle can die inside a submitter's nbd_aio_* call (the send fails
		 * there), and a dead handle has no direction to poll: look before waiting. */
		if (!atomic_load(&ndev->dead) && nbd_gone(ndev))
			nbd_mark_dead(ndev);
		unsigned dir = atomic_load(&ndev->dead) ? 0 : nbd_aio_get_direction(ndev->h);
		nfds_t n = 1;

		if (dir && fd >= 0) {
			p[1].fd = fd;
			p[1].events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
					      (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0));
			n = 2;
		}
		/* Bounded: each turn looks at the handle's state again, so a death or a
		 * change of direction that no kick or event announced (a hang seen once in
		 * test_connection_lost, cause not found) costs at most this long. */
		if (poll(p, n, NBD_POLL_MS) < 0) {
			if (errno == EINTR)
				continue;
			tc_err(ndev->dev.ctx, "nbd %s: poll: %s", ndev->dev.name, strerror(errno));
			break;
		}
		if (p[0].revents & POLLIN) {
			uint64_t v;
			if (read(ndev->kick, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		if (n == 2 && p[1].revents) {
			int r = 0;
			if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
				r = nbd_aio_notify_read(ndev->h);
			else if (p[1].revents & POLLOUT)
				r = nbd_aio_notify_write(ndev->h);
			if (r < 0 || nbd_gone(ndev))
				nbd_mark_dead(ndev);
		}
		nbd_drain(ndev);
	}
	nbd_drain(ndev);
	return NULL;
}

/* Set in io->internal[0] while the FLUSH that completes an emulated FUA write is in
 * flight (the low bits count as before). */
#define NBD_FLUSH_PHASE (1ull << 63)

/* libnbd calls completion callbacks with the handle's lock held, where no libnbd call
 * on the handle is allowed; whoever gets the request on, the engine, would make one.
 * So callbacks only count and queue; the I/O thread completes the requests after
 * libnbd has returned (nbd_drain). */
static void nbd_queue_done(struct nbd_dev *ndev, struct tc_io *io)
{
	pthread_mutex_lock(&ndev->done_lock);
	io->internal[3] = (uint64_t)(uintptr_t)ndev->done;
	ndev->done = io;
	pthread_mutex_unlock(&ndev->done_lock);
}

static void nbd_set_error(struct tc_io *io, int err)
{
	int64_t want = 0;
	__atomic_compare_exchange_n((int64_t *)&io->internal[1], &want, (int64_t)err, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* A command of @io completed with *@error (an errno, 0 on success). */
static int nbd_cmd_done(void *opaque, int *error)
{
	struct tc_io *io = opaque;

	if (*error)
		nbd_set_error(io, nbd_errno(*error));
	return 1;   /* retire the command */
}

/* libnbd is done with a command of @io (after its callback, if that ran): its count
 * goes; the last one queues @io for completion. */
static void nbd_cmd_free(void *opaque)
{
	struct tc_io *io = opaque;
	struct nbd_dev *ndev = (struct nbd_dev *)(uintptr_t)io->internal[2];

	if ((__atomic_sub_fetch(&io->internal[0], 1, __ATOMIC_ACQ_REL) & ~NBD_FLUSH_PHASE) == 0)
		nbd_queue_done(ndev, io);
}

/* Every command of @io is done: complete it (@later: through the context, when called
 * from inside submit), or first send the FLUSH that makes an emulated FUA durable. */
static void nbd_finish(struct nbd_dev *ndev, struct tc_io *io, bool later)
{
	int res = (int)__atomic_load_n((int64_t *)&io->internal[1], __ATOMIC_ACQUIRE);

	if (!(__atomic_load_n(&io->internal[0], __ATOMIC_ACQUIRE) & NBD_FLUSH_PHASE) &&
	    res == 0 && (io->flags & TC_IO_FUA) &&
	    !ndev->can_fua && ndev->can_flush &&
	    (io->op == TC_OP_WRITE || io->op == TC_OP_WRITE_ZEROES)) {
		nbd_completion_callback cb = { .callback = nbd_cmd_done, .user_data = io,
					       .free = nbd_cmd_free };
		/* One count for the FLUSH (its free), one held here meanwhile. */
		__atomic_store_n(&io->internal[0], NBD_FLUSH_PHASE | 2, __ATOMIC_RELEASE);
		if (nbd_aio_flush(ndev->h, cb, 0) < 0)
			nbd_set_error(io, nbd_last_errno());
		nbd_kick(ndev);
		if ((__atomic_sub_fetch(&io->internal[0], 1, __ATOMIC_ACQ_REL) &
		     ~NBD_FLUSH_PHASE) != 0)
			return;
		res = (int)__atomic_load_n((int64_t *)&io->internal[1], __ATOMIC_ACQUIRE);
	}
	if (res < 0)
		tc_err(ndev->dev.ctx, "nbd %s: op %u at %" PRIu64 " length %" PRIu64 ": %s",
		       ndev->dev.name, io->op, io->offset, io->length, strerror(-res));
	if (later)
		tc_dev_complete_later(&ndev->dev, io, res);
	else
		tc_dev_complete(&ndev->dev, io, res);
}

/* I/O thread: complete what the callbacks queued, outside libnbd's lock. */
static void nbd_drain(struct nbd_dev *ndev)
{
	pthread_mutex_lock(&ndev->done_lock);
	struct tc_io *io = ndev->done;
	ndev->done = NULL;
	pthread_mutex_unlock(&ndev->done_lock);
	while (io) {
		struct tc_io *next = (struct tc_io *)(uintptr_t)io->internal[3];
		nbd_finish(ndev, io, false);
		io = next;
	}
}

/* Issue one command of @io over [@off, @off + @len), from @buf where it carries data.
 * Returns 0 or -errno (the command was not queued). */
static int nbd_issue(struct nbd_dev *ndev, struct tc_io *io, void *buf, uint64_t len,
		     uint64_t off)
{
	nbd_completion_callback cb = { .callback = nbd_cmd_done, .user_data = io,
				       .free = nbd_cmd_free };
	uint32_t fua = (io->flags & TC_IO_FUA) && ndev->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
	int64_t r = -1;

	switch (io->op) {
	case TC_OP_READ:
		r = nbd_aio_pread(ndev->h, buf, len, off, cb, 0);
		break;
	case TC_OP_WRITE:
		r = nbd_aio_pwrite(ndev->h, buf, len, off, cb, fua);
		break;
	case TC_OP_WRITE_ZEROES:
		r = ndev->can_zero ? nbd_aio_zero(ndev->h, len, off, cb, fua) :
		    nbd_aio_pwrite(ndev->h, ndev->zeros, len, off, cb, fua);
		break;
	case TC_OP_DISCARD:
		r = nbd_aio_trim(ndev->h, len, off, cb, 0);
		break;
	case TC_OP_FLUSH:
		r = nbd_aio_flush(ndev->h, cb, 0);
		break;
	}
	if (r >= 0)
		return 0;
	if (nbd_gone(ndev)) {
		nbd_mark_dead(ndev);    /* libnbd says EINVAL (wrong state): the link is gone */
		return -EIO;
	}
	return nbd_last_errno();
}

/* The pieces of @io: one per iovec element for reads and writes, else the whole range
 * (a FLUSH is one piece), each cut at max_cmd (NBD_ZERO_BUF for emulated
 * write-zeroes).  Calls @fn (when not NULL) for each and counts them in *@count;
 * stops at the first error of @fn and returns it. */
static int nbd_pieces(struct nbd_dev *ndev, struct tc_io *io,
		      int (*fn)(struct nbd_dev *, struct tc_io *, void *, uint64_t, uint64_t),
		      uint64_t *count)
{
	bool data = io->op == TC_OP_READ || io->op == TC_OP_WRITE;
	uint64_t step = io->op == TC_OP_WRITE_ZEROES && !ndev->can_zero ? NBD_ZERO_BUF :
			ndev->max_cmd;
	uint64_t off = io->offset;
	int nseg = data ? io->iovcnt : 1;

	*count = 0;
	if (io->op == TC_OP_FLUSH) {
		*count = 1;
		return fn ? fn(ndev, io, NULL, 0, 0) : 0;
	}
	for (int i = 0; i < nseg; i++) {
		uint8_t *base = data ? io->iov[i].iov_base : NULL;
		uint64_t len = data ? io->iov[i].iov_len : io->length;
		for (uint64_t done = 0; done < len;) {
			uint64_t n = len - done < step ? len - done : step;
			if (fn) {
				int r = fn(ndev, io, base ? base + done : NULL, n, off);
				if (r < 0)
					return r;
			}
			(*count)++;
			done += n;
			off += n;
		}
	}
	return 0;
}

static void nbd_submit_async(struct nbd_dev *ndev, struct tc_io *io)
{
	uint64_t count, issued;

	nbd_pieces(ndev, io, NULL, &count);
	/* One count more than commands, held while issuing, so that no completion
	 * finishes @io before every command is queued. */
	io->internal[0] = count + 1;
	io->internal[1] = 0;
	io->internal[2] = (uint64_t)(uintptr_t)ndev;
	int r = nbd_pieces(ndev, io, nbd_issue, &issued);
	if (r < 0) {
		nbd_set_error(io, r);
		/* The command refused gave its count back through its free; the ones after
		 * it were never handed to libnbd: drop their counts. */
		__atomic_sub_fetch(&io->internal[0], count - issued - 1, __ATOMIC_ACQ_REL);
	}
	nbd_kick(ndev);
	if (__atomic_sub_fetch(&io->internal[0], 1, __ATOMIC_ACQ_REL) == 0)
		nbd_finish(ndev, io, true);
}

/* ------------------------------------------------------------------------------------
 * Deterministic path: synchronous commands in a context work item.
 */

static int nbd_sync_piece(struct nbd_dev *ndev, struct tc_io *io, void *buf, uint64_t len,
			  uint64_t off)
{
	uint32_t fua = (io->flags & TC_IO_FUA) && ndev->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
	int r = -1;

	switch (io->op) {
	case TC_OP_READ:
		r = nbd_pread(ndev->h, buf, len, off, 0);
		break;
	case TC_OP_WRITE:
		r = nbd_pwrite(ndev->h, buf, len, off, fua);
		break;
	case TC_OP_WRITE_ZEROES:
		r = ndev->can_zero ? nbd_zero(ndev->h, len, off, fua) :
		    nbd_pwrite(ndev->h, ndev->zeros, len, off, fua);
		break;
	case TC_OP_DISCARD:
		r = nbd_trim(ndev->h, len, off, 0);
		break;
	}
	if (r >= 0)
		return 0;
	if (nbd_gone(ndev)) {
		nbd_mark_dead(ndev);
		return -EIO;
	}
	return nbd_last_errno();
}

static void nbd_sync_work(struct tc_work *w)
{
	struct tc_io *io = (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
	struct nbd_dev *ndev = (struct nbd_dev *)(uintptr_t)io->internal[3];
	uint64_t n;
	int res;

	if (io->op == TC_OP_FLUSH) {
		res = nbd_flush(ndev->h, 0) < 0 ? nbd_last_errno() : 0;
	} else {
		res = nbd_pieces(ndev, io, nbd_sync_piece, &n);
		if (res == 0 && (io->flags & TC_IO_FUA) && !ndev->can_fua && ndev->can_flush &&
		    io->op != TC_OP_READ && io->op != TC_OP_DISCARD)
			res = nbd_flush(ndev->h, 0) < 0 ? nbd_last_errno() : 0;
	}
	if (res < 0) {
		tc_err(ndev->dev.ctx, "nbd %s: op %u at %" PRIu64 " length %" PRIu64 ": %s",
		       ndev->dev.name, io->op, io->offset, io->length, strerror(-res));
	}
	tc_dev_complete(&ndev->dev, io, res);
}

/* ------------------------------------------------------------------------------------
 * Submit and close.
 */

static void nbd_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct nbd_dev *ndev = (struct nbd_dev *)dev;

	if (ndev->readonly && io->op != TC_OP_READ && io->op != TC_OP_FLUSH) {
		tc_err(dev->ctx, "nbd %s: read-only, refusing op %u at %" PRIu64, dev->name,
		       io->op, io->offset);
		tc_dev_complete_later(dev, io, -EROFS);
		return;
	}
	if ((io->op == TC_OP_FLUSH && !ndev->can_flush) ||
	    (io->op == TC_OP_DISCARD && !ndev->can_trim)) {
		tc_dev_complete_later(dev, io, 0);   /* nothing to do on this server */
		return;
	}
	if (atomic_load(&ndev->dead)) {
		tc_dev_complete_later(dev, io, -EIO);
		return;
	}
	if (ndev->threaded) {
		nbd_submit_async(ndev, io);
		return;
	}
	struct tc_work *w = (struct tc_work *)(void *)io->internal;
	io->internal[3] = (uint64_t)(uintptr_t)ndev;
	w->fn = nbd_sync_work;
	tc_ctx_defer(dev->ctx, w);
}

static void nbd_close_dev(struct tc_dev *dev)
{
	struct nbd_dev *ndev = (struct nbd_dev *)dev;

	if (ndev->threaded) {
		atomic_store(&ndev->stop, true);
		nbd_kick(ndev);
		pthread_join(ndev->thread, NULL);
		close(ndev->kick);
	}
	if (!atomic_load(&ndev->dead))
		nbd_shutdown(ndev->h, 0);
	nbd_close(ndev->h);
	free(ndev->zeros);
	tc_dev_fini(dev);
	pthread_mutex_destroy(&ndev->done_lock);
	free(ndev);
}

static const struct tc_dev_ops nbd_ops = {
	.name = "nbd",
	.submit = nbd_submit,
	.close = nbd_close_dev,
};

#else /* !TC_HAVE_LIBNBD */

int tc_dev_open_nbd(tc_ctx *ctx, const char *uri, unsigned flags, tc_dev **out)
{
	*out = NULL;
	tc_err(ctx, "nbd %s: this libtiercache was built without libnbd", uri ? uri : "");
	return -ENOTSUP;
}

#endif
