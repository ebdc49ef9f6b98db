/* SPDX-License-Identifier: MIT */
/*
 * bench_scenario.c - tc-bench-scenario: the scenario of the reviews of SSD-caching RAID
 * controllers (docs/pools.md, "The reviews' scenario"), at library level.
 *
 * The backing is a RAID 6 of 6 emulated HDDs (chunk 256 KiB, full stripes of 1 MiB),
 * the cache a RAID 1 of 2 emulated SSDs ("sata-ssd" by default, --ssd for another
 * profile); rig.h builds them afresh for every mode of every round.  The modes are
 * uncached (the array itself, at TC_BACKING_DATA_OFFSET), read-only (read cache on,
 * write policy wa: write misses go around, write hits update both), wt, wb and instwb.
 * The workloads of one round, in order, each in its own region of the volume:
 *
 *   seq write   --seq MiB of 1 MiB writes, one at a time (full stripes);
 *   seq read    --seq MiB of 1 MiB reads, one at a time, of data never cached;
 *   rand read   4 KiB reads at random in the hot set (--hot MiB), at each queue depth
 *               for --secs s; the hot set is read into the cache first (64 KiB reads
 *               in a scattered order, not timed) in every cached mode;
 *   rand write  4 KiB writes at random over --span MiB, at each queue depth, --secs s.
 *
 * A queue depth of N is N threads each doing one synchronous request at a time.
 * After the sequential writes the volume's dirty data is flushed (not timed), so that
 * the reads start with a clean cache and no cleaner behind them; the random writes
 * come last, each depth over its own third of the span, and their dirty data is
 * dropped with the round (the flush rate is low: the cleaner waits for 1 s without
 * client I/O, so it does not run during the timed runs).  Rounds alternate the
 * modes (uncached, ro, wt, wb, instwb, uncached, ...); the ratio of a mode to uncached
 * is taken per round and the median of the rounds is printed, next to the ratio the
 * reviews measured.  Latency: the 99th percentile of each random run, marked with '!'
 * when above the reviews' bound of 100 ms.
 *
 *   tc-bench-scenario [--rounds N] [--secs S] [--seq MIB] [--hot MIB] [--span MIB]
 *                     [--ssd PROFILE] [--tmpdir DIR]
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
#define BENCH_NAME "tc-bench-scenario"
#include "bench_common.h"
#include "rig.h"

#define MODES 5
#define MAX_ROUNDS 15
#define MAX_QD 32
#define NQD 3
#define MAX_LAT 200000            /* latencies kept per run */
#define LINE (64 * KIB)

static const char *const mode_name[MODES] = { "uncached", "ro", "wt", "wb", "instwb" };
static const unsigned qds[NQD] = { 1, 4, 16 };

/* Rows of the table: 2 sequential, then random read and write at each queue depth. */
#define ROWS (2 + 2 * NQD)

/* The reviews' ratio against the HDD RAID 6 alone, per row and mode (SATA SSD pool),
 * -1 where they give none; docs/pools.md says where each comes from. */
static const double review[ROWS][MODES] = {
	{ 1, 1.0, 0.11, 1.0, 0.11 },        /* seq write: ~900 MB/s, WT/INSTWB <= 100 */
	{ 1, 1.0, 1.0, 1.0, 1.0 },          /* seq read: the same in every mode */
	{ 1, 1.36, 1.36, 1.36, 1.36 },      /* rand read: ~1500 of ~1100 IOPS */
	{ 1, 1.36, 1.36, 1.36, 1.36 },
	{ 1, 1.36, 1.36, 1.36, 1.36 },
	{ 1, -1, 2.5, 2.5, 2.5 },           /* rand write: ~2.5 x of ~300 IOPS */
	{ 1, -1, 2.5, 2.5, 2.5 },
	{ 1, -1, 2.5, 2.5, 2.5 },
};

struct env {
	struct rig rig;
	double secs;
	uint64_t seq, hot, span;  /* bytes */
	uint64_t seq_w_base, seq_r_base, hot_base, span_base, vol_size;
};

struct job {
	struct env *e;
	bool write;
	uint64_t base, span, bs;  /* bytes */
	uint64_t deadline;        /* ns (CLOCK_MONOTONIC) */
	pthread_mutex_t lock;     /* guards lat, n */
	uint64_t *lat;
	unsigned n;
	uint64_t ops;
	int err;
};

struct worker {
	struct job *j;
	uint64_t seed;
	pthread_t th;
};

