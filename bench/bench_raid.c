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
 *
 * --rebuild: the rebuild of a RAID 6 of 6 emulated HDDs (profile hdd, files in
 * --dir) onto an emulated HDD spare: its time and MB/s on an idle array against a
 * member's own sequential write bandwidth (1 MiB at QD 8, measured in the same run),
 * at the windows in flight of --depth; and 4 KiB random reads at QD 8 for --seconds,
 * IOPS without a rebuild, then with one running at priority 0 (md's rule: the floor
 * under load) and 100 (the ceiling), alternating over the rounds, with their 99th
 * percentile latency.
 *
 *   tc-bench-raid --rebuild [--dir DIR] [--member-mib MIB] [--rounds N] [--seconds S]
 *
 * --hdd: the same RAID 6 of emulated HDDs uncached against one of its members, each
 * round both: sequential 1 MiB writes and reads at QD 8 (MB/s), random 4 KiB reads and
 * writes at QD 16 (IOPS), each for --seconds; then sequential and random reads with one
 * member lost and with two (docs/benchmarks.md, "Uncached arrays of HDDs").
 *
 *   tc-bench-raid --hdd [--dir DIR] [--member-mib MIB] [--rounds N] [--seconds S]
 *
 * --replace: what a replace costs the writes it overlaps.  The same RAID 6 of emulated
 * HDDs; random 4 KiB writes at QD 16 for --seconds on the healthy array, then with a
 * replace of member 1 held at 90 % of its copy (run at full speed to there, then at a
 * rate that copies nothing more in the run): writes to the rows already copied go to
 * the successor and to the member being replaced (docs/raid.md, "Replace").
 *
 *   tc-bench-raid --replace [--dir DIR] [--member-mib MIB] [--rounds N] [--seconds S]
 *
 * --unwritten: what the record of the regions ever written (wimap.c) saves a rebuild.
 * The same RAID 6 of emulated HDDs, made with tc_array_create (superblocks), every 4th
 * region written in full stripes (a file system's scattered data; the rest never
 * written), with the record and without it (TC_ARRAY_ALL_WRITTEN, as arrays made
 * before it), alternating: the idle rebuild of member 1 onto a spare (time, bytes read
 * from the survivors), then 4 KiB random reads at QD 8 over the whole array for
 * --seconds while member 2 rebuilds at priority 100; and random 4 KiB writes at QD 8
 * for --seconds on a fresh array, where the first write to each region waits for its
 * bit in the record (what the record costs the writes), after a discard of the whole
 * array (mkfs's first step), which the record makes a no-op.
 *
 *   tc-bench-raid --unwritten [--dir DIR] [--member-mib MIB] [--rounds N] [--seconds S]
 *
 * --readd: a member that left and came back, re-added (the write-intent map's regions
 * resynced) against rebuilt whole (bench_readd).
 *
 *   tc-bench-raid --readd [--dir DIR] [--member-mib MIB] [--rounds N]
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
#include "bench_qd.h"

#define REQ (1024 * KIB)        /* one full stripe of the RAID 6 measured */
#define QD 8u
#define MEMBERS 6u
#define MAX_ROUNDS 15

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
	struct bench_qd_job j = { .dev = dev, .op = op, .size = size, .len = REQ,
				  .bytes = size, .qd = QD, .bufs = bufs };
	uint64_t c0 = cpu_ns();

	bench_qd_run(&j);
	*wall = j.wall_ns;
	*cpu = cpu_ns() - c0;
}

/* ---- rebuild ------------------------------------------------------------------------ */

static char *emu_path(const char *dir, unsigned r, unsigned i)
{
	static char buf[8][512];

	snprintf(buf[i % 8], sizeof(buf[0]), "%s/tc-bench-raid-%u-%u.img", dir, r, i);
	return buf[i % 8];
}

static tc_dev *emu_new(tc_ctx *ctx, const char *path, uint64_t size)
{
	tc_dev *d;

	remove(path);
	CHECK(tc_dev_new_emu(ctx, "hdd", path, TC_DEV_CREATE, size, &d), "emulated HDD");
	return d;
}

