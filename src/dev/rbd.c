/* SPDX-License-Identifier: MIT */
/*
 * rbd.c - a device on a Ceph RBD image, through librbd's asynchronous API: a
 * distributed block store as the slow tier behind a local cache (docs/remote.md).
 *
 * Spec "rbd:POOL/IMAGE[@CONF]": CONF is a ceph.conf path (else librados's own search:
 * $CEPH_CONF, /etc/ceph/ceph.conf, ...); the client name, keyring and any other option
 * come from $CEPH_ARGS (e.g. CEPH_ARGS="--id tiercache"), as for Ceph's own tools.
 *
 * librbd's RAM cache is turned off (rbd_cache = false): behind tiercache it would only
 * add a second volatile write-back, and with it off a completed rbd_aio_flush means the
 * data is in the cluster.  FLUSH is rbd_aio_flush; FUA is the write, then a flush;
 * write-zeroes is rbd_aio_write_zeroes (discard on RBD is advisory: with librbd's
 * defaults an unaligned discard inside an object leaves the data in place), discard is
 * rbd_aio_discard.  Operations time out (rados_osd_op_timeout, 30 s unless the
 * configuration sets one), so a cluster that is gone fails requests instead of
 * hanging them.
 *
 * Threaded contexts: librbd completes requests on its own threads; it queues the
 * completions on the image and writes an eventfd (rbd_set_image_notification), and
 * this device's completion thread collects them (rbd_poll_io_events) and completes
 * the requests, outside librbd's threads (as nbd.c does with libnbd's callbacks).
 * Deterministic contexts: each request is issued and waited for in a context work
 * item, so the seed alone orders completions.
 *
 * One writer: with TC_DEV_EXCLUSIVE and writable, the device takes the image's
 * exclusive lock (rbd_lock_acquire, RBD_LOCK_MODE_EXCLUSIVE: librbd then refuses to
 * hand it to another client while this one lives) and fails with -EBUSY naming the
 * lock's owner when another client holds it.  A cache holding the image's dirty data
 * records that on the image (image metadata "tiercache.dirty" = "CACHE-UUID@HOST",
 * tc_dev_set_dirty_owner), which survives the holder's crash; the volume layer reads it
 * back (tc_dev_dirty_owner) and refuses other openers.
 *
 * Identity: "rbd:FSID/POOL/IMAGE-ID" (the cluster's fsid and the image's id, which a
 * rename keeps), in tc_dev_remote_id.
 *
 * io->internal[]: [0] the phase (RBD_PHASE_*), [1] the device, [2] the first error.
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

#ifdef TC_HAVE_LIBRBD
#include <rados/librados.h>
#include <rbd/librbd.h>

#define RBD_DIRTY_KEY "tiercache.dirty"
#define RBD_OP_TIMEOUT "30"     /* seconds, when the configuration sets none */
#define RBD_POLL_BATCH 64

enum { RBD_PHASE_MAIN = 0, RBD_PHASE_FUA_FLUSH = 1 };

struct rbd_dev {
	struct tc_dev dev;          /* first: tc_dev * and rbd_dev * convert */
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t image;
	bool threaded, readonly, locked;
	int efd;                    /* librbd's completion eventfd; also our stop kick */
	pthread_t thread;
	atomic_bool stop, dead;
	_Atomic uint64_t inflight;  /* requests issued and not yet completed */
	char id[160];               /* "rbd:FSID/POOL/IMAGE-ID" */
	char owner[256];            /* RBD_DIRTY_KEY's value at open, "" when absent */
	pthread_mutex_t meta_lock;  /* RBD_DIRTY_KEY writes */
};

static const struct tc_dev_ops rbd_ops;

/* Errors that mean the cluster is out of reach or has fenced this client off: the
 * device has failed (an error on one request, -EINVAL say, has not). */
