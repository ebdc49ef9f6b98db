/* SPDX-License-Identifier: MIT */
/*
 * test_dev_nbd.c - the NBD backend (src/dev/nbd.c) against real nbdkit servers (the
 * memory plugin, started per test on a unix socket): random reads, writes (some FUA),
 * write-zeroes, discards and flushes from several threads, checked against a reference
 * buffer, in threaded and deterministic contexts; the same with a server that has no
 * FUA and no zero (nbdkit's fua and nozero filters), so the emulations run; requests
 * larger than the server's maximum block size (the blocksize filter) split and
 * reassembled; a read-only export refusing writes; a server error reaching the caller;
 * the connection's loss failing requests with -EIO and telling watchers
 * TC_DEV_FAILED.  Skipped (77) when nbdkit is not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"

#define SIZE (16u << 20)

struct server {
	pid_t pid;
	char dir[64], sock[128], pidfile[128], uri[192];
};

/* Start nbdkit in the foreground on a fresh unix socket with @args (filters, then the
 * plugin and its parameters); waits for its pid file, which nbdkit writes once it
 * accepts connections (the socket file appears before that). */
static void server_start(struct server *s, const char *const *args)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/tc-nbd-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	snprintf(s->pidfile, sizeof(s->pidfile), "%s/pid", s->dir);
	snprintf(s->uri, sizeof(s->uri), "nbd+unix:///?socket=%s", s->sock);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		const char *argv[32] = { "nbdkit", "-f", "-U", s->sock, "-P", s->pidfile };
		int n = 6;
		for (int i = 0; args[i] && n < 31; i++)
			argv[n++] = args[i];
		argv[n] = NULL;
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct stat st;
		if (stat(s->pidfile, &st) == 0 && st.st_size > 0)
			return;
		int status;
		assert_int_equal(waitpid(s->pid, &status, WNOHANG), 0);  /* still running */
		usleep(10000);
	}
	fail_msg("nbdkit did not start on %s", s->sock);
}

static void server_stop(struct server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	unlink(s->sock);
	unlink(s->pidfile);
	rmdir(s->dir);
}

static tc_ctx *new_ctx(enum tc_ctx_mode mode)
{
	struct tc_ctx_opts o = { .mode = mode, .seed = 7, .log_level = TC_LOG_ERROR };
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(&o, &ctx), 0);
	return ctx;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/* Random I/O from one thread against @ref (owned by that thread: threads use disjoint
 * regions of @region bytes). */
struct worker {
	tc_dev *dev;
	uint8_t *ref;
	uint64_t base, region;
	unsigned seed, ops;
	int err;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t *buf = aligned_alloc(4096, 1u << 20), *chk = aligned_alloc(4096, 1u << 20);
	uint32_t x = w->seed;

	for (unsigned i = 0; i < w->ops && !w->err; i++) {
		x = x * 1103515245u + 12345u;
		uint64_t len = (uint64_t)(1 + (x >> 8) % 64) * 4096;       /* 4 KiB .. 256 KiB */
		x = x * 1103515245u + 12345u;
		uint64_t off = ((x >> 4) % ((w->region - len) / 512)) * 512;
		unsigned kind = (x >> 24) % 10;
		uint64_t at = w->base + off;
		int r = 0;

		if (kind < 4) {                       /* write, a third with FUA */
			fill(buf, len, x);
			r = tc_dev_pwrite(w->dev, buf, len, at, kind == 0 ? TC_IO_FUA : 0);
			memcpy(w->ref + off, buf, len);
		} else if (kind < 8) {                /* read and compare */
			r = tc_dev_pread(w->dev, chk, len, at);
			if (!r && memcmp(chk, w->ref + off, len))
				r = -EILSEQ;
		} else if (kind == 8) {               /* write-zeroes */
			r = tc_dev_io(w->dev, TC_OP_WRITE_ZEROES, 0, NULL, len, at);
			memset(w->ref + off, 0, len);
		} else {
			r = tc_dev_flush(w->dev);
		}
		if (r)
			w->err = r;
	}
	free(buf);
	free(chk);
	return NULL;
}

static void run_workers(tc_dev *dev, unsigned nthreads, unsigned ops)
{
	struct worker w[4];
	pthread_t t[4];
	uint64_t region = SIZE / nthreads;

	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .dev = dev, .ref = calloc(1, region), .base = i * region,
					.region = region, .seed = 100 + i, .ops = ops };
		if (nthreads == 1)
			worker_main(&w[i]);
		else
			assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (unsigned i = 0; i < nthreads; i++) {
		if (nthreads > 1)
			pthread_join(t[i], NULL);
		assert_int_equal(w[i].err, 0);
		/* Everything written is there, read back in one piece. */
		uint8_t *all = aligned_alloc(4096, region);
		assert_int_equal(tc_dev_pread(dev, all, region, w[i].base), 0);
		assert_memory_equal(all, w[i].ref, region);
		free(all);
		free(w[i].ref);
	}
}

