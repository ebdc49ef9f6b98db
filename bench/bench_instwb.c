/* SPDX-License-Identifier: MIT */
/*
 * bench_instwb.c - tc-bench-instwb: sequential full-stripe writes through a cache in
 * wb and in instwb (instant write-back), against the array written directly.
 *
 * The backing is a RAID 6 of 6 emulated HDDs (profiles/hdd.conf; chunk 256 KiB, so
 * full stripes of 1 MiB, partial stripes expensive), the cache a RAID 1 of 2 emulated
 * SATA SSDs (a protected cache: write-back needs one), all over sparse files in a
 * temporary folder.  Each round formats the cache and the backing afresh, then writes
 * --size MiB sequentially in 1 MiB requests (one full stripe each), one at a time, as
 * a stream past the default 4 MiB sequential cutoff: in wb each request goes to the
 * array as one full-stripe write (none of its lines is cached), in instwb it is made
 * dirty at once.  "array" writes the same requests to the array itself.  Rounds
 * alternate (array, wb, instwb, ...) so drift of a shared machine hits all alike; the
 * median MB/s of the rounds is quoted, with the ratios.
 *
 *   tc-bench-instwb [--size MIB] [--rounds N] [--tmpdir DIR]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiercache.h"
#define BENCH_NAME "tc-bench-instwb"
#include "bench_common.h"
#include "rig.h"

#define REQ MIB               /* one full stripe: 4 data chunks of 256 KiB */
#define MAX_ROUNDS 15
#define MODES 3

static const char *const mode_name[MODES] = { "array", "wb", "instwb" };

struct env {
	struct rig rig;
	uint64_t size;            /* bytes written per round */
};

/* One round of mode @mode: MB/s. */
static double round_run(struct env *e, unsigned mode, uint8_t *buf)
{
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = mode == 1 ? TC_WP_WB : TC_WP_INSTWB;
	s.flush_rate = TC_FLUSH_LOW;
	rig_open(&e->rig, e->size + 64 * MIB, 4 * e->size, mode ? &s : NULL);
	tc_dev *hdd = e->rig.hdd;
	tc_volume *vol = e->rig.vol;
	/* Where the time goes: each request is classed by the counter it moved (made
	 * dirty at once, sent whole to the array, or neither), and timed. */
	uint64_t path_ns[3] = { 0 }, path_n[3] = { 0 };
	struct tc_volume_stats st0, st;
	struct tc_cache_stats cs0, cs;
	if (vol) {
		tc_volume_stats(vol, &st0);
		tc_cache_stats(e->rig.cache, &cs0);
	}
	uint64_t t0 = now_ns(), prev_instant = 0, prev_full = 0;
	for (uint64_t off = 0; off < e->size; off += REQ) {
		memset(buf, (int)(off >> 20), 8);
		uint64_t t = now_ns();
		if (vol)
			CHECK(tc_volume_pwrite(vol, buf, REQ, off, 0), "write");
		else
			CHECK(tc_dev_pwrite(hdd, buf, REQ, TC_BACKING_DATA_OFFSET + off, 0),
			      "write the array");
		if (!vol)
			continue;
		tc_volume_stats(vol, &st);
		unsigned p = st.instant_bytes > prev_instant ? 0 :
			     st.full_stripe_bytes > prev_full ? 1 : 2;
		prev_instant = st.instant_bytes;
		prev_full = st.full_stripe_bytes;
		path_ns[p] += now_ns() - t;
		path_n[p]++;
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	if (vol) {
		tc_volume_stats(vol, &st);
		tc_cache_stats(e->rig.cache, &cs);
		fprintf(stderr, BENCH_NAME ": %s: %" PRIu64 " of %" PRIu64 " bytes made dirty "
			"at once, %" PRIu64 " sent whole to the array (service rates: cache "
			"%.0f MB/s, array %.0f MB/s); mean ms per request: instant %.2f (%" PRIu64
			"), to the array %.2f (%" PRIu64 "), other %.2f (%" PRIu64 "); during the "
			"stream: %" PRIu64 " bytes written back, %" PRIu64 " metadata commits\n",
			mode_name[mode], st.instant_bytes, e->size, st.full_stripe_bytes,
			st.stream_rate_cache / 1e6, st.stream_rate_backing / 1e6,
			path_n[0] ? path_ns[0] / 1e6 / (double)path_n[0] : 0.0, path_n[0],
			path_n[1] ? path_ns[1] / 1e6 / (double)path_n[1] : 0.0, path_n[1],
			path_n[2] ? path_ns[2] / 1e6 / (double)path_n[2] : 0.0, path_n[2],
			st.writeback_bytes - st0.writeback_bytes, cs.commits - cs0.commits);
	}
	rig_close(&e->rig);   /* the dirty data stays in the cache: discarded */
	return (double)e->size / 1e6 / secs;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char usage[] =
"usage: tc-bench-instwb [--size MIB] [--rounds N] [--tmpdir DIR]\n"
"  Sequential 1 MiB full-stripe writes to a RAID 6 of 6 emulated HDDs: the array\n"
"  written directly, then through a RAID 1 cache of 2 emulated SATA SSDs in wb and in\n"
"  instwb; alternating rounds, median MB/s and the ratios.\n"
"  --size MIB    written per round (default 32, a multiple of 1)\n"
"  --rounds N    rounds of each mode, 1..15 (default 3)\n"
"  --tmpdir DIR  where the sparse member files go (default $TMPDIR or /tmp)\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct env e = { .size = 32 * MIB };
	unsigned rounds = 3;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			e.size = bench_ulong_arg("--size (MiB)", optarg, 1, 4096) * MIB;
			break;
		case 'r':
			rounds = (unsigned)bench_ulong_arg("--rounds", optarg, 1, MAX_ROUNDS);
			break;
		case 't': tmp = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	rig_init(&e.rig, tmp, BENCH_NAME, TC_LOG_WARN);
	uint8_t *buf = aligned_alloc(4096, REQ);
	if (!buf)
		die("allocate", ENOMEM);
	for (size_t i = 0; i < REQ; i++)
		buf[i] = (uint8_t)(i * 13);

	double mbs[MODES][MAX_ROUNDS];
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned m = 0; m < MODES; m++) {
			mbs[m][r] = round_run(&e, m, buf);
			fprintf(stderr, "round %u %-6s %8.1f MB/s\n", r + 1, mode_name[m], mbs[m][r]);
		}
	double med[MODES];
	for (unsigned m = 0; m < MODES; m++) {
		qsort(mbs[m], rounds, sizeof(double), cmp_double);
		med[m] = mbs[m][rounds / 2];
	}
	printf("sequential 1 MiB full-stripe writes, %" PRIu64 " MiB, RAID 6 of 6 emulated "
	       "HDDs, cache RAID 1 of 2 emulated SATA SSDs, median of %u rounds\n",
	       e.size / MIB, rounds);
	for (unsigned m = 0; m < MODES; m++)
		printf("  %-7s %8.1f MB/s  %5.2f x array\n", mode_name[m], med[m],
		       med[m] / med[0]);
	printf("  instwb / wb: %.2f\n", med[2] / med[1]);

	free(buf);
	rig_free(&e.rig);
	return 0;
}