/* A RAID 6 of MEMBERS emulated HDDs and one spare, the array written once over. */
static tc_dev *rebuild_array(tc_ctx *ctx, const char *dir, unsigned r, uint64_t msize,
			     uint8_t *bufs)
{
	tc_dev *m[MEMBERS], *a;
	struct tc_array_opts ao = { .level = TC_RAID6, .chunk = 256 * KIB };
	uint64_t wall, c_ns;

	for (unsigned i = 0; i < MEMBERS; i++)
		m[i] = emu_new(ctx, emu_path(dir, r, i), msize);
	CHECK(tc_dev_new_array(ctx, &ao, m, MEMBERS, &a), "array");
	pass(a, TC_OP_WRITE, msize * (MEMBERS - 2), bufs, &wall, &c_ns);
	CHECK(tc_array_add_spare(a, emu_new(ctx, emu_path(dir, r, MEMBERS), msize)), "spare");
	return a;
}

static void rebuild_close(tc_dev *a, const char *dir, unsigned r)
{
	tc_dev_close(a);
	for (unsigned i = 0; i <= MEMBERS; i++)
		remove(emu_path(dir, r, i));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Random 4 KiB reads at QD 8 over @dev for @seconds: IOPS, and the 99th percentile
 * latency in ms in *@p99. */
static double rand_reads(tc_dev *dev, uint64_t size, double seconds, uint8_t *bufs,
			 double *p99)
{
	struct bench_qd_job j = { .dev = dev, .op = TC_OP_READ, .size = size, .len = 4 * KIB,
				  .random = true, .seconds = seconds, .qd = QD, .bufs = bufs,
				  .maxlat = 1u << 20 };

	j.lat = malloc(j.maxlat * sizeof(*j.lat));
	if (!j.lat)
		die("latencies", ENOMEM);
	bench_qd_run(&j);
	qsort(j.lat, j.nlat, sizeof(*j.lat), cmp_u64);
	*p99 = j.nlat ? (double)j.lat[j.nlat * 99 / 100] / 1e6 : 0;
	free(j.lat);
	return (double)j.requests / ((double)j.wall_ns / 1e9);
}

/* A threaded context logging warnings, and @bytes of 4 KiB-aligned buffers filled with
 * @fill. */
static uint8_t *bench_setup(tc_ctx **ctx, size_t bytes, uint8_t fill)
{
	struct tc_ctx_opts co = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_WARN };

	CHECK(tc_ctx_new(&co, ctx), "context");
	tc_ctx_set_log(*ctx, log_sink, NULL, TC_LOG_WARN);
	uint8_t *bufs = aligned_alloc(4096, bytes);
	if (!bufs)
		die("buffers", ENOMEM);
	memset(bufs, fill, bytes);
	return bufs;
}