static bool rbd_fatal(int r)
{
	return r == -ETIMEDOUT || r == -ESHUTDOWN /* EBLOCKLISTED */ || r == -ENOTCONN ||
	       r == -ECONNREFUSED;
}

static void rbd_mark_dead(struct rbd_dev *rdev, int r)
{
	if (!atomic_exchange(&rdev->dead, true)) {
		tc_err(rdev->dev.ctx, "rbd %s: cluster lost (%s): failing every request",
		       rdev->dev.name, strerror(-r));
		tc_dev_event(&rdev->dev, TC_DEV_FAILED, 0);
	}
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

/* "POOL/IMAGE[@CONF]" into its parts (malloc'ed, *@conf NULL when absent). */
static int rbd_spec_split(tc_ctx *ctx, const char *spec, char **pool, char **image,
			  char **conf)
{
	/* Pool and image names hold no '@' (RBD's snapshot separator); the path may. */
	const char *at = strchr(spec, '@');
	size_t head = at ? (size_t)(at - spec) : strlen(spec);
	const char *slash = memchr(spec, '/', head);
	size_t ilen = slash ? head - (size_t)(slash - spec) - 1 : 0;

	*pool = *image = *conf = NULL;
	if (!slash || slash == spec || !ilen || memchr(slash + 1, '/', ilen) ||
	    (at && !at[1])) {
		tc_err(ctx, "rbd %s: expected rbd:POOL/IMAGE or rbd:POOL/IMAGE@CONF", spec);
		return -EINVAL;
	}
	*pool = strndup(spec, (size_t)(slash - spec));
	*image = strndup(slash + 1, ilen);
	*conf = at ? strdup(at + 1) : NULL;
	if (!*pool || !*image || (at && !*conf)) {
		free(*pool);
		free(*image);
		free(*conf);
		return -ENOMEM;
	}
	return 0;
}

static int rbd_connect(struct rbd_dev *rdev, const char *pool, const char *image,
		       const char *conf, bool readonly)
{
	tc_ctx *ctx = rdev->dev.ctx;
	const char *name = rdev->dev.name;
	char val[32];
	int r;

	if ((r = rados_create(&rdev->cluster, NULL)) < 0) {
		tc_err(ctx, "rbd %s: rados_create: %s", name, strerror(-r));
		return r;
	}
	r = rados_conf_read_file(rdev->cluster, conf);
	if (r < 0) {
		tc_err(ctx, "rbd %s: cannot read the Ceph configuration %s: %s", name,
		       conf ? conf : "(the default search path)", strerror(-r));
		return r;
	}
	if ((r = rados_conf_parse_env(rdev->cluster, NULL)) < 0) {
		tc_err(ctx, "rbd %s: $CEPH_ARGS: %s", name, strerror(-r));
		return r;
	}
	/* Behind a cache: librbd's own RAM cache off, so its flush reaches the OSDs. */
	if ((r = rados_conf_set(rdev->cluster, "rbd_cache", "false")) < 0) {
		tc_err(ctx, "rbd %s: cannot turn librbd's cache off: %s", name, strerror(-r));
		return r;
	}
	static const char *const timeouts[] = { "rados_osd_op_timeout", "rados_mon_op_timeout" };
	for (unsigned i = 0; i < 2; i++)
		if (rados_conf_get(rdev->cluster, timeouts[i], val, sizeof(val)) == 0 &&
		    (!strcmp(val, "0") || !strcmp(val, "0.000000")))
			rados_conf_set(rdev->cluster, timeouts[i], RBD_OP_TIMEOUT);
	if ((r = rados_connect(rdev->cluster)) < 0) {
		tc_err(ctx, "rbd %s: cannot connect to the cluster: %s", name, strerror(-r));
		return r;
	}
	if ((r = rados_ioctx_create(rdev->cluster, pool, &rdev->ioctx)) < 0) {
		tc_err(ctx, "rbd %s: pool \"%s\": %s", name, pool, strerror(-r));
		rdev->ioctx = NULL;
		return r;
	}
	r = readonly ? rbd_open_read_only(rdev->ioctx, image, &rdev->image, NULL) :
	    rbd_open(rdev->ioctx, image, &rdev->image, NULL);
	if (r < 0) {
		tc_err(ctx, "rbd %s: image \"%s\" in pool \"%s\": %s", name, image, pool,
		       strerror(-r));
		rdev->image = NULL;
		return r;
	}
	char fsid[64] = "", iid[64] = "";
	rados_cluster_fsid(rdev->cluster, fsid, sizeof(fsid));
	rbd_get_id(rdev->image, iid, sizeof(iid));
	snprintf(rdev->id, sizeof(rdev->id), "rbd:%s/%s/%s", fsid, pool, iid);
	return 0;
}

/* The owners of the image's exclusive lock, joined by ", " into @buf. */
static void rbd_lock_owners(struct rbd_dev *rdev, char *buf, size_t len)
{
	char *owners[8];
	size_t n = 8;
	rbd_lock_mode_t mode;

	snprintf(buf, len, "another client");
	if (rbd_lock_get_owners(rdev->image, &mode, owners, &n) < 0 || !n)
		return;
	size_t used = 0;
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 owners[i]);
	rbd_lock_get_owners_cleanup(owners, n);
}

