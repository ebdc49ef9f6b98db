/* SPDX-License-Identifier: MIT */
/*
 * bench_drain.c - tc-bench-drain: how fast the cleaner writes dirty data back, against
 * what the backing itself takes, in one run (docs/benchmarks.md, "Drain").
 *
 * The backing is one emulated HDD (profiles/hdd.conf: 200 MB/s sequential, NCQ 32), or
 * with --raid6 a RAID 6 of 6 of them (chunk 256 KiB, full stripes of 1 MiB); the cache
 * is one emulated SSD (--ssd PROFILE, default sata-ssd), formatted with the
 * unprotected-write-back override (the bench measures the cleaner, not protection).
 * All over sparse files in a temporary folder, made afresh for every run.
 *
 * Two patterns, each as a pair of runs that alternate (backing, drain, backing, ...):
 *   seq   backing: --dirty MiB written sequentially in 1 MiB requests at QD 8, the
 *         backing's sequential write bandwidth;
 *         drain: the same bytes made dirty in the cache by writes of a line each
 *         (fully dirty lines; whole stripes would go straight to a RAID 6), then
 *         tc_volume_flush_dirty() timed: MB/s written back.
 *   rand  backing: --raw-ios random 4 KiB writes at QD 32 (NCQ's best) over a span of
 *         --span MiB, the backing's random-write IOPS;
 *         drain: --rand-ios random 4 KiB writes made dirty over the same span (by
 *         default 32768 over 1 GiB: about one 4 KiB unit in nine dirty, a cache that
 *         holds a tenth of the backing's hot range dirty), then the flush timed: dirty
 *         4 KiB units written back per second.  A sweep in address order cannot beat
 *         the span's sequential time, so the ratio grows with the dirty density:
 *         the report says the density.
 * With --raid6 the span is first read into the cache (--prefill: the random writes
 * then dirty parts of stripes the cache holds whole), and the rand drain runs a third
 * time, alternating, with stripe fill off (tc_volume_set_stripe_fill): the cleaner
 * completing stripes with clean cached data against writing the dirty units alone
 * (which the array must read-modify-write).  With --raid6 --no-prefill the cache
 * holds only the written units, and the cleaner completes the stripes by reading
 * what it lacks from the array (stripe fill off: the dirty units alone).
 * The volume runs wb with flush rate low (nothing is written back before the flush),
 * admission always and no sequential cutoff, so every write is a dirty cache write.
 * Reported: each round, the medians and the ratios drain / backing (goals of the
 * served-path issue: >= 0.9 for seq, >= 10 for rand).
 *
 *   tc-bench-drain [--dirty MIB] [--rand-ios N] [--span MIB] [--rounds N]
 *                  [--pattern seq|rand|both] [--raid6] [--ssd PROFILE]
 *                  [--line-size K] [--tmpdir DIR] [--json]
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
#include "tiercache-test.h"
#define BENCH_NAME "tc-bench-drain"
#include "bench_common.h"

#define MAX_ROUNDS 15
#define HDDS 6u
#define SEQ_REQ MIB
#define SEQ_QD 8u
#define RAND_QD 32u

struct env {
	tc_ctx *ctx;
	char dir[256];
	const char *ssd_profile;
	bool raid6;
	uint32_t line_size;
	uint64_t dirty;          /* bytes, seq */
	uint64_t rand_ios;       /* rand: writes made dirty */
	uint64_t raw_ios;        /* rand: writes to the backing alone */
	uint64_t span;           /* bytes, rand */
	bool prefill;            /* rand: read the span into the cache first */
	uint8_t *buf;            /* SEQ_REQ bytes, aligned */
};

/* ---- a queue-depth driver over tc_dev_submit / tc_volume_submit ------------------ */