static int bench_rebuild(const char *dir, uint64_t msize, unsigned rounds, double seconds,
			 unsigned depth)
{
	tc_ctx *ctx;
	uint8_t *bufs = bench_setup(&ctx, QD * REQ, 0x6b);
	double member[MAX_ROUNDS], rebuild[MAX_ROUNDS], iops[4][MAX_ROUNDS], p99[4][MAX_ROUNDS];
	unsigned depth_used = depth;
	for (unsigned r = 0; r < rounds; r++) {
		/* One member's sequential write bandwidth. */
		uint64_t wall, c_ns;
		tc_dev *one = emu_new(ctx, emu_path(dir, r, 9), msize);
		pass(one, TC_OP_WRITE, msize, bufs, &wall, &c_ns);
		member[r] = (double)msize / 1e6 / ((double)wall / 1e9);
		tc_dev_close(one);
		remove(emu_path(dir, r, 9));
		/* The idle rebuild, unthrottled. */
		tc_dev *a = rebuild_array(ctx, dir, r, msize, bufs);
		struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX, .depth = depth };
		CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
		struct tc_array_status st;
		tc_array_status(a, &st);
		depth_used = st.rebuild.depth;
		uint64_t t0 = now_ns();
		CHECK(tc_array_fail_member(a, 1), "fail");
		CHECK(tc_array_wait(a), "rebuild");
		rebuild[r] = (double)msize / 1e6 / ((double)(now_ns() - t0) / 1e9);
		/* Random reads: healthy; one member lost, no rebuild; then during rebuilds
		 * at priority 0 and 100 (one member lost too, the rebuilding one). */
		uint64_t asize = msize * (MEMBERS - 2);
		iops[0][r] = rand_reads(a, asize, seconds, bufs, &p99[0][r]);
		for (unsigned p = 0; p < 2; p++) {
			ro = (struct tc_array_rebuild_opts){ .priority = p ? 100 : 0,
							     .depth = depth };
			CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
			CHECK(tc_array_fail_member(a, 2 + p), "fail");
			if (p == 0)
				iops[3][r] = rand_reads(a, asize, seconds, bufs, &p99[3][r]);
			CHECK(tc_array_add_spare(a, emu_new(ctx, emu_path(dir, r, 7 + p), msize)),
			      "spare");
			iops[1 + p][r] = rand_reads(a, asize, seconds, bufs, &p99[1 + p][r]);
			struct tc_array_status st;
			tc_array_status(a, &st);
			if (st.sync != TC_ARRAY_SYNC_REBUILD)
				fprintf(stderr, BENCH_NAME ": the rebuild ended within the read run; "
					"lengthen --member-mib\n");
			ro.max_rate = UINT64_MAX;
			ro.priority = 100;
			CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
			CHECK(tc_array_wait(a), "rebuild");
		}
		rebuild_close(a, dir, r);
		remove(emu_path(dir, r, 7));
		remove(emu_path(dir, r, 8));
	}
	double mb = bench_median(member, rounds), rb = bench_median(rebuild, rounds);
	double i0 = bench_median(iops[0], rounds), i1 = bench_median(iops[1], rounds);
	double i2 = bench_median(iops[2], rounds), id = bench_median(iops[3], rounds);
	double l0 = bench_median(p99[0], rounds), l1 = bench_median(p99[1], rounds);
	double l2 = bench_median(p99[2], rounds), ld = bench_median(p99[3], rounds);
	printf("RAID 6 of %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64 " MiB "
	       "members, %u windows in flight, %u rounds\n", MEMBERS, msize / MIB, depth_used,
	       rounds);
	printf("  member sequential write %7.1f MB/s  idle rebuild %7.1f MB/s  "
	       "rebuild/member %.2f\n", mb, rb, rb / mb);
	printf("  random 4 KiB reads QD %u: healthy %6.0f IOPS, a member lost %6.0f (%.2f)\n"
	       "    rebuilding at priority 0 %6.0f (%.2f of healthy, %.2f of degraded), "
	       "at 100 %6.0f (%.2f, %.2f)\n", QD, i0, id, id / i0, i1, i1 / i0, i1 / id, i2,
	       i2 / i0, i2 / id);
	printf("  p99 latency: healthy %.1f ms, a member lost %.1f ms, rebuilding at priority "
	       "0 %.1f ms (%.2f of degraded), at 100 %.1f ms (%.2f)\n", l0, ld, l1, l1 / ld,
	       l2, l2 / ld);
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}

/* Random 4 KiB writes on the healthy array, then during a replace held at 90 %. */
static int bench_replace(const char *dir, uint64_t msize, unsigned rounds, double seconds)
{
	tc_ctx *ctx;
	uint8_t *bufs = bench_setup(&ctx, QD * REQ, 0x5d);
	double healthy[MAX_ROUNDS], during[MAX_ROUNDS];
	uint64_t asize = msize * (MEMBERS - 2);

	for (unsigned r = 0; r < rounds; r++) {
		tc_dev *a = rebuild_array(ctx, dir, r, msize, bufs);
		struct bench_qd_job j = { .dev = a, .op = TC_OP_WRITE, .size = asize,
					  .len = 4 * KIB, .random = true, .seconds = seconds,
					  .qd = 16, .bufs = bufs };
		bench_qd_run(&j);
		healthy[r] = (double)j.requests / ((double)j.wall_ns / 1e9);
		struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX, .priority = 100 };
		CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
		CHECK(tc_array_replace(a, 1, emu_new(ctx, emu_path(dir, r, 7), msize)), "replace");
		struct tc_array_status st;
		do {
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
			tc_array_status(a, &st);
		} while (st.sync == TC_ARRAY_SYNC_REBUILD && st.sync_pos < msize / 10 * 9);
		ro = (struct tc_array_rebuild_opts){ .min_rate = 1000, .max_rate = 1000 };
		CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
		tc_array_status(a, &st);
		if (st.sync != TC_ARRAY_SYNC_REBUILD)
			fprintf(stderr, BENCH_NAME ": the replace ended before the run; lengthen "
				"--member-mib\n");
		j = (struct bench_qd_job){ .dev = a, .op = TC_OP_WRITE, .size = asize,
					   .len = 4 * KIB, .random = true, .seconds = seconds,
					   .qd = 16, .bufs = bufs };
		bench_qd_run(&j);
		during[r] = (double)j.requests / ((double)j.wall_ns / 1e9);
		rebuild_close(a, dir, r);
		remove(emu_path(dir, r, 7));
	}
	double h = bench_median(healthy, rounds), d = bench_median(during, rounds);
	printf("RAID 6 of %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64 " MiB "
	       "members, %u rounds\n", MEMBERS, msize / MIB, rounds);
	printf("  random 4 KiB writes QD 16: healthy %6.0f IOPS, during a replace at 90 %% "
	       "%6.0f IOPS (%.2f of healthy)\n", h, d, d / h);
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}

