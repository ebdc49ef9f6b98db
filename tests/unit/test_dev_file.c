/* SPDX-License-Identifier: MIT */
/*
 * test_dev_file.c - the file backend in both context modes, with O_DIRECT and buffered:
 * sparse creation, read-after-write with aligned, unaligned (bounce) and split iovecs,
 * FUA, flush, discard and write-zeroes reading zeros, refusals, persistence across
 * reopen, hundreds of requests in flight (more than the ring depth), completion thread,
 * and open errors.  Files are sparse, under $TMPDIR (default /tmp), removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"
#include "helpers.h"

#define DEV_SIZE (8u << 20)

struct config {
	enum tc_ctx_mode mode;
	unsigned flags;
};

static const struct config det_direct = { TC_CTX_DETERMINISTIC, 0 };
static const struct config det_buffered = { TC_CTX_DETERMINISTIC, TC_DEV_BUFFERED };
static const struct config thr_direct = { TC_CTX_THREADED, 0 };
static const struct config thr_buffered = { TC_CTX_THREADED, TC_DEV_BUFFERED };

struct fixture {
	const struct config *cfg;
	tc_ctx *ctx;
	tc_dev *dev;
	char path[1024];
	struct t_log log;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const struct config *cfg = *state;

	if (!fx)
		return -1;
	fx->ctx = t_ctx(cfg->mode, 99, TC_LOG_WARN, &fx->log);
	fx->cfg = cfg;
	t_mkstemp(fx->path, sizeof(fx->path), "tc-test-file");
	if (tc_dev_open_file(fx->ctx, fx->path, cfg->flags | TC_DEV_CREATE, DEV_SIZE,
			     &fx->dev) < 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	tc_dev_close(fx->dev);
	unlink(fx->path);
	tc_ctx_free(fx->ctx);
	free(fx);
	return 0;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static void *aligned(size_t len)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, 4096, len), 0);
	return p;
}

static void test_open_info_sparse(void **state)
{
	struct fixture *fx = *state;
	struct tc_dev_info info;
	struct stat st;

	tc_dev_info(fx->dev, &info);
	assert_int_equal(info.size, DEV_SIZE);
	assert_string_equal(info.backend, "file");
	assert_string_equal(info.name, fx->path);
	assert_true(info.logical_block_size == 512 || info.logical_block_size == 4096);
	if (fx->cfg->flags & TC_DEV_BUFFERED) {
		assert_false(info.direct);
	} else {
		/* Direct exactly when the file system takes O_DIRECT. */
		int fd = open(fx->path, O_RDONLY | O_DIRECT);

		assert_int_equal(info.direct, fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	assert_int_equal(stat(fx->path, &st), 0);
	assert_int_equal(st.st_size, DEV_SIZE);
	assert_true((uint64_t)st.st_blocks * 512 < DEV_SIZE / 2);       /* sparse */
}

static void test_read_after_write(void **state)
{
	struct fixture *fx = *state;
	uint8_t *w = aligned(65536), *r = aligned(65536);
	uint8_t *raw = malloc(8192 + 1), *rraw = malloc(8192 + 1);

	fill(w, 65536, 1);
	assert_int_equal(tc_dev_pwrite(fx->dev, w, 65536, 1 << 20, 0), 0);
	memset(r, 0, 65536);
	assert_int_equal(tc_dev_pread(fx->dev, r, 65536, 1 << 20), 0);
	assert_memory_equal(w, r, 65536);

	/* Unaligned memory (bounce buffer under O_DIRECT). */
	fill(raw + 1, 8192, 2);
	assert_int_equal(tc_dev_pwrite(fx->dev, raw + 1, 8192, 4096, 0), 0);
	assert_int_equal(tc_dev_pread(fx->dev, rraw + 1, 8192, 4096), 0);
	assert_memory_equal(raw + 1, rraw + 1, 8192);

	/* Never-written space reads as zeros. */
	assert_int_equal(tc_dev_pread(fx->dev, r, 4096, DEV_SIZE - 4096), 0);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(r[i], 0);
	free(w);
	free(r);
	free(raw);
	free(rraw);
}

struct counter {
	tc_ctx *ctx;
	int want;
	int done;
	int errors;
	bool all_done;
	bool on_submitter;
	pthread_t submitter;
};