struct qd_run {
	tc_dev *dev;             /* one of dev, vol */
	tc_volume *vol;
	uint64_t base;           /* added to every offset (the backing's data offset) */
	uint64_t n, next, done;  /* requests: total, submitted, completed */
	uint64_t req_len;
	bool random;
	uint64_t span;           /* random: offsets in [0, span), 4 KiB aligned */
	uint64_t rng;
	int err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct slot {
		struct tc_io io;
		struct iovec iov;
		struct qd_run *run;
	} *slots;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Fill @s with the next request of @q (called with q->lock held); false when none. */
static bool qd_next(struct qd_run *q, struct slot *s)
{
	if (q->next >= q->n || q->err)
		return false;
	uint64_t off = q->random ? (xorshift(&q->rng) % (q->span / 4096)) * 4096
				 : q->next * q->req_len;
	q->next++;
	memset(&s->io, 0, sizeof(s->io));
	s->io.op = TC_OP_WRITE;
	s->io.offset = q->base + off;
	s->io.length = q->req_len;
	s->iov.iov_len = q->req_len;
	s->io.iov = &s->iov;
	s->io.iovcnt = 1;
	return true;
}

static void qd_submit(struct qd_run *q, struct slot *s)
{
	if (q->vol)
		tc_volume_submit(q->vol, &s->io);
	else
		tc_dev_submit(q->dev, &s->io);
}

static void qd_done(struct tc_io *io, int result)
{
	struct slot *s = io->private_data;
	struct qd_run *q = s->run;
	pthread_mutex_lock(&q->lock);
	if (result < 0 && !q->err)
		q->err = result;
	q->done++;
	bool more = qd_next(q, s);
	if (more) {
		s->io.done = qd_done;
		s->io.private_data = s;
	}
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	if (more)
		qd_submit(q, s);
}

/* Run @q's requests at queue depth @qd with the data at @buf; seconds taken. */
static double qd_run(struct qd_run *q, unsigned qd, uint8_t *buf)
{
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->slots = calloc(qd, sizeof(*q->slots));
	if (!q->slots)
		die("allocate", ENOMEM);
	uint64_t t0 = now_ns();
	unsigned started = 0;
	pthread_mutex_lock(&q->lock);
	for (unsigned i = 0; i < qd; i++) {
		struct slot *s = &q->slots[i];
		s->run = q;
		s->iov.iov_base = buf;
		if (!qd_next(q, s))
			break;
		s->io.done = qd_done;
		s->io.private_data = s;
		started++;
	}
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < started; i++)
		qd_submit(q, &q->slots[i]);
	pthread_mutex_lock(&q->lock);
	while (q->done < q->next || (q->next < q->n && !q->err))
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
	double secs = (double)(now_ns() - t0) / 1e9;
	if (q->err)
		die("write", q->err);
	free(q->slots);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	return secs;
}

/* ---- devices ---------------------------------------------------------------------- */

static tc_dev *open_emu(struct env *e, const char *profile, const char *file, uint64_t size)
{
	char path[320];
	tc_dev *d;
	snprintf(path, sizeof(path), "%s/%s", e->dir, file);
	CHECK(tc_dev_new_emu(e->ctx, profile, path, TC_DEV_CREATE, size, &d),
	      "open an emulated device");
	return d;
}

/* The backing: an emulated HDD of @size bytes, or a RAID 6 of 6 with @size / 4 each. */
static tc_dev *open_backing(struct env *e, uint64_t size)
{
	if (!e->raid6)
		return open_emu(e, "hdd", "hdd0.img", size);
	tc_dev *m[HDDS], *a;
	for (unsigned i = 0; i < HDDS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "hdd%u.img", i);
		m[i] = open_emu(e, "hdd", name, size / (HDDS - 2) + 64 * MIB);
	}
	struct tc_array_opts o = { .level = TC_RAID6 };
	CHECK(tc_dev_new_array(e->ctx, &o, m, HDDS, &a), "make the RAID 6");
	return a;
}

