/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - what the unit tests share: exit codes, a log sink that keeps the last
 * message, temporary files and folders, a context with that sink, formatting a file
 * as a cache or a backing, and two fixtures (a memory device, a folder of device
 * images for host tests).  Header-only: each test program includes it once.
 *
 * Temporary files go under $TMPDIR (default /tmp).  A helper that cannot do its job
 * fails the running cmocka test (assert_*), except where it says it returns -1.
 */
#ifndef TC_TEST_HELPERS_H
#define TC_TEST_HELPERS_H

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tiercache.h"
#include "tiercache-test.h"

/* Exit codes of a test program, as meson reads them. */
#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77          /* a feature or file the test needs is absent */

/* The messages a context logged: how many, and the last one with its level (truncated
 * to the buffer). */
struct t_log {
	int count;
	enum tc_log_level last_level;
	char last[1024];
};

/* t_log_sink - a tc_log_fn: @opaque is a struct t_log.  Background work (a rebuild,
 * the cleaner) logs from other threads, so writers take one lock. */
static inline void t_log_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct t_log *l = opaque;

	pthread_mutex_lock(&lock);
	l->count++;
	l->last_level = level;
	snprintf(l->last, sizeof(l->last), "%s", msg);
	pthread_mutex_unlock(&lock);
}

/*
 * t_ctx - a new context of @mode with random seed @seed, logging messages up to @level
 * (TC_LOG_ERROR, TC_LOG_WARN, ...) into @log (may be NULL: the library's default
 * sink, stderr).  Fails the test when the context cannot be made.
 */
static inline tc_ctx *t_ctx(enum tc_ctx_mode mode, uint64_t seed, enum tc_log_level level,
			    struct t_log *log)
{
	struct tc_ctx_opts opts = { .mode = mode, .seed = seed, .log_level = level };
	tc_ctx *ctx = NULL;

	assert_int_equal(tc_ctx_new(&opts, &ctx), 0);
	if (log)
		tc_ctx_set_log(ctx, t_log_sink, log, level);
	return ctx;
}

/* t_tmpdir - the folder for temporary files: $TMPDIR, or /tmp. */
static inline const char *t_tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* t_mkdtemp - create a new folder "TMPDIR/@prefix-XXXXXX" and write its path into
 * @dir (@len bytes).  Returns 0, or -1 (path too long, mkdtemp failed: errno). */
static inline int t_mkdtemp(char *dir, size_t len, const char *prefix)
{
	int n = snprintf(dir, len, "%s/%s-XXXXXX", t_tmpdir(), prefix);

	if (n < 0 || (size_t)n >= len)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

/* t_mkstemp - create a new empty file "TMPDIR/@prefix-XXXXXX", its path into @path
 * (@len bytes).  Fails the test when it cannot. */
static inline void t_mkstemp(char *path, size_t len, const char *prefix)
{
	int n = snprintf(path, len, "%s/%s-XXXXXX", t_tmpdir(), prefix);
	int fd;

	assert_true(n > 0 && (size_t)n < len);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

/* t_rm_rf - remove the folder @dir and all it holds.  Returns 0, or -1. */
static inline int t_rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];
	int n = snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);

	if (n < 0 || (size_t)n >= sizeof(cmd) || strchr(dir, '\''))
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * t_format - create @path (sparse, @size bytes) and format it: with @name NULL a cache
 * of 16 KiB lines, otherwise a backing holding volume @name with default settings but
 * write policy @wp (TC_WP_*).  Fails the test on any error.
 */
static inline void t_format(tc_ctx *ctx, const char *path, uint64_t size, const char *name,
			    uint8_t wp)
{
	tc_dev *d;

	assert_int_equal(tc_dev_open_file(ctx, path, TC_DEV_CREATE, size, &d), 0);
	if (name) {
		struct tc_volume_settings s;
		tc_volume_settings_default(&s);
		s.write_policy = wp;
		assert_int_equal(tc_backing_format(ctx, d, name, &s), 0);
	} else {
		struct tc_cache_opts o;
		tc_cache_opts_default(&o);
		o.line_size = 16384;
		o.unprotected_writeback = true;   /* a single file: write-back by override */
		assert_int_equal(tc_cache_format(ctx, d, &o), 0);
	}
	tc_dev_close(d);
}