static void counter_done(struct tc_io *io, int result)
{
	struct counter *c = io->private_data;
	/* Read before this completion is counted: once the last one is, the waiter may
	 * return and @c (on its stack) is gone. */
	tc_ctx *ctx = c->ctx;
	int want = c->want;

	if (pthread_equal(pthread_self(), c->submitter) && !tc_ctx_deterministic(ctx))
		__atomic_store_n(&c->on_submitter, true, __ATOMIC_RELAXED);
	if (result < 0)
		__atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&c->done, 1, __ATOMIC_ACQ_REL) == want) {
		__atomic_store_n(&c->all_done, true, __ATOMIC_RELEASE);
		tc_ctx_wake(ctx);
	}
}

static void test_iovecs_and_fua(void **state)
{
	struct fixture *fx = *state;
	uint32_t lbs;
	struct tc_dev_info info;
	uint8_t *a = aligned(4096), *b = aligned(12288), *flat = aligned(16384);
	uint8_t *odd = malloc(4096 + 3);
	struct iovec v[3];
	struct counter c = { .ctx = fx->ctx, .want = 1, .submitter = pthread_self() };
	struct tc_io io = { .op = TC_OP_WRITE, .flags = TC_IO_FUA, .offset = 2 << 20,
			    .length = 16384, .iov = v, .iovcnt = 3, .done = counter_done,
			    .private_data = &c };

	tc_dev_info(fx->dev, &info);
	lbs = info.logical_block_size;
	fill(a, 4096, 3);
	fill(b, 8192, 4);
	fill(odd + 3, 4096, 5);
	v[0] = (struct iovec){ a, 4096 };
	v[1] = (struct iovec){ odd + 3, 4096 };  /* one unaligned piece: bounce it all */
	v[2] = (struct iovec){ b, 8192 };
	tc_dev_submit(fx->dev, &io);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &c.all_done), 0);
	assert_int_equal(c.errors, 0);
	assert_false(c.on_submitter);
	assert_int_equal(tc_dev_pread(fx->dev, flat, 16384, 2 << 20), 0);
	assert_memory_equal(flat, a, 4096);
	assert_memory_equal(flat + 4096, odd + 3, 4096);
	assert_memory_equal(flat + 8192, b, 8192);

	/* Read back into split aligned iovecs of lbs-multiple lengths. */
	memset(a, 0, 4096);
	memset(b, 0, 12288);  /* b also takes the read's last piece: 12288 bytes */
	v[0] = (struct iovec){ b, lbs };
	v[1] = (struct iovec){ a, 4096 };
	v[2] = (struct iovec){ b + lbs, 12288 - lbs };
	c = (struct counter){ .ctx = fx->ctx, .want = 1, .submitter = pthread_self() };
	io = (struct tc_io){ .op = TC_OP_READ, .offset = 2 << 20, .length = 16384, .iov = v,
			     .iovcnt = 3, .done = counter_done, .private_data = &c };
	tc_dev_submit(fx->dev, &io);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &c.all_done), 0);
	assert_int_equal(c.errors, 0);
	assert_memory_equal(b, flat, lbs);
	assert_memory_equal(a, flat + lbs, 4096);
	assert_memory_equal(b + lbs, flat + lbs + 4096, 12288 - lbs);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	free(a);
	free(b);
	free(flat);
	free(odd);
}

