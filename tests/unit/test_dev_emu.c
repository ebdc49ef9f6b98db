/* SPDX-License-Identifier: MIT */
/*
 * test_dev_emu.c - the emulated HDD/SSD backend: the shipped profiles load, data
 * written reads back on both clocks, and the virtual completion times are the model's:
 * a sequential 1 MiB HDD read takes its transfer time (also when a stream's requests
 * arrive swapped), random 4 KiB reads average a seek plus half a turn, NCQ (SPTF)
 * beats FIFO on a queue of random reads, the starvation bound holds, SSD parallelism
 * and the bandwidth cap show, FLUSH and FUA cost what the profile says.  Bad profiles
 * are refused with -EINVAL naming file, line and key.  In a threaded context, QD1
 * random 4 KiB reads on the HDD profile run at 100-200 IOPS and sequential 1 MiB reads
 * at ~200 MB/s of real time.
 *
 * TC_EMU_CALIBRATE=1 adds a longer calibration run that prints the figures (threaded
 * QD1/QD32 IOPS and MB/s of the three profiles).  Files are sparse, under $TMPDIR
 * (default /tmp), removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "tiercache-test.h"
#include "helpers.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define US 1000ull
#define MS 1000000ull
#define BIG_SIZE (8 * GiB)      /* sparse: the "large area" of the calibration */
#define HDD_OVERHEAD (800 * US) /* profiles/hdd.conf overhead_us */

struct fixture {
	tc_ctx *ctx;
	char dir[512];
	char path[600];
	struct t_log log;
};

static int setup_mode(void **state, enum tc_ctx_mode mode)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || t_mkdtemp(fx->dir, sizeof(fx->dir), "tc-test-emu"))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/dev", fx->dir);
	fx->ctx = t_ctx(mode, 7, TC_LOG_WARN, &fx->log);
	*state = fx;
	return 0;
}

static int setup_det(void **state)
{
	return setup_mode(state, TC_CTX_DETERMINISTIC);
}

static int setup_thr(void **state)
{
	return setup_mode(state, TC_CTX_THREADED);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	tc_ctx_free(fx->ctx);
	assert_int_equal(t_rm_rf(fx->dir), 0);
	free(fx);
	return 0;
}

/* Write @text as the file @name in the fixture's folder; returns its path. */
static const char *write_profile(struct fixture *fx, const char *name, const char *text)
{
	static char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char hdd_fifo_profile[] =
	"[device]\ntype = hdd\n[hdd]\ncapacity_gb = 4000\nrpm = 7200\n"
	"seek_track_us = 500\nseek_full_us = 15000\ntransfer_mb_s = 200\n"
	"overhead_us = 800\nncq_depth = 1\nmax_wait_ms = 200\nflush_us = 1000\n";

static tc_dev *open_emu(struct fixture *fx, tc_ctx *ctx, const char *profile, uint64_t size)
{
	tc_dev *dev = NULL;

	assert_int_equal(tc_dev_new_emu(ctx ? ctx : fx->ctx, profile, fx->path, TC_DEV_CREATE,
					size, &dev), 0);
	assert_non_null(dev);
	return dev;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* xorshift64: the tests' own offsets, independent of the context's generator. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random 4 KiB-aligned offset for a @len request inside @size. */
static uint64_t rand_off(uint64_t *s, uint64_t size, uint64_t len)
{
	return next_rand(s) % ((size - len) / 4096) * 4096;
}

/* Virtual (or real) time a synchronous request takes, ns. */
static uint64_t timed_read(tc_dev *dev, void *buf, uint64_t len, uint64_t off)
{
	tc_ctx *ctx = ((struct tc_dev *)dev)->ctx;
	uint64_t t0 = tc_ctx_now(ctx);

	assert_int_equal(tc_dev_pread(dev, buf, len, off), 0);
	return tc_ctx_now(ctx) - t0;
}

/* ------------------------------------------------------------------------------------
 * A batch of asynchronous requests with their completion times and order.
 */

#define BATCH_MAX 64

struct batch {
	tc_ctx *ctx;
	int n, done, errors;
	bool all_done;
	struct tc_io io[BATCH_MAX];
	struct iovec iov[BATCH_MAX];
	uint64_t when[BATCH_MAX];       /* completion time of request i */
	int order[BATCH_MAX];           /* indexes in completion order */
};

static void batch_done(struct tc_io *io, int result)
{
	struct batch *b = io->private_data;
	int i = (int)(io - b->io);

	b->when[i] = tc_ctx_now(b->ctx);
	if (result < 0)
		__atomic_fetch_add(&b->errors, 1, __ATOMIC_RELAXED);
	b->order[__atomic_fetch_add(&b->done, 1, __ATOMIC_ACQ_REL)] = i;
	if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) == b->n) {
		__atomic_store_n(&b->all_done, true, __ATOMIC_RELEASE);
		tc_ctx_wake(b->ctx);
	}
}

/* Prepare request @i of @b (READ/WRITE use @buf). */
static void batch_add(struct batch *b, enum tc_op op, unsigned flags, uint64_t off,
		      uint64_t len, void *buf)
{
	int i = b->n++;

	assert_true(i < BATCH_MAX);
	b->iov[i] = (struct iovec){ buf, len };
	b->io[i] = (struct tc_io){ .op = op, .flags = (uint8_t)flags, .offset = off,
				   .length = len, .iov = buf ? &b->iov[i] : NULL,
				   .iovcnt = buf ? 1 : 0, .done = batch_done,
				   .private_data = b };
}

/* Submit everything, wait; returns the time from submission to the last completion. */
static uint64_t batch_run(struct batch *b, tc_dev *dev)
{
	uint64_t t0 = tc_ctx_now(b->ctx);

	for (int i = 0; i < b->n; i++)
		tc_dev_submit(dev, &b->io[i]);
	assert_int_equal(tc_ctx_wait_until(b->ctx, &b->all_done), 0);
	assert_int_equal(b->errors, 0);
	return tc_ctx_now(b->ctx) - t0;
}

