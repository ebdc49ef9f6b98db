/* SPDX-License-Identifier: MIT */
/*
 * crash.c - a crash-test device: a disk with a volatile write cache and a power switch.
 *
 * The file underneath holds what is durable.  Every write lands in a volatile layer
 * first: a hash map from 4 KiB unit index to the versions of that unit written since
 * the last FLUSH, oldest first, each a full 4096-byte image (a 512-byte write makes a
 * new version from the unit's newest view plus the written bytes).  Reads see the
 * newest version, else the file.  FLUSH writes every unit's newest version to the file
 * and empties the layer; a FUA write goes to the file at once and drops the older
 * pending versions of the units it covers.
 *
 * tc_crash_power_cut() is the crash: for each unit with pending versions it keeps,
 * chosen by the device's own seeded generator, either the durable value or one of the
 * versions written since, exactly the freedom a real disk cache has at 4 KiB
 * granularity (invariant 2, docs/architecture.md), then fails every later request with -EIO.
 * tc_crash_fail_nth() fails the Nth read, write or flush from now, once or from then
 * on, as SQLite's ioerr tests do (test/ioerr.test), so the engine's error paths run
 * with N = 1, 2, ...
 *
 * Requests complete from context work items and take effect when they complete, so in
 * deterministic mode overlapping requests land in seed-chosen order.  The layer is
 * protected by a mutex: power cuts and fault settings come from the test's thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev.h"
#include "tiercache-test.h"

/* The pending versions of one 4 KiB unit, oldest first. */
struct crash_unit {
	uint64_t index;                 /* offset / TC_UNIT_SIZE */
	struct crash_unit *next;        /* hash chain */
	uint8_t **versions;             /* each TC_UNIT_SIZE bytes */
	uint32_t count, cap;
};

struct crash_fault {
	uint64_t countdown;             /* requests left until the failing one; 0 = off */
	bool persistent;
	bool failing;                   /* persistent fault reached: fail everything */
};

struct crash_dev {
	struct tc_dev dev;              /* first: tc_dev * and crash_dev * convert */
	int fd;
	bool readonly;

	pthread_mutex_t lock;           /* everything below */
	struct crash_unit **buckets;
	size_t nbuckets;                /* power of two */
	size_t nunits;
	uint64_t rng;                   /* splitmix64 state for power cuts */
	bool dead;
	struct crash_fault faults[3];   /* by enum tc_fault_op */
};

static const struct tc_dev_ops crash_ops;

static uint64_t crash_rand(struct crash_dev *cdev)
{
	uint64_t z = (cdev->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

static int crash_open_fd(tc_ctx *ctx, const char *path, unsigned flags, uint64_t size,
			 int *fd_out, uint64_t *size_out)
{
	int oflags = (flags & TC_DEV_READONLY) ? O_RDONLY : O_RDWR;
	struct stat st;
	uint64_t cur;
	int fd = -1, ret;

	if (flags & TC_DEV_CREATE) {
		if (size == 0 || size % TC_UNIT_SIZE) {
			tc_err(ctx, "crash device %s: size %" PRIu64
			       " is not a non-zero multiple of %u", path, size, TC_UNIT_SIZE);
			return -EINVAL;
		}
		oflags |= O_CREAT;
	}
	fd = open(path, oflags | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		tc_err(ctx, "crash device %s: open: %s", path, strerror(errno));
		return ret;
	}
	ret = tc_dev_lock_fd(ctx, fd, path, flags);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	if (fstat(fd, &st) < 0)
		goto fail_errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &cur) < 0)
			goto fail_errno;
	} else if (S_ISREG(st.st_mode)) {
		cur = (uint64_t)st.st_size;
		if ((flags & TC_DEV_CREATE) && cur < size) {
			if (ftruncate(fd, (off_t)size) < 0)
				goto fail_errno;
			cur = size;
		}
	} else {
		tc_err(ctx, "crash device %s: not a regular file or block device", path);
		close(fd);
		return -EINVAL;
	}
	if (cur == 0 || cur % TC_UNIT_SIZE) {
		tc_err(ctx, "crash device %s: size %" PRIu64 " is not a non-zero multiple of %u",
		       path, cur, TC_UNIT_SIZE);
		close(fd);
		return -EINVAL;
	}
	*fd_out = fd;
	*size_out = cur;
	return 0;

