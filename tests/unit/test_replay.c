/* SPDX-License-Identifier: MIT */
/*
 * test_replay.c - the replay engine of src/replay/replay.c on a six-request trace whose
 * every hit and miss is known: request and byte hits, the engine's line counters,
 * warm-up, closed loop against timed, memory devices (no service time: zero latency)
 * and emulated devices (hits faster than misses, the same seed the same figures,
 * timed mode on the trace's clock).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "replay/replay.h"
#include "replay/trace.h"
#include "helpers.h"

static char dir[PATH_MAX];

/* MQSim lines "arrival_ns device lba size type" (sectors; type 1 read, 0 write), 1 ms
 * apart.  With 64 KiB lines, fill = line, write-back:
 *   1 read  [0, 4K)            miss: fills line 0
 *   2 read  [0, 4K)            hit
 *   3 read  [8K, 12K)          hit (line 0 was filled whole)
 *   4 write [128K, 132K)       miss: allocates line 2, one unit valid
 *   5 read  [128K, 132K)       hit
 *   6 read  [1M, 1M + 8K)      miss */
static const char trace_text[] =
	"0 0 0 8 1\n"
	"1000000 0 0 8 1\n"
	"2000000 0 16 8 1\n"
	"3000000 0 256 8 0\n"
	"4000000 0 256 8 1\n"
	"5000000 0 2048 16 1\n";

static struct trace *trace;
static struct replay_map map;