/* ---- a rebuild where a quarter of the array was ever written ----------------------- */

static tc_dev *written_array(tc_ctx *ctx, const char *dir, unsigned r, uint64_t msize,
			     bool record, enum tc_array_consistency pol, unsigned every,
			     uint64_t *region, uint8_t *bufs, tc_dev **m);

/* A RAID 6 of MEMBERS emulated HDDs with superblocks, with (@record) or without the
 * record of the regions written; every 4th run of @region member bytes written (full
 * stripes, 1 MiB requests); its members in @m. */
static tc_dev *unwritten_array(tc_ctx *ctx, const char *dir, unsigned r, uint64_t msize,
			       bool record, uint64_t *region, uint8_t *bufs, tc_dev **m)
{
	return written_array(ctx, dir, r, msize, record, TC_CONSISTENCY_DEFAULT, 4, region,
			     bufs, m);
}

/* The same, with the consistency policy @pol, every @every-th run written. */
static tc_dev *written_array(tc_ctx *ctx, const char *dir, unsigned r, uint64_t msize,
			     bool record, enum tc_array_consistency pol, unsigned every,
			     uint64_t *region, uint8_t *bufs, tc_dev **m)
{
	struct tc_array_opts ao = { .level = TC_RAID6, .chunk = 256 * KIB, .consistency = pol };
	tc_dev *a;

	for (unsigned i = 0; i < MEMBERS; i++)
		m[i] = emu_new(ctx, emu_path(dir, r, i), msize + TC_ARRAY_DATA_OFFSET);
	tc_dev *mm[MEMBERS];
	memcpy(mm, m, sizeof(mm));
	CHECK(tc_array_create(ctx, "bench", &ao, mm, MEMBERS, NULL, 0, TC_ARRAY_ASSUME_CLEAN |
			      (record ? 0 : TC_ARRAY_ALL_WRITTEN), &a), "array");
	struct tc_array_status st;
	tc_array_status(a, &st);
	if (record)
		*region = st.written_region_size;
	uint64_t run = *region * (MEMBERS - 2);
	for (uint64_t off = 0; off + run <= msize * (MEMBERS - 2); off += every * run)
		for (uint64_t x = 0; x < run; x += REQ)
			CHECK(tc_dev_io(a, TC_OP_WRITE, 0, bufs, REQ, off + x), "write");
	CHECK(tc_dev_flush(a), "flush");
	return a;
}

static uint64_t members_read(tc_dev **m, unsigned skip)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < MEMBERS; i++) {
		struct tc_dev_stats st;
		if (i == skip)
			continue;
		tc_dev_stats(m[i], &st);
		n += st.bytes_read;
	}
	return n;
}

