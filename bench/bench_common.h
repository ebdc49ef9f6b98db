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

/* The whole of @arg, the value of option @opt, as a number from @lo to @hi; anything
 * else is a bad command line (exit status 2, naming the option and the value). */
static inline unsigned long bench_ulong_arg(const char *opt, const char *arg,
					    unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, BENCH_NAME ": %s: \"%s\" is not a number from %lu to %lu\n"
			"Try '" BENCH_NAME " --help'.\n", opt, arg, lo, hi);
		exit(2);
	}
	return v;
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

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of the @n values at @v (0 when @n is 0); @v is left as it was. */
static inline double bench_median(const double *v, int n)
{
	if (n <= 0)
		return 0;
	double *t = malloc(sizeof(double) * (size_t)n);
	if (!t)
		die("median", -12);
	memcpy(t, v, sizeof(double) * (size_t)n);
	qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
	double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	return m;
}

#endif /* TC_BENCH_COMMON_H */
