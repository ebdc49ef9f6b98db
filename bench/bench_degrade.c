/* SPDX-License-Identifier: MIT */
/*
 * bench_degrade.c - tc-bench-degrade: how fast a write-back volume's dirty data
 * reaches the backing when its cache pool loses a member (write-back held,
 * docs/pools.md), against an explicit flush of the same data, and what a client's
 * writes cost meanwhile.
 *
 * The backing is a RAID 6 of 6 emulated HDDs (profiles/hdd.conf, chunk 256 KiB), the
 * cache a RAID 1 of 2 emulated SATA SSDs, over sparse files in a temporary folder.
 * Each round formats them afresh, measures the client below in write-back (and
 * writes its data back), makes --dirty MiB dirty in wb with 64 KiB writes at
 * scattered line-aligned offsets (flush rate low: nothing is written back meanwhile),
 * then either fails a cache member ("held": the cache holds write-back and its
 * cleaner writes back flat out) or calls tc_volume_flush_dirty() ("flush"), and
 * measures the time until no dirty byte is left.  Meanwhile a client thread writes
 * 4 KiB at random (its own range, apart from the dirty data) one at a time: their
 * median latency during the drain, against the same writes before it (write-back,
 * into the cache).  Rounds alternate (flush, held, ...); medians of the rounds.
 *
 *   tc-bench-degrade [--dirty MIB] [--rounds N] [--tmpdir DIR]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiercache.h"
#define BENCH_NAME "tc-bench-degrade"
#include "bench_common.h"
#include "rig.h"

#define LINE (64 * KIB)
#define MAX_ROUNDS 15
#define MAX_LAT 100000

struct env {
	struct rig rig;
	uint64_t dirty;           /* bytes made dirty per round */
	uint64_t vol_size;
};

struct client {
	tc_volume *vol;
	uint64_t base, span;      /* bytes: the client's range */
	atomic_bool stop;
	uint64_t lat[MAX_LAT];
	unsigned n;
	int err;
};