static int bench_unwritten(const char *dir, uint64_t msize, unsigned rounds, double seconds)
{
	tc_ctx *ctx;
	uint8_t *bufs = bench_setup(&ctx, QD * REQ, 0x3c);
	double secs[2][MAX_ROUNDS], gib[2][MAX_ROUNDS], iops[2][MAX_ROUNDS];
	double wiops[2][MAX_ROUNDS], dsecs[2][MAX_ROUNDS];
	uint64_t region = 0, asize = msize * (MEMBERS - 2);
	bool ended = false;

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned v = 0; v < 2; v++) {      /* 0: with the record, 1: without */
			tc_dev *m[MEMBERS];
			tc_dev *a = unwritten_array(ctx, dir, r, msize, v == 0, &region, bufs, m);
			struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX,
							    .priority = 100 };
			CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
			CHECK(tc_array_add_spare(a, emu_new(ctx, emu_path(dir, r, 7),
							    msize + TC_ARRAY_DATA_OFFSET)), "spare");
			uint64_t read0 = members_read(m, 1), t0 = now_ns();
			CHECK(tc_array_fail_member(a, 1), "fail");
			CHECK(tc_array_wait(a), "rebuild");
			secs[v][r] = (double)(now_ns() - t0) / 1e9;
			gib[v][r] = (double)(members_read(m, 1) - read0) / (double)GIB;
			/* The foreground during a rebuild: random reads over the whole array. */
			CHECK(tc_array_fail_member(a, 2), "fail");
			CHECK(tc_array_add_spare(a, emu_new(ctx, emu_path(dir, r, 8),
							    msize + TC_ARRAY_DATA_OFFSET)), "spare");
			double p99;
			iops[v][r] = rand_reads(a, asize, seconds, bufs, &p99);
			struct tc_array_status st;
			tc_array_status(a, &st);
			if (st.sync != TC_ARRAY_SYNC_REBUILD)
				ended = true;
			CHECK(tc_array_wait(a), "rebuild");
			rebuild_close(a, dir, r);
			remove(emu_path(dir, r, 8));
			/* What the record costs the writes: random 4 KiB writes on a fresh
			 * array, where each first write to a region waits for its bit. */
			for (unsigned i = 0; i < MEMBERS; i++)
				m[i] = emu_new(ctx, emu_path(dir, r, i), msize + TC_ARRAY_DATA_OFFSET);
			struct tc_array_opts ao = { .level = TC_RAID6, .chunk = 256 * KIB };
			CHECK(tc_array_create(ctx, "bench", &ao, m, MEMBERS, NULL, 0,
					      TC_ARRAY_ASSUME_CLEAN | (v ? TC_ARRAY_ALL_WRITTEN : 0),
					      &a), "array");
			/* mkfs's first step: discard the whole device. */
			t0 = now_ns();
			CHECK(tc_dev_io(a, TC_OP_DISCARD, 0, NULL, asize, 0), "discard");
			dsecs[v][r] = (double)(now_ns() - t0) / 1e9;
			struct bench_qd_job j = { .dev = a, .op = TC_OP_WRITE, .size = asize,
						  .len = 4 * KIB, .random = true,
						  .seconds = seconds, .qd = QD, .bufs = bufs };
			bench_qd_run(&j);
			wiops[v][r] = (double)j.requests / ((double)j.wall_ns / 1e9);
			rebuild_close(a, dir, r);
		}
	if (ended)
		fprintf(stderr, BENCH_NAME ": a rebuild ended within the read run; lengthen "
			"--member-mib\n");
	double s0 = bench_median(secs[0], rounds), s1 = bench_median(secs[1], rounds);
	double g0 = bench_median(gib[0], rounds), g1 = bench_median(gib[1], rounds);
	double i0 = bench_median(iops[0], rounds), i1 = bench_median(iops[1], rounds);
	printf("RAID 6 of %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64 " MiB "
	       "members, every 4th region of %" PRIu64 " MiB written, %u rounds\n", MEMBERS,
	       msize / MIB, region / MIB, rounds);
	printf("  idle rebuild: with the record of regions written %.1f s, survivors read "
	       "%.2f GiB; without %.1f s, %.2f GiB (time %.2f, reads %.2f)\n", s0, g0, s1, g1,
	       s0 / s1, g0 / g1);
	double w0 = bench_median(wiops[0], rounds), w1 = bench_median(wiops[1], rounds);
	printf("  random 4 KiB reads QD %u during a rebuild at priority 100: with %.0f IOPS, "
	       "without %.0f (%.2f)\n", QD, i0, i1, i0 / i1);
	double d0 = bench_median(dsecs[0], rounds), d1 = bench_median(dsecs[1], rounds);
	printf("  discard of the whole fresh array (as mkfs does): with %.3f s, without %.1f s "
	       "(%.4f)\n", d0, d1, d0 / d1);
	printf("  random 4 KiB writes QD %u on a fresh array (first writes to every region): "
	       "with %.0f IOPS, without %.0f (%.2f)\n", QD, w0, w1, w0 / w1);
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}

/* ---- a member back: re-add against a whole rebuild --------------------------------- */

/*
 * --readd: a member that left and came back (tc_array_re_add) against the same member
 * rebuilt whole, as without re-add (a blank spare).  The RAID 6 of emulated HDDs with
 * the write-intent map, a quarter of its regions written; member 1 fails, every 16th
 * region is written again while it is away (full stripes); then, alternating: the
 * member re-added (the map's regions resynced) or a blank spare added (every region
 * ever written rebuilt).  Time to a whole array, and bytes read from the survivors.
 */