static int do_io(struct env *e, bool write, void *buf, uint64_t len, uint64_t off)
{
	if (e->rig.vol)
		return write ? tc_volume_pwrite(e->rig.vol, buf, len, off, 0)
			     : tc_volume_pread(e->rig.vol, buf, len, off);
	off += TC_BACKING_DATA_OFFSET;
	return write ? tc_dev_pwrite(e->rig.hdd, buf, len, off, 0)
		     : tc_dev_pread(e->rig.hdd, buf, len, off);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->j;
	uint8_t *buf = aligned_alloc(4096, j->bs);
	if (!buf) {
		j->err = -ENOMEM;
		return NULL;
	}
	memset(buf, (int)(w->seed & 0xff), j->bs);
	uint64_t x = w->seed * 0x9e3779b97f4a7c15ull + 1, blocks = j->span / j->bs;
	while (!j->err) {
		uint64_t t0 = now_ns();
		if (t0 >= j->deadline)
			break;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int r = do_io(j->e, j->write, buf, j->bs, j->base + (x % blocks) * j->bs);
		uint64_t lat = now_ns() - t0;
		pthread_mutex_lock(&j->lock);
		if (r < 0)
			j->err = r;
		if (j->n < MAX_LAT)
			j->lat[j->n++] = lat;
		j->ops++;
		pthread_mutex_unlock(&j->lock);
	}
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Random 4 KiB requests at queue depth @qd for e->secs: IOPS, and *@p99 (ns). */
static double random_run(struct env *e, bool write, uint64_t base, uint64_t span,
			 unsigned qd, uint64_t *p99)
{
	struct job j = { .e = e, .write = write, .base = base, .span = span, .bs = 4096 };
	struct worker w[MAX_QD];
	pthread_mutex_init(&j.lock, NULL);
	j.lat = malloc(MAX_LAT * sizeof(uint64_t));
	if (!j.lat)
		die("allocate", ENOMEM);
	uint64_t t0 = now_ns();
	j.deadline = t0 + (uint64_t)(e->secs * 1e9);
	for (unsigned i = 0; i < qd; i++) {
		w[i] = (struct worker){ .j = &j, .seed = i * 7919u + qd * 104729u + write };
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]))
			die("start a worker", errno);
	}
	for (unsigned i = 0; i < qd; i++)
		pthread_join(w[i].th, NULL);
	double s = (double)(now_ns() - t0) / 1e9;
	CHECK(j.err, write ? "random write" : "random read");
	qsort(j.lat, j.n, sizeof(uint64_t), cmp_u64);
	*p99 = j.n ? j.lat[(uint64_t)j.n * 99 / 100] : 0;
	free(j.lat);
	pthread_mutex_destroy(&j.lock);
	return (double)j.ops / s;
}

/* --seq bytes of 1 MiB requests from @base, one at a time: MB/s. */
static double seq_run(struct env *e, bool write, uint64_t base, uint8_t *buf)
{
	uint64_t t0 = now_ns();
	for (uint64_t off = 0; off < e->seq; off += MIB) {
		memset(buf, (int)(off >> 20), 8);
		CHECK(do_io(e, write, buf, MIB, base + off), write ? "sequential write"
			: "sequential read");
	}
	return (double)e->seq / 1e6 / ((double)(now_ns() - t0) / 1e9);
}

static void flush(struct env *e)
{
	if (e->rig.vol)
		CHECK(tc_volume_flush_dirty(e->rig.vol, NULL, NULL), "flush the dirty data");
}

/* Read the hot set into the cache: every line, in a scattered order, 16 at a time. */
struct warm {
	struct env *e;
	atomic_uint_fast64_t next;
	uint64_t lines;
	int err;
};

static void *warm_main(void *arg)
{
	struct warm *w = arg;
	uint8_t *buf = aligned_alloc(4096, LINE);
	if (!buf)
		return NULL;
	for (uint64_t i; (i = atomic_fetch_add(&w->next, 1)) < w->lines && !w->err;) {
		uint64_t l = (i * 40503u + 7) % w->lines;   /* 40503 is odd: a permutation */
		int r = do_io(w->e, false, buf, LINE, w->e->hot_base + l * LINE);
		if (r < 0)
			w->err = r;
	}
	free(buf);
	return NULL;
}

