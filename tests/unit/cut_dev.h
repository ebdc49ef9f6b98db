/* SPDX-License-Identifier: MIT */
/*
 * cut_dev.h - the power-cut tests' cutter (test_mgmt_cut.c, test_array_cut.c,
 * test_pool_cut.c): a device layer over an inner device (a crash device) that lets a
 * budget of requests through, counted over every cutter sharing the budget, and fails
 * every later one with -EIO, as a power failure would.  The inner device is not owned
 * (the test closes it after the cutter, after tc_crash_power_cut on it) unless made by
 * cut_new_owning().  Needs cmocka.h, dev.h and tiercache.h included first.
 */
#ifndef TC_TEST_CUT_DEV_H
#define TC_TEST_CUT_DEV_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* One request budget shared by the devices of one run: @used counts every request
 * submitted, @limit how many pass (UINT64_MAX: all; 0: none). */
struct cut_budget {
	_Atomic uint64_t used, limit;
};

struct cut_dev {
	struct tc_dev base;
	tc_dev *inner;
	struct cut_budget *budget;
	bool owns_inner;        /* cut_new_owning: closing the cutter closes @inner */
	tc_dev **inner_slot;    /* cut_new_owning: set to NULL when @inner is closed */
};

static inline void cut_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct cut_dev *cd = (struct cut_dev *)dev;
	uint64_t n = atomic_fetch_add(&cd->budget->used, 1);
	if (n >= atomic_load(&cd->budget->limit)) {
		tc_dev_complete_later(dev, io, -EIO);
		return;
	}
	tc_dev_submit(cd->inner, io);   /* completes through the inner device */
}

static inline void cut_close(struct tc_dev *dev)
{
	struct cut_dev *cd = (struct cut_dev *)dev;
	tc_dev_fini(dev);
	if (cd->owns_inner) {
		tc_dev_close(cd->inner);
		if (cd->inner_slot)
			*cd->inner_slot = NULL;
	}
	free(dev);
}

static const struct tc_dev_ops cut_ops = {
	.name = "cut",
	.submit = cut_submit,
	.close = cut_close,
};

/* cut_new - a cutter over @inner (same name, size and block size) spending @b. */
static inline tc_dev *cut_new(tc_ctx *ctx, tc_dev *inner, struct cut_budget *b)
{
	struct cut_dev *cd = calloc(1, sizeof(*cd));
	assert_non_null(cd);
	assert_int_equal(tc_dev_init(&cd->base, &cut_ops, ctx, inner->name, inner->size,
				     inner->lbs), 0);
	cd->inner = inner;
	cd->budget = b;
	return &cd->base;
}

/* cut_new_owning - the same, owning @inner: closing the cutter closes it and sets
 * *@slot (the caller's record of @inner, or NULL) to NULL.  For a host, which closes
 * the devices it opened, some of them (a failed live attach's) before the test ends. */
static inline tc_dev *cut_new_owning(tc_ctx *ctx, tc_dev *inner, struct cut_budget *b,
				     tc_dev **slot)
{
	struct cut_dev *cd = (struct cut_dev *)cut_new(ctx, inner, b);
	cd->owns_inner = true;
	cd->inner_slot = slot;
	return &cd->base;
}

/* cut_budget_start - from now on @n more requests pass. */
static inline void cut_budget_start(struct cut_budget *b, uint64_t n)
{
	atomic_store(&b->used, 0);
	atomic_store(&b->limit, n);
}

/* cut_budget_within - whether the requests since cut_budget_start(b, n) stayed within
 * its @n (the power has not failed yet). */
static inline bool cut_budget_within(struct cut_budget *b, uint64_t n)
{
	return atomic_load(&b->used) <= n;
}

/* cut_budget_done - the power fails now: nothing more passes.  Returns whether the
 * operation run since cut_budget_start(b, n) stayed within its @n requests. */
static inline bool cut_budget_done(struct cut_budget *b, uint64_t n)
{
	bool within = cut_budget_within(b, n);
	atomic_store(&b->limit, 0);
	return within;
}

/* ---- the files of a cut test ---------------------------------------------------- */

#define CUT_FILES 6   /* device files per test, at most */

/* Device files DIR/d0 ... and, for each, DIR/dN.saved: the files as the test's
 * prepare step left them, put back before every cut. */
struct cut_files {
	char dir[256];
	char path[CUT_FILES][300];
	char saved[CUT_FILES][310];
};

/* cut_files_setup - a new folder TMPDIR/@prefix-XXXXXX (TMPDIR defaults to /dev/shm
 * when writable: the tests make and sync thousands of small sparse files, minutes on a
 * shared disk) and the names in it.  Needs helpers.h. */
static inline void cut_files_setup(struct cut_files *cf, const char *prefix)
{
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 0);
	assert_int_equal(t_mkdtemp(cf->dir, sizeof(cf->dir), prefix), 0);
	for (unsigned i = 0; i < CUT_FILES; i++) {
		snprintf(cf->path[i], sizeof(cf->path[i]), "%s/d%u", cf->dir, i);
		snprintf(cf->saved[i], sizeof(cf->saved[i]), "%s.saved", cf->path[i]);
	}
}

/* Copy file @from to @to, holes kept (or remove @to when @from is missing). */
static inline void cut_copy_file(const char *from, const char *to)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -f '%s'; if [ -e '%s' ]; then cp --sparse=always '%s' "
		 "'%s'; fi", to, from, from, to);
	assert_int_equal(system(cmd), 0);
}

/* cut_files_save / cut_files_restore - files 0 .. @n-1 to their saved copies, back. */
static inline void cut_files_save(const struct cut_files *cf, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cut_copy_file(cf->path[i], cf->saved[i]);
}

static inline void cut_files_restore(const struct cut_files *cf, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cut_copy_file(cf->saved[i], cf->path[i]);
}

#endif /* TC_TEST_CUT_DEV_H */