fail_errno:
	ret = -errno;
	tc_err(ctx, "crash device %s: %s", path, strerror(errno));
	close(fd);
	return ret;
}

int tc_dev_new_crash(tc_ctx *ctx, const char *path, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out)
{
	struct crash_dev *cdev;
	uint64_t dev_size = 0;
	char *name;
	int fd = -1, ret;

	*out = NULL;
	ret = crash_open_fd(ctx, path, flags, size, &fd, &dev_size);
	if (ret < 0)
		return ret;
	cdev = calloc(1, sizeof(*cdev));
	name = malloc(strlen(path) + sizeof("crash:"));
	if (!cdev || !name)
		goto fail_nomem;
	cdev->nbuckets = 64;
	cdev->buckets = calloc(cdev->nbuckets, sizeof(*cdev->buckets));
	if (!cdev->buckets)
		goto fail_nomem;
	sprintf(name, "crash:%s", path);
	ret = tc_dev_init(&cdev->dev, &crash_ops, ctx, name, dev_size, TC_SECTOR_SIZE);
	free(name);
	name = NULL;
	if (ret < 0)
		goto fail;
	cdev->fd = fd;
	cdev->readonly = flags & TC_DEV_READONLY;
	cdev->rng = seed;
	pthread_mutex_init(&cdev->lock, NULL);
	*out = &cdev->dev;
	return 0;

fail_nomem:
	ret = -ENOMEM;
fail:
	if (cdev)
		free(cdev->buckets);
	free(cdev);
	free(name);
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------------------------
 * The volatile layer; callers hold cdev->lock.
 */

static size_t crash_bucket(const struct crash_dev *cdev, uint64_t index)
{
	return (size_t)((index * 0x9e3779b97f4a7c15ull) >> 32) & (cdev->nbuckets - 1);
}

static struct crash_unit *crash_unit_find(struct crash_dev *cdev, uint64_t index)
{
	struct crash_unit *u;

	for (u = cdev->buckets[crash_bucket(cdev, index)]; u; u = u->next)
		if (u->index == index)
			return u;
	return NULL;
}

/* Double the table when chains get long; on allocation failure keep the old one. */
static void crash_grow(struct crash_dev *cdev)
{
	size_t old_n = cdev->nbuckets, i;
	struct crash_unit **old = cdev->buckets, **nb;

	nb = calloc(old_n * 2, sizeof(*nb));
	if (!nb)
		return;
	cdev->buckets = nb;
	cdev->nbuckets = old_n * 2;
	for (i = 0; i < old_n; i++) {
		struct crash_unit *u = old[i], *next;

		for (; u; u = next) {
			size_t b = crash_bucket(cdev, u->index);

			next = u->next;
			u->next = nb[b];
			nb[b] = u;
		}
	}
	free(old);
}

static struct crash_unit *crash_unit_get(struct crash_dev *cdev, uint64_t index)
{
	struct crash_unit *u = crash_unit_find(cdev, index);
	size_t b;

	if (u)
		return u;
	if (cdev->nunits >= cdev->nbuckets)
		crash_grow(cdev);
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->index = index;
	b = crash_bucket(cdev, index);
	u->next = cdev->buckets[b];
	cdev->buckets[b] = u;
	cdev->nunits++;
	return u;
}

static void crash_unit_free(struct crash_unit *u)
{
	uint32_t i;

	for (i = 0; i < u->count; i++)
		free(u->versions[i]);
	free(u->versions);
	free(u);
}

static void crash_unit_remove(struct crash_dev *cdev, uint64_t index)
{
	struct crash_unit **pp = &cdev->buckets[crash_bucket(cdev, index)];

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->index == index) {
			struct crash_unit *u = *pp;

			*pp = u->next;
			crash_unit_free(u);
			cdev->nunits--;
			return;
		}
	}
}