static int bench_readd(const char *dir, uint64_t msize, unsigned rounds)
{
	tc_ctx *ctx;
	uint8_t *bufs = bench_setup(&ctx, QD * REQ, 0x5a);
	double secs[2][MAX_ROUNDS], gib[2][MAX_ROUNDS];
	uint64_t region = 0, mb_away = 0;

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned v = 0; v < 2; v++) {      /* 0: re-add, 1: a whole rebuild */
			tc_dev *m[MEMBERS];
			tc_dev *a = written_array(ctx, dir, r, msize, true, TC_CONSISTENCY_BITMAP,
						  4, &region, bufs, m);
			struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX,
							    .priority = 100 };
			CHECK(tc_array_set_rebuild(a, &ro), "rebuild rates");
			/* Long after those writes (their bits cleared, 5 s after the last), the
			 * member fails. */
			struct tc_array_status st;
			for (int w = 0; w < 100 && !tc_array_status(a, &st) && st.map_dirty; w++)
				nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
			CHECK(tc_array_fail_member(a, 1), "fail");
			uint64_t run = region * (MEMBERS - 2), away = 0;
			for (uint64_t off = 0; off + run <= msize * (MEMBERS - 2); off += 16 * run)
				for (uint64_t x = 0; x < run; x += REQ, away += REQ)
					CHECK(tc_dev_io(a, TC_OP_WRITE, 0, bufs, REQ, off + x), "write");
			CHECK(tc_dev_flush(a), "flush");
			mb_away = away / MIB;
			tc_dev *back;
			if (v == 0)
				CHECK(tc_dev_new_emu(ctx, "hdd", emu_path(dir, r, 1), 0, 0, &back),
				      "the member again");
			else
				back = emu_new(ctx, emu_path(dir, r, 7), msize + TC_ARRAY_DATA_OFFSET);
			uint64_t read0 = members_read(m, 1), t0 = now_ns();
			CHECK(v == 0 ? tc_array_re_add(a, back) : tc_array_add_spare(a, back),
			      v == 0 ? "re-add" : "spare");
			CHECK(tc_array_wait(a), "resync");
			secs[v][r] = (double)(now_ns() - t0) / 1e9;
			gib[v][r] = (double)(members_read(m, 1) - read0) / (double)GIB;
			rebuild_close(a, dir, r);
			remove(emu_path(dir, r, 7));
		}
	double s0 = bench_median(secs[0], rounds), s1 = bench_median(secs[1], rounds);
	double g0 = bench_median(gib[0], rounds), g1 = bench_median(gib[1], rounds);
	printf("RAID 6 of %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64 " MiB "
	       "members, every 4th region of %" PRIu64 " MiB written, %" PRIu64 " MiB written "
	       "while member 1 was away, %u rounds\n", MEMBERS, msize / MIB, region / MIB,
	       mb_away, rounds);
	printf("  member 1 back: re-added %.2f s, survivors read %.3f GiB; rebuilt whole "
	       "(a blank spare) %.2f s, %.3f GiB (time %.3f, reads %.3f)\n", s0, g0, s1, g1,
	       s0 / s1, g0 / g1);
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}

/* ---- uncached RAID 6 of emulated HDDs ------------------------------------------------ */

#define HDD_RAND_QD 16u

/* @op over @dev for @seconds: 1 MiB sequential at QD 8 (MB/s) or, with @random, 4 KiB
 * random at QD HDD_RAND_QD (IOPS). */
static double hdd_run(tc_dev *dev, uint64_t size, unsigned op, bool random, double seconds,
		      uint8_t *bufs)
{
	struct bench_qd_job j = { .dev = dev, .op = op, .size = size,
				  .len = random ? 4 * KIB : REQ, .random = random,
				  .seconds = seconds, .qd = random ? HDD_RAND_QD : QD,
				  .bufs = bufs };

	bench_qd_run(&j);
	double per_s = (double)j.requests / ((double)j.wall_ns / 1e9);
	return random ? per_s : per_s * (double)j.len / 1e6;
}

enum { H_SW, H_SR, H_RR, H_RW, H_N };                 /* the four workloads */
static const char *const hdd_what[H_N] = {
	"sequential 1 MiB write (MB/s)", "sequential 1 MiB read (MB/s)",
	"random 4 KiB read (IOPS)", "random 4 KiB write (IOPS)",
};

