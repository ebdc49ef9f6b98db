/* SPDX-License-Identifier: MIT */
/*
 * bench_noisy.c - tc-bench-noisy, the noisy-neighbour benchmark (docs/isolation.md):
 * two volumes on one cache of an emulated SATA SSD, each backed by an emulated HDD
 * (src/dev/emu.c profiles), run on the context's virtual clock (deterministic mode:
 * the devices' modelled service and queueing times, no sleeping, so the figures do not
 * depend on the machine's load; the engine's own CPU time is not in them).
 *
 *   volume A: QD 1 random 4 KiB reads over a hot set (32 MiB) warmed first;
 *   volume B: QD 32, 70 % random writes of 4..64 KiB over 2 GiB (write-back), 30 %
 *             sequential 64 KiB reads (a scan; B's sequential cutoff is off, so the
 *             scan is cached: the worst neighbour).
 * Configurations, alternated in each round (a fresh cache per run, the round's seed):
 *   alone      A only
 *   shared     A and B, no partitions
 *   reserve    A and B, A reserves its hot set (tc_volume_settings.reserve)
 *   pin        A and B, A's hot set pinned (tc_volume_region_set)
 *   res+prio   A and B, A reserves its hot set and has priority high
 *              (tc_volume_settings.priority: its requests go ahead of B's, the
 *              cleaner's and the fills' in the devices' dispatch queues)
 * Prints A's p50, p99, p99.9 and max per configuration and round, B's throughput, and
 * the median over rounds of each ratio to "alone" (B's: to "shared").
 */
#define BENCH_NAME "tc-bench-noisy"
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <unistd.h>
#include "bench_common.h"

#define HOT (32 * MIB)
#define B_SPAN (2 * GIB)
#define B_QD 32
#define B_MAX_IO (64 * KIB)
enum { CFG_ALONE, CFG_SHARED, CFG_RESERVE, CFG_PIN, CFG_PRIO, CFG_N };
static const char *const cfg_name[CFG_N] = { "alone", "shared", "reserve", "pin",
					      "res+prio" };

struct run {
	tc_ctx *ctx;
	tc_volume *a, *b;
	uint64_t rng;
	/* A */
	struct tc_io aio;
	struct iovec aiov;
	uint8_t *abuf;
	bool a_busy;
	uint64_t a_start;
	uint64_t *lat;
	size_t nlat, cap;
	/* B */
	struct bio { struct tc_io io; struct iovec iov; uint8_t *buf; bool busy; } bq[B_QD];
	uint64_t scan_cursor, b_bytes;
	bool b_on, measuring;
};

static uint64_t rnd(struct run *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static void a_done(struct tc_io *io, int result)
{
	struct run *r = io->private_data;
	if (result)
		die("volume A read", result);
	if (r->measuring) {
		if (r->nlat == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 65536;
			r->lat = realloc(r->lat, r->cap * sizeof(*r->lat));
			if (!r->lat)
				die("memory", -ENOMEM);
		}
		r->lat[r->nlat++] = tc_ctx_now(r->ctx) - r->a_start;
	}
	r->a_busy = false;
}

static void b_done(struct tc_io *io, int result)
{
	struct run *r = io->private_data;
	if (result)
		die("volume B request", result);
	if (r->measuring)
		r->b_bytes += io->length;
	for (int i = 0; i < B_QD; i++)
		if (&r->bq[i].io == io)
			r->bq[i].busy = false;
}

static void a_submit(struct run *r)
{
	r->aio = (struct tc_io){ .op = TC_OP_READ, .offset = rnd(r) % (HOT / 4096) * 4096,
				 .length = 4096, .iov = &r->aiov, .iovcnt = 1,
				 .done = a_done, .private_data = r };
	r->aiov = (struct iovec){ r->abuf, 4096 };
	r->a_busy = true;
	r->a_start = tc_ctx_now(r->ctx);
	tc_volume_submit(r->a, &r->aio);
}

static void b_submit(struct run *r, struct bio *q)
{
	uint64_t x = rnd(r);
	bool write = x % 10 < 7;
	uint64_t len = write ? (1 + (x >> 8) % 16) * 4096 : B_MAX_IO;
	uint64_t off;
	if (write) {
		off = (x >> 16) % ((B_SPAN - len) / 4096) * 4096;
	} else {
		off = r->scan_cursor;
		r->scan_cursor = (r->scan_cursor + len) % B_SPAN;
	}
	q->iov = (struct iovec){ q->buf, len };
	q->io = (struct tc_io){ .op = write ? TC_OP_WRITE : TC_OP_READ, .offset = off,
				.length = len, .iov = &q->iov, .iovcnt = 1, .done = b_done,
				.private_data = r };
	q->busy = true;
	tc_volume_submit(r->b, &q->io);
}

/* Run for @ns of virtual time, keeping A at QD 1 and (if on) B at QD 32. */
static void drive(struct run *r, uint64_t ns, bool a_on)
{
	uint64_t end = tc_ctx_now(r->ctx) + ns;
	while (tc_ctx_now(r->ctx) < end) {
		if (a_on && !r->a_busy)
			a_submit(r);
		for (int i = 0; r->b_on && i < B_QD; i++)
			if (!r->bq[i].busy)
				b_submit(r, &r->bq[i]);
		if (tc_ctx_poll(r->ctx, 256) > 0)
			continue;
		uint64_t now = tc_ctx_now(r->ctx), next = tc_ctx_next_deadline(r->ctx);
		uint64_t step = next > now && next != UINT64_MAX ? next - now : 1000;
		if (step > end - now)
			step = end - now ? end - now : 1;
		tc_ctx_advance(r->ctx, step);
	}
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct result { uint64_t p50, p99, p999, max; double b_mibs; };

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)n);
	return v[i >= n ? n - 1 : i];
}