static void *client_main(void *arg)
{
	struct client *cl = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);
	uint64_t x = 0x2545f4914f6cdd1dull;
	memset(buf, 0x6b, 4096);
	while (!atomic_load(&cl->stop) && cl->n < MAX_LAT && !cl->err) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t off = cl->base + (x % (cl->span / 4096)) * 4096;
		uint64_t t0 = now_ns();
		cl->err = tc_volume_pwrite(cl->vol, buf, 4096, off, 0);
		cl->lat[cl->n++] = now_ns() - t0;
	}
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median_u64(uint64_t *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* The client's median write latency (ns) over @ns of running. */
static uint64_t client_run(struct client *cl, uint64_t ns, bool (*until)(void *), void *arg)
{
	pthread_t th;
	cl->n = 0;
	atomic_store(&cl->stop, false);
	if (pthread_create(&th, NULL, client_main, cl))
		die("start the client", errno);
	uint64_t t0 = now_ns();
	while (until ? !until(arg) : now_ns() - t0 < ns) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	atomic_store(&cl->stop, true);
	pthread_join(th, NULL);
	if (cl->err)
		die("client write", cl->err);
	return median_u64(cl->lat, cl->n);
}

static bool vol_clean(void *arg)
{
	struct tc_volume_stats st;
	tc_volume_stats(arg, &st);
	return st.dirty_bytes == 0;
}

struct flush_arg {
	tc_volume *vol;
	atomic_bool done;
	int err;
};

static void *flush_main(void *arg)
{
	struct flush_arg *f = arg;
	f->err = tc_volume_flush_dirty(f->vol, NULL, NULL);
	atomic_store(&f->done, true);
	return NULL;
}

static bool flush_done(void *arg)
{
	return atomic_load(&((struct flush_arg *)arg)->done);
}

/* One round: seconds until clean, client latency before and during (ns). */
static void round_run(struct env *e, bool held, uint8_t *buf, double *secs,
		      uint64_t *lat_before, uint64_t *lat_during)
{
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.flush_rate = TC_FLUSH_LOW;
	rig_open(&e->rig, e->vol_size / 4 + 64 * MIB, 4 * e->dirty + 64 * MIB, &s);
	tc_volume *vol = e->rig.vol;
	/* The client's writes in write-back first (then written back, so that the drain
	 * measured is of the dirty lines below only). */
	struct client *cl = calloc(1, sizeof(*cl));
	cl->vol = vol;
	cl->base = e->vol_size / 2;
	cl->span = 64 * MIB;
	*lat_before = client_run(cl, 300000000ull, NULL, NULL);
	CHECK(tc_volume_flush_dirty(vol, NULL, NULL), "flush the client's writes");
	/* Dirty lines at scattered offsets of the first half (a multiplicative walk). */
	uint64_t lines = e->vol_size / 2 / LINE, n = e->dirty / LINE;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l = (i * 40503u + 7) % lines;
		CHECK(tc_volume_pwrite(vol, buf, LINE, l * LINE, 0), "write");
	}
	uint64_t t0 = now_ns();
	if (held) {
		CHECK(tc_array_fail_member(e->rig.ssd, 1), "fail a cache member");
		*lat_during = client_run(cl, 0, vol_clean, vol);
	} else {
		struct flush_arg f = { .vol = vol };
		pthread_t th;
		if (pthread_create(&th, NULL, flush_main, &f))
			die("start the flush", errno);
		*lat_during = client_run(cl, 0, flush_done, &f);
		pthread_join(th, NULL);
		CHECK(f.err, "flush");
	}
	*secs = (double)(now_ns() - t0) / 1e9;
	free(cl);
	rig_close(&e->rig);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char usage[] =
"usage: tc-bench-degrade [--dirty MIB] [--rounds N] [--tmpdir DIR]\n"
"  A write-back volume on a RAID 6 of 6 emulated HDDs, cached on a RAID 1 of 2\n"
"  emulated SATA SSDs: time until its dirty data is written back when a cache member\n"
"  fails (held) against an explicit flush, and a client's 4 KiB write latency before\n"
"  and during; alternating rounds, medians.\n"
"  --dirty MIB   dirty data per round, in 64 KiB lines (default 16)\n"
"  --rounds N    rounds of each, 1..15 (default 3)\n"
"  --tmpdir DIR  where the sparse member files go (default $TMPDIR or /tmp)\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dirty", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct env e = { .dirty = 16 * MIB, .vol_size = 2 * GIB };
	unsigned rounds = 3;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			e.dirty = bench_ulong_arg("--dirty (MiB)", optarg, 1, 1024) * MIB;
			break;
		case 'r':
			rounds = (unsigned)bench_ulong_arg("--rounds", optarg, 1, MAX_ROUNDS);
			break;
		case 't': tmp = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	rig_init(&e.rig, tmp, BENCH_NAME, TC_LOG_ERROR);
	uint8_t *buf = aligned_alloc(4096, LINE);
	if (!buf)
		die("allocate", ENOMEM);
	memset(buf, 0x3c, LINE);

	double secs[2][MAX_ROUNDS];
	uint64_t before[2][MAX_ROUNDS], during[2][MAX_ROUNDS];
	static const char *const name[2] = { "flush", "held" };
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned m = 0; m < 2; m++) {
			round_run(&e, m == 1, buf, &secs[m][r], &before[m][r], &during[m][r]);
			fprintf(stderr, "round %u %-5s %6.2f s to clean; client 4 KiB writes p50 "
				"%.2f ms before, %.2f ms during\n", r + 1, name[m], secs[m][r],
				before[m][r] / 1e6, during[m][r] / 1e6);
		}
	printf("%" PRIu64 " MiB dirty in 64 KiB lines, RAID 6 of 6 emulated HDDs, cache RAID 1 "
	       "of 2 emulated SATA SSDs, median of %u rounds\n", e.dirty / MIB, rounds);
	double med[2];
	for (unsigned m = 0; m < 2; m++) {
		qsort(secs[m], rounds, sizeof(double), cmp_double);
		med[m] = secs[m][rounds / 2];
		printf("  %-5s %6.2f s to clean; client write p50 %.2f ms before, %.2f ms during\n",
		       name[m], med[m], median_u64(before[m], rounds) / 1e6,
		       median_u64(during[m], rounds) / 1e6);
	}
	printf("  held / flush (time to clean): %.2f\n", med[1] / med[0]);
	free(buf);
	rig_free(&e.rig);
	return 0;
}
