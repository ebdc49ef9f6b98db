/* SPDX-License-Identifier: MIT */
/*
 * bench_ppl.c - tc-bench-ppl: what closing the write hole costs (docs/raid.md, "The
 * write hole").
 *
 * RAID 5 and RAID 6 of 5 emulated HDDs (profile hdd, files in --dir, chunk 256 KiB),
 * made with tc_array_create twice per round: with the partial-parity log
 * (--consistency-policy ppl) and with the write-intent map only (bitmap, the write
 * hole open).  On each: random 4 KiB writes at QD 8 for --seconds (IOPS), then
 * sequential 1 MiB writes at QD 8 for --seconds (MB/s; 1 MiB is one full stripe of
 * the RAID 5, a partial one of the RAID 6 of 3 data members).  Runs alternate (ppl,
 * bitmap, ppl, ...) over --rounds; the median of the per-round ratios ppl / bitmap is
 * quoted.
 *
 *   tc-bench-ppl [--dir DIR] [--member-mib MIB] [--rounds N] [--seconds S]
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
#define BENCH_NAME "tc-bench-ppl"
#include "bench_common.h"
#include "bench_qd.h"

#define QD 8u
#define MEMBERS 5u
#define MAX_ROUNDS 15

/* Writes of @len bytes at QD 8 for @seconds, random (4 KiB aligned) or sequential
 * (wrapping at @size): requests per second. */
static double writes(tc_dev *dev, uint64_t size, uint64_t len, bool random, double seconds,
		     uint8_t *bufs)
{
	struct bench_qd_job j = { .dev = dev, .op = TC_OP_WRITE, .size = size, .len = len,
				  .random = random, .seconds = seconds, .qd = QD, .bufs = bufs };

	bench_qd_run(&j);
	return (double)j.requests / ((double)j.wall_ns / 1e9);
}

/* One array of @level with @policy: random IOPS and sequential MB/s. */
static void one(tc_ctx *ctx, const char *dir, enum tc_raid_level_id level,
		enum tc_array_consistency policy, uint64_t msize, double seconds,
		uint8_t *bufs, double *iops, double *mbs)
{
	tc_dev *m[MEMBERS], *a;
	char path[MEMBERS][512];
	struct tc_array_opts o = { .level = level, .chunk = 256 * KIB, .consistency = policy };

	for (unsigned i = 0; i < MEMBERS; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/tc-bench-ppl-%u", dir, i);
		remove(path[i]);
		CHECK(tc_dev_new_emu(ctx, "hdd", path[i], TC_DEV_CREATE, msize, &m[i]),
		      "emulated HDD");
	}
	CHECK(tc_array_create(ctx, "bench", &o, m, MEMBERS, NULL, 0, TC_ARRAY_ASSUME_CLEAN,
			      &a), "array");
	struct tc_dev_info info;
	tc_dev_info(a, &info);
	uint64_t size = info.size;
	*iops = writes(a, size, 4 * KIB, true, seconds, bufs);
	*mbs = writes(a, size, MIB, false, seconds, bufs) * (double)MIB / 1e6;
	tc_dev_close(a);
	for (unsigned i = 0; i < MEMBERS; i++)
		remove(path[i]);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp";
	uint64_t member_mib = 256;
	unsigned rounds = 3;
	double seconds = 3;
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "member-mib", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'm': member_mib = strtoull(optarg, NULL, 10); break;
		case 'r': rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': seconds = strtod(optarg, NULL); break;
		default:
			printf("usage: tc-bench-ppl [--dir DIR] [--member-mib MIB] [--rounds N] "
			       "[--seconds S]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!rounds || rounds > MAX_ROUNDS || member_mib < 16 || seconds <= 0)
		bad_usage("bad --rounds (1-15), --member-mib (16+) or --seconds: %s", "");
	struct tc_ctx_opts co = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_WARN };
	tc_ctx *ctx;
	CHECK(tc_ctx_new(&co, &ctx), "context");
	uint8_t *bufs = aligned_alloc(4096, QD * MIB);
	if (!bufs)
		die("buffers", ENOMEM);
	memset(bufs, 0x5a, QD * MIB);
	uint64_t msize = (member_mib << 20) + TC_ARRAY_DATA_OFFSET;
	static const enum tc_raid_level_id levels[] = { TC_RAID5, TC_RAID6 };
	printf("tc-bench-ppl: %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64
	       " MiB of data per member, QD %u, %.1f s per run, %u rounds\n", MEMBERS,
	       member_mib, QD, seconds, rounds);
	for (unsigned l = 0; l < 2; l++) {
		double ri[MAX_ROUNDS], rm[MAX_ROUNDS], pi[MAX_ROUNDS], bi[MAX_ROUNDS];
		double pm[MAX_ROUNDS], bm[MAX_ROUNDS];
		for (unsigned r = 0; r < rounds; r++) {
			/* Alternate the order too, so drift favours neither. */
			if (r % 2 == 0) {
				one(ctx, dir, levels[l], TC_CONSISTENCY_PPL, msize, seconds, bufs,
				    &pi[r], &pm[r]);
				one(ctx, dir, levels[l], TC_CONSISTENCY_BITMAP, msize, seconds, bufs,
				    &bi[r], &bm[r]);
			} else {
				one(ctx, dir, levels[l], TC_CONSISTENCY_BITMAP, msize, seconds, bufs,
				    &bi[r], &bm[r]);
				one(ctx, dir, levels[l], TC_CONSISTENCY_PPL, msize, seconds, bufs,
				    &pi[r], &pm[r]);
			}
			ri[r] = pi[r] / bi[r];
			rm[r] = pm[r] / bm[r];
			printf("  raid%d round %u: random 4K writes %.0f vs %.0f IOPS, sequential "
			       "1M writes %.1f vs %.1f MB/s (ppl vs bitmap)\n", levels[l], r + 1,
			       pi[r], bi[r], pm[r], bm[r]);
		}
		printf("raid%d: ppl / bitmap, median of %u rounds: random 4K writes %.2fx, "
		       "sequential 1M writes %.2fx\n", levels[l], rounds, bench_median(ri, rounds),
		       bench_median(rm, rounds));
	}
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}