/* ------------------------------------------------------------------------------------
 * Profiles and opening.
 */

static void test_shipped_profiles(void **state)
{
	static const char *const names[] = { "hdd", "sata-ssd", "nvme-ssd" };
	struct fixture *fx = *state;
	struct tc_dev_info info;
	struct stat st;

	for (size_t i = 0; i < 3; i++) {
		tc_dev *dev = open_emu(fx, NULL, names[i], 64 * MiB);

		tc_dev_info(dev, &info);
		assert_string_equal(info.backend, "emu");
		assert_string_equal(info.name, fx->path);
		assert_int_equal(info.size, 64 * MiB);
		assert_int_equal(info.logical_block_size, 512);
		assert_false(info.direct);
		tc_dev_close(dev);
	}
	/* Created sparse. */
	assert_int_equal(stat(fx->path, &st), 0);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_true((uint64_t)st.st_blocks * 512 < MiB);
	/* A path works too (a '/' in it). */
	{
		char p[600];
		tc_dev *dev;

		snprintf(p, sizeof(p), "%s/hdd.conf", TC_PROFILE_DIR);
		assert_int_equal(tc_dev_new_emu(fx->ctx, p, fx->path, 0, 0, &dev), 0);
		tc_dev_close(dev);
	}
	assert_int_equal(fx->log.count, 0);
}

/* Expect tc_dev_new_emu(@profile) to fail with @err, logging every one of @want[]. */
static void expect_refusal(struct fixture *fx, const char *profile, int err,
			   const char *const *want)
{
	tc_dev *dev = (tc_dev *)1;

	fx->log.last[0] = 0;
	assert_int_equal(tc_dev_new_emu(fx->ctx, profile, fx->path, TC_DEV_CREATE, MiB, &dev),
			 err);
	assert_null(dev);
	for (; *want; want++) {
		if (!strstr(fx->log.last, *want))
			fail_msg("message \"%s\" lacks \"%s\"", fx->log.last, *want);
	}
}

static void test_bad_profiles(void **state)
{
	struct fixture *fx = *state;
	const char *p;
	char path[700];
	tc_dev *dev;

	p = write_profile(fx, "a.conf", "[device]\ntype = hdd\n[hdd]\nrpm = 7200\nwarp = 9\n");
	snprintf(path, sizeof(path), "%s", p);
	expect_refusal(fx, path, -EINVAL,
		       (const char *[]){ path, "line 5", "\"warp\"", "unknown key", NULL });

	p = write_profile(fx, "b.conf", "[device]\ntype = hdd\n[hdd]\n\nrpm = fast\n");
	snprintf(path, sizeof(path), "%s", p);
	expect_refusal(fx, path, -EINVAL,
		       (const char *[]){ path, "line 5", "\"rpm\"", "not a number", "fast",
					 NULL });

	p = write_profile(fx, "c.conf", "[device]\ntype = ssd\n[ssd]\nparallelism = 0\n");
	snprintf(path, sizeof(path), "%s", p);
	expect_refusal(fx, path, -EINVAL,
		       (const char *[]){ path, "line 4", "\"parallelism\"", "outside", NULL });

	p = write_profile(fx, "d.conf", "[device]\ntype = ssd\n[ssd]\nparallelism = 2.5\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "line 4", "whole number", NULL });

	p = write_profile(fx, "e.conf", "[device]\ntype = tape\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "line 2", "\"type\"", "tape", NULL });

	p = write_profile(fx, "f.conf", "[device]\ntype = ssd\n[ssd]\nread_us = 90\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "f.conf", "\"write_us\"", "missing",
							 NULL });

	p = write_profile(fx, "g.conf", "[hdd]\nrpm = 7200\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "\"type\"", "missing", NULL });

	/* A key of the other kind of device. */
	snprintf(path, sizeof(path), "%s\n[ssd]\nread_us = 5\n", hdd_fifo_profile);
	p = write_profile(fx, "h.conf", path);
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "line 15", "\"read_us\"",
							 "type = hdd", NULL });

	p = write_profile(fx, "i.conf", "[device]\ntype = hdd\nthis line is junk\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "i.conf", "line 3", NULL });

	snprintf(path, sizeof(path), "%s", hdd_fifo_profile);
	memcpy(strstr(path, "15000"), "00100", 5);
	p = write_profile(fx, "j.conf", path);
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "line 7", "seek_full_us", "shorter",
							 NULL });

	p = write_profile(fx, "k.conf", "[device]\ntype = hdd\ntype = ssd\n");
	expect_refusal(fx, p, -EINVAL, (const char *[]){ "line 3", "twice", NULL });

	/* Names: unknown, and not a name at all. */
	expect_refusal(fx, "no-such-profile", -ENOENT,
		       (const char *[]){ "no-such-profile.conf", NULL });
	expect_refusal(fx, "bad name!", -EINVAL, (const char *[]){ "bad name!", NULL });

	/* $TC_PROFILE_DIR moves the folder names are looked up in. */
	write_profile(fx, "fifo.conf", hdd_fifo_profile);
	setenv("TC_PROFILE_DIR", fx->dir, 1);
	assert_int_equal(tc_dev_new_emu(fx->ctx, "fifo", fx->path, TC_DEV_CREATE, MiB, &dev), 0);
	tc_dev_close(dev);
	expect_refusal(fx, "hdd", -ENOENT, (const char *[]){ fx->dir, NULL });
	unsetenv("TC_PROFILE_DIR");
}

