/* SPDX-License-Identifier: MIT */
/*
 * ioerr.c - tc-ioerr: I/O-error loops over the cache engine, after SQLite's
 * test/ioerr.test.
 *
 *   tc-ioerr [--verbose] [--trace] [--case K] [--n N]
 *
 * For each device role (cache, backing), each kind of device request (read, write,
 * flush), transient and persistent faults, and write-back and write-through volumes:
 * run a fixed scripted workload on a fresh cache and volume with the Nth request of
 * that kind failing (tc_crash_fail_nth), for N = 1, 2, 3, ... until a run completes
 * without the fault firing (at most 200 runs per case).
 *
 * The oracle is the reference model of model.c (invariant 1, docs/architecture.md),
 * with the one freedom an error gives: a write that failed leaves each of its sectors
 * holding the old or the new value.  Asserted in every run:
 *   - every request completes with 0 or -EIO, nothing else;
 *   - a read that succeeds returns exactly what the model allows, never stale data,
 *     never another sector's: dirty data that can no longer be read is an error to
 *     the caller, never other data;
 *   - after a transient fault (and in the run where no fault fired) the volume works
 *     again: every sector reads back correctly, and after a clean close and reopen too;
 *   - when the cache device fails persistently, the volume falls back to pass-through
 *     (tc_volume_stats.fallback_pt) and reads of clean data still succeed from the
 *     backing;
 *   - with no fault, tc_volume_flush_dirty leaves 0 dirty bytes.
 * Prints one FAIL block per failing case (the first failing N) and a summary line
 * "N passed, M failed" counting runs; exits 1 if any run failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "report.h"
#include "tiercache.h"
#include "tiercache-test.h"

#define LINE_SIZE 16384u
#define CACHE_LINES 24u
#define VOL_SIZE (1u << 20)
#define VOL_SECTORS (VOL_SIZE / TC_SECTOR_SIZE)
#define MAX_N 200u
#define MAX_IO (64u * 1024)
#define MS ((uint64_t)1000 * 1000)
#define RUN_TIMEOUT_S 60

enum role { ROLE_CACHE = 0, ROLE_BACKING = 1 };

struct ioerr_case {
	enum role role;
	enum tc_fault_op op;
	bool persistent;
	uint8_t write_policy;           /* TC_WP_WB or TC_WP_WT */
};

/* The options, and what runs now for the hang watchdog: the only global. */
struct ioerr_config {
	bool verbose;
	bool trace;                     /* every request and its result on stderr */
	int only_case;                  /* --case K: run case K only (-1: all) */
	unsigned only_n;                /* --n N: run that N only (0: N = 1, 2, ...) */
	char tmpdir[PATH_MAX - 32];
	_Atomic unsigned current_case;
	_Atomic unsigned current_n;
};

static struct ioerr_config config;

static const char *const role_names[] = { "cache", "backing" };
static const char *const op_names[] = { "read", "write", "flush" };

/* One run: one case, one N. */
struct iorun {
	const struct ioerr_case *c;
	unsigned n;
	unsigned generation;
	char cache_path[PATH_MAX];
	char vol_path[PATH_MAX];
	tc_ctx *ctx;
	tc_dev *cache_dev, *vol_dev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_model *model;
	bool maybe_dirty[VOL_SECTORS];  /* written in write-back since the last good
					 * tc_volume_flush_dirty */
	uint8_t *buf;                   /* MAX_IO */
	bool fired;                     /* the fault hit (device error counter) */
	unsigned errors;                /* requests that completed with -EIO */
	const char *phase;
	struct report rep;              /* the first failure, the last log lines */
};

static void run_log(void *opaque, enum tc_log_level level, const char *msg)
{
	struct iorun *r = opaque;

	(void)level;
	report_log(&r->rep, "%s", msg);
}

static void fail(struct iorun *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct iorun *r, const char *fmt, ...)
{
	va_list ap;
	bool first;

	va_start(ap, fmt);
	first = report_vfail(&r->rep, fmt, ap);
	va_end(ap);
	if (first) {
		size_t used = strlen(r->rep.failure);
		snprintf(r->rep.failure + used, sizeof(r->rep.failure) - used, " [%s]",
			 r->phase);
	}
}