static void check_random_io(const char *const *args, enum tc_ctx_mode mode, unsigned nthr)
{
	struct server s;
	tc_ctx *ctx = new_ctx(mode);
	tc_dev *dev;
	struct tc_dev_info info;

	server_start(&s, args);
	assert_int_equal(tc_dev_open_nbd(ctx, s.uri, 0, &dev), 0);
	tc_dev_info(dev, &info);
	assert_int_equal(info.size, SIZE);
	assert_string_equal(info.backend, "nbd");
	run_workers(dev, nthr, 300);
	tc_dev_close(dev);
	tc_ctx_free(ctx);
	server_stop(&s);
}

static const char *const memory_args[] = { "memory", "16M", NULL };
/* No FUA, no zero (both filters' default modes), and at most 64 KiB per request: FUA becomes write + FLUSH,
 * write-zeroes become writes of zeros, large requests are split. */
static const char *const plain_args[] = { "--filter=fua", "--filter=nozero",
	"--filter=blocksize", "memory", "16M", "maxdata=65536", NULL };

static void test_threaded(void **state)
{
	check_random_io(memory_args, TC_CTX_THREADED, 4);
}

static void test_deterministic(void **state)
{
	check_random_io(memory_args, TC_CTX_DETERMINISTIC, 1);
}

static void test_emulations_threaded(void **state)
{
	check_random_io(plain_args, TC_CTX_THREADED, 4);
}

static void test_emulations_deterministic(void **state)
{
	check_random_io(plain_args, TC_CTX_DETERMINISTIC, 1);
}

static void test_readonly_and_errors(void **state)
{
	struct server s;
	tc_ctx *ctx = new_ctx(TC_CTX_THREADED);
	tc_dev *dev;
	uint8_t *buf = aligned_alloc(4096, 65536);
	static const char *const ro[] = { "-r", "memory", "16M", NULL };
	static const char *const failing[] = { "--filter=error", "memory", "16M",
		"error=EIO", "error-pwrite-rate=100%", NULL };

	server_start(&s, ro);
	assert_int_equal(tc_dev_open_nbd(ctx, s.uri, 0, &dev), 0);
	memset(buf, 1, 65536);
	assert_int_equal(tc_dev_pwrite(dev, buf, 65536, 0, 0), -EROFS);
	assert_int_equal(tc_dev_pread(dev, buf, 65536, 0), 0);
	tc_dev_close(dev);
	server_stop(&s);

	server_start(&s, failing);
	assert_int_equal(tc_dev_open_nbd(ctx, s.uri, 0, &dev), 0);
	assert_int_equal(tc_dev_pwrite(dev, buf, 65536, 0, 0), -EIO);
	assert_int_equal(tc_dev_pread(dev, buf, 65536, 0), 0);
	tc_dev_close(dev);
	server_stop(&s);

	/* Nobody listening: the error says so. */
	assert_int_equal(tc_dev_open_nbd(ctx, s.uri, 0, &dev), -ENOENT);
	assert_null(dev);
	free(buf);
	tc_ctx_free(ctx);
}

static void on_event(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	atomic_store((atomic_int *)opaque, (int)ev);   /* from the device's I/O thread */
}

static void test_connection_lost(void **state)
{
	struct server s;
	tc_ctx *ctx = new_ctx(TC_CTX_THREADED);
	tc_dev *dev;
	atomic_int ev = 0;
	uint8_t *buf = aligned_alloc(4096, 65536);

	server_start(&s, memory_args);
	assert_int_equal(tc_dev_open_nbd(ctx, s.uri, 0, &dev), 0);
	assert_int_equal(tc_dev_watch(dev, on_event, &ev), 0);
	assert_int_equal(tc_dev_pread(dev, buf, 65536, 0), 0);
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	s.pid = 0;
	int r = 0;
	for (int i = 0; i < 100 && r == 0; i++)
		r = tc_dev_pread(dev, buf, 65536, 0);
	assert_int_equal(r, -EIO);
	/* The event comes from the device's I/O thread: up to 10 s (sanitizers, load). */
	for (int i = 0; i < 2000 && atomic_load(&ev) == 0; i++)
		usleep(5000);
	assert_int_equal(atomic_load(&ev), TC_DEV_FAILED);
	assert_int_equal(tc_dev_pwrite(dev, buf, 65536, 0, 0), -EIO);
	tc_dev_close(dev);
	server_stop(&s);
	free(buf);
	tc_ctx_free(ctx);
}

int main(void)
{
	if (system("nbdkit --version >/dev/null 2>&1") != 0) {
		printf("test_dev_nbd: nbdkit not installed; skipped\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threaded),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_emulations_threaded),
		cmocka_unit_test(test_emulations_deterministic),
		cmocka_unit_test(test_readonly_and_errors),
		cmocka_unit_test(test_connection_lost),
	};

	return cmocka_run_group_tests_name("nbd device", tests, NULL, NULL);
}