static void test_open_flags(void **state)
{
	struct fixture *fx = *state;
	uint8_t buf[4096];
	tc_dev *dev, *dev2 = (tc_dev *)1;
	char msg[700];

	/* No file, no TC_DEV_CREATE. */
	assert_int_equal(tc_dev_new_emu(fx->ctx, "hdd", fx->path, 0, 0, &dev), -ENOENT);
	assert_int_equal(tc_dev_new_emu(fx->ctx, "hdd", fx->path, TC_DEV_CREATE, 1000, &dev),
			 -EINVAL);
	assert_non_null(strstr(fx->log.last, "size 1000"));

	/* Exclusive: a second exclusive open is refused, naming the path. */
	assert_int_equal(tc_dev_new_emu(fx->ctx, "hdd", fx->path,
					TC_DEV_CREATE | TC_DEV_EXCLUSIVE, MiB, &dev), 0);
	assert_int_equal(tc_dev_new_emu(fx->ctx, "sata-ssd", fx->path, TC_DEV_EXCLUSIVE, 0,
					&dev2), -EBUSY);
	assert_null(dev2);
	snprintf(msg, sizeof(msg), "emulated device %s: in use", fx->path);
	assert_non_null(strstr(fx->log.last, msg));
	tc_dev_close(dev);
	assert_int_equal(tc_dev_new_emu(fx->ctx, "sata-ssd", fx->path, TC_DEV_EXCLUSIVE, 0,
					&dev2), 0);
	tc_dev_close(dev2);

	/* Read-only: reads work, writes and write-zeroes are refused. */
	assert_int_equal(tc_dev_new_emu(fx->ctx, "hdd", fx->path, TC_DEV_READONLY, 0, &dev), 0);
	assert_int_equal(tc_dev_pread(dev, buf, 4096, 0), 0);
	assert_int_equal(tc_dev_pwrite(dev, buf, 4096, 0, 0), -EROFS);
	assert_int_equal(tc_dev_flush(dev), 0);
	tc_dev_close(dev);

	/* Not an emulated device. */
	{
		struct tc_emu_stats st;

		assert_int_equal(tc_dev_new_memory(fx->ctx, MiB, &dev), 0);
		assert_int_equal(tc_emu_stats(dev, &st), -EINVAL);
		tc_dev_close(dev);
	}
}

/* ------------------------------------------------------------------------------------
 * Data, both clocks.
 */

static void check_data(struct fixture *fx, const char *profile)
{
	uint8_t *w = malloc(256 * 1024), *r = malloc(256 * 1024), *z = calloc(1, 65536);
	tc_dev *dev = open_emu(fx, NULL, profile, 64 * MiB);
	struct batch *b = calloc(1, sizeof(*b));
	struct tc_dev_stats st;
	uint64_t s = 12345;
	int i;

	/* Overlap-free writes in flight together (reordered by the HDD), then read back. */
	fill(w, 256 * 1024, 1);
	b->ctx = fx->ctx;
	for (i = 0; i < 16; i++)
		batch_add(b, TC_OP_WRITE, i == 3 ? TC_IO_FUA : 0,
			  (uint64_t)i * 4 * MiB + rand_off(&s, MiB, 16384), 16384,
			  w + i * 16384);
	batch_run(b, dev);
	for (i = 0; i < 16; i++) {
		memset(r, 0, 16384);
		assert_int_equal(tc_dev_pread(dev, r, 16384, b->io[i].offset), 0);
		assert_memory_equal(r, w + i * 16384, 16384);
	}

	/* Discard reads as zeros (punched hole) and write-zeroes does. */
	assert_int_equal(tc_dev_pwrite(dev, w, 65536, 40 * MiB, 0), 0);
	memset(b, 0, sizeof(*b));
	b->ctx = fx->ctx;
	batch_add(b, TC_OP_DISCARD, 0, 40 * MiB + 4096, 8192, NULL);
	batch_add(b, TC_OP_WRITE_ZEROES, TC_IO_FUA, 40 * MiB + 32768, 16384, NULL);
	batch_add(b, TC_OP_FLUSH, 0, 0, 0, NULL);
	batch_run(b, dev);
	assert_int_equal(tc_dev_pread(dev, r, 65536, 40 * MiB), 0);
	assert_memory_equal(r, w, 4096);
	assert_memory_equal(r + 4096, z, 8192);
	assert_memory_equal(r + 12288, w + 12288, 32768 - 12288);
	assert_memory_equal(r + 32768, z, 16384);
	assert_memory_equal(r + 49152, w + 49152, 16384);

	/* It is in the file. */
	tc_dev_close(dev);
	{
		int fd = open(fx->path, O_RDONLY);

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, r, 16384, b->io[0].offset), 16384);
		close(fd);
	}
	dev = open_emu(fx, NULL, profile, 64 * MiB);
	assert_int_equal(tc_dev_pread(dev, r, 4096, 40 * MiB), 0);
	assert_memory_equal(r, w, 4096);
	tc_dev_stats(dev, &st);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.bytes_read, 4096);
	assert_int_equal(st.errors, 0);
	tc_dev_close(dev);
	free(b);
	free(w);
	free(r);
	free(z);
}

static void test_data(void **state)
{
	struct fixture *fx = *state;

	check_data(fx, "hdd");
	check_data(fx, "sata-ssd");
	check_data(fx, "nvme-ssd");
}

/* ------------------------------------------------------------------------------------
 * The model on the virtual clock.
 */