static void test_discard_and_zeroes(void **state)
{
	struct fixture *fx = *state;
	uint8_t *w = aligned(65536), *r = aligned(65536), *z = aligned(65536);
	struct counter c = { .ctx = fx->ctx, .want = 2, .submitter = pthread_self() };
	struct tc_io d = { .op = TC_OP_DISCARD, .offset = (3 << 20) + 4096, .length = 8192,
			   .done = counter_done, .private_data = &c };
	struct tc_io wz = { .op = TC_OP_WRITE_ZEROES, .flags = TC_IO_FUA,
			    .offset = (3 << 20) + 32768, .length = 16384,
			    .done = counter_done, .private_data = &c };
	struct tc_dev_stats st;

	memset(z, 0, 65536);
	fill(w, 65536, 6);
	assert_int_equal(tc_dev_pwrite(fx->dev, w, 65536, 3 << 20, 0), 0);
	tc_dev_submit(fx->dev, &d);
	tc_dev_submit(fx->dev, &wz);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &c.all_done), 0);
	assert_int_equal(c.errors, 0);
	assert_int_equal(tc_dev_pread(fx->dev, r, 65536, 3 << 20), 0);
	assert_memory_equal(r, w, 4096);
	assert_memory_equal(r + 4096, z, 8192);         /* ext4/xfs/tmpfs punch holes */
	assert_memory_equal(r + 12288, w + 12288, 32768 - 12288);
	assert_memory_equal(r + 32768, z, 16384);
	assert_memory_equal(r + 49152, w + 49152, 16384);

	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.writes, 1);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.discards, 1);
	assert_int_equal(st.write_zeroes, 1);
	assert_int_equal(st.bytes_written, 65536);
	assert_int_equal(st.bytes_read, 65536);
	assert_int_equal(st.errors, 0);
	free(w);
	free(r);
	free(z);
}

static void test_refusals(void **state)
{
	struct fixture *fx = *state;
	uint8_t *buf = aligned(8192);
	struct tc_dev_stats st;

	assert_int_equal(tc_dev_pread(fx->dev, buf, 4096, 100), -EINVAL);
	assert_non_null(strstr(fx->log.last, fx->path));
	assert_non_null(strstr(fx->log.last, "offset 100"));
	assert_int_equal(tc_dev_pwrite(fx->dev, buf, 100, 0, 0), -EINVAL);
	assert_int_equal(tc_dev_pwrite(fx->dev, buf, 8192, DEV_SIZE - 4096, 0), -EINVAL);
	assert_non_null(strstr(fx->log.last, "beyond size 8388608"));
	tc_dev_stats(fx->dev, &st);
	assert_int_equal(st.errors, 3);
	assert_int_equal(st.writes + st.reads, 0);
	free(buf);
}

static void test_persists_across_reopen(void **state)
{
	struct fixture *fx = *state;
	uint8_t *w = aligned(8192), *r = aligned(8192);
	int fd;

	fill(w, 8192, 7);
	assert_int_equal(tc_dev_pwrite(fx->dev, w, 8192, 5 << 20, TC_IO_FUA), 0);
	assert_int_equal(tc_dev_flush(fx->dev), 0);
	tc_dev_close(fx->dev);
	fx->dev = NULL;

	/* Straight from the file. */
	fd = open(fx->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, r, 8192, 5 << 20), 8192);
	close(fd);
	assert_memory_equal(w, r, 8192);

	/* Through a new device, without TC_DEV_CREATE: the size comes from the file. */
	assert_int_equal(tc_dev_open_file(fx->ctx, fx->path, fx->cfg->flags, 0, &fx->dev), 0);
	memset(r, 0, 8192);
	assert_int_equal(tc_dev_pread(fx->dev, r, 8192, 5 << 20), 0);
	assert_memory_equal(w, r, 8192);
	free(w);
	free(r);
}

#define N_INFLIGHT 600          /* more than the ring's 256 entries */

static void test_many_in_flight(void **state)
{
	struct fixture *fx = *state;
	uint8_t *w = aligned((size_t)N_INFLIGHT * 4096), *r = aligned((size_t)N_INFLIGHT * 4096);
	struct tc_io *ios = calloc(N_INFLIGHT, sizeof(*ios));
	struct iovec *iov = calloc(N_INFLIGHT, sizeof(*iov));
	struct counter c = { .ctx = fx->ctx, .want = N_INFLIGHT, .submitter = pthread_self() };
	int i;

	fill(w, (size_t)N_INFLIGHT * 4096, 8);
	for (i = 0; i < N_INFLIGHT; i++) {
		iov[i] = (struct iovec){ w + (size_t)i * 4096, 4096 };
		ios[i] = (struct tc_io){ .op = TC_OP_WRITE, .offset = (uint64_t)i * 4096,
					 .length = 4096, .iov = &iov[i], .iovcnt = 1,
					 .done = counter_done, .private_data = &c };
		tc_dev_submit(fx->dev, &ios[i]);
	}
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &c.all_done), 0);
	assert_int_equal(c.done, N_INFLIGHT);
	assert_int_equal(c.errors, 0);
	assert_false(c.on_submitter);
	assert_int_equal(tc_dev_pread(fx->dev, r, (uint64_t)N_INFLIGHT * 4096, 0), 0);
	assert_memory_equal(w, r, (size_t)N_INFLIGHT * 4096);
	free(w);
	free(r);
	free(ios);
	free(iov);
}

