/* SPDX-License-Identifier: MIT */
/*
 * bench_raid.c - tc-bench-raid: what the array layer costs on top of its members.
 *
 * Full-stripe sequential writes, then sequential reads, of a RAID 6 array of 6
 * memory members (chunk 256 KiB, so 1 MiB full stripes, requests of 1 MiB at queue
 * depth 8), against one memory device of the array's size driven the same way.  The
 * memory devices do their copying on the context's worker thread, and the array does
 * its parity on the thread that completes the last member request: the worker too,
 * so both runs are one thread's work and the ratio is the array's cost per byte.
 * Each device is written once before the measured passes (the memory is mapped in
 * then).  Also the process CPU time per GiB written, for both, and its difference: the
 * parity and bookkeeping cost per GiB of data.  Runs alternate (device, array, ...)
 * so drift of a shared machine hits both alike; the median of the rounds is quoted.
 *
 *   tc-bench-raid [--size MIB] [--rounds N]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tiercache.h"
#define BENCH_NAME "tc-bench-raid"
#include "bench_common.h"

#define REQ (1024 * KIB)        /* one full stripe of the RAID 6 measured */
#define QD 8u
#define MEMBERS 6u
#define MAX_ROUNDS 15

struct slot {
	struct tc_io io;
	struct iovec iov;
	struct bench_q *q;
};

struct bench_q {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight;
	int err;
};

static void slot_done(struct tc_io *io, int result)
{
	struct slot *s = io->private_data;
	struct bench_q *q = s->q;

	pthread_mutex_lock(&q->lock);
	if (result < 0 && !q->err)
		q->err = result;
	q->inflight--;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One sequential pass of @op over @size bytes of @dev; wall and CPU time in ns. */
static void pass(tc_dev *dev, unsigned op, uint64_t size, uint8_t *bufs, uint64_t *wall,
		 uint64_t *cpu)
{
	struct bench_q q = { .inflight = 0 };
	struct slot s[QD];
	uint64_t off = 0, t0 = now_ns(), c0 = cpu_ns();
	unsigned next = 0;

	pthread_mutex_init(&q.lock, NULL);
	pthread_cond_init(&q.cond, NULL);
	pthread_mutex_lock(&q.lock);
	while (off < size || q.inflight) {
		while (off < size && q.inflight < QD) {
			struct slot *sl = &s[next];
			sl->q = &q;
			sl->iov = (struct iovec){ bufs + (uint64_t)next * REQ, REQ };
			sl->io = (struct tc_io){ .op = (uint8_t)op, .offset = off, .length = REQ,
						 .iov = &sl->iov, .iovcnt = 1, .done = slot_done,
						 .private_data = sl };
			q.inflight++;
			off += REQ;
			next = (next + 1) % QD;
			/* The slot about to be reused has completed: at most QD in flight and
			 * slots are taken in order. */
			pthread_mutex_unlock(&q.lock);
			tc_dev_submit(dev, &sl->io);
			pthread_mutex_lock(&q.lock);
		}
		if (q.inflight)
			pthread_cond_wait(&q.cond, &q.lock);
	}
	pthread_mutex_unlock(&q.lock);
	if (q.err)
		die("request", q.err);
	*wall = now_ns() - t0;
	*cpu = cpu_ns() - c0;
	pthread_cond_destroy(&q.cond);
	pthread_mutex_destroy(&q.lock);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void)
{
	printf("usage: " BENCH_NAME " [--size MIB] [--rounds N]\n"
	       "  Full-stripe sequential write and read throughput of a RAID 6 array of %u\n"
	       "  memory members (chunk 256 KiB, 1 MiB requests at QD %u) against one memory\n"
	       "  device of the array's size, and CPU time per GiB written.\n"
	       "  --size MIB   array size (default 256, a multiple of 4)\n"
	       "  --rounds N   alternating rounds, median quoted (default 5, at most %u)\n",
	       MEMBERS, QD, MAX_ROUNDS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size_mib = 256;
	unsigned rounds = 5;
	int c;

	while ((c = getopt_long(argc, argv, "s:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			size_mib = strtoull(optarg, NULL, 10);
			if (size_mib < 4 || size_mib % 4)
				bad_usage("--size %s: not a multiple of 4 MiB", optarg);
			break;
		case 'r':
			rounds = (unsigned)strtoul(optarg, NULL, 10);
			if (rounds < 1 || rounds > MAX_ROUNDS)
				bad_usage("--rounds %s: not 1 to 15", optarg);
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	uint64_t size = size_mib * MIB;
	struct tc_ctx_opts co = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_WARN };
	tc_ctx *ctx;
	CHECK(tc_ctx_new(&co, &ctx), "context");
	tc_ctx_set_log(ctx, log_sink, NULL, TC_LOG_WARN);
	uint8_t *bufs = aligned_alloc(4096, QD * REQ);
	if (!bufs)
		die("buffers", ENOMEM);
	for (uint64_t i = 0; i < QD * REQ; i++)
		bufs[i] = (uint8_t)(i * 2654435761u >> 13);

	double wr[2][MAX_ROUNDS], rd[2][MAX_ROUNDS], cpu[2][MAX_ROUNDS];
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned which = 0; which < 2; which++) {
			tc_dev *dev;
			if (which == 0) {
				CHECK(tc_dev_new_memory(ctx, size, &dev), "memory device");
			} else {
				tc_dev *m[MEMBERS];
				struct tc_array_opts ao = { .level = TC_RAID6, .chunk = 256 * KIB };
				for (unsigned i = 0; i < MEMBERS; i++)
					CHECK(tc_dev_new_memory(ctx, size / (MEMBERS - 2), &m[i]),
					      "member");
				CHECK(tc_dev_new_array(ctx, &ao, m, MEMBERS, &dev), "array");
			}
			uint64_t wall, c_ns;
			/* A first pass maps the memory in; the second one is measured. */
			pass(dev, TC_OP_WRITE, size, bufs, &wall, &c_ns);
			pass(dev, TC_OP_WRITE, size, bufs, &wall, &c_ns);
			wr[which][r] = (double)size / MIB / ((double)wall / 1e9);
			cpu[which][r] = (double)c_ns / 1e9 / ((double)size / GIB);
			pass(dev, TC_OP_READ, size, bufs, &wall, &c_ns);
			rd[which][r] = (double)size / MIB / ((double)wall / 1e9);
			tc_dev_close(dev);
		}
	double w0 = median(wr[0], rounds), w1 = median(wr[1], rounds);
	double r0 = median(rd[0], rounds), r1 = median(rd[1], rounds);
	double c0 = median(cpu[0], rounds), c1 = median(cpu[1], rounds);
	printf("RAID 6 of %u memory members, chunk 256 KiB, %" PRIu64 " MiB, %u rounds\n",
	       MEMBERS, size_mib, rounds);
	printf("  full-stripe write  device %8.0f MiB/s  array %8.0f MiB/s  array/device %.2f\n",
	       w0, w1, w1 / w0);
	printf("  sequential read    device %8.0f MiB/s  array %8.0f MiB/s  array/device %.2f\n",
	       r0, r1, r1 / r0);
	printf("  CPU per GiB written  device %.3f s  array %.3f s  array/device %.2f  "
	       "(array's extra: %.3f s/GiB)\n", c0, c1, c1 / c0, c1 - c0);
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}