static void test_det_never_inline(void **state)
{
	struct fixture *fx = *state;
	tc_dev *dev = open_emu(fx, NULL, "hdd", 64 * MiB);
	uint8_t *buf = malloc(MiB);
	struct batch *b = calloc(1, sizeof(*b));

	b->ctx = fx->ctx;
	batch_add(b, TC_OP_READ, 0, 0, MiB, buf);
	tc_dev_submit(dev, &b->io[0]);
	assert_int_equal(b->done, 0);
	/* The HDD starts it at the next poll; then the deadline is the model's. */
	assert_int_equal(tc_ctx_next_deadline(fx->ctx), 0);
	assert_int_equal(tc_ctx_poll(fx->ctx, 16), 1);
	assert_int_equal(b->done, 0);
	assert_int_equal(tc_ctx_next_deadline(fx->ctx), 5242880);   /* 1 MiB at 200 MB/s */
	assert_int_equal(tc_ctx_advance(fx->ctx, 5242879), 0);
	assert_int_equal(tc_ctx_poll(fx->ctx, 16), 0);
	assert_int_equal(b->done, 0);
	assert_int_equal(tc_ctx_advance(fx->ctx, 1), 0);
	assert_int_equal(tc_ctx_poll(fx->ctx, 16), 1);
	assert_int_equal(b->done, 1);
	assert_int_equal(tc_ctx_next_deadline(fx->ctx), UINT64_MAX);
	tc_dev_close(dev);
	free(buf);
	free(b);
}

static void test_det_hdd_sequential(void **state)
{
	struct fixture *fx = *state;
	tc_dev *dev = open_emu(fx, NULL, "hdd", BIG_SIZE);
	uint8_t *buf = malloc(MiB);
	struct tc_emu_stats st;
	uint64_t t;

	/* Head at 0: 1 MiB from 0 and on is sequential, pure transfer at 200 MB/s. */
	for (int i = 0; i < 8; i++) {
		t = timed_read(dev, buf, MiB, (uint64_t)i * MiB);
		assert_int_equal(t, 5242880);
	}
	/* Elsewhere: the same transfer plus positioning (overhead, seek, rotation). */
	t = timed_read(dev, buf, MiB, 4 * GiB);
	assert_true(t > 5242880 + HDD_OVERHEAD + 500 * US);
	assert_true(t < 5242880 + HDD_OVERHEAD + 15 * MS + 8334 * US);
	assert_int_equal(tc_emu_stats(dev, &st), 0);
	assert_int_equal(st.requests, 9);
	assert_int_equal(st.positioned, 1);
	assert_int_equal(st.reordered, 0);

	/* One stream's two halves arriving swapped (the disk idle when the second half
	 * comes): the drive reads through the gap into its buffer, then serves the first
	 * half from it.  Head at 4 GiB + 1 MiB. */
	{
		struct batch *b = calloc(1, sizeof(*b));
		uint64_t t0 = tc_ctx_now(fx->ctx), base = 4 * GiB + MiB;

		b->ctx = fx->ctx;
		batch_add(b, TC_OP_READ, 0, base + MiB / 2, MiB / 2, buf + MiB / 2);
		batch_add(b, TC_OP_READ, 0, base, MiB / 2, buf);
		tc_dev_submit(dev, &b->io[0]);
		assert_int_equal(tc_ctx_poll(fx->ctx, 16), 1);  /* the disk takes it */
		tc_dev_submit(dev, &b->io[1]);
		assert_int_equal(tc_ctx_wait_until(fx->ctx, &b->all_done), 0);
		assert_int_equal(b->order[0], 0);
		assert_int_equal(b->when[0] - t0, 2 * 2621440);     /* gap + transfer */
		assert_int_equal(b->when[1] - t0, 3 * 2621440);     /* + transfer */
		/* And the head stayed at the end of the stream. */
		t = timed_read(dev, buf, MiB, base + MiB);
		assert_int_equal(t, 5242880);
		free(b);
	}
	tc_dev_close(dev);
	free(buf);
}

/* Average QD1 service of @n random 4 KiB reads over @size, ns. */
static uint64_t det_random_avg(struct fixture *fx, const char *profile, uint64_t size,
			       int n, uint64_t *min, uint64_t *max)
{
	tc_dev *dev = open_emu(fx, NULL, profile, size);
	uint8_t buf[4096];
	uint64_t s = 777, total = 0;

	*min = UINT64_MAX;
	*max = 0;
	for (int i = 0; i < n; i++) {
		uint64_t t = timed_read(dev, buf, 4096, rand_off(&s, size, 4096));

		total += t;
		*min = t < *min ? t : *min;
		*max = t > *max ? t : *max;
	}
	tc_dev_close(dev);
	unlink(fx->path);
	return total / (uint64_t)n;
}

static void test_det_hdd_random(void **state)
{
	struct fixture *fx = *state;
	uint64_t avg, min, max;
	const char *p;
	char text[1024];

	/* 8 GiB at the start of the modelled 4 TB disk: short seeks, half a turn. */
	avg = det_random_avg(fx, "hdd", BIG_SIZE, 2000, &min, &max);
	print_message("hdd, 8 GiB: QD1 random 4 KiB average %.2f ms (%.0f IOPS), "
		      "min %.2f max %.2f\n", avg / 1e6, 1e9 / avg, min / 1e6, max / 1e6);
	assert_true(avg >= 5 * MS && avg <= 10 * MS);
	assert_true(1e9 / avg >= 100 && 1e9 / avg <= 200);
	/* Every one seeks (>= track-to-track), waits in [0, a turn), and transfers. */
	assert_true(min >= HDD_OVERHEAD + 20 * US);
	assert_true(max <= HDD_OVERHEAD + 15 * MS + 8334 * US + 21 * US);

	avg = det_random_avg(fx, "hdd", GiB, 2000, &min, &max);
	print_message("hdd, 1 GiB: QD1 random 4 KiB average %.2f ms (%.0f IOPS)\n",
		      avg / 1e6, 1e9 / avg);
	assert_true(1e9 / avg >= 100 && 1e9 / avg <= 200);

	/* Full stroke over the whole disk (capacity 0: the device size): the square-root
	 * curve averages 0.5 + 14.5 * 8/15 = 8.2 ms of seek, plus 4.17 ms of rotation,
	 * 0.8 ms of overhead: ~13.2 ms (a real 4 TB disk: 75-80 IOPS). */
	snprintf(text, sizeof(text), "%s", hdd_fifo_profile);
	memcpy(strstr(text, "capacity_gb = 4000"), "capacity_gb =    0", 18);
	p = write_profile(fx, "fullstroke.conf", text);
	avg = det_random_avg(fx, p, BIG_SIZE, 2000, &min, &max);
	print_message("hdd, full stroke: QD1 random 4 KiB average %.2f ms\n", avg / 1e6);
	assert_true(avg >= 12 * MS && avg <= 14500 * US);
}