static void warm_hot_set(struct env *e)
{
	for (int pass = 0; pass < 3; pass++) {
		struct warm w = { .e = e, .lines = e->hot / LINE };
		pthread_t th[16];
		for (unsigned i = 0; i < 16; i++)
			if (pthread_create(&th[i], NULL, warm_main, &w))
				die("start a warm-up reader", errno);
		for (unsigned i = 0; i < 16; i++)
			pthread_join(th[i], NULL);
		CHECK(w.err, "read the hot set");
		struct tc_volume_stats st;
		tc_volume_stats(e->rig.vol, &st);
		if (st.cached_bytes >= e->hot)
			return;
	}
	fprintf(stderr, BENCH_NAME ": the hot set is not all in the cache after 3 passes\n");
}

/* One round of @mode: the rows' figures (MB/s or IOPS) and p99 latencies (ns). */
static void round_run(struct env *e, unsigned mode, uint8_t *buf, double *val,
		      uint64_t *p99)
{
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	static const uint8_t wp[MODES] = { 0, TC_WP_WA, TC_WP_WT, TC_WP_WB, TC_WP_INSTWB };
	s.write_policy = wp[mode];
	s.flush_rate = TC_FLUSH_LOW;
	rig_open(&e->rig, e->vol_size / 4 + 64 * MIB, 2 * (e->hot + e->span + e->seq) + 64 * MIB,
		 mode ? &s : NULL);
	val[0] = seq_run(e, true, e->seq_w_base, buf);
	p99[0] = 0;
	flush(e);
	val[1] = seq_run(e, false, e->seq_r_base, buf);
	p99[1] = 0;
	if (mode)
		warm_hot_set(e);
	for (unsigned q = 0; q < NQD; q++)
		val[2 + q] = random_run(e, false, e->hot_base, e->hot, qds[q], &p99[2 + q]);
	/* Each depth in its own part of the span; the dirty data stays (flushing it
	 * through the RAID 6 would take minutes) and goes with the round's files. */
	uint64_t part = e->span / NQD / MIB * MIB;
	for (unsigned q = 0; q < NQD; q++)
		val[2 + NQD + q] = random_run(e, true, e->span_base + q * part, part, qds[q],
					      &p99[2 + NQD + q]);
	rig_close(&e->rig);
}

static unsigned long parse_num(const char *opt, const char *arg, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (*end || v == 0 || v > max) {
		fprintf(stderr, BENCH_NAME ": %s: \"%s\" is not a number from 1 to %lu\n", opt,
			arg, max);
		exit(2);
	}
	return v;
}