static int rbd_take_lock(struct rbd_dev *rdev)
{
	uint64_t features = 0;
	char who[256];

	rbd_get_features(rdev->image, &features);
	if (!(features & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		tc_err(rdev->dev.ctx, "rbd %s: the image lacks the exclusive-lock feature, so "
		       "a second writer cannot be fenced off (`rbd feature enable %s "
		       "exclusive-lock`)", rdev->dev.name, rdev->dev.name + 4);
		return -EINVAL;
	}
	int r = rbd_lock_acquire(rdev->image, RBD_LOCK_MODE_EXCLUSIVE);
	if (r < 0) {
		rbd_lock_owners(rdev, who, sizeof(who));
		tc_err(rdev->dev.ctx, "rbd %s: the image's exclusive lock is held by %s (%s): "
		       "another server or client is using it", rdev->dev.name, who,
		       strerror(-r));
		return r == -EROFS || r == -EBUSY || r == -EAGAIN ? -EBUSY : r;
	}
	rdev->locked = true;
	return 0;
}

static void *rbd_thread_main(void *arg);

static void rbd_free(struct rbd_dev *rdev)
{
	if (rdev->image) {
		if (rdev->locked && !atomic_load(&rdev->dead))
			rbd_lock_release(rdev->image);
		rbd_close(rdev->image);
	}
	if (rdev->ioctx)
		rados_ioctx_destroy(rdev->ioctx);
	if (rdev->cluster)
		rados_shutdown(rdev->cluster);
	if (rdev->efd >= 0)
		close(rdev->efd);
	pthread_mutex_destroy(&rdev->meta_lock);
	tc_dev_fini(&rdev->dev);
	free(rdev);
}

int tc_dev_open_rbd(tc_ctx *ctx, const char *spec, unsigned flags, tc_dev **out)
{
	struct rbd_dev *rdev;
	char *pool, *image, *conf;
	char label[512];
	int r;

	*out = NULL;
	if (!spec || !*spec) {
		tc_err(ctx, "rbd device: empty spec");
		return -EINVAL;
	}
	if ((r = rbd_spec_split(ctx, spec, &pool, &image, &conf)) < 0)
		return r;
	rdev = calloc(1, sizeof(*rdev));
	if (!rdev) {
		r = -ENOMEM;
		goto out;
	}
	rdev->efd = -1;
	pthread_mutex_init(&rdev->meta_lock, NULL);
	snprintf(label, sizeof(label), "rbd:%s/%s", pool, image);
	if ((r = tc_dev_init(&rdev->dev, &rbd_ops, ctx, label, 0, TC_SECTOR_SIZE)) < 0) {
		pthread_mutex_destroy(&rdev->meta_lock);
		free(rdev);
		goto out;
	}
	rdev->readonly = flags & TC_DEV_READONLY;
	if ((r = rbd_connect(rdev, pool, image, conf, rdev->readonly)) < 0)
		goto fail;

	uint64_t size = 0, obj = 0;
	rbd_get_size(rdev->image, &size);
	if (!size || size % TC_UNIT_SIZE) {
		tc_err(ctx, "rbd %s: image size %" PRIu64 " is not a non-zero multiple of %u",
		       label, size, TC_UNIT_SIZE);
		r = -EINVAL;
		goto fail;
	}
	rdev->dev.size = size;
	/* An RBD object is the unit a write is placed by; tiercache's writeback prefers
	 * it (up to the largest io_opt the layers above use). */
	struct tc_dev_limits l = { .io_min = TC_SECTOR_SIZE };
	if (rbd_get_stripe_unit(rdev->image, &obj) == 0 && obj && !(obj & (obj - 1)) &&
	    obj <= (32u << 20))
		l.io_opt = (uint32_t)obj;
	tc_dev_set_limits(&rdev->dev, &l);

	size_t vlen = sizeof(rdev->owner);
	if (rbd_metadata_get(rdev->image, RBD_DIRTY_KEY, rdev->owner, &vlen) < 0)
		rdev->owner[0] = 0;
	if ((flags & TC_DEV_EXCLUSIVE) && !rdev->readonly && (r = rbd_take_lock(rdev)) < 0)
		goto fail;

	rdev->threaded = !tc_ctx_deterministic(ctx);
	if (rdev->threaded) {
		rdev->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rdev->efd < 0) {
			r = -errno;
			tc_err(ctx, "rbd %s: eventfd: %s", label, strerror(errno));
			goto fail;
		}
		if ((r = rbd_set_image_notification(rdev->image, rdev->efd,
						    EVENT_TYPE_EVENTFD)) < 0) {
			tc_err(ctx, "rbd %s: rbd_set_image_notification: %s", label,
			       strerror(-r));
			goto fail;
		}
		if ((r = -pthread_create(&rdev->thread, NULL, rbd_thread_main, rdev)) < 0) {
			tc_err(ctx, "rbd %s: cannot start its completion thread: %s", label,
			       strerror(-r));
			goto fail;
		}
	}
	*out = &rdev->dev;
	r = 0;
	goto out;
fail:
	rbd_free(rdev);
out:
	free(pool);
	free(image);
	free(conf);
	return r;
}