/* 32 random reads queued at once: completion times and order, total time. */
static uint64_t det_queue(struct fixture *fx, const char *profile, struct batch *b,
			  uint8_t *buf)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 42, TC_LOG_WARN, NULL);
	tc_dev *dev = open_emu(fx, ctx, profile, BIG_SIZE);
	uint64_t s = 99, total;

	memset(b, 0, sizeof(*b));
	b->ctx = ctx;
	for (int i = 0; i < 32; i++)
		batch_add(b, TC_OP_READ, 0, rand_off(&s, BIG_SIZE, 4096), 4096, buf + i * 4096);
	total = batch_run(b, dev);
	tc_dev_close(dev);
	tc_ctx_free(ctx);
	unlink(fx->path);
	return total;
}

static void test_det_hdd_ncq(void **state)
{
	struct fixture *fx = *state;
	struct batch *ncq = calloc(1, sizeof(*ncq)), *fifo = calloc(1, sizeof(*fifo));
	uint8_t *buf = malloc(32 * 4096);
	const char *p = write_profile(fx, "fifo.conf", hdd_fifo_profile);
	uint64_t t_ncq = det_queue(fx, "hdd", ncq, buf);
	uint64_t t_fifo = det_queue(fx, p, fifo, buf);
	bool reordered = false;
	int i;

	print_message("32 queued random 4 KiB reads: NCQ %.1f ms, FIFO %.1f ms\n",
		      t_ncq / 1e6, t_fifo / 1e6);
	/* FIFO serves in submission order, each one a full positioning. */
	for (i = 0; i < 32; i++)
		assert_int_equal(fifo->order[i], i);
	assert_true(t_fifo >= 32 * (HDD_OVERHEAD + 520 * US));
	/* SPTF picks whichever sector comes round first: another order, much less time. */
	for (i = 0; i < 32; i++)
		reordered |= ncq->order[i] != i;
	assert_true(reordered);
	assert_true(t_ncq * 2 < t_fifo);
	/* One actuator: completions never coincide. */
	for (i = 1; i < 32; i++)
		assert_true(ncq->when[ncq->order[i]] > ncq->when[ncq->order[i - 1]]);
	free(ncq);
	free(fifo);
	free(buf);
}

/* A sequential stream that keeps 2 reads queued, and one far request beside it. */
struct stream {
	tc_dev *dev;
	tc_ctx *ctx;
	struct tc_io io[2];
	struct iovec iov[2];
	uint8_t *buf;
	uint64_t next_off;
	int left;
	uint64_t last_done;
	bool far_done;
	uint64_t far_when;
};

static void stream_done(struct tc_io *io, int result)
{
	struct stream *s = io->private_data;

	assert_int_equal(result, 0);
	s->last_done = tc_ctx_now(s->ctx);
	if (s->left-- > 0) {
		io->offset = s->next_off;
		s->next_off += MiB;
		tc_dev_submit(s->dev, io);
	}
}

static void far_done(struct tc_io *io, int result)
{
	struct stream *s = io->private_data;

	assert_int_equal(result, 0);
	s->far_when = tc_ctx_now(s->ctx);
	s->far_done = true;
}

static void test_det_hdd_starvation(void **state)
{
	struct fixture *fx = *state;
	struct stream s = { .ctx = fx->ctx, .left = 80, .buf = malloc(3 * MiB) };
	struct iovec fiov = { s.buf + 2 * MiB, 4096 };
	struct tc_io far = { .op = TC_OP_READ, .offset = 6 * GiB, .length = 4096,
			     .iov = &fiov, .iovcnt = 1, .done = far_done, .private_data = &s };
	bool idle = false;

	s.dev = open_emu(fx, NULL, "hdd", BIG_SIZE);
	for (int i = 0; i < 2; i++) {
		s.iov[i] = (struct iovec){ s.buf + (size_t)i * MiB, MiB };
		s.io[i] = (struct tc_io){ .op = TC_OP_READ, .offset = s.next_off, .length = MiB,
					  .iov = &s.iov[i], .iovcnt = 1, .done = stream_done,
					  .private_data = &s };
		s.next_off += MiB;
		tc_dev_submit(s.dev, &s.io[i]);
	}
	tc_dev_submit(s.dev, &far);
	/* Drive the clock by hand, as a replay does. */
	while (!idle) {
		uint64_t next;

		while (tc_ctx_poll(fx->ctx, 64) > 0)
			;
		next = tc_ctx_next_deadline(fx->ctx);
		if (next == UINT64_MAX)
			idle = true;
		else if (next > tc_ctx_now(fx->ctx))
			tc_ctx_advance(fx->ctx, next - tc_ctx_now(fx->ctx));
	}
	/* The stream (positioning 0) always wins SPTF, until the far request has waited
	 * max_wait_ms = 200: it then goes next, after the 1 MiB read in service. */
	assert_true(s.far_done);
	print_message("starved request served at %.1f ms, stream ended at %.1f ms\n",
		      s.far_when / 1e6, s.last_done / 1e6);
	assert_true(s.far_when >= 200 * MS);
	assert_true(s.far_when <= 200 * MS + 5243 * US + HDD_OVERHEAD + 15 * MS + 8334 * US);
	assert_true(s.last_done > s.far_when + 100 * MS);
	tc_dev_close(s.dev);
	free(s.buf);
}

