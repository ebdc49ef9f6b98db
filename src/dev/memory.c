/* SPDX-License-Identifier: MIT */
/*
 * memory.c - a RAM device, for tests and for caches that need no persistence.
 *
 * Every request completes from a context work item, and the data moves at completion
 * time, not at submit: two overlapping requests in flight then land in the order the
 * context runs them, which in deterministic mode is the seed's choice.  This is what
 * makes engine races reproducible on a memory device.
 *
 * Work items run one at a time (the worker thread, or the polling caller), so the
 * buffer needs no lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"

struct memory_dev {
	struct tc_dev dev;      /* first: tc_dev * and memory_dev * convert */
	uint8_t *data;
};

static const struct tc_dev_ops memory_ops;

int tc_dev_new_memory(tc_ctx *ctx, uint64_t size, tc_dev **out)
{
	struct memory_dev *mdev;
	char name[64];
	int ret;

	*out = NULL;
	if (size == 0 || size % TC_UNIT_SIZE) {
		tc_err(ctx, "memory device: size %" PRIu64 " is not a non-zero multiple of %u",
		       size, TC_UNIT_SIZE);
		return -EINVAL;
	}
	mdev = calloc(1, sizeof(*mdev));
	if (!mdev)
		return -ENOMEM;
	mdev->data = calloc(1, size);
	if (!mdev->data) {
		tc_err(ctx, "memory device: cannot allocate %" PRIu64 " bytes", size);
		free(mdev);
		return -ENOMEM;
	}
	snprintf(name, sizeof(name), "memory:%p", (void *)mdev);
	ret = tc_dev_init(&mdev->dev, &memory_ops, ctx, name, size, TC_SECTOR_SIZE);
	if (ret < 0) {
		free(mdev->data);
		free(mdev);
		return ret;
	}
	*out = &mdev->dev;
	return 0;
}

/* Runs on the context: move the data, then complete. */
static void memory_complete(struct tc_work *w)
{
	struct tc_io *io = (struct tc_io *)((char *)w - offsetof(struct tc_io, internal));
	struct memory_dev *mdev = (struct memory_dev *)(uintptr_t)io->internal[3];
	uint8_t *p = mdev->data + io->offset;

	switch (io->op) {
	case TC_OP_READ:
		tc_buf_to_iov(io->iov, io->iovcnt, 0, p, io->length);
		break;
	case TC_OP_WRITE:
		tc_iov_to_buf(p, io->iov, io->iovcnt, 0, io->length);
		break;
	case TC_OP_DISCARD:
	case TC_OP_WRITE_ZEROES:
		memset(p, 0, io->length);
		break;
	case TC_OP_FLUSH:
		break;
	}
	tc_dev_complete(&mdev->dev, io, 0);
}

static void memory_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct tc_work *w = (struct tc_work *)(void *)io->internal;

	io->internal[3] = (uint64_t)(uintptr_t)dev;
	w->fn = memory_complete;
	tc_ctx_defer(dev->ctx, w);
}

static void memory_close(struct tc_dev *dev)
{
	struct memory_dev *mdev = (struct memory_dev *)dev;

	free(mdev->data);
	tc_dev_fini(dev);
	free(mdev);
}

static const struct tc_dev_ops memory_ops = {
	.name = "memory",
	.submit = memory_submit,
	.close = memory_close,
};
