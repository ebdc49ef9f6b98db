/* SPDX-License-Identifier: MIT */
/*
 * bench_busy.c - tc-bench-busy: what the cleaner costs a parity array's clients while
 * they are busy, and what it leaves to write back afterwards (docs/benchmarks.md,
 * "Cleaning while clients are busy").
 *
 * The rig of bench/rig.h: a RAID 6 of 6 emulated HDDs (full stripes of 1 MiB) cached
 * on a RAID 1 of 2 emulated SATA SSDs (64 KiB lines), the volume in write-back with
 * flush rate high (the cleaner may write back at any time, as fast as it can).  For
 * --secs seconds two clients run at once:
 *   writer  random 4 KiB writes over a hot range of --hot MiB at the start of the
 *           volume, --rate per second (paced, one at a time): the cache absorbs
 *           them, the cleaner writes them back;
 *   reader  random 4 KiB reads, one at a time, over 2 GiB from 1 GiB on that the cache
 *           has never seen: each a miss served by the array, so its latency is what
 *           the array's time is worth to a client while the cleaner uses it.
 * Then the volume's clients stop and tc_volume_flush_dirty() writes back what is left.
 * Reported per round and as medians: the reader's median and 99th-percentile latency
 * and reads per second, the array's partial-stripe writes (read-modify-write and
 * reconstruct-write) and full-stripe writes during the busy time and during the final
 * flush, the dirty data left, and the time the flush took.  Rounds build the rig
 * afresh; run the same binary against two libraries (LD_LIBRARY_PATH) alternating to
 * compare two cleaners.
 *
 *   tc-bench-busy [--hot MIB] [--rate N] [--secs S] [--rounds N] [--tmpdir DIR]
 *                 [--json]
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
#include <time.h>
#include <unistd.h>

#include "tiercache.h"
#define BENCH_NAME "tc-bench-busy"
#include "bench_common.h"
#include "rig.h"

#define MAX_ROUNDS 15
#define MAX_READS 200000u
#define READ_BASE (1 * GIB)
#define READ_SPAN (2 * GIB)

struct client {
	tc_volume *vol;
	atomic_bool *stop;
	uint64_t hot;             /* writer: bytes of its range */
	unsigned rate;            /* writer: writes per second */
	uint64_t writes;
	uint64_t *lat;            /* reader: ns per read */
	unsigned nlat;
	int err;
};

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *writer_main(void *arg)
{
	struct client *cl = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);
	uint64_t x = 0x2545f4914f6cdd1dull, t0 = now_ns();
	memset(buf, 0x5a, 4096);
	while (!atomic_load(cl->stop) && !cl->err) {
		/* Paced: the k-th write not before k / rate seconds. */
		uint64_t due = t0 + cl->writes * 1000000000ull / cl->rate, now = now_ns();
		if (now < due) {
			struct timespec ts = { 0, (long)(due - now) };
			nanosleep(&ts, NULL);
			continue;
		}
		uint64_t off = (next_rand(&x) % (cl->hot / 4096)) * 4096;
		cl->err = tc_volume_pwrite(cl->vol, buf, 4096, off, 0);
		cl->writes++;
	}
	free(buf);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct client *cl = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	while (!atomic_load(cl->stop) && !cl->err && cl->nlat < MAX_READS) {
		uint64_t off = READ_BASE + (next_rand(&x) % (READ_SPAN / 4096)) * 4096;
		uint64_t t0 = now_ns();
		cl->err = tc_volume_pread(cl->vol, buf, 4096, off);
		cl->lat[cl->nlat++] = now_ns() - t0;
	}
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One round's figures (counts too, as doubles: medians of them all alike). */
struct result {
	double p50_ms, p99_ms, reads_s, writes_s;
	double busy_partial, busy_full, flush_partial, flush_full;
	double dirty_mib, flush_s;
};

static uint64_t partial_writes(const struct tc_array_status *a)
{
	return a->stripe_writes_rmw + a->stripe_writes_rcw;
}

static void round_run(struct rig *rig, uint64_t hot, unsigned rate, double secs,
		      struct result *res)
{
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	s.flush_rate = TC_FLUSH_HIGH;
	rig_open(rig, 1 * GIB, 1 * GIB, &s);
	atomic_bool stop = false;
	struct client w = { .vol = rig->vol, .stop = &stop, .hot = hot, .rate = rate };
	struct client r = { .vol = rig->vol, .stop = &stop };
	r.lat = malloc(sizeof(*r.lat) * MAX_READS);
	if (!r.lat)
		die("allocate", ENOMEM);
	struct tc_array_status a0, a1, a2;
	CHECK(tc_array_status(rig->hdd, &a0), "array status");
	pthread_t tw, tr;
	if (pthread_create(&tw, NULL, writer_main, &w) ||
	    pthread_create(&tr, NULL, reader_main, &r))
		die("start the clients", errno);
	uint64_t t0 = now_ns();
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	double busy = (double)(now_ns() - t0) / 1e9;
	if (w.err)
		die("write", w.err);
	if (r.err)
		die("read", r.err);
	CHECK(tc_array_status(rig->hdd, &a1), "array status");
	struct tc_volume_stats vs;
	tc_volume_stats(rig->vol, &vs);
	res->dirty_mib = (double)vs.dirty_bytes / (double)MIB;
	uint64_t f0 = now_ns();
	CHECK(tc_volume_flush_dirty(rig->vol, NULL, NULL), "flush");
	res->flush_s = (double)(now_ns() - f0) / 1e9;
	CHECK(tc_array_status(rig->hdd, &a2), "array status");
	qsort(r.lat, r.nlat, sizeof(*r.lat), cmp_u64);
	res->p50_ms = r.nlat ? (double)r.lat[r.nlat / 2] / 1e6 : 0;
	res->p99_ms = r.nlat ? (double)r.lat[(uint64_t)r.nlat * 99 / 100] / 1e6 : 0;
	res->reads_s = r.nlat / busy;
	res->writes_s = (double)w.writes / busy;
	res->busy_partial = (double)(partial_writes(&a1) - partial_writes(&a0));
	res->busy_full = (double)(a1.stripe_writes_full - a0.stripe_writes_full);
	res->flush_partial = (double)(partial_writes(&a2) - partial_writes(&a1));
	res->flush_full = (double)(a2.stripe_writes_full - a1.stripe_writes_full);
	free(r.lat);
	rig_close(rig);
}