static void test_det_flush_costs(void **state)
{
	struct fixture *fx = *state;
	uint8_t buf[4096] = { 1 };
	tc_dev *dev = open_emu(fx, NULL, "hdd", BIG_SIZE);
	uint64_t t0;

	t0 = tc_ctx_now(fx->ctx);
	assert_int_equal(tc_dev_flush(dev), 0);
	assert_int_equal(tc_ctx_now(fx->ctx) - t0, 1 * MS);
	/* Sequential 4 KiB write from the head at 0: transfer; FUA adds the flush. */
	t0 = tc_ctx_now(fx->ctx);
	assert_int_equal(tc_dev_pwrite(dev, buf, 4096, 0, 0), 0);
	assert_int_equal(tc_ctx_now(fx->ctx) - t0, 20480);
	t0 = tc_ctx_now(fx->ctx);
	assert_int_equal(tc_dev_pwrite(dev, buf, 4096, 4096, TC_IO_FUA), 0);
	assert_int_equal(tc_ctx_now(fx->ctx) - t0, 20480 + 1 * MS);
	tc_dev_close(dev);

	dev = open_emu(fx, NULL, "sata-ssd", BIG_SIZE);
	t0 = tc_ctx_now(fx->ctx);
	assert_int_equal(tc_dev_flush(dev), 0);
	assert_int_equal(tc_ctx_now(fx->ctx) - t0, 200 * US);
	t0 = tc_ctx_now(fx->ctx);
	assert_int_equal(tc_dev_pwrite(dev, buf, 4096, 0, TC_IO_FUA), 0);
	assert_int_equal(tc_ctx_now(fx->ctx) - t0, 60 * US + 200 * US);
	tc_dev_close(dev);
}

/* @n concurrent 4 KiB reads on @profile: the time until the last completes. */
static uint64_t det_concurrent(struct fixture *fx, const char *profile, int n,
			       struct batch *b, uint8_t *buf)
{
	tc_dev *dev = open_emu(fx, NULL, profile, BIG_SIZE);
	uint64_t s = 5, t;

	memset(b, 0, sizeof(*b));
	b->ctx = fx->ctx;
	for (int i = 0; i < n; i++)
		batch_add(b, TC_OP_READ, 0, rand_off(&s, BIG_SIZE, 4096), 4096, buf + i * 4096);
	t = batch_run(b, dev);
	tc_dev_close(dev);
	return t;
}

static void test_det_ssd_parallelism(void **state)
{
	struct fixture *fx = *state;
	struct batch *b = calloc(1, sizeof(*b));
	uint8_t *buf = malloc(64 * 4096);
	uint64_t one;

	/* SATA: 8 at once take as long as one (90 us); 16 take two rounds. */
	one = det_concurrent(fx, "sata-ssd", 1, b, buf);
	assert_int_equal(one, 90 * US);
	assert_int_equal(det_concurrent(fx, "sata-ssd", 8, b, buf), 90 * US);
	for (int i = 0; i < 8; i++)
		assert_int_equal(b->when[i] - b->when[0], 0);
	assert_int_equal(det_concurrent(fx, "sata-ssd", 16, b, buf), 180 * US);
	/* NVMe: 32 slots of 60 us. */
	assert_int_equal(det_concurrent(fx, "nvme-ssd", 1, b, buf), 60 * US);
	assert_int_equal(det_concurrent(fx, "nvme-ssd", 32, b, buf), 60 * US);
	assert_int_equal(det_concurrent(fx, "nvme-ssd", 64, b, buf), 120 * US);
	free(b);
	free(buf);
}

static void test_det_ssd_bandwidth(void **state)
{
	struct fixture *fx = *state;
	struct batch *b = calloc(1, sizeof(*b));
	uint8_t *buf = malloc(MiB);
	tc_dev *dev = open_emu(fx, NULL, "sata-ssd", BIG_SIZE);
	uint64_t t, want;
	double mbs;

	/* 48 x 1 MiB reads at once: the 550 MB/s link is the limit, not the 8 slots. */
	b->ctx = fx->ctx;
	for (int i = 0; i < 48; i++)
		batch_add(b, TC_OP_READ, 0, (uint64_t)i * MiB, MiB, buf);
	t = batch_run(b, dev);
	want = (uint64_t)(48.0 * MiB * 1e9 / 550e6 + 0.5);
	mbs = 48.0 * MiB * 1e3 / (double)t;
	print_message("sata-ssd: 48 x 1 MiB reads at once: %.1f MB/s\n", mbs);
	assert_true(t >= want - 48 && t <= want + 48);
	/* Each one a link slot later than the one before. */
	for (int i = 1; i < 48; i++) {
		int64_t gap = (int64_t)(b->when[i] - b->when[i - 1]);

		assert_int_equal(gap, 1906502);        /* 1 MiB at 550 MB/s */
	}
	/* Writes: 520 MB/s. */
	memset(b, 0, sizeof(*b));
	b->ctx = fx->ctx;
	for (int i = 0; i < 16; i++)
		batch_add(b, TC_OP_WRITE, 0, (uint64_t)i * MiB, MiB, buf);
	t = batch_run(b, dev);
	want = (uint64_t)(16.0 * MiB * 1e9 / 520e6 + 0.5);
	assert_true(t >= want - 16 && t <= want + 16);
	tc_dev_close(dev);
	free(b);
	free(buf);
}

/* ------------------------------------------------------------------------------------
 * Real time: the figures fio will see.
 */