/* The four workloads on @dev of @size bytes, into @v[H_N]. */
static void hdd_four(tc_dev *dev, uint64_t size, double seconds, uint8_t *bufs, double *v)
{
	v[H_SW] = hdd_run(dev, size, TC_OP_WRITE, false, seconds, bufs);
	v[H_SR] = hdd_run(dev, size, TC_OP_READ, false, seconds, bufs);
	v[H_RR] = hdd_run(dev, size, TC_OP_READ, true, seconds, bufs);
	v[H_RW] = hdd_run(dev, size, TC_OP_WRITE, true, seconds, bufs);
}

static int bench_hdd(const char *dir, uint64_t msize, unsigned rounds, double seconds)
{
	/* [0] one member, [1] the array healthy; dg: reads with one / two lost. */
	double v[2][H_N][MAX_ROUNDS], dg[2][2][MAX_ROUNDS];
	tc_ctx *ctx;
	uint8_t *bufs = bench_setup(&ctx, HDD_RAND_QD * REQ, 0x5a);

	for (unsigned r = 0; r < rounds; r++) {
		double one[H_N], arr[H_N];
		tc_dev *m[MEMBERS], *a;
		struct tc_array_opts ao = { .level = TC_RAID6, .chunk = 256 * KIB };
		struct tc_dev_info info;

		/* One member alone, then the array of MEMBERS such members, each round. */
		tc_dev *single = emu_new(ctx, emu_path(dir, r, MEMBERS), msize);
		hdd_four(single, msize, seconds, bufs, one);
		tc_dev_close(single);
		for (unsigned i = 0; i < MEMBERS; i++)
			m[i] = emu_new(ctx, emu_path(dir, r, i), msize);
		CHECK(tc_dev_new_array(ctx, &ao, m, MEMBERS, &a), "array");
		tc_dev_info(a, &info);
		hdd_four(a, info.size, seconds, bufs, arr);
		for (unsigned k = 0; k < H_N; k++) {
			v[0][k][r] = one[k];
			v[1][k][r] = arr[k];
		}
		/* Degraded: one member lost, then a second one (no spare). */
		for (unsigned lost = 0; lost < 2; lost++) {
			CHECK(tc_array_fail_member(a, lost * 3), "fail a member");
			dg[lost][0][r] = hdd_run(a, info.size, TC_OP_READ, false, seconds, bufs);
			dg[lost][1][r] = hdd_run(a, info.size, TC_OP_READ, true, seconds, bufs);
		}
		rebuild_close(a, dir, r);
		fprintf(stderr, "round %u: member %.0f/%.0f MB/s %.0f/%.0f IOPS, array %.0f/%.0f "
			"MB/s %.0f/%.0f IOPS\n", r + 1, one[H_SW], one[H_SR], one[H_RR], one[H_RW],
			arr[H_SW], arr[H_SR], arr[H_RR], arr[H_RW]);
	}
	printf("RAID 6 of %u emulated HDDs (profile hdd), chunk 256 KiB, %" PRIu64 " MiB members, "
	       "uncached; %.1f s per run, sequential at QD %u, random at QD %u; median of %u "
	       "rounds\n", MEMBERS, msize / MIB, seconds, QD, HDD_RAND_QD, rounds);
	printf("  %-32s %10s %10s %8s %12s\n", "workload", "member", "array", "array/1",
		"per member");
	for (unsigned k = 0; k < H_N; k++) {
		double m1 = bench_median(v[0][k], rounds), ar = bench_median(v[1][k], rounds);
		/* Full-stripe writes carry data on n - 2 members; reads on all n. */
		unsigned carry = k == H_SW ? MEMBERS - 2 : MEMBERS;
		printf("  %-32s %10.1f %10.1f %8.2f %12.2f\n", hdd_what[k], m1, ar, ar / m1,
		       ar / m1 / carry);
	}
	double sr = bench_median(v[1][H_SR], rounds), rr = bench_median(v[1][H_RR], rounds);
	for (unsigned lost = 0; lost < 2; lost++) {
		double s = bench_median(dg[lost][0], rounds), q = bench_median(dg[lost][1], rounds);
		printf("  %u member%s lost: sequential read %.1f MB/s (%.2f of healthy), random "
		       "read %.0f IOPS (%.2f)\n", lost + 1, lost ? "s" : "", s, s / sr, q, q / rr);
	}
	free(bufs);
	tc_ctx_free(ctx);
	return 0;
}