static void trace(const struct iorun *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void trace(const struct iorun *r, const char *fmt, ...)
{
	va_list ap;

	if (!config.trace)
		return;
	fprintf(stderr, "N=%u [%s] ", r->n, r->phase);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void case_name(const struct ioerr_case *c, char *out, size_t len)
{
	snprintf(out, len, "role=%s op=%s %s mode=%s", role_names[c->role],
		 op_names[c->op], c->persistent ? "persistent" : "transient",
		 tc_write_policy_name(c->write_policy));
}

/* ------------------------------------------------------------------------------------
 * Bringing the cache up and down.
 */

static tc_dev *faulty_dev(struct iorun *r)
{
	return r->c->role == ROLE_CACHE ? r->cache_dev : r->vol_dev;
}

static void close_all(struct iorun *r)
{
	if (r->vol_dev)
		tc_dev_close(r->vol_dev);
	if (r->cache_dev)
		tc_dev_close(r->cache_dev);
	if (r->ctx)
		tc_ctx_free(r->ctx);
	r->vol_dev = r->cache_dev = NULL;
	r->ctx = NULL;
	r->vol = NULL;
}

static bool open_all(struct iorun *r, bool format)
{
	struct tc_ctx_opts co = {
		.mode = TC_CTX_DETERMINISTIC,
		.seed = r->n * 7919u + r->generation,
		.log_level = TC_LOG_WARN,
	};
	struct tc_cache_opts opts;
	struct tc_volume_settings set;
	unsigned flags = format ? TC_DEV_CREATE : 0;
	/* Superblocks and metadata, line-aligned, then the lines. */
	uint64_t cache_size = (65536 + 2 * 8192 + LINE_SIZE - 1) / LINE_SIZE * LINE_SIZE +
			      (uint64_t)CACHE_LINES * LINE_SIZE;
	int ret;

	tc_cache_opts_default(&opts);
	opts.line_size = LINE_SIZE;
	opts.replacement = TC_REPL_LRU;
	opts.unprotected_writeback = true;
	tc_volume_settings_default(&set);
	set.write_policy = r->c->write_policy;
	set.read_cache = true;
	set.admission = TC_ADMIT_ALWAYS;
	set.fill = TC_FILL_SECTORS;
	set.seq_cutoff = 0;
	set.flush_rate = TC_FLUSH_HIGH;

	if (format) {
		unlink(r->cache_path);
		unlink(r->vol_path);
	}
	ret = tc_ctx_new(&co, &r->ctx);
	if (ret) {
		fail(r, "tc_ctx_new returned %d", ret);
		return false;
	}
	tc_ctx_set_log(r->ctx, run_log, r, TC_LOG_WARN);
	ret = tc_dev_new_crash(r->ctx, r->cache_path, flags, cache_size, 1, &r->cache_dev);
	if (!ret)
		ret = tc_dev_new_crash(r->ctx, r->vol_path, flags,
				       TC_BACKING_DATA_OFFSET + VOL_SIZE, 2, &r->vol_dev);
	if (ret) {
		fail(r, "tc_dev_new_crash returned %d", ret);
		return false;
	}
	if (format) {
		ret = tc_cache_format(r->ctx, r->cache_dev, &opts);
		if (!ret)
			ret = tc_backing_format(r->ctx, r->vol_dev, "ioerr", &set);
		if (ret) {
			fail(r, "formatting returned %d (%s)", ret, strerror(-ret));
			return false;
		}
	}
	ret = tc_cache_open(r->ctx, r->cache_dev, &r->cache);
	if (ret) {
		fail(r, "tc_cache_open returned %d (%s)", ret, strerror(-ret));
		return false;
	}
	ret = tc_cache_attach(r->cache, r->vol_dev, format ? &set : NULL, 0, &r->vol);
	if (ret) {
		fail(r, "tc_cache_attach returned %d (%s)", ret, strerror(-ret));
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------------------
 * Requests, each checked: 0 or -EIO, and reads against the model.
 */

static bool result_ok(struct iorun *r, const char *what, uint64_t off, uint64_t len,
		      int ret)
{
	if (ret == 0)
		return true;
	if (ret != -EIO) {
		fail(r, "%s offset=%" PRIu64 " length=%" PRIu64 " returned %d (%s), not 0 "
		     "or -EIO", what, off, len, ret, strerror(-ret));
		return false;
	}
	r->errors++;
	return true;
}

static void do_write(struct iorun *r, enum tc_op op, unsigned flags, uint64_t off,
		     uint64_t len)
{
	uint64_t first = off / TC_SECTOR_SIZE, n = len / TC_SECTOR_SIZE;
	enum tc_model_kind kind = op == TC_OP_WRITE ? TC_MODEL_WRITE
				: op == TC_OP_WRITE_ZEROES ? TC_MODEL_ZEROES
				: TC_MODEL_DISCARD;
	uint32_t id = 0;
	int ret;

	if (r->rep.failed)
		return;
	if (op == TC_OP_WRITE) {
		id = tc_model_new_write_id(r->model);
		tc_model_fill(0, first, n, id, r->buf);
	}
	tc_model_submit(r->model, 0, first, n, kind, id);
	ret = tc_volume_io(r->vol, op, flags, op == TC_OP_WRITE ? r->buf : NULL, len, off);
	trace(r, "%s offset=%" PRIu64 " length=%" PRIu64 "%s (write id %" PRIu32 "): %d",
	      op == TC_OP_WRITE ? "write" : op == TC_OP_WRITE_ZEROES ? "write-zeroes" :
	      "discard", off, len, (flags & TC_IO_FUA) ? " fua" : "", id, ret);
	result_ok(r, op == TC_OP_WRITE ? "write" : op == TC_OP_WRITE_ZEROES ?
		  "write-zeroes" : "discard", off, len, ret);
	tc_model_complete(r->model, 0, first, n, ret, (flags & TC_IO_FUA) != 0);
	if (r->c->write_policy == TC_WP_WB)
		for (uint64_t i = 0; i < n; i++)
			r->maybe_dirty[first + i] = true;
}

/* A read checked against the model.  Returns the request's result. */
static int do_read(struct iorun *r, uint64_t off, uint64_t len)
{
	uint64_t first = off / TC_SECTOR_SIZE;
	char msg[1024];
	int ret;

	if (r->rep.failed)
		return 0;
	memset(r->buf, 0xa5, len);
	ret = tc_volume_io(r->vol, TC_OP_READ, 0, r->buf, len, off);
	trace(r, "read offset=%" PRIu64 " length=%" PRIu64 ": %d", off, len, ret);
	if (!result_ok(r, "read", off, len, ret) || ret != 0)
		return ret;
	for (uint64_t i = 0; i < len / TC_SECTOR_SIZE; i++) {
		if (!tc_model_check(r->model, 0, first + i, r->buf + i * TC_SECTOR_SIZE,
				    TC_MODEL_CURRENT, msg, sizeof(msg))) {
			fail(r, "read succeeded with wrong data: offset=%" PRIu64 " (sector %"
			     PRIu64 "): %s", (first + i) * TC_SECTOR_SIZE, first + i, msg);
			break;
		}
	}
	return 0;
}

static void do_flush(struct iorun *r)
{
	uint64_t token;
	int ret;

	if (r->rep.failed)
		return;
	token = tc_model_flush_begin(r->model, 0);
	ret = tc_volume_io(r->vol, TC_OP_FLUSH, 0, NULL, 0, 0);
	trace(r, "flush: %d", ret);
	result_ok(r, "flush", 0, 0, ret);
	tc_model_flush_end(r->model, 0, token, ret);
}

static int do_flush_dirty(struct iorun *r)
{
	int ret;

	if (r->rep.failed)
		return 0;
	ret = tc_volume_flush_dirty(r->vol, NULL, NULL);
	trace(r, "tc_volume_flush_dirty: %d", ret);
	if (ret != 0 && ret != -EIO)
		fail(r, "tc_volume_flush_dirty returned %d (%s), not 0 or -EIO", ret,
		     strerror(-ret));
	if (ret == 0)
		memset(r->maybe_dirty, 0, sizeof(r->maybe_dirty));
	return ret;
}

/* Idle time: the cleaner writes back, the periodic commit runs. */
static void idle(struct iorun *r, uint64_t ns)
{
	for (uint64_t t = 0; t < ns && !r->rep.failed; t += 10 * MS) {
		tc_ctx_advance(r->ctx, 10 * MS);
		while (tc_ctx_poll(r->ctx, 64) > 0)
			;
	}
}

/* ------------------------------------------------------------------------------------
 * The scripted workload.
 */

static void workload(struct iorun *r)
{
	const uint64_t line = LINE_SIZE;

	r->phase = "writes";
	for (uint64_t i = 0; i < 16; i++)
		do_write(r, TC_OP_WRITE, 0, i * line, line);
	do_write(r, TC_OP_WRITE, 0, 4096 + 512, 512);
	do_write(r, TC_OP_WRITE, 0, 20480 + 512, 3072);
	do_write(r, TC_OP_WRITE, 0, 3 * line - 1024, 2048);

	r->phase = "reads";
	for (uint64_t off = 0; off < 16 * line; off += 2 * line)
		do_read(r, off, 2 * line);
	do_flush(r);
	idle(r, 50 * MS);

	r->phase = "eviction-heavy";
	for (uint64_t i = 0; i < VOL_SIZE / line; i++) {
		if (i % 3 == 0)
			do_write(r, TC_OP_WRITE, 0, i * line + (i % 2) * 4096, line / 2);
		else
			do_read(r, i * line, line);
	}
	for (uint64_t off = 0; off < VOL_SIZE; off += 4 * line)
		do_read(r, off, 4 * line);

	r->phase = "fua, write-zeroes, discard";
	do_write(r, TC_OP_WRITE, TC_IO_FUA, 512 * 1024, 8192);
	do_write(r, TC_OP_WRITE_ZEROES, 0, 600 * 1024, line);
	do_write(r, TC_OP_DISCARD, 0, 704 * 1024, line);
	do_read(r, 512 * 1024, 4 * line);
	do_read(r, 704 * 1024, line);
	do_flush(r);

	r->phase = "idle";
	idle(r, 1500 * MS);
	r->phase = "tc_volume_flush_dirty";
	do_flush_dirty(r);
	r->phase = "reads after flush_dirty";
	for (uint64_t off = 0; off < 8 * line; off += line)
		do_read(r, off, line);
	do_flush(r);
}

/* Persistent cache faults: keep using the cache device until the engine gives up on it
 * (it may tolerate a few errors first), then expect pass-through. */
static void probe_fallback(struct iorun *r)
{
	struct tc_volume_stats st;

	r->phase = "probing for pass-through fallback";
	for (unsigned i = 0; i < 8 && !r->rep.failed; i++) {
		tc_volume_stats(r->vol, &st);
		if (st.fallback_pt)
			return;
		do_write(r, TC_OP_WRITE, 0, VOL_SIZE - 64 * 1024 + i * 4096, 4096);
		do_read(r, VOL_SIZE - 64 * 1024 + i * 4096, 4096);
		do_read(r, 0, LINE_SIZE);
		do_flush(r);
		idle(r, 1100 * MS);
	}
	tc_volume_stats(r->vol, &st);
	if (!r->rep.failed && !st.fallback_pt)
		fail(r, "the cache device fails every %s, yet tc_volume_stats.fallback_pt is "
		     "false (cache_errors=%" PRIu64 ")", op_names[r->c->op], st.cache_errors);
}

/* Reads every 4 KiB of the volume; @must_succeed(sector range) says whether an error
 * is a failure. */
static void verify_all(struct iorun *r, bool all_must_succeed, bool clean_must_succeed)
{
	for (uint64_t off = 0; off < VOL_SIZE && !r->rep.failed; off += 4096) {
		uint64_t first = off / TC_SECTOR_SIZE;
		bool dirty = false;
		int ret;

		for (unsigned i = 0; i < 8; i++)
			dirty |= r->maybe_dirty[first + i];
		ret = do_read(r, off, 4096);
		if (ret == 0 || r->rep.failed)
			continue;
		if (all_must_succeed)
			fail(r, "read offset=%" PRIu64 " length=4096 failed (%d) though the "
			     "devices work again", off, ret);
		else if (clean_must_succeed && !dirty)
			fail(r, "read of clean data offset=%" PRIu64 " length=4096 failed (%d): "
			     "it must come from the backing", off, ret);
	}
}

/* One run; returns whether the fault fired. */
static bool run_once(struct iorun *r)
{
	const struct ioerr_case *c = r->c;
	struct tc_dev_stats ds;
	struct tc_volume_stats vs;
	int ret;

	r->phase = "setup";
	if (!open_all(r, true))
		return false;
	ret = tc_crash_fail_nth(faulty_dev(r), c->op, r->n, c->persistent);
	if (ret) {
		fail(r, "tc_crash_fail_nth returned %d", ret);
		return false;
	}
	workload(r);
	tc_dev_stats(faulty_dev(r), &ds);
	r->fired = ds.errors > 0;
	if (r->rep.failed)
		return r->fired;
	if (!r->fired || !c->persistent)
		tc_crash_fail_nth(faulty_dev(r), c->op, 0, false);

	if (!r->fired) {
		/* Nothing failed: the workload must have run as if no fault were armed. */
		r->phase = "no fault fired";
		if (r->errors)
			fail(r, "%u requests failed though no device request did", r->errors);
		tc_volume_stats(r->vol, &vs);
		if (!r->rep.failed && vs.dirty_bytes != 0)
			fail(r, "%" PRIu64 " dirty bytes after tc_volume_flush_dirty and no "
			     "write since", vs.dirty_bytes);
		if (!r->rep.failed && vs.fallback_pt)
			fail(r, "fallback_pt with no device error");
	}
	if (r->fired && c->persistent && c->role == ROLE_CACHE)
		probe_fallback(r);

	r->phase = "final full read";
	if (!c->persistent || !r->fired)
		verify_all(r, true, true);
	else
		verify_all(r, false, c->role == ROLE_CACHE);
	if (r->rep.failed || (c->persistent && r->fired))
		return r->fired;

	/* The devices work: a clean close and reopen must keep everything. */
	r->phase = "tc_cache_close after the fault";
	ret = tc_cache_close(r->cache);
	r->cache = NULL;
	if (ret != 0) {
		fail(r, "tc_cache_close returned %d (%s) with working devices", ret,
		     strerror(-ret));
		return r->fired;
	}
	close_all(r);
	r->generation++;
	r->phase = "reopen after the fault";
	if (!open_all(r, false))
		return r->fired;
	r->phase = "full read after reopen";
	verify_all(r, true, true);
	return r->fired;
}

static void print_failure(const struct iorun *r)
{
	char name[128];

	case_name(r->c, name, sizeof(name));
	printf("FAIL ioerr %s N=%u: %s\n", name, r->n, r->rep.failure);
	printf("  replay: tc-ioerr --case %u --n %u --trace\n",
	       atomic_load(&config.current_case), r->n);
	report_print_log(&r->rep);
	fflush(stdout);
}

static void free_run(struct iorun *r)
{
	if (r->cache)
		tc_cache_abandon(r->cache);
	r->cache = NULL;
	close_all(r);
	tc_model_free(r->model);
	free(r->buf);
	unlink(r->cache_path);
	unlink(r->vol_path);
}

/* ------------------------------------------------------------------------------------
 * Driver.
 */

/* Appends the decimal form of @v to @buf at *@len (async-signal-safe). */
static void put_uint(char *buf, size_t *len, unsigned v)
{
	char num[12];
	size_t n = 0;

	do {
		num[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(num));
	while (n)
		buf[(*len)++] = num[--n];
}

static void put_str(char *buf, size_t *len, const char *s)
{
	while (*s)
		buf[(*len)++] = *s++;
}

/* "FAIL ioerr case #K N=N: <what>\n" on stdout, async-signal-safe. */
static void report_signal(const char *what)
{
	char buf[160];
	size_t len = 0;

	put_str(buf, &len, "FAIL ioerr case #");
	put_uint(buf, &len, atomic_load(&config.current_case));
	put_str(buf, &len, " (see --verbose) N=");
	put_uint(buf, &len, atomic_load(&config.current_n));
	put_str(buf, &len, what);
	if (write(STDOUT_FILENO, buf, len) < 0)
		return;
}

/* A run that hangs is reported by case and N, then the process ends. */
static void watchdog(int sig)
{
	(void)sig;
	report_signal(": no result after 60 s (hang)\n");
	_exit(1);
}

/* A run that crashes the process is reported too, then the signal does its work. */
static void fatal_signal(int sig)
{
	report_signal(sig == SIGSEGV ? ": crashed (SIGSEGV)\n" : sig == SIGBUS ?
		      ": crashed (SIGBUS)\n" : ": crashed (SIGABRT)\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	static const uint8_t policies[2] = { TC_WP_WB, TC_WP_WT };
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct ioerr_case cases[2 * 3 * 2 * 2];
	unsigned ncases = 0, passed = 0, failed = 0;
	struct sigaction sa;
	uint64_t sizes[1] = { VOL_SIZE };

	config.only_case = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
			config.verbose = true;
		} else if (!strcmp(argv[i], "--trace")) {
			config.trace = true;
		} else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			config.only_case = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
			config.only_n = (unsigned)atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: tc-ioerr [--verbose] [--trace] [--case K] "
				"[--n N]\n"
				"  --case K  run only case #K (numbers as printed by --verbose)\n"
				"  --n N     run only that N\n"
				"  --trace   every request and its result on stderr\n");
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	snprintf(config.tmpdir, sizeof(config.tmpdir), "%s/tc-ioerr-XXXXXX", tmp);
	if (!mkdtemp(config.tmpdir)) {
		fprintf(stderr, "tc-ioerr: mkdtemp(%s): %s\n", config.tmpdir, strerror(errno));
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watchdog;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = fatal_signal;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);

	for (unsigned role = 0; role < 2; role++)
		for (unsigned op = 0; op < 3; op++)
			for (unsigned p = 0; p < 2; p++)
				for (unsigned w = 0; w < 2; w++)
					cases[ncases++] = (struct ioerr_case){
						.role = (enum role)role,
						.op = (enum tc_fault_op)op,
						.persistent = p,
						.write_policy = policies[w],
					};

	for (unsigned ci = 0; ci < ncases; ci++) {
		const struct ioerr_case *c = &cases[ci];
		unsigned n, fired_runs = 0;
		bool case_failed = false;
		char name[128];

		if (config.only_case >= 0 && (unsigned)config.only_case != ci)
			continue;
		case_name(c, name, sizeof(name));
		if (config.verbose) {
			printf("case #%u %s ...\n", ci, name);
			fflush(stdout);
		}
		for (n = config.only_n ? config.only_n : 1; n <= MAX_N; n++) {
			struct iorun *r = calloc(1, sizeof(*r));
			bool fired;

			if (!r) {
				fprintf(stderr, "tc-ioerr: out of memory\n");
				return 2;
			}
			r->c = c;
			r->n = n;
			r->phase = "setup";
			snprintf(r->cache_path, sizeof(r->cache_path), "%s/cache.img",
				 config.tmpdir);
			snprintf(r->vol_path, sizeof(r->vol_path), "%s/vol.img", config.tmpdir);
			r->model = tc_model_new(1, sizes);
			r->buf = malloc(MAX_IO);
			if (!r->model || !r->buf) {
				fprintf(stderr, "tc-ioerr: out of memory\n");
				return 2;
			}
			atomic_store(&config.current_case, ci);
			atomic_store(&config.current_n, n);
			alarm(RUN_TIMEOUT_S);
			fired = run_once(r);
			alarm(0);
			if (r->rep.failed) {
				print_failure(r);
				failed++;
				case_failed = true;
			} else {
				passed++;
			}
			free_run(r);
			free(r);
			if (case_failed || !fired || config.only_n)
				break;
			fired_runs++;
		}
		if (config.verbose)
			printf("case %s: %s after N=1..%u (%u runs with the fault firing)\n",
			       name, case_failed ? "FAILED" : "ok", n > MAX_N ? MAX_N : n,
			       fired_runs);
	}
	rmdir(config.tmpdir);
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