/* The median over the rounds of the field at @field of struct result. */
static double median_of(const struct result *rs, unsigned n, size_t field)
{
	double v[MAX_ROUNDS];
	for (unsigned i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&rs[i] + field);
	return bench_median(v, (int)n);
}

static const char usage[] =
"usage: tc-bench-busy [OPTION]...\n"
"  A write-back volume (flush rate high) on a RAID 6 of 6 emulated HDDs, cached on a\n"
"  RAID 1 of 2 emulated SATA SSDs: for --secs seconds a writer makes random 4 KiB\n"
"  writes over a hot range while a reader reads 4 KiB at random from 2 GiB the cache\n"
"  has not seen (array reads); then the dirty data left is flushed.  Reports the\n"
"  reader's latency, the array's partial- and full-stripe writes during the busy time\n"
"  and the flush, the dirty data left and the flush's time; medians of the rounds.\n"
"  --hot MIB     the writer's range (default 64)\n"
"  --rate N      the writer's writes per second (default 500)\n"
"  --secs S      the busy time per round, seconds (default 10)\n"
"  --rounds N    rounds, 1..15 (default 3)\n"
"  --tmpdir DIR  where the sparse member files go (default $TMPDIR or /tmp)\n"
"  --json        one JSON object on standard output instead of the table\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hot", required_argument, NULL, 'H' },
		{ "rate", required_argument, NULL, 'R' },
		{ "secs", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t hot = 64 * MIB;
	unsigned rate = 500, rounds = 3;
	double secs = 10;
	bool json = false;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			hot = bench_ulong_arg("--hot (MiB)", optarg, 1, 1024) * MIB;
			break;
		case 'R':
			rate = (unsigned)bench_ulong_arg("--rate", optarg, 1, 100000);
			break;
		case 's':
			secs = (double)bench_ulong_arg("--secs", optarg, 1, 3600);
			break;
		case 'r':
			rounds = (unsigned)bench_ulong_arg("--rounds", optarg, 1, MAX_ROUNDS);
			break;
		case 't': tmp = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	struct rig rig = { 0 };
	rig_init(&rig, tmp, BENCH_NAME, TC_LOG_ERROR);
	struct result res[MAX_ROUNDS];
	for (unsigned i = 0; i < rounds; i++) {
		struct result *x = &res[i];
		round_run(&rig, hot, rate, secs, x);
		fprintf(stderr, "round %u: reads p50 %.2f ms p99 %.2f ms, %.0f/s; writes %.0f/s; "
			"partial-stripe writes %.0f busy + %.0f flush, full %.0f + %.0f; "
			"%.1f MiB left dirty, flushed in %.2f s\n",
			i + 1, x->p50_ms, x->p99_ms, x->reads_s, x->writes_s, x->busy_partial,
			x->flush_partial, x->busy_full, x->flush_full, x->dirty_mib, x->flush_s);
	}
#define MD(f) median_of(res, rounds, offsetof(struct result, f))
	if (json) {
		printf("{\"hot_mib\": %" PRIu64 ", \"rate\": %u, \"secs\": %.0f, \"rounds\": %u, "
		       "\"read_p50_ms\": %.3f, \"read_p99_ms\": %.3f, \"reads_per_s\": %.1f, "
		       "\"writes_per_s\": %.1f, \"busy_partial_stripe_writes\": %.0f, "
		       "\"busy_full_stripe_writes\": %.0f, \"flush_partial_stripe_writes\": %.0f, "
		       "\"flush_full_stripe_writes\": %.0f, \"dirty_left_mib\": %.2f, "
		       "\"flush_s\": %.3f}\n", hot / MIB, rate, secs, rounds, MD(p50_ms),
		       MD(p99_ms), MD(reads_s), MD(writes_s), MD(busy_partial), MD(busy_full),
		       MD(flush_partial), MD(flush_full), MD(dirty_mib), MD(flush_s));
	} else {
		printf("RAID 6 of 6 emulated HDDs, cache RAID 1 of 2 emulated SATA SSDs, wb, "
		       "flush rate high; writer %u/s over %" PRIu64 " MiB, reader over 2 GiB "
		       "uncached, %.0f s, median of %u rounds\n", rate, hot / MIB, secs, rounds);
		printf("  reader: p50 %.2f ms, p99 %.2f ms, %.0f reads/s\n", MD(p50_ms),
		       MD(p99_ms), MD(reads_s));
		printf("  array partial-stripe writes: %.0f while busy, %.0f in the flush\n",
		       MD(busy_partial), MD(flush_partial));
		printf("  array full-stripe writes:    %.0f while busy, %.0f in the flush\n",
		       MD(busy_full), MD(flush_full));
		printf("  left dirty: %.1f MiB, flushed in %.2f s\n", MD(dirty_mib), MD(flush_s));
	}
	rig_free(&rig);
	return 0;
}