static void usage(void)
{
	printf("usage: " BENCH_NAME " [--size MIB] [--rounds N]\n"
	       "       " BENCH_NAME " --rebuild|--hdd|--replace [--dir DIR] [--member-mib MIB]"
	       " [--rounds N]"
	       " [--seconds S]\n"
	       "  Full-stripe sequential write and read throughput of a RAID 6 array of %u\n"
	       "  memory members (chunk 256 KiB, 1 MiB requests at QD %u) against one memory\n"
	       "  device of the array's size, and CPU time per GiB written.\n"
	       "  --size MIB   array size (default 256, a multiple of 4)\n"
	       "  --rounds N   alternating rounds, median quoted (default 5, at most %u)\n"
	       "  --rebuild    instead: rebuild time and MB/s of a RAID 6 of %u emulated HDDs\n"
	       "               against one member's sequential write bandwidth, and random\n"
	       "               read IOPS without and during a rebuild (priority 0 and 100)\n"
	       "  --hdd        instead: a RAID 6 of %u emulated HDDs uncached against one of\n"
	       "               its members: sequential 1 MiB writes and reads, random 4 KiB\n"
	       "               reads and writes, and reads with one and two members lost\n"
	       "  --replace    instead: random 4 KiB write IOPS of that RAID 6, healthy and\n"
	       "               during a replace of a member held at 90 %% of its copy\n"
	       "  --unwritten  instead: that RAID 6 with a quarter of its regions written,\n"
	       "               with and without the record of the regions written: rebuild\n"
	       "               time, bytes read from the survivors, random read IOPS during\n"
	       "               a rebuild\n"
	       "  --readd      instead: that RAID 6 with the write-intent map, a member away\n"
	       "               while 1/16 of its regions are written: re-added against\n"
	       "               rebuilt whole (time, bytes read from the survivors)\n"
	       "  --dir DIR    the modes above: folder of the emulated HDDs' files\n"
	       "               (default /tmp)\n"
	       "  --member-mib MIB  the modes above: member size (default 256)\n"
	       "  --seconds S  the modes above: length of each run (default 3)\n"
	       "  --depth N    --rebuild: rebuild windows in flight (default 0: the library's)\n",
	       MEMBERS, QD, MAX_ROUNDS, MEMBERS, MEMBERS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "rebuild", no_argument, NULL, 'R' },
		{ "hdd", no_argument, NULL, 'H' },
		{ "replace", no_argument, NULL, 'P' },
		{ "unwritten", no_argument, NULL, 'U' },
		{ "readd", no_argument, NULL, 'A' },
		{ "dir", required_argument, NULL, 'd' },
		{ "member-mib", required_argument, NULL, 'm' },
		{ "seconds", required_argument, NULL, 't' },
		{ "depth", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size_mib = 256, member_mib = 256;
	unsigned rounds = 5, depth = 0;
	bool rebuild = false, hdd = false, replace = false, unwritten = false, readd = false;
	const char *dir = "/tmp";
	double seconds = 3;
	int c;

	while ((c = getopt_long(argc, argv, "s:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'R':
			rebuild = true;
			break;
		case 'H':
			hdd = true;
			break;
		case 'P':
			replace = true;
			break;
		case 'U':
			unwritten = true;
			break;
		case 'A':
			readd = true;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'm':
			member_mib = strtoull(optarg, NULL, 10);
			if (member_mib < 4)
				bad_usage("--member-mib %s: at least 4", optarg);
			break;
		case 't':
			seconds = strtod(optarg, NULL);
			if (!(seconds > 0))
				bad_usage("--seconds %s: not a positive number", optarg);
			break;
		case 'D':
			depth = (unsigned)strtoul(optarg, NULL, 10);
			break;
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
	if (hdd)
		return bench_hdd(dir, member_mib * MIB, rounds, seconds);
	if (replace)
		return bench_replace(dir, member_mib * MIB, rounds, seconds);
	if (unwritten)
		return bench_unwritten(dir, member_mib * MIB, rounds, seconds);
	if (readd)
		return bench_readd(dir, member_mib * MIB, rounds);
	if (rebuild)
		return bench_rebuild(dir, member_mib * MIB, rounds, seconds, depth);
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
	double w0 = bench_median(wr[0], rounds), w1 = bench_median(wr[1], rounds);
	double r0 = bench_median(rd[0], rounds), r1 = bench_median(rd[1], rounds);
	double c0 = bench_median(cpu[0], rounds), c1 = bench_median(cpu[1], rounds);
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