/* ------------------------------------------------------------------------------------
 * Requests.
 */

/* Issue the librbd operation of @io's current phase on completion @c.  Returns 0 or
 * -errno (nothing was issued). */
static int rbd_issue(struct rbd_dev *rdev, struct tc_io *io, rbd_completion_t c)
{
	if (io->internal[0] == RBD_PHASE_FUA_FLUSH || io->op == TC_OP_FLUSH)
		return rbd_aio_flush(rdev->image, c);
	switch (io->op) {
	case TC_OP_READ:
		return rbd_aio_readv(rdev->image, io->iov, io->iovcnt, io->offset, c);
	case TC_OP_WRITE:
		return rbd_aio_writev(rdev->image, io->iov, io->iovcnt, io->offset, c);
	case TC_OP_WRITE_ZEROES:
		return rbd_aio_write_zeroes(rdev->image, io->offset, io->length, c, 0, 0);
	case TC_OP_DISCARD:
		return rbd_aio_discard(rdev->image, io->offset, io->length, c);
	}
	return -EINVAL;
}

static int rbd_start(struct rbd_dev *rdev, struct tc_io *io, rbd_completion_t *out)
{
	rbd_completion_t c;
	int r = rbd_aio_create_completion(io, NULL, &c);
	if (r < 0)
		return r;
	r = rbd_issue(rdev, io, c);
	if (r < 0) {
		rbd_aio_release(c);
		return r;
	}
	*out = c;
	return 0;
}

