/* SPDX-License-Identifier: MIT */
/*
 * bench_common.h - helpers of the library benchmarks (tc-bench-hit): error exits, the
 * clock, the library's log sink.  Define BENCH_NAME (the program's name) before including.
 */
#ifndef TC_BENCH_COMMON_H
#define TC_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tiercache.h"

#ifndef BENCH_NAME
#error "define BENCH_NAME before including bench_common.h"
#endif

#define KIB ((uint64_t)1024)
#define MIB ((uint64_t)1024 * 1024)
#define GIB ((uint64_t)1024 * 1024 * 1024)

/* A failed setup step: the step and the error, exit status 1. */
static inline void die(const char *what, int err)
{
	fprintf(stderr, BENCH_NAME ": %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

#define CHECK(expr, what)                                                                 \
	do {                                                                              \
		int rc_ = (expr);                                                         \
		if (rc_ < 0)                                                              \
			die(what, rc_);                                                   \
	} while (0)

/* A bad command line: @fmt names the problem with @arg, exit status 2. */
static inline void bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, BENCH_NAME ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '" BENCH_NAME " --help'.\n");
	exit(2);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Log sink for the library: errors and warnings on stderr. */
static inline void log_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	fprintf(stderr, "tiercache: %s: %s\n", level == TC_LOG_ERROR ? "ERROR" : "WARN", msg);
}

#endif /* TC_BENCH_COMMON_H */