/*
 * Completion on the waiting thread (file.c): reads and writes submitted between
 * tc_waiter_init() and tc_waiter_wait() complete on the submitting thread, which reaps
 * its own ring; more of them than that ring holds take the shared ring; a request that
 * a completion callback submits while the waiter reaps goes the ordinary way (the
 * completion thread), so a chain of I/O never keeps the waiter.  Deterministic mode
 * runs everything on the caller's thread anyway (tc_ctx_poll).
 */
#define N_WINDOW 48             /* more than a thread's own ring (32) */

struct here {
	struct tc_waiter w;
	tc_dev *dev;
	pthread_t self;
	int want, done, on_self, on_other, errors;
	struct tc_io *chain_from;   /* its completion submits @chained */
	struct tc_io chained;
	struct iovec chained_iov;
	bool chained_on_self;
};

static void here_done(struct tc_io *io, int result)
{
	struct here *h = io->private_data;
	/* Read before this completion is counted: after the last one, the test frees @h. */
	int want = h->want;

	if (pthread_equal(pthread_self(), h->self))
		__atomic_fetch_add(&h->on_self, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&h->on_other, 1, __ATOMIC_RELAXED);
	if (result < 0)
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
	if (io == &h->chained)
		h->chained_on_self = pthread_equal(pthread_self(), h->self);
	if (io == h->chain_from)
		tc_dev_submit(h->dev, &h->chained);
	if (__atomic_add_fetch(&h->done, 1, __ATOMIC_ACQ_REL) == want)
		tc_waiter_done(&h->w, 0);
}

static void test_completes_on_waiter(void **state)
{
	struct fixture *fx = *state;
	bool threaded = !tc_ctx_deterministic(fx->ctx);
	uint8_t *w = aligned((size_t)N_WINDOW * 4096), *r = aligned((size_t)N_WINDOW * 4096);
	struct tc_io ios[N_WINDOW];
	struct iovec iov[N_WINDOW];
	struct here *h = calloc(1, sizeof(*h));
	int i;

	/* One synchronous write, then reads of it: each on this thread. */
	fill(w, (size_t)N_WINDOW * 4096, 21);
	h->dev = fx->dev;
	h->self = pthread_self();
	h->want = 1;
	tc_waiter_init(&h->w, fx->ctx);
	iov[0] = (struct iovec){ w, (size_t)N_WINDOW * 4096 };
	ios[0] = (struct tc_io){ .op = TC_OP_WRITE, .offset = 1 << 20,
				 .length = (uint64_t)N_WINDOW * 4096, .iov = &iov[0],
				 .iovcnt = 1, .done = here_done, .private_data = h };
	tc_dev_submit(fx->dev, &ios[0]);
	assert_int_equal(tc_waiter_wait(&h->w), 0);
	assert_int_equal(h->on_self, 1);
	assert_int_equal(h->on_other, 0);

	/* N_WINDOW reads in one window, plus one that the first one's completion submits
	 * (the first is on this thread's ring: nothing else is in flight on it). */
	memset(h, 0, sizeof(*h));
	h->dev = fx->dev;
	h->self = pthread_self();
	h->want = N_WINDOW + 1;
	h->chain_from = &ios[0];
	h->chained_iov = (struct iovec){ r, 4096 };
	h->chained = (struct tc_io){ .op = TC_OP_READ, .offset = 1 << 20, .length = 4096,
				     .iov = &h->chained_iov, .iovcnt = 1, .done = here_done,
				     .private_data = h };
	uint8_t *first = aligned(4096);
	tc_waiter_init(&h->w, fx->ctx);
	for (i = 0; i < N_WINDOW; i++) {
		iov[i] = (struct iovec){ i ? r + (size_t)i * 4096 : first, 4096 };
		ios[i] = (struct tc_io){ .op = TC_OP_READ, .offset = (1 << 20) + (uint64_t)i * 4096,
					 .length = 4096, .iov = &iov[i], .iovcnt = 1,
					 .done = here_done, .private_data = h };
		tc_dev_submit(fx->dev, &ios[i]);
	}
	assert_int_equal(tc_waiter_wait(&h->w), 0);
	assert_int_equal(h->errors, 0);
	assert_int_equal(h->done, N_WINDOW + 1);
	assert_memory_equal(first, w, 4096);
	assert_memory_equal(r, w, (size_t)N_WINDOW * 4096);
	if (threaded) {
		/* The ring's worth here, the overflow and the chained read elsewhere. */
		assert_true(h->on_self >= 1);
		assert_true(h->on_self < N_WINDOW);
		assert_true(h->on_other >= 2);
		assert_false(h->chained_on_self);
	} else {
		assert_int_equal(h->on_self, N_WINDOW + 1);
	}
	free(first);
	free(h);
	free(w);
	free(r);
}