static void remove_files(struct env *e)
{
	char path[320];
	for (unsigned i = 0; i < HDDS; i++) {
		snprintf(path, sizeof(path), "%s/hdd%u.img", e->dir, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/ssd.img", e->dir);
	unlink(path);
}

/* The bytes the backing needs for a pattern: its span, and room for the superblock. */
static uint64_t backing_size(struct env *e, bool rand)
{
	return (rand ? e->span : e->dirty) + 64 * MIB;
}

/* ---- the runs --------------------------------------------------------------------- */

/* The backing alone: MB/s (seq) or IOPS (rand). */
static double run_backing(struct env *e, bool rand)
{
	tc_dev *b = open_backing(e, backing_size(e, rand));
	struct qd_run q = {
		.dev = b, .base = TC_BACKING_DATA_OFFSET, .random = rand, .span = e->span,
		.rng = 0x9e3779b97f4a7c15ull,
		.n = rand ? e->raw_ios : e->dirty / SEQ_REQ,
		.req_len = rand ? 4096 : SEQ_REQ,
	};
	double secs = qd_run(&q, rand ? RAND_QD : SEQ_QD, e->buf);
	tc_dev_close(b);
	remove_files(e);
	return rand ? (double)q.n / secs : (double)(q.n * q.req_len) / 1e6 / secs;
}

struct drain_result {
	double rate;             /* MB/s (seq) or dirty units per second (rand) */
	double backing_mb_s;     /* bytes the cleaner wrote to the backing, MB/s */
	uint64_t dirty, ios;     /* bytes made dirty, backing writes of the cleaner */
	uint64_t full, completed;/* full stripes written, of those completed from cache */
	uint64_t recon;          /* ... and of those completed from the backing */
	uint64_t arr[3];         /* --raid6: the array's stripe writes during the drain:
	                          * full, reconstruct-write, read-modify-write */
};

/* The array's stripe write counts (full, reconstruct-write, read-modify-write) into
 * @out; zeros for a backing that is no array. */
static void array_plans(struct env *e, tc_dev *b, uint64_t out[3])
{
	struct tc_array_status as;
	out[0] = out[1] = out[2] = 0;
	if (!e->raid6 || tc_array_status(b, &as) < 0)
		return;
	out[0] = as.stripe_writes_full;
	out[1] = as.stripe_writes_rcw;
	out[2] = as.stripe_writes_rmw;
}

/* The cleaner: make the data dirty, then time tc_volume_flush_dirty().  @fill: the
 * cleaner completes stripes with clean cached data (tc_volume_set_stripe_fill). */
static struct drain_result run_drain(struct env *e, bool rand, bool fill)
{
	uint64_t bsize = backing_size(e, rand);
	tc_dev *b = open_backing(e, bsize);
	/* Room for every line the pattern can touch, twice: the cleaner's high watermark
	 * (70 %) is never reached, so only the flush writes back. */
	uint64_t lines = rand ? e->span / e->line_size : e->dirty / e->line_size;
	if (rand && !e->prefill && e->rand_ios < lines)
		lines = e->rand_ios;
	uint64_t csize = 2 * lines * e->line_size + 64 * MIB;
	tc_dev *ssd = open_emu(e, e->ssd_profile, "ssd.img", csize);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = e->line_size;
	co.unprotected_writeback = true;
	CHECK(tc_cache_format(e->ctx, ssd, &co), "format the cache");
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	s.flush_rate = TC_FLUSH_LOW;
	s.admission = TC_ADMIT_ALWAYS;
	s.seq_cutoff = 0;
	CHECK(tc_backing_format(e->ctx, b, "bench", &s), "format the backing");
	tc_cache *c;
	tc_volume *v;
	CHECK(tc_cache_open(e->ctx, ssd, &c), "open the cache");
	CHECK(tc_cache_attach(c, b, NULL, 0, &v), "attach");
	tc_volume_set_stripe_fill(v, fill);
	if (rand && e->prefill) {
		/* Read the span once, so that every line of it is cached (clean): the
		 * random writes then dirty parts of whole stripes the cache holds. */
		for (uint64_t off = 0; off < e->span; off += SEQ_REQ)
			CHECK(tc_volume_pread(v, e->buf, SEQ_REQ, off), "read the span");
	}
	/* Sequential data is made dirty a line at a time: a write-back volume sends
	 * writes of whole stripes of a parity array straight to the array. */
	struct qd_run q = {
		.vol = v, .random = rand, .span = e->span, .rng = 0x2545f4914f6cdd1dull,
		.n = rand ? e->rand_ios : e->dirty / e->line_size,
		.req_len = rand ? 4096 : e->line_size,
	};
	qd_run(&q, 16, e->buf);
	struct tc_volume_stats st0, st;
	uint64_t a0[3], a1[3];
	tc_volume_stats(v, &st0);
	array_plans(e, b, a0);
	uint64_t t0 = now_ns();
	CHECK(tc_volume_flush_dirty(v, NULL, NULL), "flush");
	double secs = (double)(now_ns() - t0) / 1e9;
	tc_volume_stats(v, &st);
	array_plans(e, b, a1);
	if (st.dirty_bytes)
		die("dirty data left after the flush", EIO);
	struct drain_result r = {
		.dirty = st0.dirty_bytes,
		.ios = st.writeback_ios - st0.writeback_ios,
		.full = st.writeback_full_stripes - st0.writeback_full_stripes,
		.completed = st.writeback_stripes_completed - st0.writeback_stripes_completed,
		.recon = st.writeback_stripes_reconstructed - st0.writeback_stripes_reconstructed,
		.backing_mb_s = (double)(st.writeback_bytes - st0.writeback_bytes +
					 st.writeback_fill_bytes - st0.writeback_fill_bytes) / 1e6 / secs,
	};
	for (int i = 0; i < 3; i++)
		r.arr[i] = a1[i] - a0[i];
	r.rate = rand ? (double)(st0.dirty_bytes / 4096) / secs
		      : (double)st0.dirty_bytes / 1e6 / secs;
	CHECK(tc_cache_close(c), "close the cache");
	tc_dev_close(ssd);
	tc_dev_close(b);
	remove_files(e);
	return r;
}

static const char usage[] =
"usage: tc-bench-drain [OPTION]...\n"
"  How fast the cleaner writes dirty data back (tc_volume_flush_dirty), against the\n"
"  backing written directly, alternating rounds; medians and ratios.\n"
"  --pattern P   seq, rand or both (default both)\n"
"  --dirty MIB   seq: bytes made dirty and written (default 256)\n"
"  --rand-ios N  rand: random 4 KiB writes made dirty (default 32768)\n"
"  --raw-ios N   rand: random 4 KiB writes to the backing alone (default 2000)\n"
"  --span MIB    rand: the range they fall in (default 1024)\n"
"  --rounds N    rounds, 1..15 (default 3)\n"
"  --raid6       the backing is a RAID 6 of 6 emulated HDDs (default: one); implies\n"
"                --prefill, and runs the rand drain also without stripe fill\n"
"  --prefill     rand: read the span into the cache before the writes\n"
"  --no-prefill  rand: do not (with --raid6: the cleaner completes stripes from the\n"
"                array, reading what the cache lacks)\n"
"  --ssd NAME    the cache's emulated profile (default sata-ssd; nvme-ssd)\n"
"  --line-size K cache line size in KiB, 4..64 (default 64)\n"
"  --tmpdir DIR  where the sparse files go (default $TMPDIR or /tmp)\n"
"  --json        one JSON object on standard output instead of the table\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pattern", required_argument, NULL, 'p' },
		{ "dirty", required_argument, NULL, 'd' },
		{ "rand-ios", required_argument, NULL, 'n' },
		{ "raw-ios", required_argument, NULL, 'R' },
		{ "span", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "raid6", no_argument, NULL, '6' },
		{ "prefill", no_argument, NULL, 'P' },
		{ "no-prefill", no_argument, NULL, 'N' },
		{ "ssd", required_argument, NULL, 'S' },
		{ "line-size", required_argument, NULL, 'l' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct env e = { .ssd_profile = "sata-ssd", .line_size = 64 * KIB, .dirty = 256 * MIB,
			 .rand_ios = 32768, .raw_ios = 2000, .span = 1024 * MIB };
	unsigned rounds = 3;
	bool do_seq = true, do_rand = true, json = false, no_prefill = false;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!strcmp(optarg, "seq"))
				do_rand = false;
			else if (!strcmp(optarg, "rand"))
				do_seq = false;
			else if (strcmp(optarg, "both"))
				bad_usage("--pattern: \"%s\" is not seq, rand or both", optarg);
			break;
		case 'd': e.dirty = bench_ulong_arg("--dirty (MiB)", optarg, 1, 65536) * MIB; break;
		case 'n': e.rand_ios = bench_ulong_arg("--rand-ios", optarg, 1, 10000000); break;
		case 'R': e.raw_ios = bench_ulong_arg("--raw-ios", optarg, 1, 10000000); break;
		case 's': e.span = bench_ulong_arg("--span (MiB)", optarg, 1, 1 << 20) * MIB; break;
		case 'r': rounds = (unsigned)bench_ulong_arg("--rounds", optarg, 1, MAX_ROUNDS); break;
		case '6': e.raid6 = true; e.prefill = true; break;
		case 'P': e.prefill = true; break;
		case 'N': no_prefill = true; break;
		case 'S': e.ssd_profile = optarg; break;
		case 'l': {
			unsigned long k = bench_ulong_arg("--line-size (KiB)", optarg, 4, 64);
			if (k & (k - 1))
				bad_usage("--line-size: \"%s\" is not a power of two", optarg);
			e.line_size = (uint32_t)(k * KIB);
			break;
		}
		case 't': tmp = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (no_prefill)
		e.prefill = false;
	snprintf(e.dir, sizeof(e.dir), "%s/" BENCH_NAME "-XXXXXX", tmp);
	if (!mkdtemp(e.dir))
		die("make the temporary folder", errno);
	struct tc_ctx_opts co = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_WARN };
	CHECK(tc_ctx_new(&co, &e.ctx), "make the context");
	tc_ctx_set_log(e.ctx, log_sink, NULL, TC_LOG_WARN);
	e.buf = aligned_alloc(4096, SEQ_REQ);
	if (!e.buf)
		die("allocate", ENOMEM);
	for (size_t i = 0; i < SEQ_REQ; i++)
		e.buf[i] = (uint8_t)(i * 13 + 7);

	/* raw: the backing alone; drn: the drain; nof: the rand drain without stripe
	 * fill (--raid6 only). */
	double raw[2][MAX_ROUNDS], drn[2][MAX_ROUNDS], bmb[2][MAX_ROUNDS];
	double nof[MAX_ROUNDS], nofb[MAX_ROUNDS], spanseq[MAX_ROUNDS];
	struct drain_result last[2] = { { 0 } }, last_nof = { 0 };
	const char *pname[2] = { "seq", "rand" };
	for (unsigned r = 0; r < rounds; r++)
		for (int p = 0; p < 2; p++) {
			if ((p == 0 && !do_seq) || (p == 1 && !do_rand))
				continue;
			raw[p][r] = run_backing(&e, p == 1);
			struct drain_result d = run_drain(&e, p == 1, true);
			drn[p][r] = d.rate;
			bmb[p][r] = d.backing_mb_s;
			last[p] = d;
			fprintf(stderr, "round %u %-4s backing %9.1f %s, drain %9.1f %s (%.3f), "
				"%" PRIu64 " dirty bytes in %" PRIu64 " writes, %.1f MB/s to the "
				"backing, %" PRIu64 " full stripes (%" PRIu64 " completed from the "
				"cache, %" PRIu64 " from the backing)\n", r + 1,
				pname[p], raw[p][r], p ? "IOPS" : "MB/s", d.rate,
				p ? "units/s" : "MB/s", d.rate / raw[p][r], d.dirty, d.ios,
				d.backing_mb_s, d.full, d.completed, d.recon);
			if (p == 1 && e.raid6) {
				/* The array's sequential write rate over the same span. */
				uint64_t keep = e.dirty;
				e.dirty = e.span;
				spanseq[r] = run_backing(&e, false);
				e.dirty = keep;
				d = run_drain(&e, true, false);
				nof[r] = d.rate;
				nofb[r] = d.backing_mb_s;
				last_nof = d;
				fprintf(stderr, "round %u rand without stripe fill: drain %9.1f units/s, "
					"%" PRIu64 " writes, %.1f MB/s to the backing; the array written "
					"sequentially over the span: %.1f MB/s\n", r + 1, d.rate, d.ios,
					d.backing_mb_s, spanseq[r]);
				fprintf(stderr, "round %u array stripe writes (full, reconstruct, "
					"read-modify-write): with fill %" PRIu64 ", %" PRIu64 ", %" PRIu64
					"; without %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n", r + 1,
					last[1].arr[0], last[1].arr[1], last[1].arr[2], d.arr[0],
					d.arr[1], d.arr[2]);
			}
		}
	double mraw[2] = { 0, 0 }, mdrn[2] = { 0, 0 }, ratio[2] = { 0, 0 }, mbmb[2] = { 0, 0 };
	for (int p = 0; p < 2; p++) {
		if ((p == 0 && !do_seq) || (p == 1 && !do_rand))
			continue;
		double rr[MAX_ROUNDS];
		for (unsigned r = 0; r < rounds; r++)
			rr[r] = drn[p][r] / raw[p][r];
		mraw[p] = bench_median(raw[p], (int)rounds);
		mdrn[p] = bench_median(drn[p], (int)rounds);
		mbmb[p] = bench_median(bmb[p], (int)rounds);
		ratio[p] = bench_median(rr, (int)rounds);
	}
	/* --raid6: the random drain with and without stripe fill, as dirty MB/s against
	 * the array's sequential write rate (the seq pattern's backing figure). */
	bool fillcmp = e.raid6 && do_rand;
	double fill_vs_nof = 0, mnof = 0, mnofb = 0, mspan = 0;
	if (fillcmp) {
		double rr[MAX_ROUNDS];
		for (unsigned r = 0; r < rounds; r++)
			rr[r] = drn[1][r] / nof[r];
		fill_vs_nof = bench_median(rr, (int)rounds);
		mnof = bench_median(nof, (int)rounds);
		mnofb = bench_median(nofb, (int)rounds);
		mspan = bench_median(spanseq, (int)rounds);
	}
	double dirty_mb = mdrn[1] * 4096 / 1e6, nof_mb = mnof * 4096 / 1e6;
	const char *backing = e.raid6 ? "RAID 6 of 6 emulated HDDs" : "one emulated HDD";
	if (json) {
		printf("{\"backing\":\"%s\",\"cache\":\"%s\",\"line_size\":%u,\"rounds\":%u",
		       backing, e.ssd_profile, e.line_size, rounds);
		if (do_seq)
			printf(",\"seq_dirty_bytes\":%" PRIu64 ",\"seq_backing_mb_s\":%.1f,"
			       "\"seq_drain_mb_s\":%.1f,\"seq_ratio\":%.3f,\"seq_writeback_ios\":%"
			       PRIu64, last[0].dirty, mraw[0], mdrn[0], ratio[0], last[0].ios);
		if (do_rand)
			printf(",\"rand_dirty_bytes\":%" PRIu64 ",\"rand_backing_iops\":%.1f,"
			       "\"rand_drain_units_s\":%.1f,\"rand_ratio\":%.3f,"
			       "\"rand_writeback_ios\":%" PRIu64 ",\"rand_drain_backing_mb_s\":%.1f,"
			       "\"rand_full_stripes\":%" PRIu64 ",\"rand_stripes_completed\":%" PRIu64,
			       last[1].dirty, mraw[1], mdrn[1], ratio[1], last[1].ios, mbmb[1],
			       last[1].full, last[1].completed);
		if (fillcmp)
			printf(",\"rand_nofill_units_s\":%.1f,\"rand_nofill_backing_mb_s\":%.1f,"
			       "\"rand_nofill_writeback_ios\":%" PRIu64 ",\"rand_fill_vs_nofill\":%.3f,"
			       "\"span_seq_backing_mb_s\":%.1f,\"rand_array_full\":%" PRIu64 ","
			       "\"rand_array_rcw\":%" PRIu64 ",\"rand_array_rmw\":%" PRIu64 ","
			       "\"rand_nofill_array_full\":%" PRIu64 ",\"rand_nofill_array_rcw\":%"
			       PRIu64 ",\"rand_nofill_array_rmw\":%" PRIu64, mnof, mnofb,
			       last_nof.ios, fill_vs_nof, mspan, last[1].arr[0], last[1].arr[1],
			       last[1].arr[2], last_nof.arr[0], last_nof.arr[1], last_nof.arr[2]);
		printf("}\n");
	} else {
		printf("drain: %s, cache one emulated %s, %u KiB lines, median of %u rounds\n",
		       backing, e.ssd_profile, e.line_size / 1024, rounds);
		if (do_seq)
			printf("  seq   %" PRIu64 " MiB fully dirty: backing %.1f MB/s (1 MiB, QD %u), "
			       "drain %.1f MB/s, ratio %.3f (goal >= 0.9)\n", e.dirty / MIB, mraw[0],
			       SEQ_QD, mdrn[0], ratio[0]);
		if (do_rand)
			printf("  rand  %" PRIu64 " random 4 KiB writes over %" PRIu64 " MiB (%.1f %% of "
			       "its 4 KiB units dirty%s): backing %.1f IOPS (QD %u), drain %.1f "
			       "units/s (%.1f MB/s dirty, %.1f MB/s to the backing), ratio %.2f "
			       "(goal >= 10)\n", e.rand_ios, e.span / MIB,
			       100.0 * (double)last[1].dirty / (double)e.span,
			       e.prefill ? ", the span cached" : "", mraw[1], RAND_QD, mdrn[1],
			       dirty_mb, mbmb[1], ratio[1]);
		if (fillcmp) {
			printf("  rand  without stripe fill: drain %.1f units/s (%.1f MB/s dirty, "
			       "%.1f MB/s to the backing); with / without: %.2f\n", mnof, nof_mb,
			       mnofb, fill_vs_nof);
			printf("  rand  the array's stripe writes in the last round (full, "
			       "reconstruct-write, read-modify-write): with fill %" PRIu64 ", %" PRIu64
			       ", %" PRIu64 "; without %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n",
			       last[1].arr[0], last[1].arr[1], last[1].arr[2], last_nof.arr[0],
			       last_nof.arr[1], last_nof.arr[2]);
			printf("  rand  against the array written sequentially over the span "
			       "(%.1f MB/s): dirty %.3f with fill, %.3f without; to the backing "
			       "%.3f with fill\n", mspan, dirty_mb / mspan, nof_mb / mspan,
			       mbmb[1] / mspan);
		}
	}
	free(e.buf);
	rmdir(e.dir);
	tc_ctx_free(e.ctx);
	return 0;
}
