/* SPDX-License-Identifier: MIT */
/*
 * fault.c - a fault-injection layer: a device over another device that passes every
 * request through, until a fault is armed; then requests of the fault's kind (read,
 * write, flush, all; write-zeroes and discard count as writes) fail with the fault's
 * errno once the fault has let @after of them through: every one from then on until
 * healed, or only one (transient), after which the fault disarms itself.
 *
 * A request that passes goes to the inner device as a child request of its own (the
 * inner device owns the child's internal[] while it is in flight, the layer owns the
 * parent's), and the child's completion completes the parent: both devices count the
 * request, its bytes and its error.  A request that fails never reaches the inner
 * device and completes from a context work item (tc_dev_complete_later), like a
 * refusal, never inside submit.
 *
 * Submissions come from any thread.  `armed` is read without the lock so an unarmed
 * layer costs one atomic load; arming, healing and the countdown of an armed fault
 * are under `lock`, which is held only for those few stores.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "tiercache-test.h"

struct fault_dev {
	struct tc_dev dev;              /* first: tc_dev * and fault_dev * convert */
	struct tc_dev *inner;

	atomic_bool armed;              /* written under lock */
	pthread_mutex_t lock;           /* everything below */
	struct tc_fault fault;          /* the fault armed now or last; after = to let pass */
	uint64_t failed;                /* by the fault armed now or last */
	uint64_t failed_total;
};

/* A request passed on to the inner device. */
struct fault_child {
	struct tc_io io;                /* submitted to the inner device */
	struct tc_io *parent;
	struct fault_dev *fdev;
};

static const struct tc_dev_ops fault_ops;

/* The inner device's health changes are the layer's own: pass them up. */
static void fault_inner_event(void *opaque, tc_dev *inner, enum tc_dev_event ev)
{
	struct fault_dev *fdev = opaque;
	struct tc_dev_limits l;

	tc_dev_limits(inner, &l);
	tc_dev_event(&fdev->dev, ev, l.redundancy);
}