static const char usage[] =
"usage: tc-bench-scenario [--rounds N] [--secs S] [--seq MIB] [--hot MIB] [--span MIB]\n"
"                         [--ssd PROFILE] [--tmpdir DIR]\n"
"  The reviews' scenario at library level: a RAID 6 of 6 emulated HDDs (256 KiB\n"
"  chunk), uncached and cached on a RAID 1 of 2 emulated SSDs in ro, wt, wb and\n"
"  instwb; sequential 1 MiB writes and reads, random 4 KiB reads of a cached hot set\n"
"  and random 4 KiB writes at queue depths 1, 4 and 16.  Alternating rounds; median\n"
"  of the per-round ratios against uncached, next to the reviews' ratios.\n"
"  --rounds N     rounds of each mode, 1..15 (default 3)\n"
"  --secs S       seconds per random run, 0.1..60 (default 0.5)\n"
"  --seq MIB      bytes per sequential run (default 32)\n"
"  --hot MIB      the hot set of the random reads (default 64)\n"
"  --span MIB     the range of the random writes, a third per depth (default 192)\n"
"  --ssd PROFILE  the cache members' emulation profile (default sata-ssd)\n"
"  --tmpdir DIR   where the sparse member files go (default $TMPDIR or /tmp)\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "secs", required_argument, NULL, 'S' },
		{ "seq", required_argument, NULL, 'q' },
		{ "hot", required_argument, NULL, 'H' },
		{ "span", required_argument, NULL, 'p' },
		{ "ssd", required_argument, NULL, 'd' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct env e = { .secs = 0.5, .seq = 32 * MIB, .hot = 64 * MIB, .span = 192 * MIB };
	unsigned rounds = 3;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'r': rounds = (unsigned)parse_num("--rounds", optarg, MAX_ROUNDS); break;
		case 'S':
			e.secs = strtod(optarg, &end);
			if (*end || !(e.secs >= 0.1 && e.secs <= 60))
				bad_usage("--secs: \"%s\" is not a number of seconds from 0.1 to 60",
					  optarg);
			break;
		case 'q': e.seq = parse_num("--seq", optarg, 4096) * MIB; break;
		case 'H': e.hot = parse_num("--hot", optarg, 4096) * MIB; break;
		case 'p': e.span = parse_num("--span", optarg, 4096) * MIB; break;
		case 'd': e.rig.ssd_profile = optarg; break;
		case 't': tmp = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	/* The regions, in order, on 1 GiB boundaries apart from each other. */
	e.seq_w_base = 0;
	e.seq_r_base = e.seq_w_base + ((e.seq + GIB - 1) & ~(GIB - 1));
	e.hot_base = e.seq_r_base + ((e.seq + GIB - 1) & ~(GIB - 1));
	e.span_base = e.hot_base + ((e.hot + GIB - 1) & ~(GIB - 1));
	e.vol_size = e.span_base + e.span;
	rig_init(&e.rig, tmp, BENCH_NAME, TC_LOG_WARN);
	uint8_t *buf = aligned_alloc(4096, MIB);
	if (!buf)
		die("allocate", ENOMEM);
	for (size_t i = 0; i < MIB; i++)
		buf[i] = (uint8_t)(i * 13);

	static double val[MAX_ROUNDS][MODES][ROWS];
	static uint64_t p99[MAX_ROUNDS][MODES][ROWS];
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned m = 0; m < MODES; m++) {
			round_run(&e, m, buf, val[r][m], p99[r][m]);
			fprintf(stderr, "round %u %-8s seq w %6.1f r %6.1f MB/s; rand r", r + 1,
				mode_name[m], val[r][m][0], val[r][m][1]);
			for (unsigned q = 0; q < NQD; q++)
				fprintf(stderr, " %7.0f", val[r][m][2 + q]);
			fprintf(stderr, " w");
			for (unsigned q = 0; q < NQD; q++)
				fprintf(stderr, " %7.0f", val[r][m][2 + NQD + q]);
			fprintf(stderr, " IOPS\n");
		}

	printf("the reviews' scenario: RAID 6 of 6 emulated HDDs (256 KiB chunk), cache RAID 1 "
	       "of 2 emulated %s; %u rounds, median of the per-round ratios to uncached "
	       "(reviews' ratio in brackets); uncached median in MB/s or IOPS; p99 latency "
	       "of the random runs in ms, '!' above 100 ms\n", e.rig.ssd_profile, rounds);
	printf("%-15s %10s", "workload", "uncached");
	for (unsigned m = 1; m < MODES; m++)
		printf(" %17s", mode_name[m]);
	printf("\n");
	for (unsigned row = 0; row < ROWS; row++) {
		char name[32];
		if (row < 2)
			snprintf(name, sizeof(name), "seq %s MB/s", row ? "read" : "write");
		else
			snprintf(name, sizeof(name), "rand %s QD%u", row < 2 + NQD ? "read" : "write",
				 qds[(row - 2) % NQD]);
		double col[MAX_ROUNDS];
		for (unsigned r = 0; r < rounds; r++)
			col[r] = val[r][0][row];
		qsort(col, rounds, sizeof(double), cmp_double);
		printf("%-15s %10.1f", name, col[rounds / 2]);
		for (unsigned m = 1; m < MODES; m++) {
			for (unsigned r = 0; r < rounds; r++)
				col[r] = val[r][m][row] / val[r][0][row];
			qsort(col, rounds, sizeof(double), cmp_double);
			char rev[16] = "";
			if (review[row][m] >= 0)
				snprintf(rev, sizeof(rev), "(%.2f)", review[row][m]);
			printf(" %9.2f %7s", col[rounds / 2], rev);
		}
		printf("\n");
		if (row < 2)
			continue;
		printf("%-15s", "  p99 ms");
		for (unsigned m = 0; m < MODES; m++) {
			uint64_t l[MAX_ROUNDS];
			for (unsigned r = 0; r < rounds; r++)
				l[r] = p99[r][m][row];
			qsort(l, rounds, sizeof(uint64_t), cmp_u64);
			double ms = (double)l[rounds / 2] / 1e6;
			if (m == 0)
				printf(" %9.1f%c", ms, ms > 100 ? '!' : ' ');
			else
				printf(" %9.1f%c%7s", ms, ms > 100 ? '!' : ' ', "");
		}
		printf("\n");
	}
	free(buf);
	rig_free(&e.rig);
	return 0;
}