static void test_open_errors(void **state)
{
	struct fixture *fx = *state;
	char path[1100], msg[1200];
	uint8_t *buf = aligned(4096);
	tc_dev *dev = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s.missing", fx->path);
	assert_int_equal(tc_dev_open_file(fx->ctx, path, fx->cfg->flags, 0, &dev), -ENOENT);
	assert_null(dev);

	assert_int_equal(tc_dev_open_file(fx->ctx, path, fx->cfg->flags | TC_DEV_CREATE, 1000,
					  &dev), -EINVAL);
	snprintf(msg, sizeof(msg), "file %s: size 1000 is not", path);
	assert_non_null(strstr(fx->log.last, msg));
	unlink(path);

	/* An existing file of an odd size. */
	fd = open(path, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 6000), 0);
	close(fd);
	assert_int_equal(tc_dev_open_file(fx->ctx, path, fx->cfg->flags, 0, &dev), -EINVAL);
	assert_non_null(strstr(fx->log.last, "size 6000"));
	unlink(path);

	/* Read-only: reads work, writes are refused. */
	assert_int_equal(tc_dev_open_file(fx->ctx, fx->path, fx->cfg->flags | TC_DEV_READONLY,
					  0, &dev), 0);
	assert_int_equal(tc_dev_pread(dev, buf, 4096, 0), 0);
	assert_int_equal(tc_dev_pwrite(dev, buf, 4096, 0, 0), -EROFS);
	tc_dev_close(dev);
	free(buf);
}

#define FILE_TESTS(cfg)                                                                  \
	cmocka_unit_test_prestate_setup_teardown(test_open_info_sparse, setup, teardown,  \
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_read_after_write, setup, teardown,  \
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_iovecs_and_fua, setup, teardown,    \
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_discard_and_zeroes, setup, teardown,\
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_refusals, setup, teardown,          \
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_persists_across_reopen, setup,      \
						 teardown, (void *)&cfg),                  \
	cmocka_unit_test_prestate_setup_teardown(test_many_in_flight, setup, teardown,    \
						 (void *)&cfg),                            \
	cmocka_unit_test_prestate_setup_teardown(test_completes_on_waiter, setup,         \
						 teardown, (void *)&cfg),                  \
	cmocka_unit_test_prestate_setup_teardown(test_open_errors, setup, teardown,       \
						 (void *)&cfg)

int main(void)
{
	const struct CMUnitTest t_det_direct[] = { FILE_TESTS(det_direct) };
	const struct CMUnitTest t_det_buffered[] = { FILE_TESTS(det_buffered) };
	const struct CMUnitTest t_thr_direct[] = { FILE_TESTS(thr_direct) };
	const struct CMUnitTest t_thr_buffered[] = { FILE_TESTS(thr_buffered) };
	int failed = 0;

	failed += cmocka_run_group_tests_name("file deterministic direct", t_det_direct,
					      NULL, NULL);
	failed += cmocka_run_group_tests_name("file deterministic buffered", t_det_buffered,
					      NULL, NULL);
	failed += cmocka_run_group_tests_name("file threaded direct", t_thr_direct, NULL,
					      NULL);
	failed += cmocka_run_group_tests_name("file threaded buffered", t_thr_buffered,
					      NULL, NULL);
	return failed ? 1 : 0;
}