/* QD1 random 4 KiB reads: IOPS of real time; *@model_iops: of model service time. */
static double thr_random_iops(struct fixture *fx, const char *profile, uint64_t size,
			      int n, double *model_iops)
{
	tc_dev *dev = open_emu(fx, NULL, profile, size);
	uint8_t buf[4096];
	uint64_t s = 31337, t0 = tc_ctx_now(fx->ctx), t;
	struct tc_emu_stats st;

	for (int i = 0; i < n; i++)
		assert_int_equal(tc_dev_pread(dev, buf, 4096, rand_off(&s, size, 4096)), 0);
	t = tc_ctx_now(fx->ctx) - t0;
	assert_int_equal(tc_emu_stats(dev, &st), 0);
	assert_int_equal(st.requests, n);
	*model_iops = n * 1e9 / (double)st.busy_ns;
	tc_dev_close(dev);
	return n * 1e9 / (double)t;
}

/* Sequential 1 MiB reads at QD1, MB/s of real time; *@model_mbs: of model time. */
static double thr_seq_mbs(struct fixture *fx, const char *profile, int n, double *model_mbs)
{
	tc_dev *dev = open_emu(fx, NULL, profile, BIG_SIZE);
	uint8_t *buf = malloc(MiB);
	struct tc_emu_stats st;
	uint64_t t0, t;
	int fd = open(fx->path, O_RDONLY);

	/* Bring the file into the page cache first: a host that reads a sparse file's holes
	 * at 200 MB/s would otherwise measure itself, not the model. */
	assert_true(fd >= 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pread(fd, buf, MiB, (off_t)((uint64_t)i * MiB)), (ssize_t)MiB);
	close(fd);
	t0 = tc_ctx_now(fx->ctx);
	for (int i = 0; i < n; i++)
		assert_int_equal(tc_dev_pread(dev, buf, MiB, (uint64_t)i * MiB), 0);
	t = tc_ctx_now(fx->ctx) - t0;
	assert_int_equal(tc_emu_stats(dev, &st), 0);
	assert_int_equal(st.requests, n);
	assert_int_equal(st.positioned, 0);
	*model_mbs = n * (double)MiB * 1e3 / (double)st.busy_ns;
	tc_dev_close(dev);
	free(buf);
	return n * (double)MiB * 1e3 / (double)t;
}

/*
 * Real-time figures depend on the machine: a test run beside a parallel build (or under
 * ThreadSanitizer) sees its device thread wake milliseconds late.  The model's own
 * figures (service times on the real clock) are asserted tightly every time; the
 * real-time ones have upper bounds that hold in every attempt (load only ever makes
 * them slower) and loose lower bounds that must hold in one of THR_ATTEMPTS attempts.
 */
#define THR_ATTEMPTS 4

static void test_thr_hdd_calibration(void **state)
{
	struct fixture *fx = *state;
	double iops = 0, model_iops, mbs = 0, model_mbs;
	bool iops_ok = false, mbs_ok = false;

	/* 100 requests over 8 GiB: model 171 IOPS; the mean rotational latency of 100 is
	 * known to +-0.25 ms (1 sigma), i.e. +-7 IOPS: 200 is 4 sigma away. */
	for (int i = 0; i < THR_ATTEMPTS && !iops_ok; i++) {
		iops = thr_random_iops(fx, "hdd", BIG_SIZE, 100, &model_iops);
		print_message("hdd, threaded: QD1 random 4 KiB over 8 GiB: %.0f IOPS (model "
			      "%.0f)\n", iops, model_iops);
		assert_true(model_iops >= 130 && model_iops <= 200);
		assert_true(iops <= 200);
		iops_ok = iops >= 100;
	}
	assert_true(iops_ok);
	for (int i = 0; i < THR_ATTEMPTS && !mbs_ok; i++) {
		mbs = thr_seq_mbs(fx, "hdd", 24, &model_mbs);
		print_message("hdd, threaded: sequential 1 MiB: %.1f MB/s (model %.1f)\n", mbs,
			      model_mbs);
		assert_true(model_mbs >= 199.9 && model_mbs <= 200.1);
		assert_true(mbs <= 200.1);
		mbs_ok = mbs >= 120;
	}
	assert_true(mbs_ok);
	unlink(fx->path);
}

static void test_thr_ssd(void **state)
{
	struct fixture *fx = *state;
	double iops, model_iops;
	struct batch *b = calloc(1, sizeof(*b));
	uint8_t *buf = malloc(16 * 4096);
	bool ok = false;
	tc_dev *dev;
	uint64_t t;

	/* The model: 90 us each.  Real time adds the wake-ups of each request. */
	for (int i = 0; i < THR_ATTEMPTS && !ok; i++) {
		iops = thr_random_iops(fx, "sata-ssd", BIG_SIZE, 400, &model_iops);
		print_message("sata-ssd, threaded: QD1 random 4 KiB %.0f IOPS (model %.0f)\n",
			      iops, model_iops);
		assert_true(model_iops >= 11110 && model_iops <= 11112);
		assert_true(iops <= 11112);
		ok = iops >= 2000;
	}
	assert_true(ok);

	/* 8 at once are served together (no queueing in the model), and complete about
	 * one latency after submission. */
	dev = open_emu(fx, NULL, "sata-ssd", BIG_SIZE);
	ok = false;
	for (int i = 0; i < THR_ATTEMPTS && !ok; i++) {
		struct tc_emu_stats st0, st1;

		memset(b, 0, sizeof(*b));
		b->ctx = fx->ctx;
		for (int j = 0; j < 8; j++)
			batch_add(b, TC_OP_READ, 0, (uint64_t)j * 8 * MiB, 4096, buf + j * 4096);
		assert_int_equal(tc_emu_stats(dev, &st0), 0);
		t = batch_run(b, dev);
		assert_int_equal(tc_emu_stats(dev, &st1), 0);
		assert_int_equal(st1.requests - st0.requests, 8);
		assert_int_equal(st1.busy_ns - st0.busy_ns, 8 * 90 * US);
		assert_true(t >= 90 * US);
		ok = st1.wait_ns == st0.wait_ns && t < 2 * MS;
	}
	assert_true(ok);
	tc_dev_close(dev);
	unlink(fx->path);
	free(b);
	free(buf);
}