/* The librbd operation of @io's phase returned @r: go on to the FUA flush, or
 * complete @io.  Returns true when a next phase was issued (on *@next). */
static bool rbd_phase_done(struct rbd_dev *rdev, struct tc_io *io, ssize_t r,
			   rbd_completion_t *next)
{
	int res = r < 0 ? (int)r : 0;

	if (!res && io->internal[0] == RBD_PHASE_MAIN && (io->flags & TC_IO_FUA) &&
	    (io->op == TC_OP_WRITE || io->op == TC_OP_WRITE_ZEROES)) {
		io->internal[0] = RBD_PHASE_FUA_FLUSH;
		res = rbd_start(rdev, io, next);
		if (!res)
			return true;
	}
	if (res < 0) {
		if (rbd_fatal(res))
			rbd_mark_dead(rdev, res);
		tc_err(rdev->dev.ctx, "rbd %s: op %u at %" PRIu64 " length %" PRIu64 ": %s",
		       rdev->dev.name, io->op, io->offset, io->length, strerror(-res));
		res = res == -EROFS ? -EROFS : rbd_fatal(res) ? -EIO : res;
	}
	atomic_fetch_sub(&rdev->inflight, 1);
	tc_dev_complete(&rdev->dev, io, res);
	return false;
}

/* Completion thread: collect what librbd completed and finish it. */
static void rbd_reap(struct rbd_dev *rdev)
{
	rbd_completion_t comps[RBD_POLL_BATCH];
	int n;

	while ((n = rbd_poll_io_events(rdev->image, comps, RBD_POLL_BATCH)) > 0) {
		for (int i = 0; i < n; i++) {
			struct tc_io *io = rbd_aio_get_arg(comps[i]);
			ssize_t r = rbd_aio_get_return_value(comps[i]);
			rbd_completion_t next;
			rbd_aio_release(comps[i]);
			rbd_phase_done(rdev, io, r, &next);
		}
	}
}