int tc_dev_new_fault(tc_ctx *ctx, tc_dev *inner, tc_dev **out)
{
	struct fault_dev *fdev = calloc(1, sizeof(*fdev));
	int ret;

	*out = NULL;
	if (!fdev) {
		tc_dev_close(inner);
		return -ENOMEM;
	}
	ret = tc_dev_init(&fdev->dev, &fault_ops, ctx, inner->name, inner->size, inner->lbs);
	if (ret < 0) {
		free(fdev);
		tc_dev_close(inner);
		return ret;
	}
	fdev->dev.direct = inner->direct;
	fdev->inner = inner;
	struct tc_dev_limits l;
	tc_dev_limits(inner, &l);
	tc_dev_set_limits(&fdev->dev, &l);
	ret = tc_dev_watch(inner, fault_inner_event, fdev);
	if (ret < 0) {
		tc_dev_fini(&fdev->dev);
		free(fdev);
		tc_dev_close(inner);
		return ret;
	}
	atomic_init(&fdev->armed, false);
	pthread_mutex_init(&fdev->lock, NULL);
	fdev->fault.op = TC_FAULT_ALL;
	fdev->fault.error = EIO;
	*out = &fdev->dev;
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Submit and complete.
 */

static bool fault_matches(enum tc_fault_op fop, unsigned op)
{
	switch (fop) {
	case TC_FAULT_READ: return op == TC_OP_READ;
	case TC_FAULT_FLUSH: return op == TC_OP_FLUSH;
	case TC_FAULT_WRITE:
		return op == TC_OP_WRITE || op == TC_OP_WRITE_ZEROES || op == TC_OP_DISCARD;
	case TC_FAULT_ALL: return true;
	}
	return false;
}

/* The negative errno @io must fail with, or 0 to pass it on. */
static int fault_check(struct fault_dev *fdev, unsigned op)
{
	int ret = 0;

	if (!atomic_load_explicit(&fdev->armed, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&fdev->lock);
	if (atomic_load_explicit(&fdev->armed, memory_order_relaxed) &&
	    fault_matches(fdev->fault.op, op)) {
		if (fdev->fault.after > 0) {
			fdev->fault.after--;
		} else {
			ret = -fdev->fault.error;
			fdev->failed++;
			fdev->failed_total++;
			if (fdev->fault.transient)
				atomic_store_explicit(&fdev->armed, false, memory_order_release);
		}
	}
	pthread_mutex_unlock(&fdev->lock);
	return ret;
}

static void fault_child_done(struct tc_io *cio, int result)
{
	struct fault_child *child = (struct fault_child *)cio;
	struct tc_io *parent = child->parent;
	struct fault_dev *fdev = child->fdev;

	free(child);
	tc_dev_complete(&fdev->dev, parent, result);
}

static void fault_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct fault_dev *fdev = (struct fault_dev *)dev;
	int ret = fault_check(fdev, io->op);
	struct fault_child *child;

	if (ret < 0) {
		tc_dev_complete_later(dev, io, ret);
		return;
	}
	child = malloc(sizeof(*child));
	if (!child) {
		tc_dev_complete_later(dev, io, -ENOMEM);
		return;
	}
	child->io = (struct tc_io){
		.op = io->op,
		.flags = io->flags,
		.offset = io->offset,
		.length = io->length,
		.iov = io->iov,
		.iovcnt = io->iovcnt,
		.done = fault_child_done,
		.private_data = NULL,
	};
	child->parent = io;
	child->fdev = fdev;
	tc_dev_submit(fdev->inner, &child->io);
}

/* ------------------------------------------------------------------------------------
 * Arming and healing.
 */

static struct fault_dev *fault_of(tc_dev *dev, const char *what)
{
	if (dev->ops != &fault_ops) {
		tc_err(dev->ctx, "device %s: %s needs a fault-injection device, not %s",
		       dev->name, what, dev->ops->name);
		return NULL;
	}
	return (struct fault_dev *)dev;
}

int tc_fault_arm(tc_dev *dev, const struct tc_fault *f)
{
	struct fault_dev *fdev = fault_of(dev, "arming a fault");

	if (!fdev)
		return -EINVAL;
	if ((unsigned)f->op > TC_FAULT_ALL) {
		tc_err(dev->ctx, "device %s: unknown fault op %u", dev->name, (unsigned)f->op);
		return -EINVAL;
	}
	if (f->error < 1 || f->error > 4095) {
		tc_err(dev->ctx, "device %s: errno %d is not in 1..4095", dev->name, f->error);
		return -EINVAL;
	}
	pthread_mutex_lock(&fdev->lock);
	fdev->fault = *f;
	fdev->failed = 0;
	atomic_store_explicit(&fdev->armed, true, memory_order_release);
	pthread_mutex_unlock(&fdev->lock);
	return 0;
}

int tc_fault_heal(tc_dev *dev)
{
	struct fault_dev *fdev = fault_of(dev, "healing a fault");
	bool was;

	if (!fdev)
		return -EINVAL;
	pthread_mutex_lock(&fdev->lock);
	was = atomic_load_explicit(&fdev->armed, memory_order_relaxed);
	atomic_store_explicit(&fdev->armed, false, memory_order_release);
	pthread_mutex_unlock(&fdev->lock);
	return was ? 1 : 0;
}

int tc_fault_get(tc_dev *dev, struct tc_fault_state *st)
{
	struct fault_dev *fdev = fault_of(dev, "fault state");

	if (!fdev)
		return -EINVAL;
	pthread_mutex_lock(&fdev->lock);
	st->armed = atomic_load_explicit(&fdev->armed, memory_order_relaxed);
	st->fault = fdev->fault;
	st->failed = fdev->failed;
	st->failed_total = fdev->failed_total;
	pthread_mutex_unlock(&fdev->lock);
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Close.
 */

static void fault_close(struct tc_dev *dev)
{
	struct fault_dev *fdev = (struct fault_dev *)dev;

	tc_dev_unwatch(fdev->inner, fault_inner_event, fdev);
	tc_dev_close(fdev->inner);
	pthread_mutex_destroy(&fdev->lock);
	tc_dev_fini(dev);
	free(fdev);
}

/* The inner device's view of its ranges and its parts (a fault layer over a pool). */
static int fault_range_redundancy(struct tc_dev *dev, uint64_t off, uint64_t len)
{
	return tc_dev_range_redundancy(((struct fault_dev *)dev)->inner, off, len);
}

static uint64_t fault_health_gen(struct tc_dev *dev)
{
	return tc_dev_health_gen(((struct fault_dev *)dev)->inner);
}

static const struct tc_dev_ops fault_ops = {
	.name = "fault",
	.submit = fault_submit,
	.close = fault_close,
	.range_redundancy = fault_range_redundancy,
	.health_gen = fault_health_gen,
};