static struct result run_one(const char *dir, int cfg, uint64_t seed, uint64_t secs)
{
	struct tc_ctx_opts co = { .mode = TC_CTX_DETERMINISTIC, .seed = seed,
				  .log_level = TC_LOG_WARN };
	struct run r;
	memset(&r, 0, sizeof(r));
	r.rng = seed * 0x9e3779b97f4a7c15ull | 1;
	CHECK(tc_ctx_new(&co, &r.ctx), "context");
	tc_ctx_set_log(r.ctx, log_sink, NULL, TC_LOG_WARN);
	char p[3][512];
	snprintf(p[0], sizeof(p[0]), "%s/ssd.img", dir);
	snprintf(p[1], sizeof(p[1]), "%s/hdd-a.img", dir);
	snprintf(p[2], sizeof(p[2]), "%s/hdd-b.img", dir);
	for (int i = 0; i < 3; i++)
		unlink(p[i]);
	tc_dev *cd, *ad, *bd;
	CHECK(tc_dev_new_emu(r.ctx, "sata-ssd", p[0], TC_DEV_CREATE, 256 * MIB, &cd), p[0]);
	CHECK(tc_dev_new_emu(r.ctx, "hdd", p[1], TC_DEV_CREATE, 4 * GIB, &ad), p[1]);
	CHECK(tc_dev_new_emu(r.ctx, "hdd", p[2], TC_DEV_CREATE, 4 * GIB, &bd), p[2]);
	struct tc_cache_opts o;
	tc_cache_opts_default(&o);
	o.unprotected_writeback = true;   /* one emulated SSD: write-back by override */
	CHECK(tc_cache_format(r.ctx, cd, &o), "format cache");
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WT;
	s.seq_cutoff = 0;   /* the warm-up reads A's hot set in order: keep it cached */
	CHECK(tc_backing_format(r.ctx, ad, "a", &s), "format A");
	s.write_policy = TC_WP_WB;
	CHECK(tc_backing_format(r.ctx, bd, "b", &s), "format B");
	tc_cache *c;
	CHECK(tc_cache_open(r.ctx, cd, &c), "open cache");
	CHECK(tc_cache_attach(c, ad, NULL, 0, &r.a), "attach A");
	CHECK(tc_cache_attach(c, bd, NULL, 0, &r.b), "attach B");
	if (cfg == CFG_RESERVE || cfg == CFG_PRIO) {
		tc_volume_get(r.a, &s);
		s.reserve = HOT;
		if (cfg == CFG_PRIO)
			s.priority = TC_PRIO_HIGH;
		CHECK(tc_volume_set(r.a, &s, NULL, NULL), "reserve");
	} else if (cfg == CFG_PIN) {
		struct tc_region g = { .offset = 0, .length = HOT, .kind = TC_REGION_PINNED };
		CHECK(tc_volume_region_set(r.a, &g), "pin");
	}
	r.abuf = aligned_alloc(4096, 4096);
	for (int i = 0; i < B_QD; i++)
		r.bq[i].buf = aligned_alloc(4096, B_MAX_IO);
	/* Warm A's hot set: every 4 KiB block once (lines fill whole). */
	uint8_t *w = aligned_alloc(4096, MIB);
	for (uint64_t off = 0; off < HOT; off += MIB)
		CHECK(tc_volume_pread(r.a, w, MIB, off), "warm A");
	free(w);
	r.b_on = cfg != CFG_ALONE;
	drive(&r, 2000000000ull, false);   /* B alone first: it fills the cache */
	r.measuring = true;
	drive(&r, secs * 1000000000ull, true);
	r.measuring = false;
	r.b_on = false;
	while (r.a_busy || tc_ctx_pending(r.ctx))
		drive(&r, 1000000, false);
	for (int i = 0; i < B_QD; i++)
		while (r.bq[i].busy)
			drive(&r, 1000000, false);
	struct result res = { 0 };
	qsort(r.lat, r.nlat, sizeof(*r.lat), cmp64);
	if (r.nlat) {
		res.p50 = pct(r.lat, r.nlat, 50);
		res.p99 = pct(r.lat, r.nlat, 99);
		res.p999 = pct(r.lat, r.nlat, 99.9);
		res.max = r.lat[r.nlat - 1];
	}
	res.b_mibs = (double)r.b_bytes / MIB / (double)secs;
	free(r.lat);
	free(r.abuf);
	for (int i = 0; i < B_QD; i++)
		free(r.bq[i].buf);
	CHECK(tc_cache_close(c), "close cache");
	tc_dev_close(cd);
	tc_dev_close(ad);
	tc_dev_close(bd);
	tc_ctx_free(r.ctx);
	for (int i = 0; i < 3; i++)
		unlink(p[i]);
	return res;
}