static int setup_all(void **state)
{
	char path[PATH_MAX + 32], err[512];

	if (t_mkdtemp(dir, sizeof(dir), "tc-test-replay"))
		return -1;
	snprintf(path, sizeof(path), "%s/six.trace", dir);
	FILE *f = fopen(path, "w");
	if (!f || fputs(trace_text, f) < 0 || fclose(f))
		return -1;
	if (trace_load(path, TRACE_MQSIM, NULL, &trace, err, sizeof(err)) ||
	    replay_map_build(trace, 1ull << 30, &map, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	unlink(path);
	return 0;
}

static int teardown_all(void **state)
{
	replay_map_free(&map);
	trace_free(trace);
	return rmdir(dir);
}

static void log_quiet(void *opaque, enum tc_log_level level, const char *msg)
{
	if (level == TC_LOG_ERROR)
		fprintf(stderr, "test_replay: %s\n", msg);
}

static struct replay_result *run(enum replay_devices devs, unsigned qd, uint64_t warmup,
				    double speed)
{
	struct replay_result *res = malloc(sizeof(*res));
	struct replay_opts o;
	char err[512];

	assert_non_null(res);
	replay_opts_default(&o);
	o.devices = devs;
	o.dir = dir;
	o.cache_bytes = 1;                  /* the minimum: 16 lines */
	o.queue_depth = qd;
	o.warmup = warmup;
	o.speed = speed;
	o.log = log_quiet;
	int r = replay_run(trace, &map, &o, res, err, sizeof(err));
	if (r)
		fail_msg("replay_run: %d: %s", r, err);
	assert_false(o.fallback_file);
	/* The device files are gone. */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/backing.img", dir);
	assert_int_equal(access(p, F_OK), -1);
	return res;
}

static void check_hits(const struct replay_result *r)
{
	assert_true(r->library);
	assert_int_equal(r->requests, 6);
	assert_int_equal(r->reads, 5);
	assert_int_equal(r->writes, 1);
	assert_int_equal(r->errors, 0);
	assert_int_equal(r->read_bytes, 4 * 4096 + 8192);
	assert_int_equal(r->write_bytes, 4096);
	assert_int_equal(r->read_hits, 3);
	assert_int_equal(r->write_hits, 0);
	assert_int_equal(r->read_hit_bytes, 3 * 4096);
	assert_int_equal(r->write_hit_bytes, 0);
	/* The engine's counters, per line touched. */
	assert_int_equal(r->vs.read_hits, 3);
	assert_int_equal(r->vs.read_misses + r->vs.read_partial_hits, 2);
	assert_int_equal(r->vs.write_misses, 1);
	assert_int_equal(r->cache_lines, 16);
	assert_int_equal(r->line_size, 65536);
	assert_int_equal(r->lat.count, 6);
	assert_int_equal(r->lat_read.count, 5);
	assert_int_equal(r->lat_write.count, 1);
	assert_true(r->backing.bytes_read >= 2 * 65536);   /* two line fills */
}

static void test_memory_timed(void **state)
{
	struct replay_result *r = run(REPLAY_DEV_MEMORY, 0, 0, 1);

	check_hits(r);
	assert_string_equal(r->devices, "memory");
	/* No service time: every latency is 0, the clock moves with the arrivals only. */
	assert_int_equal(r->lat.max, 0);
	assert_int_equal(r->elapsed_ns, 5000000);
	assert_int_equal(r->late, 0);
	free(r);
}

static void test_memory_closed_loop(void **state)
{
	struct replay_result *r = run(REPLAY_DEV_MEMORY, 1, 0, 1);

	check_hits(r);                      /* QD 1: the same order, the same hits */
	assert_int_equal(r->elapsed_ns, 0);
	free(r);
}

static void test_warmup(void **state)
{
	struct replay_result *r = run(REPLAY_DEV_MEMORY, 0, 2, 1);

	/* Requests 3-6 measured: read hit, write miss, read hit, read miss. */
	assert_int_equal(r->requests, 4);
	assert_int_equal(r->reads, 3);
	assert_int_equal(r->writes, 1);
	assert_int_equal(r->read_hits, 2);
	assert_int_equal(r->vs.read_hits, 2);
	assert_int_equal(r->vs.reads, 3);
	assert_int_equal(r->lat.count, 4);
	assert_int_equal(r->elapsed_ns, 3000000);  /* from request 3 (2 ms) to 6 (5 ms) */
	free(r);
}

static void test_emulated(void **state)
{
	/* At speed 1 the requests come 1 ms apart, faster than an HDD miss: the reads
	 * of line 0 that arrive while it is being filled are misses. */
	struct replay_result *f = run(REPLAY_DEV_EMU, 0, 0, 1);
	if (strcmp(f->devices, "emu")) {
		free(f);
		skip();
	}
	assert_int_equal(f->read_hits, 1);
	assert_int_equal(f->late, 0);
	free(f);

	/* At 1/100 speed, 100 ms apart, each one finds the previous done. */
	struct replay_result *a = run(REPLAY_DEV_EMU, 0, 0, 0.01);
	check_hits(a);
	/* An SSD hit is faster than an HDD miss; misses take milliseconds. */
	assert_true(a->lat_read.min > 0);
	assert_true(a->lat_read.min < 1000000);
	assert_true(a->lat_read.max > 1000000);
	assert_true(a->elapsed_ns >= 500000000ull);
	/* Deterministic. */
	struct replay_result *b = run(REPLAY_DEV_EMU, 0, 0, 0.01);
	assert_int_equal(a->elapsed_ns, b->elapsed_ns);
	assert_int_equal(a->lat.max, b->lat.max);
	assert_int_equal(a->lat.min, b->lat.min);
	assert_true(a->lat.sum == b->lat.sum);
	/* Closed loop at QD 1: the six requests back to back. */
	struct replay_result *c = run(REPLAY_DEV_EMU, 1, 0, 1);
	check_hits(c);
	assert_true(c->elapsed_ns > 0 && c->elapsed_ns <= a->elapsed_ns);
	free(a);
	free(b);
	free(c);
}

static void test_stop(void **state)
{
	struct replay_result *res = malloc(sizeof(*res));
	struct replay_opts o;
	volatile sig_atomic_t stop = 1;
	char err[256];

	assert_non_null(res);
	replay_opts_default(&o);
	o.devices = REPLAY_DEV_MEMORY;
	o.cache_bytes = 1;
	o.log = log_quiet;
	o.stop = &stop;
	assert_int_equal(replay_run(trace, &map, &o, res, err, sizeof(err)), -EINTR);
	assert_true(res->interrupted);
	assert_int_equal(res->requests, 0);
	o.stop = NULL;
	o.speed = 0;
	assert_int_equal(replay_run(trace, &map, &o, res, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "speed"));
	free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_timed),
		cmocka_unit_test(test_memory_closed_loop),
		cmocka_unit_test(test_warmup),
		cmocka_unit_test(test_emulated),
		cmocka_unit_test(test_stop),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