/* ------------------------------------------------------------------------------------
 * Calibration run (TC_EMU_CALIBRATE=1): longer, prints the figures.
 */

struct qd_loop {
	tc_dev *dev;
	tc_ctx *ctx;
	uint64_t size, len, rng;
	bool seq;
	uint64_t next_off;
	int left, inflight, errors;
	bool all_done;
	struct tc_io io[32];
	struct iovec iov[32];
	uint8_t *buf;
};

static void qd_done(struct tc_io *io, int result)
{
	struct qd_loop *q = io->private_data;
	bool finished = false;

	/* Completions come from one device thread: no lock needed. */
	if (result < 0)
		q->errors++;
	if (q->left > 0) {
		q->left--;
		io->offset = q->seq ? q->next_off : rand_off(&q->rng, q->size, q->len);
		q->next_off += q->len;
		tc_dev_submit(q->dev, io);
		return;
	}
	finished = --q->inflight == 0;
	if (finished) {
		__atomic_store_n(&q->all_done, true, __ATOMIC_RELEASE);
		tc_ctx_wake(q->ctx);
	}
}

/* @n requests of @len at queue depth @qd; returns requests per second. */
static double qd_run(struct fixture *fx, const char *profile, uint64_t size, uint64_t len,
		     bool seq, int qd, int n)
{
	struct qd_loop *q = calloc(1, sizeof(*q));
	uint64_t t0;
	double rate;

	q->dev = open_emu(fx, NULL, profile, size);
	q->ctx = fx->ctx;
	q->size = size;
	q->len = len;
	q->rng = 4242;
	q->seq = seq;
	q->buf = malloc((size_t)len * (size_t)qd);
	q->left = n - qd;
	q->inflight = qd;
	if (seq) {
		/* Page cache first: measure the model, not this host's sparse-file reads. */
		int fd = open(fx->path, O_RDONLY);

		assert_true(fd >= 0);
		for (uint64_t off = 0; off < (uint64_t)n * len; off += len)
			assert_int_equal(pread(fd, q->buf, len, (off_t)off), (ssize_t)len);
		close(fd);
	}
	t0 = tc_ctx_now(fx->ctx);
	for (int i = 0; i < qd; i++) {
		q->iov[i] = (struct iovec){ q->buf + (size_t)i * len, len };
		q->io[i] = (struct tc_io){ .op = TC_OP_READ, .length = len, .iov = &q->iov[i],
					   .iovcnt = 1, .done = qd_done, .private_data = q };
		q->io[i].offset = seq ? q->next_off : rand_off(&q->rng, size, len);
		q->next_off += len;
	}
	for (int i = 0; i < qd; i++)
		tc_dev_submit(q->dev, &q->io[i]);
	assert_int_equal(tc_ctx_wait_until(fx->ctx, &q->all_done), 0);
	assert_int_equal(q->errors, 0);
	rate = n * 1e9 / (double)(tc_ctx_now(fx->ctx) - t0);
	tc_dev_close(q->dev);
	unlink(fx->path);
	free(q->buf);
	free(q);
	return rate;
}

static void test_calibrate(void **state)
{
	struct fixture *fx = *state;
	const char *mode = tc_ctx_deterministic(fx->ctx) ? "virtual" : "real";
	double r;

	if (!getenv("TC_EMU_CALIBRATE"))
		skip();
	r = qd_run(fx, "hdd", GiB, 4096, false, 1, 400);
	print_message("[%s] hdd  QD1  random 4K over 1 GiB: %7.0f IOPS\n", mode, r);
	r = qd_run(fx, "hdd", BIG_SIZE, 4096, false, 1, 400);
	print_message("[%s] hdd  QD1  random 4K over 8 GiB: %7.0f IOPS\n", mode, r);
	r = qd_run(fx, "hdd", 4000000000000ull, 4096, false, 1, 200);
	print_message("[%s] hdd  QD1  random 4K over 4 TB : %7.0f IOPS\n", mode, r);
	r = qd_run(fx, "hdd", BIG_SIZE, 4096, false, 32, 1000);
	print_message("[%s] hdd  QD32 random 4K over 8 GiB: %7.0f IOPS\n", mode, r);
	r = qd_run(fx, "hdd", BIG_SIZE, MiB, true, 1, 100);
	print_message("[%s] hdd  QD1  sequential 1M       : %7.1f MB/s\n", mode, r * MiB / 1e6);
	for (int i = 0; i < 2; i++) {
		const char *p = i ? "nvme-ssd" : "sata-ssd";

		r = qd_run(fx, p, BIG_SIZE, 4096, false, 1, 4000);
		print_message("[%s] %s QD1  random 4K: %7.0f IOPS\n", mode, p, r);
		r = qd_run(fx, p, BIG_SIZE, 4096, false, 32, 40000);
		print_message("[%s] %s QD32 random 4K: %7.0f IOPS\n", mode, p, r);
		r = qd_run(fx, p, BIG_SIZE, MiB, true, 4, 400);
		print_message("[%s] %s QD4  sequential 1M: %7.1f MB/s\n", mode, p, r * MiB / 1e6);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shipped_profiles, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_bad_profiles, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_open_flags, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_open_flags, setup_thr, teardown),
		cmocka_unit_test_setup_teardown(test_data, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_data, setup_thr, teardown),
		cmocka_unit_test_setup_teardown(test_det_never_inline, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_hdd_sequential, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_hdd_random, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_hdd_ncq, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_hdd_starvation, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_flush_costs, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_ssd_parallelism, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_det_ssd_bandwidth, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_thr_hdd_calibration, setup_thr, teardown),
		cmocka_unit_test_setup_teardown(test_thr_ssd, setup_thr, teardown),
		cmocka_unit_test_setup_teardown(test_calibrate, setup_det, teardown),
		cmocka_unit_test_setup_teardown(test_calibrate, setup_thr, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