/*
 * A memory-device fixture (cmocka state): a context and a zero-filled RAM device, with
 * @fault behind a fault-injection layer (dev is then the fault device and inner the
 * memory device it owns; without, inner is NULL).  The context's messages up to
 * @level go to log.
 */
struct t_memdev {
	tc_ctx *ctx;
	tc_dev *dev;
	tc_dev *inner;
	struct t_log log;
};

/* t_memdev_setup - a new struct t_memdev into *@state: context of @mode with seed
 * @seed, device of @size bytes (a multiple of 4096).  Returns 0, or -1. */
static inline int t_memdev_setup(void **state, enum tc_ctx_mode mode, uint64_t seed,
				 enum tc_log_level level, uint64_t size, bool fault)
{
	struct t_memdev *fx = calloc(1, sizeof(*fx));
	tc_dev *mem;

	if (!fx)
		return -1;
	fx->ctx = t_ctx(mode, seed, level, &fx->log);
	if (tc_dev_new_memory(fx->ctx, size, &mem) < 0)
		return -1;
	if (fault) {
		fx->inner = mem;
		if (tc_dev_new_fault(fx->ctx, mem, &fx->dev) < 0)
			return -1;
	} else {
		fx->dev = mem;
	}
	*state = fx;
	return 0;
}

/* t_memdev_teardown - close the device and the context of the fixture in *@state. */
static inline int t_memdev_teardown(void **state)
{
	struct t_memdev *fx = *state;

	tc_dev_close(fx->dev);
	tc_ctx_free(fx->ctx);
	free(fx);
	return 0;
}

/*
 * A host fixture (cmocka state): a new folder with the paths of four device images in
 * it (not created: t_format makes them) and their "crash:" specs, and a threaded
 * context whose messages up to the fixture's level go to log.
 */
struct t_host_fx {
	char dir[256];
	char ssd[300], hdd[300], ssd2[300], hdd2[300];
	char crash_ssd[320], crash_hdd[320];
	tc_ctx *ctx;
	struct t_log log;
};

/* t_host_setup - a new struct t_host_fx into *@state, its folder "TMPDIR/@prefix-XXXXXX"
 * holding ssd.img, hdd.img, ssd2.img, hdd2.img; context messages up to @level.
 * Fails the test when it cannot. */
static inline void t_host_setup(void **state, const char *prefix, enum tc_log_level level)
{
	struct t_host_fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(t_mkdtemp(f->dir, sizeof(f->dir), prefix), 0);
	snprintf(f->ssd, sizeof(f->ssd), "%s/ssd.img", f->dir);
	snprintf(f->hdd, sizeof(f->hdd), "%s/hdd.img", f->dir);
	snprintf(f->ssd2, sizeof(f->ssd2), "%s/ssd2.img", f->dir);
	snprintf(f->hdd2, sizeof(f->hdd2), "%s/hdd2.img", f->dir);
	snprintf(f->crash_ssd, sizeof(f->crash_ssd), "crash:%s", f->ssd);
	snprintf(f->crash_hdd, sizeof(f->crash_hdd), "crash:%s", f->hdd);
	f->ctx = t_ctx(TC_CTX_THREADED, 0, level, &f->log);
	*state = f;
}

/* t_host_teardown - free the context, remove the folder and all it holds. */
static inline int t_host_teardown(void **state)
{
	struct t_host_fx *f = *state;

	tc_ctx_free(f->ctx);
	assert_int_equal(t_rm_rf(f->dir), 0);
	free(f);
	return 0;
}

#endif /* TC_TEST_HELPERS_H */