static void usage(void)
{
	printf("usage: " BENCH_NAME " [--rounds N] [--seconds S] [--dir DIR]\n"
	       "  --rounds N   rounds, each running every configuration once (default 3)\n"
	       "  --seconds S  virtual seconds measured per run (default 10)\n"
	       "  --dir DIR    folder for the sparse device files (default /dev/shm when present,\n"
	       "               else $TMPDIR or /tmp: the emulated devices' flushes are\n"
	       "               fdatasync()s of these files, slow on a disk)\n");
}

int main(int argc, char **argv)
{
	int rounds = 3;
	uint64_t secs = 10;
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			  getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': rounds = atoi(optarg); if (rounds < 1 || rounds > 99) bad_usage("--rounds: \"%s\" is not 1..99", optarg); break;
		case 's': secs = strtoull(optarg, NULL, 10); if (!secs || secs > 3600) bad_usage("--seconds: \"%s\" is not 1..3600", optarg); break;
		case 'd': dir = optarg; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	double ratio[CFG_N][4][99], bratio[CFG_N][99];
	printf("%-5s %-8s %10s %10s %10s %10s %10s\n", "round", "config", "A p50 us",
	       "A p99 us", "A p99.9 us", "A max us", "B MiB/s");
	for (int k = 0; k < rounds; k++) {
		struct result res[CFG_N];
		for (int i = 0; i < CFG_N; i++) {
			/* Alternate the order from round to round. */
			int cfg = k % 2 ? CFG_N - 1 - i : i;
			res[cfg] = run_one(dir, cfg, 1000 + (uint64_t)k, secs);
			printf("%-5d %-8s %10.1f %10.1f %10.1f %10.1f %10.1f\n", k, cfg_name[cfg],
			       res[cfg].p50 / 1e3, res[cfg].p99 / 1e3, res[cfg].p999 / 1e3,
			       res[cfg].max / 1e3, res[cfg].b_mibs);
			fflush(stdout);
		}
		for (int i = 0; i < CFG_N; i++) {
			const struct result *x = &res[i], *a = &res[CFG_ALONE];
			ratio[i][0][k] = (double)x->p50 / (double)a->p50;
			ratio[i][1][k] = (double)x->p99 / (double)a->p99;
			ratio[i][2][k] = (double)x->p999 / (double)a->p999;
			ratio[i][3][k] = (double)x->max / (double)a->max;
			bratio[i][k] = res[CFG_SHARED].b_mibs > 0 ?
				       x->b_mibs / res[CFG_SHARED].b_mibs : 0;
		}
	}
	printf("\nmedian over %d rounds of the ratio to \"alone\" (A) and to \"shared\" (B):\n",
	       rounds);
	printf("%-8s %8s %8s %8s %8s %8s\n", "config", "p50", "p99", "p99.9", "max", "B tput");
	for (int i = 1; i < CFG_N; i++)
		printf("%-8s %8.2f %8.2f %8.2f %8.2f %8.2f\n", cfg_name[i],
		       bench_median(ratio[i][0], rounds), bench_median(ratio[i][1], rounds),
		       bench_median(ratio[i][2], rounds), bench_median(ratio[i][3], rounds),
		       bench_median(bratio[i], rounds));
	return 0;
}