static void *rbd_thread_main(void *arg)
{
	struct rbd_dev *rdev = arg;

	for (;;) {
		struct pollfd p = { .fd = rdev->efd, .events = POLLIN };
		if (poll(&p, 1, -1) < 0 && errno != EINTR) {
			tc_err(rdev->dev.ctx, "rbd %s: poll: %s", rdev->dev.name, strerror(errno));
			break;
		}
		uint64_t v;
		if (read(rdev->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
		rbd_reap(rdev);
		if (atomic_load(&rdev->stop) && atomic_load(&rdev->inflight) == 0)
			break;
	}
	return NULL;
}

/* Deterministic contexts: issue and wait, phase by phase, in a context work item. */
static void rbd_sync_work(struct tc_work *w)
{
	struct tc_io *io = (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
	struct rbd_dev *rdev = (struct rbd_dev *)(uintptr_t)io->internal[3];
	rbd_completion_t c;
	int r = rbd_start(rdev, io, &c);

	if (r < 0) {
		rbd_phase_done(rdev, io, r, &c);
		return;
	}
	for (;;) {
		rbd_aio_wait_for_complete(c);
		ssize_t res = rbd_aio_get_return_value(c);
		rbd_aio_release(c);
		if (!rbd_phase_done(rdev, io, res, &c))
			return;
	}
}

static void rbd_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct rbd_dev *rdev = (struct rbd_dev *)dev;

	if (rdev->readonly && io->op != TC_OP_READ && io->op != TC_OP_FLUSH) {
		tc_err(dev->ctx, "rbd %s: read-only, refusing op %u at %" PRIu64, dev->name,
		       io->op, io->offset);
		tc_dev_complete_later(dev, io, -EROFS);
		return;
	}
	if (atomic_load(&rdev->dead)) {
		tc_dev_complete_later(dev, io, -EIO);
		return;
	}
	io->internal[0] = RBD_PHASE_MAIN;
	atomic_fetch_add(&rdev->inflight, 1);
	if (!rdev->threaded) {
		struct tc_work *w = (struct tc_work *)(void *)io->internal;
		io->internal[3] = (uint64_t)(uintptr_t)rdev;
		w->fn = rbd_sync_work;
		tc_ctx_defer(dev->ctx, w);
		return;
	}
	rbd_completion_t c;
	int r = rbd_start(rdev, io, &c);
	if (r < 0) {
		if (rbd_fatal(r))
			rbd_mark_dead(rdev, r);
		tc_err(dev->ctx, "rbd %s: op %u at %" PRIu64 ": cannot issue: %s", dev->name,
		       io->op, io->offset, strerror(-r));
		atomic_fetch_sub(&rdev->inflight, 1);
		tc_dev_complete_later(dev, io, rbd_fatal(r) ? -EIO : r);
	}
}

/* ------------------------------------------------------------------------------------
 * The dirty owner record, identity, close.
 */

static int rbd_set_dirty_owner(struct tc_dev *dev, const char *owner)
{
	struct rbd_dev *rdev = (struct rbd_dev *)dev;
	int r;

	if (rdev->readonly)
		return -EROFS;
	pthread_mutex_lock(&rdev->meta_lock);
	if (owner && *owner) {
		r = rbd_metadata_set(rdev->image, RBD_DIRTY_KEY, owner);
		if (!r)
			snprintf(rdev->owner, sizeof(rdev->owner), "%s", owner);
	} else {
		r = rbd_metadata_remove(rdev->image, RBD_DIRTY_KEY);
		if (r == -ENOENT)
			r = 0;
		if (!r)
			rdev->owner[0] = 0;
	}
	pthread_mutex_unlock(&rdev->meta_lock);
	if (r < 0)
		tc_err(dev->ctx, "rbd %s: cannot %s image metadata %s: %s", dev->name,
		       owner && *owner ? "set" : "remove", RBD_DIRTY_KEY, strerror(-r));
	return r;
}

static int rbd_dirty_owner(struct tc_dev *dev, char *buf, size_t len)
{
	struct rbd_dev *rdev = (struct rbd_dev *)dev;
	pthread_mutex_lock(&rdev->meta_lock);
	snprintf(buf, len, "%s", rdev->owner);
	pthread_mutex_unlock(&rdev->meta_lock);
	return 0;
}

static const char *rbd_remote_id(struct tc_dev *dev)
{
	return ((struct rbd_dev *)dev)->id;
}

static void rbd_close_dev(struct tc_dev *dev)
{
	struct rbd_dev *rdev = (struct rbd_dev *)dev;

	if (rdev->threaded) {
		atomic_store(&rdev->stop, true);
		uint64_t one = 1;
		if (write(rdev->efd, &one, sizeof(one)) < 0)
			tc_warn(dev->ctx, "rbd %s: cannot wake its completion thread: %s",
				dev->name, strerror(errno));
		pthread_join(rdev->thread, NULL);
	}
	rbd_free(rdev);
}

static const struct tc_dev_ops rbd_ops = {
	.name = "rbd",
	.submit = rbd_submit,
	.close = rbd_close_dev,
	.set_dirty_owner = rbd_set_dirty_owner,
	.dirty_owner = rbd_dirty_owner,
	.remote_id = rbd_remote_id,
};

#else /* !TC_HAVE_LIBRBD */

int tc_dev_open_rbd(tc_ctx *ctx, const char *spec, unsigned flags, tc_dev **out)
{
	*out = NULL;
	tc_err(ctx, "rbd %s: this libtiercache was built without librbd", spec ? spec : "");
	return -ENOTSUP;
}

#endif