static void crash_clear(struct crash_dev *cdev)
{
	size_t i;

	for (i = 0; i < cdev->nbuckets; i++) {
		struct crash_unit *u = cdev->buckets[i], *next;

		for (; u; u = next) {
			next = u->next;
			crash_unit_free(u);
		}
		cdev->buckets[i] = NULL;
	}
	cdev->nunits = 0;
}

static int crash_file_read(struct crash_dev *cdev, uint64_t index, uint8_t *buf)
{
	size_t done = 0;

	while (done < TC_UNIT_SIZE) {
		ssize_t n = pread(cdev->fd, buf + done, TC_UNIT_SIZE - done,
				  (off_t)(index * TC_UNIT_SIZE + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			tc_err(cdev->dev.ctx, "device %s: read unit %" PRIu64 ": %s",
			       cdev->dev.name, index, strerror(errno));
			return ret;
		}
		if (n == 0) {           /* past the end of a file someone shortened */
			memset(buf + done, 0, TC_UNIT_SIZE - done);
			break;
		}
		done += (size_t)n;
	}
	return 0;
}

static int crash_file_write(struct crash_dev *cdev, uint64_t index, const uint8_t *buf)
{
	size_t done = 0;

	while (done < TC_UNIT_SIZE) {
		ssize_t n = pwrite(cdev->fd, buf + done, TC_UNIT_SIZE - done,
				   (off_t)(index * TC_UNIT_SIZE + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;

			tc_err(cdev->dev.ctx, "device %s: write unit %" PRIu64 ": %s",
			       cdev->dev.name, index, strerror(-ret));
			return ret;
		}
		done += (size_t)n;
	}
	return 0;
}

/* The unit as a read would see it now: newest pending version, else the file. */
static int crash_view(struct crash_dev *cdev, uint64_t index, uint8_t *buf)
{
	struct crash_unit *u = crash_unit_find(cdev, index);

	if (u) {
		memcpy(buf, u->versions[u->count - 1], TC_UNIT_SIZE);
		return 0;
	}
	return crash_file_read(cdev, index, buf);
}

/* ------------------------------------------------------------------------------------
 * Request effects, at completion time; callers hold cdev->lock.
 */

static int crash_do_read(struct crash_dev *cdev, struct tc_io *io)
{
	uint8_t unit[TC_UNIT_SIZE];
	uint64_t pos = io->offset, end = io->offset + io->length;

	while (pos < end) {
		uint64_t index = pos / TC_UNIT_SIZE;
		uint64_t in = pos % TC_UNIT_SIZE;
		uint64_t n = TC_UNIT_SIZE - in;
		int ret;

		if (n > end - pos)
			n = end - pos;
		ret = crash_view(cdev, index, unit);
		if (ret < 0)
			return ret;
		tc_buf_to_iov(io->iov, io->iovcnt, pos - io->offset, unit + in, n);
		pos += n;
	}
	return 0;
}

/* WRITE, WRITE_ZEROES and DISCARD: a new version of every unit touched. */
static int crash_do_write(struct crash_dev *cdev, struct tc_io *io)
{
	uint64_t pos = io->offset, end = io->offset + io->length;
	bool zeroes = io->op != TC_OP_WRITE;
	int ret;

	while (pos < end) {
		uint64_t index = pos / TC_UNIT_SIZE;
		uint64_t in = pos % TC_UNIT_SIZE;
		uint64_t n = TC_UNIT_SIZE - in;
		struct crash_unit *u;
		uint8_t *v;

		if (n > end - pos)
			n = end - pos;
		v = malloc(TC_UNIT_SIZE);
		if (!v)
			return -ENOMEM;
		ret = crash_view(cdev, index, v);
		if (ret < 0) {
			free(v);
			return ret;
		}
		if (zeroes)
			memset(v + in, 0, n);
		else
			tc_iov_to_buf(v + in, io->iov, io->iovcnt, pos - io->offset, n);
		u = crash_unit_get(cdev, index);
		if (u && u->count == u->cap) {
			uint32_t cap = u->cap ? u->cap * 2 : 4;
			uint8_t **nv = realloc(u->versions, cap * sizeof(*nv));

			if (nv) {
				u->versions = nv;
				u->cap = cap;
			}
		}
		if (!u || u->count == u->cap) {
			free(v);
			return -ENOMEM;
		}
		u->versions[u->count++] = v;
		pos += n;
	}
	if (!(io->flags & TC_IO_FUA) || io->op == TC_OP_DISCARD)
		return 0;

	/* FUA: the new versions are durable now, and everything older is moot. */
	for (pos = io->offset / TC_UNIT_SIZE; pos * TC_UNIT_SIZE < end; pos++) {
		struct crash_unit *u = crash_unit_find(cdev, pos);

		ret = crash_file_write(cdev, pos, u->versions[u->count - 1]);
		if (ret < 0)
			return ret;
		crash_unit_remove(cdev, pos);
	}
	return 0;
}

static int crash_do_flush(struct crash_dev *cdev)
{
	size_t i;
	int ret;

	for (i = 0; i < cdev->nbuckets; i++) {
		struct crash_unit *u;

		for (u = cdev->buckets[i]; u; u = u->next) {
			ret = crash_file_write(cdev, u->index, u->versions[u->count - 1]);
			if (ret < 0)
				return ret;
		}
	}
	crash_clear(cdev);
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Submit and complete.
 */

static enum tc_fault_op crash_fault_kind(unsigned op)
{
	switch (op) {
	case TC_OP_READ: return TC_FAULT_READ;
	case TC_OP_FLUSH: return TC_FAULT_FLUSH;
	default: return TC_FAULT_WRITE;
	}
}

/* Is this request the one (or one of those) a fault says must fail?  Holds lock. */
static bool crash_fault_hit(struct crash_dev *cdev, unsigned op)
{
	struct crash_fault *f = &cdev->faults[crash_fault_kind(op)];

	if (f->failing)
		return true;
	if (f->countdown == 0 || --f->countdown > 0)
		return false;
	f->failing = f->persistent;
	return true;
}

static void crash_complete(struct tc_work *w)
{
	struct tc_io *io = (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
	struct crash_dev *cdev = (struct crash_dev *)(uintptr_t)io->internal[3];
	int ret = (int)(int64_t)io->internal[2];

	pthread_mutex_lock(&cdev->lock);
	if (cdev->dead)
		ret = -EIO;
	if (ret == 0) {
		switch (io->op) {
		case TC_OP_READ:
			ret = crash_do_read(cdev, io);
			break;
		case TC_OP_WRITE:
		case TC_OP_WRITE_ZEROES:
		case TC_OP_DISCARD:
			ret = crash_do_write(cdev, io);
			break;
		case TC_OP_FLUSH:
			ret = crash_do_flush(cdev);
			break;
		}
	}
	pthread_mutex_unlock(&cdev->lock);
	tc_dev_complete(&cdev->dev, io, ret);
}

static void crash_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct crash_dev *cdev = (struct crash_dev *)dev;
	struct tc_work *w = (struct tc_work *)(void *)io->internal;
	int ret = 0;

	pthread_mutex_lock(&cdev->lock);
	if (cdev->dead)
		ret = -EIO;
	else if (crash_fault_hit(cdev, io->op))
		ret = -EIO;
	else if (cdev->readonly && io->op != TC_OP_READ && io->op != TC_OP_FLUSH)
		ret = -EROFS;
	pthread_mutex_unlock(&cdev->lock);

	io->internal[2] = (uint64_t)(int64_t)ret;
	io->internal[3] = (uint64_t)(uintptr_t)cdev;
	w->fn = crash_complete;
	tc_ctx_defer(dev->ctx, w);
}

/* ------------------------------------------------------------------------------------
 * Power cut and fault injection.
 */

static int crash_unit_cmp(const void *a, const void *b)
{
	const struct crash_unit *ua = *(struct crash_unit *const *)a;
	const struct crash_unit *ub = *(struct crash_unit *const *)b;

	return ua->index < ub->index ? -1 : ua->index > ub->index;
}

int tc_crash_power_cut(tc_dev *dev)
{
	struct crash_dev *cdev = (struct crash_dev *)dev;
	struct crash_unit **units;
	uint8_t durable[TC_UNIT_SIZE];
	size_t i, n = 0;
	int changed = 0, ret = 0;

	if (dev->ops != &crash_ops) {
		tc_err(dev->ctx, "device %s: power cut needs a crash device, not %s",
		       dev->name, dev->ops->name);
		return -EINVAL;
	}
	pthread_mutex_lock(&cdev->lock);
	units = calloc(cdev->nunits ? cdev->nunits : 1, sizeof(*units));
	if (!units) {
		pthread_mutex_unlock(&cdev->lock);
		return -ENOMEM;
	}
	for (i = 0; i < cdev->nbuckets; i++) {
		struct crash_unit *u;

		for (u = cdev->buckets[i]; u; u = u->next)
			units[n++] = u;
	}
	/* Choices follow unit order, not hash order: same seed, same pending writes,
	 * same outcome. */
	qsort(units, n, sizeof(*units), crash_unit_cmp);
	for (i = 0; i < n && ret == 0; i++) {
		struct crash_unit *u = units[i];
		uint64_t choice = crash_rand(cdev) % (u->count + 1);

		if (choice == 0)
			continue;       /* the durable value survives */
		ret = crash_file_read(cdev, u->index, durable);
		if (ret == 0 && memcmp(durable, u->versions[choice - 1], TC_UNIT_SIZE)) {
			ret = crash_file_write(cdev, u->index, u->versions[choice - 1]);
			changed++;
		}
	}
	free(units);
	crash_clear(cdev);
	cdev->dead = true;
	pthread_mutex_unlock(&cdev->lock);
	return ret < 0 ? ret : changed;
}

int tc_crash_fail_nth(tc_dev *dev, enum tc_fault_op op, uint64_t nth, bool persistent)
{
	struct crash_dev *cdev = (struct crash_dev *)dev;
	struct crash_fault *f;

	if (dev->ops != &crash_ops) {
		tc_err(dev->ctx, "device %s: fault injection needs a crash device, not %s",
		       dev->name, dev->ops->name);
		return -EINVAL;
	}
	if ((unsigned)op > TC_FAULT_FLUSH) {
		tc_err(dev->ctx, "device %s: unknown fault op %u", dev->name, (unsigned)op);
		return -EINVAL;
	}
	pthread_mutex_lock(&cdev->lock);
	f = &cdev->faults[op];
	f->countdown = nth;
	f->persistent = nth ? persistent : false;
	f->failing = false;
	pthread_mutex_unlock(&cdev->lock);
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Close.
 */

static void crash_close(struct tc_dev *dev)
{
	struct crash_dev *cdev = (struct crash_dev *)dev;

	/* Unflushed writes are lost, as when a disk loses power with its cache full;
	 * closing is not a flush. */
	crash_clear(cdev);
	free(cdev->buckets);
	pthread_mutex_destroy(&cdev->lock);
	close(cdev->fd);
	tc_dev_fini(dev);
	free(cdev);
}

static const struct tc_dev_ops crash_ops = {
	.name = "crash",
	.submit = crash_submit,
	.close = crash_close,
};
